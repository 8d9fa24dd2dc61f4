"""Ctrl-C (SIGINT -> exit 130, partial data kept for resume) and the progress display (TTY vs not)."""

from __future__ import annotations

import fcntl
import hashlib
import os
import pty
import select
import signal
import stat
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
from cli_support import isolated_env, run_cli

from synclient.emulator import Emulator, seeded_bytes

BIG = 30 * 1024 * 1024  # below the part size: one connection


@pytest.fixture
def slow_emulator():
    """A big file served slowly enough that a sync is surely in flight when the test interrupts it."""
    # 30 s for the whole file; the test interrupts after 1 MiB, so a sync that ignored Ctrl-C would either finish
    # the file or outlast the test's 25 s wait for it
    with Emulator(bandwidth_per_conn="1MiB") as emulator:
        emulator.ids = emulator.seed_spec(
            {"projects": [{"name": "slow", "children": [{"type": "file", "name": "big.bin", "size": BIG, "seed": 11}]}]}
        )
        yield emulator


def _bytes_on_disk(root: Path) -> int:
    """The bytes of the files under ``root`` now, while the sync runs: a file may go between the listing and its
    stat (sqlite's journal comes and goes with each index write), and is then not counted."""
    total = 0
    for folder, _, names in os.walk(root):
        for name in names:
            try:
                info = os.lstat(os.path.join(folder, name))
            except FileNotFoundError:
                continue
            total += info.st_size if stat.S_ISREG(info.st_mode) else 0
    return total


def test_sigint_exits_130_and_keeps_partial_data_for_resume(tmp_path, slow_emulator):
    env = isolated_env(tmp_path, SYNCLIENT_ENDPOINT=slow_emulator.endpoint, SYNCLIENT_AUTH_TOKEN=slow_emulator.token)
    out = tmp_path / "out"
    project = slow_emulator.ids["slow"]
    process = subprocess.Popen(
        [sys.executable, "-m", "synclient", "get", "-r", project, "--path", str(out)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and (not out.exists() or _bytes_on_disk(out) < 1024 * 1024):
        time.sleep(0.05)
    assert _bytes_on_disk(out) > 0, "the download never started"
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=25)  # a safety bound, below the 30 s the whole file takes
    assert process.returncode == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    # promptly: the sync stopped long before the file could be complete (not by a clock: a loaded machine is slow)
    assert slow_emulator.stats()["data_bytes"] < BIG // 2, "Ctrl-C must stop the sync promptly"
    assert not (out / "big.bin").exists()
    kept = _bytes_on_disk(out)
    assert 0 < kept < BIG  # partial data stays beside the destination for the next run

    slow_emulator.set_knobs(bandwidth_per_conn=0)
    resumed = run_cli("--json", "get", "-r", project, "--path", str(out), env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert hashlib.md5((out / "big.bin").read_bytes()).digest() == hashlib.md5(seeded_bytes(BIG, 11)).digest()


def _run_in_pty(args, env, timeout=60):
    """Run the CLI with stderr (and stdout) on a pseudo-terminal; return (exit code, everything it wrote)."""
    main_fd, secondary_fd = pty.openpty()
    # a fresh pty is 0x0; give it a real terminal's size so the bar has room
    fcntl.ioctl(secondary_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    process = subprocess.Popen(
        [sys.executable, "-m", "synclient", *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=secondary_fd,
        stderr=secondary_fd,
        close_fds=True,
    )
    os.close(secondary_fd)
    output = _read_terminal(main_fd, process, timeout)
    return process.wait(timeout=10), output.decode("utf-8", "replace")


def _read_terminal(main_fd, process, timeout, on_output=None) -> bytes:
    """Everything the child writes to the terminal ``main_fd`` until it closes it or exits (at most ``timeout`` s);
    ``on_output(everything so far)`` after each read. Closes ``main_fd``."""
    chunks = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([main_fd], [], [], 0.1)
        if ready:
            try:
                data = os.read(main_fd, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
            if on_output is not None:
                on_output(b"".join(chunks))
        elif process.poll() is not None:
            break
    os.close(main_fd)
    return b"".join(chunks)


@pytest.fixture
def progress_emulator():
    with Emulator(bandwidth_per_conn="8MiB", data_latency_ms=5) as emulator:
        emulator.ids = emulator.seed_spec(
            {
                "projects": [
                    {
                        "name": "bar",
                        "children": [
                            {"type": "file", "name": f"f{i}.bin", "size": 1024 * 1024, "seed": i} for i in range(6)
                        ]
                        + [{"type": "file", "name": "big.bin", "size": 8 * 1024 * 1024, "seed": 99}],
                    }
                ]
            }
        )
        yield emulator


def test_progress_bar_under_a_terminal(tmp_path, progress_emulator):
    env = isolated_env(
        tmp_path, SYNCLIENT_ENDPOINT=progress_emulator.endpoint, SYNCLIENT_AUTH_TOKEN=progress_emulator.token
    )
    code, output = _run_in_pty(["get", "-r", progress_emulator.ids["bar"], "--path", str(tmp_path / "o")], env)
    assert code == 0, output
    assert "\r" in output.replace("\r\n", "\n")  # the bar redraws in place
    assert "files done" in output and "B/s" in output
    assert "7 files done" in output  # counted on completion, final state shown


def test_no_progress_flags_under_a_terminal(tmp_path, progress_emulator):
    base = dict(SYNCLIENT_ENDPOINT=progress_emulator.endpoint, SYNCLIENT_AUTH_TOKEN=progress_emulator.token)
    project = progress_emulator.ids["bar"]
    for extra_args, extra_env in ((["--no-progress"], {}), (["-q"], {}), ([], {"SYNCLIENT_DISABLE_PROGRESS": "1"})):
        env = isolated_env(tmp_path, **base, **extra_env)
        code, output = _run_in_pty(["get", "-r", project, "--path", str(tmp_path / "o"), *extra_args], env)
        assert code == 0, output
        assert "\r" not in output.replace("\r\n", "\n"), (extra_args, extra_env)
        assert "files done" not in output


def test_a_dry_run_shows_its_progress_line_under_a_terminal(tmp_path, progress_emulator):
    env = isolated_env(
        tmp_path, SYNCLIENT_ENDPOINT=progress_emulator.endpoint, SYNCLIENT_AUTH_TOKEN=progress_emulator.token
    )
    get = ["get", "-r", progress_emulator.ids["bar"], "--dry-run", "--path", str(tmp_path / "o")]
    code, output = _run_in_pty(get, env)
    assert code == 0, output
    assert "dry run of bar: 7 files" in output and "7 to download" in output  # its final state, left on its line
    for quiet in (["--no-progress"], ["-q"]):
        code, output = _run_in_pty(get + quiet, env)
        assert code == 0 and "dry run of" not in output, (quiet, output)
    result = run_cli(*get, env=env)  # no terminal: no line
    assert result.returncode == 0 and "dry run of" not in result.stderr + result.stdout


def test_without_a_terminal_no_carriage_returns(tmp_path, progress_emulator):
    env = isolated_env(
        tmp_path, SYNCLIENT_ENDPOINT=progress_emulator.endpoint, SYNCLIENT_AUTH_TOKEN=progress_emulator.token
    )
    result = run_cli("get", "-r", progress_emulator.ids["bar"], "--path", str(tmp_path / "o"), env=env)
    assert result.returncode == 0
    assert "\r" not in result.stderr + result.stdout
    assert "7 downloaded" in result.stdout


def _screen(output: str, columns: int):
    """What a terminal ``columns`` wide shows for ``output``: carriage returns, newlines, and the wrap after the
    last column (escape sequences skipped)."""
    lines, row, col, pending = [[]], 0, 0, False
    chars = iter(output)
    for char in chars:
        if char == "\x1b":
            for follower in chars:
                if follower.isalpha():
                    break
            continue
        if char == "\r":
            col, pending = 0, False
        elif char == "\n":
            row, col, pending = row + 1, 0, False
            lines.append([]) if row == len(lines) else None
        elif char.isprintable():
            if pending:
                row, col, pending = row + 1, 0, False
                lines.append([]) if row == len(lines) else None
            line = lines[row]
            line.extend(" " * (col + 1 - len(line)))
            line[col] = char
            pending, col = (True, col) if col == columns - 1 else (False, col + 1)
    return ["".join(line).rstrip() for line in lines]


def _controlling_terminal():
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def test_ctrl_c_leaves_one_whole_bar_line(tmp_path, slow_emulator):
    """Ctrl-C typed at a terminal: the terminal echoes "^C" after the bar; the bar's final redraw stays on that one
    line (it used to wrap the "C" onto a new line and draw a second bar there, leaving a "^" on the first)."""
    env = isolated_env(tmp_path, SYNCLIENT_ENDPOINT=slow_emulator.endpoint, SYNCLIENT_AUTH_TOKEN=slow_emulator.token)
    columns = 100
    main_fd, secondary_fd = pty.openpty()
    fcntl.ioctl(secondary_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    attributes = termios.tcgetattr(secondary_fd)
    attributes[3] |= termios.ISIG | termios.ECHO | termios.ECHOCTL
    termios.tcsetattr(secondary_fd, termios.TCSANOW, attributes)
    process = subprocess.Popen(
        [sys.executable, "-m", "synclient", "get", "-r", slow_emulator.ids["slow"], "--path", str(tmp_path / "out")],
        env=env,
        stdin=secondary_fd,
        stdout=secondary_fd,
        stderr=secondary_fd,
        close_fds=True,
        preexec_fn=_controlling_terminal,
    )
    os.close(secondary_fd)
    typed = []

    def type_ctrl_c_once_under_way(written: bytes) -> None:
        if not typed and b"%|" in written:  # the bar shows a share: the sync is under way
            os.write(main_fd, b"\x03")
            typed.append(True)

    output = _read_terminal(main_fd, process, 30, on_output=type_ctrl_c_once_under_way)
    assert process.wait(timeout=10) == 130
    screen = _screen(output.decode("utf-8", "replace"), columns)
    bars = [line for line in screen if "files done" in line]
    assert len(bars) == 1 and bars[0].endswith("^C"), screen
    assert not any(line in ("C", "^") for line in screen), screen
    assert any(line.startswith("synclient: error: interrupted") for line in screen), screen
