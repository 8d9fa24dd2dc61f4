"""Fixtures for end-to-end tests with the official synapseclient (the emulator fixtures are in ../conftest.py)."""

from __future__ import annotations

import os

import pytest

from synclient.emulator import Emulator


@pytest.fixture
def synapse_login(tmp_path):
    """``synapse_login(emu)`` -> a logged-in official ``synapseclient.Synapse`` pointed at the emulator, with the
    test's own cache (``synapse_login(emu, cache_root=...)`` names it). Its config file is the test's too:
    synapseclient's default is the machine's ``~/.synapseConfig``, read when synapseclient was imported, whose
    ``[cache] location`` would take the place of the test's cache."""
    synapseclient = pytest.importorskip("synapseclient")

    def login(emu: Emulator, cache_root=None):
        syn = synapseclient.Synapse(
            configPath=os.environ["SYNAPSE_CONFIG_FILE"],
            repoEndpoint=emu.endpoint + "/repo/v1",
            authEndpoint=emu.endpoint + "/auth/v1",
            fileHandleEndpoint=emu.endpoint + "/file/v1",
            portalEndpoint=emu.endpoint + "/",
            skip_checks=True,
            cache_root_dir=str(cache_root) if cache_root is not None else os.path.join(str(tmp_path), "synapse-cache"),
            silent=True,
        )
        syn.login(authToken=emu.token)
        return syn

    return login
