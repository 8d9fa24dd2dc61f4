"""Smoke test of the benchmark suite: ``python -m benchmarks run --quick`` finishes and every contender that ran
was byte-exact. No timing assertions: figures on a shared CI machine mean nothing. Missing tools (aria2c, curl,
synapseclient) are reported as skipped by the runner, not failed."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def test_quick_benchmark_run_is_byte_exact(tmp_path):
    out = tmp_path / "quick.json"
    # Its own store cache: nothing shared with another run on the machine, nothing left from an older seeding.
    # The timeout only guards against a hang (about 90-110 s here); it is not a timing assertion.
    env = {**os.environ, "SYNCLIENT_BENCH_CACHE": str(tmp_path / "stores")}
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks", "run", "--quick", "--out", str(out), "--work", str(tmp_path / "work")],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    results = json.loads(out.read_text())
    assert set(results["scenarios"]) == {"S1", "S1t", "S2", "S3", "S4", "S5", "S6s", "S7", "S8", "S9", "M1", "M1r"}
    ran = 0
    for name, entry in results["scenarios"].items():
        for run in entry["runs"]:
            if run["status"].startswith("skipped"):
                continue
            ran += 1
            assert run["ok"] and run["status"] == "byte-exact", (name, run["contender"], run["status"])
    # at least synclient (library, CLI, serial) in S1-S5, library and CLI in S7, three synclient forms in S8, both
    # sides of S9, M1 and M1r
    assert ran >= 27
    # S7 is download_many of 100 ids: one header call, one bundle per file, one URL batch per 100 (a count, not a time)
    s7 = results["scenarios"]["S7"]
    for run in s7["runs"]:
        if run["contender"] in ("synclient", "synclient-cli"):
            assert run["rest_calls"] <= s7["files"] + -(-s7["files"] // 100) + 1, run
    _check_query_and_view_rows(results["scenarios"]["S8"], results["scenarios"]["S9"])


def test_sweep_refuses_an_unknown_knob_in_one_line(capsys):
    from benchmarks.cli import main

    assert main(["sweep", "S5", "--knob", "part_sise"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("unknown knob(s): part_sise; swept: ") and "\n" not in err


def test_sweep_values_are_labelled_as_people_read_them():
    from benchmarks.report import knob_label

    assert knob_label("part_size", 32 * 1024 * 1024) == "32 MiB"
    assert knob_label("chunk_size", 256 * 1024) == "256 KiB"
    assert knob_label("streams_per_file", 16) == "16"
    assert knob_label("direct_io", True) == "True"


def _query_calls(run: dict) -> int:
    return sum(count for route, count in run["rest_by_route"].items() if "/table/query/" in route)


def _bundles(run: dict) -> int:
    return sum(count for route, count in run["rest_by_route"].items() if route.endswith("/bundle2"))


def _check_query_and_view_rows(s8: dict, s9: dict) -> None:
    """S8 and S9 at quick sizes (200 files, 40 selected; a few seconds): the query's SELECT * (library and CLI) and
    the sync planned from the view take no bundle call; SELECT id takes one per file; SELECT * stays within the
    query's calls + ceil(N/100) URL batches + 2 (the header call, one retry). Counts, not times."""
    runs8 = {run["contender"]: run for run in s8["runs"]}
    runs9 = {run["contender"]: run for run in s9["runs"]}
    n = s8["files"]
    assert n == 40 and s9["files"] == 200
    for name in ("synclient", "synclient-cli"):
        run = runs8[name]
        assert _bundles(run) == 0, run["rest_by_route"]
        assert 0 < _query_calls(run) and run["rest_calls"] <= _query_calls(run) + -(-n // 100) + 2, run["rest_by_route"]
    assert _bundles(runs8["synclient-id"]) >= n
    if "synapseclient" in runs8 and not runs8["synapseclient"]["status"].startswith("skipped"):
        assert _bundles(runs8["synapseclient"]) >= n  # synapse get -q: a syn.get per selected id
    assert _bundles(runs9["synclient-view"]) == 0 and _query_calls(runs9["synclient-view"]) > 0
    assert _bundles(runs9["synclient"]) >= s9["files"]
    assert runs9["synclient-view"]["rest_calls"] * 5 < runs9["synclient"]["rest_calls"]
