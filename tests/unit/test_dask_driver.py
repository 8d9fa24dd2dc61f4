"""The driver's side of a sync over Dask (synclient/cluster/driver.py), against a fake Dask client: shards go out
as files come, the rest once the driver is idle (one per worker), each file's outcome comes back to the run's
pool, a shard that could not run fails its files, and shards still out when the run ends are cancelled."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace
from typing import List, Optional

import pytest

pytest.importorskip("distributed")  # the driver imports the budget, which needs it

from synclient.cluster.driver import SHARDS_AHEAD_PER_THREAD, DaskFetcher, DaskSettings  # noqa: E402
from synclient.cluster.shard_run import FileFetched, ShardOutcome, ShardTask  # noqa: E402
from synclient.cluster.shards import ShardSizes
from synclient.errors import ClusterLostError, ConfigError, ErrorNature, NotFoundError, ShardFailedError
from synclient.events import SyncObserver
from synclient.platform.credentials import Endpoints
from synclient.platform.models import FileHandle
from synclient.platform.tls import TrustedCAs
from synclient.transfer.jobs import FetchJob
from synclient.transfer.pool import Priority, TaskPool


class FakeFuture:
    def __init__(self, key: str) -> None:
        self.key = key
        self._callbacks = []
        self._outcome = None
        self._error: Optional[BaseException] = None
        self._done = False
        self._lock = threading.Lock()

    def add_done_callback(self, callback) -> None:
        with self._lock:
            if not self._done:
                self._callbacks.append(callback)
                return
        threading.Thread(target=callback, args=(self,)).start()  # as Dask does for a finished future

    def result(self):
        if self._error is not None:
            raise self._error
        return self._outcome

    def finish(self, outcome=None, error: Optional[BaseException] = None) -> None:
        with self._lock:
            self._outcome, self._error, self._done = outcome, error, True
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:  # as Dask does: from a thread of its own
            threading.Thread(target=callback, args=(self,)).start()


class FakeClient:
    """What DaskFetcher uses of a distributed.Client; each submitted task is kept for the test to finish."""

    def __init__(self, workers: int = 2) -> None:
        self.workers = workers
        self.submitted: List[tuple] = []  # (task, future, retries)
        self.cancelled: List[FakeFuture] = []
        self.lock = threading.Lock()
        self.on_submit = lambda task, future: None

    def submit(self, fn, task: ShardTask, *, key: str, retries: int, pure: bool) -> FakeFuture:
        future = FakeFuture(key)
        with self.lock:
            self.submitted.append((task, future, retries))
        self.on_submit(task, future)
        return future

    def nthreads(self) -> dict:
        return {f"tcp://w{n}": 1 for n in range(self.workers)}

    def cancel(self, futures) -> None:
        self.cancelled.extend(futures)


class FakeBudget:
    name = "budget-test"

    def __init__(self) -> None:
        self.clients = []  # the client each admission was made for

    def admission(self, *, client=None):
        self.clients.append(client)
        return SimpleNamespace(enter=lambda *, cancel=None: 0.0, leave=lambda: None)


def _platform():
    return SimpleNamespace(
        endpoints=Endpoints.from_root("http://127.0.0.1:1"),
        token_for_workers=lambda: "t0ken",
        trusted_cas=TrustedCAs(None, "certifi"),
        admission=None,
    )


def _jobs(tmp_path: Path, count: int, size: int = 10) -> List[FetchJob]:
    return [FetchJob(f"syn{n}", 1, FileHandle(str(n), size, "0" * 32), tmp_path / f"f{n}") for n in range(count)]


def _outcome(task: ShardTask, *, worker: str = "tcp://w0", errors=None) -> ShardOutcome:
    errors = errors or {}
    files = tuple(FileFetched(f.entity_id, f.destination, errors.get(f.entity_id), f.size) for f in task.shard.files)
    return ShardOutcome(
        task.shard.number, worker, files, seconds=1.5, cpu_seconds=0.5, rest_calls=2, throttled=1, retries=1
    )


def _run(client: FakeClient, jobs: List[FetchJob], *, sizes: ShardSizes, answer) -> dict:
    """Feed ``jobs`` to a DaskFetcher on a real TaskPool; ``answer(task, future)`` finishes each shard."""
    pool = TaskPool(1)  # the files come in order, as from one listing page
    platform = _platform()
    got = {}
    client.on_submit = answer
    with DaskFetcher(
        DaskSettings(client, budget=FakeBudget(), shard_sizes=sizes),
        pool=pool,
        platform=platform,
        config=SimpleNamespace(max_workers=4),
    ) as fetcher:
        assert platform.admission is not None  # the driver's calls pass the cluster's budget during the run
        # the walk runs ahead of the cluster by a bounded number of files: shards queued behind each worker thread
        assert pool.expected_high_water == SHARDS_AHEAD_PER_THREAD * client.workers * sizes.files
        for job in jobs:
            pool.submit(
                Priority.BUNDLE,
                fetcher.fetch,
                job,
                lambda fetched, job=job: got.__setitem__(job.entity_id, (fetched.error, fetched.received)),
            )
        pool.run()
        counts = fetcher.worker_counts()
    assert platform.admission is None  # and no longer after it
    return {"got": got, "counts": counts}


def test_files_go_out_in_shards_and_every_outcome_comes_back(tmp_path):
    client = FakeClient(workers=2)
    jobs = _jobs(tmp_path, 7)
    missing = NotFoundError("gone")
    done = _run(
        client,
        jobs,
        sizes=ShardSizes(files=3),
        answer=lambda task, future: future.finish(_outcome(task, errors={"syn4": missing})),
    )
    shards = [task.shard for task, _, _ in client.submitted]
    # two full shards while files came, then the last file alone (one file: one shard, whatever the workers)
    assert [len(shard.files) for shard in shards] == [3, 3, 1]
    assert [f.entity_id for shard in shards for f in shard.files] == [f"syn{n}" for n in range(7)]
    assert all(retries == 2 for _, _, retries in client.submitted)
    assert set(done["got"]) == {f"syn{n}" for n in range(7)}
    assert done["got"]["syn4"][0] is missing and done["got"]["syn0"] == (None, 10)
    (counts,) = done["counts"]
    assert (
        counts.worker,
        counts.shards,
        counts.files,
        counts.bytes,
        counts.rest_calls,
        counts.retries,
        counts.throttled,
        counts.seconds,
        counts.cpu_seconds,
    ) == ("tcp://w0", 3, 6, 60, 6, 3, 3, 4.5, 1.5)


def test_what_is_left_when_the_driver_is_idle_goes_out_as_one_shard_per_worker(tmp_path):
    client = FakeClient(workers=3)
    _run(
        client,
        _jobs(tmp_path, 9),
        sizes=ShardSizes(files=100),
        answer=lambda task, future: future.finish(_outcome(task)),
    )
    assert [len(task.shard.files) for task, _, _ in client.submitted] == [3, 3, 3]


def test_a_shard_the_cluster_could_not_run_fails_its_files_and_only_those(tmp_path):
    client = FakeClient(workers=2)

    def answer(task, future):
        if task.shard.number == 0:
            future.finish(error=RuntimeError("KilledWorker: worker died 3 times"))
        else:
            future.finish(_outcome(task))

    done = _run(client, _jobs(tmp_path, 4), sizes=ShardSizes(files=2), answer=answer)
    for name in ("syn0", "syn1"):
        error, received = done["got"][name]
        assert isinstance(error, ShardFailedError) and "shard 0" in str(error) and "KilledWorker" in str(error)
    assert done["got"]["syn2"] == (None, 10) and done["got"]["syn3"] == (None, 10)


def test_shards_still_out_when_the_run_is_cancelled_are_cancelled(tmp_path):
    client = FakeClient(workers=1)
    pool = TaskPool(2)
    platform = _platform()
    with DaskFetcher(
        DaskSettings(client, budget=FakeBudget(), shard_sizes=ShardSizes(files=1)),
        pool=pool,
        platform=platform,
        config=SimpleNamespace(max_workers=4),
    ) as fetcher:
        fetcher.fetch(_jobs(tmp_path, 1)[0], lambda fetched: None)
        pool.cancel(grace_seconds=0)
    assert [future.key for future in client.cancelled] == [client.submitted[0][1].key]


def test_the_token_reaches_the_task_but_no_repr(tmp_path):
    client = FakeClient(workers=1)
    _run(
        client, _jobs(tmp_path, 1), sizes=ShardSizes(files=1), answer=lambda task, future: future.finish(_outcome(task))
    )
    task = client.submitted[0][0]
    assert task.access.token == "t0ken" and "t0ken" not in repr(task)


def test_dask_must_be_a_client():
    with pytest.raises(ConfigError, match="distributed.Client"):
        DaskSettings.of("tcp://127.0.0.1:8786")
    with pytest.raises(ConfigError, match="retries"):
        DaskSettings.of(DaskSettings(FakeClient(), retries=-1))


def test_the_drivers_calls_pass_the_budget_on_the_runs_own_client(tmp_path):
    """Not on the process's default client (the last one made), which may be another cluster's."""
    client, budget = FakeClient(workers=1), FakeBudget()
    pool = TaskPool(1)
    with DaskFetcher(
        DaskSettings(client, budget=budget), pool=pool, platform=_platform(), config=SimpleNamespace(max_workers=4)
    ):
        pass
    assert budget.clients == [client]


def _run_guarded(client: FakeClient, jobs: List[FetchJob], *, sizes: ShardSizes, answer) -> dict:
    """``_run`` in a thread: a run that would wait for ever fails the test instead of hanging it."""
    done = {}
    runner = threading.Thread(target=lambda: done.update(_run(client, jobs, sizes=sizes, answer=answer)), daemon=True)
    runner.start()
    runner.join(HANG_GUARD_SECONDS)
    assert not runner.is_alive(), "the run waits for files that will never come back"
    return done


HANG_GUARD_SECONDS = 30.0


class UnreachableClient(FakeClient):
    """A client whose submissions fail (closed, or its scheduler lost): ``status`` says which."""

    def __init__(self, status: str) -> None:
        super().__init__(workers=1)
        self.status = status

    def submit(self, fn, task, *, key, retries, pure):
        raise RuntimeError(f"Client is {self.status}")

    def scheduler_info(self) -> dict:
        raise OSError("Timed out trying to connect")

    def cancel(self, futures) -> None:
        raise RuntimeError("Client is closed. Can't send cancel-keys message.")


def test_a_shard_that_cannot_be_sent_fails_its_files_and_the_run_ends(tmp_path):
    done = _run_guarded(
        UnreachableClient("running"), _jobs(tmp_path, 3), sizes=ShardSizes(files=2), answer=lambda task, future: None
    )
    assert set(done["got"]) == {"syn0", "syn1", "syn2"}  # the full shard and the rest (drained: idle check)
    for error, received in done["got"].values():
        assert isinstance(error, ShardFailedError) and "Client is running" in str(error) and received is None
        assert error.nature is ErrorNature.PER_FILE


def test_once_the_client_lost_its_scheduler_every_file_fails_with_one_fatal_line(tmp_path):
    done = _run_guarded(
        UnreachableClient("closed"), _jobs(tmp_path, 2), sizes=ShardSizes(files=1), answer=lambda task, future: None
    )
    for error, _ in done["got"].values():
        assert isinstance(error, ClusterLostError) and error.nature is ErrorNature.FATAL
        assert "scheduler is out of reach" in str(error)


def test_what_a_future_raised_comes_back_in_one_line_and_a_synclient_error_as_it_is(tmp_path):
    client = FakeClient(workers=2)
    fatal = ConfigError("the CA bundle /etc/ca.pem (from --ca-bundle) does not exist")

    def answer(task, future):
        if task.shard.number == 0:
            future.finish(error=fatal)
        else:
            future.finish(error=RuntimeError("FutureCancelledError: cancelled for reason: lost.\nPlease re-run."))

    done = _run_guarded(client, _jobs(tmp_path, 2), sizes=ShardSizes(files=1), answer=answer)
    assert done["got"]["syn0"][0] is fatal  # its nature (fatal: the run stops once) comes with it
    other = done["got"]["syn1"][0]
    assert isinstance(other, ShardFailedError) and "\n" not in str(other) and "Please re-run." in str(other)


def test_ending_a_run_whose_client_is_gone_raises_nothing_and_asks_no_worker(tmp_path):
    """After Ctrl-C or a fatal error, with the scheduler lost: the run's own error must reach the caller, not
    Dask's complaint about a closed client, and nothing waits for a scheduler that is not there."""
    client = UnreachableClient("closed")
    client.submit = FakeClient.submit.__get__(client)  # the shard went out before the scheduler was lost
    client.run = lambda *args, **kwargs: pytest.fail("asked the workers of a client that lost its scheduler")
    pool = TaskPool(2)
    with DaskFetcher(
        DaskSettings(client, budget=FakeBudget(), shard_sizes=ShardSizes(files=1)),
        pool=pool,
        platform=_platform(),
        config=SimpleNamespace(max_workers=4),
    ) as fetcher:
        fetcher.fetch(_jobs(tmp_path, 1)[0], lambda fetched: None)
        pool.cancel(grace_seconds=0)
    assert len(client.submitted) == 1


class Progress(SyncObserver):
    def __init__(self) -> None:
        self.bytes: List[tuple] = []

    def bytes_transferred(self, file, count: int) -> None:
        self.bytes.append((file, count))


def test_a_file_fetched_on_the_cluster_completes_its_progress_on_the_driver(tmp_path):
    """Its bytes arrived on a worker: the driver's observers hear of them once, as the one fetch they were told
    of (the job's PlannedFile); a file that failed adds nothing."""
    client, progress = FakeClient(workers=1), Progress()
    pool = TaskPool(1)
    jobs = _jobs(tmp_path, 2)
    got = []
    client.on_submit = lambda task, future: future.finish(_outcome(task, errors={"syn1": NotFoundError("gone")}))
    with DaskFetcher(
        DaskSettings(client, budget=FakeBudget(), shard_sizes=ShardSizes(files=2)),
        pool=pool,
        platform=_platform(),
        config=SimpleNamespace(max_workers=4),
        observer=progress,
    ) as fetcher:
        for job in jobs:
            pool.submit(Priority.BUNDLE, fetcher.fetch, job, got.append)
        pool.run()
    assert sorted(fetched.entity_id for fetched in got) == ["syn0", "syn1"]
    assert len(progress.bytes) == 1 and progress.bytes[0][0] is jobs[0].planned and progress.bytes[0][1] == 10


def test_bytes_a_worker_kept_from_a_partial_download_reach_the_driver_as_reused(tmp_path):
    """A worker resumed a file from an earlier run's partial: the driver's display starts it further on and counts
    only the rest as transferred."""

    class Told(Progress):
        def bytes_reused(self, file, count: int) -> None:
            self.bytes.append(("reused", count))

    client, progress = FakeClient(workers=1), Told()
    pool = TaskPool(1)
    [job] = _jobs(tmp_path, 1)

    def resumed(task: ShardTask, future) -> None:
        [file] = task.shard.files
        fetched = FileFetched(file.entity_id, file.destination, None, file.size, reused=4)
        outcome = ShardOutcome(task.shard.number, "tcp://w0", (fetched,), 1.0, 0.5, rest_calls=0, throttled=0)
        future.finish(outcome)

    client.on_submit = resumed
    with DaskFetcher(
        DaskSettings(client, budget=FakeBudget(), shard_sizes=ShardSizes(files=1)),
        pool=pool,
        platform=_platform(),
        config=SimpleNamespace(max_workers=4),
        observer=progress,
    ) as fetcher:
        pool.submit(Priority.BUNDLE, fetcher.fetch, job, lambda fetched: None)
        pool.run()
        [counts] = fetcher.worker_counts()
    assert progress.bytes == [("reused", 4), (job.planned, 6)]
    assert counts.bytes == 6  # the worker's transferred bytes, as the report's
