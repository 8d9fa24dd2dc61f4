"""CLI test helpers: run the real entry point (``python -m synclient``) in a subprocess against an emulator.

Every run gets an isolated environment: a temporary HOME, no token variables, a config file path that does not
exist, and a keyring backend that cannot reach the real keyring of the machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Tuple

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def small_tree_spec(*extra_files: dict, **spec: object) -> dict:
    """A project ``p`` of three files (``a.txt``; ``d/b.txt`` and ``d/c.bin``, 300 KiB) and ``extra_files`` beside
    ``a.txt``; ``spec`` adds top-level seed keys (``names="unchecked"`` for a hostile server's names)."""
    folder = {
        "type": "folder",
        "name": "d",
        "children": [
            {"type": "file", "name": "b.txt", "content": "bravo\n"},
            {"type": "file", "name": "c.bin", "size": 300 * 1024, "seed": 5},
        ],
    }
    children = [{"type": "file", "name": "a.txt", "content": "alpha\n"}, *extra_files, folder]
    return {**spec, "projects": [{"name": "p", "children": children}]}


#: the files of :func:`small_tree_spec`'s tree
SMALL_TREE_FILES = ["a.txt", "d/b.txt", "d/c.bin"]


def small_tree_fixtures(
    spec: dict, *, sync_exit_code: int = 0, after_sync: Optional[Callable[[Path], None]] = None
) -> Tuple[Any, Any, Any]:
    """The ``emu``, ``env`` and ``synced`` fixtures of a test module on one tree: ``emu`` an emulator of ``spec``
    for each test (``.project``: the id of its project ``p``), ``env`` its user's environment, ``synced`` the path
    of a ``get -r`` of ``p`` that exited ``sync_exit_code`` (``after_sync`` then checks the copy). A module takes
    them as ``emu, env, synced = small_tree_fixtures(SPEC)``: pytest finds a fixture by the name it is bound to."""
    from synclient.emulator import Emulator

    @pytest.fixture
    def emu():
        with Emulator() as emulator:
            emulator.project = emulator.seed_spec(spec)["p"]
            yield emulator

    @pytest.fixture
    def env(tmp_path, emu):
        return isolated_env(tmp_path, SYNCLIENT_ENDPOINT=emu.endpoint, SYNCLIENT_AUTH_TOKEN=emu.token)

    @pytest.fixture
    def synced(tmp_path, emu, env) -> Path:
        target = tmp_path / "copy"
        result = run_cli("-q", "get", "-r", emu.project, "--path", str(target), env=env)
        assert result.returncode == sync_exit_code, result.stderr
        if after_sync is not None:
            after_sync(target)
        return target

    return emu, env, synced


#: The tree most CLI tests sync: 3 levels, a text file, a multipart-sized file.
TREE_SPEC = {
    "projects": [
        {
            "name": "cli-project",
            "children": [
                {"type": "file", "name": "readme.txt", "content": "hello from the emulator\n"},
                {
                    "type": "folder",
                    "name": "data",
                    "children": [
                        {"type": "file", "name": "a.csv", "content": "x,y\n1,2\n"},
                        {
                            "type": "folder",
                            "name": "raw",
                            "children": [
                                {"type": "file", "name": "b.bin", "size": 3 * 1024 * 1024, "seed": 3},
                            ],
                        },
                    ],
                },
            ],
        },
        {
            "name": "with-denied",
            "children": [
                {"type": "file", "name": "ok.txt", "content": "fine"},
                {"type": "file", "name": "secret.txt", "content": "no", "deny": "download"},
            ],
        },
    ]
}


@dataclass
class CliRun:
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> dict:
        return json.loads(self.stdout)  # the whole of stdout must be one JSON document


def isolated_env(tmp_path: Path, **extra: str) -> Dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("SYNCLIENT_", "SYNAPSE_", "PYTHON_KEYRING", "TQDM_"))
    }
    env.update(
        {
            "HOME": str(tmp_path / "home"),
            "SYNAPSE_CONFIG_FILE": str(tmp_path / "home" / ".synapseConfig"),
            "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
            "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(HERE)]),
            "PYTHONUNBUFFERED": "1",
        }
    )
    (tmp_path / "home").mkdir(exist_ok=True)
    env.update(extra)
    return env


def run_cli(
    *args: str, env: Dict[str, str], input: Optional[str] = None, timeout: float = 60, cwd: Optional[Path] = None
) -> CliRun:
    process = subprocess.run(
        [sys.executable, "-m", "synclient", *args],
        env=env,
        input=input,
        text=True,
        capture_output=True,
        timeout=timeout,
        cwd=str(cwd) if cwd else None,
    )
    return CliRun(process.returncode, process.stdout, process.stderr)
