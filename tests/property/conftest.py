"""Property tests (hypothesis) and fuzz targets. ``--long`` (shared with integration_tests/resilience) runs more
examples."""

from __future__ import annotations

import os

from hypothesis import settings


def pytest_addoption(parser):
    try:
        parser.addoption(
            "--long",
            action="store_true",
            default=False,
            help="resilience/property suites: more seeds, more interrupt points, more examples",
        )
    except ValueError:  # integration_tests/resilience registered it first
        pass


def pytest_configure(config):
    long = bool(config.getoption("--long", default=False)) or os.environ.get("SYNCLIENT_LONG") == "1"
    settings.register_profile("synclient-ci", max_examples=200, deadline=None, derandomize=True)
    settings.register_profile("synclient-long", max_examples=5000, deadline=None)
    settings.load_profile("synclient-long" if long else "synclient-ci")
