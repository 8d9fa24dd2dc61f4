"""Issue 19's figures: one sync in one process against the same sync sharded over a Dask ``LocalCluster`` of 1 and
of 2 worker processes, side by side: ``python -m benchmarks.dask_scaling [--quick] [--repeats N] [--out FILE]``.

The tree is 8 files of 256 MiB (``--quick``: 8 of 16 MiB, one repeat), seeded, so every byte is checked (size +
MD5 from the seeds, after the timed region). The emulator runs in its own process under two conditions: 50 MB/s
per data connection, and raw loopback (no bandwidth cap, no latency; no throttle in either). For each condition
the emulator and both clusters (``threads_per_worker=1, processes=True``) are started once; every repeat then runs
the three ways one after the other, the first way rotating from one repeat to the next, each into a fresh empty
target that is removed after its check (``--work DIR``: where the targets go, e.g. ``/dev/shm`` to take the disk
out; default ``$TMPDIR``). One uncounted single-process run per condition comes first (``--warmups``).

Per run: the wall time of the ``sync_from_platform`` call; the CPU of this process over it (the driver: with
``dask=`` it plans and indexes, and the clusters' schedulers and nannies live in it too; all its threads, from
``getrusage``); the CPU of the cluster's worker processes (``/proc`` through psutil, and the workers' own
``WorkerCounts.cpu_seconds``); the emulator's CPU; REST calls as the client reports them and as the emulator
counted them, and 429s. Prints a table of medians and writes every run as JSON (default
``benchmarks/results/2026-11-25-issue19-dask-scaling.json``; ``--quick`` writes only with ``--out``).

A run during which a worker process was replaced is flagged (``worker_replaced``: its CPU is then undercounted). On
Python 3.11 a worker could deadlock in Dask's statistical profiler (``sys._current_frames`` against the GIL, CPython
gh-116969; seen on 3.11.7, and 3.12 is not affected) until the scheduler dropped it (``worker-ttl``, 5 minutes):
the clusters here start without it before 3.12, as synclient's own do, and a shard stops it on its worker.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

import psutil

from benchmarks.cli import machine
from benchmarks.emulator import seeded_store
from benchmarks.harness import expected_for, verify
from benchmarks.scenarios import MiB, Scenario, _file, _project
from synclient.emulator.process import EmulatorProcess

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "2026-11-25-issue19-dask-scaling.json"
WAYS = ("single", "dask-1", "dask-2")
#: the emulator's knobs per condition (the URL lifetime only so that no URL expires mid-run)
CONDITIONS = {
    "50MB/s per connection": {"bandwidth_per_conn": "50MB", "url_lifetime": 3600},
    "raw loopback": {"url_lifetime": 3600},
}
#: seconds the idle clusters are watched for, after they started (their background CPU, on the same cores)
IDLE_SECONDS = 5.0


def tree(files: int, size: int) -> dict:
    return _project(f"dask-{files}x{size // MiB}MiB", [_file(f"f{i}.bin", size, 90000 + i) for i in range(files)])


def filesystem_of(path: Path) -> str:
    """The type of the filesystem ``path`` is on (``ext4``, ``tmpfs``, ...), from ``/proc/mounts``."""
    best, kind = "", "unknown"
    path_text = str(path.resolve())
    try:
        with open("/proc/mounts") as mounts:
            for line in mounts:
                fields = line.split()
                point = fields[1]
                inside = path_text == point or path_text.startswith(point.rstrip("/") + "/")
                if inside and len(point) > len(best):
                    best, kind = point, fields[2]
    except OSError:
        pass
    return kind


def _driver_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)  # every thread of this process
    return usage.ru_utime + usage.ru_stime


def _cpu_of(pids: List[int]) -> float:
    """User + system CPU seconds of these processes so far; a process gone (a worker the nanny replaced) counts 0."""
    total = 0.0
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


class Cluster:
    """A LocalCluster of ``workers`` worker processes and its client, started once per condition."""

    def __init__(self, workers: int, local_directory: Path) -> None:
        import dask
        from distributed import Client, LocalCluster

        started = time.perf_counter()
        # as `synclient get --dask local:N` starts them: no sampling profiler before Python 3.12 (gh-116969)
        with dask.config.set({"distributed.worker.profile.enabled": sys.version_info >= (3, 12)}):
            self.cluster = LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=":0",
                local_directory=str(local_directory),
            )
        self.client = Client(self.cluster)
        self.client.wait_for_workers(workers)
        self.start_seconds = time.perf_counter() - started
        warm = time.perf_counter()
        where = self.client.run(_import_synclient)  # the task's modules, imported before any timed run
        self.warm_seconds = time.perf_counter() - warm
        import synclient

        if set(where.values()) != {synclient.__file__}:
            raise RuntimeError(
                f"the workers import synclient from {where}, not from {synclient.__file__} "
                "as this process does: set PYTHONPATH"
            )
        self.pids = sorted(self.client.run(os.getpid).values())

    def cpu(self) -> float:
        return _cpu_of(self.pids)

    def replaced(self) -> bool:
        """Whether a worker process was replaced since the last look (then its CPU is lost to the figures)."""
        pids = sorted(self.client.run(os.getpid).values())
        changed, self.pids = pids != self.pids, pids
        return changed

    def close(self) -> None:
        self.client.close()
        self.cluster.close()


def _import_synclient() -> str:
    import synclient
    import synclient.cluster.shard_run  # noqa: F401 - what a shard's task unpickles

    return synclient.__file__


def one_run(
    way: str,
    repeat: int,
    *,
    emu: EmulatorProcess,
    project: str,
    expected: dict,
    work: Path,
    cluster: Optional[Cluster],
    config,
) -> Dict[str, object]:
    from synclient import Platform, sync_from_platform

    target = work / f"{way}-{repeat}"
    shutil.rmtree(target, ignore_errors=True)
    with Platform(endpoint=emu.endpoint, token=emu.token, max_connections=config.max_workers) as platform:
        emu.reset_stats()
        cpu, workers_cpu, emu_cpu = _driver_cpu(), cluster.cpu() if cluster else 0.0, emu.cpu_seconds()
        started = time.perf_counter()
        results = sync_from_platform(
            project,
            str(target),
            platform=platform,
            config=config,
            progress=False,
            on_error="continue",
            synapse_cache=False,
            dask=cluster.client if cluster else None,
        )
        wall = time.perf_counter() - started
        cpu, emu_cpu = _driver_cpu() - cpu, emu.cpu_seconds() - emu_cpu
        workers_cpu = cluster.cpu() - workers_cpu if cluster else 0.0
    replaced = cluster.replaced() if cluster else False
    stats = emu.stats()
    status = verify(target, expected)
    shutil.rmtree(target, ignore_errors=True)
    report = results.report
    gb = report.bytes_downloaded / 1e9
    client_cpu = cpu + workers_cpu
    return {
        "way": way,
        "repeat": repeat,
        "status": status,
        "failures": len(results.failures),
        "wall": wall,
        "report_wall": report.wall_seconds,
        "bytes": report.bytes_downloaded,
        "mb_per_s": report.bytes_downloaded / 1e6 / wall,
        "driver_cpu": cpu,
        "workers_cpu": workers_cpu,
        "worker_replaced": replaced,
        "workers_cpu_reported": sum(w.cpu_seconds for w in report.workers),
        "client_cpu": client_cpu,
        "client_cpu_per_gb": client_cpu / gb if gb else None,
        "emulator_cpu": emu_cpu,
        "emulator_cpu_per_gb": emu_cpu / gb if gb else None,
        "rest_calls": report.rest_calls,
        "throttled": report.throttled,
        "emulator_rest_calls": int(stats.get("api_requests", 0)),
        "emulator_429": int(stats.get("throttled_429", 0)),
        "rest_by_route": {str(k): int(v) for k, v in sorted((stats.get("api_by_route") or {}).items())},
        "data_requests": int(stats.get("data_requests", 0)),
        "peak_data_connections": int(stats.get("peak_data_concurrency", 0)),
        "workers": [vars(w).copy() for w in report.workers],
        "load_average": os.getloadavg()[0],
    }


def run_condition(
    name: str,
    knobs: dict,
    *,
    data_dir: Path,
    project: str,
    expected: dict,
    repeats: int,
    warmups: int,
    work: Path,
    config,
    log,
) -> Dict[str, object]:
    runs: List[Dict[str, object]] = []
    warm: List[Dict[str, object]] = []
    clusters: Dict[str, Cluster] = {}
    with EmulatorProcess(data_dir, **knobs) as emu:
        try:
            for workers in (1, 2):
                clusters[f"dask-{workers}"] = Cluster(workers, work / f"dask-{workers}-space")
                log(f"{name}: LocalCluster({workers}) started in {clusters[f'dask-{workers}'].start_seconds:.2f} s")
            idle_cpu, idle_workers = _driver_cpu(), sum(c.cpu() for c in clusters.values())
            time.sleep(IDLE_SECONDS)
            idle = {
                "driver_cpu_per_s": (_driver_cpu() - idle_cpu) / IDLE_SECONDS,
                "workers_cpu_per_s": (sum(c.cpu() for c in clusters.values()) - idle_workers) / IDLE_SECONDS,
            }
            for number in range(warmups):  # the store into the page cache, the first writes: not counted
                warmup = one_run(
                    "single",
                    -1 - number,
                    emu=emu,
                    project=project,
                    expected=expected,
                    work=work,
                    cluster=None,
                    config=config,
                )
                warm.append({key: warmup[key] for key in ("wall", "driver_cpu", "emulator_cpu", "status")})
                log(f"{name}: warm-up run (not counted) {warmup['wall']:.2f} s {warmup['status']}")
            for repeat in range(repeats):
                order = WAYS[repeat % len(WAYS) :] + WAYS[: repeat % len(WAYS)]
                for way in order:
                    run = one_run(
                        way,
                        repeat,
                        emu=emu,
                        project=project,
                        expected=expected,
                        work=work,
                        cluster=clusters.get(way),
                        config=config,
                    )
                    runs.append(run)
                    replaced = "  (a worker was replaced)" if run["worker_replaced"] else ""
                    log(
                        f"{name} #{repeat} {way:7s} {run['wall']:7.2f} s {run['mb_per_s']:7.1f} MB/s  "
                        f"CPU driver {run['driver_cpu']:5.2f} workers {run['workers_cpu']:5.2f} "
                        f"emulator {run['emulator_cpu']:5.2f}  {run['rest_calls']} calls  {run['status']}  "
                        f"load {run['load_average']:.1f}{replaced}"
                    )
        finally:
            starts = {
                way: {
                    "workers": int(way[-1]),
                    "start_seconds": c.start_seconds,
                    "warm_seconds": c.warm_seconds,
                    "pids": c.pids,
                }
                for way, c in clusters.items()
            }
            for cluster in clusters.values():
                cluster.close()
    return {"knobs": knobs, "clusters": starts, "idle": idle, "warmups": warm, "runs": runs, "medians": medians(runs)}


def medians(runs: List[Dict[str, object]]) -> Dict[str, Dict[str, object]]:
    keys = (
        "wall",
        "mb_per_s",
        "driver_cpu",
        "workers_cpu",
        "workers_cpu_reported",
        "client_cpu",
        "client_cpu_per_gb",
        "emulator_cpu",
        "emulator_cpu_per_gb",
        "rest_calls",
        "emulator_rest_calls",
        "throttled",
        "peak_data_connections",
    )
    out = {}
    for way in WAYS:
        mine = [run for run in runs if run["way"] == way]
        if not mine:
            continue
        entry = {key: statistics.median(run[key] for run in mine if run[key] is not None) for key in keys}
        entry["runs"] = len(mine)
        entry["walls"] = [round(run["wall"], 3) for run in mine]
        entry["wall_min"], entry["wall_max"] = min(entry["walls"]), max(entry["walls"])
        entry["all_byte_exact"] = all(run["status"] == "byte-exact" and not run["failures"] for run in mine)
        out[way] = entry
    return out


def table(conditions: Dict[str, Dict[str, object]]) -> str:
    lines = [
        "| condition | way | median wall s (runs) | MB/s | driver CPU s | workers CPU s | client CPU s per GB "
        "| emulator CPU s | REST calls (emulator) | 429s |",
        "|---" * 10 + "|",
    ]
    for name, condition in conditions.items():
        for way, m in condition["medians"].items():
            walls = ", ".join(f"{w:.2f}" for w in m["walls"])
            lines.append(
                f"| {name} | {way} | {m['wall']:.2f} ({walls}) | {m['mb_per_s']:.0f} | {m['driver_cpu']:.2f} "
                f"| {m['workers_cpu']:.2f} | {m['client_cpu_per_gb']:.2f} | {m['emulator_cpu']:.2f} "
                f"| {m['rest_calls']:.0f} ({m['emulator_rest_calls']:.0f}) | {m['throttled']:.0f} |"
            )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.dask_scaling", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="8 files of 16 MiB, 1 repeat (a smoke test)")
    parser.add_argument("--repeats", type=int, help="runs of each way per condition (default 3; --quick 1)")
    parser.add_argument(
        "--warmups", type=int, help="uncounted single-process runs per condition first (default 1; --quick 0)"
    )
    parser.add_argument(
        "--out", help=f"write the JSON here (default {DEFAULT_OUT.relative_to(ROOT)}; --quick: only when given)"
    )
    parser.add_argument("--work", help="scratch directory for the targets (default: a new one in $TMPDIR)")
    args = parser.parse_args(argv)
    from synclient import TransferConfig

    os.environ["DASK_LOGGING__DISTRIBUTED"] = "warning"  # the worker processes: no INFO line per start and stop
    logging.getLogger("distributed").setLevel(logging.WARNING)  # the scheduler and nannies, in this process
    files, size = (8, 16 * MiB) if args.quick else (8, 256 * MiB)
    repeats = args.repeats or (1 if args.quick else 3)
    warmups = args.warmups if args.warmups is not None else (0 if args.quick else 1)
    out = Path(args.out) if args.out else (None if args.quick else DEFAULT_OUT)
    spec = tree(files, size)
    scenario = Scenario("dask", f"{files} x {size // MiB} MiB", spec, {}, ())
    data_dir, project = seeded_store(spec)
    expected = expected_for(scenario, data_dir)
    config = TransferConfig()
    meta = machine()
    import distributed

    meta["versions"]["distributed"] = distributed.__version__
    scratch = Path(args.work) if args.work else Path(tempfile.gettempdir())
    free = shutil.disk_usage(scratch).free
    if free < 2 * files * size:  # a target and its temporary files
        raise SystemExit(f"{scratch}: {free / 2**30:.1f} GiB free, need {2 * files * size / 2**30:.1f}")
    work = Path(tempfile.mkdtemp(prefix="synclient-dask-scaling-", dir=scratch))
    started = time.time()
    print(f"{files} x {size // MiB} MiB, {repeats} repeat(s); targets in {work} ({filesystem_of(work)})", flush=True)
    results: Dict[str, object] = {
        "issue": 19,
        "files": files,
        "file_size": size,
        "total_bytes": files * size,
        "repeats": repeats,
        "warmups": warmups,
        "quick": args.quick,
        "work_filesystem": filesystem_of(work),
        "transfer_config": vars(config).copy(),
        "ways": list(WAYS),
        "machine": meta,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "conditions": {},
    }
    try:
        for name, knobs in CONDITIONS.items():
            results["conditions"][name] = run_condition(
                name,
                knobs,
                data_dir=data_dir,
                project=project,
                expected=expected,
                repeats=repeats,
                warmups=warmups,
                work=work,
                config=config,
                log=lambda text: print(text, flush=True),
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results["seconds"] = time.time() - started
    results["load_average_at_end"] = os.getloadavg()
    print(table(results["conditions"]))
    if out is not None:
        out.write_text(json.dumps(results, indent=1, default=str) + "\n")
        print(f"wrote {out}")
    exact = all(m["all_byte_exact"] for c in results["conditions"].values() for m in c["medians"].values())
    return 0 if exact else 1


if __name__ == "__main__":
    raise SystemExit(main())
