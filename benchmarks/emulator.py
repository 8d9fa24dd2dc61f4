"""The emulator as a separate process (never in the client's process: a shared GIL would distort the figures).

Stores are seeded once into a cache directory keyed by the spec and reused across runs and invocations.
"""
from __future__ import annotations

import hashlib
import json
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Dict, Optional

CACHE_ROOT = Path(os.environ.get("SYNCLIENT_BENCH_CACHE", Path(tempfile.gettempdir()) / "synclient-bench"))


def _flags(knobs: Dict[str, object]) -> list:
    args = []
    for name, value in knobs.items():
        args += ["--" + name.replace("_", "-"), str(value)]
    return args


def seeded_store(spec: dict) -> tuple:
    """(data dir, project id) of a store holding ``spec``; seeded on first use, then reused."""
    key = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]
    data_dir = CACHE_ROOT / f"store-{key}"
    marker = data_dir / "bench-projects.json"
    if not marker.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        spec_file = data_dir / "spec.json"
        spec_file.write_text(json.dumps(spec))
        out = subprocess.run([sys.executable, "-m", "synclient.emulator", "seed", "--data-dir", str(data_dir),
                              "--seed-spec", str(spec_file)], check=True, capture_output=True, text=True)
        marker.write_text(out.stdout)
    projects = json.loads(marker.read_text())["projects"]
    return data_dir, next(iter(projects.values()))


class EmulatorProcess:
    """``python -m synclient.emulator serve --data-dir D [knobs] [--tls]`` until ``stop()``. With ``tls`` every
    listener serves HTTPS with a CA made at start (a new one at every restart): its PEM file is :attr:`ca_bundle`."""

    def __init__(self, data_dir: Path, knobs: Dict[str, object], tls: bool = False) -> None:
        self.data_dir = data_dir
        self.knobs = dict(knobs)
        self.tls = tls
        self.process: Optional[subprocess.Popen] = None
        self.info: Dict[str, object] = {}
        self._ssl: Optional[ssl.SSLContext] = None

    def start(self) -> "EmulatorProcess":
        self.process = subprocess.Popen(
            [sys.executable, "-m", "synclient.emulator", "serve", "--data-dir", str(self.data_dir)]
            + _flags(self.knobs) + (["--tls"] if self.tls else []),
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"emulator did not start (exit {self.process.wait()})")
        self.info = json.loads(line)
        self._ssl = ssl.create_default_context(cafile=self.ca_bundle) if self.ca_bundle else None
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def __enter__(self) -> "EmulatorProcess":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def endpoint(self) -> str:
        return str(self.info["endpoint"])

    @property
    def token(self) -> str:
        return str(self.info["token"])

    @property
    def ca_bundle(self) -> Optional[str]:
        """The PEM file of the CA the emulator's certificate chains to (``tls``), else None."""
        value = self.info.get("ca_bundle")
        return str(value) if value else None

    def cpu_seconds(self) -> float:
        """User + system CPU seconds of the emulator process so far (all its threads), from ``/proc``."""
        if self.process is None:
            return 0.0
        try:
            with open(f"/proc/{self.process.pid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (fields 14, 15)

    def _admin(self, method: str, path: str, body: Optional[dict] = None) -> dict:
        data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
        request = urllib.request.Request(self.endpoint + "/emulator/" + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30, context=self._ssl) as answer:
            text = answer.read()
        return json.loads(text) if text else {}

    def stats(self) -> dict:
        return self._admin("GET", "stats")

    def reset_stats(self) -> None:
        self._admin("POST", "stats/reset")

    def set_knobs(self, **knobs) -> None:
        self._admin("POST", "knobs", knobs)
