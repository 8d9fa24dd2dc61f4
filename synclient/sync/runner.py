"""One sync, start to end: validate the request, resolve its source, build the run, run it on the shared pool,
report.

The public functions (:func:`sync_from_platform`, :func:`download_many`, :func:`download_query`) read as those
steps: their keywords checked once into :class:`RunSettings` (the option keywords against
:class:`~synclient.sync.options.SyncOptions`), what they name resolved into one typed source
(:mod:`synclient.sync.sources.resolve`: a tree, a file, a list, files given), then one run of it. :class:`SyncRun`
is the wiring, built from that source: one :class:`~synclient.transfer.pool.TaskPool` shared by the walker
(listings), the per-file pipeline (bundles, URL batches, downloads, parts) and the downloader, around one target
directory and its index. The rooms around it:

- :mod:`synclient.sync.pipeline` -- one file's journey from its listing page to its index row;
- :mod:`synclient.sync.claims` -- which local path each file gets when something is in the way;
- :mod:`synclient.sync.effects` -- a real run records, a dry run plans (one interface, two implementations);
- :mod:`synclient.sync.deletion`, :mod:`synclient.sync.manifest_assembly`, :mod:`synclient.sync.leftovers` --
  what happens after the walk: vanished files, manifests, partial downloads no run will resume.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import math
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Set,
    Tuple,
    Union,
    overload,
)

from synclient.errors import ConfigError, ErrorNature, LocalIOError, PathConflictError, SyncError, SynclientError
from synclient.events import ObserverGroup, SyncObserver
from synclient.platform.models import EntityHeader, parse_entity_id
from synclient.platform.rest import Platform
from synclient.results import SyncResults, WorkerCounts
from synclient.synapse_cache import SynapseCache, cache_root_of
from synclient.sync.claims import PathClaims
from synclient.sync.deletion import delete_vanished
from synclient.sync.effects import AppliedEffects, Effects, PlannedEffects
from synclient.sync.leftovers import sweep_run_partials
from synclient.sync.local.local_names import FilesystemNames, LocalRename, Renaming
from synclient.sync.local.name_gate import NameGate, PathRegistry, RemotePath
from synclient.sync.local.paths import RESERVED_NAME, TargetDirectory
from synclient.sync.manifest_assembly import ManifestAssembly
from synclient.sync.options import OnError, SyncOptions
from synclient.sync.pipeline import FilePipeline
from synclient.sync.plan.dry_run import DEFAULT_SECONDS_PER_CALL, SYNAPSE_CONCURRENCY, CallLimits, PlanEntry, SyncPlan
from synclient.sync.plan.filters import Age
from synclient.sync.plan.folder_bytes import FolderBytes
from synclient.sync.plan.handle_names import FileNames, HandleNames, named_file
from synclient.sync.records.index import LocalIndex
from synclient.sync.sources.auto_view import AutoView, AutoViewRequest, auto_view_for
from synclient.sync.sources.by_id import Layout, Renamed
from synclient.sync.sources.id_lists import EntityRef
from synclient.sync.sources.kept_paths import kept_paths_of
from synclient.sync.sources.queries import FileRows, ViewRows, table_of
from synclient.sync.sources.resolve import (
    LIST_ROOT,
    FileSource,
    GivenFiles,
    ListSource,
    RunSource,
    TreeSource,
    resolve_entity,
    resolve_ids,
    resolve_query,
)
from synclient.sync.sources.walker import FoundFile, TreeWalker
from synclient.transfer.cap import forecast
from synclient.transfer.config import TransferConfig
from synclient.transfer.fetcher import DataPlane
from synclient.transfer.pool import TaskPool

if TYPE_CHECKING:
    from typing import Literal, TypedDict

    from typing_extensions import Unpack

    from synclient.cluster.driver import DaskFetcher, DaskSettings
    from synclient.progress import ProgressDisplay
    from synclient.sync.plan.plan_progress import PlanProgress

__all__ = [
    "LIST_ROOT",
    "ReportBaseline",
    "RunSettings",
    "SyncRun",
    "download_many",
    "download_query",
    "is_fatal",
    "run_pool",
    "syncFromPlatform",
    "sync_found_files",
    "sync_from_platform",
    "sync_source",
]

log = logging.getLogger("synclient.sync")


def is_fatal(error: Optional[SynclientError], target_root: Path) -> bool:
    """Errors that every remaining file would meet too (:attr:`ErrorNature.FATAL`: the token turned invalid, the
    disk is full or read-only, ...), and a permission error once the target itself is no longer writable. One of
    them cancels the run instead of failing files one at a time."""
    if error is None:
        return False
    if error.nature is ErrorNature.FATAL:
        return True
    return (
        isinstance(error, LocalIOError)
        and not isinstance(error, PathConflictError)
        and getattr(error, "errno", None) in (errno.EACCES, errno.EPERM)
        and not os.access(target_root, os.W_OK | os.X_OK)
    )


@dataclass(frozen=True)
class _CallCounts:
    calls: int
    retries: int
    throttled: int
    seconds: float = 0.0  # the calls' time from sending to the answer read

    @classmethod
    def of(cls, platform: Platform) -> _CallCounts:
        stats = platform.stats
        return cls(stats.calls, stats.retries, stats.throttled, stats.seconds)


_FILES_PER_BATCH = 500  # a listed page's worth: one index query each


@dataclass(frozen=True)
class ReportBaseline:
    """When a run started and the platform's counters then: its report's time and calls count from here (from
    before its source was resolved: the root's calls are the run's too)."""

    started: float
    before: _CallCounts

    @classmethod
    def start(cls, platform: Platform) -> ReportBaseline:
        return cls(time.monotonic(), _CallCounts.of(platform))


def run_pool(platform: Platform, config: TransferConfig) -> TaskPool:
    """The one pool of a run: listings, bundles, URL batches, downloads (and a Dask fetcher's deliveries)."""
    return TaskPool(
        config.max_workers, backlog_high_water=config.listing_backlog, control_plane_limit=lambda: platform.gate.limit
    )


class SyncRun:
    """The wiring of one sync: every piece built once, around one target and its index, sharing one pool, from
    one typed source (:mod:`synclient.sync.sources.resolve`). Everything the run knows before it starts is given
    here; nothing is set on its pieces afterwards."""

    def __init__(
        self,
        *,
        platform: Platform,
        config: TransferConfig,
        target: TargetDirectory,
        index: LocalIndex,
        source: RunSource,
        options: SyncOptions,
        observer: SyncObserver,
        pool: TaskPool,
        names: FilesystemNames = FilesystemNames(),
        view: Optional[FileRows] = None,
        remote: Optional[DaskFetcher] = None,
        on_planned: Optional[Callable[[PlanEntry], None]] = None,
    ) -> None:
        """``view``: a file view's rows standing in for bundle calls; ``remote``: the fetcher of a Dask cluster
        (None: this pool fetches); ``on_planned``: told each entry of a dry run's plan as it is planned."""
        self.platform = platform
        self.config = config
        self.names = names  # what the target's filesystem does with names (local_names.py)
        self.target = target
        self.index = index
        self.source = source
        self.root_id = source.root_id
        self.options = options
        self.pool = pool
        # a dry run's byte count from the listings (a listed file absent locally is planned with no call)
        self.sizes = FolderBytes() if options.dry_run and not options.needs_bundle else None
        self.effects: Effects = (
            PlannedEffects(target=target, index=index, plan=SyncPlan(on_entry=on_planned))
            if options.dry_run
            else AppliedEffects(
                target=target,
                index=index,
                observer=observer,
                is_fatal=lambda error: is_fatal(error, target.root),
                on_fatal=lambda: self.pool.cancel(grace_seconds=0),
                list_in_manifest=options.wants_manifest,
            )
        )
        # synapseclient's cache, when it is wanted and this machine has one (found once: the names and the fetches
        # below read it; a dry run reads names from it, and copies and records nothing)
        cache_root = options.synapse_cache if isinstance(options.synapse_cache, Path) else None
        synapse_cache = SynapseCache.if_present(cache_root) if options.synapse_cache else None
        # files named by their handles, as synapseclient names them (the drop-ins): handle_names.py
        self.handle_names = (
            HandleNames(platform, synapse_cache, fetches=config.max_workers)
            if options.file_names is FileNames.HANDLE
            else None
        )
        # the source's files, named: a list's entries against this target's index, a file root as the run names
        # files (by its handle's name: one bundle call, kept for the pipeline), files given as they are
        # the one way from a remote name to a local path, and the run's one registry of local paths
        self.gate = NameGate(target, names, PathRegistry(names))
        self.layout = Layout()  # a list's entries at their paths, its renamings and refusals (others: empty)
        self._files: List[Tuple[EntityHeader, Union[RemotePath, str]]] = []  # files that go straight to the pipeline
        described = source.described if isinstance(source, ListSource) else None
        self.plan_refused: List[Tuple[EntityHeader, SynclientError]] = []  # a list's ids that did not resolve
        self.kept_flat: List[str] = []  # keep_paths: the files that land flat, one line each
        if isinstance(source, ListSource):
            plan = source.plan
            if options.keep_paths:  # each file at its remote path: its parent learnt with no call a flat list avoids
                kept = kept_paths_of(
                    plan,
                    platform=platform,
                    index=index,
                    root_id=source.root_id,
                    described=source.described,
                    fetches=config.max_workers,
                    view=view.get if view is not None and not options.needs_bundle else None,
                    # (a folder the disk cannot hold: its files land flat)
                    local_path=lambda folder, name: self.gate.path(target.root if folder is None else folder, name),
                )
                plan, described = kept.plan, {**source.described, **kept.described}
                self.kept_flat = kept.notes  # (reported with the renamings: each file is not at its remote path)
                for note in kept.notes:
                    log.warning("keep paths: %s", note)
            self.plan_refused = plan.refused  # (with keep_paths, files whose bundles failed too)
            self.layout = plan.laid_out(
                index.rows_in,
                same_name=lambda name: names.same_name_key(names.legal_form(name)),
                reserved=((RESERVED_NAME,) if names.maps_names else ()) + source.reserved,
            )
        elif isinstance(source, FileSource):
            root = named_file(self.handle_names, source.root)
            self._files = [(root, root.name)]
        elif isinstance(source, GivenFiles):
            self._files = list(source.files)
        self.renamed: List[Renamed] = self.layout.renamed  # a list's entries given another name than their own
        self.listed_files: Set[str] = {remote.text for _, remote in self.layout.files}  # a list's files' paths
        self.renamed_locally: List[LocalRename] = []  # a list's folders the local filesystem cannot hold as named
        # the data plane (URL batches, data connections, folder checks, downloads), closed when the run ends
        self.cap = options.transfer_cap() if not options.dry_run else None  # --max-transfer: every download's bytes
        self.data_plane = DataPlane.build(
            platform=platform, pool=self.pool, config=config, observer=observer, cap=self.cap
        )
        self.folders = self.data_plane.folders  # the per-file folder checks
        kept_names: Dict[Path, Set[str]] = {}  # the walker's names kept in place, which keep.both copies avoid
        self.claims = PathClaims(
            platform=platform,
            target=target,
            index=index,
            options=options,
            effects=self.effects,
            names=names,
            registry=self.gate.registry,
            kept_names=kept_names,
        )
        self.manifests = ManifestAssembly(target=target, index=index, root_id=self.root_id, names=names)
        fetcher = self.data_plane.fetcher(
            remote=remote,
            synapse_cache=None if options.dry_run else synapse_cache,
            synapse_cache_link=options.synapse_cache_link,
        )
        self.pipeline = FilePipeline(
            platform=platform,
            pool=self.pool,
            fetcher=fetcher,
            target=target,
            index=index,
            root_id=self.root_id,
            options=options,
            effects=self.effects,
            claims=self.claims,
            manifests=self.manifests,
            folders=self.folders,
            observer=observer,
            individual_files=self._individual_files(),
            described=described,
            expected=source.expected if isinstance(source, ListSource) else None,
            view=view,
            handle_names=self.handle_names,
            sizes=self.sizes,
        )
        self.walker = TreeWalker(
            platform=platform,
            pool=self.pool,
            target=target,
            on_files=self.pipeline.files_found,
            on_failure=self.pipeline.entity_failed,
            path_filter=options.path_filter,
            follow_links=options.follow_links,
            make_room=self.claims.make_room,
            names=names,
            held_names=index.local_names_in if names.maps_names else None,
            gate=self.gate,
            file_names=self.handle_names,
            kept_names=kept_names,
            sizes=self.sizes,
        )
        self.pool.add_idle_check(self.pipeline.settle_held_copies)
        self.pool.add_idle_check(self.pipeline.size_unsized_files)

    def _individual_files(self) -> Set[str]:
        """The remote paths of the files named one by one (a file root, a list's files, files given): each index
        row keeps an existing owner."""
        files = self._files + list(self.layout.files)
        return {remote.text if isinstance(remote, RemotePath) else remote for _, remote in files}

    def _start(self) -> None:
        """The source's files to the pool: a container is walked; a file root, a list's files and files given go
        straight to the pipeline (each row keeps an existing owner); a list's containers are walked."""
        source = self.source
        if isinstance(source, TreeSource):
            self.walker.walk(source.root, self.target.root)
        elif isinstance(source, ListSource):
            self._start_list(source)
        else:
            # a name that can be no local name fails that file, as in a walk; the filters are for what a walk finds
            self._start_files(self._files, filtered=isinstance(source, GivenFiles))

    def _start_files(
        self, files: Sequence[Tuple[EntityHeader, Union[RemotePath, str]]], *, filtered: bool = True
    ) -> None:
        """A list of files, each at its own path under the target (a :class:`RemotePath`, or one name), placed by
        the name gate (its folders made, each name in the form the local filesystem can hold; twins among a list's
        entries are its own renamings', sources/by_id.py): straight to the pipeline, as a file root is. A name that
        can be no local name fails its file alone."""
        wanted = []
        for header, remote in files:
            try:
                remote = remote if isinstance(remote, RemotePath) else RemotePath((remote,))
            except SynclientError as exc:
                self.pipeline.entity_failed(header, None, exc)
                continue
            if not filtered or self.options.path_filter.wants_file(remote.text):
                wanted.append((header, remote))
        found = []
        for header, remote in wanted:
            try:
                placed = self.gate.place_file(remote, header.id)
                found.append(FoundFile(header, placed.path, remote.text, None, placed.renamed))
            except SynclientError as exc:
                self.pipeline.entity_failed(header, None, exc)
        for start in range(0, len(found), _FILES_PER_BATCH):
            self.pipeline.files_found(found[start : start + _FILES_PER_BATCH])

    def _start_list(self, source: ListSource) -> None:
        """A list of ids, a dataset or a collection (:mod:`synclient.sync.sources.by_id`), named against this
        target's index: what failed to resolve is reported, each project or folder is walked into its own
        sub-folder, the files go as :meth:`_start_files`."""
        layout = self.layout
        for header, error in list(self.plan_refused) + layout.refused:
            self.pipeline.entity_failed(header, None, error)
        refused_folders = set()
        for holder in layout.folders:  # a dataset's (collection's) folder is its own: no other entity's path
            try:
                self.gate.claim_folders(holder.remote, holder.header.id)
            except SynclientError as exc:
                refused_folders.add(holder.remote)
                self.pipeline.entity_failed(holder.header, None, exc)
        self._start_files(
            [
                (header, remote)
                for header, remote in layout.files
                if not any(remote.names[: len(f.names)] == f.names for f in refused_folders)
            ]
        )
        for container in layout.containers:
            try:
                self.gate.claim_folders(container.remote, container.header.id)
                folder = self.gate.folders(container.remote)
            except SynclientError as exc:
                self.walker.unvisited.add(container.rel_dir)
                self.pipeline.entity_failed(container.header, None, exc)
                continue
            if self.target.relative(folder) != container.rel_dir:  # a name the filesystem cannot hold as it is
                renamed = LocalRename(
                    container.header.id, container.rel_dir, self.target.relative(folder), Renaming.WINDOWS.value
                )
                self.renamed_locally.append(renamed)
                log.warning("local name: %s", renamed)
            self.walker.walk(container.header, folder, remote=container.remote)

    def run(self) -> None:
        """The source's files to the pool (:meth:`_start`), then every task to its end (or the run's cancellation).
        The data connections and the folder checks' descriptors are closed either way, a start that failed
        included."""
        try:
            self._start()
            with self.platform.cancel_on(self.pool.cancel_event):  # REST retry waits stop when the run does
                self.pool.run()
        finally:
            self.data_plane.close()
        if self.pool.unexpected_errors:
            raise self.pool.unexpected_errors[0]

    def delete_vanished(self) -> None:
        """``delete=True``, once the whole tree is listed: files synclient wrote that the remote no longer has."""
        delete_vanished(
            target=self.target,
            index=self.index,
            root_id=self.root_id,
            path_filter=self.options.path_filter,
            seen=self.pipeline.seen,
            unvisited=self.walker.unvisited,
            handled=self.claims.handled,
            # folders by remote path and by local path (deletion tidies folders by where they are)
            listed=set(self.walker.listed) | {self.target.relative(p) for p in self.walker.listed.values()},
            dry_run=not self.effects.writes,
            report=self.effects.removed,
            size_age=self.pipeline.size_age,
        )

    @property
    def renamed_lines(self) -> List[str]:
        """The report's lines of every renaming: a list's entries whose names were taken, and names the local
        filesystem cannot hold as they are (a file's once it is, or a dry run would put it, at that name)."""
        folders = [entry for entry in self.walker.renamed if self._is_there(entry)]
        # a list's renaming says where the entry is: its given name in the form the local filesystem holds it
        # (a file of the list that failed is at no name: nothing to report)
        listed = [
            replace(entry, given=self.pipeline.placed.get(entry.given, entry.given))
            for entry in self.renamed
            if entry.given in self.pipeline.placed or entry.given not in self.listed_files
        ]
        return (
            [str(entry) for entry in listed]
            + self.kept_flat
            + [str(entry) for entry in self.renamed_locally]
            + [str(entry) for entry in sorted(folders + self.pipeline.renamed, key=lambda r: r.remote_path)]
        )

    def _is_there(self, folder: LocalRename) -> bool:
        """A walked folder given another local name is at it for this run: a file of the run is (or a dry run would
        put it) in it, or the remote folder holds nothing (its files may stay where an earlier run put them)."""
        inside = folder.local_path + "/"
        return folder.remote_path not in self.walker.holding or any(
            filled == folder.local_path or filled.startswith(inside) for filled in self.pipeline.filled
        )

    def write_manifests_and_sweep(self, effects: AppliedEffects) -> None:
        """A real run's end (``effects``: its record): every folder's manifest, and the sweep of partial downloads
        no run will resume."""
        if self.options.wants_manifest:
            self.manifests.write(
                mode=self.options.manifest,
                listed_paths=effects.manifest_paths,
                manifest_taken=set(self.walker.manifest_taken),
                listed_folders=self.walker.listed,
                formats=self.options.manifest_formats,
            )
        sweep_run_partials(
            index=self.index,
            root_id=self.root_id,
            target_root=self.target.root,
            listed=self.walker.listed,
            unvisited=self.walker.unvisited,
            keep=self.pipeline.partials_to_keep(),
            path_filter=self.options.path_filter,
            size_age=self.pipeline.size_age,
        )


if TYPE_CHECKING:
    # The public functions' keywords besides ``dry_run`` and ``options``, for their overloads (a type checker then
    # knows what comes back: a SyncPlan for dry_run=True, SyncResults for dry_run=False or no dry run at all).
    class _RunKeywords(TypedDict, total=False):
        platform: Optional[Platform]
        config: Optional[TransferConfig]
        max_workers: Optional[int]
        observer: Optional[SyncObserver]
        on_error: Union[OnError, str, None]
        if_collision: Optional[str]
        include: Optional[Iterable[str]]
        exclude: Optional[Iterable[str]]
        min_size: Union[int, str, None]
        max_size: Union[int, str, None]
        min_age: Optional[Age]
        max_age: Optional[Age]
        order_by: Optional[str]
        follow_links: Optional[bool]
        provenance: Optional[bool]
        progress: Optional[bool]
        entity_details: Optional[bool]
        synapse_cache: Union[bool, str, Path, None]
        synapse_cache_link: Optional[bool]
        syn: Optional[object]
        filesystem_names: Union[FilesystemNames, str, None]
        dask: Optional[object]
        max_transfer: Union[int, str, None]
        cutoff_mode: Optional[str]

    class _SyncKeywords(_RunKeywords, total=False):
        delete: Optional[bool]
        manifest: Optional[str]
        view: Optional[str]
        scratch_project: Optional[str]
        file_names: Union[FileNames, str, None]
        checksum: Optional[bool]

    class _QueryKeywords(_RunKeywords, total=False):
        recursive: bool
        keep_paths: Optional[bool]

    class _IdsKeywords(_QueryKeywords, total=False):
        view: Optional[str]
        checksum: Optional[bool]


@dataclass(frozen=True)
class RunSettings:
    """What a public entry point was asked besides its source, validated once: the options (``options`` with each
    option keyword given on top), the transfer config, the observer, a file view's id and a Dask cluster."""

    options: SyncOptions
    config: TransferConfig
    observer: Optional[SyncObserver] = None
    view: Union[str, AutoViewRequest, None] = None  # a file view's id, without a version; or one to make
    cluster: Optional[DaskSettings] = None

    @classmethod
    def of(
        cls,
        options: Optional[SyncOptions],
        *,
        keywords: Optional[Mapping[str, object]] = None,
        config: Optional[TransferConfig] = None,
        max_workers: Optional[int] = None,
        observer: Optional[SyncObserver] = None,
        view: Optional[str] = None,
        scratch_project: Optional[str] = None,
        dask: Optional[object] = None,
    ) -> RunSettings:
        """``options`` with the option keywords among ``keywords`` (a public function's ``locals()``: each named as
        the :class:`SyncOptions` field it overrides, None when not given) on top; ``config`` with ``max_workers``
        on top; ``dask`` and ``view`` checked now."""
        checked = SyncOptions.overridden(options, keywords or {})
        if checked.max_transfer is not None and dask is not None:
            raise ConfigError("max_transfer counts this process's downloads; it cannot be used with dask")
        config = config or TransferConfig()
        if max_workers is not None:
            config = replace(config, max_workers=max_workers)
        return cls(
            options=checked,
            config=config,
            observer=observer,
            cluster=_dask_settings(dask),
            view=_view_setting(view, scratch_project),
        )


@overload
def sync_from_platform(
    entity: str,
    path: Union[str, Path] = ...,
    *,
    dry_run: Literal[True],
    options: Optional[SyncOptions] = ...,
    **keywords: Unpack[_SyncKeywords],
) -> SyncPlan: ...
@overload
def sync_from_platform(
    entity: str,
    path: Union[str, Path] = ...,
    *,
    dry_run: Literal[False],
    options: Optional[SyncOptions] = ...,
    **keywords: Unpack[_SyncKeywords],
) -> SyncResults: ...
@overload
def sync_from_platform(
    entity: str,
    path: Union[str, Path] = ...,
    *,
    dry_run: None = ...,
    options: None = ...,
    **keywords: Unpack[_SyncKeywords],
) -> SyncResults: ...
@overload
def sync_from_platform(
    entity: str,
    path: Union[str, Path] = ...,
    *,
    dry_run: Optional[bool] = ...,
    options: Optional[SyncOptions] = ...,
    **keywords: Unpack[_SyncKeywords],
) -> Union[SyncResults, SyncPlan]: ...
def sync_from_platform(
    entity: str,
    path: Union[str, Path] = ".",
    *,
    platform: Optional[Platform] = None,
    options: Optional[SyncOptions] = None,
    config: Optional[TransferConfig] = None,
    max_workers: Optional[int] = None,
    observer: Optional[SyncObserver] = None,
    on_error: Union[OnError, str, None] = None,
    if_collision: Optional[str] = None,
    delete: Optional[bool] = None,
    manifest: Optional[str] = None,
    include: Optional[Iterable[str]] = None,
    exclude: Optional[Iterable[str]] = None,
    min_size: Union[int, str, None] = None,
    max_size: Union[int, str, None] = None,
    min_age: Optional[Age] = None,
    max_age: Optional[Age] = None,
    order_by: Optional[str] = None,
    dry_run: Optional[bool] = None,
    follow_links: Optional[bool] = None,
    provenance: Optional[bool] = None,
    progress: Optional[bool] = None,
    entity_details: Optional[bool] = None,
    synapse_cache: Union[bool, str, Path, None] = None,
    synapse_cache_link: Optional[bool] = None,
    syn: Optional[object] = None,
    view: Optional[str] = None,
    scratch_project: Optional[str] = None,
    filesystem_names: Union[FilesystemNames, str, None] = None,
    dask: Optional[object] = None,
    file_names: Union[FileNames, str, None] = None,
    checksum: Optional[bool] = None,
    max_transfer: Union[int, str, None] = None,
    cutoff_mode: Optional[str] = None,
) -> Union[SyncResults, SyncPlan]:
    """Mirror a project, folder or single file (``syn123``, ``syn123.4``) to ``path``.

    Each folder lands under its entity's name, and each file under its entity's name too: what the web shows, and
    unique within its folder (its file handle's ``fileName`` may differ, and two files of one folder may share
    one). ``file_names="handle"`` names each file by its handle's ``fileName`` instead, as synapseclient 4.14 does
    (the drop-ins ``syncFromSynapse`` / ``sync_from_synapse`` do: :mod:`synclient.sync.plan.handle_names`). Either
    name passes the same name gate (:mod:`synclient.sync.local.name_gate`).

    Returns one :class:`~synclient.results.FileResult` per file (``SyncResults``, with ``.report``), or with
    ``dry_run=True`` the :class:`~synclient.sync.plan.dry_run.SyncPlan` of what would happen, writing nothing. Raises
    :class:`~synclient.errors.SyncError` (with every result attached) when any file failed, unless
    ``on_error="continue"``. ``KeyboardInterrupt`` cancels promptly; finished files stay indexed and partial data
    stays for the next run.

    - ``options``: what to do (:class:`~synclient.sync.options.SyncOptions`: collisions, deletion, manifests,
      filters, dry run, links, provenance, errors, progress, synapseclient's cache). Each of those can also be
      given as a keyword of the same name (``delete=True``), which overrides the field of ``options``.
    - ``config``: how bytes move (:class:`~synclient.transfer.config.TransferConfig`); ``max_workers`` overrides
      its field of that name.
    - ``platform``: the :class:`~synclient.platform.rest.Platform` to use (default: endpoint and token from the
      environment, ``~/.synapseConfig`` or the keyring). ``syn=``: a logged-in ``synapseclient.Synapse`` instead,
      a shortcut for ``platform=Platform.from_synapseclient(syn)`` (its endpoints and login), which also shares
      that object's download cache (``syn.cache.cache_root_dir``) unless ``synapse_cache`` says otherwise.
    - ``observer``: receives every file's events (:mod:`synclient.events`), for your own display or report.
    - ``view``: a file view over the tree (``"syn456"``): one query reads what its rows say of every file, and a
      file whose listing shows the version its row describes takes no bundle call (the first sync of N files then
      costs about N/100 URL calls, not N bundle calls); the others (the view lags, or does not cover them) take
      theirs. Annotations then come from the view's annotation columns.
    - ``filesystem_names``: force what the target's filesystem does with names (``"case,nfd,windows"``; default: a
      probe of the target, see :mod:`synclient.sync.local.local_names`).
    - ``dask``: a ``distributed.Client`` (or :class:`~synclient.cluster.driver.DaskSettings`): this process plans
      and indexes, the cluster's workers fetch the files in shards, every process within one shared REST budget
      (docs/dask.md). The target must be a filesystem every worker sees at the same path.
    - ``checksum``: hash each local copy synclient wrote instead of trusting its size and modification time, and
      download again (action ``repair``) one whose bytes differ (:class:`~synclient.sync.options.SyncOptions`).
    - ``max_transfer`` / ``cutoff_mode``: stop after that many bytes downloaded (``"100G"``), ``hard`` | ``soft`` |
      ``cautious``: the files left are counted in ``results.report`` (``cap_reached``, ``left_files``,
      ``left_bytes``), not failed, and the same call later goes on (:mod:`synclient.transfer.cap`).
    - ``min_size``, ``max_size``, ``min_age``, ``max_age``: rclone's size and age filters (``"100k"``, ``"7d"``,
      ``"2026-01-01"``), by the file's size and its entity's ``modifiedOn``; ``order_by``: the order downloads
      start (``"size,descending"``). See :class:`~synclient.sync.options.SyncOptions`.
    """
    settings = RunSettings.of(
        options,
        keywords=locals(),
        config=config,
        max_workers=max_workers,
        observer=observer,
        view=view,
        scratch_project=scratch_project,
        dask=dask,
    )
    ref = EntityRef.parse(entity)
    return _resolve_and_run(
        lambda platform: resolve_entity(platform, ref), Path(path), platform=platform, syn=syn, settings=settings
    )


@overload
def download_many(
    ids: Iterable[Union[str, EntityRef]],
    path: Union[str, Path] = ...,
    *,
    dry_run: Literal[True],
    options: Optional[SyncOptions] = ...,
    **keywords: Unpack[_IdsKeywords],
) -> SyncPlan: ...
@overload
def download_many(
    ids: Iterable[Union[str, EntityRef]],
    path: Union[str, Path] = ...,
    *,
    dry_run: Literal[False],
    options: Optional[SyncOptions] = ...,
    **keywords: Unpack[_IdsKeywords],
) -> SyncResults: ...
@overload
def download_many(
    ids: Iterable[Union[str, EntityRef]],
    path: Union[str, Path] = ...,
    *,
    dry_run: None = ...,
    options: None = ...,
    **keywords: Unpack[_IdsKeywords],
) -> SyncResults: ...
@overload
def download_many(
    ids: Iterable[Union[str, EntityRef]],
    path: Union[str, Path] = ...,
    *,
    dry_run: Optional[bool] = ...,
    options: Optional[SyncOptions] = ...,
    **keywords: Unpack[_IdsKeywords],
) -> Union[SyncResults, SyncPlan]: ...
def download_many(
    ids: Iterable[Union[str, EntityRef]],
    path: Union[str, Path] = ".",
    *,
    recursive: bool = False,
    platform: Optional[Platform] = None,
    options: Optional[SyncOptions] = None,
    config: Optional[TransferConfig] = None,
    max_workers: Optional[int] = None,
    observer: Optional[SyncObserver] = None,
    on_error: Union[OnError, str, None] = None,
    if_collision: Optional[str] = None,
    include: Optional[Iterable[str]] = None,
    exclude: Optional[Iterable[str]] = None,
    min_size: Union[int, str, None] = None,
    max_size: Union[int, str, None] = None,
    min_age: Optional[Age] = None,
    max_age: Optional[Age] = None,
    order_by: Optional[str] = None,
    dry_run: Optional[bool] = None,
    follow_links: Optional[bool] = None,
    provenance: Optional[bool] = None,
    progress: Optional[bool] = None,
    entity_details: Optional[bool] = None,
    synapse_cache: Union[bool, str, Path, None] = None,
    synapse_cache_link: Optional[bool] = None,
    syn: Optional[object] = None,
    view: Optional[str] = None,
    filesystem_names: Union[FilesystemNames, str, None] = None,
    dask: Optional[object] = None,
    checksum: Optional[bool] = None,
    keep_paths: Optional[bool] = None,
    max_transfer: Union[int, str, None] = None,
    cutoff_mode: Optional[str] = None,
) -> Union[SyncResults, SyncPlan]:
    """Download every entity of ``ids`` (``"syn1"``, ``"syn2.3"``, or
    :class:`~synclient.sync.sources.id_lists.EntityRef`) into ``path`` as one run: one shared pool, URL batches of up to
    100 across all ids, one index, one report.

    Files land in ``path`` under their entity names; with ``recursive=True`` each project or folder is synced into a
    sub-folder named after it; a dataset's items (at their pinned versions) go into a sub-folder named after the
    dataset, a collection's datasets into sub-folders of the collection's. A single id fills ``path`` itself. Names
    that clash get the entity id (``a (syn456).csv``), reported in ``results.report.renamed``. Returns the same
    :class:`~synclient.results.SyncResults` (or, with ``dry_run``, :class:`~synclient.sync.plan.dry_run.SyncPlan`) as
    :func:`sync_from_platform`, whose keywords these are; nothing is deleted and no manifest is written, except when
    the only id is a project or folder (then this is :func:`sync_from_platform`'s sync of it, manifests included).
    ``view``: a file view over those files, and ``dask``: a Dask cluster to fetch them on, as for
    :func:`sync_from_platform`. ``keep_paths=True``: each file lands at its remote path instead,
    ``<project name>/<folder path>/<name>``, and each project or folder at its own
    (:mod:`synclient.sync.sources.kept_paths`).
    """
    settings = RunSettings.of(
        options, keywords=locals(), config=config, max_workers=max_workers, observer=observer, view=view, dask=dask
    )
    if isinstance(ids, (str, EntityRef)):  # one id given bare: a list of one, not a list of its characters
        ids = [ids]
    refs = [ref if isinstance(ref, EntityRef) else EntityRef.parse(ref) for ref in ids]
    if not refs:
        raise ConfigError("download_many needs at least one id")
    return _resolve_and_run(
        lambda platform: resolve_ids(platform, refs, recursive=recursive),
        Path(path),
        platform=platform,
        syn=syn,
        settings=settings,
    )


@overload
def download_query(
    sql: str,
    path: Union[str, Path] = ...,
    *,
    dry_run: Literal[True],
    options: Optional[SyncOptions] = ...,
    **keywords: Unpack[_QueryKeywords],
) -> SyncPlan: ...
@overload
def download_query(
    sql: str,
    path: Union[str, Path] = ...,
    *,
    dry_run: Literal[False],
    options: Optional[SyncOptions] = ...,
    **keywords: Unpack[_QueryKeywords],
) -> SyncResults: ...
@overload
def download_query(
    sql: str,
    path: Union[str, Path] = ...,
    *,
    dry_run: None = ...,
    options: None = ...,
    **keywords: Unpack[_QueryKeywords],
) -> SyncResults: ...
@overload
def download_query(
    sql: str,
    path: Union[str, Path] = ...,
    *,
    dry_run: Optional[bool] = ...,
    options: Optional[SyncOptions] = ...,
    **keywords: Unpack[_QueryKeywords],
) -> Union[SyncResults, SyncPlan]: ...
def download_query(
    sql: str,
    path: Union[str, Path] = ".",
    *,
    recursive: bool = False,
    platform: Optional[Platform] = None,
    options: Optional[SyncOptions] = None,
    config: Optional[TransferConfig] = None,
    max_workers: Optional[int] = None,
    observer: Optional[SyncObserver] = None,
    on_error: Union[OnError, str, None] = None,
    if_collision: Optional[str] = None,
    include: Optional[Iterable[str]] = None,
    exclude: Optional[Iterable[str]] = None,
    min_size: Union[int, str, None] = None,
    max_size: Union[int, str, None] = None,
    min_age: Optional[Age] = None,
    max_age: Optional[Age] = None,
    order_by: Optional[str] = None,
    dry_run: Optional[bool] = None,
    follow_links: Optional[bool] = None,
    provenance: Optional[bool] = None,
    progress: Optional[bool] = None,
    entity_details: Optional[bool] = None,
    synapse_cache: Union[bool, str, Path, None] = None,
    synapse_cache_link: Optional[bool] = None,
    syn: Optional[object] = None,
    filesystem_names: Union[FilesystemNames, str, None] = None,
    dask: Optional[object] = None,
    keep_paths: Optional[bool] = None,
    max_transfer: Union[int, str, None] = None,
    cutoff_mode: Optional[str] = None,
) -> Union[SyncResults, SyncPlan]:
    """Download what a SQL query over a file view or table selects (``SELECT id FROM syn123 WHERE ...``) into
    ``path``, as :func:`download_many` downloads a list of ids (its keywords are these): the query's ``id`` column
    names the entities, a ``currentVersion`` (or ``versionNumber``) column pins their versions, and every page of
    the query is read first. Files land in ``path`` under their names (with ``recursive=True``, a project or folder
    selected goes into a sub-folder of its name, whatever the number of rows). A file view's rows that carry
    ``dataFileHandleId``, ``dataFileMD5Hex`` and ``dataFileSizeBytes`` (its default columns) need no bundle call
    per file; their annotations are then the view's annotation columns the query selected (see
    :mod:`synclient.sync.sources.queries`). The report (``results.report.query``) says the query, its table and its row
    count. ``keep_paths=True``: each file lands at its remote path, ``<project name>/<folder path>/<name>``, as for
    :func:`download_many` (a view's ``parentId`` column says each file's folder: no call per file)."""
    settings = RunSettings.of(
        options, keywords=locals(), config=config, max_workers=max_workers, observer=observer, dask=dask
    )
    table_id = table_of(sql)
    return _resolve_and_run(
        lambda platform: resolve_query(platform, sql, table_id=table_id, recursive=recursive),
        Path(path),
        platform=platform,
        syn=syn,
        settings=settings,
    )


def _view_setting(view: Optional[str], scratch_project: Optional[str]) -> Union[str, AutoViewRequest, None]:
    """``view=``: a file view's id, without a version, or ``"auto"`` (a temporary view, in ``scratch_project``
    if given); a usage error otherwise."""
    if scratch_project is not None:
        if view != "auto":
            raise ConfigError("scratch_project= is where view='auto' makes its view: give it with view='auto'")
        project_id, project_version = parse_entity_id(scratch_project)
        if project_version is not None:
            raise ConfigError(
                f"--scratch-project {scratch_project} (scratch_project=): name the project without a version"
            )
        return AutoViewRequest(scratch_project=project_id)
    if view is None:
        return None
    if view == "auto":
        return AutoViewRequest()
    view_id, version = parse_entity_id(view)
    if version is not None:
        raise ConfigError(f"view={view}: a sync reads the file view as it is now; name it without a version")
    return view_id


def _for_sources(options: SyncOptions) -> SyncOptions:
    """A list's run writes no manifest and deletes nothing (what it holds is no one folder's mirror)."""
    if options.delete:
        raise ConfigError(
            "delete=True needs one project or folder to mirror; a list of ids or a dataset deletes nothing"
        )
    return options.replace(manifest="suppress")


def _check_keep_paths(source: RunSource, options: SyncOptions) -> None:
    """``keep_paths`` places a list's files; a project or folder synced alone keeps its paths below the target
    already (``TARGET/<project name>`` is the target that gives the same paths), and a file alone is no list."""
    if options.keep_paths and not (isinstance(source, ListSource) and not source.mirrors_container):
        raise ConfigError(
            f"keeping remote paths (--keep-paths, keep_paths=True) is for lists of ids, datasets, collections and "
            f"queries; {source.description} synced alone keeps its remote paths below the target already"
        )


def sync_found_files(
    files: Sequence[Tuple[EntityHeader, RemotePath]],
    path: Union[str, Path],
    *,
    root_id: str,
    platform: Optional[Platform] = None,
    syn: Optional[object] = None,
    options: Optional[SyncOptions] = None,
    config: Optional[TransferConfig] = None,
    observer: Optional[SyncObserver] = None,
) -> Union[SyncResults, SyncPlan]:
    """Fetch these files (each an entity header of a file version and its :class:`RemotePath` under ``path``) as
    one run on one shared pool, with a sync's rules (index, collisions, verify, atomic install, report) but no
    walk: no deletion pass, no manifests. ``root_id`` owns the index rows. Internal for now: the synapseclient
    drop-in puts files into synapseclient's cache layout with it."""
    options = (options or SyncOptions()).replace(manifest="suppress", delete=False)
    settings = RunSettings(options=options, config=config or TransferConfig(), observer=observer)
    return _resolve_and_run(
        lambda platform: GivenFiles(tuple(files), root_id=root_id),
        Path(path),
        platform=platform,
        syn=syn,
        settings=settings,
    )


def sync_source(
    source: RunSource, path: Union[str, Path], *, platform: Platform, settings: RunSettings, baseline: ReportBaseline
) -> Union[SyncResults, SyncPlan]:
    """A run of a source its caller resolved (the CLI checks the root against its flags first: the root's header
    is fetched once); ``baseline``: taken before it was resolved (its calls are the run's)."""
    platform, own_platform, options = _platform_for(platform, None, settings.options, settings.config)
    return _execute(
        source,
        path=Path(path),
        platform=platform,
        own_platform=own_platform,
        settings=replace(settings, options=options),
        baseline=baseline,
    )


def _resolve_and_run(
    resolve: Callable[[Platform], RunSource],
    path: Path,
    *,
    platform: Optional[Platform],
    syn: Optional[object],
    settings: RunSettings,
) -> Union[SyncResults, SyncPlan]:
    """The run's platform, its source resolved (before anything is written; its calls count as the run's), the
    run."""
    platform, own_platform, options = _platform_for(platform, syn, settings.options, settings.config)
    baseline = ReportBaseline.start(platform)
    try:
        source = resolve(platform)
    except BaseException:
        if own_platform:
            platform.close()
        raise
    return _execute(
        source,
        path=path,
        platform=platform,
        own_platform=own_platform,
        settings=replace(settings, options=options),
        baseline=baseline,
    )


def _platform_for(
    platform: Optional[Platform], syn: Optional[object], options: SyncOptions, config: TransferConfig
) -> Tuple[Platform, bool, SyncOptions]:
    """The run's platform (given, a synapseclient's, or from the environment), whether the run owns it, and the
    options with a synapseclient's download cache filled in."""
    if syn is not None and platform is not None:
        raise ConfigError("give either platform= or syn= (a synapseclient login), not both")
    own_platform = platform is None
    if syn is not None:
        platform = Platform.from_synapseclient(syn, max_connections=config.max_workers)
        cache_root = cache_root_of(syn)
        if options.synapse_cache is True and cache_root is not None:  # the download cache that Synapse object uses
            options = options.replace(synapse_cache=cache_root)
    platform = platform or Platform(max_connections=config.max_workers)
    if not own_platform:
        platform.resize_pool(config.max_workers)
    return platform, own_platform, options


def _in_download_order(entries: List[PlanEntry], options: SyncOptions) -> List[PlanEntry]:
    """A dry run's downloads in the order the real run starts them (``--order-by``: which ones the cap lets
    finish depends on it; ties, and modtime without the entity's record, keep the plan's order)."""
    order = options.order_by
    if order is None:
        return entries
    return sorted(
        entries,
        key=lambda e: order.sort_key(size=e.size, rel_path=e.rel_path, modified_on=(e.entity or {}).get("modifiedOn")),
    )


def _execute(
    source: RunSource,
    *,
    path: Path,
    platform: Platform,
    own_platform: bool,
    settings: RunSettings,
    baseline: ReportBaseline,
) -> Union[SyncResults, SyncPlan]:
    """Build, run and report one run of ``source`` into ``path`` (``baseline``: since when its calls and time
    count); ``settings.view``: the file view whose rows stand in for bundle calls; ``settings.cluster``: the Dask
    cluster that fetches the files."""
    started, before = baseline.started, baseline.before
    config = settings.config
    auto_view: Optional[AutoView] = None  # a temporary view the run makes (view='auto')
    try:
        _check_keep_paths(source, settings.options)
        # a list's run writes no manifest and deletes nothing, unless it is one container's sync
        options = (
            _for_sources(settings.options)
            if isinstance(source, ListSource) and not source.mirrors_container
            else settings.options
        )
        target = TargetDirectory(path, create=not options.dry_run)
        view_rows = _view_rows(source, settings.view, platform=platform, options=options)
        auto_view = view_rows if isinstance(view_rows, AutoView) else None
        bar = _progress_bar(enabled=options.progress and not options.dry_run, description=source.description)
        planning: Optional[PlanProgress] = None
        with LocalIndex(target.root, read_only=options.dry_run) as index:
            # build
            names = FilesystemNames.for_target(
                None if options.dry_run else index.meta_dir, forced=options.filesystem_names
            )
            if names.maps_names:
                log.info("local names in %s: %s", target.root, names.describe())
            pool = run_pool(platform, config)
            observer = ObserverGroup([settings.observer, bar])
            # run
            with _fetching_on(
                settings.cluster if not options.dry_run else None,
                pool=pool,
                platform=platform,
                config=config,
                observer=observer,
            ) as (remote, workers):
                try:
                    planning = _plan_progress(
                        enabled=options.progress and options.dry_run, description=source.description
                    )
                    run = SyncRun(
                        platform=platform,
                        config=config,
                        target=target,
                        index=index,
                        source=source,
                        options=options,
                        observer=observer,
                        pool=pool,
                        names=names,
                        view=view_rows,
                        remote=remote,
                        on_planned=planning.planned if planning is not None else None,
                    )
                    run.run()
                finally:
                    if bar is not None:
                        bar.close()
                    if planning is not None:
                        planning.close()
            effects = run.effects
            if isinstance(effects, AppliedEffects) and effects.fatal is not None:
                # finished files are indexed, partials kept: the same command resumes
                _finish_report(effects, platform, started, before, workers)
                raise effects.fatal
            if options.delete and source.mirrors_container:
                run.delete_vanished()
            # report
            if isinstance(effects, PlannedEffects):
                effects.plan.sized(run.pipeline.sizes)
                effects.plan.listed_bytes = run.pipeline.bytes_of_several
                if options.checksum:  # every copy of ours was hashed (and the real run hashes them again)
                    effects.plan.hashed_bytes = sum(e.size or 0 for e in effects.plan.entries if e.action.hashed)
                _estimate_from_history(effects.plan, index)
                _estimate_calls(effects.plan, run, before)
                effects.plan.bandwidth = run.config.bandwidth_timetable()
                effects.plan.folders = dict(run.walker.folder_ids)
                effects.plan.renamed = run.renamed_lines
                if options.max_transfer is not None:
                    effects.plan.cap = forecast(
                        [(e.rel_path, e.size) for e in _in_download_order(effects.plan.fetch_entries, options)],
                        options.max_transfer,
                        options.cutoff_mode,
                    )
                effects.plan.filtered, effects.plan.filters = run.pipeline.filtered_out, options.filter_settings
                effects.plan.filtered_paths = run.pipeline.filtered_paths
                return effects.plan
            assert isinstance(effects, AppliedEffects)  # (a real run's)
            _finish_report(effects, platform, started, before, workers)
            if run.cap is not None:
                effects.report.max_transfer, effects.report.transferred = run.cap.limit, run.cap.received
            if source.mirrors_container:
                run.write_manifests_and_sweep(effects)
            effects.report.manifest_errors = list(run.manifests.errors)
            effects.report.renamed = run.renamed_lines
            effects.report.filtered, effects.report.filters = run.pipeline.filtered_out, options.filter_settings
            effects.report.query = source.query if isinstance(source, ListSource) else None
            _remember_throughput(effects, index)
    finally:
        if auto_view is not None:  # (also after a failure or Ctrl-C: what is left of its view goes)
            auto_view.close()
        if own_platform:
            platform.close()
    results = SyncResults(effects.results, effects.report, folders=dict(run.walker.folder_ids))
    if (results.failures or effects.report.manifest_errors) and options.on_error is OnError.RAISE:
        raise SyncError(results.failures, results, problems=effects.report.manifest_errors)
    return results


def _view_rows(
    source: RunSource, view: Union[str, AutoViewRequest, None], *, platform: Platform, options: SyncOptions
) -> Optional[FileRows]:
    """The file view rows standing in for the run's bundle calls: a given view's, or a temporary view's of the
    tree's root (made by a real run of a project or folder when it pays: :mod:`.sources.auto_view`); none when
    bundles are wanted anyway."""
    if view is None:
        return None
    if isinstance(view, str):
        return ViewRows(platform, platform.get_entity_header(view)) if not options.needs_bundle else None
    tree = isinstance(source, TreeSource) or (isinstance(source, ListSource) and source.mirrors_container)
    if not tree:
        if isinstance(source, ListSource):
            raise ConfigError(
                "--view auto (view='auto') makes a view of the one project or folder a sync mirrors; for a list "
                "of ids, give a file view over them (--view syn456)"
            )
        return None  # one file: nothing to plan
    return auto_view_for(
        platform, scope_id=source.root_id, request=view, dry_run=options.dry_run, needs_bundle=options.needs_bundle
    )


def _progress_bar(*, enabled: bool, description: str) -> Optional[ProgressDisplay]:
    """A bar only where someone watches (terminal, notebook); the CLI brings its own display."""
    from synclient.progress import ProgressMode, choose_mode, progress_observer

    if enabled and choose_mode() is ProgressMode.BAR:
        return progress_observer(description=description)
    return None


def _plan_progress(*, enabled: bool, description: str) -> Optional[PlanProgress]:
    """A dry run's progress line, where someone watches (terminal, notebook), as the real run's bar."""
    from synclient.progress import ProgressMode, choose_mode
    from synclient.sync.plan.plan_progress import PlanProgress

    if enabled and choose_mode() is ProgressMode.BAR:
        return PlanProgress(description=description)
    return None


def _estimate_calls(plan: SyncPlan, run: SyncRun, before: _CallCounts) -> None:
    """The REST calls the real run will make, and what paces them: the dry run's own calls (its root, listings,
    view, the bundles its decisions needed), less the bundles it made for sizes alone, plus a bundle for each file
    it planned from the listing and the URL batches of the downloads; paced by the limits the gate knows (else
    Synapse's), at the time the dry run's calls took."""
    platform, pipeline = run.platform, run.pipeline
    now = _CallCounts.of(platform)
    calls = now.calls - before.calls
    url_batches = math.ceil(len(plan.fetch_entries) / run.config.url_batch_size)
    plan.rest_calls = max(0, calls - pipeline.size_bundles) + pipeline.listing_planned + url_batches
    policy = platform.gate.policy
    limits = CallLimits(
        concurrency=min(run.config.max_workers, policy.stated_concurrency or SYNAPSE_CONCURRENCY),
        seconds_per_call=(now.seconds - before.seconds) / calls if calls else DEFAULT_SECONDS_PER_CALL,
    )
    if policy.budget is not None:  # a refusal taught the gate the window: the real run is paced by it
        limits = replace(limits, requests_per_window=policy.budget, window_seconds=policy.counted_window)
    plan.limits = limits


def _finish_report(
    effects: AppliedEffects,
    platform: Platform,
    started: float,
    before: _CallCounts,
    workers: Callable[[], List[WorkerCounts]],
) -> None:
    """The report's totals: time, and the REST calls of this process and of the run's Dask workers."""
    report, now = effects.report, _CallCounts.of(platform)
    report.wall_seconds = time.monotonic() - started
    report.workers = workers()
    report.rest_calls = now.calls - before.calls + sum(counts.rest_calls for counts in report.workers)
    report.retries = now.retries - before.retries + sum(counts.retries for counts in report.workers)
    report.throttled = now.throttled - before.throttled + sum(counts.throttled for counts in report.workers)


def _dask_settings(dask: Optional[object]) -> Optional[DaskSettings]:
    """``dask=``: a ``distributed.Client`` or :class:`~synclient.cluster.driver.DaskSettings`, checked now."""
    if dask is None:
        return None
    from synclient.cluster.driver import DaskSettings

    return DaskSettings.of(dask)


@contextlib.contextmanager
def _fetching_on(
    cluster: Optional[DaskSettings],
    *,
    pool: TaskPool,
    platform: Platform,
    config: TransferConfig,
    observer: SyncObserver,
) -> Iterator[Tuple[Optional[DaskFetcher], Callable[[], List[WorkerCounts]]]]:
    """The fetcher of the Dask cluster (when there is one: the run's fetches go there while inside; None: this
    pool fetches), and what reads the workers' counts once the run is over."""
    if cluster is None:
        yield None, list
        return
    from synclient.cluster.driver import DaskFetcher

    with DaskFetcher(cluster, pool=pool, platform=platform, config=config, observer=observer) as fetcher:
        yield fetcher, fetcher.worker_counts


def _remember_throughput(effects: AppliedEffects, index: LocalIndex) -> None:
    """The next dry run into this target estimates its time from what this run measured."""
    report = effects.report
    if report.bytes_downloaded and report.wall_seconds > 0:
        index.set_meta("bytes_per_second", str(report.bytes_downloaded / report.wall_seconds))
        index.set_meta("files_per_second", str(max(report.downloaded, 1) / report.wall_seconds))


def _estimate_from_history(plan: SyncPlan, index: LocalIndex) -> None:
    for key, attribute in (("bytes_per_second", "bytes_per_second"), ("files_per_second", "files_per_second")):
        value = index.meta(key)
        if value:
            setattr(plan, attribute, float(value))


syncFromPlatform = sync_from_platform  # the name notebook users know from synapseutils.syncFromSynapse
