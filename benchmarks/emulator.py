"""The benchmarks' seeded stores: each spec is seeded once into a cache directory keyed by the spec and reused
across runs and invocations. The emulator serves them in a separate process (never in the client's process: a
shared GIL would distort the figures): :class:`synclient.emulator.process.EmulatorProcess`.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CACHE_ROOT = Path(os.environ.get("SYNCLIENT_BENCH_CACHE", Path(tempfile.gettempdir()) / "synclient-bench"))


def seeded_store(spec: dict) -> tuple:
    """(data dir, project id) of a store holding ``spec``; seeded on first use, then reused."""
    key = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]
    data_dir = CACHE_ROOT / f"store-{key}"
    marker = data_dir / "bench-projects.json"
    if not marker.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        spec_file = data_dir / "spec.json"
        spec_file.write_text(json.dumps(spec))
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "synclient.emulator",
                "seed",
                "--data-dir",
                str(data_dir),
                "--seed-spec",
                str(spec_file),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        marker.write_text(out.stdout)
    projects = json.loads(marker.read_text())["projects"]
    return data_dir, next(iter(projects.values()))
