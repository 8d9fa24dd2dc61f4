"""One sync, start to end: validate the request, build the run, run it on the shared pool, report.

:func:`sync_from_platform` reads as those four steps. :class:`SyncRun` is the wiring: one
:class:`~synclient.transfer.pool.TaskPool` shared by the walker (listings), the per-file pipeline (bundles, URL
batches, downloads, parts) and the downloader, around one target directory and its index. The rooms around it:

- :mod:`synclient.sync.pipeline` -- one file's journey from its listing page to its index row;
- :mod:`synclient.sync.claims` -- which local path each file gets when something is in the way;
- :mod:`synclient.sync.outcome` -- a real run records, a dry run plans (one interface, two implementations);
- :mod:`synclient.sync.deletion`, :mod:`synclient.sync.manifest_assembly`, :mod:`synclient.sync.leftovers` --
  what happens after the walk: vanished files, manifests, partial downloads no run will resume.
"""
from __future__ import annotations

import contextlib
import errno
import logging
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, List, Optional, Sequence, Set, Tuple, Union

from synclient.platform.rest import Platform
from synclient.errors import ConfigError, ErrorNature, LocalIOError, PathConflictError, SyncError, SynclientError
from synclient.events import ObserverGroup, SyncObserver
from synclient.platform.models import EntityHeader, EntityType, parse_entity_id  # noqa: F401 (parse_entity_id re-exported)
from synclient.results import QueryInfo, SyncResults, WorkerCounts
from synclient.sync.claims import PathClaims
from synclient.sync.deletion import delete_vanished
from synclient.sync.plan.dry_run import SyncPlan
from synclient.sync.plan.handle_names import FileNames, HandleNames, named_file
from synclient.sync.sources.id_lists import EntityRef
from synclient.sync.records.index import LocalIndex
from synclient.sync.leftovers import sweep_run_partials
from synclient.sync.local.local_names import FilesystemNames, LocalRename, Renaming
from synclient.sync.manifest_assembly import ManifestAssembly
from synclient.sync.local.name_gate import NameGate, PathRegistry, RemotePath
from synclient.sync.options import OnError, SyncOptions
from synclient.sync.outcome import Outcome, PlanOutcome, RecordOutcome
from synclient.sync.local.paths import RESERVED_NAME, TargetDirectory
from synclient.sync.pipeline import FilePipeline
from synclient.sync.sources.queries import ViewRows, select, table_of
from synclient.sync.sources.by_id import Renamed, SourcePlan, check_container_ref, plan_sources
from synclient.sync.sources.walker import FoundFile, TreeWalker
from synclient.synapse_cache import SynapseCache, cache_root_of
from synclient.transfer.config import TransferConfig
from synclient.transfer.fetcher import DataPlane
from synclient.transfer.pool import TaskPool

if TYPE_CHECKING:
    from synclient.cluster.driver import DaskFetcher, DaskSettings

log = logging.getLogger("synclient.sync")


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


@dataclass
class _CallCounts:
    calls: int
    retries: int
    throttled: int

    @classmethod
    def of(cls, platform: Platform) -> "_CallCounts":
        return cls(platform.stats.calls, platform.stats.retries, platform.stats.throttled)


_FILES_PER_BATCH = 500  # a listed page's worth: one index query each


@dataclass(frozen=True)
class _Counted:
    """When a run started and the platform's counters then: its report counts from here."""

    started: float
    before: _CallCounts

    @classmethod
    def start(cls, platform: Platform) -> "_Counted":
        return cls(time.monotonic(), _CallCounts.of(platform))


class SyncRun:
    """The wiring of one sync: every piece built once, around one target and its index, sharing one pool."""

    def __init__(self, *, platform: Platform, config: TransferConfig, target: TargetDirectory, index: LocalIndex,
                 root_id: str, options: SyncOptions, observer: SyncObserver,
                 names: FilesystemNames = FilesystemNames(), cluster: Optional["DaskSettings"] = None) -> None:
        self.platform = platform
        self.config = config
        self.names = names  # what the target's filesystem does with names (local_names.py)
        self.target = target
        self.index = index
        self.root_id = root_id
        self.options = options
        self.pool = TaskPool(config.max_workers, backlog_high_water=config.listing_backlog,
                             control_plane_limit=lambda: platform.gate.limit)
        self.outcome: Outcome = (
            PlanOutcome(target=target, index=index) if options.dry_run else
            RecordOutcome(target=target, index=index, observer=observer,
                          is_fatal=lambda error: is_fatal(error, target.root),
                          on_fatal=lambda: self.pool.cancel(grace_seconds=0), list_in_manifest=options.wants_manifest))
        # the data plane (URL batches, data connections, folder checks, downloads), closed when the run ends
        self.data_plane = DataPlane.build(platform=platform, pool=self.pool, config=config, observer=observer)
        self.folders = self.data_plane.folders  # the per-file folder checks
        # a sync over Dask: the cluster's workers fetch (entered around the run: _fetching_on)
        self.dask = _dask_fetcher(cluster, self, observer) if cluster is not None else None
        # the one way from a remote name to a local path, and the run's one registry of local paths
        self.gate = NameGate(target, names, PathRegistry(names))
        self.claims = PathClaims(platform=platform, target=target, index=index, options=options,
                                 outcome=self.outcome, names=names, registry=self.gate.registry)
        self.manifests = ManifestAssembly(target=target, index=index, root_id=root_id, names=names)
        # synapseclient's cache, when it is wanted and this machine has one (a dry run reads and writes none of it)
        cache_root = options.synapse_cache if isinstance(options.synapse_cache, Path) else None
        synapse_cache = (SynapseCache.if_present(cache_root) if options.synapse_cache and not options.dry_run
                         else None)
        fetcher = self.data_plane.fetcher(remote=self.dask, synapse_cache=synapse_cache,
                                          synapse_cache_link=options.synapse_cache_link)
        self.pipeline = FilePipeline(platform=platform, pool=self.pool, fetcher=fetcher,
                                     target=target, index=index, root_id=root_id, options=options,
                                     outcome=self.outcome, claims=self.claims, manifests=self.manifests,
                                     folders=self.folders, observer=observer)
        # files named by their handles, as synapseclient names them (the drop-ins): handle_names.py
        self.handle_names = (HandleNames(platform, SynapseCache.if_present(cache_root) if options.synapse_cache
                                         else None, fetches=config.max_workers)
                             if options.file_names is FileNames.HANDLE else None)
        self.pipeline.handle_names = self.handle_names
        self.walker = TreeWalker(platform=platform, pool=self.pool, target=target, on_files=self.pipeline.files_found,
                                 on_failure=self.pipeline.entity_failed, path_filter=options.path_filter,
                                 follow_links=options.follow_links, make_room=self.claims.make_room,
                                 names=names, held_names=index.local_names_in if names.maps_names else None,
                                 gate=self.gate, file_names=self.handle_names)
        self.claims.kept_names = self.walker.kept_names  # keep.both copy names avoid names kept in place too
        self.pool.add_idle_check(self.pipeline.settle_held_copies)
        self.renamed: List[Renamed] = []  # entries of a list given another name than their own (start_sources)
        self.listed_files: Set[str] = set()  # the remote paths of a list's files (start_sources)
        self.renamed_locally: List[LocalRename] = []  # a list's folders the local filesystem cannot hold as named

    def start(self, root: EntityHeader, version: Optional[int]) -> None:
        """A container is walked; a file root goes straight to the pipeline (its row keeps an existing owner)."""
        if root.type.is_container:
            self.walker.walk(root, self.target.root)
            return
        if version is not None:
            root = replace(root, version_number=version)
        root = named_file(self.handle_names, root)
        # a name that can be no local name fails that file, as in a walk; the filters are for what a walk finds
        self.start_files([(root, root.name)], filtered=False)

    def start_files(self, files: Sequence[Tuple[EntityHeader, Union[RemotePath, str]]], *,
                    filtered: bool = True) -> None:
        """A list of files, each at its own path under the target (a :class:`RemotePath`, or one name), placed by
        the name gate (its folders made, each name in the form the local filesystem can hold; twins among a list's
        entries are its own renamings', sources.py): straight to the pipeline, as a file root is (each row keeps an
        existing owner). A name that can be no local name fails its file alone."""
        wanted = []
        for header, remote in files:
            try:
                remote = remote if isinstance(remote, RemotePath) else RemotePath((remote,))
            except SynclientError as exc:
                self.pipeline.entity_failed(header, None, exc)
                continue
            if not filtered or self.options.path_filter.wants_file(remote.text):
                wanted.append((header, remote))
        self.pipeline.named_files.update(remote.text for _, remote in wanted)  # before any of them is in the pool
        found = []
        for header, remote in wanted:
            try:
                placed = self.gate.place_file(remote, header.id)
                found.append(FoundFile(header, placed.path, remote.text, None, placed.renamed))
            except SynclientError as exc:
                self.pipeline.entity_failed(header, None, exc)
        for start in range(0, len(found), _FILES_PER_BATCH):
            self.pipeline.files_found(found[start:start + _FILES_PER_BATCH])

    def start_sources(self, plan: SourcePlan) -> None:
        """A list of ids, a dataset or a collection (:mod:`synclient.sync.sources.by_id`), named against this target's
        index: what failed to resolve is reported, each project or folder is walked into its own sub-folder, the
        files go as :meth:`start_files`."""
        layout = plan.laid_out(self.index.rows_in,
                               same_name=lambda name: self.names.same_name_key(self.names.legal_form(name)),
                               reserved=(RESERVED_NAME,) if self.names.maps_names else ())
        self.renamed = layout.renamed
        self.listed_files = {remote.text for _, remote in layout.files}
        self.pipeline.known.update(plan.known_files)
        for header, error in list(plan.refused) + layout.refused:
            self.pipeline.entity_failed(header, None, error)
        refused_folders = set()
        for holder in layout.folders:  # a dataset's (collection's) folder is its own: no other entity's path
            try:
                self.gate.claim_folders(holder.remote, holder.header.id)
            except SynclientError as exc:
                refused_folders.add(holder.remote)
                self.pipeline.entity_failed(holder.header, None, exc)
        # (first: the pipeline knows them as named files before any walk runs)
        self.start_files([(header, remote) for header, remote in layout.files
                          if not any(remote.names[:len(f.names)] == f.names for f in refused_folders)])
        for container in layout.containers:
            try:
                self.gate.claim_folders(container.remote, container.header.id)
                folder = self.gate.folders(container.remote)
            except SynclientError as exc:
                self.walker.unvisited.add(container.rel_dir)
                self.pipeline.entity_failed(container.header, None, exc)
                continue
            if self.target.relative(folder) != container.rel_dir:  # a name the filesystem cannot hold as it is
                renamed = LocalRename(container.header.id, container.rel_dir, self.target.relative(folder),
                                      Renaming.WINDOWS.value)
                self.renamed_locally.append(renamed)
                log.warning("local name: %s", renamed)
            self.walker.walk(container.header, folder, remote=container.remote)

    def run(self, start: Callable[["SyncRun"], None]) -> None:
        """``start`` gives the run its files (:meth:`start` a walk or a file root, :meth:`start_files` a list);
        then every task to its end (or the run's cancellation). The data connections and the folder checks'
        descriptors are closed either way, a start that failed included."""
        try:
            start(self)
            with self.platform.cancel_on(self.pool.cancel_event):  # REST retry waits stop when the run does
                self.pool.run()
        finally:
            self.data_plane.close()
        if self.pool.unexpected_errors:
            raise self.pool.unexpected_errors[0]

    def delete_vanished(self) -> None:
        """``delete=True``, once the whole tree is listed: files synclient wrote that the remote no longer has."""
        delete_vanished(target=self.target, index=self.index, root_id=self.root_id,
                        path_filter=self.options.path_filter, seen=self.pipeline.seen,
                        unvisited=self.walker.unvisited, handled=self.claims.handled,
                        # folders by remote path and by local path (deletion tidies folders by where they are)
                        listed=set(self.walker.listed) | {self.target.relative(p) for p in self.walker.listed.values()},
                        dry_run=not self.outcome.writes, report=self.outcome.removed)

    @property
    def renamed_lines(self) -> List[str]:
        """The report's lines of every renaming: a list's entries whose names were taken, and names the local
        filesystem cannot hold as they are (a file's once it is, or a dry run would put it, at that name)."""
        folders = [entry for entry in self.walker.renamed if self._is_there(entry)]
        # a list's renaming says where the entry is: its given name in the form the local filesystem holds it
        # (a file of the list that failed is at no name: nothing to report)
        listed = [replace(entry, given=self.pipeline.placed.get(entry.given, entry.given)) for entry in self.renamed
                  if entry.given in self.pipeline.placed or entry.given not in self.listed_files]
        return ([str(entry) for entry in listed] + [str(entry) for entry in self.renamed_locally]
                + [str(entry) for entry in sorted(folders + self.pipeline.renamed, key=lambda r: r.remote_path)])

    def _is_there(self, folder: LocalRename) -> bool:
        """A walked folder given another local name is at it for this run: a file of the run is (or a dry run would
        put it) in it, or the remote folder holds nothing (its files may stay where an earlier run put them)."""
        inside = folder.local_path + "/"
        return folder.remote_path not in self.walker.holding or any(
            filled == folder.local_path or filled.startswith(inside) for filled in self.pipeline.filled)

    def tidy_up(self) -> None:
        """A real run's end: every folder's manifest, and the sweep of partial downloads no run will resume."""
        if self.options.wants_manifest:
            self.manifests.write(mode=self.options.manifest, listed_paths=self.outcome.manifest_paths,
                                 manifest_taken=set(self.walker.manifest_taken), listed_folders=self.walker.listed,
                                 formats=self.options.manifest_formats)
        sweep_run_partials(index=self.index, root_id=self.root_id, target_root=self.target.root,
                           listed=self.walker.listed, unvisited=self.walker.unvisited,
                           keep=self.pipeline.partials_to_keep(), path_filter=self.options.path_filter)


def sync_from_platform(entity: str, path: Union[str, Path] = ".", *, platform: Optional[Platform] = None,
                       options: Optional[SyncOptions] = None, config: Optional[TransferConfig] = None,
                       max_workers: Optional[int] = None, observer: Optional[SyncObserver] = None,
                       on_error: Union[OnError, str, None] = None, if_collision: Optional[str] = None,
                       delete: Optional[bool] = None, manifest: Optional[str] = None,
                       include: Optional[Iterable[str]] = None, exclude: Optional[Iterable[str]] = None,
                       dry_run: Optional[bool] = None, follow_links: Optional[bool] = None,
                       provenance: Optional[bool] = None, progress: Optional[bool] = None,
                       entity_details: Optional[bool] = None, synapse_cache: Union[bool, str, Path, None] = None,
                       synapse_cache_link: Optional[bool] = None, syn: Optional[object] = None,
                       view: Optional[str] = None,
                       filesystem_names: Union[FilesystemNames, str, None] = None,
                       dask: Optional[object] = None,
                       file_names: Union[FileNames, str, None] = None) -> Union[SyncResults, SyncPlan]:
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
    """
    # validate
    options, config = _settings(options, config, max_workers, on_error=on_error, if_collision=if_collision,
                                delete=delete, manifest=manifest, include=include, exclude=exclude, dry_run=dry_run,
                                follow_links=follow_links, provenance=provenance, progress=progress,
                                entity_details=entity_details, synapse_cache=synapse_cache,
                                synapse_cache_link=synapse_cache_link,
                                filesystem_names=filesystem_names, file_names=file_names)
    cluster = _dask_settings(dask)
    entity_id, version = parse_entity_id(entity)
    view_id = _view_id(view)
    platform, own_platform, options = _platform_for(platform, syn, options, config)
    counted = _Counted.start(platform)  # the root's calls and time are the run's too
    try:
        root = _root_header(platform, entity_id, version)
        plan = (plan_sources(platform, [EntityRef(entity_id, version)], recursive=True, known=[root])
                if root.type.has_items else None)
    except BaseException:
        if own_platform:
            platform.close()
        raise
    if plan is not None:  # a dataset or a collection: its items, as download_many has them
        return _execute(platform=platform, own_platform=own_platform, options=_for_sources(options),
                        config=config, path=Path(path), root_id=entity_id, description=root.name, container=False,
                        observer=observer, start=lambda run: run.start_sources(plan), counted=counted,
                        view=view_id, cluster=cluster)
    return _execute(platform=platform, own_platform=own_platform, options=options, config=config, path=Path(path),
                    root_id=entity_id, description=root.name, container=root.type.is_container,
                    observer=observer, start=lambda run: run.start(root, version), counted=counted, view=view_id,
                    cluster=cluster)


def download_many(ids: Iterable[Union[str, EntityRef]], path: Union[str, Path] = ".", *, recursive: bool = False,
                  platform: Optional[Platform] = None, options: Optional[SyncOptions] = None,
                  config: Optional[TransferConfig] = None, max_workers: Optional[int] = None,
                  observer: Optional[SyncObserver] = None, on_error: Union[OnError, str, None] = None,
                  if_collision: Optional[str] = None, include: Optional[Iterable[str]] = None,
                  exclude: Optional[Iterable[str]] = None, dry_run: Optional[bool] = None,
                  follow_links: Optional[bool] = None, provenance: Optional[bool] = None,
                  progress: Optional[bool] = None, entity_details: Optional[bool] = None,
                  synapse_cache: Union[bool, str, Path, None] = None, synapse_cache_link: Optional[bool] = None,
                  syn: Optional[object] = None, view: Optional[str] = None,
                  filesystem_names: Union[FilesystemNames, str, None] = None,
                  dask: Optional[object] = None) -> Union[SyncResults, SyncPlan]:
    """Download every entity of ``ids`` (``"syn1"``, ``"syn2.3"``, or :class:`~synclient.sync.sources.id_lists.EntityRef`)
    into ``path`` as one run: one shared pool, URL batches of up to 100 across all ids, one index, one report.

    Files land in ``path`` under their entity names; with ``recursive=True`` each project or folder is synced into a
    sub-folder named after it; a dataset's items (at their pinned versions) go into a sub-folder named after the
    dataset, a collection's datasets into sub-folders of the collection's. A single id fills ``path`` itself. Names
    that clash get the entity id (``a (syn456).csv``), reported in ``results.report.renamed``. Returns the same
    :class:`~synclient.results.SyncResults` (or, with ``dry_run``, :class:`~synclient.sync.plan.dry_run.SyncPlan`) as
    :func:`sync_from_platform`, whose keywords these are; nothing is deleted and no manifest is written, except when
    the only id is a project or folder (then this is :func:`sync_from_platform`'s sync of it, manifests included).
    ``view``: a file view over those files, and ``dask``: a Dask cluster to fetch them on, as for
    :func:`sync_from_platform`.
    """
    options, config = _settings(options, config, max_workers, on_error=on_error, if_collision=if_collision,
                                include=include, exclude=exclude, dry_run=dry_run, follow_links=follow_links,
                                provenance=provenance, progress=progress, entity_details=entity_details,
                                synapse_cache=synapse_cache, synapse_cache_link=synapse_cache_link,
                                filesystem_names=filesystem_names)
    if isinstance(ids, (str, EntityRef)):  # one id given bare: a list of one, not a list of its characters
        ids = [ids]
    refs = [ref if isinstance(ref, EntityRef) else EntityRef.parse(ref) for ref in ids]
    if not refs:
        raise ConfigError("download_many needs at least one id")
    view_id = _view_id(view)
    return _download_sources(lambda platform: (plan_sources(platform, refs, recursive=recursive), None), refs,
                             path=Path(path), platform=platform, syn=syn, options=options, config=config,
                             observer=observer, view=view_id, cluster=_dask_settings(dask))


def download_query(sql: str, path: Union[str, Path] = ".", *, recursive: bool = False,
                   platform: Optional[Platform] = None, options: Optional[SyncOptions] = None,
                   config: Optional[TransferConfig] = None, max_workers: Optional[int] = None,
                   observer: Optional[SyncObserver] = None, on_error: Union[OnError, str, None] = None,
                   if_collision: Optional[str] = None, include: Optional[Iterable[str]] = None,
                   exclude: Optional[Iterable[str]] = None, dry_run: Optional[bool] = None,
                   follow_links: Optional[bool] = None, provenance: Optional[bool] = None,
                   progress: Optional[bool] = None, entity_details: Optional[bool] = None,
                   synapse_cache: Union[bool, str, Path, None] = None, synapse_cache_link: Optional[bool] = None,
                   syn: Optional[object] = None,
                   filesystem_names: Union[FilesystemNames, str, None] = None,
                   dask: Optional[object] = None) -> Union[SyncResults, SyncPlan]:
    """Download what a SQL query over a file view or table selects (``SELECT id FROM syn123 WHERE ...``) into
    ``path``, as :func:`download_many` downloads a list of ids (its keywords are these): the query's ``id`` column
    names the entities, a ``currentVersion`` (or ``versionNumber``) column pins their versions, and every page of
    the query is read first. Files land in ``path`` under their names (with ``recursive=True``, a project or folder
    selected goes into a sub-folder of its name, whatever the number of rows). A file view's rows that carry
    ``dataFileHandleId``, ``dataFileMD5Hex`` and ``dataFileSizeBytes`` (its default columns) need no bundle call
    per file; their annotations are then the view's annotation columns the query selected (see
    :mod:`synclient.sync.sources.queries`). The report (``results.report.query``) says the query, its table and its row
    count."""
    options, config = _settings(options, config, max_workers, on_error=on_error, if_collision=if_collision,
                                include=include, exclude=exclude, dry_run=dry_run, follow_links=follow_links,
                                provenance=provenance, progress=progress, entity_details=entity_details,
                                synapse_cache=synapse_cache, synapse_cache_link=synapse_cache_link,
                                filesystem_names=filesystem_names)
    cluster = _dask_settings(dask)
    table_id = table_of(sql)

    def plan(platform: Platform) -> Tuple[SourcePlan, QueryInfo]:
        selection = select(platform, sql, table_id=table_id)
        # the table's header rides along with its rows' entities: it says whether the rows are a view's
        headers = platform.get_entity_headers([table_id] + [ref.entity_id for ref in selection.refs])
        table = headers.get(table_id)
        plan = (plan_sources(platform, selection.refs, recursive=recursive, known=list(headers.values()),
                             standalone=False) if selection.refs else SourcePlan())
        if table is not None and table.type is EntityType.ENTITY_VIEW:
            plan.known_files = selection.row_files
        return plan, QueryInfo(sql=sql, table=table_id, rows=selection.rows, entities=len(selection.refs),
                               rows_without_id=selection.rows_without_id)

    return _download_sources(plan, [], path=Path(path), platform=platform, syn=syn, options=options,
                             config=config, observer=observer, cluster=cluster)


def _download_sources(plan_with: Callable[[Platform], Tuple[SourcePlan, Optional[QueryInfo]]],
                      refs: Sequence[EntityRef], *, path: Path, platform: Optional[Platform], syn: Optional[object],
                      options: SyncOptions, config: TransferConfig, observer: Optional[SyncObserver],
                      view: Optional[str] = None, cluster: Optional["DaskSettings"] = None
                      ) -> Union[SyncResults, SyncPlan]:
    """A run of what ``plan_with`` resolves (the ids ``refs``, or a query's): as one sync when it is one project or
    folder, else as a list (no manifest, no deletion)."""
    platform, own_platform, options = _platform_for(platform, syn, options, config)
    counted = _Counted.start(platform)
    try:
        plan, query = plan_with(platform)
    except BaseException:
        if own_platform:
            platform.close()
        raise
    container = plan.one_container  # alone, it is synced as by id: manifests and delete included
    root_id = container.id if container else refs[0].entity_id if len(refs) == 1 else LIST_ROOT
    description = container.name if container else f"{len(refs)} ids" if refs else "query"
    return _execute(platform=platform, own_platform=own_platform,
                    options=options if container else _for_sources(options), config=config, path=path,
                    root_id=root_id, description=description, container=container is not None, observer=observer,
                    start=lambda run: run.start_sources(plan), counted=counted, query=query, view=view,
                    cluster=cluster)


def _view_id(view: Optional[str]) -> Optional[str]:
    """``view=``: a file view's id, without a version (a usage error otherwise)."""
    if view is None:
        return None
    view_id, version = parse_entity_id(view)
    if version is not None:
        raise ConfigError(f"view={view}: a sync reads the file view as it is now; name it without a version")
    return view_id


#: the index rows' owner for a list of ids: never a sync root, so no sync's deletion pass ever touches them
LIST_ROOT = "ids"


def _settings(options: Optional[SyncOptions], config: Optional[TransferConfig], max_workers: Optional[int],
              **given: object) -> Tuple[SyncOptions, TransferConfig]:
    """The run's options (``options`` with each keyword that was given on top) and transfer config."""
    options = options or SyncOptions()
    given = {name: value for name, value in given.items() if value is not None}
    if given:
        options = options.replace(**given)
    config = config or TransferConfig()
    if max_workers is not None:
        config = replace(config, max_workers=max_workers)
    return options, config


def _for_sources(options: SyncOptions) -> SyncOptions:
    """A list's run writes no manifest and deletes nothing (what it holds is no one folder's mirror)."""
    if options.delete:
        raise ConfigError("delete=True needs one project or folder to mirror; a list of ids or a dataset "
                          "deletes nothing")
    return options.replace(manifest="suppress")


def sync_found_files(files: Sequence[Tuple[EntityHeader, RemotePath]], path: Union[str, Path], *, root_id: str,
                     platform: Optional[Platform] = None, syn: Optional[object] = None,
                     options: Optional[SyncOptions] = None, config: Optional[TransferConfig] = None,
                     observer: Optional[SyncObserver] = None) -> Union[SyncResults, SyncPlan]:
    """Fetch these files (each an entity header of a file version and its :class:`RemotePath` under ``path``) as
    one run on one shared pool, with a sync's rules (index, collisions, verify, atomic install, report) but no
    walk: no deletion pass, no manifests. ``root_id`` owns the index rows. Internal for now: the synapseclient
    drop-in puts files into synapseclient's cache layout with it."""
    options = (options or SyncOptions()).replace(manifest="suppress", delete=False)
    config = config or TransferConfig()
    platform, own_platform, options = _platform_for(platform, syn, options, config)
    return _execute(platform=platform, own_platform=own_platform, options=options, config=config, path=Path(path),
                    root_id=root_id, description=root_id, container=False, observer=observer,
                    start=lambda run: run.start_files(files), counted=_Counted.start(platform))


def _platform_for(platform: Optional[Platform], syn: Optional[object], options: SyncOptions,
                  config: TransferConfig) -> Tuple[Platform, bool, SyncOptions]:
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


def _execute(*, platform: Platform, own_platform: bool, options: SyncOptions, config: TransferConfig, path: Path,
             root_id: str, description: str, container: bool, observer: Optional[SyncObserver],
             start: Callable[[SyncRun], None], counted: "_Counted", query: Optional[QueryInfo] = None,
             view: Optional[str] = None, cluster: Optional["DaskSettings"] = None) -> Union[SyncResults, SyncPlan]:
    """Build, run and report one run into ``path`` (``start`` gives it its files: a walk or a list; ``counted``:
    since when its calls and time count; ``query``: the query that selected them, for the report; ``view``: the
    file view whose rows stand in for bundle calls; ``cluster``: the Dask cluster that fetches the files)."""
    started, before = counted.started, counted.before
    try:
        target = TargetDirectory(path, create=not options.dry_run)
        wants_view = view is not None and not options.needs_bundle  # (bundles wanted anyway: the view is no use)
        view_rows = ViewRows(platform, platform.get_entity_header(view)) if wants_view else None
        bar = _progress_bar(enabled=options.progress and not options.dry_run, description=description)
        with LocalIndex(target.root, read_only=options.dry_run) as index:
            # build
            names = FilesystemNames.for_target(None if options.dry_run else index.meta_dir,
                                               forced=options.filesystem_names)
            if names.maps_names:
                log.info("local names in %s: %s", target.root, names.describe())
            run = SyncRun(platform=platform, config=config, target=target, index=index, root_id=root_id,
                          options=options, observer=ObserverGroup([observer, bar]), names=names,
                          cluster=cluster if not options.dry_run else None)
            run.pipeline.view = view_rows
            # run
            with _fetching_on(run) as workers:
                try:
                    run.run(start)
                finally:
                    if bar is not None:
                        bar.close()
            outcome = run.outcome
            if isinstance(outcome, RecordOutcome) and outcome.fatal is not None:
                # finished files are indexed, partials kept: the same command resumes
                _finish_report(outcome, platform, started, before, workers)
                raise outcome.fatal
            if options.delete and container:
                run.delete_vanished()
            # report
            if isinstance(outcome, PlanOutcome):
                _estimate_from_history(outcome.plan, index)
                outcome.plan.folders = dict(run.walker.folder_ids)
                outcome.plan.renamed = run.renamed_lines
                return outcome.plan
            _finish_report(outcome, platform, started, before, workers)
            if container:
                run.tidy_up()
            outcome.report.manifest_errors = list(run.manifests.errors)
            outcome.report.renamed = run.renamed_lines
            outcome.report.query = query
            _remember_throughput(outcome, index)
    finally:
        if own_platform:
            platform.close()
    results = SyncResults(outcome.results, outcome.report, folders=dict(run.walker.folder_ids))
    if (results.failures or outcome.report.manifest_errors) and options.on_error is OnError.RAISE:
        raise SyncError(results.failures, results, problems=outcome.report.manifest_errors)
    return results


def _root_header(platform: Platform, entity_id: str, version: Optional[int]) -> EntityHeader:
    """The sync's root, checked before anything is written: a container or a file, and a version only of a file
    (one that exists: a missing version is as much a usage error as a missing id)."""
    root = platform.get_entity_header(entity_id)
    if not (root.type.is_container or root.type is EntityType.FILE or root.type.has_items):
        raise ConfigError(f"{entity_id} is a {root.type.label}; sync takes a project, folder, file, dataset or "
                          "dataset collection")
    if root.type.is_container:
        check_container_ref(EntityRef(entity_id, version), root.type)
    elif version is not None and root.type is EntityType.FILE:  # (a dataset's version is checked as it is read)
        platform.get_entity(entity_id, version=version)  # NotFoundError for a version that does not exist
    return root


def _progress_bar(*, enabled: bool, description: str):
    """A bar only where someone watches (terminal, notebook); the CLI brings its own display."""
    from synclient.progress import ProgressMode, choose_mode, progress_observer
    if enabled and choose_mode() is ProgressMode.BAR:
        return progress_observer(description=description)
    return None


def _finish_report(outcome: RecordOutcome, platform: Platform, started: float, before: _CallCounts,
                   workers: Callable[[], List[WorkerCounts]]) -> None:
    """The report's totals: time, and the REST calls of this process and of the run's Dask workers."""
    report, now = outcome.report, _CallCounts.of(platform)
    report.wall_seconds = time.monotonic() - started
    report.workers = workers()
    report.rest_calls = now.calls - before.calls + sum(counts.rest_calls for counts in report.workers)
    report.retries = now.retries - before.retries + sum(counts.retries for counts in report.workers)
    report.throttled = now.throttled - before.throttled + sum(counts.throttled for counts in report.workers)


def _dask_settings(dask: Optional[object]) -> Optional["DaskSettings"]:
    """``dask=``: a ``distributed.Client`` or :class:`~synclient.cluster.driver.DaskSettings`, checked now."""
    if dask is None:
        return None
    from synclient.cluster.driver import DaskSettings
    return DaskSettings.of(dask)


def _dask_fetcher(cluster: "DaskSettings", run: SyncRun, observer: SyncObserver) -> "DaskFetcher":
    from synclient.cluster.driver import DaskFetcher
    return DaskFetcher(cluster, pool=run.pool, platform=run.platform, config=run.config, observer=observer)


@contextlib.contextmanager
def _fetching_on(run: SyncRun) -> Iterator[Callable[[], List[WorkerCounts]]]:
    """The run's Dask cluster (when it has one) takes its fetches while inside; yields what reads the workers'
    counts once the run is over."""
    if run.dask is None:
        yield list
        return
    with run.dask as fetcher:
        yield fetcher.worker_counts


def _remember_throughput(outcome: RecordOutcome, index: LocalIndex) -> None:
    """The next dry run into this target estimates its time from what this run measured."""
    report = outcome.report
    if report.bytes_downloaded and report.wall_seconds > 0:
        index.set_meta("bytes_per_second", str(report.bytes_downloaded / report.wall_seconds))
        index.set_meta("files_per_second", str(max(report.downloaded, 1) / report.wall_seconds))


def _estimate_from_history(plan: SyncPlan, index: LocalIndex) -> None:
    for key, attribute in (("bytes_per_second", "bytes_per_second"), ("files_per_second", "files_per_second")):
        value = index.meta(key)
        if value:
            setattr(plan, attribute, float(value))


syncFromPlatform = sync_from_platform  # the name notebook users know from synapseutils.syncFromSynapse
