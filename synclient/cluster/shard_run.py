"""A shard on a Dask worker: synclient's own fetch stage (URL batches, the download strategies, verify, atomic
install) on the worker's own pool, writing into the shared target.

:func:`run_shard` is the Dask task. It builds a :class:`~synclient.platform.rest.Platform` from the driver's
:class:`PlatformAccess` (endpoints, token, CA bundle) whose REST calls pass the cluster's shared budget, and the
data plane a local run builds (:meth:`~synclient.transfer.fetcher.DataPlane.build`), whose fetcher fetches every
file of the shard exactly as a local sync fetches it (temp file beside the destination, size and MD5 checked,
``os.replace``), and returns what became of each file. It writes no index and no manifest: the driver
does that, once, from the returned :class:`ShardOutcome`.

A shard is idempotent, so Dask may run it again (a retry, or its worker died): a file an earlier try installed is
recognised (the destination is no longer what the driver saw, and is a regular file in a plain folder holding the
handle's size and MD5) and not fetched again, and a large file resumes from the parts its journal records
(:mod:`synclient.transfer.partial`).

A destination that changed otherwise since the driver decided (a file the user wrote or changed meanwhile: a shard
may wait long for a worker) is not overwritten: that file fails, and the next run decides again.

A shard Dask no longer wants stops: Dask cannot interrupt a running task (a cancelled future, a driver that died,
a worker the scheduler removed), so a watcher thread looks at the task's state and cancels the shard's pool, which
stops every file at its next chunk and leaves its partial file for the next run. Otherwise the shard would go on
writing into the target after its run ended, beside the next run.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import logging
import os
import pickle
import socket
import stat
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterator, List, Optional, Tuple

from synclient.cluster.budget import ClusterBudget
from synclient.cluster.shards import Shard
from synclient.errors import PathConflictError, ShardFailedError, SynclientError
from synclient.events import SyncObserver
from synclient.platform.credentials import Endpoints
from synclient.platform.gate import CANCEL_POLL_SECONDS
from synclient.platform.models import FileHandle
from synclient.platform.rest import Platform
from synclient.portable import SAFE_READ_FLAGS
from synclient.redaction import redact
from synclient.transfer.config import TransferConfig
from synclient.transfer.direct import DirectFile
from synclient.transfer.fetcher import DataPlane
from synclient.transfer.hashing import hash_file_range

# (FileFetched: what a shard reports of each file, the fetch stage's outcome type)
from synclient.transfer.jobs import FetchJob, FileFetched, LocalState
from synclient.transfer.partial import SymlinkFreeFolders
from synclient.transfer.pool import TaskPool

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
    def of(cls, platform: Platform) -> PlatformAccess:
        return cls(platform.endpoints, platform.token_for_workers(), platform.trusted_cas.path)

    def connect(self, *, max_connections: int) -> Platform:
        return Platform(
            repo_endpoint=self.endpoints.repo,
            file_endpoint=self.endpoints.file,
            auth_endpoint=self.endpoints.auth,
            token=self.token,
            max_connections=max_connections,
            ca_bundle=self.ca_bundle,
        )


@dataclass(frozen=True)
class ShardTask:
    """Everything a worker needs for one shard."""

    shard: Shard
    access: PlatformAccess
    config: TransferConfig
    budget: Optional[ClusterBudget] = None


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
        return sum(0 if f.error or f.earlier_try else (f.received or 0) - f.reused for f in self.files)


def run_shard(task: ShardTask, *, released: Optional[Callable[[], bool]] = None) -> ShardOutcome:
    """The Dask task: fetch the shard's files into the shared target; every file's outcome comes back.

    ``released`` says when the shard is no longer wanted (default: Dask released its task); it then stops. A
    synclient error while setting up (a CA bundle this node lacks, a scheduler out of reach) fails every file of the
    shard with that error, its nature kept (a fatal one stops the run, once); other exceptions go to Dask, which
    runs the shard again."""
    started, cpu_started = time.monotonic(), time.thread_time()
    released = released or _dask_task_released()
    _stop_sampling_profiler()
    config = task.config
    fetched: List[FileFetched] = []
    lock = threading.Lock()

    def done(outcome: FileFetched) -> None:
        outcome = replace(outcome, error=_portable(outcome.error))
        with lock:
            fetched.append(outcome)

    try:
        platform = task.access.connect(max_connections=config.max_workers)
    except SynclientError as exc:
        return _every_file_failed(task, exc, started, cpu_started)
    pool = TaskPool(config.max_workers, control_plane_limit=lambda: platform.gate.limit)
    try:
        if task.budget is not None:
            platform.admission = task.budget.admission()
        plane = DataPlane.build(platform=platform, pool=pool, config=config, observer=SyncObserver())
    except SynclientError as exc:
        platform.close()
        return _every_file_failed(task, exc, started, cpu_started)
    fetcher = plane.fetcher()
    try:
        with _stopped_when(released, pool):
            for file in task.shard.files:
                if _installed_by_earlier_try(file, plane.folders):
                    done(FileFetched.of(file, earlier_try=True))
                    continue
                changed = _changed_since_decided(file)
                if changed is not None:
                    done(FileFetched.of(file, changed))
                    continue
                fetcher.fetch(file, done)
            with platform.cancel_on(pool.cancel_event):
                pool.run()
    finally:
        plane.close()
        platform.close()
    seconds = time.monotonic() - started
    log.info(
        "shard %d: %d files in %.1f s%s",
        task.shard.number,
        len(fetched),
        seconds,
        " (stopped: released by Dask)" if pool.cancel_event.is_set() else "",
    )
    cpu = time.thread_time() - cpu_started + pool.cpu_seconds
    return ShardOutcome(
        task.shard.number,
        _worker_name(),
        tuple(fetched),
        seconds,
        cpu,
        platform.stats.calls,
        platform.stats.throttled,
        platform.stats.retries,
    )


def _every_file_failed(task: ShardTask, error: SynclientError, started: float, cpu_started: float) -> ShardOutcome:
    log.warning("shard %d cannot run here: %s", task.shard.number, error)
    portable = _portable(error)
    return ShardOutcome(
        task.shard.number,
        _worker_name(),
        tuple(FileFetched.of(file, portable) for file in task.shard.files),
        time.monotonic() - started,
        time.thread_time() - cpu_started,
        0,
        0,
    )


#: the states of a running task whose result Dask still wants ("resumed": cancelled, then asked for again)
_WANTED_STATES = frozenset({"executing", "long-running", "resumed"})
#: a worker in any other state is going away (the scheduler removed it, or it is closing)
_STAYING_WORKER = frozenset({"running", "paused", "closing_gracefully"})


def _dask_task_released() -> Callable[[], bool]:
    """In a Dask task: whether Dask no longer wants its result (its future was cancelled or its client went away,
    or the worker is closing: the scheduler gives the task to another worker). Outside a task: never."""
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):
        return lambda: False
    key = worker.get_current_task()

    def released() -> bool:
        task = worker.state.tasks.get(key)  # read from another thread: one dict lookup, and a retry later
        return (
            task is None
            or task.state not in _WANTED_STATES
            or getattr(worker.status, "name", "running") not in _STAYING_WORKER
        )

    return released


@contextlib.contextmanager
def _stopped_when(released: Callable[[], bool], pool: TaskPool) -> Iterator[None]:
    """Inside, a watcher thread cancels ``pool`` once ``released()`` (looked at every ``CANCEL_POLL_SECONDS``)."""
    finished = threading.Event()

    def watch() -> None:
        while not finished.wait(CANCEL_POLL_SECONDS):
            try:
                gone = released()
            except Exception as exc:  # noqa: BLE001 - a state we cannot read is no reason to stop
                log.debug("cannot read the shard's task state: %s: %s", type(exc).__name__, exc)
                continue
            if gone:
                log.info("the shard's task was released by Dask: stopping (partial files stay for the next run)")
                pool.cancel(grace_seconds=0)
                return

    watcher = threading.Thread(target=watch, name="synclient-shard-watch", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        finished.set()
        watcher.join()


def _installed_by_earlier_try(file: FetchJob, folders: SymlinkFreeFolders) -> bool:
    """Dask ran this shard before (a retry, or its worker died after installing some files): a destination that is
    no longer what the driver decided on and is a regular file, in a folder still plain (no symlink on the way, as
    every write of the shard checks), holding exactly the handle's bytes, was put there by that try. Anything else
    (a symlink, a FIFO, a folder swapped for a symlink, unreadable) is not: the file is fetched, and refused where a
    local run refuses it."""
    handle: FileHandle = file.handle
    if not handle.content_md5 or handle.content_size is None:
        return False  # nothing to recognise it by: fetched again
    destination = Path(file.destination)
    try:
        if not folders.plain(destination.parent):
            return False
        info = os.lstat(destination)
        now = LocalState(info.st_size, info.st_mtime_ns, info.st_ino)
        if not stat.S_ISREG(info.st_mode) or now == file.before or info.st_size != handle.content_size:
            return False
        return _md5_of_regular_file(destination, info) == handle.content_md5.lower()
    except (OSError, SynclientError):
        return False


def _changed_since_decided(file: FetchJob) -> Optional[PathConflictError]:
    """Something other than what the driver decided on now stands at the destination (the user wrote a file where
    there was none, or changed the one the run would overwrite, while the shard waited for a worker): it is not
    overwritten, and the next run decides again (a local run decides moments before it writes; a shard may wait)."""
    now = LocalState.of(file.destination)
    if now is None or now == file.before:
        return None  # as decided (or gone since: nothing there to lose)
    what = "a file appeared there" if file.before is None else "the file there changed"
    return PathConflictError(
        f"{file.destination}: {what} since this run decided to write it; not overwritten (the next run decides again)"
    )


def _md5_of_regular_file(path: Path, seen: os.stat_result) -> Optional[str]:
    """MD5 of the file at ``path`` if it is still the regular file ``seen`` (None if something else took its name)."""
    fd = os.open(path, SAFE_READ_FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_ino != seen.st_ino or info.st_size != seen.st_size:
            return None
        md5 = hashlib.md5()
        hash_file_range(DirectFile(fd), 0, info.st_size, md5)
        return md5.hexdigest()
    finally:
        os.close(fd)


def _portable(error: Optional[SynclientError]) -> Optional[SynclientError]:
    """The error as it can travel back to the driver: itself, or a copy of it (same class and message, so the same
    nature: a fatal one still stops the run) without what does not pickle; its message alone only if even that
    fails."""
    if error is None:
        return None
    error = _redacted(error)
    if _pickles(error):
        return error
    try:
        stripped = copy.copy(error)  # SynclientError.__reduce__: class, args and attributes
        stripped.args = tuple(arg if _pickles(arg) else str(arg) for arg in error.args)
        for name, value in list(vars(stripped).items()):
            if not _pickles(value):
                delattr(stripped, name)
        if _pickles(stripped):
            return stripped
    except Exception:  # noqa: BLE001 - whatever copying or pickle refuses
        pass
    return ShardFailedError(f"{type(error).__name__}: {error}")


def _redacted(error: SynclientError) -> SynclientError:
    """The error, or a copy whose texts (arguments and attributes: a URL, a host) are redacted: what travels back
    to the driver, which may log or print it whole, holds no credential, signature or token."""
    texts = {name: value for name, value in vars(error).items() if isinstance(value, str)}
    clean_args = tuple(redact(arg) if isinstance(arg, str) else arg for arg in error.args)
    clean_texts = {name: redact(value) for name, value in texts.items()}
    if clean_args == error.args and clean_texts == texts:
        return error
    try:
        copied = copy.copy(error)
        copied.args = clean_args
        for name, value in clean_texts.items():
            setattr(copied, name, value)
        return copied
    except Exception:  # noqa: BLE001 - an error that does not copy: its message alone
        return ShardFailedError(str(error))


def _pickles(value: object) -> bool:
    try:
        pickle.dumps(value)
        return True
    except Exception:  # noqa: BLE001 - whatever pickle refuses
        return False


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
