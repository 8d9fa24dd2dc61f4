"""The first hour's two local commands (issue 32, part 4): ``synclient demo`` run again over its folder (4.6), and
the emulator's ``serve --print-env`` feeding the CLI of another terminal (4.3)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from cli_support import isolated_env, run_cli

from synclient.demo import resync_note
from synclient.emulator.cli import shell_exports


def _demo(tmp_path, *args):
    return run_cli(
        *args, "demo", "--small", "--no-progress", "--path", "d", env=isolated_env(tmp_path), cwd=tmp_path, timeout=120
    )


def test_a_demo_over_its_earlier_folder_says_it_is_a_re_sync_before_the_sync(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "from-last-time.txt").write_text("x")
    result = _demo(tmp_path, "--endpoint", "http://127.0.0.1:9", "--profile", "nobody")
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    note = lines.index(resync_note(Path("d")))
    assert note < next(i for i, line in enumerate(lines) if line.startswith("first sync:"))
    assert "d already exists, so the first sync is a re-sync" in lines[note]
    assert "remove d or give --path another folder" in lines[note]
    # given before the command, where every command takes them: said to be ignored, and they are
    assert "note: demo runs its own emulator (its own endpoint and token): --endpoint, --profile ignored" in lines


def test_a_demo_into_a_new_folder_says_nothing_of_a_re_sync(tmp_path):
    result = _demo(tmp_path)
    assert result.returncode == 0, result.stderr
    assert "re-sync" not in result.stderr and "ignored" not in result.stderr


def test_shell_exports_are_quoted_and_the_rest_is_comments():
    info = {"endpoint": "http://127.0.0.1:5", "token": "emu-a'b $x", "projects": {"my proj": "syn7"}}
    text = shell_exports(info)
    exports = [line for line in text.splitlines() if not line.startswith("#")]
    assert [shlex.split(line) for line in exports] == [
        ["export", "SYNCLIENT_ENDPOINT=http://127.0.0.1:5"],
        ["export", "SYNCLIENT_AUTH_TOKEN=emu-a'b $x"],
    ]
    assert "# projects: syn7 (my proj)" in text and "synclient get -r syn7" in text
    assert "REQUESTS_CA_BUNDLE='/tmp/ca file.pem'" in shell_exports({**info, "ca_bundle": "/tmp/ca file.pem"})


def test_the_two_terminal_recipe(tmp_path):
    """Terminal 1 runs ``serve --print-env``; terminal 2 (a shell) takes its output as pasted, then runs synclient."""
    env = isolated_env(tmp_path)
    serve = [sys.executable, "-m", "synclient.emulator", "serve", "--print-env", "--stop-at-stdin-eof"]
    spec = ["--synthetic", "files=3,depth=1,fanout=1,size=10", "--project-name", "demo"]
    with subprocess.Popen(serve + spec, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as server:
        try:
            printed = []
            while not printed or not printed[-1].startswith("# e.g. "):  # the last line it prints before serving
                line = server.stdout.readline()
                assert line, f"serve exited before printing its exports: {printed}"
                printed.append(line.rstrip("\n"))
            pasted = "\n".join(printed)
            project = printed[-1].split()[-3]  # "# e.g. synclient get -r synN --path emulator-copy"
            terminal_2 = subprocess.run(
                ["sh", "-c", pasted + f'\nexec "$0" -m synclient ls -r {project}', sys.executable],
                env=env,
                text=True,
                capture_output=True,
                timeout=60,
            )
        finally:
            server.stdin.close()  # --stop-at-stdin-eof: the server stops
            server.wait(timeout=60)
    assert printed[0].startswith("export SYNCLIENT_ENDPOINT=http://127.0.0.1:")
    assert printed[1].startswith("export SYNCLIENT_AUTH_TOKEN=")
    assert terminal_2.returncode == 0, terminal_2.stderr
    assert terminal_2.stdout.count("\n") == 1 + 1 + 3  # the project, its folder, its three files
    assert server.returncode == 0
