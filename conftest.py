"""Fixtures shared by tests/ and integration_tests/: a fresh emulator per test on free 127.0.0.1 ports."""
from __future__ import annotations

import os
import shutil
import signal
import tempfile

import pytest

from synclient.emulator import Emulator

_SESSION_HOME: list = []  # the HOME every test process (and its children) starts from

#: The fast subset, ``python -m pytest -m fast``: every unit and CLI test, and the one end-to-end sync marked
#: ``fast`` in integration_tests/test_sync_engine.py. .ci/run runs it on Python 3.9 and 3.13, tox as pyXY-fast.
FAST_DIRS = ("tests/unit/", "tests/cli/")


def pytest_configure(config):
    # Several tests interrupt a child sync with SIGINT. A shell that starts the suite in the background (`cmd &`,
    # nohup in a script) ignores SIGINT in it, and an ignored signal stays ignored in every child: the child would
    # never see the interrupt and the test would fail for the shell's sake. A handler here is reset to the default
    # in each child at exec, so the children get Python's usual Ctrl-C behaviour.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # Before any fixture (module- and session-scoped ones too): a HOME of the session's own, so nothing the suite
    # runs can reach the machine's ~/.synapseConfig or ~/.synapseCache. Each test then gets its own (below).
    _SESSION_HOME.append(tempfile.mkdtemp(prefix="synclient-tests-home-"))
    os.environ["HOME"] = _SESSION_HOME[0]
    os.environ["SYNAPSE_CONFIG_FILE"] = os.path.join(_SESSION_HOME[0], ".synapseConfig")


@pytest.hookimpl(tryfirst=True)  # before -m selects
def pytest_collection_modifyitems(items):
    for item in items:
        if item.nodeid.startswith(FAST_DIRS):
            item.add_marker(pytest.mark.fast)


def pytest_unconfigure(config):
    for home in _SESSION_HOME:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(autouse=True)
def _private_home(tmp_path_factory, monkeypatch):
    """Every test runs with a HOME and a config file of its own (children inherit them): nothing a test runs (a
    sync, synapseclient's ``Synapse()``, which makes ``~/.synapseCache``, a CLI process) reads or writes the
    machine's ``~/.synapseConfig`` or ``~/.synapseCache``, and a sync finds no download cache unless its test made
    one."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SYNAPSE_CONFIG_FILE", str(home / ".synapseConfig"))


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
