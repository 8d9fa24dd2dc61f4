from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest
import requests

from synclient.emulator.cli import main, parse_synthetic


def test_parse_synthetic_with_size_mix():
    assert parse_synthetic("files=400,depth=3,fanout=10,size=4KiB:500,1MiB:200") == {
        "files": 400,
        "depth": 3,
        "fanout": 10,
        "size": "4KiB:500,1MiB:200",
    }


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "--bandwidth-per-conn", "32XB"],
        ["serve", "--fault-data-cut-rate", "2"],
        ["serve", "--bogus"],
        ["serve", "--synthetic", "files=x"],
        ["serve", "--maintenance-window", "5"],
        [],
        ["seed", "--data-dir", "/nonexistent-dir/x", "--seed-spec", "/nonexistent.json"],
    ],
)
def test_bad_input_is_one_line_exit_2(argv, capsys):
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error:" in err and "Traceback" not in err
    # the process's own Ctrl-C comes back: a later in-process sync of this worker must still be interruptible
    assert {signum: signal.getsignal(signum) for signum in handlers} == handlers


def test_seed_then_serve_prints_ready_line_and_stops_on_sigterm(tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(
        json.dumps({"projects": [{"name": "p", "children": [{"type": "file", "name": "a.txt", "content": "text"}]}]})
    )
    data_dir = tmp_path / "store"
    seeded = subprocess.run(
        [sys.executable, "-m", "synclient.emulator", "seed", "--data-dir", str(data_dir), "--seed-spec", str(spec)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert seeded.returncode == 0, seeded.stderr
    project = json.loads(seeded.stdout)["projects"]["p"]
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "synclient.emulator",
            "serve",
            "--data-dir",
            str(data_dir),
            "--profile",
            "synapse",
            "--api-latency-ms",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ready = json.loads(server.stdout.readline())
        assert set(ready) == {"endpoint", "data_endpoint", "external_endpoint", "token", "projects"}
        assert ready["projects"] == {"p": project}
        answer = requests.get(
            f"{ready['endpoint']}/repo/v1/entity/{project}",
            headers={"Authorization": f"Bearer {ready['token']}"},
            timeout=10,
        )
        assert answer.status_code == 200 and answer.json()["name"] == "p"
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=20) == 0
