"""Issue 19: the same sync sharded over a Dask cluster (a LocalCluster of 2 worker processes, against the emulator).

The driver (this process) walks, decides and indexes; the workers fetch shards into the shared target. Checked:
byte-exact on the mixed tree, a re-sync (sharded or local) that is a no-op with listing calls only, nothing written
outside the target (a symlinked folder is not followed), a worker SIGKILLed mid-shard (the run still completes,
byte-exact, resuming from what is on disk), and Synapse's limits under ``--profile synapse`` shared by every
process of the run (under 1% 429s).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")
import dask  # noqa: E402 (installed with distributed)
from synctrees import MiB, Tree, assert_tree_matches, local_tree, mixed_tree, seeded_md5  # noqa: E402

from benchmarks.emulator import seeded_store  # noqa: E402
from synclient import Platform, SyncStatus, TransferConfig, sync_from_platform  # noqa: E402
from synclient.cluster.budget import ClusterBudget  # noqa: E402
from synclient.cluster.connect import dask_client as dask_client_for  # noqa: E402
from synclient.cluster.driver import DaskSettings  # noqa: E402
from synclient.cluster.shard_run import PlatformAccess, ShardTask, run_shard  # noqa: E402
from synclient.cluster.shards import Shard, ShardSizes  # noqa: E402
from synclient.emulator.process import EmulatorProcess  # noqa: E402
from synclient.errors import AuthenticationError, ErrorNature, SynclientError  # noqa: E402
from synclient.platform.credentials import Endpoints  # noqa: E402
from synclient.transfer.jobs import FetchJob, LocalState  # noqa: E402
from synclient.transfer.partial import journal_path, temp_path  # noqa: E402

pytestmark = pytest.mark.slow
#: multipart on the workers at test sizes
CONFIG = TransferConfig(max_workers=4, multipart_threshold=2 * MiB, part_size=1 * MiB)


@pytest.fixture(scope="module")
def dask_client():
    """Two worker processes (one thread each: a shard runs its own pool), started as ``--dask local:2`` starts them."""
    with dask_client_for("local:2") as client:
        yield client


def _settings(client, **sizes) -> DaskSettings:
    return DaskSettings(client, shard_sizes=ShardSizes(**sizes) if sizes else ShardSizes())


def _sync(emu, project, target, client, **kwargs):
    with Platform(endpoint=emu.endpoint, token=emu.token) as platform:
        return sync_from_platform(
            project, str(target), platform=platform, config=kwargs.pop("config", CONFIG), progress=False, **kwargs
        )


def test_a_mixed_tree_is_byte_exact_and_a_second_run_only_lists(emulator, dask_client, tmp_path):
    tree = mixed_tree()  # the suite's mixed tree at full size: 3 levels, 501 files, one 64 MiB file of odd size
    project = emulator.seed_spec(tree.spec())["p"]
    outside = tmp_path / "outside"
    outside.mkdir()
    target = tmp_path / "target"
    target.mkdir()
    (target / "top3").symlink_to(outside, target_is_directory=True)  # adversary: a folder of the tree, elsewhere
    results = _sync(emulator, project, target, dask_client, dask=_settings(dask_client, files=40), on_error="continue")
    failed = {r.path.relative_to(target).as_posix() if r.path else r.entity_id for r in results.failures}
    assert failed == {"top3"}, failed  # the symlinked folder is refused, nothing written through it
    assert list(outside.iterdir()) == []
    expected = {path: md5 for path, md5 in tree.expected.items() if not path.startswith("top3/")}
    assert_tree_matches(target, expected)  # (the symlink is no file of it)
    report = results.report
    assert report.downloaded == len(expected) and report.workers
    assert sum(counts.files for counts in report.workers) == len(expected)  # every file came from a worker
    assert sum(counts.bytes for counts in report.workers) == report.bytes_downloaded
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outside", "target"]  # nothing else written here
    print("workers:", [(c.worker, c.shards, c.files, c.bytes) for c in report.workers])

    # the same run again, sharded: nothing to fetch, no shard, listings only
    before = emulator.stats()
    again = _sync(emulator, project, target, dask_client, dask=dask_client, on_error="continue")
    calls = emulator.stats()["api_requests"] - before["api_requests"]
    assert [r.status for r in again].count(SyncStatus.SKIPPED) == len(expected) and len(again.failures) == 1
    # the root's header, then every listing page but top3's and its three folders' (not entered): no bundle, no URL
    assert not again.report.workers and calls == 1 + tree.listing_pages() - 4, calls
    # and a local run of the same target agrees: the index the driver wrote is the index a local sync keeps
    local = _sync(emulator, project, target, None, on_error="continue")
    assert [r.status for r in local].count(SyncStatus.SKIPPED) == len(expected) and len(local.failures) == 1


def test_a_worker_killed_mid_shard_does_not_lose_the_run(emulator_factory, dask_client, tmp_path):
    """SIGKILL of a worker processing a shard while its large file streams: Dask reschedules the shard, which
    resumes the file from the parts its journal records; the run completes byte-exact and leaves no partial file."""
    tree = Tree()
    for name in ("a.bin", "b.bin"):  # one per shard: both workers stream a large file when one is killed
        tree.seeded_file(tree.children, "", name, 12 * MiB + 7)
    small = tree.folder(tree.children, "small")
    for number in range(3):
        tree.text_file(small, "small/", f"s{number}.txt", f"small {number}\n")
    total = 2 * (12 * MiB + 7) + sum(len(f"small {n}\n") for n in range(3))
    part = 1 * MiB
    emu = emulator_factory(bandwidth_per_conn=1_000_000)  # 2 streams: a large file takes ~6 s, long enough to catch
    project = emu.seed_spec(tree.spec())["p"]
    target = tmp_path / "target"
    outcome = {}

    def run():
        outcome["results"] = _sync(
            emu,
            project,
            target,
            dask_client,
            dask=_settings(dask_client, files=1000),
            config=replace(CONFIG, streams_per_file=2, part_size=part),
            on_error="continue",
        )

    sync = threading.Thread(target=run)
    sync.start()
    killed = _kill_a_busy_worker(dask_client, emu, after_bytes=10 * MiB)  # ~5 MiB of each file, most parts done
    sync.join(180)
    assert not sync.is_alive()
    results = outcome["results"]
    assert killed, "no worker was processing a shard once 10 MiB were served"
    assert not results.failures, [str(r.error) for r in results.failures]
    assert_tree_matches(target, tree.expected)  # (a partial left anywhere would be an extra file)
    served = emu.stats()["data_bytes"]
    print(
        f"killed {killed}; served {served} bytes for {total}; workers: "
        f"{[(c.worker, c.shards, c.files) for c in results.report.workers]}"
    )
    # resumed, not started over: what the killed worker fetched again is at most its parts in flight (2 streams);
    # started over, it would be the ~5 MiB it had
    assert served <= total + 2 * part + 64 * 1024, served


def _kill_a_busy_worker(client, emu, *, after_bytes: int):
    """Once the emulator served ``after_bytes`` data bytes, SIGKILL the worker process running a shard (waits on
    the emulator's count and the scheduler's state, at most 60 s)."""
    deadline = time.monotonic() + 60
    while emu.stats()["data_bytes"] < after_bytes and time.monotonic() < deadline:
        time.sleep(0.02)
    while time.monotonic() < deadline:
        busy = [
            address
            for address, keys in client.processing().items()
            if any(str(key).startswith("synclient-shard-") for key in keys)
        ]
        if busy:
            pid = client.run(os.getpid, workers=[busy[0]])[busy[0]]
            os.kill(pid, signal.SIGKILL)
            return busy[0]
        time.sleep(0.02)
    return None


def test_synapse_limits_are_shared_by_every_process_of_the_run(dask_client, tmp_path):
    """1,500 files under Synapse's limits (3 concurrent, 600 per window; the window 6 s instead of 60 so the run
    takes seconds): the driver's bundle calls and the workers' URL batches (10 handles each here, so the workers
    call often) all run at once, and every process passes the one cluster budget: under 1% answered 429."""
    spec = {
        "projects": [
            {
                "name": "w",
                "children": [
                    {
                        "type": "folder",
                        "name": f"d{f:02d}",
                        "children": [
                            {"type": "file", "name": f"f{i:03d}.bin", "size": 512, "seed": 5000 + f * 100 + i}
                            for i in range(100)
                        ],
                    }
                    for f in range(15)
                ],
            }
        ]
    }
    data_dir, project = seeded_store(spec)
    knobs = {
        "profile": "synapse",
        "rate_window_seconds": 6,
        "api_latency_ms": 5,
        "api_latency_jitter_ms": 2,
        "data_latency_ms": 2,
    }
    config = TransferConfig(max_workers=4, url_batch_size=10)
    budget = ClusterBudget.for_run(window_seconds=6)
    with EmulatorProcess(data_dir, **knobs) as emu:
        with Platform(endpoint=emu.endpoint, token=emu.token) as platform:
            results = sync_from_platform(
                project,
                str(tmp_path / "out"),
                platform=platform,
                config=config,
                progress=False,
                dask=DaskSettings(dask_client, budget=budget, shard_sizes=ShardSizes(files=100)),
            )
        stats = emu.stats()
    report = results.report
    print(
        f"{stats['api_requests']} calls, {stats['throttled_429']} answered 429, {report.wall_seconds:.1f} s; "
        f"workers: {[(c.worker, c.shards, c.rest_calls, c.throttled) for c in report.workers]}"
    )
    assert not results.failures and report.downloaded == 1500
    assert stats["api_requests"] > 2.5 * 600  # the run needs more than two full windows: the limit is reached
    assert sum(c.rest_calls for c in report.workers) >= 150  # the workers' URL batches: 1,500 handles / 10
    assert stats["throttled_429"] < 0.01 * stats["api_requests"], stats
    assert report.throttled == stats["throttled_429"]  # the report counts every process's 429s


def test_the_cli_runs_a_sync_on_a_local_cluster(emulator, tmp_path):
    tree = mixed_tree(tiny_per_leaf=2, mib_files=2, big_size=3 * MiB)
    project = emulator.seed_spec(tree.spec())["p"]
    target = tmp_path / "cli"
    env = {**os.environ, "SYNCLIENT_ENDPOINT": emulator.endpoint, "SYNCLIENT_AUTH_TOKEN": emulator.token}
    done = subprocess.run(
        [sys.executable, "-m", "synclient", "--json", "get", "-r", project, "--path", str(target), "--dask", "local:2"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    document = json.loads(done.stdout)
    workers = document["report"]["workers"]
    assert workers and sum(w["files"] for w in workers) == tree.file_count
    assert local_tree(target) == tree.expected


def test_other_sources_run_on_the_cluster_too_and_a_lagging_view_falls_back_to_the_bundle(dask_client, tmp_path):
    """download_many and download_query take dask= as sync_from_platform does; a file view's row whose handle was
    replaced in place (the URL batch on the worker refuses it) gets its bundle on the driver and is fetched on
    the cluster again, as in a local run (test_view_planned_sync.py)."""
    from test_view_planned_sync import SPEC, bundle_calls

    from synclient import download_many, download_query
    from synclient.emulator import Emulator

    with Emulator(data_dir=str(tmp_path / "emu")) as emu:
        project = emu.seed_spec(SPEC)["p"]
        at = lambda path: emu.resolve(project, path)  # noqa: E731
        emu.set_knobs(view_lag=True)
        emu.refresh_views()
        emu.replace_file_handle(at("A/a1.txt"))  # same bytes, same version, another handle
        emu.reset_stats()
        with Platform(emu.endpoint, token=emu.token) as platform:
            viewed = sync_from_platform(
                project,
                tmp_path / "v",
                platform=platform,
                view=at("files"),
                synapse_cache=False,
                progress=False,
                dask=dask_client,
            )
            assert not viewed.failures and bundle_calls(emu) == 1  # the one refused by the worker's URL batch
            assert (tmp_path / "v" / "A" / "a1.txt").read_text() == "a1\n" and viewed.report.workers
            listed = download_many(
                [at("A/a2.txt"), at("B/b1.txt")],
                tmp_path / "ids",
                platform=platform,
                synapse_cache=False,
                progress=False,
                dask=dask_client,
            )
            picked = download_query(
                f"SELECT * FROM {at('files')} WHERE name = 'top.csv'",
                tmp_path / "q",
                platform=platform,
                synapse_cache=False,
                progress=False,
                dask=dask_client,
            )
    assert sorted(p.name for p in (tmp_path / "ids").iterdir() if p.is_file()) == ["a2.txt", "b1.txt"]
    assert sum(c.files for c in listed.report.workers) == 2 and not listed.failures
    assert (tmp_path / "q" / "top.csv").read_text() == "x,y\n" and sum(c.files for c in picked.report.workers) == 1


# -- a shard Dask no longer wants stops ------------------------------------------------------------------------------

STOP_DEADLINE_SECONDS = 60.0  # only reached when a released shard goes on (it would need minutes at the crawl)


def _one_file_shard(emu, tmp_path, size: int, config: TransferConfig) -> ShardTask:
    project = emu.seed_spec(
        {"projects": [{"name": "p", "children": [{"type": "file", "name": "big.bin", "size": size, "seed": 19}]}]}
    )["p"]
    with Platform(endpoint=emu.endpoint, token=emu.token) as platform:
        entity = emu.resolve(project, "big.bin")
        handle = platform.get_file_bundle(entity).file_handle
        access = PlatformAccess.of(platform)
    target = tmp_path / "target"
    target.mkdir()
    destination = target / "big.bin"
    file = FetchJob(entity, 1, handle, destination, LocalState.of(destination))
    return ShardTask(Shard(0, (file,)), access, config)


def _wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + STOP_DEADLINE_SECONDS
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)  # polling a state, not waiting for time to pass


def test_a_released_shard_stops_and_its_next_try_resumes_from_its_parts(emulator_factory, tmp_path):
    """Released (its future cancelled, its driver gone): the shard stops at its next chunk, nothing at the final
    path, its journal kept; the next try fetches only the parts not journaled and installs the file verified."""
    part = 1 * MiB
    emu = emulator_factory(bandwidth_per_conn=400_000)
    task = _one_file_shard(
        emu,
        tmp_path,
        3 * part + 5,
        TransferConfig(max_workers=2, multipart_threshold=2 * MiB, part_size=part, streams_per_file=1),
    )
    file = task.shard.files[0]
    journal = journal_path(temp_path(Path(file.destination), file.handle.id))
    released, outcome = threading.Event(), {}
    first = threading.Thread(target=lambda: outcome.update(first=run_shard(task, released=released.is_set)))
    first.start()
    _wait_for(lambda: journal.exists() and len(journal.read_text().splitlines()) >= 2, "no part was journaled")
    released.set()
    first.join(STOP_DEADLINE_SECONDS)
    assert not first.is_alive(), "the released shard went on"
    assert outcome["first"].files == () and not os.path.lexists(file.destination)  # stopped, nothing installed
    emu.set_knobs(bandwidth_per_conn=0)
    emu.reset_stats()
    again = run_shard(task)
    assert [fetched.error for fetched in again.files] == [None]
    assert hashlib.md5(Path(file.destination).read_bytes()).hexdigest() == file.handle.content_md5
    assert emu.stats()["data_bytes"] <= 2 * part + 5  # at least one part came from the first try


def _running_shards(dask_worker):
    tasks = dask_worker.state.executing | dask_worker.state.long_running  # cancelled ones still running too
    return sorted(str(task.key) for task in tasks if str(task.key).startswith("synclient-shard-"))


def test_a_shard_whose_future_is_cancelled_stops_on_its_worker(dask_client, emulator_factory, tmp_path):
    """Dask cannot interrupt a running task: after Ctrl-C or a fatal error on the driver (which cancel the run's
    futures) or the driver's death, the shard must stop by itself rather than write into the target for minutes."""
    emu = emulator_factory(bandwidth_per_conn=8_000)  # the file would take minutes
    # the cancel event is looked at between chunks: small ones, so a chunk takes a moment at this crawl
    config = TransferConfig(max_workers=4, multipart_threshold=2 * MiB, part_size=1 * MiB, chunk_size=4096)
    task = _one_file_shard(emu, tmp_path, 2 * MiB + 1, config)
    future = dask_client.submit(run_shard, task, key=f"synclient-shard-test-{uuid.uuid4().hex}", pure=False)
    _wait_for(lambda: emu.stats()["data_bytes"] > 0, "the shard never started")
    future.cancel()
    _wait_for(lambda: not any(dask_client.run(_running_shards).values()), "the cancelled shard still runs")
    assert not os.path.lexists(task.shard.files[0].destination)


def test_a_failing_shard_leaves_no_token_in_dasks_logs_or_its_error(dask_client, tmp_path):
    """Dask logs a failed task ("Compute Failed"; older versions of Dask with the task's arguments, which
    carry the token, up to 1,000 characters of their repr) and sends its error and traceback back: the token is in
    none of them (the repr of a task is checked on its own in tests/unit/test_dask_driver.py)."""
    token = f"secret-{uuid.uuid4().hex}"
    access = PlatformAccess(Endpoints.from_root("http://127.0.0.1:1"), token, None)
    broken = ShardTask(Shard(0, None), access, CONFIG)  # fails in the task: its files cannot be listed
    future = dask_client.submit(run_shard, broken, key=f"synclient-shard-test-{uuid.uuid4().hex}", pure=False)
    with pytest.raises(TypeError) as info:
        future.result()
    assert token not in str(info.value)
    logs = [message for worker in dask_client.get_worker_logs().values() for _, message in worker]
    logs += [message for _, message in dask_client.get_scheduler_logs()]
    assert any("Compute Failed" in message and future.key in message for message in logs)  # it was logged
    assert not [message for message in logs if token in message]


def test_a_scheduler_lost_mid_run_stops_it_once_and_the_next_run_resumes(emulator_factory, tmp_path):
    """The scheduler goes away while shards run: the run stops with one fatal error (not one failure per file, not
    a hang), nothing unverified is left at a final path, and the next run (here a local one) completes it."""
    emu = emulator_factory(bandwidth_per_conn=100_000)
    spec = {
        "projects": [
            {
                "name": "p",
                "children": [{"type": "file", "name": f"f{i}.bin", "size": 300_000, "seed": 70 + i} for i in range(6)],
            }
        ]
    }
    project = emu.seed_spec(spec)["p"]
    target, outcome = tmp_path / "target", {}
    # (Dask's connect timeout bounds how long it tries to reach the lost scheduler again: 30 s by default)
    with (
        dask.config.set({"distributed.comm.timeouts.connect": "5s"}),
        distributed.LocalCluster(
            n_workers=1,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            local_directory=str(tmp_path / "scratch"),
        ) as cluster,
        distributed.Client(cluster, set_as_default=False) as client,
    ):

        def run():
            try:
                outcome["results"] = _sync(
                    emu,
                    project,
                    target,
                    client,
                    on_error="continue",
                    dask=DaskSettings(client, shard_sizes=ShardSizes(files=2)),
                )
            except Exception as exc:  # noqa: BLE001 - what the run raised is the finding
                outcome["raised"] = exc

        sync = threading.Thread(target=run)
        sync.start()
        _wait_for(lambda: emu.stats()["data_bytes"] > 0, "no shard started")
        cluster.sync(cluster.scheduler.close)
        sync.join(180)
        assert not sync.is_alive(), "the run waits for a scheduler that is gone"
    error = outcome.get("raised")
    assert isinstance(error, SynclientError) and error.nature is ErrorNature.FATAL, outcome
    assert "scheduler" in str(error) and "\n" not in str(error)
    expected = {f"f{i}.bin": seeded_md5(300_000, 70 + i) for i in range(6)}
    assert all(expected[name] == md5 for name, md5 in local_tree(target).items())  # what is there is right
    emu.set_knobs(bandwidth_per_conn=0)
    again = _sync(emu, project, target, None)
    assert not again.failures and local_tree(target) == expected


def test_ctrl_c_on_the_driver_stops_its_shards_and_the_next_run_resumes(dask_client, emulator_factory, tmp_path):
    """Ctrl-C on a CLI run over a running cluster: exit 130 in one line, the run's shards stop on the workers (the
    data plane crawls from then on: a shard that went on would need minutes), nothing unverified at a final path,
    and the next run completes the target."""
    emu = emulator_factory(bandwidth_per_conn=100_000)
    spec = {
        "projects": [
            {
                "name": "p",
                "children": [{"type": "file", "name": f"f{i}.bin", "size": 300_000, "seed": 90 + i} for i in range(8)],
            }
        ]
    }
    project = emu.seed_spec(spec)["p"]
    target = tmp_path / "target"
    env = {
        **os.environ,
        "SYNCLIENT_ENDPOINT": emu.endpoint,
        "SYNCLIENT_AUTH_TOKEN": emu.token,
        "SYNCLIENT_DISABLE_PROGRESS": "1",
    }
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "synclient",
            "get",
            "-r",
            project,
            "--path",
            str(target),
            "--max-workers",
            "2",
            "--dask",
            dask_client.scheduler.address,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        _wait_for(lambda: emu.stats()["data_bytes"] > 100_000, "no shard started")
        emu.set_knobs(bandwidth_per_conn=2_000)
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=STOP_DEADLINE_SECONDS)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 130 and "Traceback" not in stderr, stderr[-2000:]
    _wait_for(lambda: not any(dask_client.run(_running_shards).values()), "the interrupted run's shards still run")
    expected = {f"f{i}.bin": seeded_md5(300_000, 90 + i) for i in range(8)}
    assert all(expected[name] == md5 for name, md5 in local_tree(target).items())  # what is there is right
    emu.set_knobs(bandwidth_per_conn=0)
    again = _sync(emu, project, target, None)
    assert not again.failures and local_tree(target) == expected


def test_a_fatal_error_on_a_worker_stops_the_run_once(dask_client, emulator, tmp_path, monkeypatch):
    """The workers' token is refused (401, as when it expires mid-run): every file of every shard fails with it on
    its worker, and the driver stops the run once with that error, as a local run stops at its first 401."""
    project = emulator.seed_spec(
        {
            "projects": [
                {
                    "name": "p",
                    "children": [{"type": "file", "name": f"f{i}.txt", "size": 100, "seed": i} for i in range(6)],
                }
            ]
        }
    )["p"]
    monkeypatch.setattr(Platform, "token_for_workers", lambda platform: "a-token-the-platform-refuses")
    with pytest.raises(AuthenticationError) as info:
        _sync(
            emulator,
            project,
            tmp_path / "target",
            dask_client,
            on_error="continue",
            dask=_settings(dask_client, files=2),
        )
    assert info.value.nature is ErrorNature.FATAL and "\n" not in str(info.value)
    assert "a-token-the-platform-refuses" not in str(info.value)
    assert local_tree(tmp_path / "target") == {}
