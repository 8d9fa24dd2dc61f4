"""Smoke test of the benchmark suite: ``python -m benchmarks run --quick`` finishes and every contender that ran
was byte-exact, plain and (S1h, S3h, S5h) over HTTPS. No timing assertions: figures on a shared CI machine mean
nothing. Missing tools (aria2c, curl, synapseclient) are reported as skipped by the runner, not failed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow  # about 150 s: the slow tier (pytest -m slow, run by CI after the README's command)
def test_quick_benchmark_run_is_byte_exact(tmp_path):
    out = tmp_path / "quick.json"
    # Its own store cache: nothing shared with another run on the machine, nothing left from an older seeding.
    # The timeout only guards against a hang (about 150 s here with the HTTPS rows); it is not a timing assertion.
    env = {**os.environ, "SYNCLIENT_BENCH_CACHE": str(tmp_path / "stores")}
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks", "run", "--quick", "--out", str(out), "--work", str(tmp_path / "work")],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    results = json.loads(out.read_text())
    assert set(results["scenarios"]) == {
        "S1",
        "S1h",
        "S1t",
        "S2",
        "S3",
        "S3h",
        "S4",
        "S5",
        "S5h",
        "S6s",
        "S7",
        "S8",
        "S9",
        "S10",
        "M1",
        "M1r",
    }
    ran = 0
    for name, entry in results["scenarios"].items():
        for run in entry["runs"]:
            if run["status"].startswith("skipped"):
                continue
            ran += 1
            assert run["ok"] and run["status"] == "byte-exact", (name, run["contender"], run["status"])
    # at least synclient (library, CLI, serial) in S1-S5 and S1h, S3h, S5h, library and CLI in S7, three synclient
    # forms in S8, both sides of S9, M1 and M1r
    assert ran >= 36
    # S7 is download_many of 100 ids: one header call, one bundle per file, one URL batch per 100 (a count, not a time)
    s7 = results["scenarios"]["S7"]
    for run in s7["runs"]:
        if run["contender"] in ("synclient", "synclient-cli"):
            assert run["rest_calls"] <= s7["files"] + -(-s7["files"] // 100) + 1, run
    _check_query_and_view_rows(results["scenarios"]["S8"], results["scenarios"]["S9"])
    _check_tls_rows(results["scenarios"])
    # S10 is a download cart of 100 files (byte-exact includes: the cart emptied): its query pages and manifest,
    # one URL batch per 100, one remove; no bundle call per file
    s10 = results["scenarios"]["S10"]
    for run in s10["runs"]:
        if run["contender"] in ("synclient", "synclient-cli"):
            assert run["rest_calls"] < s10["files"] // 2, run
            assert not any("bundle" in route for route in run["rest_by_route"]), run


def _check_tls_rows(scenarios: dict) -> None:
    """Issue 18: the HTTPS rows ran against a TLS emulator (every contender that ran shook hands with the data host,
    so it trusted the emulator's CA: the machine's bundle would have refused it), the plain rows did not; a
    contender of the plain row is in the HTTPS row too. Counts, not times."""
    for plain, tls in (("S1", "S1h"), ("S3", "S3h"), ("S5", "S5h")):
        assert scenarios[tls]["tls"] and not scenarios[plain]["tls"] and "--tls" in scenarios[tls]["knobs_text"]
        assert {run["contender"] for run in scenarios[tls]["runs"]} == {
            run["contender"] for run in scenarios[plain]["runs"]
        }
        for run in scenarios[plain]["runs"]:
            assert not run["tls"] and not run["tls_handshakes"], run
        for run in scenarios[tls]["runs"]:
            if run["status"].startswith("skipped"):
                continue
            assert run["tls"] and run["tls_handshakes"].get("data", 0) >= 1, run
            assert run["tls_handshakes"]["data"] <= run["connections"]["data"]
            assert run["server_cpu_seconds"] >= 0.0


def test_every_contender_is_given_the_emulators_ca(tmp_path):
    """Over HTTPS each contender trusts the emulator's CA: its own flag where it has one, and the three variables
    that name a CA bundle (this machine's environment may point them at the system bundle); plain HTTP: nothing."""
    from benchmarks.contenders import CA_VARIABLES, launch

    ca = str(tmp_path / "ca.pem")
    common = dict(
        endpoint="https://127.0.0.1:1",
        token="t",
        entity="syn1",
        out=tmp_path / "out",
        cache_dir=tmp_path / "cache",
        urls=[("a.bin", "https://127.0.0.1:2/a")],
    )
    flags = {
        "synclient": ["--ca-bundle", ca],
        "synclient-w1": ["--ca-bundle", ca],
        "synclient-cli": ["--ca-bundle", ca],
        "synapseclient": ["--ca-bundle", ca],
        "aria2c": [f"--ca-certificate={ca}"],
        "curl": ["--cacert", ca],
    }
    for name, flag in flags.items():
        plan = launch(name, ca_bundle=ca, **common)
        joined = " ".join(plan.argv)
        assert " ".join(flag) in joined, (name, plan.argv)
        assert plan.env == {variable: ca for variable in CA_VARIABLES}, name
        plain = launch(name, **common)
        assert "--ca-bundle" not in plain.argv and "--cacert" not in plain.argv and plain.env == {}, name
    cli = launch("synclient-cli", ca_bundle=ca, **common).argv
    assert cli[cli.index("--ca-bundle") - 1] == "synclient"  # a global option, before the subcommand


def test_a_scenario_and_its_https_variant_run_side_by_side():
    from benchmarks.cli import _side_by_side
    from benchmarks.scenarios import build, lookup

    scenarios = build(quick=True)
    assert scenarios["S5h"].tls and not scenarios["S5"].tls and scenarios["S5h"].spec == scenarios["S5"].spec
    assert lookup(scenarios, "S2h").tls and lookup(scenarios, "S2h").name == "S2h"
    assert lookup(scenarios, "S5hh") is None and lookup(scenarios, "nope") is None
    assert _side_by_side(["S1", "S1h", "S2", "S5h", "S5", "S3h"]) == [["S1", "S1h"], ["S2"], ["S5", "S5h"], ["S3h"]]


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
