from __future__ import annotations

import pytest
from emuhelpers import HOSTILE_SPEC, Api


@pytest.fixture
def seeded(emulator):
    """(emulator, project id) with the hostile-names spec seeded."""
    return emulator, emulator.seed_spec(HOSTILE_SPEC)["p"]


@pytest.fixture
def api(emulator):
    return Api(emulator)
