"""A shard on a Dask worker: synclient's own engine (URL batches, the download strategies, verify, atomic install)
on the worker's own pool, writing into the shared target.

:func:`run_shard` is the Dask task. It builds a :class:`~synclient.client.Platform` from the driver's
:class:`PlatformAccess` (endpoints, token, CA bundle) whose REST calls pass the cluster's shared budget, fetches
every file of the shard exactly as a local sync fetches it (temp file beside the destination, size and MD5
checked, ``os.replace``), and returns what became of each file. It writes no index and no manifest: the driver
does that, once, from the returned :class:`ShardOutcome`.

A shard is idempotent, so Dask may run it again (a retry, or its worker died): a file an earlier try installed is
recognised (the destination is no longer what the driver saw, and holds the handle's size and MD5) and not fetched
again, and a large file resumes from the parts its journal records (:mod:`synclient.transfer.partial`).
"""
from __future__ import annotations

import logging
import os
import pickle
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Tuple

from synclient.client import Platform
from synclient.cluster.budget import ClusterBudget
from synclient.cluster.shards import LocalState, Shard, ShardFile
from synclient.config import Endpoints
from synclient.errors import ShardFailedError, SynclientError, UnsupportedError
from synclient.events import SyncObserver
from synclient.models import FileHandle
from synclient.sync.pipeline import check_scheme
from synclient.transfer.config import TransferConfig
from synclient.transfer.download import Downloader, FileJob
from synclient.transfer.hashing import file_md5
from synclient.transfer.http import DataClient
from synclient.transfer.partial import PlainFolders
from synclient.transfer.pool import Priority, TaskPool
from synclient.transfer.urls import SignedUrl, UrlBroker

log = logging.getLogger("synclient.cluster")


@dataclass(frozen=True)
class PlatformAccess:
    """How a worker reaches the platform as the driver's user: its endpoints, its token (never in a repr: it
    travels inside the task, so give a remote scheduler a ``tls://`` address) and the CA bundle the driver
    trusts (a path every node must see, as the target's)."""

    endpoints: Endpoints
    token: Optional[str] = field(repr=False)
    ca_bundle: Optional[str] = None

    @classmethod
    def of(cls, platform: Platform) -> "PlatformAccess":
        return cls(platform.endpoints, platform.token_for_workers(), platform.trusted_cas.path)

    def connect(self, *, max_connections: int) -> Platform:
        return Platform(repo_endpoint=self.endpoints.repo, file_endpoint=self.endpoints.file,
                        auth_endpoint=self.endpoints.auth, token=self.token, max_connections=max_connections,
                        ca_bundle=self.ca_bundle)


@dataclass(frozen=True)
class ShardTask:
    """Everything a worker needs for one shard."""

    shard: Shard
    access: PlatformAccess
    config: TransferConfig
    budget: Optional[ClusterBudget] = None


@dataclass(frozen=True)
class FileFetched:
    """One file of a shard: ``error`` None when it is at its destination, verified."""

    entity_id: str
    destination: str
    error: Optional[SynclientError] = None
    received: Optional[int] = None  # bytes got for a file whose handle records no size
    earlier_try: bool = False  # installed by an earlier try of this shard (found verified, not fetched again)


@dataclass(frozen=True)
class ShardOutcome:
    """What a shard did, for the driver's index and report."""

    number: int
    worker: str
    files: Tuple[FileFetched, ...]
    seconds: float
    cpu_seconds: float  # CPU time of the shard's threads (its pool's tasks and the task's own thread)
    rest_calls: int
    throttled: int
    retries: int = 0

    @property
    def bytes(self) -> int:
        return sum(0 if f.error or f.earlier_try else f.received or 0 for f in self.files)


def run_shard(task: ShardTask) -> ShardOutcome:
    """The Dask task: fetch the shard's files into the shared target; every file's outcome comes back."""
    started, cpu_started = time.monotonic(), time.thread_time()
    _stop_sampling_profiler()
    config = task.config
    platform = task.access.connect(max_connections=config.max_workers)
    if task.budget is not None:
        platform.admission = task.budget.admission()
    fetched: List[FileFetched] = []
    lock = threading.Lock()

    def done(file: ShardFile, job: Optional[FileJob], error: Optional[SynclientError], *, earlier: bool = False):
        received = file.size if job is None or job.handle.content_size is not None else job.received
        with lock:
            fetched.append(FileFetched(file.entity_id, file.destination, _portable(error), received, earlier))

    pool = TaskPool(config.max_workers, control_plane_limit=lambda: platform.gate.limit)
    broker = UrlBroker(platform, pool, batch_size=config.url_batch_size)
    data_client = DataClient(config.max_workers, trusted_cas=platform.trusted_cas)
    folders = PlainFolders()
    downloader = Downloader(pool=pool, broker=broker, client=data_client, config=config, observer=SyncObserver(),
                            folders=folders)
    try:
        for file in task.shard.files:
            if _installed_by_earlier_try(file):
                done(file, None, None, earlier=True)
                continue
            job = FileJob(entity_id=file.entity_id, version=file.version, handle=file.handle,
                          destination=Path(file.destination), on_done=lambda error, f=file: None)
            job.on_done = _reporting(done, file, job)
            broker.request(job.request, lambda url, error, job=job: _url_ready(pool, downloader, job, url, error))
        with platform.cancel_on(pool.cancel_event):
            pool.run()
    finally:
        data_client.close()
        folders.close()
        platform.close()
    seconds = time.monotonic() - started
    log.info("shard %d: %d files in %.1f s", task.shard.number, len(fetched), seconds)
    cpu = time.thread_time() - cpu_started + pool.cpu_seconds
    return ShardOutcome(task.shard.number, _worker_name(), tuple(fetched), seconds, cpu, platform.stats.calls,
                        platform.stats.throttled, platform.stats.retries)


def _reporting(done, file: ShardFile, job: FileJob):
    def on_done(error: Optional[SynclientError]) -> None:
        done(file, job, error)
    return on_done


def _url_ready(pool: TaskPool, downloader: Downloader, job: FileJob, url: Optional[SignedUrl],
               error: Optional[SynclientError]) -> None:
    """As the local pipeline does: a URL synclient cannot fetch fails its file; else the download starts."""
    if error is None and url is not None:
        try:
            check_scheme(job.entity_id, url.url)
        except UnsupportedError as exc:
            error = exc
    if error is not None:
        job.on_done(error)
        return
    job.url = url
    pool.submit(Priority.DOWNLOAD, downloader.start, job)


def _installed_by_earlier_try(file: ShardFile) -> bool:
    """Dask ran this shard before (a retry, or its worker died after installing some files): a destination that is
    no longer what the driver decided on and holds exactly the handle's bytes was put there by that try."""
    handle: FileHandle = file.handle
    if not handle.content_md5 or handle.content_size is None:
        return False  # nothing to recognise it by: fetched again
    now = LocalState.of(file.destination)
    if now is None or now == file.before or now.size != handle.content_size:
        return False
    try:
        return file_md5(file.destination) == handle.content_md5.lower()
    except OSError:
        return False


def _portable(error: Optional[SynclientError]) -> Optional[SynclientError]:
    """The error as it can travel back to the driver (an attribute that does not pickle: its message only)."""
    if error is None:
        return None
    try:
        pickle.dumps(error)
        return error
    except Exception:  # noqa: BLE001 - whatever pickle refuses
        return ShardFailedError(f"{type(error).__name__}: {error}")


def _stop_sampling_profiler() -> None:
    """Before Python 3.12, Dask's sampling profiler (``sys._current_frames()`` every 10 ms) can deadlock a worker
    whose many threads allocate (CPython gh-116969; a shard runs dozens of threads): it is stopped on this worker
    (its dashboard loses the profile, the run keeps going). ``synclient get --dask local:N`` starts workers
    without it."""
    if sys.version_info >= (3, 12):
        return
    try:
        from distributed import get_worker
        worker = get_worker()
    except (ImportError, ValueError):
        return
    for name in ("profile", "profile-cycle"):
        callback = worker.periodic_callbacks.get(name)
        if callback is not None:
            worker.loop.add_callback(callback.stop)  # on the worker's loop: tornado's callbacks are not thread-safe


def _worker_name() -> str:
    try:
        from distributed import get_worker
        return get_worker().address
    except (ImportError, ValueError):
        return f"{socket.gethostname()}:{os.getpid()}"
