"""Does the size of the trusted CA bundle cost a client per connection? ``python -m benchmarks.probe_ca_bundle``.

The HTTPS rows give every contender the emulator's CA alone: a one-certificate PEM file. Real clients trust
certifi's bundle (or the system's, or that plus a private CA): about 140 certificates. urllib3 loads its
``ca_certs`` into a new ``SSLContext`` for every connection it opens, so a client pays for parsing the bundle once
per connection. This probe runs S1h (400 tiny files over HTTPS) with one contender, alternating its CA bundle
between the emulator's CA alone ("small") and certifi's bundle with the emulator's CA appended ("big", still
trusting exactly what it must), and reports wall, CPU, handshakes and status per run (JSON; ``--out`` writes it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
from pathlib import Path

from benchmarks.contenders import launch
from benchmarks.harness import ScenarioRunner, spawn, verify
from benchmarks.scenarios import build


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.probe_ca_bundle", description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--contender", default="synclient", help="synclient (default), synclient-cli, synapseclient")
    parser.add_argument("--out", help="also write the JSON here")
    args = parser.parse_args(argv)
    import certifi

    scenario = build()["S1h"]
    work = Path(tempfile.mkdtemp(prefix="synclient-bench-ca-"))
    runs = {"small": [], "big": []}
    try:
        with ScenarioRunner(scenario, work, [args.contender], log=lambda text: None) as runner:
            emu = runner.emu
            bundles = {"small": emu.ca_bundle, "big": str(work / "certifi-plus-emulator-ca.pem")}
            Path(bundles["big"]).write_text(Path(certifi.where()).read_text() + "\n" + Path(emu.ca_bundle).read_text())
            for r in range(args.repeat):
                for kind in ("small", "big") if r % 2 == 0 else ("big", "small"):
                    out = work / f"out-{kind}-{r}"
                    plan = launch(
                        args.contender,
                        endpoint=emu.endpoint,
                        token=emu.token,
                        entity=runner.project,
                        out=out,
                        cache_dir=work / f"cache-{kind}-{r}",
                        urls=[],
                        ca_bundle=bundles[kind],
                    )
                    emu.reset_stats()
                    code, wall, usage, stdout, stderr, _rss = spawn(plan.argv, plan.env)
                    stats = emu.stats()
                    if plan.kind == "worker" and code == 0:
                        answer = json.loads(stdout.strip().splitlines()[-1])
                        wall, stats = answer["wall"], answer["stats"]
                    row = {
                        "wall": wall,
                        "cpu_seconds": usage.ru_utime + usage.ru_stime if usage else 0.0,
                        "tls_handshakes": stats.get("tls_handshakes", {}),
                        "status": verify(out, runner.expected) if code == 0 else f"exit {code}: {stderr[-300:]}",
                        "load_average": os.getloadavg()[0],
                    }
                    print(kind, r, json.dumps(row), flush=True)
                    runs[kind].append(row)
                    shutil.rmtree(out, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = {
        "scenario": "S1h",
        "contender": args.contender,
        "repeat": args.repeat,
        "certificates": {"small": 1, "big": Path(certifi.where()).read_text().count("BEGIN CERTIFICATE") + 1},
        "runs": runs,
        "medians": {
            kind: {key: statistics.median(row[key] for row in rows) for key in ("wall", "cpu_seconds")}
            for kind, rows in runs.items()
        },
    }
    print(json.dumps(result["medians"]))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
