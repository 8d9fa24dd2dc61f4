"""The fetch stage: one seam between a run's decisions and the bytes at their destinations.

A :class:`Fetcher` takes a :class:`~synclient.transfer.jobs.FetchJob` and, later, reports a
:class:`~synclient.transfer.jobs.FileFetched` (installed and verified, or why not). Two fetchers exist:

- :class:`LocalFetcher`, on this process's shared pool: a URL batch (:class:`~synclient.transfer.urls.UrlBroker`)
  -> a refusal (the batch's own error, or a URL synclient does not fetch) or the download strategy for its size
  (:class:`~synclient.transfer.download.Downloader`: one GET for a small file, ranged parts for a large one; size
  and MD5 checked; ``os.replace`` into place);
- the Dask fetcher (:class:`synclient.cluster.driver.DaskFetcher`), which sends jobs to a cluster in shards, where
  each shard runs a :class:`LocalFetcher` of the worker's own.

:class:`SynapseCacheFirst` stands in front of either on the run's own machine: a copy in synapseclient's download
cache saves the URL and the download, and every file installed is recorded there for synapseclient in turn.

:meth:`DataPlane.build` is the one constructor of the data plane (URL broker, data connections, folder checks,
downloader) and :meth:`DataPlane.fetcher` the one of a run's fetcher: the local run and a shard on a Dask worker
both use them.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Protocol
from urllib.parse import urlsplit

from synclient.errors import CacheLockTimeoutError, Cancelled, SynclientError, TransferCapReached, UnsupportedError
from synclient.events import SyncObserver
from synclient.platform.rest import Platform
from synclient.synapse_cache import SynapseCache
from synclient.transfer.bandwidth import process_limiter
from synclient.transfer.cap import TransferCap
from synclient.transfer.config import TransferConfig
from synclient.transfer.download import Downloader, FileJob
from synclient.transfer.http import DataClient
from synclient.transfer.jobs import FetchJob, FileFetched
from synclient.transfer.partial import SymlinkFreeFolders
from synclient.transfer.pool import Priority, TaskPool
from synclient.transfer.urls import SignedUrl, UrlBroker, redact_url

log = logging.getLogger("synclient.transfer")

#: what a fetcher calls, once per job, with its outcome
OnFetched = Callable[[FileFetched], None]

#: the external URLs synclient fetches itself (others, such as sftp:// and ftp://, fail their file with a reason)
FETCHED_SCHEMES = ("http", "https")


def check_scheme(entity_id: str, url: str) -> None:
    """Raise :class:`UnsupportedError` for a URL synclient does not fetch (a handle known only from a view row shows
    its external URL only when the URL batch answers it)."""
    scheme = urlsplit(url).scheme.lower()
    if scheme not in FETCHED_SCHEMES:
        raise UnsupportedError(
            f"{entity_id} is an external {scheme or 'relative'} URL ({redact_url(url)}): synclient "
            f"fetches http(s) URLs only; download it with a client for {scheme or 'that URL'}"
        )


def url_refusal(entity_id: str, url: Optional[SignedUrl], error: Optional[SynclientError]) -> Optional[SynclientError]:
    """What a URL batch's answer for a file refuses it with: the batch's own error, or a URL synclient does not
    fetch (an :class:`UnsupportedError`); None for a URL to download from."""
    if error is None and url is not None:
        try:
            check_scheme(entity_id, url.url)
        except UnsupportedError as exc:
            return exc
    return error


class Fetcher(Protocol):
    """Brings files to their destinations, verified. Thread-safe."""

    def fetch(self, job: FetchJob, on_fetched: OnFetched) -> None:
        """Fetch ``job``; ``on_fetched`` gets its outcome once, from a task of the run's pool."""


class LocalFetcher:
    """URL batch -> refusal or download, on this process's pool."""

    def __init__(
        self, *, pool: TaskPool, broker: UrlBroker, downloader: Downloader, cap: Optional[TransferCap] = None
    ) -> None:
        self._pool = pool
        self._broker = broker
        self._downloader = downloader
        self._cap = cap  # the run's --max-transfer cap: a file it would not start now asks for no URL

    def fetch(self, job: FetchJob, on_fetched: OnFetched) -> None:
        def done(error: Optional[SynclientError]) -> None:
            received = None if job.size_known else started.received
            on_fetched(FileFetched.of(job, error, received=received, reused=started.reused))

        cap = self._cap
        if cap is not None and not cap.would_start(job.size if job.size_known else None):  # no URL asked for it
            on_fetched(FileFetched.of(job, TransferCapReached(f"{job.entity_id}: not started, the cap is reached")))
            return
        # (the job's own wrapping of ``done`` applies: an external URL's untrusted host fails this file only)
        started = FileJob.of(job, done)
        self._broker.request(started.request, lambda url, error: self._url_ready(started, url, error))

    def _url_ready(self, started: FileJob, url: Optional[SignedUrl], error: Optional[SynclientError]) -> None:
        error = url_refusal(started.entity_id, url, error)
        if error is not None:
            started.on_done(error)
            return
        started.url = url
        if started.fetch.order is not None:  # --order-by: among the downloads ready to start at once
            self._pool.submit_ordered(Priority.DOWNLOAD, started.fetch.order, self._downloader.start, started)
            return
        self._pool.submit(Priority.DOWNLOAD, self._downloader.start, started)


class SynapseCacheFirst:
    """A copy in synapseclient's download cache instead of a URL and a download, when one holds the job's bytes
    (its recorded MD5 is the platform's; the copy is verified as a download is); else ``then`` fetches it. Every
    file installed is recorded in the cache, for synapseclient and later syncs; a cache that cannot be written is
    said once and never fails a file."""

    def __init__(
        self, then: Fetcher, *, cache: SynapseCache, pool: TaskPool, downloader: Downloader, link: bool = False
    ) -> None:
        self._then = then
        self._cache = cache
        self._pool = pool
        self._downloader = downloader
        self._link = link  # a hard link instead of a copy, where the filesystem allows
        self._lock = threading.Lock()
        self._warned = False  # a cache that cannot be written is said once
        self._writable = True  # until its lock could not be had: no later file waits 70 s for it again

    def fetch(self, job: FetchJob, on_fetched: OnFetched) -> None:
        def recorded(fetched: FileFetched) -> None:
            if fetched.error is None:
                self._record(job)
            on_fetched(fetched)

        source = self._cached_copy(job)
        if source is None:
            self._then.fetch(job, recorded)
            return
        self._pool.submit(Priority.DOWNLOAD, self._copy, job, source, recorded)

    def _cached_copy(self, job: FetchJob) -> Optional[Path]:
        """A copy of the job's bytes in synapseclient's cache, or None."""
        if not job.handle.content_md5 or not job.size_known:
            return None  # (a copy that cannot be verified is not taken)
        try:
            return self._cache.lookup(job.handle.id, md5=job.handle.content_md5, size=job.size, not_at=job.destination)
        except (OSError, ValueError) as exc:  # an unreadable cache folder, a handle id that is not a number
            log.debug("synapseclient's cache not consulted for %s: %s", job.entity_id, exc)
            return None

    def _copy(self, job: FetchJob, source: Path, on_fetched: OnFetched) -> None:
        """DOWNLOAD task: the cached copy becomes the file, verified as a download is; any other outcome (other
        bytes, a copy that cannot be made) falls back to the fetch it stood in for."""
        try:
            method = self._downloader.copy_local(FileJob.of(job, _not_called), source, link=self._link)
        except Cancelled:
            raise
        except SynclientError as exc:
            log.info(
                "%s: the copy in synapseclient's cache (%s) is not usable (%s); downloading it",
                job.entity_id,
                source,
                exc,
            )
            self._then.fetch(job, on_fetched)
            return
        log.debug("%s: %s of %s from synapseclient's cache", job.entity_id, method.value, source)
        on_fetched(FileFetched.of(job, from_cache=True))

    def _record(self, job: FetchJob) -> None:
        """Tell synapseclient (and later syncs) that this file holds the handle's bytes."""
        if not self._writable or not job.handle.content_md5:
            return  # (without an MD5 no reader could trust the entry)
        try:
            self._cache.record(job.handle.id, job.destination, job.handle.content_md5.lower())
        except (SynclientError, OSError, ValueError) as exc:
            with self._lock:
                warned, self._warned = self._warned, True
                if isinstance(exc, CacheLockTimeoutError):
                    self._writable = False
            (log.debug if warned else log.warning)(
                "cannot record %s in synapseclient's cache %s: %s", job.destination, self._cache.root, exc
            )


def _not_called(error: Optional[SynclientError]) -> None:
    """A copy from the cache reports by raising (Downloader.copy_local), never through its job's callback."""


@dataclass
class DataPlane:
    """One process's data plane for one run (or one Dask shard): URL batches, data connections, the per-file
    folder checks and the downloader, on the run's pool. Close it when the pool has run."""

    pool: TaskPool
    broker: UrlBroker
    client: DataClient
    folders: SymlinkFreeFolders
    downloader: Downloader

    @classmethod
    def build(
        cls,
        *,
        platform: Platform,
        pool: TaskPool,
        config: TransferConfig,
        observer: SyncObserver,
        cap: Optional[TransferCap] = None,
    ) -> DataPlane:
        """Raises a :class:`SynclientError` when the data connections cannot be set up (a CA bundle missing).
        ``cap``: the run's ``--max-transfer`` cap, which every download goes through."""
        limiter = process_limiter(config.bandwidth_timetable())  # (one per process: all its runs and shards)
        client = DataClient(config.max_workers, trusted_cas=platform.trusted_cas, limiter=limiter)
        broker = UrlBroker(platform, pool, batch_size=config.url_batch_size)
        folders = SymlinkFreeFolders()
        downloader = Downloader(
            pool=pool, broker=broker, client=client, config=config, observer=observer, folders=folders, cap=cap
        )
        return cls(pool, broker, client, folders, downloader)

    def fetcher(
        self,
        *,
        remote: Optional[Fetcher] = None,
        synapse_cache: Optional[SynapseCache] = None,
        synapse_cache_link: bool = False,
    ) -> Fetcher:
        """The run's fetcher: ``synapse_cache`` first (when given), then ``remote`` (a Dask cluster) or this pool's
        :class:`LocalFetcher`."""
        fetcher: Fetcher = (
            remote
            if remote is not None
            else LocalFetcher(pool=self.pool, broker=self.broker, downloader=self.downloader, cap=self.downloader.cap)
        )
        if synapse_cache is None:
            return fetcher
        return SynapseCacheFirst(
            fetcher, cache=synapse_cache, pool=self.pool, downloader=self.downloader, link=synapse_cache_link
        )

    def close(self) -> None:
        """The data connections and the folder checks' descriptors."""
        self.client.close()
        self.folders.close()
