"""Smoke test of issue 19's figure script: ``python -m benchmarks.dask_scaling --quick`` (8 files of 16 MiB, the
single-process sync and a Dask LocalCluster of 1 and of 2 worker processes, under both emulator conditions)
finishes and every run was byte-exact. Counts, not times: figures on a shared CI machine mean nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow  # about 20 s: the slow tier (pytest -m slow, run by CI after the README's command)
def test_quick_dask_scaling_run_is_byte_exact(tmp_path):
    pytest.importorskip("distributed")
    out = tmp_path / "quick.json"
    # its own store cache (as the suite's smoke test); the timeout only guards against a hang (about 20 s here)
    env = {
        **os.environ,
        "SYNCLIENT_BENCH_CACHE": str(tmp_path / "stores"),
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]),
    }
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks.dask_scaling", "--quick", "--out", str(out), "--work", str(tmp_path)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    results = json.loads(out.read_text())
    assert set(results["conditions"]) == {"50MB/s per connection", "raw loopback"}
    for condition in results["conditions"].values():
        assert {run["way"] for run in condition["runs"]} == {"single", "dask-1", "dask-2"}
        for run in condition["runs"]:
            assert run["status"] == "byte-exact" and not run["failures"] and not run["worker_replaced"], run
            assert run["bytes"] == results["total_bytes"], run
            # every REST call of the run, the driver's and the workers', is in the report: the emulator agrees
            assert run["rest_calls"] == run["emulator_rest_calls"], run
            workers = {"single": 0, "dask-1": 1, "dask-2": 2}[run["way"]]
            assert len(run["workers"]) == workers, run["workers"]
            assert sum(worker["bytes"] for worker in run["workers"]) == (run["bytes"] if workers else 0)
