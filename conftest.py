"""Fixtures shared by tests/ and integration_tests/: a fresh emulator per test on free 127.0.0.1 ports."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import tempfile

import pytest

from synclient import portable
from synclient.emulator import Emulator

_SESSION_HOME: list = []  # the HOME every test process (and its children) starts from

#: The fast subset, ``python -m pytest -m fast``: every unit, CLI and emulator-conformance test (seconds), and the
#: one end-to-end sync marked ``fast`` in integration_tests/test_sync_engine.py. .ci/run runs it on Python 3.9 and
#: 3.13, tox as pyXY-fast.
FAST_DIRS = ("tests/unit/", "tests/cli/", "tests/conformance/")


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
    machine's ``~/.synapseConfig``, ``~/.synapseCache`` or synclient's cache folder (the gate's state file), and a
    sync finds no download cache unless its test made one."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SYNCLIENT_CACHE_DIR", str(home / ".cache" / "synclient"))  # the gate's state file, too
    monkeypatch.setenv("SYNAPSE_CONFIG_FILE", str(home / ".synapseConfig"))


#: the loggers the CLI configures for its run (cli._configure_logging): silenced unless -v
_CLI_LOGGERS = ("synclient", "synclient.platform.rest", "synclient.platform.gate", "synclient.sync.auto_view")


@pytest.fixture(autouse=True)
def _library_logging():
    """The library's loggers as they were before each test: a test that runs the CLI in its own process
    (``cli.main([...])``) leaves ``synclient`` silenced and not propagating, and a later test of that worker that
    reads the library's log (``caplog``) would then see nothing: a failure that depends on which tests shared it."""
    saved = [
        (logger, logger.level, logger.propagate, list(logger.handlers))
        for logger in map(logging.getLogger, _CLI_LOGGERS)
    ]
    yield
    for logger, level, propagate, handlers in saved:
        logger.setLevel(level)
        logger.propagate = propagate
        logger.handlers[:] = handlers


def pytest_generate_tests(metafunc):
    """A test marked ``over_tls`` runs twice: on plain-HTTP emulators and (``[https]``) on emulators serving HTTPS."""
    if "emulator_tls" in metafunc.fixturenames and metafunc.definition.get_closest_marker("over_tls"):
        metafunc.parametrize("emulator_tls", [False, True], ids=["http", "https"])


@pytest.fixture
def portable_fallbacks(monkeypatch):
    """Every fallback of :mod:`synclient.portable` in force for this test, as ``SYNCLIENT_PORTABLE=all`` gives at
    start; the variable is set too, so a child process (a CLI sync) starts with them as well."""
    previous = portable.use(portable.chosen(portable.Capabilities.names()))
    monkeypatch.setenv(portable.ENV_VAR, "all")
    yield portable.CAPABILITIES
    portable.use(previous)


@pytest.fixture
def emulator_tls() -> bool:
    """Whether this test's emulators serve HTTPS (parametrized for tests marked ``over_tls``)."""
    return False


def trust_emulator_ca(emu: Emulator, monkeypatch) -> None:
    """Point every client of the test (synclient, synapseclient's requests and httpx, child processes) at the
    CA of an emulator serving HTTPS, through the variables a user behind a private CA would set."""
    for name in ("REQUESTS_CA_BUNDLE", "SSL_CERT_FILE"):
        monkeypatch.setenv(name, emu.ca_bundle)


@pytest.fixture
def emulator(emulator_tls, monkeypatch):
    """A started Emulator with a temporary store, stopped (and removed) after the test; over HTTPS when
    ``emulator_tls`` (its CA then trusted through the environment)."""
    with Emulator(tls=emulator_tls) as emu:
        if emulator_tls:
            trust_emulator_ca(emu, monkeypatch)
        yield emu


@pytest.fixture
def emulator_factory(tmp_path, emulator_tls, monkeypatch):
    """Start emulators with custom knobs/data dirs (over HTTPS when ``emulator_tls``, as ``emulator``); all are
    stopped at teardown."""
    started = []

    def make(data_dir=None, **knobs) -> Emulator:
        emu = Emulator(data_dir=str(data_dir) if data_dir else None, tls=emulator_tls, **knobs)
        emu.start()
        if emulator_tls:
            trust_emulator_ca(emu, monkeypatch)
        started.append(emu)
        return emu

    yield make
    for emu in reversed(started):
        emu.stop()
