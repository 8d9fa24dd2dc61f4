"""Concurrent traversal of the remote tree on the shared pool.

Each children page is one LISTING task; it creates the local folders it finds, hands the page's files to the runner
together (each with its destination, from the run's name gate, :mod:`synclient.sync.local.name_gate`, and its remote
path's text relative to the sync root), and submits its sub-folders and its own next page as new tasks. Nothing
waits inside the pool. With ``follow_links`` a Link entity is resolved (two calls) to the file or folder it points
to, which then appears under the link's own name; a link to a folder that is already on the path from the root is
a cycle and is reported, not followed.

Where the target's filesystem cannot hold every remote name as it is (:mod:`synclient.sync.local.local_names`: case- or
Unicode-insensitive folders, Windows' rules), a folder's pages are gathered and its names mapped once the whole
folder is listed (a twin may be on any page); each renamed folder is noted (:attr:`TreeWalker.renamed`), and
reported where a file of the run is in it; a renamed file is reported by the pipeline once it is at that name.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, FrozenSet, List, NamedTuple, Optional, Set

from synclient.errors import FileInTheWayError, SynclientError, UnsafePathError
from synclient.platform.models import EntityHeader, EntityType, PageTrail
from synclient.platform.rest import Platform
from synclient.sync.local.local_names import FilesystemNames, Listed, LocalName, LocalRename, local_names
from synclient.sync.local.name_gate import NameGate, RemotePath
from synclient.sync.local.paths import RESERVED_NAME, TargetDirectory
from synclient.sync.plan.filters import PathFilter
from synclient.sync.plan.folder_bytes import FolderBytes
from synclient.sync.plan.handle_names import HandleNames, named_file
from synclient.sync.records.index import LocalNamesHeld
from synclient.sync.records.manifest import MANIFEST_FILENAMES
from synclient.transfer.pool import Priority, TaskPool

log = logging.getLogger("synclient.sync")


class FoundFile(NamedTuple):
    """A file of the remote tree, where it lands locally, and its '/'-separated path relative to the sync root."""

    header: EntityHeader
    destination: Path
    rel_path: str
    parent_id: Optional[str] = None  # the folder whose listing showed it (None: named by id, or through a link)
    renamed: str = ""  # why its local name is not its remote name ("": it is)


FilesFound = Callable[[List[FoundFile]], None]  # the files of one listing page at a time
EntityFailed = Callable[[EntityHeader, Optional[Path], SynclientError], None]
MakeRoom = Callable[[str, Path], bool]  # (rel path, local path) of a file in a remote folder's way: removed?
HeldNames = Callable[[str, str], LocalNamesHeld]  # (rel dir, local dir) -> local names the index holds there
_FILES_PER_CALL = 500  # files handed to the runner at once (one index query each): a listing page's worth


@dataclass(frozen=True)
class Folder:
    """A container being listed, where it lands locally, and the containers above it (for cycle checks)."""

    header: EntityHeader
    local_dir: Path
    remote: RemotePath
    ancestors: FrozenSet[str]
    #: the page tokens of its listing so far (its pages come one after another): a repeated one ends it
    pages: PageTrail = field(default_factory=lambda: PageTrail("the children listing"), compare=False, repr=False)

    @property
    def rel_dir(self) -> str:
        return self.remote.text

    def rel(self, name: str) -> str:
        """The remote path text of the entry ``name`` (for filters and reports: the name may yet be refused)."""
        return self.remote.spelled(name)


class TreeWalker:
    def __init__(
        self,
        *,
        platform: Platform,
        pool: TaskPool,
        target: TargetDirectory,
        on_files: FilesFound,
        on_failure: EntityFailed,
        path_filter: PathFilter = PathFilter(),
        follow_links: bool = False,
        make_room: Optional[MakeRoom] = None,
        names: FilesystemNames = FilesystemNames(),
        held_names: Optional[HeldNames] = None,
        gate: Optional[NameGate] = None,
        file_names: Optional[HandleNames] = None,
        kept_names: Optional[Dict[Path, Set[str]]] = None,
        sizes: Optional[FolderBytes] = None,
    ) -> None:
        """``sizes``: a dry run's byte count, told each folder's sum of file sizes (asked of every page) and the
        files it leaves out (:mod:`synclient.sync.plan.folder_bytes`)."""
        self._platform = platform
        self._pool = pool
        self._target = target
        self._gate = gate if gate is not None else NameGate(target, names)  # every local path of an entity
        self._on_files = on_files
        self._on_failure = on_failure
        self._filter = path_filter
        self._follow_links = follow_links
        self._include = (EntityType.FOLDER, EntityType.FILE) + ((EntityType.LINK,) if follow_links else ())
        self._make_room = make_room
        self._names = names
        # manifest names as this filesystem compares names: one lookup per listed entry
        self._manifest_keys = frozenset(names.same_name_key(manifest) for manifest in MANIFEST_FILENAMES)
        self._held_names = held_names  # local names are sticky: what each entry has now (mapped names only)
        self._file_names = file_names  # files named by their handles (handle_names.py; None: by their entities)
        self._sizes = sizes
        self._gathered: Dict[str, List[EntityHeader]] = {}  # rel dir -> headers of the pages listed so far
        self._gathered_lock = threading.Lock()
        # What the rest of the run needs to know about folders (folders only: small even for huge trees). Each set
        # or dict takes single adds from many threads (atomic under the GIL) and is read after the walk.
        self.unvisited: Set[str] = set()  # rel paths of folders whose listing or local visit failed
        self.listed: Dict[str, Path] = {}  # rel path -> local folder, for folders whose every page was listed
        self.manifest_taken: Set[Path] = set()  # local paths of remote children named like a manifest
        self.folder_ids: Dict[str, str] = {}  # rel path -> id of every folder found (via a link: its target)
        # folders given another local name than their remote one (a file's renaming is the pipeline's to report,
        # once the file is at that name); and the remote folders (rel paths) that hold anything
        self.renamed: List[LocalRename] = []
        self.holding: Set[str] = set()
        # local folder -> keys of the local names entries kept there though the plain mapping would differ (shared
        # with the run's path claims: keep.both copy names avoid them)
        self.kept_names: Dict[Path, Set[str]] = kept_names if kept_names is not None else {}

    def walk(self, container: EntityHeader, local_dir: Path, *, remote: RemotePath = RemotePath()) -> None:
        """Start listing ``container`` into ``local_dir``, its files' paths under ``remote`` (the sync root; a
        sub-folder when a list of ids walks several containers). Returns at once; the pool does the work."""
        if remote.names:
            self.folder_ids[remote.text] = container.id
        root = Folder(container, local_dir, remote, frozenset({container.id}))
        self._pool.submit(Priority.LISTING, self._list_page, root, None)

    def _list_page(self, folder: Folder, page_token: Optional[str]) -> None:
        try:
            page = self._platform.list_children(
                folder.header.id,
                include_types=self._include,
                page_token=page_token,
                sum_file_sizes=self._sizes is not None,
            )
            next_token = folder.pages.follow(page.next_page_token, rows=len(page.headers))
        except SynclientError as exc:
            self.unvisited.add(folder.rel_dir)
            self._on_failure(folder.header, folder.local_dir, exc)
            return
        if self._sizes is not None:
            self._sizes.page_listed(folder.rel_dir, page.sum_file_sizes)
        if self._names.maps_names or self._file_names is not None:  # a whole folder's names at once
            self._gather(folder, page.headers, next_token)
            return
        if next_token:  # keep the next page flowing before working through this one
            self._pool.submit(Priority.LISTING, self._list_page, folder, next_token)
        self._visit_all(folder, page.headers, {})
        if not next_token:  # pages of a folder come one after another: this was the last
            self._listed(folder)

    def _visit_all(self, folder: Folder, headers: List[EntityHeader], names: Dict[str, LocalName]) -> None:
        files = [
            found for found in (self._visit(folder, header, names.get(header.name)) for header in headers) if found
        ]
        for start in range(0, len(files), _FILES_PER_CALL):  # together: the runner reads their rows in one query
            self._on_files(files[start : start + _FILES_PER_CALL])

    def _gather(self, folder: Folder, headers: List[EntityHeader], next_page_token: Optional[str]) -> None:
        """A page of a folder whose names are mapped: kept until the last page, then the whole folder is visited.
        The page's headers are kept before the next page is asked for, so the last page finds every other one."""
        with self._gathered_lock:
            self._gathered.setdefault(folder.rel_dir, []).extend(headers)
        if next_page_token:
            self._pool.submit(Priority.LISTING, self._list_page, folder, next_page_token)
            return
        with self._gathered_lock:
            every = self._gathered.pop(folder.rel_dir, [])
        if self._file_names is not None:
            every = self._file_names.listing(every)
        if every:
            self.holding.add(folder.rel_dir)
        if not self._names.maps_names:
            self._visit_all(folder, every, {})
            self._listed(folder)
            return
        reserved = (RESERVED_NAME,) if folder.local_dir == self._target.root else ()
        listing = [Listed(h.name, h.id, h.type.is_container) for h in every]
        current = self._current_names(folder, every)
        names = local_names(listing, self._names, reserved=reserved, current=current)
        if current:
            plain = local_names(listing, self._names, reserved=reserved)
            kept = {self._names.same_name_key(local.name) for name, local in names.items() if plain[name] != local}
            if kept:
                self.kept_names[folder.local_dir] = kept
        self._visit_all(folder, every, names)
        self._listed(folder)

    def _listed(self, folder: Folder) -> None:
        """Every page of ``folder`` was listed."""
        self.listed[folder.rel_dir] = folder.local_dir
        if self._sizes is not None:
            self._sizes.listed(folder.rel_dir)

    def _current_names(self, folder: Folder, headers: List[EntityHeader]) -> Dict[str, str]:
        """Remote name -> the local name the index holds for that entry (a file at this version; a folder where its
        files are), for the entries whose local name is not their remote name."""
        if self._held_names is None:
            return {}
        local_dir = self._target.relative(folder.local_dir)
        held = self._held_names(folder.rel_dir, local_dir)
        current: Dict[str, str] = {}
        for header in headers:
            if header.type is EntityType.FILE and header.name in held.files:
                entity_id, version, name = held.files[header.name]
                if entity_id == header.id and version == header.version_number:  # a new version: mapped anew
                    current[header.name] = name
            elif header.type is EntityType.FOLDER and header.name in held.folders:
                current[header.name] = held.folders[header.name]
        return current

    def _visit(self, folder: Folder, header: EntityHeader, local: Optional[LocalName]) -> Optional[FoundFile]:
        """One entry of a listing; ``local``: its local name where names are mapped (None: its remote name)."""
        name = local.name if local is not None else header.name
        if self._names.same_name_key(name) in self._manifest_keys:
            # the remote entity wins its path (as the filesystem compares names): no such manifest in this folder
            taken = self._local_path(folder, header.name, local)
            if taken is not None:  # (a path too long for the filesystem: no manifest beside it either)
                self.manifest_taken.add(taken)
        try:
            if header.type is EntityType.FOLDER:
                self._enter(folder, header, header, local)
            elif header.type is EntityType.FILE:
                rel = folder.rel(header.name)
                path = self._path(folder, header.name, local)  # refused (per entity) whether wanted or not
                if self._filter.wants_file(rel):
                    # (its renaming is reported once the run knows the file is at that name: the pipeline's)
                    return FoundFile(
                        header,
                        self._gate.registry.claim(path, header.id),
                        rel,
                        folder.header.id,
                        local.reason() if local is not None else "",
                    )
                self._forget_bundle(header)
                self._left_out(folder, header)
            elif header.type is EntityType.LINK and self._follow_links:
                self._path(folder, header.name, local)  # refuse a bad name before any call
                self._pool.submit(Priority.LISTING, self._resolve_link, folder, header, local)
        except SynclientError as exc:
            if header.type is not EntityType.FILE:
                self.unvisited.add(folder.rel(header.name))
            self._forget_bundle(header)
            self._left_out(folder, header)
            self._on_failure(header, self._local_path(folder, header.name, local), exc)
        return None

    def _left_out(self, folder: Folder, header: EntityHeader) -> None:
        """A file of ``folder``'s listing that goes no further: its size is in the folder's sum, and nowhere else."""
        if self._sizes is not None and header.type is EntityType.FILE:
            self._sizes.left_out(folder.rel_dir)

    def _forget_bundle(self, header: EntityHeader) -> None:
        """A file the run will not take: the bundle fetched to name it (handle_names.py) is not kept."""
        if self._file_names is not None and header.type is EntityType.FILE:
            self._file_names.take(header.id, header.version_number)

    def _path(self, folder: Folder, name: str, local: Optional[LocalName]) -> Path:
        """The local path of the remote ``name`` in ``folder`` (``local``: its mapped name), through the gate: not
        claimed yet; refused (per entity) for a name that can be no local name."""
        return self._gate.path(folder.local_dir, name, local_name=local.name if local is not None else None)

    def _note_renaming(self, header: EntityHeader, rel: str, path: Path, local: Optional[LocalName]) -> None:
        """Note a folder whose local name is not its remote one (once per run: when it is listed); the run reports
        it if it holds a file of the run, or nothing at all remotely (:meth:`SyncRun.renamed_lines`)."""
        if local is None or local.renaming is None:
            return
        renamed = LocalRename(header.id, rel, self._target.relative(path), local.reason())
        self.renamed.append(renamed)
        log.debug("local name: %s", renamed)

    def _local_path(self, folder: Folder, name: str, local: Optional[LocalName]) -> Optional[Path]:
        """Where an entity of this name would be, for reports; None when the name itself is refused."""
        try:
            return self._path(folder, name, local)
        except SynclientError:
            return None

    def _enter(
        self, folder: Folder, named: EntityHeader, container: EntityHeader, local: Optional[LocalName] = None
    ) -> None:
        """List ``container`` as a sub-folder called ``named.name`` remotely (the same entity unless via a link;
        ``local``: its mapped local name)."""
        rel = folder.rel(named.name)
        remote = folder.remote.child(named.name)  # UnsafePathError: this folder is refused, its siblings go on
        if self._filter.prunes_folder(rel):
            self.folder_ids[rel] = container.id  # found, not listed
            return
        if container.id in folder.ancestors:
            raise UnsafePathError(
                f"link {named.id} ({rel}) leads back to {container.id}, a folder above it; not followed (cycle)"
            )
        self.folder_ids[rel] = container.id
        path = self._gate.registry.claim(self._path(folder, named.name, local), named.id)
        try:
            local_dir = self._target.make_folder(folder.local_dir, path.name)
        except FileInTheWayError:
            # a file where the remote now has a folder: the runner removes it if it is ours and delete is on
            if self._make_room is None or not self._make_room(rel, path):
                raise
            # a dry run removed nothing: it lists on as the real run would once the file is gone
            local_dir = self._target.make_folder(folder.local_dir, path.name) if self._target.create else path
        self._note_renaming(named, rel, local_dir, local)
        child = Folder(container, local_dir, remote, folder.ancestors | {container.id})
        self._pool.submit(Priority.LISTING, self._list_page, child, None)

    def _resolve_link(self, folder: Folder, link: EntityHeader, local: Optional[LocalName] = None) -> None:
        try:
            entity = self._platform.get_entity(link.id)
            if not entity.link_target_id:
                raise UnsafePathError(f"link {link.id} has no target")
            target = self._platform.get_entity_header(entity.link_target_id)
            if target.type.is_container:
                self._enter(folder, link, target, local)
            elif target.type is EntityType.FILE:
                version = entity.link_target_version or target.version_number
                as_file = EntityHeader(id=target.id, name=link.name, type=EntityType.FILE, version_number=version)
                if self._file_names is not None:  # by its handle, as synapseclient names it
                    as_file, local = named_file(self._file_names, as_file), None
                rel = folder.rel(as_file.name)
                if self._filter.wants_file(rel):
                    destination = self._gate.registry.claim(self._path(folder, as_file.name, local), as_file.id)
                    self._on_files(
                        [FoundFile(as_file, destination, rel, None, local.reason() if local is not None else "")]
                    )
            else:
                raise UnsafePathError(f"link {link.id} points to a {target.type.name.lower()}; not followed")
        except SynclientError as exc:
            self.unvisited.add(folder.rel(link.name))
            self._on_failure(link, self._local_path(folder, link.name, local), exc)
