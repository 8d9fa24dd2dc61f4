"""Where S8's and S9's time goes (issue 17), outside the harness: ``python -m benchmarks.probe_views [--quick]``.

On S8's and S9's store and knobs, each measurement on a fresh emulator (S9: a fresh 60 s window):
- S8: reading the query alone (``Platform.query_table``), then the whole ``download_query``;
- S9: reading the view alone (``SELECT *``, every page), then ``sync_from_platform(view=...)`` with an observer
  that notes when the first and last file was planned and finished.
The emulator's CPU is read from ``/proc/<pid>/stat``, the client's (this process) from ``getrusage``. Prints one
JSON line per measurement.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
import time

from benchmarks.emulator import seeded_store
from benchmarks.scenarios import build
from synclient.emulator.process import EmulatorProcess


def _client_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _measure(emu: EmulatorProcess, call) -> dict:
    emu_cpu, cpu, started = emu.cpu_seconds(), _client_cpu(), time.perf_counter()
    answer = call()
    return {
        "wall_s": round(time.perf_counter() - started, 3),
        "client_cpu_s": round(_client_cpu() - cpu, 2),
        "emulator_cpu_s": round(emu.cpu_seconds() - emu_cpu, 2),
        **answer,
    }


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.probe_views")
    parser.add_argument("--quick", action="store_true", help="the quick sizes (200 files)")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    scenarios = build(quick=args.quick)
    for name in ("S8", "S9"):
        scenario = scenarios[name]
        data_dir, project = seeded_store(scenario.spec)
        with EmulatorProcess(data_dir, **scenario.knobs) as emu:
            view = emu.resolve(project, scenario.view)
            sql = f"SELECT * FROM {view}" + (f" WHERE {scenario.where}" if scenario.where else "")
            for repeat in range(args.repeat):
                _probe_once(emu, name=name, scenario=scenario, project=project, view=view, sql=sql, repeat=repeat)
    return 0


def _probe_once(emu: EmulatorProcess, *, name: str, scenario, project: str, view: str, sql: str, repeat: int) -> None:
    """One repeat of one scenario: the query or view read alone, then the whole download, each on a fresh
    emulator."""
    from synclient import Platform, download_query, sync_from_platform
    from synclient.events import SyncObserver

    emu.restart()
    with Platform(endpoint=emu.endpoint, token=emu.token) as platform:
        figures = _measure(emu, lambda: {"rows": sum(len(page.rows) for page in platform.query_table(view, sql))})
    print(json.dumps({"scenario": name, "repeat": repeat, "what": f"query alone: {sql}", **figures}), flush=True)
    emu.restart()
    out = tempfile.mkdtemp(prefix="synclient-probe-")
    times: dict = {}
    started = [0.0]

    class Timeline(SyncObserver):
        def _note(self, event: str) -> None:
            at = round(time.perf_counter() - started[0], 2)
            times.setdefault(event, [at, at])[1] = at

        def file_planned(self, file) -> None:
            self._note("planned")

        def file_finished(self, result) -> None:
            self._note("finished")

    def run() -> dict:
        started[0] = time.perf_counter()
        with Platform(endpoint=emu.endpoint, token=emu.token) as platform:
            common = dict(
                platform=platform, on_error="continue", synapse_cache=False, progress=False, observer=Timeline()
            )
            if scenario.job == "query":
                results = download_query(sql, out, **common)
            else:
                results = sync_from_platform(project, out, view=view, **common)
        return {"files": results.report.downloaded, "rest_calls": results.report.rest_calls, "first_last_s": times}

    try:
        figures = _measure(emu, run)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    what = "download_query" if scenario.job == "query" else "sync_from_platform(view=...)"
    print(json.dumps({"scenario": name, "repeat": repeat, "what": what, **figures}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
