"""Where a run's files come from besides one folder walk: a list of ids, a dataset, a dataset collection.

Two steps. :func:`plan_sources` resolves what the user named before anything is written:

- the headers of every id in one ``POST /entity/header`` call (per 1,000 ids), not one call per id;
- a **file** lands in its folder under its entity name, at the version named (``syn1.3``) or its current one;
- a **project or folder** (only with ``recursive``) is walked into a sub-folder named after it;
- a **dataset** gives its items, each at its pinned version, flat in a folder named after the dataset (one
  ``GET /entity`` call for the items, then one header call for their names); a **dataset collection** gives a
  sub-folder per dataset;
- a source that **stands alone** (the only id) fills the target itself instead of a sub-folder of its name.

What cannot be fetched (an id that does not exist or may not be read, a table, an item of a dataset that is not a
file) fails as an entry of the report; a version on a container and a container without ``recursive`` are usage
errors (:class:`~synclient.errors.ConfigError`). The same entity (and version) named twice for one folder is
fetched once.

Then :meth:`SourcePlan.laid_out` names every entry, once the target's index is open. Two entries never share a
path, and no entry takes a path the index holds for another file (a file of an earlier list, of a synced tree, a
``keep.both`` copy): an entry that already has a path in the index keeps it (names do not flip when the list's order
changes); otherwise the first entry in the order given (a dataset's items in its order) gets its name, and each later
one its id in it, ``name (syn456).ext``, or ``name (syn456.2).ext`` when that file's id is already in the name of
another of its versions. Each renaming is reported. Paths are :class:`~synclient.sync.local.name_gate.RemotePath`
values: an entry whose name can be no path component (a ``/``, ``..``, NUL, too long) is refused alone, with what it
holds, as the walk refuses it; the runner's name gate makes the local paths.
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass, field, replace
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

from synclient.errors import ConfigError, NotFoundError, SynclientError, UnsupportedError
from synclient.platform.models import EntityHeader, EntityType, FileHandle
from synclient.platform.rest import Platform
from synclient.sync.local.name_gate import RemotePath
from synclient.sync.records.index import IndexRow
from synclient.sync.sources.id_lists import EntityRef


class EntryKind(enum.Enum):
    FILE = "file"
    CONTAINER = "container"  # a project or folder, walked
    FOLDER = "folder"  # a dataset's or collection's folder, holding its entries


@dataclass
class Entry:
    """One thing of the plan, in the folder it belongs to: a file, a container to walk, or a folder of entries."""

    header: EntityHeader
    kind: EntryKind
    children: List[Entry] = field(default_factory=list)  # a FOLDER's entries, in order
    earlier_version: bool = False  # a FILE at a version before its current one (a walk of its folder has another)


@dataclass(frozen=True)
class FileVersionFacts:
    """What deciding and fetching a file version takes: from its bundle call, or from a file view's row."""

    handle: FileHandle
    version: Optional[int]
    parent_id: Optional[str]
    annotations: dict = field(default_factory=dict)
    entity: Optional[dict] = None  # the entity's record (a bundle's; a view row has none)
    from_row: bool = False  # a file view's row, not a bundle: what it says may lag behind the platform
    modified_on: Optional[str] = None  # a row's modifiedOn (the size and age filters); a bundle's is its entity's


#: file versions described before any bundle call (a file view's rows): (entity id, version) -> their facts
DescribedFiles = Dict[Tuple[str, Optional[int]], FileVersionFacts]


@dataclass(frozen=True)
class ListedContainer:
    """A project or folder of the list (or a dataset's folder), walked into (or holding the files of) ``remote``
    (``RemotePath()`` = the target itself)."""

    header: EntityHeader
    remote: RemotePath

    @property
    def rel_dir(self) -> str:
        return self.remote.text


@dataclass(frozen=True)
class Renamed:
    """An entry that got another name than its own, because its name was taken."""

    entity: str  # syn123 or syn123.4
    wanted: str  # '/'-separated path it would have had
    given: str  # and the one it got

    def __str__(self) -> str:
        return f"{self.entity}: {self.wanted} -> {self.given} (the name was taken)"


@dataclass
class Layout:
    """The plan with every name settled: files at their paths, containers with their folders, the folders of
    datasets and collections, the renamings, and the entries whose name can be no local name (each refused alone,
    with what it holds)."""

    files: List[Tuple[EntityHeader, RemotePath]] = field(default_factory=list)
    containers: List[ListedContainer] = field(default_factory=list)
    folders: List[ListedContainer] = field(default_factory=list)
    renamed: List[Renamed] = field(default_factory=list)
    refused: List[Tuple[EntityHeader, SynclientError]] = field(default_factory=list)


#: the index rows directly in a '/'-separated folder of the target ('' for the target itself)
RowsIn = Callable[[str], Sequence[IndexRow]]
#: a name as the local filesystem compares it (the name itself where it compares names exactly)
SameName = Callable[[str], str]


@dataclass
class SourcePlan:
    """What the ids resolved to (the target folder's entries, in order), and what failed to resolve."""

    entries: List[Entry] = field(default_factory=list)
    refused: List[Tuple[EntityHeader, SynclientError]] = field(default_factory=list)
    standalone: bool = False  # one id: it fills the target itself

    @property
    def one_container(self) -> Optional[EntityHeader]:
        """The project or folder that is the whole plan (synced into the target itself, as by id), if so."""
        only = self.entries[0] if len(self.entries) == 1 and not self.refused else None
        return only.header if only is not None and only.kind is EntryKind.CONTAINER and self.standalone else None

    def laid_out(self, rows_in: RowsIn, *, same_name: SameName = str, reserved: Sequence[str] = ()) -> Layout:
        """Every entry named (see the module docstring), against the target's index (``rows_in``). ``same_name``:
        what the local filesystem compares of a name (two names with one value are one file there: case- or
        Unicode-insensitive folders; see :mod:`synclient.sync.local.local_names`); ``reserved``: names no entry at the
        target's top may take (synclient's index folder, as the filesystem compares names)."""
        layout = Layout()
        if self.one_container is not None:
            layout.containers.append(ListedContainer(self.one_container, RemotePath()))
            return layout
        _name_folder(self.entries, RemotePath(), rows_in, layout, same_name, reserved)
        return layout


def plan_sources(
    platform: Platform,
    refs: Sequence[EntityRef],
    *,
    recursive: bool,
    known: Sequence[EntityHeader] = (),
    standalone: Optional[bool] = None,
) -> SourcePlan:
    """What ``refs`` name, resolved into a :class:`SourcePlan` (see the module docstring). ``known``: headers the
    caller already has (they are not asked for again); ``standalone``: whether one id fills the target itself
    (default: when it is the only one; a query's selection never does, whatever its row count)."""
    if not refs:
        raise ConfigError("no ids to download")
    headers = {header.id: header for header in known}
    missing = [ref.entity_id for ref in refs if ref.entity_id not in headers]
    if missing:
        headers.update(platform.get_entity_headers(missing))
    plan = SourcePlan(standalone=len(refs) == 1 if standalone is None else standalone)
    root = _Folder(plan.entries)
    holders: List[Tuple[EntityHeader, Optional[int], _Folder]] = []
    for ref in refs:
        header = headers.get(ref.entity_id)
        if header is None:
            plan.refused.append(
                (
                    _unknown(ref.entity_id, ref.version),
                    NotFoundError(f"{ref} does not exist or may not be read", status=404),
                )
            )
            continue
        kind = header.type
        if kind is EntityType.FILE:
            root.add(
                replace(header, version_number=ref.version or header.version_number),
                EntryKind.FILE,
                earlier_version=_earlier(ref.version, header),
            )
        elif kind.is_container:
            check_container_ref(ref, kind)
            if not recursive:
                raise ConfigError(f"{ref.entity_id} is a {kind.label}; pass -r (recursive=True) to download it")
            root.add(header, EntryKind.CONTAINER)
        elif kind.has_items:
            # alone, a dataset's items fill the target and a collection's datasets are its sub-folders
            folder = (
                root if plan.standalone else root.add(replace(header, version_number=ref.version), EntryKind.FOLDER)
            )
            if folder is not None:
                holders.append((header, ref.version, folder))
        else:
            hint = (
                f'; select its files with a query: --query "SELECT id FROM {ref.entity_id} WHERE ..."'
                if kind.is_queryable
                else ""
            )
            plan.refused.append(
                (
                    header,
                    UnsupportedError(
                        f"{ref} is a {kind.label}; synclient downloads files, projects, folders, datasets and dataset "
                        f"collections{hint}"
                    ),
                )
            )
    if holders:
        _add_items(platform, holders, plan, strict=plan.standalone)
    return plan


def check_container_ref(ref: EntityRef, kind: EntityType) -> None:
    """A project or folder has no versions: naming one is a usage error."""
    if ref.version is not None:
        raise ConfigError(f"{ref}: a {kind.label} has no versions to choose from; name it without a version")


class _Folder:
    """A folder of the plan being filled: its entries, and what it already holds (an entity twice is once)."""

    def __init__(self, entries: List[Entry]) -> None:
        self.entries = entries
        self._held: Set[Tuple[str, Optional[int]]] = set()

    def add(self, header: EntityHeader, kind: EntryKind, *, earlier_version: bool = False) -> Optional[_Folder]:
        """Add an entry (not when the same entity and version is here already); a FOLDER entry's own _Folder."""
        key = (header.id, header.version_number)
        if key in self._held:
            return None
        self._held.add(key)
        entry = Entry(header, kind, earlier_version=earlier_version)
        self.entries.append(entry)
        return _Folder(entry.children) if kind is EntryKind.FOLDER else None


def _earlier(version: Optional[int], current: EntityHeader) -> bool:
    """Whether ``version`` (the one named) is a file's earlier version, by its header (the current one's)."""
    return version is not None and current.version_number is not None and version < current.version_number


def _add_items(
    platform: Platform,
    holders: Sequence[Tuple[EntityHeader, Optional[int], _Folder]],
    plan: SourcePlan,
    *,
    strict: bool,
) -> None:
    """The items of datasets and collections (each with its version and its folder), every item's name from one
    header call for all of them; the datasets of collections in turn. ``strict``: a holder that cannot be read
    is an error of the whole run (the only id), not one failed entry."""
    items: List[Tuple[str, Optional[int], _Folder, EntityHeader]] = []
    for header, version, folder in holders:
        try:
            entity = platform.get_entity(header.id, version=version)
        except SynclientError as exc:
            if strict:
                raise
            plan.refused.append((header, exc))
            continue
        items.extend((item_id, item_version, folder, header) for item_id, item_version in entity.items)
    if not items:
        return
    headers = platform.get_entity_headers([item_id for item_id, *_ in items])
    datasets: List[Tuple[EntityHeader, Optional[int], _Folder]] = []
    for item_id, item_version, folder, holder in items:
        item = headers.get(item_id)
        wanted = EntityType.DATASET if holder.type is EntityType.DATASET_COLLECTION else EntityType.FILE
        if item is None:
            plan.refused.append(
                (
                    _unknown(item_id, item_version),
                    NotFoundError(f"{item_id}, an item of {holder.id}, does not exist or may not be read"),
                )
            )
        elif item.type is not wanted:
            plan.refused.append(
                (
                    item,
                    UnsupportedError(
                        f"{item_id}, an item of the {holder.type.label} {holder.id}, is a {item.type.label}, not a "
                        f"{wanted.label}"
                    ),
                )
            )
        elif wanted is EntityType.DATASET:
            inner = folder.add(replace(item, version_number=item_version), EntryKind.FOLDER)
            if inner is not None:
                datasets.append((item, item_version, inner))
        else:
            folder.add(
                replace(item, version_number=item_version or item.version_number),
                EntryKind.FILE,
                earlier_version=_earlier(item_version, item),
            )
    if datasets:
        _add_items(platform, datasets, plan, strict=False)


# -- naming --------------------------------------------------------------------------------------------------------


class _Names:
    """The names of one folder: those this run gave, and those the index holds (name -> entity ids there)."""

    def __init__(
        self, rows: Sequence[IndexRow], folder: str, same_name: SameName = str, reserved: Sequence[str] = ()
    ) -> None:
        self._same = same_name  # names are compared as the local filesystem compares them
        self.given: Set[str] = {same_name(name) for name in reserved}
        self.given_to: Dict[str, Set[str]] = {}  # entity id -> names this run gave it here
        self.held: Dict[str, Set[str]] = {}
        prefix = f"{folder}/" if folder else ""
        for row in rows:
            for path in {row.rel_path, row.local_path}:
                name = path[len(prefix) :] if path.startswith(prefix) else None
                if name and "/" not in name:
                    self.held.setdefault(same_name(name), set()).add(row.entity_id)

    def free_for(self, name: str, entity_id: str) -> bool:
        key = self._same(name)
        return key not in self.given and self.held.get(key, {entity_id}) == {entity_id}

    def name_for(self, entry: Entry) -> str:
        header = entry.header
        candidates = _candidates(
            header.name,
            header,
            is_folder=entry.kind is not EntryKind.FILE,
            versioned_first=bool(self.given_to.get(header.id)),
        )
        # a name the index already holds for this file first: names do not flip when the list's order changes
        given = next(
            (
                c
                for c in candidates
                if self._same(c) not in self.given
                and entry.kind is EntryKind.FILE
                and self.held.get(self._same(c)) == {header.id}
            ),
            None,
        )
        given = given or next((c for c in candidates if self.free_for(c, header.id)), None)
        n = 2
        while given is None:  # only names made to clash with ours get here
            stem, suffix = os.path.splitext(candidates[-1])
            numbered = f"{stem}-{n}{suffix}"
            given = numbered if self.free_for(numbered, header.id) else None
            n += 1
        self.given.add(self._same(given))
        self.given_to.setdefault(header.id, set()).add(given)
        return given


def _candidates(name: str, header: EntityHeader, *, is_folder: bool, versioned_first: bool) -> List[str]:
    """``name``, then ``name (syn1).ext`` and ``name (syn1.2).ext`` (the versioned one first when another version
    of the same file already has a name here)."""
    stem, suffix = (name, "") if is_folder else os.path.splitext(name)
    labels = [header.id] + ([f"{header.id}.{header.version_number}"] if header.version_number and not is_folder else [])
    if versioned_first:
        labels.reverse()
    return [name] + [f"{stem} ({label}){suffix}" for label in labels]


def _name_folder(
    entries: Sequence[Entry],
    folder: RemotePath,
    rows_in: RowsIn,
    layout: Layout,
    same_name: SameName = str,
    reserved: Sequence[str] = (),
) -> None:
    names = _Names(rows_in(folder.text), folder.text, same_name, reserved)
    for entry in entries:
        try:
            folder.child(entry.header.name)  # a name that can be no path component is refused, as the walk does
            path = folder.child(names.name_for(entry))  # (and its renaming, if that is too long to be one)
        except SynclientError as exc:
            layout.refused.append((entry.header, exc))
            continue
        if path.name != entry.header.name:
            version = entry.header.version_number
            label = f"{entry.header.id}.{version}" if version and entry.kind is EntryKind.FILE else entry.header.id
            layout.renamed.append(Renamed(label, folder.child(entry.header.name).text, path.text))
        if entry.kind is EntryKind.FILE:
            layout.files.append((entry.header, path))
        elif entry.kind is EntryKind.CONTAINER:
            layout.containers.append(ListedContainer(entry.header, path))
        else:
            layout.folders.append(ListedContainer(entry.header, path))
            _name_folder(entry.children, path, rows_in, layout, same_name)


def _unknown(entity_id: str, version: Optional[int]) -> EntityHeader:
    return EntityHeader(id=entity_id, name=entity_id, type=EntityType.OTHER, version_number=version)
