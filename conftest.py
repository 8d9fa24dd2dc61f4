"""Fixtures shared by tests/ and integration_tests/: a fresh emulator per test on free 127.0.0.1 ports."""
from __future__ import annotations

import signal

import pytest

from synclient.emulator import Emulator


def pytest_configure(config):
    # Several tests interrupt a child sync with SIGINT. A shell that starts the suite in the background (`cmd &`,
    # nohup in a script) ignores SIGINT in it, and an ignored signal stays ignored in every child: the child would
    # never see the interrupt and the test would fail for the shell's sake. A handler here is reset to the default
    # in each child at exec, so the children get Python's usual Ctrl-C behaviour.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


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
