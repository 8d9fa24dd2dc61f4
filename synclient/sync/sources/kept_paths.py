"""``--keep-paths`` (``keep_paths=True``): a list's files at their remote paths, ``<project name>/<folder path>/<name>``
under the target, the path a tree sync of their project into ``TARGET/<project name>`` gives them.

A list's plan (:mod:`synclient.sync.sources.by_id`) knows each file's header, and a header has no ``parentId``.
Each file's parent comes from the cheapest source that says it, in this order, with no call a flat layout of the
same list would not make:

1. a file view's row (a query over a view that selects its ``parentId`` column: the ``described`` facts,
   :mod:`synclient.sync.sources.queries`; or the rows of ``view=``, read once);
2. this target's index, for a file version it holds untouched (the fast path: no call for that file in a flat
   layout either; the parent it recorded), when the row has the file in that parent's path (a flat list's row
   does not: its parent may be where the file was, not where it is);
3. the file's bundle, the call the run makes for it anyway, made here at plan time (``fetches`` at once) and handed
   on as ``described`` facts so the pipeline does not make it again. A file whose bundle fails is refused here, with
   the bundle's error, as the pipeline would refuse it. A file whose folder from 1. or 2. no longer exists (its path
   call answers 404: the file moved, the folder was deleted) is asked its bundle too.

Then :class:`~synclient.sync.sources.remote_paths.FolderPaths` learns every parent's path (at most one
``GET /entity/{id}/path`` per distinct parent folder, none for a folder an earlier answer's chain named; one
``POST /entity/header`` batch per 1,000 items a path names ``Redacted``), and the plan is rebuilt as a tree: a
folder entry per project and folder of those paths, each file in its folder. The list's naming rules then apply as
to any folder of a list (:meth:`~synclient.sync.sources.by_id.SourcePlan.laid_out`): the same entity at two versions
gets ``name (syn1.2).ext`` for the later one; two projects of the same name are two folders, the later in the list's
order named ``name (syn4)`` (reported as a renaming).

The index rows stay this target's (owned by the list, as a flat list's are). A later tree sync of a project into
``TARGET/<project name>`` is a target of its own with its own index, and downloads none of these files: the planner
finds each at its path with the remote's size and MD5 (hashed once) and adopts it into that index
(:func:`~synclient.sync.plan.planner.decide`, ``ADOPT``), as it adopts any such copy; nothing writes one target's
rows into another's index.

A project or folder of the list (``-r``) is walked into its own remote path too, and the list's files inside it are
its walk's. A file whose folder has no path (it may not be read, or a name in its chain can be no local name: the
run's name gate checks each), or an earlier version of a file of a walked folder (the walk has the current one at
its path), stays where the list puts it without ``--keep-paths`` (the target's top, or its dataset's folder), each
with a one-line note (:attr:`KeptPaths.notes`).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

from synclient.errors import SynclientError
from synclient.platform.models import EntityHeader, EntityType, FileBundle, FileHandle
from synclient.platform.rest import Platform
from synclient.sync.records.index import IndexRow, LocalIndex
from synclient.sync.sources.by_id import DescribedFiles, Entry, EntryKind, FileVersionFacts, SourcePlan
from synclient.sync.sources.remote_paths import FolderPaths, LocalPathOf

#: a file version's bundle (``POST /entity/{id}/bundle2``, with its annotations)
BundleOf = Callable[[EntityHeader], FileBundle]
#: what a file view's row says of a file version (``view=``: :class:`~synclient.sync.sources.queries.ViewRows`)
ViewFacts = Callable[[str, Optional[int]], Optional[FileVersionFacts]]
#: the parent this target's index recorded for a file version it holds untouched, or None
IndexedParent = Callable[[EntityHeader], Optional[str]]
#: the remote folder path (``<project name>/<folder path>``, '' at the target's top) of the index row that
#: :data:`IndexedParent` answered from
IndexedFolder = Callable[[EntityHeader], Optional[str]]


@dataclass
class KeptPaths:
    """The plan rebuilt at remote paths, the facts of the bundles made to learn parents (the pipeline's, handed on),
    the notes of files that land flat, and the calls made."""

    plan: SourcePlan
    described: DescribedFiles = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)
    bundle_calls: int = 0
    path_calls: int = 0


def keep_remote_paths(
    plan: SourcePlan,
    *,
    folder_paths: FolderPaths,
    bundle_of: BundleOf,
    described: DescribedFiles,
    indexed_parent: IndexedParent,
    fetches: int,
    view: Optional[ViewFacts] = None,
    cancel: Optional[threading.Event] = None,
    indexed_folder: Optional[IndexedFolder] = None,
) -> KeptPaths:
    """``plan`` with its files (and containers) at their remote paths (see the module docstring). ``cancel``: set
    when Ctrl-C stops the bundle calls (the platform's calls waiting to retry stop on it). ``indexed_folder``:
    where the index row that gave a parent has its file; a row whose file is not in that parent's path (a flat
    list's row, made before the file moved) says nothing of where the file is now: its bundle is asked."""
    files = [entry for entry in _entries(plan.entries) if entry.kind is EntryKind.FILE]
    containers = [entry for entry in plan.entries if entry.kind is EntryKind.CONTAINER]
    kept = KeptPaths(SourcePlan(refused=list(plan.refused), standalone=False))
    parents: Dict[Tuple[str, Optional[int]], str] = {}
    to_fetch: Dict[Tuple[str, Optional[int]], EntityHeader] = {}  # (the same file version twice is asked once)
    from_index: Set[Tuple[str, Optional[int]]] = set()
    for entry in files:
        key = _key(entry.header)
        known = described.get(key) or (view(*key) if view is not None else None)
        parent = known.parent_id if known is not None else None
        if parent is None:
            parent = indexed_parent(entry.header)
            if parent is not None:
                from_index.add(key)
        if parent is not None:
            parents[key] = parent
        else:
            to_fetch.setdefault(key, entry.header)
    failed: Dict[Tuple[str, Optional[int]], SynclientError] = {}
    cancel = cancel or threading.Event()

    def fetch(headers: Sequence[EntityHeader]) -> None:
        for header, outcome in _bundles(headers, bundle_of, fetches, cancel):
            kept.bundle_calls += 1
            key = _key(header)
            parents.pop(key, None)
            if isinstance(outcome, SynclientError):
                failed[key] = outcome
                continue
            assert isinstance(outcome, FileBundle)
            if outcome.file_handle is not None:  # (one without: the pipeline's own call says why it fails)
                kept.described[key] = _facts(outcome, outcome.file_handle)
            if outcome.entity.parent_id is not None:
                parents[key] = outcome.entity.parent_id

    fetch(list(to_fetch.values()))
    before = folder_paths.calls
    folder_paths.resolve([entry.header.id for entry in containers] + list(dict.fromkeys(parents.values())))
    # a folder a view's row or the index named that no longer exists (the file moved, its folder deleted), or an
    # index row whose file is elsewhere than in its parent's path (a flat list's row, the file moved since): the
    # file's bundle says where it is now (a call only for those files; the pipeline would make it to download)

    def elsewhere(key: Tuple[str, Optional[int]], header: EntityHeader) -> bool:
        if key not in from_index or indexed_folder is None:
            return False
        path, folder = folder_paths.path(parents[key]), indexed_folder(header)
        return path is not None and folder is not None and path.text != folder

    moved = {
        key: entry.header
        for entry in files
        for key in [_key(entry.header)]
        if key not in to_fetch and key in parents and (folder_paths.gone(parents[key]) or elsewhere(key, entry.header))
    }
    if moved:
        fetch(list(moved.values()))
        folder_paths.resolve(dict.fromkeys(parents[key] for key in moved if key in parents))
    kept.path_calls = folder_paths.calls - before

    tree = _Tree(kept.plan.entries)
    walked = {entry.header.id for entry in containers if folder_paths.path(entry.header.id) is not None}
    flat_containers: List[Entry] = []
    for entry in containers:
        chain = folder_paths.chain(entry.header.id)
        error = folder_paths.failure(entry.header.id)
        if error is not None:  # (its path call failed: the next run places it)
            kept.plan.refused.append((entry.header, error))
        elif not chain:
            flat_containers.append(entry)
            kept.notes.append(f"{entry.header.id} lands flat: {folder_paths.why_flat(entry.header.id)}")
        elif not any(item.id in walked for item in chain[:-1]):  # (inside another container of the list: walked)
            tree.place(chain[:-1], entry)
    flat_files: Set[int] = set()
    for entry in files:
        key = _key(entry.header)
        if key in failed:
            kept.plan.refused.append((entry.header, failed[key]))
            continue
        parent = parents.get(key)
        chain = folder_paths.chain(parent) if parent is not None else ()
        error = folder_paths.failure(parent) if parent is not None else None
        if error is not None:
            kept.plan.refused.append((entry.header, error))
        elif not chain:
            flat_files.add(id(entry))
            why = folder_paths.why_flat(parent) if parent is not None else "its bundle names no parent"
            kept.notes.append(f"{_label(entry.header)} lands flat: {why}")
        elif not any(item.id in walked for item in chain):  # (a file of a listed container is its walk's)
            tree.place(chain, entry)
        elif entry.earlier_version:  # the walk has its current version at that path: this one lands flat
            flat_files.add(id(entry))
            walk = next(item.id for item in chain if item.id in walked)
            kept.notes.append(
                f"{_label(entry.header)} lands flat: the walk of {walk} puts its current version at its path"
            )
    # what has no remote path stays where the list puts it (a dataset's folder keeps only those files)
    kept.plan.entries.extend(flat_containers + _flat_part(plan.entries, flat_files))
    return kept


class _Tree:
    """The rebuilt plan: a folder entry per container of a path (once), each holding its entries in order."""

    def __init__(self, entries: List[Entry]) -> None:
        self._top = entries
        self._folders: Dict[str, Entry] = {}
        self._held: Set[Tuple[int, str, Optional[int]]] = set()

    def place(self, chain: Sequence[EntityHeader], entry: Entry) -> None:
        siblings = self._top
        for item in chain:
            folder = self._folders.get(item.id)
            if folder is None:
                folder = Entry(EntityHeader(item.id, item.name, item.type), EntryKind.FOLDER)
                self._folders[item.id] = folder
                siblings.append(folder)
            siblings = folder.children
        key = (id(siblings), entry.header.id, entry.header.version_number)
        if key not in self._held:  # the same file version twice (two datasets hold it) is one file
            self._held.add(key)
            siblings.append(Entry(entry.header, entry.kind))


def _flat_part(entries: Sequence[Entry], flat_files: Set[int]) -> List[Entry]:
    """The entries of the original plan that stay flat: files that have no path, in the folders that hold them."""
    kept: List[Entry] = []
    for entry in entries:
        if entry.kind is EntryKind.FILE and id(entry) in flat_files:
            kept.append(entry)
        elif entry.kind is EntryKind.FOLDER:
            children = _flat_part(entry.children, flat_files)
            if children:
                kept.append(Entry(entry.header, entry.kind, children))
    return kept


def _entries(entries: Sequence[Entry]) -> List[Entry]:
    """Every entry of the plan, depth first, in order."""
    found: List[Entry] = []
    for entry in entries:
        found.append(entry)
        found.extend(_entries(entry.children))
    return found


def _bundles(
    headers: Sequence[EntityHeader], bundle_of: BundleOf, fetches: int, cancel: threading.Event
) -> List[Tuple[EntityHeader, object]]:
    """Each file version's bundle (or the error that refused it), ``fetches`` calls at once."""

    def one(header: EntityHeader) -> Tuple[EntityHeader, object]:
        try:
            return header, bundle_of(header)
        except SynclientError as exc:
            return header, exc

    if len(headers) <= 1:
        return [one(header) for header in headers]
    pool = ThreadPoolExecutor(max_workers=max(1, min(fetches, len(headers))), thread_name_prefix="synclient-paths")
    interrupted = False
    try:
        return list(pool.map(one, headers))
    except BaseException:
        interrupted = True
        cancel.set()  # (the calls under way stop waiting to retry, as the run's pool stops them)
        raise
    finally:  # Ctrl-C: the calls not yet started are dropped, those under way not waited for
        pool.shutdown(wait=not interrupted, cancel_futures=True)


def _facts(bundle: FileBundle, handle: FileHandle) -> FileVersionFacts:
    """What the pipeline takes from a file's bundle (pipeline.py's ``_bundle`` makes the same facts)."""
    return FileVersionFacts(
        handle,
        bundle.entity.version_number,
        bundle.entity.parent_id,
        (bundle.annotations or {}).get("annotations") or {},
        bundle.entity.raw,
    )


def _key(header: EntityHeader) -> Tuple[str, Optional[int]]:
    return header.id, header.version_number


def _label(header: EntityHeader) -> str:
    version = header.version_number
    return header.id if version is None or header.type is not EntityType.FILE else f"{header.id}.{version}"


def kept_paths_of(
    plan: SourcePlan,
    *,
    platform: Platform,
    index: LocalIndex,
    root_id: str,
    described: DescribedFiles,
    fetches: int,
    view: Optional[ViewFacts] = None,
    local_path: Optional[LocalPathOf] = None,
) -> KeptPaths:
    """:func:`keep_remote_paths` for a run: its platform's calls, its target's index rows (owned by ``root_id``),
    its name gate's check of each folder's local name (``local_path``)."""
    wanted = {_key(entry.header) for entry in _entries(plan.entries) if entry.kind is EntryKind.FILE}
    # (streamed: only the list's rows are kept, however many earlier lists the target's index holds)
    rows = {key: row for row in index.iter_rows(root_id) for key in [(row.entity_id, row.version)] if key in wanted}
    cancel = threading.Event()

    def indexed_row(header: EntityHeader) -> Optional[IndexRow]:
        row = rows.get((header.id, header.version_number))
        return row if row is not None and row.local_stat_matches(index.target_root) else None

    def indexed_parent(header: EntityHeader) -> Optional[str]:
        row = indexed_row(header)
        return row.parent_id if row is not None else None

    def indexed_folder(header: EntityHeader) -> Optional[str]:
        row = indexed_row(header)
        return row.rel_path.rpartition("/")[0] if row is not None else None

    with platform.cancel_on(cancel):
        return keep_remote_paths(
            plan,
            folder_paths=FolderPaths(platform.get_entity_path, platform.get_entity_headers, local_path),
            bundle_of=lambda header: platform.get_file_bundle(
                header.id, version=header.version_number, include_annotations=True
            ),
            described=described,
            indexed_parent=indexed_parent,
            fetches=fetches,
            view=view,
            cancel=cancel,
            indexed_folder=indexed_folder,
        )
