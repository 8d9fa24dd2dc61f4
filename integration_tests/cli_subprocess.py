"""The ``synclient`` command in a subprocess, against an emulator, isolated from the machine's configuration and
keyring: for integration tests that drive the real entry point."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from synclient.emulator import Emulator

REPO_ROOT = Path(__file__).resolve().parents[1]


def run_synclient(emu: Emulator, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """``python -m synclient ARGS`` with the emulator's endpoint and token, a HOME of its own under ``tmp_path``."""
    return subprocess.run(
        [sys.executable, "-m", "synclient", *args], env=_env(emu, tmp_path), text=True, capture_output=True, timeout=120
    )


def start_synclient(emu: Emulator, tmp_path: Path, *args: str) -> subprocess.Popen:
    """``python -m synclient ARGS`` started as :func:`run_synclient` runs it, for a test that signals or kills it."""
    return subprocess.Popen(
        [sys.executable, "-m", "synclient", *args],
        env=_env(emu, tmp_path),
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _env(emu: Emulator, tmp_path: Path) -> dict:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SYNCLIENT_", "SYNAPSE_", "PYTHON_KEYRING"))}
    env.update(
        HOME=str(home),
        SYNAPSE_CONFIG_FILE=str(home / ".synapseConfig"),
        PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring",
        PYTHONPATH=str(REPO_ROOT),
        SYNCLIENT_ENDPOINT=emu.endpoint,
        SYNCLIENT_AUTH_TOKEN=emu.token,
    )
    return env
