"""A remote name is shown, never acted on: the control characters a server can put in a name (an escape sequence,
a carriage return that rewrites the line, a line feed that forges the next one) reach no output line raw: ``ls``,
``renamed:`` lines, failures, ``-v`` logs (issue 29 review)."""

from __future__ import annotations

import subprocess
import sys

from cli_support import isolated_env

from synclient.emulator import Emulator

#: OSC 52 (write the terminal's clipboard), a colour, a carriage return and a forged summary line
EVIL = "evil\x1b]52;c;cm0gLXJmIH4=\x07\x1b[31m\r0 downloaded, 0 skipped, 0 failed\n.txt"
RAW = ("\x1b", "\x07", "\r")


def _run(*args: str, env) -> subprocess.CompletedProcess:
    """Bytes, not text: text mode would turn a raw carriage return into a line feed."""
    return subprocess.run([sys.executable, "-m", "synclient", *args], env=env, capture_output=True, timeout=60)


def _assert_shown_not_raw(output: bytes) -> None:
    text = output.decode("utf-8")
    for raw in RAW:
        assert raw not in text, (raw, text)
    assert "0 downloaded, 0 skipped, 0 failed\n" not in text, text  # the forged line is no line of its own


def test_control_characters_of_remote_names_are_escaped_in_every_line(tmp_path):
    # (Synapse refuses such names: a hostile server's, hence "names": "unchecked")
    spec = {
        "names": "unchecked",
        "projects": [
            {
                "name": "p",
                "children": [
                    {"type": "file", "name": EVIL, "content": "x"},
                    {"type": "file", "name": "deny" + EVIL, "content": "y", "deny": "download"},
                ],
            }
        ],
    }
    with Emulator() as emu:
        project = emu.seed_spec(spec)["p"]
        env = isolated_env(
            tmp_path,
            SYNCLIENT_ENDPOINT=emu.endpoint,
            SYNCLIENT_AUTH_TOKEN=emu.token,
            SYNCLIENT_FS_PROBE="windows",
            SYNCLIENT_DISABLE_PROGRESS="1",
        )
        listing = _run("ls", "-r", "-l", project, env=env)
        assert listing.returncode == 0, listing.stderr
        _assert_shown_not_raw(listing.stdout + listing.stderr)
        assert "evil\\x1b]52;c;cm0gLXJmIH4=\\x07\\x1b[31m\\r0 downloaded" in listing.stdout.decode()
        got = _run("-v", "get", "-r", project, "--path", str(tmp_path / "t"), env=env)
        assert got.returncode == 1, got.stderr  # the denied file fails; the other is renamed for Windows
        _assert_shown_not_raw(got.stdout + got.stderr)
        assert "renamed: " in got.stderr.decode() and "failed: " in got.stderr.decode()
