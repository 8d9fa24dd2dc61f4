"""Fixtures of the resilience suite: emulators that are watched for token leaks, the figures recorder, --long."""

from __future__ import annotations

import json
import logging
import os

import pytest
from resilience_support import FIGURES, SECRETS, EmulatorRegistry, figures_path, long_mode  # noqa: F401


def pytest_addoption(parser):
    try:
        parser.addoption(
            "--long",
            action="store_true",
            default=False,
            help="resilience/property suites: more seeds, more interrupt points, bigger trees",
        )
    except ValueError:  # another conftest (tests/property) registered it first
        pass


def pytest_configure(config):
    config.addinivalue_line("markers", "long: runs only with --long (or SYNCLIENT_LONG=1)")
    config.addinivalue_line("markers", "root: needs root (mounts); skipped cleanly otherwise")


def pytest_collection_modifyitems(config, items):
    mine = [item for item in items if "resilience" in str(item.fspath)]
    for item in mine:  # one pytest-xdist worker runs them all: FIGURES (one process's) is then the whole report
        item.add_marker(pytest.mark.xdist_group("resilience"))
    if long_mode(config):
        return
    skip = pytest.mark.skip(reason="long case: run with --long (or SYNCLIENT_LONG=1)")
    for item in mine:
        if "long" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def secret_watch():
    """Every client log line of each test (DEBUG) passes the watch; emulator (server) lines are ignored."""
    handler = SECRETS.handler()
    root = logging.getLogger()
    levels = {name: logging.getLogger(name).level for name in ("synclient", "urllib3")}
    root.addHandler(handler)
    for name in levels:
        logging.getLogger(name).setLevel(logging.DEBUG)
    yield SECRETS
    root.removeHandler(handler)
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


@pytest.fixture
def emulators(request):
    """``emulators.start(**knobs)`` -> a started in-process Emulator; at teardown every emulator is checked for
    Authorization headers on its data listener (must be 0) and stopped."""
    registry = EmulatorRegistry()
    yield registry
    registry.close()


@pytest.fixture
def long(request) -> bool:
    return long_mode(request.config)


def pytest_sessionfinish(session, exitstatus):
    if not FIGURES.rows:
        return
    path = figures_path()
    document = FIGURES.document(long=long_mode(session.config), exitstatus=int(exitstatus), secrets=SECRETS.summary())
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    try:  # a report, not a test: a path another user owns must not turn a green run into an internal error
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(document, indent=1), encoding="utf-8")
    except OSError as exc:
        if reporter is not None:
            reporter.write_line(f"resilience figures not written: {path}: {exc.strerror or exc}")
        return
    if reporter is not None:
        reporter.write_line(f"resilience figures: {path} ({len(FIGURES.rows)} scenarios)")
    os.environ.setdefault("SYNCLIENT_RELIABILITY_JSON_WRITTEN", str(path))
