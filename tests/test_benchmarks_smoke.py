"""Smoke test of the benchmark suite: ``python -m benchmarks run --quick`` finishes and every contender that ran
was byte-exact. No timing assertions: figures on a shared CI machine mean nothing. Missing tools (aria2c, curl,
synapseclient) are reported as skipped by the runner, not failed."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def test_quick_benchmark_run_is_byte_exact(tmp_path):
    out = tmp_path / "quick.json"
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks", "run", "--quick", "--out", str(out), "--work", str(tmp_path / "work")],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=170)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    results = json.loads(out.read_text())
    assert set(results["scenarios"]) == {"S1", "S1t", "S2", "S3", "S4", "S5", "M1", "M1r"}
    ran = 0
    for name, entry in results["scenarios"].items():
        for run in entry["runs"]:
            if run["status"].startswith("skipped"):
                continue
            ran += 1
            assert run["ok"] and run["status"] == "byte-exact", (name, run["contender"], run["status"])
    assert ran >= 20  # at least synclient (library, CLI, serial) in S1-S5, the library in M1 and M1r
