"""Fixtures for end-to-end tests with the official synapseclient (the emulator fixtures are in ../conftest.py)."""
from __future__ import annotations

import os

import pytest

from synclient.emulator import Emulator


@pytest.fixture
def synapse_login(tmp_path):
    """``synapse_login(emu)`` -> a logged-in official ``synapseclient.Synapse`` pointed at the emulator."""
    synapseclient = pytest.importorskip("synapseclient")

    def login(emu: Emulator):
        syn = synapseclient.Synapse(
            repoEndpoint=emu.endpoint + "/repo/v1",
            authEndpoint=emu.endpoint + "/auth/v1",
            fileHandleEndpoint=emu.endpoint + "/file/v1",
            portalEndpoint=emu.endpoint + "/",
            skip_checks=True,
            cache_root_dir=os.path.join(str(tmp_path), "synapse-cache"),
            silent=True,
        )
        syn.login(authToken=emu.token)
        return syn

    return login
