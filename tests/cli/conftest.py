"""Fixtures of the CLI tests (helpers live in cli_support.py, importable by name from the tests)."""

from __future__ import annotations

import pytest
from cli_support import TREE_SPEC, isolated_env

from synclient.emulator import Emulator


@pytest.fixture(scope="session")
def tree_emulator():
    """One emulator for read-only tests, seeded with TREE_SPEC; ``.ids`` maps project names to ids."""
    with Emulator() as emulator:
        emulator.ids = emulator.seed_spec(TREE_SPEC)
        yield emulator


@pytest.fixture
def env(tmp_path, tree_emulator):
    """Environment of a logged-in user of ``tree_emulator`` (token and endpoint from the environment)."""
    return isolated_env(tmp_path, SYNCLIENT_ENDPOINT=tree_emulator.endpoint, SYNCLIENT_AUTH_TOKEN=tree_emulator.token)


@pytest.fixture
def anonymous_env(tmp_path, tree_emulator):
    """Endpoint of ``tree_emulator`` but no token anywhere."""
    return isolated_env(tmp_path, SYNCLIENT_ENDPOINT=tree_emulator.endpoint)
