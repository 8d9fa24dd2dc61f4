"""One remote file's journey, from its listing page to its index row (see docs/architecture.md).

listing page -> the index fast path (same id + version, local stat untouched: no call at all) -> otherwise one
bundle call (entity + file handle + annotations) -> :class:`~synclient.sync.claims.PathClaims` settles the
planner's decision -> the run's :class:`~synclient.sync.effects.Effects` gets it (a dry run stops here) -> the
run's :class:`~synclient.transfer.fetcher.Fetcher` (synapseclient's cache, or a URL batch and the download strategy
for its size, on this pool or on a Dask cluster) -> an index row and a :class:`~synclient.results.FileResult`.
A view row's handle the fetch refuses gets its bundle's chance here (the bundle is the pipeline's).
Failures are per file: one file failing never stops the others (a fatal one stops the run: see the effects).
"""

from __future__ import annotations

import logging
import os
import posixpath
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import AbstractSet, Dict, List, Optional, Set, Tuple

from synclient.errors import (
    AccessDeniedError,
    LocalIOError,
    NotFoundError,
    PathConflictError,
    PlatformError,
    SynclientError,
    TransferCapReached,
)
from synclient.events import SyncObserver
from synclient.platform.models import EntityHeader, FileBundle, FileHandle
from synclient.platform.rest import Platform
from synclient.results import FROM_SYNAPSE_CACHE, LEFT_BY_CAP, FileResult, SyncStatus, Verification
from synclient.sync.claims import PathClaims
from synclient.sync.effects import Effects
from synclient.sync.local.local_names import LocalRename
from synclient.sync.local.paths import TargetDirectory
from synclient.sync.manifest_assembly import ManifestAssembly
from synclient.sync.options import SyncOptions
from synclient.sync.plan.dry_run import PlanEntry
from synclient.sync.plan.folder_bytes import FolderBytes, UnsizedFile, folder_of
from synclient.sync.plan.handle_names import HandleNames
from synclient.sync.plan.planner import Action, Decision, is_up_to_date, same_recorded_bytes
from synclient.sync.records.index import IndexRow, LocalIndex
from synclient.sync.records.manifest import ManifestRow, provenance_from_activity
from synclient.sync.sources.by_id import DescribedFiles, FileVersionFacts
from synclient.sync.sources.id_lists import ExpectedContent, ListMismatchError
from synclient.sync.sources.queries import FileRows
from synclient.sync.sources.walker import FoundFile
from synclient.transfer.fetcher import Fetcher, check_scheme
from synclient.transfer.jobs import FetchJob, FileFetched
from synclient.transfer.partial import LeftoverPartials, SymlinkFreeFolders, partial_key
from synclient.transfer.pool import Priority, TaskPool

log = logging.getLogger("synclient.sync")


@dataclass
class FileContext:
    """What the pipeline keeps about a file while its bytes are in flight."""

    rel_path: str
    action: Action
    parent_id: Optional[str]
    root_id: str  # the index row's owner (a single-file get into a synced tree keeps the tree's root)
    annotations: dict
    entity: Optional[dict]  # the entity's record, kept for the result when SyncOptions.entity_details asks
    file_handle: Optional[dict]  # and its data file handle's
    superseded: Optional[IndexRow] = None  # an earlier keep.both copy of this file, removed once it settles elsewhere
    displaced: Optional[IndexRow] = None  # another file's copy this file replaces: that row goes once this is in
    from_row: bool = False  # its handle is a view row's (no bundle call): the URL batch may find it replaced
    renamed: str = ""  # why its local name is not its remote name (local_names.py; "": it is)
    name: str = ""  # its remote name (the last of rel_path's names)
    modified_on: object = None  # its entity's modifiedOn (--order-by modtime)

    @property
    def details(self) -> dict:
        """What its :class:`~synclient.results.FileResult` carries beyond the effects (keyword arguments)."""
        return {
            "annotations": self.annotations,
            "entity": self.entity,
            "file_handle": self.file_handle,
            "renamed": self.renamed or None,
        }


def check_fetchable(entity_id: str, handle: FileHandle) -> None:
    """Raise when this file's bytes are where synclient cannot fetch them: an external URL of another scheme, or a
    platform handle that records no size (its bytes could not be checked)."""
    url = handle.external_url
    if url is None:
        if handle.content_size is None:
            raise PlatformError(f"{entity_id}: file handle {handle.id} has no contentSize; not supported")
        return
    check_scheme(entity_id, url)


def missing_handle_error(entity_id: str, bundle: FileBundle) -> SynclientError:
    """Why a file's bundle has no data file handle. Synapse answers ``fileHandles: []`` to a caller who may read
    the file but not download it (an access requirement not met, no DOWNLOAD permission): that is access denied,
    not a missing file. A file that names no handle at all is not found."""
    if bundle.entity.data_file_handle_id:
        return AccessDeniedError(
            f"{entity_id}: this user may read the file but not download it (the platform withholds its file handle)",
            status=403,
        )
    return NotFoundError(f"{entity_id} has no data file handle in its bundle")


class FilePipeline:
    """Takes each listed file through its stages on the shared pool. Thread-safe; one per run."""

    def __init__(
        self,
        *,
        platform: Platform,
        pool: TaskPool,
        fetcher: Fetcher,
        target: TargetDirectory,
        index: LocalIndex,
        root_id: str,
        options: SyncOptions,
        effects: Effects,
        claims: PathClaims,
        manifests: ManifestAssembly,
        folders: SymlinkFreeFolders,
        observer: SyncObserver,
        individual_files: AbstractSet[str] = frozenset(),
        described: Optional[DescribedFiles] = None,
        expected: Optional[ExpectedContent] = None,
        view: Optional[FileRows] = None,
        handle_names: Optional[HandleNames] = None,
        sizes: Optional[FolderBytes] = None,
    ) -> None:
        """``individual_files``: the remote paths of the files named one by one (a file root, the files of a list):
        each one's index row keeps an existing owner; the files of a walk (a list's folders included) are a
        tree's. ``described``: file versions whose handle the run already knows (a query's file-view rows), and
        ``view``: a file view's rows, read when first needed (a sync planned from a view): no bundle call for
        them. ``expected``: what a list's rows expect of their files' content (a manifest replayed): a file whose
        handle differs fails, before its download. ``handle_names``: files are named by
        their handles (handle_names.py), their bundles fetched for that. ``sizes``: a dry run's byte count from
        the listing (folder_bytes.py): a listed file absent locally is planned from its listing row, no call."""
        self._platform = platform
        self._pool = pool
        self._fetcher = fetcher  # the fetch stage: synapseclient's cache, URL batches, downloads, or a Dask cluster
        self._target = target
        self._index = index
        self._root_id = root_id
        self._options = options
        self._effects = effects
        self._claims = claims
        self._manifests = manifests
        self._folders = folders
        self._observer = observer
        self._individual_files = frozenset(individual_files)
        self._described: DescribedFiles = dict(described or {})
        self._expected: ExpectedContent = dict(expected or {})
        self._view = view
        self._handle_names = handle_names
        self._sizes = sizes
        self.size_age = claims.size_age  # (one judgement per run: ages count from its start)
        self.filtered_out = 0  # files the size and age filters left out (neither downloaded nor deleted)
        self.filtered_paths: Set[Path] = set()  # a dry run's: their local paths (check lists none as only local)
        self.listing_planned = 0  # files a dry run planned from their listing rows (the real run bundles each)
        self.size_bundles = 0  # bundle calls a dry run made for a byte count alone (the real run makes them anyway)
        self.seen: Set[str] = set()  # rel paths listed in this run (delete=True: the others vanished)
        self.renamed: List[LocalRename] = []  # files at (or planned to) another local name than their remote one
        self.placed: Dict[str, str] = {}  # remote path -> the local path its file is at (or a dry run puts it)
        self.filled: Set[str] = set()  # local folders (relative) that hold (or will hold) a file of this run
        self._failed_ids: Set[str] = set()  # entities that failed in this run (failures only: small)
        self.failed_partials: Set[Tuple[str, str]] = set()  # partial_key of failed files: the next run resumes
        self.leftovers = LeftoverPartials()
        # a dry run's sizes of files planned from the listing: one by one, and those of several in a folder together
        self.sizes: Dict[str, int] = {}
        self.bytes_of_several = 0
        # up-to-date keep.both copies (with their annotations' JSON), settled once all is decided
        self._held_copies: List[Tuple[FoundFile, IndexRow, Optional[str]]] = []
        self._lock = threading.Lock()

    # -- listing page -> fast path or bundle -------------------------------------------------------------------

    def files_found(self, files: List[FoundFile]) -> None:
        """One listing page's files: their index rows in one query, then each is up to date or needs its bundle."""
        if self._options.delete:
            with self._lock:
                self.seen.update(file.rel_path for file in files)
        rows = self._index.get_many([file.rel_path for file in files], with_annotations=True)
        for found in files:
            header, destination, rel_path, listed_in = found[:4]
            row, stored_annotations = rows.get(rel_path, (None, None))
            if self.size_age.active and self._filtered_by_listing(found, row):
                continue
            if (
                row is not None
                and self._listing_judges(found, row)
                and is_up_to_date(row, header, self._target.root)
                and not self._options.needs_bundle
                and not self._options.checksum  # (its bytes are hashed: the planner decides, on this pool)
            ):
                mismatch = self._mismatch(header, FileHandle(id="", content_size=row.size, content_md5=row.md5))
                if mismatch is not None:  # the local copy is the platform's, not the list's
                    self.entity_failed(header, None, mismatch)
                    continue
                self._size_known(found, row.size)
                named = rel_path in self._individual_files
                if row.root_id != self._root_id and row.root_id == row.entity_id and not named:
                    self._index.set_owner(rel_path, self._root_id)  # a single-file get's row joins the tree
                if row.local_path != self._target.relative(destination) and not named:
                    with self._lock:  # a keep.both copy: settled when every remote file has claimed its path
                        self._held_copies.append((found, row, stored_annotations))
                    continue
                self._effects.up_to_date(
                    row, annotations=stored_annotations, renamed=self._renaming(found, row.local_path)
                )
                continue
            known = self._described_file(header, listed_in)
            if known is not None:
                self._size_known(found, known.handle.content_size)
                self._pool.submit(Priority.BUNDLE, self._plan_file, found, row, known)
            elif self._decided_by_listing(found, row):
                self._plan_from_listing(found, row)
            else:
                self._pool.submit(Priority.BUNDLE, self._bundle, found, row)

    # -- the size and age filters ----------------------------------------------------------------------------------

    def _indexed_size(self, found: FoundFile, row: Optional[IndexRow]) -> Optional[int]:
        """The listed version's size when the index holds that version (None: its bundle or row will tell)."""
        header = found.header
        same = row is not None and row.entity_id == header.id and row.version == header.version_number
        return row.size if same and row is not None else None

    def _listing_judges(self, found: FoundFile, row: Optional[IndexRow]) -> bool:
        """The filters can judge this file from its listing and index row (else it takes the bundle path)."""
        judged = self.size_age
        if judged.judges_size and self._indexed_size(found, row) is None:
            return False
        return not judged.judges_age or found.header.modified_on is not None

    def _filtered_by_listing(self, found: FoundFile, row: Optional[IndexRow]) -> bool:
        """Left out by what the listing (``modifiedOn``) and the index (the version's size) already tell."""
        if not self.size_age.refuses_known(size=self._indexed_size(found, row), modified_on=found.header.modified_on):
            return False
        self._filtered(found)
        if self._sizes is not None and found.parent_id is not None:
            self._sizes.left_out(folder_of(found.rel_path))
        return True

    def _filtered(self, found: FoundFile) -> None:
        with self._lock:
            self.filtered_out += 1
            if not self._effects.writes:
                self.filtered_paths.add(found.destination)
        log.debug("left out by the size and age filters: %s", found.rel_path)

    # -- a dry run's files decided from the listing ----------------------------------------------------------------

    def _decided_by_listing(self, found: FoundFile, row: Optional[IndexRow]) -> bool:
        """A dry run needs no bundle to decide a listed file with nothing at its local path (and no keep.both copy
        of it elsewhere): the real run downloads it, whatever its bytes (the decision table's "absent" row)."""
        if self._sizes is None or found.parent_id is None or self._options.needs_bundle or self.size_age.judges_size:
            return False
        if self._options.max_transfer is not None:  # what fits under the cap needs each file's own size
            return False
        if row is not None and row.local_path != self._target.relative(found.destination):
            return False
        return not os.path.lexists(found.destination)

    def _plan_from_listing(self, found: FoundFile, row: Optional[IndexRow]) -> None:
        """Plan a download from the listing row: the version is the listing's, the size its folder's to tell."""
        assert self._sizes is not None  # (_decided_by_listing)
        header = found.header
        with self._lock:
            self.listing_planned += 1
        self._sizes.unsized(folder_of(found.rel_path), UnsizedFile(found.rel_path, header.id, header.version_number))
        unknown = FileHandle(id="", content_size=None, content_md5=None)  # (not read: nothing is at the path)
        self._plan_file(found, row, FileVersionFacts(unknown, header.version_number, found.parent_id), listed=True)

    def _size_known(self, found: FoundFile, size: Optional[int]) -> None:
        """A dry run's byte count: a listed file whose size is known one by one."""
        if self._sizes is not None and found.parent_id is not None:
            self._sizes.known(folder_of(found.rel_path), size)

    def size_unsized_files(self) -> None:
        """Pool idle check (a dry run): once every folder is listed and every file placed, the files planned from
        the listing whose folders cannot tell their sizes (folder_bytes.py) get them from their bundles."""
        if self._sizes is None or not self._sizes.pending() or self._pool.outstanding(*Priority):
            return
        settled = self._sizes.settle()
        with self._lock:
            self.sizes.update(settled.sizes)
            self.bytes_of_several += settled.bytes_of_several
        for file in settled.to_size:
            self._pool.submit(Priority.BUNDLE, self._size_from_bundle, file)

    def _size_from_bundle(self, file: UnsizedFile) -> None:
        """BUNDLE task: the size of a file planned from its listing (none if its bundle fails: the real run's
        own bundle call will say why)."""
        with self._lock:
            self.size_bundles += 1
        try:
            handle = self._platform.get_file_bundle(file.entity_id, version=file.version).file_handle
        except SynclientError as exc:
            log.debug("dry run: no size for %s: %s", file.rel_path, exc)
            return
        if handle is not None and handle.content_size is not None:
            with self._lock:
                self.sizes[file.rel_path] = handle.content_size

    def _described_file(self, header: EntityHeader, listed_in: Optional[str]) -> Optional[FileVersionFacts]:
        """What a view's row says of this file version, if anything (the folder it was listed in is its parent: a
        row that lags behind a move must not say otherwise)."""
        key = (header.id, header.version_number)
        if self._options.needs_bundle:  # only a bundle's own facts, made before the run (keep_paths), then
            made = self._described.get(key)
            return made if made is not None and made.entity is not None and not made.from_row else None
        known = self._described.get(key) or (self._view.get(*key) if self._view is not None else None)
        if known is not None and listed_in is not None and known.parent_id != listed_in:
            known = replace(known, parent_id=listed_in)
        return known

    def _mismatch(self, header: EntityHeader, handle: FileHandle) -> Optional[ListMismatchError]:
        """Why this file version is not the content its list's row expects (a manifest replayed), if so."""
        if not self._expected:
            return None
        expected = self._expected.get((header.id, header.version_number)) or self._expected.get((header.id, None))
        if expected is None:
            return None
        version = header.version_number
        return expected.mismatch(header.id if version is None else f"{header.id}.{version}", handle)

    def settle_held_copies(self) -> None:
        """Pool idle check: once nothing else runs, each up-to-date keep.both copy is either still its file's
        (skipped) or a remote file of its name took the path in this run, and its file is decided again."""
        if not self._held_copies or self._pool.outstanding(*Priority):
            return
        with self._lock:
            held, self._held_copies = self._held_copies, []
        for found, row, stored_annotations in held:
            if self._claims.is_displaced(row.local_path):
                self._pool.submit(Priority.BUNDLE, self._bundle, found, row, False)
                continue
            try:
                # (a remote file of its name that failed before it could displace it: the copy stays in place)
                self._claims.claim(self._target.root / row.local_path, row.entity_id, unless_failed=self._failed_ids)
            except PathConflictError as exc:
                self.entity_failed(found.header, found.destination, exc)
                continue
            self._effects.up_to_date(row, annotations=stored_annotations, renamed=self._renaming(found, row.local_path))

    def _note_placed(self, rel_path: str, local_path: str) -> None:
        """Where the file of the entry at remote path ``rel_path`` is (or a dry run puts it): what a list's renaming
        reports."""
        with self._lock:
            self.placed[rel_path] = local_path

    def _renaming(self, found: FoundFile, local_path: Optional[str]) -> str:
        """Why ``found``'s local name is not its remote one, if the file is (or a dry run would put it) at the name
        it was given for that reason (``local_path``: where it is or goes; None: nowhere), reported once; else ""
        (it stays where it is: a name mapped for this filesystem that its file does not have is no renaming).
        Notes the folder the file is in (a renamed folder is reported when a file of the run is in it)."""
        if local_path is not None:
            self._note_placed(found.rel_path, local_path)
            folder = posixpath.dirname(local_path)
            if folder not in self.filled:
                with self._lock:
                    self.filled.add(folder)
        if not found.renamed or local_path is None or local_path != self._target.relative(found.destination):
            return ""
        renamed = LocalRename(found.header.id, found.rel_path, local_path, found.renamed)
        with self._lock:
            self.renamed.append(renamed)
        log.warning("local name: %s", renamed)
        return found.renamed

    # -- bundle -> decision ------------------------------------------------------------------------------------

    def _bundle(self, found: FoundFile, row: Optional[IndexRow], sizes_it: bool = True) -> None:
        """BUNDLE task: the file's bundle, then its plan (``sizes_it``: its size is not yet known to the dry run's
        byte count)."""
        header = found.header
        try:
            # annotations always: they cost nothing in this call, and every result and index row carries them
            # (a file named by its handle had its bundle fetched when its folder was listed: handle_names.py)
            bundle = (
                self._handle_names.take(header.id, header.version_number) if self._handle_names else None
            ) or self._platform.get_file_bundle(header.id, version=header.version_number, include_annotations=True)
            if bundle.file_handle is None:
                raise missing_handle_error(header.id, bundle)
        except SynclientError as exc:
            if sizes_it and self._sizes is not None and found.parent_id is not None:
                self._sizes.left_out(folder_of(found.rel_path))
            self.entity_failed(header, found.destination, exc)
            return
        if sizes_it:
            self._size_known(found, bundle.file_handle.content_size)
        self._plan_file(
            found,
            row,
            FileVersionFacts(
                bundle.file_handle,
                bundle.entity.version_number,
                bundle.entity.parent_id,
                (bundle.annotations or {}).get("annotations") or {},
                bundle.entity.raw,
            ),
        )

    def _plan_file(
        self, found: FoundFile, row: Optional[IndexRow], known: FileVersionFacts, *, listed: bool = False
    ) -> None:
        """A file version's action, from what its bundle (or its view row, then as a BUNDLE task) says of it
        (``listed``: a dry run's file planned from its listing row; its handle is not known)."""
        header, destination, rel_path = found.header, found.destination, found.rel_path
        handle = known.handle
        # the freshest word first: the bundle's entity, the listing; a view's row may lag behind both
        modified_on = (known.entity or {}).get("modifiedOn") or header.modified_on or known.modified_on
        if not listed and not self.size_age.wants(size=handle.content_size, modified_on=modified_on):
            self._filtered(found)  # (no URL, no download: it goes no further)
            return
        try:
            if not listed:
                check_fetchable(header.id, handle)
                mismatch = self._mismatch(header, handle)
                if mismatch is not None:
                    raise mismatch
            self._target.check_file_destination(destination, self._folders)
            if self._options.provenance:
                self._manifests.add_provenance(
                    rel_path, provenance_from_activity(self._platform.get_activity(header.id, version=known.version))
                )
            copy = row if row is not None and row.local_path != self._target.relative(destination) else None
            if copy is not None and self._claims.copy_name_taken(copy, destination.parent, known.parent_id):
                row = copy = None  # that name is a remote entity's now: this file gets another copy name
            decision, displaced = self._claims.place(
                destination, rel_path, handle, row, copy, known.parent_id, header.id
            )
        except SynclientError as exc:
            self.entity_failed(header, destination, exc)
            return
        except OSError as exc:
            self.entity_failed(header, destination, LocalIOError.from_exception(f"cannot read {destination}", exc))
            return
        annotations = known.annotations
        version = known.version
        owner = row.root_id if (rel_path in self._individual_files and row is not None) else self._root_id
        superseded = copy if copy is not None and decision.destination != self._target.root / copy.local_path else None
        if decision.action is Action.REPAIR:
            log.warning("repair: %s: %s", rel_path, decision.reason)
        self._note_placed(rel_path, self._target.relative(decision.destination))  # (the file kept, or the remote's)
        renamed = self._renaming(
            found,
            None
            if decision.action is Action.KEEP_LOCAL  # (the remote is not there)
            else self._target.relative(decision.destination),
        )
        # a file named by its handle is listed in manifests under its entity's name, as synapseclient lists it
        entity_name = (known.entity or {}).get("name") if self._handle_names is not None else None
        if isinstance(entity_name, str) and entity_name != header.name:
            self._manifests.entity_names[rel_path] = entity_name
        details = self._options.entity_details
        context = FileContext(
            rel_path,
            decision.action,
            known.parent_id,
            owner,
            annotations,
            entity=known.entity if details else None,
            file_handle=handle.raw if details else None,
            superseded=superseded,
            displaced=displaced,
            from_row=known.from_row,
            renamed=renamed,
            name=self._manifests.entity_names.get(rel_path, header.name),
            modified_on=modified_on,
        )
        entry = PlanEntry(
            rel_path,
            header.id,
            version,
            handle.content_size,
            decision.action,
            decision.destination,
            context.entity,
            context.file_handle,
            annotations if self._options.entity_details else None,
        )
        self._effects.decided(entry, lambda: self._carry_out(header.id, version, handle, decision, context))

    def _carry_out(
        self, entity_id: str, version: Optional[int], handle: FileHandle, decision: Decision, context: FileContext
    ) -> None:
        if decision.action is not Action.KEEP_LOCAL:  # settled now: older partials of it can never resume
            self.leftovers.discard(decision.destination, keep_handle=handle.id if decision.action.fetches else None)
        if not decision.action.fetches:
            self._kept(entity_id, version, handle, decision, context)
            return
        order_by = self._options.order_by
        order = (
            order_by.sort_key(size=handle.content_size, rel_path=context.rel_path, modified_on=context.modified_on)
            if order_by is not None
            else None
        )
        job = FetchJob(entity_id, version, handle, decision.destination, order=order)
        self._observer.file_planned(job.planned)
        self._fetch(job, context)

    # -- no fetch: skip, adopt, keep ----------------------------------------------------------------------------

    def _kept(
        self, entity_id: str, version: Optional[int], handle: FileHandle, decision: Decision, context: FileContext
    ) -> None:
        """SKIP / ADOPT: the local bytes are the remote bytes (index it); KEEP_LOCAL: a conflict left alone."""
        result = FileResult(
            entity_id,
            version,
            decision.destination,
            handle.content_size,
            handle.content_md5,
            SyncStatus.SKIPPED,
            action=decision.action.value,
            **context.details,
        )
        if decision.action is Action.KEEP_LOCAL:  # not indexed (the bytes are not the remote's): listed as is
            if not decision.destination.is_file() or decision.destination.is_symlink():
                self._effects.finished(result)  # a folder or symlink kept in the way: no file to list
                return
            self._manifests.add_unindexed(
                ManifestRow(
                    decision.destination,
                    context.parent_id,
                    context.name,
                    entity_id,
                    handle.content_type,
                    context.annotations,
                    self._manifests.provenance_of(context.rel_path),
                )
            )
            self._effects.finished(result)
            return
        try:
            self._index_file(entity_id, version, handle, decision.destination, context)
        except OSError as exc:  # changed or gone since it was checked: not this run's to index
            self._effects.finished(
                FileResult(
                    entity_id,
                    version,
                    decision.destination,
                    handle.content_size,
                    handle.content_md5,
                    SyncStatus.FAILED,
                    LocalIOError.from_exception(f"cannot stat {decision.destination}", exc),
                    action=decision.action.value,
                    **context.details,
                )
            )
            return
        self._drop_superseded(context)
        self._effects.finished(result, manifest_path=context.rel_path)

    # -- fetch -> index ---------------------------------------------------------------------------------------------

    def _fetch(self, job: FetchJob, context: FileContext) -> None:
        self._fetcher.fetch(job, lambda fetched: self._fetched(job, context, fetched))

    def _fetched(self, job: FetchJob, context: FileContext, fetched: FileFetched) -> None:
        """The fetch stage's word on a file: installed, verified (or failed, its partial kept), unless a view row's
        refused handle gets its bundle's chance."""
        if self._bundle_retried(job, context, fetched.error):
            return
        self._downloaded(job, context, fetched)

    def _bundle_retried(self, job: FetchJob, context: FileContext, error: Optional[SynclientError]) -> bool:
        """A view row's handle refused (access denied, not found) gets one more chance, from the bundle: True when
        that was submitted (once: the bundle's word is final)."""
        if not (isinstance(error, (AccessDeniedError, NotFoundError)) and context.from_row):
            return False
        context.from_row = False
        self._pool.submit(Priority.BUNDLE, self._handle_from_bundle, job, context, error)
        return True

    def _handle_from_bundle(self, job: FetchJob, context: FileContext, refused: SynclientError) -> None:
        """BUNDLE task: the fetch refused a view row's handle. A view lags behind a handle replaced in place
        (Synapse allows that only for the same bytes): the bundle's handle is fetched instead when it holds the
        bytes the file was decided on; otherwise the refusal stands."""
        try:
            handle = self._platform.get_file_bundle(job.entity_id, version=job.version).file_handle
        except SynclientError as exc:
            self._downloaded(job, context, FileFetched.of(job, exc))
            return
        if handle is None or handle.id == job.handle.id or not same_recorded_bytes(handle, job.handle):
            self._downloaded(job, context, FileFetched.of(job, refused))
            return
        log.info(
            "%s: the file view's row names file handle %s, now %s (the same bytes)",
            job.entity_id,
            job.handle.id,
            handle.id,
        )
        self._fetch(job.replaced(handle=handle), context)

    def _downloaded(self, job: FetchJob, context: FileContext, fetched: FileFetched) -> None:
        """The file is at its final path, verified (or failed, its partial kept): indexed and reported."""
        error = fetched.error
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
        action = FROM_SYNAPSE_CACHE if fetched.from_cache and error is None else context.action.value
        handle = job.handle
        if isinstance(error, TransferCapReached):  # left by --max-transfer, not failed: the next run goes on
            log.info("left by the transfer cap: %s", job.destination)
            result = FileResult(
                job.entity_id,
                job.version,
                job.destination,
                handle.content_size,
                handle.content_md5,
                SyncStatus.SKIPPED,
                action=LEFT_BY_CAP,
                **context.details,
            )
            self._effects.finished(result)
            return
        self._effects.finished(
            FileResult(
                job.entity_id,
                job.version,
                job.destination,
                handle.content_size if handle.content_size is not None else fetched.received if error is None else None,
                handle.content_md5,
                status,
                error,
                action=action,
                verification=None if error else Verification.of(handle.content_md5, handle.content_size),
                **context.details,
            ),
            manifest_path=context.rel_path if error is None else None,
            reused=fetched.reused,
        )

    def _drop_superseded(self, context: FileContext) -> None:
        """A file now at another path than its earlier keep.both copy: the untouched copy goes (the index can point
        to one place per file, and an unindexed copy would read as the user's for good)."""
        if context.displaced is not None:  # the copy this file replaced is no longer where its row says
            self._index.forget(context.displaced.rel_path, only_at=context.displaced.local_path)
        copy = context.superseded
        if copy is None or self._claims.is_abandoned(copy.local_path):  # a given-up copy belongs to its new owner
            return
        removal = self._effects.remove_indexed(copy)
        if removal is not None and removal.action is Action.DELETE and removal.error is None:
            log.info("removed %s, the earlier keep.both copy of %s", copy.local_path, context.rel_path)

    def _index_file(
        self, entity_id: str, version: Optional[int], handle: FileHandle, local: Path, context: FileContext
    ) -> None:
        info = os.lstat(local)
        self._index.record(
            IndexRow(
                rel_path=context.rel_path,
                local_path=self._target.relative(local),
                root_id=context.root_id,
                entity_id=entity_id,
                version=version,
                file_handle_id=handle.id,
                md5=(handle.content_md5 or "").lower() or None,
                size=handle.content_size if handle.content_size is not None else info.st_size,
                content_type=handle.content_type,
                parent_id=context.parent_id,
                local_size=info.st_size,
                mtime_ns=info.st_mtime_ns,
            ),
            annotations=context.annotations,
        )

    def partials_to_keep(self) -> Set[Tuple[str, str]]:
        """The partial downloads of files that failed in this run: the next run resumes them."""
        with self._lock:
            return set(self.failed_partials)

    # -- failures -------------------------------------------------------------------------------------------------

    def entity_failed(self, header: EntityHeader, path: Optional[Path], error: SynclientError) -> None:
        """A file (or a folder, from the walker) that could not be planned or fetched."""
        with self._lock:
            self._failed_ids.add(header.id)
        if path is not None:  # a partial of it (an earlier run's) stays for the run that gets further
            with self._lock:
                self.failed_partials.add(partial_key(path))
        self._effects.finished(FileResult(header.id, header.version_number, path, None, None, SyncStatus.FAILED, error))
