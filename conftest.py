"""Fixtures shared by tests/ and integration_tests/: a fresh emulator per test on free 127.0.0.1 ports."""
from __future__ import annotations

import pytest

from synclient.emulator import Emulator


@pytest.fixture
def emulator():
    """A started Emulator with a temporary store, stopped (and removed) after the test."""
    with Emulator() as emu:
        yield emu


@pytest.fixture
def emulator_factory(tmp_path):
    """Start emulators with custom knobs/data dirs; all are stopped at teardown."""
    started = []

    def make(data_dir=None, **knobs) -> Emulator:
        emu = Emulator(data_dir=str(data_dir) if data_dir else None, **knobs)
        emu.start()
        started.append(emu)
        return emu

    yield make
    for emu in reversed(started):
        emu.stop()
