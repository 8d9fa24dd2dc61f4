"""Orchestration of one sync: walk -> plan -> fetch, all on one shared pool; results and report at the end.

Per file: one bundle call (entity + file handle: size, MD5) -> the planner decides -> the file joins a URL batch
-> the download strategy for its size runs -> a :class:`FileResult` is recorded. Failures are per file: one file
failing never stops the others.
"""
from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import List, Optional, Tuple, Union

from synclient.client import Platform
from synclient.errors import ConfigError, NotFoundError, PlatformError, SyncError, SynclientError
from synclient.events import ObserverGroup, SyncObserver
from synclient.models import EntityHeader, EntityType
from synclient.sync.paths import TargetDirectory
from synclient.sync.planner import Action, decide
from synclient.sync.results import FileResult, SyncReport, SyncResults, SyncStatus
from synclient.sync.walker import TreeWalker
from synclient.transfer.config import TransferConfig
from synclient.transfer.download import Downloader, FileJob
from synclient.transfer.http import make_data_session
from synclient.transfer.pool import Priority, TaskPool
from synclient.transfer.urls import SignedUrl, UrlBroker

log = logging.getLogger("synclient.sync")


class OnError:
    RAISE = "raise"
    CONTINUE = "continue"


def parse_entity_id(entity: str) -> Tuple[str, Optional[int]]:
    """``"syn123"`` -> ("syn123", None); ``"syn123.4"`` -> ("syn123", 4)."""
    text = str(entity).strip()
    base, _, version = text.partition(".")
    if not (base.lower().startswith("syn") and base[3:].isdigit()) or (version and not version.isdigit()):
        raise ConfigError(f"not a platform id: {entity!r} (expected synNNN or synNNN.VERSION)")
    return "syn" + base[3:], int(version) if version else None


class _Run:
    """State of one sync run, shared by its tasks."""

    def __init__(self, *, platform: Platform, config: TransferConfig, target: TargetDirectory,
                 observer: SyncObserver) -> None:
        self.platform = platform
        self.config = config
        self.target = target
        self.observer = observer
        self.report = SyncReport()
        self._results: List[FileResult] = []
        self._lock = threading.Lock()
        self.pool = TaskPool(config.max_workers, control_plane_limit=lambda: platform.gate.limit)
        self.broker = UrlBroker(platform, self.pool, batch_size=config.url_batch_size)
        self.session = make_data_session(config.max_workers)
        self.downloader = Downloader(pool=self.pool, broker=self.broker, session=self.session, config=config,
                                     observer=observer, on_done=self._downloaded)
        self.walker = TreeWalker(platform=platform, pool=self.pool, target=target, on_file=self.file_found,
                                 on_failure=self.entity_failed)

    @property
    def results(self) -> List[FileResult]:
        with self._lock:
            return list(self._results)

    def record(self, result: FileResult) -> None:
        with self._lock:
            self._results.append(result)
        self.report.record(result)
        self.observer.file_finished(result)
        if result.status is SyncStatus.FAILED:
            log.warning("failed: %s (%s): %s", result.entity_id, result.path, result.error)

    # -- per-file pipeline -----------------------------------------------------------------------------------

    def file_found(self, header: EntityHeader, destination: Path) -> None:
        self.pool.submit(Priority.BUNDLE, self._bundle, header, destination)

    def _bundle(self, header: EntityHeader, destination: Path) -> None:
        try:
            bundle = self.platform.get_file_bundle(header.id, version=header.version_number)
            handle = bundle.file_handle
            if handle is None:
                raise NotFoundError(f"{header.id} has no data file handle in its bundle")
            if handle.content_size is None:
                raise PlatformError(f"{header.id}: file handle {handle.id} has no contentSize; not supported")
            self.target.check_file_destination(destination)
            job = FileJob(entity_id=header.id, version=bundle.entity.version_number, handle=handle,
                          destination=destination)
            if decide(destination, handle) is Action.SKIP:
                self.record(FileResult(header.id, job.version, destination, handle.content_size,
                                       handle.content_md5, SyncStatus.SKIPPED))
                return
        except SynclientError as exc:
            self.entity_failed(header, destination, exc)
            return
        except OSError as exc:
            self.entity_failed(header, destination, SynclientError(f"cannot read {destination}: {exc}"))
            return
        self.observer.file_planned(size=job.size)
        self.broker.request(job.request, lambda url, error: self._url_ready(job, url, error))

    def _url_ready(self, job: FileJob, url: Optional[SignedUrl], error: Optional[SynclientError]) -> None:
        if error is not None:
            self._downloaded(job, error)
            return
        job.url = url
        self.pool.submit(Priority.DOWNLOAD, self.downloader.start, job)

    def _downloaded(self, job: FileJob, error: Optional[SynclientError]) -> None:
        status = SyncStatus.FAILED if error else SyncStatus.DOWNLOADED
        self.record(FileResult(job.entity_id, job.version, job.destination, job.handle.content_size,
                               job.handle.content_md5, status, error))

    def entity_failed(self, header: EntityHeader, path: Optional[Path], error: SynclientError) -> None:
        self.record(FileResult(header.id, header.version_number, path, None, None, SyncStatus.FAILED, error))


def sync_from_platform(entity: str, path: Union[str, Path] = ".", *, platform: Optional[Platform] = None,
                       max_workers: Optional[int] = None, config: Optional[TransferConfig] = None,
                       on_error: str = OnError.RAISE, observer: Optional[SyncObserver] = None) -> SyncResults:
    """Mirror a project, folder or single file to ``path`` and return one :class:`FileResult` per file.

    Raises :class:`~synclient.errors.SyncError` (with every result attached) when any file failed, unless
    ``on_error="continue"``; ``KeyboardInterrupt`` cancels promptly, keeping partial data for the next run.
    """
    if on_error not in (OnError.RAISE, OnError.CONTINUE):
        raise ConfigError(f"on_error must be 'raise' or 'continue', not {on_error!r}")
    config = config or TransferConfig()
    if max_workers is not None:
        config = TransferConfig(**{**config.__dict__, "max_workers": max_workers})
    own_platform = platform is None
    platform = platform or Platform(max_connections=config.max_workers)
    if not own_platform:
        platform.resize_pool(config.max_workers)
    entity_id, version = parse_entity_id(entity)
    started = time.monotonic()
    calls_before, retries_before, throttled_before = (platform.stats.calls, platform.stats.retries,
                                                      platform.stats.throttled)
    try:
        target = TargetDirectory(Path(path))
        run = _Run(platform=platform, config=config, target=target, observer=ObserverGroup([observer]))
        root = platform.get_entity_header(entity_id)
        if root.type.is_container:
            run.walker.walk(root, target.root)
        elif root.type is EntityType.FILE:
            if version is not None:
                root = EntityHeader(id=root.id, name=root.name, type=root.type, version_number=version)
            run.file_found(root, target.child(target.root, root.name))
        else:
            raise ConfigError(f"{entity_id} is a {root.type.name.lower()}; sync takes a project, folder or file")
        try:
            run.pool.run()
        finally:
            run.session.close()
    finally:
        if own_platform:
            platform.close()
    if run.pool.unexpected_errors:
        raise run.pool.unexpected_errors[0]
    report = run.report
    report.wall_seconds = time.monotonic() - started
    report.rest_calls = platform.stats.calls - calls_before
    report.retries = platform.stats.retries - retries_before
    report.throttled = platform.stats.throttled - throttled_before
    results = SyncResults(run.results, report)
    if results.failures and on_error == OnError.RAISE:
        raise SyncError(results.failures, results)
    return results


syncFromPlatform = sync_from_platform  # the name notebook users know from synapseutils.syncFromSynapse
