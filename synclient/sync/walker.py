"""Concurrent traversal of the remote tree on the shared pool.

Each children page is one LISTING task; it creates the local folders it finds, hands the page's files to the runner
together (each with its destination and its '/'-separated path relative to the sync root), and submits its
sub-folders and its own next page as new tasks. Nothing waits inside the pool. With ``follow_links`` a Link entity
is resolved (two calls) to the file or folder it points to, which then appears under the link's own name; a link
to a folder that is already on the path from the root is a cycle and is reported, not followed.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, FrozenSet, List, NamedTuple, Optional, Set

from synclient.client import Platform
from synclient.errors import FileInTheWayError, SynclientError, UnsafePathError
from synclient.models import EntityHeader, EntityType
from synclient.sync.filters import PathFilter
from synclient.sync.manifest import MANIFEST_FILENAMES
from synclient.sync.paths import TargetDirectory
from synclient.transfer.pool import Priority, TaskPool

log = logging.getLogger("synclient.sync")


class FoundFile(NamedTuple):
    """A file of the remote tree, where it lands locally, and its '/'-separated path relative to the sync root."""

    header: EntityHeader
    destination: Path
    rel_path: str
    parent_id: Optional[str] = None  # the folder whose listing showed it (None: named by id, or through a link)


FilesFound = Callable[[List[FoundFile]], None]  # the files of one listing page at a time
EntityFailed = Callable[[EntityHeader, Optional[Path], SynclientError], None]
MakeRoom = Callable[[str, Path], bool]  # (rel path, local path) of a file in a remote folder's way: removed?


@dataclass(frozen=True)
class Folder:
    """A container being listed, where it lands locally, and the containers above it (for cycle checks)."""

    header: EntityHeader
    local_dir: Path
    rel_dir: str
    ancestors: FrozenSet[str]

    def rel(self, name: str) -> str:
        return f"{self.rel_dir}/{name}" if self.rel_dir else name


class TreeWalker:
    def __init__(self, *, platform: Platform, pool: TaskPool, target: TargetDirectory, on_files: FilesFound,
                 on_failure: EntityFailed, path_filter: PathFilter = PathFilter(),
                 follow_links: bool = False, make_room: Optional[MakeRoom] = None) -> None:
        self._platform = platform
        self._pool = pool
        self._target = target
        self._on_files = on_files
        self._on_failure = on_failure
        self._filter = path_filter
        self._follow_links = follow_links
        self._include = (EntityType.FOLDER, EntityType.FILE) + ((EntityType.LINK,) if follow_links else ())
        self._make_room = make_room
        # What the rest of the run needs to know about folders (folders only: small even for huge trees). Each set
        # or dict takes single adds from many threads (atomic under the GIL) and is read after the walk.
        self.unvisited: Set[str] = set()  # rel paths of folders whose listing or local visit failed
        self.listed: Dict[str, Path] = {}  # rel path -> local folder, for folders whose every page was listed
        self.manifest_taken: Set[Path] = set()  # local paths of remote children named like a manifest
        self.folder_ids: Dict[str, str] = {}  # rel path -> id of every folder found (via a link: its target)

    def walk(self, container: EntityHeader, local_dir: Path, *, rel_dir: str = "") -> None:
        """Start listing ``container`` into ``local_dir``, its files' paths under ``rel_dir`` ('' for the sync root;
        a sub-folder when a list of ids walks several containers). Returns at once; the pool does the work."""
        if rel_dir:
            self.folder_ids[rel_dir] = container.id
        root = Folder(container, local_dir, rel_dir, frozenset({container.id}))
        self._pool.submit(Priority.LISTING, self._list_page, root, None)

    def _list_page(self, folder: Folder, page_token: Optional[str]) -> None:
        try:
            page = self._platform.list_children(folder.header.id, include_types=self._include,
                                                page_token=page_token)
        except SynclientError as exc:
            self.unvisited.add(folder.rel_dir)
            self._on_failure(folder.header, folder.local_dir, exc)
            return
        if page.next_page_token:  # keep the next page flowing before working through this one
            self._pool.submit(Priority.LISTING, self._list_page, folder, page.next_page_token)
        files = [found for found in (self._visit(folder, header) for header in page.headers) if found]
        if files:
            self._on_files(files)  # together: the runner looks their index rows up in one query
        if not page.next_page_token:  # pages of a folder come one after another: this was the last
            self.listed[folder.rel_dir] = folder.local_dir

    def _visit(self, folder: Folder, header: EntityHeader) -> Optional[FoundFile]:
        if header.name in MANIFEST_FILENAMES:  # the remote entity wins its path: no such manifest in this folder
            self.manifest_taken.add(folder.local_dir / header.name)
        try:
            if header.type is EntityType.FOLDER:
                self._enter(folder, header, header)
            elif header.type is EntityType.FILE:
                rel = folder.rel(header.name)
                destination = self._target.child(folder.local_dir, header.name)
                if self._filter.wants_file(rel):
                    return FoundFile(header, destination, rel, folder.header.id)
            elif header.type is EntityType.LINK and self._follow_links:
                self._target.child(folder.local_dir, header.name)  # refuse a bad name before any call
                self._pool.submit(Priority.LISTING, self._resolve_link, folder, header)
        except SynclientError as exc:
            if header.type is not EntityType.FILE:
                self.unvisited.add(folder.rel(header.name))
            self._on_failure(header, self._local_path(folder, header.name), exc)
        return None

    def _local_path(self, folder: Folder, name: str) -> Optional[Path]:
        """Where an entity of this name would be, for reports; None when the name itself is refused."""
        try:
            return self._target.child(folder.local_dir, name)
        except SynclientError:
            return None

    def _enter(self, folder: Folder, named: EntityHeader, container: EntityHeader) -> None:
        """List ``container`` as a sub-folder called ``named.name`` (the same entity unless via a link)."""
        rel = folder.rel(named.name)
        if self._filter.prunes_folder(rel):
            self.folder_ids[rel] = container.id  # found, not listed
            return
        if container.id in folder.ancestors:
            raise UnsafePathError(f"link {named.id} ({rel}) leads back to {container.id}, a folder above it; "
                                  "not followed (cycle)")
        self.folder_ids[rel] = container.id
        try:
            local = self._target.make_folder(folder.local_dir, named.name)
        except FileInTheWayError:
            # a file where the remote now has a folder: the runner removes it if it is ours and delete is on
            path = self._target.child(folder.local_dir, named.name)
            if self._make_room is None or not self._make_room(rel, path):
                raise
            # a dry run removed nothing: it lists on as the real run would once the file is gone
            local = self._target.make_folder(folder.local_dir, named.name) if self._target.create else path
        child = Folder(container, local, rel, folder.ancestors | {container.id})
        self._pool.submit(Priority.LISTING, self._list_page, child, None)

    def _resolve_link(self, folder: Folder, link: EntityHeader) -> None:
        try:
            entity = self._platform.get_entity(link.id)
            if not entity.link_target_id:
                raise UnsafePathError(f"link {link.id} has no target")
            target = self._platform.get_entity_header(entity.link_target_id)
            if target.type.is_container:
                self._enter(folder, link, target)
            elif target.type is EntityType.FILE:
                version = entity.link_target_version or target.version_number
                as_file = EntityHeader(id=target.id, name=link.name, type=EntityType.FILE, version_number=version)
                rel = folder.rel(link.name)
                if self._filter.wants_file(rel):
                    self._on_files([FoundFile(as_file, self._target.child(folder.local_dir, link.name), rel)])
            else:
                raise UnsafePathError(f"link {link.id} points to a {target.type.name.lower()}; not followed")
        except SynclientError as exc:
            self.unvisited.add(folder.rel(link.name))
            self._on_failure(link, self._local_path(folder, link.name), exc)
