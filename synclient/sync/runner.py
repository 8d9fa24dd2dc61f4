"""Orchestration of one sync: walk -> plan -> fetch, all on one shared pool; index, manifest and report at the end.

Per remote file: the index fast path (same id + version, local stat untouched: no call at all) -> otherwise one
bundle call (entity + file handle + annotations) -> the planner's decision -> a URL batch -> the download strategy
for its size -> an index row and a :class:`FileResult`. Failures are per file: one file failing never stops the
others. A dry run walks and plans the same way, then returns the :class:`SyncPlan` without writing anything.
"""
from __future__ import annotations

import errno
import heapq
import logging
import os
import stat
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Set, Tuple, Union

from synclient.client import Platform
from synclient.errors import (ConfigError, ErrorNature, LocalIOError, NotFoundError, PathConflictError,
                              PlatformError, SyncError, SynclientError)
from synclient.events import ObserverGroup, SyncObserver
from synclient.models import EntityHeader, EntityType, FileHandle, parse_entity_id  # noqa: F401 (re-exported)
from synclient.sync.deletion import (DeletionPass, Removal, clear_folder, folder_contents_if_ours, is_under_any,
                                     remove_indexed_file, remove_stale_manifest)
from synclient.sync.filters import PathFilter
from synclient.sync.index import IndexRow, LocalIndex
from synclient.sync.manifest import (MANIFEST_FILENAME, ManifestMode, ManifestRow, Provenance,
                                     provenance_from_activity, write_manifests)
from synclient.sync.paths import TargetDirectory
from synclient.sync.plan import PlanEntry, SyncPlan
from synclient.sync.planner import Action, Collision, Decision, collide, copy_name, decide, is_up_to_date
from synclient.results import FileResult, SyncReport, SyncResults, SyncStatus
from synclient.sync.walker import FoundFile, TreeWalker
from synclient.transfer.config import TransferConfig
from synclient.transfer.download import Downloader, FileJob
from synclient.transfer.http import DataClient
from synclient.transfer.partial import LeftoverPartials, PlainFolders, partial_key, sweep_partials
from synclient.transfer.pool import Priority, TaskPool
from synclient.transfer.urls import SignedUrl, UrlBroker

log = logging.getLogger("synclient.sync")


class OnError:
    RAISE = "raise"
    CONTINUE = "continue"


@dataclass(frozen=True)
class SyncOptions:
    if_collision: Collision = Collision.OVERWRITE_LOCAL
    delete: bool = False
    manifest: ManifestMode = ManifestMode.ALL
    path_filter: PathFilter = PathFilter()
    dry_run: bool = False
    follow_links: bool = False
    provenance: bool = False


@dataclass
class _FileContext:
    """What the runner keeps about a file while its bytes are in flight."""

    rel_path: str
    action: Action
    parent_id: Optional[str]
    root_id: str  # the index row's owner (a single-file get into a synced tree keeps the tree's root)
    annotations: dict = field(default_factory=dict)
    superseded: Optional[IndexRow] = None  # an earlier keep.both copy of this file, removed once it settles elsewhere
    displaced: Optional[IndexRow] = None  # another file's copy this file replaces: that row goes once this is in


def is_fatal(error: Optional[SynclientError], target_root: Path) -> bool:
    """Errors that every remaining file would meet too (:attr:`ErrorNature.FATAL`: the token turned invalid, the
    disk is full or read-only, ...), and a permission error once the target itself is no longer writable. One of
    them cancels the run instead of failing files one at a time."""
    if error is None:
        return False
    if error.nature is ErrorNature.FATAL:
        return True
    return (isinstance(error, LocalIOError) and not isinstance(error, PathConflictError)
            and getattr(error, "errno", None) in (errno.EACCES, errno.EPERM)
            and not os.access(target_root, os.W_OK | os.X_OK))


class _Run:
    """State of one sync run, shared by its tasks."""

    def __init__(self, *, platform: Platform, config: TransferConfig, target: TargetDirectory,
                 index: LocalIndex, root_id: str, options: SyncOptions, observer: SyncObserver) -> None:
        self.platform = platform
        self.config = config
        self.target = target
        self.index = index
        self.root_id = root_id
        self.options = options
        self.observer = observer
        self.report = SyncReport()
        self.plan = SyncPlan()
        self.seen: Set[str] = set()
        # the manifest is written from the index at the end; only paths (and rare extras) are kept meanwhile
        self.manifest_paths: Set[str] = set()
        self.manifest_extras: List[ManifestRow] = []
        self.provenance: Dict[str, Provenance] = {}
        self.leftovers = LeftoverPartials()
        self.single_file = False  # set by _start for a file root: its index row keeps an existing owner
        self.handled: Set[str] = set()  # rel paths removed (or planned so) during the walk: not vanished again
        self.failed_partials: Set[Tuple[str, str]] = set()  # partial_key of failed files: the next run resumes
        self.manifest_failures: List[str] = []
        self.fatal: Optional[SynclientError] = None  # the error that cancelled the run
        self._folder_names: Dict[Path, Set[str]] = {}  # folder -> remote names + copies chosen (keep.both)
        self._copies_lock = threading.Lock()
        self._abandoned: Set[str] = set()  # local paths of copies whose name a remote entity now has
        self._displaced: Set[str] = set()  # local paths of copies that a remote file of that name replaces
        self._copy_claims: Dict[str, str] = {}  # copy path -> entity id (natural paths are unique by listing)
        self._held_copies: List[Tuple[FoundFile, IndexRow]] = []  # up-to-date copies, settled once all is decided
        self._index_has_copies = index.has_copies()  # else no lookup by local path can find anything
        self._results: List[FileResult] = []
        self._lock = threading.Lock()
        self.pool = TaskPool(config.max_workers, control_plane_limit=lambda: platform.gate.limit)
        self.broker = UrlBroker(platform, self.pool, batch_size=config.url_batch_size)
        self.data_client = DataClient(config.max_workers)
        self.folders = PlainFolders()  # the per-file folder checks; closed with the data client
        self.downloader = Downloader(pool=self.pool, broker=self.broker, client=self.data_client, config=config,
                                     observer=observer, on_done=self._downloaded, folders=self.folders)
        self.walker = TreeWalker(platform=platform, pool=self.pool, target=target, on_files=self.files_found,
                                 on_failure=self.entity_failed, path_filter=options.path_filter,
                                 follow_links=options.follow_links, make_room=self.make_room)
        self.pool.add_idle_check(self.settle_held_copies)

    @property
    def results(self) -> List[FileResult]:
        with self._lock:
            return list(self._results)

    def record(self, result: FileResult, *, manifest_path: Optional[str] = None) -> None:
        """Keep a file's outcome; ``manifest_path``: its indexed path, listed in the manifest. A fatal error cancels
        the run: it is reported once, and what fails after it (cancelled calls) is not this file's fault."""
        with self._lock:
            if result.status is SyncStatus.FAILED:
                if self.fatal is not None:
                    return
                if is_fatal(result.error, self.target.root):
                    self.fatal = result.error
                    log.error("stopping: %s", result.error)
                    self.pool.cancel(grace_seconds=0)
                    return
            self._results.append(result)
            if manifest_path is not None and self.options.manifest is not ManifestMode.SUPPRESS:
                self.manifest_paths.add(manifest_path)
        self.report.record(result)
        self.observer.file_finished(result)
        if result.status is SyncStatus.FAILED:
            log.warning("failed: %s (%s): %s", result.entity_id, result.path, result.error)

    # -- per-file pipeline -----------------------------------------------------------------------------------

    def files_found(self, files: List[FoundFile]) -> None:
        """One listing page's files: their index rows in one query, then each is up to date or needs its bundle."""
        if self.options.delete:
            with self._lock:
                self.seen.update(file.rel_path for file in files)
        rows = self.index.get_many([file.rel_path for file in files])
        for found in files:
            header, destination, rel_path = found
            row = rows.get(rel_path)
            if is_up_to_date(row, header, self.target.root) and not self.options.provenance:
                if row.root_id != self.root_id and row.root_id == row.entity_id and not self.single_file:
                    self.index.set_owner(rel_path, self.root_id)  # a single-file get's row joins the tree
                if row.local_path != rel_path and not self.single_file:
                    with self._lock:  # a keep.both copy: settled when every remote file has claimed its path
                        self._held_copies.append((found, row))
                    continue
                self._up_to_date(row)
            else:
                self.pool.submit(Priority.BUNDLE, self._bundle, header, destination, rel_path, row)

    def settle_held_copies(self) -> None:
        """Pool idle check: once nothing else runs, each up-to-date keep.both copy is either still its file's
        (skipped) or a remote file of its name took the path in this run, and its file is decided again."""
        if not self._held_copies or self.pool.outstanding(*Priority):
            return
        with self._lock:
            held, self._held_copies = self._held_copies, []
        for (header, destination, rel_path), row in held:
            if row.local_path in self._displaced:
                self.pool.submit(Priority.BUNDLE, self._bundle, header, destination, rel_path, row)
                continue
            try:
                self._claim(self.target.root / row.local_path, row.entity_id, copy=True)
            except PathConflictError as exc:
                self.entity_failed(header, destination, exc)
                continue
            self._up_to_date(row)

    def _up_to_date(self, row: IndexRow) -> None:
        path = self.target.root / row.local_path
        if self.options.dry_run:
            self.plan.add(PlanEntry(row.rel_path, row.entity_id, row.version, row.size, Action.SKIP, path))
            return
        self.record(FileResult(row.entity_id, row.version, path, row.size, row.md5, SyncStatus.SKIPPED,
                               action=Action.SKIP.value), manifest_path=row.rel_path)

    def _bundle(self, header: EntityHeader, destination: Path, rel_path: str, row: Optional[IndexRow]) -> None:
        try:
            bundle = self.platform.get_file_bundle(
                header.id, version=header.version_number,
                include_annotations=self.options.manifest is not ManifestMode.SUPPRESS)
            handle = bundle.file_handle
            if handle is None:
                raise NotFoundError(f"{header.id} has no data file handle in its bundle")
            if handle.content_size is None:
                raise PlatformError(f"{header.id}: file handle {handle.id} has no contentSize; not supported")
            self.target.check_file_destination(destination, self.folders)
            if self.options.provenance:
                self.provenance[rel_path] = provenance_from_activity(
                    self.platform.get_activity(header.id, version=bundle.entity.version_number))
            copy = row if row is not None and row.local_path != rel_path else None
            if copy is not None and self._copy_name_taken(copy, destination.parent, bundle.entity.parent_id):
                row = copy = None  # that name is a remote entity's now: this file gets another copy name
            decision, displaced = self._decide(destination, rel_path, handle, row, copy, bundle.entity.parent_id,
                                               header.id)
        except SynclientError as exc:
            self.entity_failed(header, destination, exc)
            return
        except OSError as exc:
            self.entity_failed(header, destination, LocalIOError.from_exception(f"cannot read {destination}", exc))
            return
        annotations = (bundle.annotations or {}).get("annotations") or {}
        version = bundle.entity.version_number
        owner = row.root_id if (self.single_file and row is not None) else self.root_id
        superseded = copy if copy is not None and decision.destination != self.target.root / copy.local_path else None
        context = _FileContext(rel_path, decision.action, bundle.entity.parent_id, owner, annotations, superseded,
                               displaced)
        if self.options.dry_run:
            self.plan.add(PlanEntry(rel_path, header.id, version, handle.content_size, decision.action,
                                    decision.destination))
            return
        if decision.action is not Action.KEEP_LOCAL:  # settled now: older partials of it can never resume
            self.leftovers.discard(decision.destination,
                                   keep_handle=handle.id if decision.action.fetches else None)
        if not decision.action.fetches:
            self._kept(header.id, version, handle, decision, context)
            return
        job = FileJob(entity_id=header.id, version=version, handle=handle, destination=decision.destination,
                      tag=context)
        self.observer.file_planned(job.planned)
        self.broker.request(job.request, lambda url, error: self._url_ready(job, url, error))

    def _decide(self, destination: Path, rel_path: str, handle: FileHandle, row: Optional[IndexRow],
                copy: Optional[IndexRow], parent_id: Optional[str], entity_id: str
                ) -> Tuple[Decision, Optional[IndexRow]]:
        """The planner's decision, then what only the run can settle: a path held by synclient's own things (another
        file's keep.both copy, a stale manifest) is free for the remote entity; a folder in the way; the copy name.
        Also returns the copy row this file displaces, if any."""
        if self._holds_our_leftover(destination, rel_path):
            decision = Decision(Action.DOWNLOAD, destination)
            with self._lock:
                self._displaced.add(rel_path)
        else:
            decision = decide(destination=destination, handle=handle, row=row, target_root=self.target.root,
                              collision=self.options.if_collision)
        displaced = self._displaced_row(decision.destination, rel_path)
        if decision.action is Action.BLOCKED:
            decision = self._unblock(destination)
        if decision.action is Action.KEEP_BOTH:
            if copy is not None and copy.local_stat_matches(self.target.root):
                decision = Decision(Action.KEEP_BOTH, self.target.root / copy.local_path)  # the new bytes go there
            else:
                return self._keep_both(destination, parent_id, entity_id), displaced
        self._claim(decision.destination, entity_id, copy=decision.destination != destination)
        return decision, displaced

    def _displaced_row(self, destination: Path, rel_path: str) -> Optional[IndexRow]:
        """Another file's row saying its bytes are where this file now settles (an old keep.both copy, changed or
        not): it is stale once this file is in, and not "vanished" in this run."""
        if not self._index_has_copies:
            return None
        other = self.index.copy_at(destination.relative_to(self.target.root).as_posix())
        if other is None or other.rel_path == rel_path:
            return None
        with self._lock:
            self.handled.add(other.rel_path)
        return other

    def _holds_our_leftover(self, destination: Path, rel_path: str) -> bool:
        """The file at a remote file's path is synclient's own and no user's: another entity's keep.both copy
        (untouched, or given up in this run) or a manifest synclient wrote before the remote had this name."""
        if rel_path in self._abandoned:
            return True
        copy = self.index.copy_at(rel_path) if self._index_has_copies else None
        if copy is not None and copy.local_stat_matches(self.target.root):
            return True
        if destination.name == MANIFEST_FILENAME and not self.index.get_many([rel_path]):
            try:
                return stat.S_ISREG(os.lstat(destination).st_mode)
            except OSError:
                return False
        return False

    def _claim(self, destination: Path, entity_id: str, *, copy: bool) -> None:
        """Assert that no other entity of this run has this local path (a defect if one has: refuse, never mix).
        A remote file's own path is unique in its folder's listing, so only copies (``keep.both``, or found at a
        copy's path) are kept; a file's own path is checked against them."""
        key = str(destination)
        with self._lock:
            other = self._copy_claims.setdefault(key, entity_id) if copy else self._copy_claims.get(key, entity_id)
        if other != entity_id:
            raise PathConflictError(f"{destination} is already the local path of {other} in this run; "
                                    f"{entity_id} is not written there")

    def _names_of(self, folder: Path, parent_id: Optional[str]) -> Set[str]:
        """The remote folder's names (listed once more, whole, the first time this run needs them) plus the copy
        names this run chose there. Call with ``_copies_lock`` held."""
        names = self._folder_names.get(folder)
        if names is None:
            names = self._folder_names[folder] = self._remote_names(parent_id)
        return names

    def _copy_name_taken(self, copy: IndexRow, folder: Path, parent_id: Optional[str]) -> bool:
        """An earlier keep.both copy whose name a remote entity has now: that entity wins the path."""
        name = copy.local_path.rpartition("/")[2]
        with self._copies_lock:
            taken = name in self._names_of(folder, parent_id)
        if taken and copy.local_stat_matches(self.target.root):  # untouched: the remote entity may replace it
            with self._lock:
                self._abandoned.add(copy.local_path)
        return taken

    def _keep_both(self, destination: Path, parent_id: Optional[str], entity_id: str) -> Decision:
        """``keep.both``: a copy name that neither the local folder nor the remote folder has, nor another copy of
        this run."""
        with self._copies_lock:
            taken = self._names_of(destination.parent, parent_id)
            chosen = copy_name(destination, taken=taken)
            taken.add(chosen.name)
            self._claim(chosen, entity_id, copy=True)
        return Decision(Action.KEEP_BOTH, chosen)

    def _remote_names(self, parent_id: Optional[str]) -> Set[str]:
        if not parent_id:
            return set()
        children = self.platform.iter_children(parent_id, include_types=(EntityType.FOLDER, EntityType.FILE,
                                                                         EntityType.LINK))
        return {header.name for header in children}

    def _unblock(self, destination: Path) -> Decision:
        """A local folder where the remote has a file. With ``delete``, a folder that holds only what synclient
        wrote (untouched files, manifests, partials) is removed and the file downloaded, whatever ``if_collision``
        says (nothing of the user's is in the way). Otherwise ``if_collision`` applies, and ``overwrite.local`` is a
        conflict reported with its path: a folder is never overwritten, and nothing is written."""
        rel_dir = destination.relative_to(self.target.root).as_posix()
        rows = (folder_contents_if_ours(self.target, self.index, rel_dir, path_filter=self.options.path_filter)
                if self.options.delete else None)
        if rows is None:
            decision = collide(destination, self.options.if_collision)
            if decision.action is Action.OVERWRITE:
                raise PathConflictError(
                    f"{destination} is a local folder and the remote has a file of that name; not replaced "
                    + ("(it holds files synclient did not write or that changed since)" if self.options.delete
                       else "(with delete, a folder holding only files synclient wrote is)"))
            return decision
        for row in rows:
            with self._lock:
                self.handled.add(row.rel_path)
            self.removed(remove_indexed_file(self.target, row, dry_run=self.options.dry_run))
        if not self.options.dry_run and not clear_folder(self.target, rel_dir):
            raise PathConflictError(f"{destination} is a local folder that could not be emptied; the remote file "
                                    "of that name is not written")
        return Decision(Action.DOWNLOAD, destination)

    def make_room(self, rel_path: str, path: Path) -> bool:
        """A file where the remote now has a folder (called by the walker). It goes if it is synclient's own and no
        user's: a keep.both copy or manifest of synclient's, or, with ``delete``, a file synclient wrote that nobody
        changed. A dry run removes nothing; it plans what the real run reports."""
        if self._holds_our_leftover(path, rel_path):
            copy = self.index.copy_at(rel_path)
            with self._lock:  # a held copy that was here is its file's no more: that file is decided again
                self._displaced.add(rel_path)
            if not self.options.dry_run:
                try:
                    info = self.target.lstat_inside(rel_path)
                    if info is None or not self.target.unlink_inside(rel_path, expected=info):
                        return False
                except OSError as exc:
                    raise LocalIOError.from_exception(f"cannot remove {path} to make room for a folder", exc) \
                        from None
                if copy is not None:
                    self.index.forget(copy.rel_path, only_at=copy.local_path)
            log.info("%s: removed synclient's own file to make room for a remote folder", path)
            return True
        if not self.options.delete:
            return False
        row = self.index.get_many([rel_path]).get(rel_path)
        if row is None or row.local_path != rel_path:
            return False
        removal = remove_indexed_file(self.target, row, dry_run=self.options.dry_run)
        if removal is None or removal.action is not Action.DELETE or removal.error is not None:
            return False
        with self._lock:
            self.handled.add(rel_path)
        self.removed(removal)
        return True

    def removed(self, removal: Optional[Removal]) -> None:
        """Report one vanished file's removal (or, in a dry run, plan it)."""
        if removal is None:
            return
        row = removal.row
        path = self.target.root / row.local_path
        if self.options.dry_run:
            self.plan.add(PlanEntry(row.rel_path, row.entity_id, row.version, row.size, removal.action, path))
            return
        if removal.error is not None:
            self.record(FileResult(row.entity_id, row.version, path, row.size, row.md5, SyncStatus.FAILED,
                                   removal.error, action=removal.action.value))
        elif removal.action is Action.DELETE:
            self.index.forget(row.rel_path)
            self.record(FileResult(row.entity_id, row.version, path, row.size, row.md5, SyncStatus.DELETED,
                                   action=removal.action.value))
        else:
            log.info("%s is gone remotely but %s; kept", path, removal.reason)
            self.record(FileResult(row.entity_id, row.version, path, row.size, row.md5, SyncStatus.SKIPPED,
                                   action=removal.action.value))

    def _kept(self, entity_id: str, version: Optional[int], handle: FileHandle, decision: Decision,
              context: _FileContext) -> None:
        """SKIP / ADOPT: the local bytes are the remote bytes (index it); KEEP_LOCAL: a conflict left alone."""
        result = FileResult(entity_id, version, decision.destination, handle.content_size, handle.content_md5,
                            SyncStatus.SKIPPED, action=decision.action.value)
        if decision.action is Action.KEEP_LOCAL:  # not indexed (the bytes are not the remote's): listed as is
            if not decision.destination.is_file() or decision.destination.is_symlink():
                self.record(result)  # a folder or symlink kept in the way: no file to list
                return
            with self._lock:
                self.manifest_extras.append(ManifestRow(
                    decision.destination, context.parent_id, context.rel_path.rsplit("/", 1)[-1], entity_id,
                    handle.content_type, context.annotations, self.provenance.get(context.rel_path, Provenance())))
            self.record(result)
            return
        try:
            self._index_file(entity_id, version, handle, decision.destination, context)
        except OSError as exc:  # changed or gone since it was checked: not this run's to index
            self.record(FileResult(entity_id, version, decision.destination, handle.content_size,
                                   handle.content_md5, SyncStatus.FAILED,
                                   LocalIOError.from_exception(f"cannot stat {decision.destination}", exc),
                                   action=decision.action.value))
            return
        self._drop_superseded(context)
        self.record(result, manifest_path=context.rel_path)

    def _url_ready(self, job: FileJob, url: Optional[SignedUrl], error: Optional[SynclientError]) -> None:
        if error is not None:
            self._downloaded(job, error)
            return
        job.url = url
        self.pool.submit(Priority.DOWNLOAD, self.downloader.start, job)

    def _downloaded(self, job: FileJob, error: Optional[SynclientError]) -> None:
        context: _FileContext = job.tag
        if error is None:
            try:
                self._index_file(job.entity_id, job.version, job.handle, job.destination, context)
                self._drop_superseded(context)
            except OSError as exc:
                error = LocalIOError.from_exception(f"cannot stat {job.destination} after writing it", exc)
        status = SyncStatus.FAILED if error else SyncStatus.DOWNLOADED
        if error is not None:  # its partial (if any) is what the next run resumes from
            with self._lock:
                self.failed_partials.add(partial_key(job.destination))
        self.record(FileResult(job.entity_id, job.version, job.destination, job.handle.content_size,
                               job.handle.content_md5, status, error, action=context.action.value),
                    manifest_path=context.rel_path if error is None else None)

    def _drop_superseded(self, context: _FileContext) -> None:
        """A file now at another path than its earlier keep.both copy: the untouched copy goes (the index can point
        to one place per file, and an unindexed copy would read as the user's for good)."""
        if context.displaced is not None:  # the copy this file replaced is no longer where its row says
            self.index.forget(context.displaced.rel_path, only_at=context.displaced.local_path)
        copy = context.superseded
        if copy is None or copy.local_path in self._abandoned:  # a given-up copy belongs to its new owner
            return
        removal = remove_indexed_file(self.target, copy, dry_run=False)
        if removal is not None and removal.action is Action.DELETE and removal.error is None:
            log.info("removed %s, the earlier keep.both copy of %s", copy.local_path, context.rel_path)

    def _index_file(self, entity_id: str, version: Optional[int], handle: FileHandle, local: Path,
                    context: _FileContext) -> None:
        info = os.lstat(local)
        self.index.record(IndexRow(
            rel_path=context.rel_path, local_path=local.relative_to(self.target.root).as_posix(),
            root_id=context.root_id, entity_id=entity_id, version=version, file_handle_id=handle.id,
            md5=(handle.content_md5 or "").lower() or None, size=handle.content_size or 0,
            content_type=handle.content_type, parent_id=context.parent_id, local_size=info.st_size,
            mtime_ns=info.st_mtime_ns), annotations=context.annotations)

    def entity_failed(self, header: EntityHeader, path: Optional[Path], error: SynclientError) -> None:
        result = FileResult(header.id, header.version_number, path, None, None, SyncStatus.FAILED, error)
        if path is not None:  # a partial of it (an earlier run's) stays for the run that gets further
            with self._lock:
                self.failed_partials.add(partial_key(path))
        if self.options.dry_run:
            with self._lock:
                self.plan.failures.append(result)
            return
        self.record(result)

    # -- after the walk ----------------------------------------------------------------------------------------

    def manifest_rows(self) -> Iterator[ManifestRow]:
        """This run's files, sorted by path: indexed ones streamed from the index, plus the few kept conflicts."""
        root = self.target.root
        indexed = (ManifestRow(root / row.local_path, row.parent_id, row.rel_path.rsplit("/", 1)[-1],
                               row.entity_id, row.content_type, annotations,
                               self.provenance.get(row.rel_path, Provenance()))
                   for row, annotations in self.index.iter_sorted(self.root_id)
                   if row.rel_path in self.manifest_paths)
        extras = sorted(self.manifest_extras, key=lambda r: str(r.path))
        return heapq.merge(indexed, extras, key=lambda r: str(r.path))

    def delete_vanished(self) -> None:
        """``delete=True``: remove files synclient wrote (and nobody changed since) that are gone remotely; see
        :mod:`synclient.sync.deletion` for the rules."""
        if self.walker.unvisited:
            log.warning("%d folders could not be listed or visited; no file under them is deleted in this run",
                        len(self.walker.unvisited))
        self.index.flush()
        deletion = DeletionPass(target=self.target, index=self.index, root_id=self.root_id,
                                path_filter=self.options.path_filter, seen=self.seen,
                                unvisited=self.walker.unvisited, handled=self.handled, dry_run=self.options.dry_run)
        for removal in deletion.run():
            self.removed(removal)
        self.index.flush()
        deletion.tidy_folders(listed=set(self.walker.listed))

    def write_manifests(self) -> None:
        """Every folder's manifest from this run's files; one that cannot be written is reported for its folder.
        A folder the walk listed that gets no manifest now (its files are gone, or the mode is "root") loses the
        stale one."""
        self.index.flush()
        # a remote entity named like the manifest, listed now or indexed from before: it keeps its path
        taken = set(self.walker.manifest_taken) | {(self.target.root / path).parent
                                                   for path in self.index.local_paths_named(MANIFEST_FILENAME)}
        for folder in sorted(taken):
            log.warning("%s has a remote entity named %s; no manifest is written there", folder, MANIFEST_FILENAME)
        written, failures = write_manifests(self.manifest_rows, self.target.root, self.options.manifest, skip=taken)
        for failure in failures:
            reason = failure.error.strerror or str(failure.error)
            self.manifest_failures.append(f"cannot write {failure.folder / MANIFEST_FILENAME}: {reason}")
            log.warning("%s", self.manifest_failures[-1])
        keep = {path.parent for path in written} | taken | {failure.folder for failure in failures}
        root = self.target.root
        earlier = {rel_dir: root / rel_dir for rel_dir in self.index.manifest_folders()}  # incl. folders gone since
        for rel_dir, folder in {**earlier, **self.walker.listed}.items():  # ("root": an earlier "all" run's too)
            if folder not in keep:
                remove_stale_manifest(self.target, rel_dir, index=self.index)
        self.index.set_manifest_folders(sorted(p.parent.relative_to(root).as_posix() if p.parent != root else ""
                                               for p in written))

    def sweep_partials(self) -> None:
        """A run that was not interrupted leaves no partial download in the folders it listed, except those of
        files that failed now (the next run resumes them) and, with filters, of files the filters leave out (they
        may resume another day; so may a long name's, whose partial does not spell the name)."""
        with self._lock:
            keep = set(self.failed_partials)
        path_filter = self.options.path_filter
        rel_of = {folder: rel_dir for rel_dir, folder in self.walker.listed.items()}
        seen: Set[str] = set()
        for row in self.index.iter_rows(self.root_id):  # folders the remote dropped: no run resumes there either
            rel_dir = row.local_path.rpartition("/")[0]
            if rel_dir in seen:  # one decision per folder, not per row
                continue
            seen.add(rel_dir)
            folder = self.target.root / rel_dir
            if folder not in rel_of and not is_under_any(row.local_path, self.walker.unvisited):  # (rel_dir too)
                rel_of[folder] = rel_dir

        def spare(folder: Path, name: Optional[str]) -> bool:
            if not path_filter.active:
                return False
            if name is None:
                return True
            rel_dir = rel_of.get(folder, "")
            return not path_filter.wants_file(f"{rel_dir}/{name}" if rel_dir else name)

        sweep_partials(list(rel_of), keep=keep, spare=spare)


def _options(*, if_collision, delete, manifest, include, exclude, dry_run, follow_links,
             provenance) -> SyncOptions:
    return SyncOptions(if_collision=Collision.parse(if_collision, option="if_collision"), delete=bool(delete),
                       manifest=ManifestMode.parse(manifest, option="manifest"),
                       path_filter=PathFilter.build(include, exclude),
                       dry_run=bool(dry_run), follow_links=bool(follow_links), provenance=bool(provenance))


def sync_from_platform(entity: str, path: Union[str, Path] = ".", *, platform: Optional[Platform] = None,
                       max_workers: Optional[int] = None, config: Optional[TransferConfig] = None,
                       on_error: str = OnError.RAISE, observer: Optional[SyncObserver] = None,
                       if_collision: str = "overwrite.local", delete: bool = False, manifest: str = "all",
                       include: Iterable[str] = (), exclude: Iterable[str] = (), dry_run: bool = False,
                       follow_links: bool = False, provenance: bool = False,
                       progress: bool = True) -> Union[SyncResults, SyncPlan]:
    """Mirror a project, folder or single file (``syn123``, ``syn123.4``) to ``path``.

    Returns one :class:`FileResult` per file (``SyncResults``, with ``.report``), or with ``dry_run=True`` the
    :class:`SyncPlan` of what would happen, writing nothing. Raises :class:`~synclient.errors.SyncError` (with
    every result attached) when any file failed, unless ``on_error="continue"``. ``KeyboardInterrupt`` cancels
    promptly; finished files stay indexed and partial data stays for the next run.

    - ``if_collision``: ``overwrite.local`` | ``keep.local`` | ``keep.both`` for local files changed since synclient
      wrote them (or never written by it) that differ from the remote file.
    - ``delete``: remove local files synclient wrote that are gone remotely (never other files).
    - ``manifest``: ``all`` | ``root`` | ``suppress`` (``SYNAPSE_METADATA_MANIFEST.tsv``).
    - ``include`` / ``exclude``: glob patterns on the remote path relative to the root (see
      :mod:`synclient.sync.filters`), applied before any per-file call.
    - ``follow_links``: follow Link entities (cycles are refused); ``provenance``: fill the manifest's provenance
      columns (one extra call per file).
    - ``progress``: draw a tqdm bar (a widget in Jupyter) when stderr is a terminal or in a notebook; scripts
      whose output goes to a log stay quiet. ``observer`` receives the same events for your own display.
    """
    if on_error not in (OnError.RAISE, OnError.CONTINUE):
        raise ConfigError(f"on_error must be 'raise' or 'continue', not {on_error!r}")
    options = _options(if_collision=if_collision, delete=delete, manifest=manifest, include=include,
                       exclude=exclude, dry_run=dry_run, follow_links=follow_links, provenance=provenance)
    config = config or TransferConfig()
    if max_workers is not None:
        config = replace(config, max_workers=max_workers)
    entity_id, version = parse_entity_id(entity)
    own_platform = platform is None
    platform = platform or Platform(max_connections=config.max_workers)
    if not own_platform:
        platform.resize_pool(config.max_workers)
    started = time.monotonic()
    calls_before, retries_before, throttled_before = (platform.stats.calls, platform.stats.retries,
                                                      platform.stats.throttled)
    try:
        root = _root_header(platform, entity_id, version)
        target = TargetDirectory(Path(path), create=not options.dry_run)
        bar = _progress_bar(enabled=progress and not options.dry_run, description=root.name)
        with LocalIndex(target.root, read_only=options.dry_run) as index:
            run = _Run(platform=platform, config=config, target=target, index=index, root_id=entity_id,
                       options=options, observer=ObserverGroup([observer, bar]))
            _start(run, root, version)
            try:
                with platform.cancel_on(run.pool.cancel_event):  # REST retry waits stop when the run does
                    run.pool.run()
            finally:
                run.data_client.close()
                run.folders.close()
                if bar is not None:
                    bar.close()
            if run.pool.unexpected_errors:
                raise run.pool.unexpected_errors[0]
            if run.fatal is not None:  # finished files are indexed, partials kept: the same command resumes
                _finish_report(run, platform, started, (calls_before, retries_before, throttled_before))
                raise run.fatal
            if options.delete and root.type.is_container:
                run.delete_vanished()
            _finish_report(run, platform, started, (calls_before, retries_before, throttled_before))
            if options.dry_run:
                _estimate_from_history(run.plan, index)
                return run.plan
            if root.type.is_container:
                if options.manifest is not ManifestMode.SUPPRESS:
                    run.write_manifests()
                run.sweep_partials()
            run.report.manifest_errors = list(run.manifest_failures)
            if run.report.bytes_downloaded and run.report.wall_seconds > 0:
                index.set_meta("bytes_per_second", str(run.report.bytes_downloaded / run.report.wall_seconds))
                index.set_meta("files_per_second", str(max(run.report.downloaded, 1) / run.report.wall_seconds))
    finally:
        if own_platform:
            platform.close()
    results = SyncResults(run.results, run.report)
    if (results.failures or run.report.manifest_errors) and on_error == OnError.RAISE:
        raise SyncError(results.failures, results, problems=run.report.manifest_errors)
    return results


def _root_header(platform: Platform, entity_id: str, version: Optional[int]) -> EntityHeader:
    """The sync's root, checked before anything is written: a container or a file, and a version only of a file
    (one that exists: a missing version is as much a usage error as a missing id)."""
    root = platform.get_entity_header(entity_id)
    if not (root.type.is_container or root.type is EntityType.FILE):
        raise ConfigError(f"{entity_id} is a {root.type.name.lower()}; sync takes a project, folder or file")
    if version is not None:
        if root.type.is_container:
            raise ConfigError(f"{entity_id}.{version}: a {root.type.name.lower()} has no versions to choose from; "
                              f"sync {entity_id} without a version")
        platform.get_entity(entity_id, version=version)  # NotFoundError for a version that does not exist
    return root


def _progress_bar(*, enabled: bool, description: str):
    """A bar only where someone watches (terminal, notebook); the CLI brings its own display."""
    from synclient.progress import ProgressMode, choose_mode, progress_observer
    if enabled and choose_mode() is ProgressMode.BAR:
        return progress_observer(description=description)
    return None


def _start(run: _Run, root: EntityHeader, version: Optional[int]) -> None:
    if root.type.is_container:
        run.walker.walk(root, run.target.root)
        return
    if version is not None:
        root = replace(root, version_number=version)
    run.single_file = True
    run.files_found([FoundFile(root, run.target.child(run.target.root, root.name), root.name)])


def _finish_report(run: _Run, platform: Platform, started: float, before: Tuple[int, int, int]) -> None:
    report = run.report
    report.wall_seconds = time.monotonic() - started
    report.rest_calls = platform.stats.calls - before[0]
    report.retries = platform.stats.retries - before[1]
    report.throttled = platform.stats.throttled - before[2]


def _estimate_from_history(plan: SyncPlan, index: LocalIndex) -> None:
    for key, attribute in (("bytes_per_second", "bytes_per_second"), ("files_per_second", "files_per_second")):
        value = index.meta(key)
        if value:
            setattr(plan, attribute, float(value))


syncFromPlatform = sync_from_platform  # the name notebook users know from synapseutils.syncFromSynapse
