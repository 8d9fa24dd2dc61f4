"""Where a run's files come from besides one folder walk: a list of ids, a dataset, a dataset collection.

:func:`plan_sources` turns what the user named into the run's starting work, before anything is written:

- the headers of every id in one ``POST /entity/header`` call (per 1,000 ids), not one call per id;
- a **file** lands in its folder under its entity name, at the version named (``syn1.3``) or its current one;
- a **project or folder** (only with ``recursive``) is walked into a sub-folder named after it;
- a **dataset** gives its items, each at its pinned version, flat in a folder named after the dataset (one
  ``GET /entity`` call for the items, then one header call for their names); a **dataset collection** gives a
  sub-folder per dataset;
- a source that **stands alone** (the only id) fills the target itself instead of a sub-folder of its name.

Two entries of one folder with the same name never overwrite each other: the first (in the order given; a
dataset's items in its order) keeps the name, each later one gets its id in the name, ``name (syn456).ext``
(``name (syn456.2).ext`` for another version of the same file), and the run reports the renaming. The same file
version named twice for one folder is fetched once. What cannot be fetched (an id that does not exist or may not be
read, a table, an item of a dataset that is not a file) fails as an entry of the report; a version on a container
and a container without ``recursive`` are usage errors (:class:`~synclient.errors.ConfigError`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Dict, List, Optional, Sequence, Set, Tuple

from synclient.client import Platform
from synclient.errors import ConfigError, NotFoundError, SynclientError, UnsupportedError
from synclient.models import EntityHeader, EntityType
from synclient.sync.id_lists import EntityRef


@dataclass(frozen=True)
class ListedContainer:
    """A project or folder of the list, walked into ``rel_dir`` ('' = the target itself)."""

    header: EntityHeader
    rel_dir: str


@dataclass(frozen=True)
class Renamed:
    """An entry that got another name than its own, because an earlier entry of its folder has that name."""

    entity: str  # syn123 or syn123.4
    wanted: str  # '/'-separated path it would have had
    given: str  # and the one it got

    def __str__(self) -> str:
        return f"{self.entity}: {self.wanted} -> {self.given} (the name was taken by an earlier entry)"


@dataclass
class SourcePlan:
    """The run's starting work: files at their paths, containers to walk, and what failed to resolve."""

    files: List[Tuple[EntityHeader, str]] = field(default_factory=list)
    containers: List[ListedContainer] = field(default_factory=list)
    refused: List[Tuple[EntityHeader, SynclientError]] = field(default_factory=list)
    renamed: List[Renamed] = field(default_factory=list)

    @property
    def walks_one_container(self) -> bool:
        """The whole plan is one project or folder synced into the target itself (a sync, as by id)."""
        return not self.files and not self.refused and [c.rel_dir for c in self.containers] == [""]


class _Folder:
    """The names already given in one local folder of the plan, in the order entries arrived."""

    def __init__(self) -> None:
        self.taken: Set[str] = set()
        self.fetched: Set[Tuple[str, Optional[int]]] = set()  # (id, version) already placed here

    def name_for(self, name: str, header: EntityHeader, *, is_folder: bool) -> str:
        if name not in self.taken:
            self.taken.add(name)
            return name
        stem, suffix = (name, "") if is_folder else os.path.splitext(name)
        labels = [header.id] + ([f"{header.id}.{header.version_number}"] if header.version_number else [])
        candidates = [f"{stem} ({label}){suffix}" for label in labels]
        while all(candidate in self.taken for candidate in candidates):  # only names made to clash with ours
            candidates.append(f"{stem} ({labels[-1]}-{len(candidates)}){suffix}")
        given = next(candidate for candidate in candidates if candidate not in self.taken)
        self.taken.add(given)
        return given


class _Planner:
    def __init__(self, platform: Platform, *, recursive: bool) -> None:
        self._platform = platform
        self._recursive = recursive
        self._folders: Dict[str, _Folder] = {}
        self.plan = SourcePlan()

    def _folder(self, rel_dir: str) -> _Folder:
        return self._folders.setdefault(rel_dir, _Folder())

    def place(self, rel_dir: str, name: str, header: EntityHeader, *, is_folder: bool) -> str:
        given = self._folder(rel_dir).name_for(name, header, is_folder=is_folder)
        if given != name:
            label = header.id if not header.version_number or is_folder else f"{header.id}.{header.version_number}"
            self.plan.renamed.append(Renamed(label, _join(rel_dir, name), _join(rel_dir, given)))
        return _join(rel_dir, given)

    def add_file(self, header: EntityHeader, rel_dir: str) -> None:
        folder = self._folder(rel_dir)
        key = (header.id, header.version_number)
        if key in folder.fetched:  # the same file version twice in one folder: once is enough
            return
        folder.fetched.add(key)
        self.plan.files.append((header, self.place(rel_dir, header.name, header, is_folder=False)))

    def add_container(self, header: EntityHeader, rel_dir: str, *, standalone: bool) -> None:
        where = "" if standalone else self.place(rel_dir, header.name, header, is_folder=True)
        self.plan.containers.append(ListedContainer(header, where))

    def add_items(self, holders: Sequence[Tuple[EntityHeader, Optional[int], str]]) -> None:
        """Datasets (and the datasets of collections), each with its version and its folder: their items, with
        every item's name from one header call for all of them."""
        items: List[Tuple[str, Optional[int], str, str]] = []  # (item id, version, folder, holder id)
        collections: List[Tuple[EntityHeader, Optional[int], str]] = []
        for header, version, rel_dir in holders:
            try:
                entity = self._platform.get_entity(header.id, version=version)
            except SynclientError as exc:
                self.plan.refused.append((header, exc))
                continue
            if header.type is EntityType.DATASET_COLLECTION:
                collections.append((header, version, rel_dir))
            items.extend((item_id, item_version, rel_dir, header.id) for item_id, item_version in entity.items)
        if not items:
            return
        headers = self._platform.get_entity_headers([item_id for item_id, *_ in items])
        datasets: List[Tuple[EntityHeader, Optional[int], str]] = []
        collection_ids = {header.id for header, *_ in collections}
        for item_id, item_version, rel_dir, holder in items:
            item = headers.get(item_id)
            if item is None:
                self.plan.refused.append((_unknown(item_id, item_version), NotFoundError(
                    f"{item_id}, an item of {holder}, does not exist or may not be read")))
            elif holder in collection_ids:
                if item.type is not EntityType.DATASET:
                    self.plan.refused.append((item, UnsupportedError(
                        f"{item_id}, an item of the dataset collection {holder}, is a {item.type.label}, not a "
                        "dataset")))
                    continue
                folder = self.place(rel_dir, item.name, item, is_folder=True)
                datasets.append((item, item_version, folder))
            elif item.type is not EntityType.FILE:
                self.plan.refused.append((item, UnsupportedError(
                    f"{item_id}, an item of the dataset {holder}, is a {item.type.label}, not a file")))
            else:
                self.add_file(replace(item, version_number=item_version or item.version_number), rel_dir)
        if datasets:
            self.add_items(datasets)


def plan_sources(platform: Platform, refs: Sequence[EntityRef], *, recursive: bool,
                 known: Sequence[EntityHeader] = ()) -> SourcePlan:
    """What ``refs`` name, resolved into a :class:`SourcePlan` (see the module docstring). ``known``: headers the
    caller already has (they are not asked for again)."""
    if not refs:
        raise ConfigError("no ids to download")
    headers = {header.id: header for header in known}
    missing = [ref.entity_id for ref in refs if ref.entity_id not in headers]
    if missing:
        headers.update(platform.get_entity_headers(missing))
    standalone = len(refs) == 1
    planner = _Planner(platform, recursive=recursive)
    holders: List[Tuple[EntityHeader, Optional[int], str]] = []
    for ref in refs:
        header = headers.get(ref.entity_id)
        if header is None:
            planner.plan.refused.append((_unknown(ref.entity_id, ref.version), NotFoundError(
                f"{ref} does not exist or may not be read", status=404)))
            continue
        kind = header.type
        if kind is EntityType.FILE:
            planner.add_file(replace(header, version_number=ref.version or header.version_number), "")
        elif kind.is_container:
            _check_container(ref, kind, recursive=recursive)
            planner.add_container(header, "", standalone=standalone)
        elif kind.has_items:
            # alone, a dataset's items fill the target and a collection's datasets are its sub-folders
            folder = "" if standalone else planner.place("", header.name, header, is_folder=True)
            holders.append((header, ref.version, folder))
        else:
            planner.plan.refused.append((header, UnsupportedError(
                f"{ref} is a {kind.label}; synclient downloads files, projects, folders, datasets and dataset "
                "collections")))
    if holders:
        planner.add_items(holders)
    return planner.plan


def _check_container(ref: EntityRef, kind: EntityType, *, recursive: bool) -> None:
    if ref.version is not None:
        raise ConfigError(f"{ref}: a {kind.label} has no versions to choose from; name it without a version")
    if not recursive:
        raise ConfigError(f"{ref.entity_id} is a {kind.label}; pass -r (recursive=True) to download it")


def _unknown(entity_id: str, version: Optional[int]) -> EntityHeader:
    return EntityHeader(id=entity_id, name=entity_id, type=EntityType.OTHER, version_number=version)


def _join(rel_dir: str, name: str) -> str:
    return f"{rel_dir}/{name}" if rel_dir else name
