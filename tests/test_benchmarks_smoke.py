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
        "S11",
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
    _check_auto_view_rows(results["scenarios"]["S11"])
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


def _check_auto_view_rows(s11: dict) -> None:
    """Issue 34, S11 at quick sizes (200 files: the 50 files that make a view worth it are reached): `--view auto`
    (library and CLI) made its view (one project and one view created, both deleted), read it (query calls), took
    at most a bundle per file until then, and left nothing behind (byte-exact already includes that: the harness
    checked the account after the run); the walk took a bundle per file. Counts, not times."""
    runs = {run["contender"]: run for run in s11["runs"]}
    n = s11["files"]
    assert n == 200
    assert _bundles(runs["synclient"]) >= n and runs["synclient"]["left_behind"] is None
    for name in ("synclient-auto", "synclient-cli-auto"):
        run, routes = runs[name], runs[name]["rest_by_route"]
        assert run["left_behind"] == [], run["left_behind"]
        assert routes.get("POST /repo/v1/entity") == 2 and routes.get("DELETE /repo/v1/entity/{id}") == 2, routes
        assert _query_calls(run) > 0 and _bundles(run) < n // 2, routes
        assert run["rest_calls"] < runs["synclient"]["rest_calls"], routes


def test_a_run_that_leaves_something_behind_is_not_byte_exact(tmp_path, monkeypatch):
    """Issue 34: the harness reads the account after a `--view auto` run; a project but the seeded one, or anything
    in the trash can, turns a byte-exact run into a failure that names it; the walk is not checked."""
    from benchmarks import harness
    from benchmarks.harness import ScenarioRunner
    from benchmarks.scenarios import build

    class FakeEmulator:
        endpoint, token, ca_bundle = "http://127.0.0.1:1", "t", None
        left = {
            "projects": {"seeded": "syn1", "synclient-scratch-1": "syn9"},
            "trash": [{"id": "syn10", "kind": "entityview", "name": "v"}],
        }

        def restart(self):
            pass

        def reset_stats(self):
            pass

        def cpu_seconds(self):
            return 0.0

        def stats(self):
            return {}

        def info(self):
            return {"projects": self.left["projects"]}

        def trash(self):
            return self.left["trash"]

    scenario = build(quick=True)["S11"]
    runner = ScenarioRunner(scenario, tmp_path, ["synclient", "synclient-auto"], log=lambda text: None)
    runner.emu, runner.project, runner.expected = FakeEmulator(), "syn1", {}
    worker_line = '{"wall": 1.0, "stats": {}, "client": {}}'
    monkeypatch.setattr(harness, "spawn", lambda argv, env=None: (0, 1.0, None, worker_line, "", 10.0))
    monkeypatch.setattr(harness, "verify", lambda out, expected: "byte-exact")
    (tmp_path / "S11").mkdir()
    walk = runner.run("synclient", 0)
    assert walk.ok and walk.left_behind is None
    auto = runner.run("synclient-auto", 0)
    assert not auto.ok and auto.left_behind == [
        "project synclient-scratch-1 (syn9)",
        "in the trash: entityview v (syn10)",
    ]
    assert auto.status.startswith("byte-exact, but left behind: project synclient-scratch-1 (syn9)")
    FakeEmulator.left = {"projects": {"seeded": "syn1"}, "trash": []}
    clean = runner.run("synclient-auto", 1)
    assert clean.ok and clean.status == "byte-exact" and clean.left_behind == []


def test_the_auto_view_contenders_sync_with_view_auto(tmp_path):
    """Issue 34: `synclient-auto` is the library's `view="auto"` (the worker's --view auto), `synclient-cli-auto`
    is `get -r ID --view auto`; the walk has no --view."""
    from benchmarks.contenders import launch

    common = dict(
        endpoint="http://127.0.0.1:1", token="t", entity="syn1", out=tmp_path / "o", cache_dir=tmp_path / "c", urls=[]
    )
    auto = launch("synclient-auto", **common).argv
    assert auto[auto.index("--view") + 1] == "auto" and "benchmarks.worker" in auto
    cli = launch("synclient-cli-auto", **common).argv
    assert cli[cli.index("-r") + 1] == "syn1" and cli[cli.index("--view") + 1] == "auto"
    assert "--view" not in launch("synclient", **common).argv


def test_emulator_knobs_are_set_over_a_scenarios_own(capsys):
    """`run --emulator-knob NAME=VALUE` (issue 34's build-time sensitivity): JSON values, an unknown knob refused in
    one line before anything runs."""
    from benchmarks.cli import emulator_knobs, main

    assert emulator_knobs(["view_build_seconds_per_1000_files=8", "view_lag=true"]) == {
        "view_build_seconds_per_1000_files": 8,
        "view_lag": True,
    }
    assert main(["run", "S11", "--quick", "--emulator-knob", "view_build_secs=8"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "--emulator-knob view_build_secs=8: expected NAME=VALUE with NAME an emulator knob"
