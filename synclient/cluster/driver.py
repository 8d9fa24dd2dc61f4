"""The driver's side of a sharded sync: the run's fetches go to a Dask cluster as shards, their outcomes come back.

The driver runs the ordinary engine (walk, index fast path, bundles, claims and decisions, the synapseclient
cache); only the fetch itself moves. :class:`DaskFetcher` is the run's :class:`~synclient.transfer.fetcher.Fetcher`
in place of the local one (behind synapseclient's cache, as the local one is): it takes each file
(:meth:`DaskFetcher.fetch`), the :class:`~synclient.cluster.shards.Sharder` groups files into shards, and each
shard is one Dask task (:func:`~synclient.cluster.shard_run.run_shard`) that the scheduler places, runs again
after a failure (``retries``) and reschedules when its worker dies. Each finished shard comes back to the driver's
pool as one task (:meth:`~synclient.transfer.pool.TaskPool.deliver`) that hands every file's outcome
(:class:`~synclient.transfer.jobs.FileFetched`) back through the fetch stage to the pipeline, which indexes it and
reports it, as after a local download: the driver is the only writer of the index and the manifests.

Every REST call of the run, the driver's and the workers', passes one :class:`~synclient.cluster.budget.ClusterBudget`
(Synapse's limits are per user): see :mod:`synclient.cluster.budget`.
"""

from __future__ import annotations

import logging
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from synclient.cluster.budget import ClusterBudget, close_admission
from synclient.cluster.shard_run import PlatformAccess, ShardOutcome, ShardTask, run_shard
from synclient.cluster.shards import Shard, Sharder, ShardSizes
from synclient.errors import ClusterLostError, ConfigError, ShardFailedError, SynclientError
from synclient.events import SyncObserver
from synclient.platform.gate import RestAdmission
from synclient.platform.rest import Platform
from synclient.redaction import redact
from synclient.results import WorkerCounts
from synclient.transfer.config import TransferConfig
from synclient.transfer.fetcher import OnFetched
from synclient.transfer.jobs import FetchJob, FileFetched, LocalState
from synclient.transfer.pool import Priority, TaskPool

log = logging.getLogger("synclient.cluster")

#: shards out at the cluster per worker thread before the walk waits for them
SHARDS_AHEAD_PER_THREAD = 4


@dataclass(frozen=True)
class DaskSettings:
    """How a sync uses a Dask cluster: ``sync_from_platform(..., dask=DaskSettings(client, ...))`` (or just
    ``dask=client``). ``budget``: the REST limits every process of the run shares (Synapse's documented 3
    concurrent and 600 per 60 s by default); ``shard_sizes``: when a shard is sealed while the walk goes on;
    ``retries``: how often Dask runs a shard again after it raised (a worker that dies is rescheduled by the
    scheduler itself, up to its ``allowed-failures``)."""

    client: Any
    budget: Optional[ClusterBudget] = None
    shard_sizes: ShardSizes = field(default_factory=ShardSizes)
    retries: int = 2

    @classmethod
    def of(cls, dask: Any) -> DaskSettings:
        settings = dask if isinstance(dask, cls) else cls(dask)
        if not hasattr(settings.client, "submit") or not hasattr(settings.client, "nthreads"):
            raise ConfigError(f"dask= takes a distributed.Client (or DaskSettings), not {type(dask).__name__}")
        if settings.retries < 0:
            raise ConfigError(f"DaskSettings.retries must not be negative, got {settings.retries}")
        return settings


class DaskFetcher:
    """The run's :class:`~synclient.transfer.fetcher.Fetcher` when a Dask cluster fetches
    (``with DaskFetcher(...) as fetcher``, around the run): thread-safe."""

    def __init__(
        self,
        settings: DaskSettings,
        *,
        pool: TaskPool,
        platform: Platform,
        config: TransferConfig,
        observer: Optional[SyncObserver] = None,
    ) -> None:
        self._client = settings.client
        self._retries = settings.retries
        self._pool = pool
        self._platform = platform
        self.budget = settings.budget or ClusterBudget.for_run()
        self._access = PlatformAccess.of(platform)
        self._config = config
        self._observer = observer or SyncObserver()
        self._run = uuid.uuid4().hex[:12]
        self._sharder = Sharder(sizes=settings.shard_sizes)
        self._lock = threading.Lock()
        self._waiting: Dict[Path, Tuple[FetchJob, OnFetched]] = {}  # by destination (one file per local path)
        self._futures: Dict[int, Any] = {}  # shard number -> its Dask future, while it runs
        self._workers: Dict[str, WorkerCounts] = {}
        self._previous_admission: Optional[RestAdmission] = None

    # -- the run around it --------------------------------------------------------------------------------------

    def __enter__(self) -> DaskFetcher:
        self._previous_admission = self._platform.admission
        # the driver's calls count in the cluster's budget, on the scheduler of the client given (not the default)
        self._platform.admission = self.budget.admission(client=self._client)
        self._pool.add_idle_check(self._drain_when_idle)
        # the walk runs ahead of the cluster by a bounded amount (the files out there cost the driver memory):
        # enough for every worker thread to have shards queued behind the one it runs
        self._pool.expected_high_water = SHARDS_AHEAD_PER_THREAD * self._worker_threads() * self._sharder.sizes.files
        return self

    def __exit__(self, *exc: object) -> None:
        """Shards still out (a cancelled run) are cancelled: each stops at its next chunk (run_shard watches its
        task), its partial files stay for the next run. Every process lets go of the run's budget (window leases
        still held are left to the lease timeout: the budget is this run's own). Never raises: it runs after a
        fatal error or Ctrl-C too, and a client that lost its scheduler must not replace the run's own error with
        one of Dask's."""
        with self._lock:
            running = list(self._futures.values())
            self._futures.clear()
        if running:
            try:
                self._client.cancel(running)
            except Exception as error:  # noqa: BLE001 - a closed client, a lost scheduler: its tasks go with it
                log.debug("could not cancel the shards still out: %s: %s", type(error).__name__, error)
        self._platform.admission = self._previous_admission
        close_admission(self.budget.name)
        if not _connected(self._client):
            return  # (asking the workers would only wait for the scheduler; their leases expire anyway)
        try:
            self._client.run(close_admission, self.budget.name)
        except Exception as error:  # noqa: BLE001 - a worker gone or a scheduler lost: their leases expire anyway
            log.debug("could not close the run's REST budget on every worker: %s: %s", type(error).__name__, error)

    # -- files in --------------------------------------------------------------------------------------------------

    def fetch(self, job: FetchJob, on_fetched: OnFetched) -> None:
        """Fetch ``job`` on the cluster; ``on_fetched`` runs as a task of the driver's pool. What stands at its
        destination now is what the shard may write over (``before``)."""
        file = job.replaced(before=LocalState.of(job.destination))
        with self._lock:
            self._waiting[file.destination] = (job, on_fetched)
            shard = self._sharder.add(file)
        if shard is not None:
            self._submit(shard)

    def _drain_when_idle(self) -> None:
        """Pool idle check: once the driver has nothing else to do (the walk and every decision are done), the
        files still waiting go out as one shard per worker thread (each runs one shard at a time)."""
        if not self._sharder.pending or self._pool.outstanding(*Priority):
            return
        workers = self._worker_threads()
        with self._lock:
            shards = self._sharder.drain(parts=workers)
        for shard in shards:
            self._submit(shard)

    def _worker_threads(self) -> int:
        """The cluster's worker threads now (each runs one shard at a time); 1 when the scheduler cannot say."""
        try:
            return max(1, sum(self._client.nthreads().values()))
        except Exception as error:  # noqa: BLE001 - the scheduler is out of reach: the submission will say so
            log.debug("cannot count the Dask workers: %s: %s", type(error).__name__, error)
            return 1

    def _submit(self, shard: Shard) -> None:
        self._pool.expect(len(shard.files))
        task = ShardTask(shard, self._access, self._config, self.budget)
        try:
            future = self._client.submit(
                run_shard, task, key=f"synclient-shard-{self._run}-{shard.number}", retries=self._retries, pure=False
            )
        except Exception as exc:  # noqa: BLE001 - a closed client, a lost scheduler: the files fail, and the
            # pool, which expects them, must hear of them (else the run would wait for them for ever)
            self._pool.deliver(
                Priority.DOWNLOAD, self._settle, shard, None, self._failure(shard, exc), count=len(shard.files)
            )
            return
        with self._lock:
            self._futures[shard.number] = future
        log.debug("shard %d: %d files, %d bytes", shard.number, len(shard.files), shard.bytes)
        future.add_done_callback(lambda done, shard=shard: self._shard_done(done, shard))

    # -- outcomes back ------------------------------------------------------------------------------------------

    def _shard_done(self, future: Any, shard: Shard) -> None:
        """Dask's callback thread: the shard's outcome (or why it could not run) goes to the driver's pool."""
        outcome: Optional[ShardOutcome] = None
        failure: Optional[SynclientError] = None
        try:
            outcome = future.result()
        except BaseException as exc:  # noqa: BLE001 - a task error, KilledWorker, a cancelled future
            failure = self._failure(shard, exc)
        with self._lock:
            self._futures.pop(shard.number, None)
        self._pool.deliver(Priority.DOWNLOAD, self._settle, shard, outcome, failure, count=len(shard.files))

    def _failure(self, shard: Shard, exc: BaseException) -> SynclientError:
        """What a shard that could not run (or not be sent) means for its files, in one line: a synclient error
        the shard raised as it is (its nature too); :class:`ClusterLostError` once the client lost its scheduler
        (every shard would fail alike: the run stops); else :class:`ShardFailedError`."""
        if isinstance(exc, SynclientError):
            return exc
        reason = redact(" ".join(f"{type(exc).__name__}: {exc}".split()))  # Dask's text may quote a task's URL
        if not _connected(self._client):
            return ClusterLostError(
                f"the Dask scheduler is out of reach; the run stops, the next run resumes ({reason})"
            )
        return ShardFailedError(f"the Dask cluster could not run shard {shard.number}: {reason}")

    def _settle(self, shard: Shard, outcome: Optional[ShardOutcome], failure: Optional[SynclientError]) -> None:
        """Pool task: each file's outcome to the pipeline; the worker's counts to the report."""
        got = {fetched.destination: fetched for fetched in outcome.files} if outcome is not None else {}
        if outcome is not None:
            self._count(outcome)
        for file in shard.files:
            with self._lock:
                job, on_fetched = self._waiting.pop(file.destination)
            fetched = got.get(file.destination)
            if fetched is None:
                fetched = FileFetched.of(
                    job,
                    failure or ShardFailedError(f"shard {shard.number} did not report {file.destination}"),
                    received=None,
                )
            elif fetched.error is None:  # its bytes arrived elsewhere: the progress completes here
                if fetched.reused:  # (kept on the worker's disk from an earlier run: not transferred)
                    self._observer.bytes_reused(job.planned, fetched.reused)
                self._observer.bytes_transferred(
                    job.planned, (fetched.received if fetched.received is not None else job.size) - fetched.reused
                )
            on_fetched(fetched)

    def _count(self, outcome: ShardOutcome) -> None:
        with self._lock:
            counts = self._workers.setdefault(outcome.worker, WorkerCounts(outcome.worker))
            counts.shards += 1
            counts.files += sum(1 for fetched in outcome.files if fetched.error is None)
            counts.bytes += outcome.bytes
            counts.seconds += outcome.seconds
            counts.cpu_seconds += outcome.cpu_seconds
            counts.rest_calls += outcome.rest_calls
            counts.retries += outcome.retries
            counts.throttled += outcome.throttled

    def worker_counts(self) -> List[WorkerCounts]:
        """Per worker: shards, files, bytes, seconds and CPU seconds spent in shards, REST calls, retries, 429s."""
        with self._lock:
            return [self._workers[name] for name in sorted(self._workers)]


def _connected(client: Any) -> bool:
    """The client still talks to its scheduler (a client that lost it is reconnecting, closing or closed)."""
    return getattr(client, "status", "running") == "running"
