"""Fixtures for end-to-end tests against the emulator (and the official synapseclient)."""
from __future__ import annotations

import os

import pytest

from synclient.emulator import Emulator


@pytest.fixture
def emulator():
    with Emulator() as emu:
        yield emu


@pytest.fixture
def emulator_factory():
    started = []

    def make(data_dir=None, **knobs) -> Emulator:
        emu = Emulator(data_dir=str(data_dir) if data_dir else None, **knobs)
        emu.start()
        started.append(emu)
        return emu

    yield make
    for emu in reversed(started):
        emu.stop()


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
