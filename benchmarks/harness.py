"""Runs the contenders of a scenario against one seeded emulator, in alternation, and verifies every byte."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import threading
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from benchmarks.contenders import AUTO_CONTENDERS, launch, missing_tool
from benchmarks.emulator import seeded_store
from benchmarks.scenarios import Scenario
from synclient.emulator.process import EmulatorProcess

IGNORED_NAMES = {"SYNAPSE_METADATA_MANIFEST.tsv", "manifest.csv"}
#: synapseclient's `synapse get -q` leaves the query's CSV in the download folder (S8): not one of the files
IGNORED_PREFIXES = ("SYNAPSE_TABLE_QUERY_",)
#: synapseclient's `get-download-list` writes its result manifest as manifest_<ns>.csv in the folder (S10)
IGNORED_PREFIXES += ("manifest_",)
RUN_TIMEOUT = float(os.environ.get("SYNCLIENT_BENCH_TIMEOUT", "1800"))


@dataclass
class Run:
    contender: str
    repeat: int
    ok: bool = False
    status: str = ""  # "byte-exact", "skipped: ...", or what went wrong
    wall: float = 0.0  # timed region (library: the sync call; tools/CLI: the whole process)
    process_wall: float = 0.0
    cpu_seconds: float = 0.0  # user + system of the contender process
    peak_rss_mb: float = 0.0
    rest_calls: int = 0  # API requests the emulator answered during the timed region
    throttled_429: int = 0
    data_requests: int = 0
    data_bytes: int = 0
    peak_data_connections: int = 0  # most bodies the storage served at once to this contender
    paced_body_seconds: float = 0.0  # summed first-to-last-byte time of bandwidth-capped bodies
    files: int = 0
    bytes: int = 0
    client_report: Dict[str, object] = field(default_factory=dict)
    rest_by_route: Dict[str, int] = field(default_factory=dict)  # the emulator's API requests per route
    load_average: float = 0.0  # 1-minute load average when the run ended (the machine is shared)
    tls: bool = False  # issue 18: against an emulator serving HTTPS, the contender given its CA
    server_cpu_seconds: float = 0.0  # user + system of the emulator process over the contender's whole process
    connections: Dict[str, int] = field(default_factory=dict)  # connections the emulator accepted, per listener
    tls_handshakes: Dict[str, int] = field(default_factory=dict)  # of those, TLS handshakes completed, per listener
    tls_resumed: Dict[str, int] = field(default_factory=dict)  # of those, resumed TLS sessions, per listener
    #: issue 34, a `--view auto` run: what it left in the user's account (projects but the seeded one, entities in
    #: the trash can), read after the run; None: not checked (the contender makes no view)
    left_behind: Optional[List[str]] = None


def _md5(path: Path) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as handle:
        while True:
            block = handle.read(4 * 1024 * 1024)
            if not block:
                return digest.hexdigest()
            digest.update(block)


def verify(out: Path, expected: Dict[str, Tuple[int, str]]) -> str:
    """ "byte-exact" or the first difference (missing, extra, wrong size, wrong MD5)."""
    found = {}
    for here, dirs, names in os.walk(out):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in names:
            if (
                name in IGNORED_NAMES
                or name.startswith(".")
                or name.endswith(".aria2")
                or name.startswith(IGNORED_PREFIXES)
            ):
                continue
            full = Path(here) / name
            found[full.relative_to(out).as_posix()] = full
    missing = sorted(set(expected) - set(found))
    extra = sorted(set(found) - set(expected))
    if missing:
        return f"{len(missing)} file(s) missing, e.g. {missing[0]}"
    if extra:
        return f"{len(extra)} unexpected file(s), e.g. {extra[0]}"
    for rel, (size, md5) in sorted(expected.items()):
        path = found[rel]
        if path.stat().st_size != size:
            return f"{rel}: size {path.stat().st_size} != {size}"
        if _md5(path) != md5:
            return f"{rel}: MD5 differs"
    return "byte-exact"


def expected_for(scenario: Scenario, data_dir: Path) -> Dict[str, Tuple[int, str]]:
    # one store can serve several jobs (S8 queries the tree S9 syncs): the cached expectation is per job
    cached = data_dir / {
        "sync": "bench-expected.json",
        "ids": "bench-expected-flat.json",
        "cart": "bench-expected-flat.json",
    }.get(scenario.job, f"bench-expected-{scenario.job}-{scenario.where}.json")
    if cached.exists():
        return {k: tuple(v) for k, v in json.loads(cached.read_text()).items()}
    expected = scenario.expected()
    cached.write_text(json.dumps(expected))
    return expected


def file_ids(emu: EmulatorProcess, project: str, scenario: Scenario, data_dir: Path) -> List[str]:
    """Every file's entity id, in the spec's order, resolved through the emulator's admin route (not counted in its
    stats, outside any timed region); cached next to the seeded store."""
    cached = data_dir / "bench-ids.json"
    if cached.exists():
        return json.loads(cached.read_text())
    ids = [emu.resolve(project, rel) for rel, _size, _seed in scenario.files]
    cached.write_text(json.dumps(ids))
    return ids


def presigned_urls(emu: EmulatorProcess, project: str, scenario: Scenario) -> List[Tuple[str, str]]:
    """(relative path, URL) per file, got through the platform as a client would (outside any timed region)."""
    from synclient import Platform
    from synclient.platform.models import FileHandleRequest

    pairs = []
    with Platform(endpoint=emu.endpoint, token=emu.token, ca_bundle=emu.ca_bundle) as platform:
        requests_ = []
        for rel, _size, _seed in scenario.files:
            entity_id = emu.resolve(project, rel)
            handle = platform.get_file_bundle(entity_id).file_handle
            requests_.append((rel, FileHandleRequest(handle.id, entity_id)))
        for start in range(0, len(requests_), 100):
            batch = requests_[start : start + 100]
            answers = platform.get_presigned_urls([r for _, r in batch])
            pairs += [(rel, answers[r.file_handle_id].url) for rel, r in batch]
    return pairs


class _Popen(subprocess.Popen):
    """A Popen that keeps the rusage of its own child (``wait4``), so CPU and peak RSS are per contender."""

    def _try_wait(self, wait_flags):
        try:
            pid, status, rusage = os.wait4(self.pid, wait_flags)
        except ChildProcessError:
            return (self.pid, 0)
        if pid == self.pid:
            self._bench_rusage = rusage
        return (pid, status)


def vm_hwm_mb(pid: str = "self") -> float:
    """Peak RSS of the process's current image (VmHWM); unlike ru_maxrss it does not include the pages a forked
    child held before ``exec`` (a copy of the harness itself)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError):
        pass
    return 0.0


def spawn(argv: Sequence[str], env: Optional[Dict[str, str]] = None) -> Tuple[int, float, object, str, str, float]:
    """Run ``argv`` (``env`` set over the harness's environment); (exit code, wall, rusage, stdout, stderr, peak RSS
    MB polled every 10 ms from /proc)."""
    env = dict(
        os.environ,
        SYNCLIENT_DISABLE_PROGRESS="1",
        # every run is measured alone: no gate state from the run before (throttled scenarios restart the emulator,
        # whose window then holds none of those calls)
        SYNCLIENT_GATE_STATE="0",
        PYTHONPATH=str(Path(__file__).resolve().parent.parent) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        **(env or {}),
    )
    started = time.perf_counter()
    process = _Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    peak = [0.0]
    done = threading.Event()

    def poll() -> None:  # Popen returns after exec, so every reading is of the contender's own image
        while not done.wait(0.01):
            peak[0] = max(peak[0], vm_hwm_mb(str(process.pid)))

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    try:
        stdout, stderr = process.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
        stderr = "timeout\n" + stderr
    finally:
        done.set()
        poller.join()
    return (
        process.returncode,
        time.perf_counter() - started,
        getattr(process, "_bench_rusage", None),
        stdout,
        stderr,
        peak[0],
    )


class ScenarioRunner:
    def __init__(
        self,
        scenario: Scenario,
        work: Path,
        contenders: Sequence[str],
        config: Optional[Dict[str, object]] = None,
        log=print,
    ) -> None:
        self.scenario = scenario
        self.work = work / scenario.name
        self.contenders = list(contenders)
        self.config = config or {}
        self.log = log
        self.emu: Optional[EmulatorProcess] = None
        self.project = ""
        self.urls: List[Tuple[str, str]] = []
        self.ids_file: Optional[Path] = None
        self.view_id = ""
        self.prepared: set = set()
        self.cart_ids: List[str] = []  # S10: the files put in the download cart before every run

    def __enter__(self) -> ScenarioRunner:
        data_dir, self.project = seeded_store(self.scenario.spec)
        self.expected = expected_for(self.scenario, data_dir)
        self.emu = EmulatorProcess(data_dir, tls=self.scenario.tls, **self.scenario.knobs).start()
        if any(c in ("aria2c", "curl") for c in self.contenders):
            self.urls = presigned_urls(self.emu, self.project, self.scenario)
        shutil.rmtree(self.work, ignore_errors=True)
        self.work.mkdir(parents=True)
        if self.scenario.view:  # the file view's id (admin route, not counted, before any timed run)
            self.view_id = self.emu.resolve(self.project, self.scenario.view)
        if self.scenario.job == "ids":
            self.ids_file = self.work / "ids.txt"
            self.ids_file.write_text(
                "".join(i + "\n" for i in file_ids(self.emu, self.project, self.scenario, data_dir))
            )
        if self.scenario.job == "cart":
            self.cart_ids = file_ids(self.emu, self.project, self.scenario, data_dir)
        return self

    def __exit__(self, *exc) -> None:
        if self.emu is not None:
            self.emu.stop()
        shutil.rmtree(self.work, ignore_errors=True)

    def _dirs(self, contender: str) -> Tuple[Path, Path]:
        family = (
            "synapseclient"
            if contender == "synapseclient"
            else ("tools" if contender in ("aria2c", "curl") else "synclient")
        )
        if self.scenario.resync:  # one mirror per client family, synced once (unmeasured), re-synced per run
            return self.work / f"mirror-{family}", self.work / f"cache-{family}"
        return self.work / f"out-{contender}", self.work / f"cache-{contender}"

    def _launch(self, contender: str, out: Path, cache: Path):
        return launch(
            contender,
            endpoint=self.emu.endpoint,
            token=self.emu.token,
            entity=self.project,
            out=out,
            cache_dir=cache,
            urls=self.urls,
            config=self.config,
            ids_file=self.ids_file,
            view_id=self.view_id,
            where=self.scenario.where if self.scenario.job == "query" else "",
            ca_bundle=self.emu.ca_bundle,
            cart=self.scenario.job == "cart",
        )

    def _cart_request(self, method: str, path: str, body: Optional[dict] = None) -> dict:
        import requests

        answer = requests.request(
            method,
            self.emu.endpoint + "/repo/v1/download/list" + path,
            json=body,
            headers={"Authorization": f"Bearer {self.emu.token}"},
            verify=self.emu.ca_bundle or True,
            timeout=120,
        )
        answer.raise_for_status()
        return answer.json() if answer.content else {}

    def _fill_cart(self) -> None:
        """S10, before each run (not timed): the cart emptied, then every file added without a version."""
        self._cart_request("DELETE", "")
        for start in range(0, len(self.cart_ids), 1000):
            batch = [{"fileEntityId": entity_id} for entity_id in self.cart_ids[start : start + 1000]]
            self._cart_request("POST", "/add", {"batchToAdd": batch})

    def _cart_left(self) -> int:
        """S10, after a run (not timed): the files still in the cart (a run that succeeded empties it)."""
        from synclient import Platform

        with Platform(endpoint=self.emu.endpoint, token=self.emu.token, ca_bundle=self.emu.ca_bundle) as platform:
            return len(platform.download_list_available())

    def _left_behind(self) -> List[str]:
        """Issue 34, after a `--view auto` run (not timed): every project but the seeded one, and everything in the
        trash can (the temporary view and synclient's scratch project must be gone, deleted for good)."""
        projects = self.emu.info().get("projects") or {}
        left = [f"project {name} ({entity_id})" for name, entity_id in projects.items() if entity_id != self.project]
        left += [f"in the trash: {item.get('kind')} {item.get('name')} ({item.get('id')})" for item in self.emu.trash()]
        return left

    def _prepare_resync(self, contender: str, out: Path, cache: Path) -> Optional[str]:
        setup = "synapseclient" if contender == "synapseclient" else "synclient"
        if out in self.prepared:
            return None
        self.log(f"  {self.scenario.name}: first sync for the {setup} mirror (unmeasured)")
        if self.scenario.setup_knobs:
            self.emu.set_knobs(**self.scenario.setup_knobs)
        try:
            plan = self._launch(setup, out, cache)
            code, wall, _usage, _out, err, _rss = spawn(plan.argv, plan.env)
        finally:
            if self.scenario.setup_knobs:
                self.emu.set_knobs(**{k: self.scenario.knobs[k] for k in self.scenario.setup_knobs})
        self.log(f"    first sync took {wall:.1f} s")
        if code != 0:
            return f"first sync failed (exit {code}): {err.strip()[-300:]}"
        self.prepared.add(out)
        return None

    def run(self, contender: str, repeat: int) -> Run:
        result = Run(
            contender,
            repeat,
            files=len(self.expected),
            bytes=sum(s for s, _ in self.expected.values()),
            tls=self.scenario.tls,
        )
        skipped = missing_tool(contender)
        if skipped:
            result.status = skipped
            return result
        out, cache = self._dirs(contender)
        if self.scenario.resync:
            problem = self._prepare_resync(contender, out, cache)
            if problem:
                result.status = problem
                return result
        else:
            shutil.rmtree(out, ignore_errors=True)
            shutil.rmtree(cache, ignore_errors=True)
        if self.scenario.fresh_server_per_run:
            self.emu.restart()  # Synapse's 600-per-minute window must not carry over from the previous contender
        if self.scenario.job == "cart":
            self._fill_cart()
        plan = self._launch(contender, out, cache)
        # Start every contender with no dirty pages of an earlier run still being written back (hygiene, as
        # hyperfine's --prepare sync): no run shares the disk with its predecessor's writeback.
        os.sync()
        self.emu.reset_stats()
        server_cpu = self.emu.cpu_seconds()
        code, process_wall, usage, stdout, stderr, polled_rss = spawn(plan.argv, plan.env)
        result.server_cpu_seconds = self.emu.cpu_seconds() - server_cpu
        stats = self.emu.stats()
        result.load_average = os.getloadavg()[0]
        result.process_wall = process_wall
        result.wall = process_wall
        result.peak_rss_mb = polled_rss
        if usage is not None:
            result.cpu_seconds = usage.ru_utime + usage.ru_stime
        if plan.kind == "worker" and code == 0:
            try:
                answer = json.loads(stdout.strip().splitlines()[-1])
                result.wall = answer["wall"]
                stats = answer["stats"]
                result.client_report = answer.get("client", {})
                result.peak_rss_mb = max(polled_rss, answer.get("peak_rss_mb", 0.0))
            except (ValueError, IndexError, KeyError):
                result.status = f"unreadable worker output: {stdout[-200:]!r}"
                return result
        result.rest_calls = int(stats.get("api_requests", 0))
        result.rest_by_route = {str(k): int(v) for k, v in sorted(stats.get("api_by_route", {}).items())}
        result.throttled_429 = int(stats.get("throttled_429", 0))
        result.data_requests = int(stats.get("data_requests", 0))
        result.data_bytes = int(stats.get("data_bytes", 0))
        result.peak_data_connections = int(stats.get("peak_data_concurrency", 0))
        result.paced_body_seconds = float(stats.get("paced_body_seconds", 0.0))
        for name in ("connections", "tls_handshakes", "tls_resumed"):
            setattr(result, name, {str(k): int(v) for k, v in sorted((stats.get(name) or {}).items())})
        if code != 0:
            result.status = f"exit {code}: {stderr.strip()[-400:]}"
        else:
            result.status = verify(out, self.expected)
            if result.status == "byte-exact" and self.scenario.job == "cart":
                left = self._cart_left()  # a run that succeeded also emptied the cart
                result.status = result.status if not left else f"byte-exact, but {left} file(s) left in the cart"
            result.ok = result.status == "byte-exact"
        if contender in AUTO_CONTENDERS:  # any run, failed or not, must remove its view (and scratch project)
            result.left_behind = self._left_behind()
            if result.left_behind and result.ok:
                result.ok, result.status = False, f"byte-exact, but left behind: {'; '.join(result.left_behind)}"
        if not self.scenario.resync:
            shutil.rmtree(out, ignore_errors=True)
            shutil.rmtree(cache, ignore_errors=True)
        return result


def run_scenario(
    scenario: Scenario,
    work: Path,
    contenders: Sequence[str],
    repeat: int,
    config: Optional[Dict[str, object]] = None,
    log=print,
    max_slow_repeats: Optional[float] = 60.0,
) -> List[Run]:
    """Every contender ``repeat`` times, in alternation (the starting contender rotates each round).

    A contender whose first run took longer than ``max_slow_repeats`` seconds runs only once (the serial
    baselines on multi-GiB rows); that is recorded in the results as its number of runs.
    """
    return run_side_by_side([scenario], work, contenders, repeat, config, log, max_slow_repeats)[scenario.name]


def _rotated(items: Sequence, by: int) -> list:
    return list(items[by % len(items) :]) + list(items[: by % len(items)])


def run_side_by_side(
    scenarios: Sequence[Scenario],
    work: Path,
    contenders: Sequence[str],
    repeat: int,
    config: Optional[Dict[str, object]] = None,
    log=print,
    max_slow_repeats: Optional[float] = 60.0,
) -> Dict[str, List[Run]]:
    """Variants of one scenario (issue 18: plain and over HTTPS), each on its own emulator, all up at once, run
    interleaved: in each round every contender runs in every variant before the next contender starts; the starting
    contender and the starting variant rotate each round, so both variants see the same machine state. As in
    :func:`run_scenario`, a (variant, contender) whose first run is slower than ``max_slow_repeats`` runs once."""
    runs: Dict[str, List[Run]] = {scenario.name: [] for scenario in scenarios}
    slow: set = set()
    with ExitStack() as stack:
        runners = [
            stack.enter_context(ScenarioRunner(scenario, work, contenders, config, log)) for scenario in scenarios
        ]
        for r in range(repeat):
            variants = _rotated(runners, r)
            for contender in _rotated(contenders, r):
                for runner in variants:
                    name = runner.scenario.name
                    if (name, contender) in slow:
                        continue
                    result = runner.run(contender, r)
                    runs[name].append(result)
                    log(
                        f"  {name} #{r + 1} {contender:14s} {result.wall:8.2f} s  calls={result.rest_calls:<6d}"
                        f" 429={result.throttled_429:<5d} rss={result.peak_rss_mb:6.0f} MB"
                        f" cpu={result.cpu_seconds:6.2f} s server={result.server_cpu_seconds:6.2f} s"
                        + (f" handshakes={result.tls_handshakes}" if result.tls else "")
                        + f"  {result.status}"
                    )
                    if not result.ok or (max_slow_repeats is not None and result.wall > max_slow_repeats):
                        slow.add((name, contender))
    return runs


def as_dicts(runs: Sequence[Run]) -> List[dict]:
    return [asdict(r) for r in runs]
