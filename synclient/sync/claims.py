"""Which local path each remote file gets, where only the whole run can tell: the planner decides one file against
its index row; this settles what is in the way of it.

- a path held by synclient's own things (another file's untouched keep.both copy, a copy given up in this run, a
  manifest written before the remote had that name: a ``manifest.csv`` only if the index records writing it) is
  free for the remote entity;
- a local folder where the remote has a file (``Action.BLOCKED``) and a file where it has a folder (the walker's
  ``make_room``) go only when they hold nothing but synclient's untouched files, and only with ``delete``;
- ``keep.both`` copy names avoid every name of the remote folder and every copy chosen in this run (as the local
  filesystem compares names: on a case-insensitive one, ``A(1).txt`` is taken by ``a(1).txt``);
- no two entities of one run ever get one local path (the name gate's registry, :mod:`synclient.sync.local.name_gate`,
  holds every path given, copies included: refused, never mixed).
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from collections.abc import Set as AbstractSet
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Dict, Iterator, Optional, Set, Tuple

from synclient.errors import PathConflictError
from synclient.platform.models import EntityType, FileHandle
from synclient.platform.rest import Platform
from synclient.sync.deletion import folder_contents_if_ours, may_be_filtered
from synclient.sync.effects import Effects
from synclient.sync.local.local_names import FilesystemNames, Listed, local_names
from synclient.sync.local.name_gate import PathRegistry
from synclient.sync.local.paths import TargetDirectory
from synclient.sync.options import SyncOptions
from synclient.sync.plan.planner import Action, Decision, collide, copy_name, decide
from synclient.sync.records.index import IndexRow, LocalIndex
from synclient.sync.records.manifest import MANIFEST_FILENAMES, manifest_name_is_ours

log = logging.getLogger("synclient.sync")


class PathClaims:
    """The run-wide bookkeeping of local paths. Thread-safe."""

    def __init__(
        self,
        *,
        platform: Platform,
        target: TargetDirectory,
        index: LocalIndex,
        options: SyncOptions,
        effects: Effects,
        names: FilesystemNames = FilesystemNames(),
        registry: Optional[PathRegistry] = None,
        kept_names: Optional[Dict[Path, Set[str]]] = None,
    ) -> None:
        """``kept_names``: local folder -> keys of the names its remote entities keep where the plain mapping
        differs, as the walker fills it while it lists (keep.both copy names avoid them too)."""
        self._platform = platform
        self._names = names
        self._target = target
        self._index = index
        self._options = options
        self._effects = effects
        self.size_age = options.size_age_filter(datetime.now(timezone.utc))  # (ages count from the run's start)
        self.handled: Set[str] = set()  # rel paths removed (or planned so) during the walk: not vanished again
        self._lock = threading.Lock()
        # folder -> its remote entities' local names + copies chosen (keep.both), as the filesystem compares them
        self._folder_names: Dict[Path, Set[str]] = {}
        self._kept_names: Dict[Path, Set[str]] = kept_names if kept_names is not None else {}
        self._copies_lock = threading.Lock()
        self._abandoned: Set[str] = set()  # local paths of copies whose name a remote entity now has
        self._displaced: Set[str] = set()  # local paths of copies that a remote file of that name replaces
        # every local path of the run -> its entity: the gate's (each entity's own path), and the copies chosen here
        self._registry = registry if registry is not None else PathRegistry(names)
        self._index_has_copies = index.has_copies()  # else no lookup by local path can find anything

    def is_displaced(self, local_path: str) -> bool:
        with self._lock:
            return local_path in self._displaced

    def is_abandoned(self, local_path: str) -> bool:
        with self._lock:
            return local_path in self._abandoned

    def handle(self, rel_path: str) -> None:
        """``rel_path`` was removed (or planned so) during the walk: the deletion pass leaves it alone."""
        with self._lock:
            self.handled.add(rel_path)

    def place(
        self,
        destination: Path,
        rel_path: str,
        handle: FileHandle,
        row: Optional[IndexRow],
        copy: Optional[IndexRow],
        parent_id: Optional[str],
        entity_id: str,
    ) -> Tuple[Decision, Optional[IndexRow]]:
        """The planner's decision, then what only the run can settle: a path held by synclient's own things (another
        file's keep.both copy, a stale manifest) is free for the remote entity; a folder in the way; the copy name.
        Also returns the copy row this file displaces, if any."""
        local = self._target.relative(destination)  # the remote path, unless the filesystem needs another name
        if self._holds_our_leftover(destination, local, rel_path):
            decision = Decision(Action.DOWNLOAD, destination)
            with self._lock:
                self._displaced.add(local)
        else:
            decision = decide(
                destination=destination,
                handle=handle,
                row=row,
                target_root=self._target.root,
                collision=self._options.if_collision,
                checksum=self._options.checksum,
            )
        displaced = self._displaced_row(decision.destination, rel_path)
        if decision.action is Action.BLOCKED:
            decision = self._unblock(destination)
        if decision.action is Action.KEEP_BOTH:
            if copy is not None and copy.local_stat_matches(self._target.root):
                decision = Decision(Action.KEEP_BOTH, self._target.root / copy.local_path)  # the new bytes go there
            else:
                return self._keep_both(destination, parent_id, entity_id), displaced
        self.claim(decision.destination, entity_id)
        return decision, displaced

    def _displaced_row(self, destination: Path, rel_path: str) -> Optional[IndexRow]:
        """Another file's row saying its bytes are where this file now settles (an old keep.both copy, changed or
        not): it is stale once this file is in, and not "vanished" in this run."""
        if not self._index_has_copies:
            return None
        other = self._index.copy_at(self._target.relative(destination))
        if other is None or other.rel_path == rel_path:
            return None
        self.handle(other.rel_path)
        return other

    def _holds_our_leftover(self, destination: Path, local: str, rel_path: str) -> bool:
        """The file at a remote file's local path (``local``; its remote path ``rel_path``) is synclient's own and
        no user's: another entity's keep.both copy (untouched, or given up in this run) or a manifest synclient
        wrote before the remote had this name. (A row whose bytes lie away from its remote path because the local
        filesystem needs another name is the file's own, not another's.)"""
        if self.is_abandoned(local):
            return True
        copy = self._index.copy_at(local) if self._index_has_copies else None
        if copy is not None and copy.rel_path != rel_path and copy.local_stat_matches(self._target.root):
            return True
        manifest = next((m for m in MANIFEST_FILENAMES if self._names.same_name(destination.name, m)), None)
        if (
            manifest is not None
            and not self._index.get_many([rel_path])
            and (
                manifest_name_is_ours(manifest)
                or self._target.relative(destination.with_name(manifest)) in self._index.manifest_files()
            )
        ):
            try:
                return stat.S_ISREG(os.lstat(destination).st_mode)
            except OSError:
                return False
        return False

    def claim(self, destination: Path, entity_id: str, *, unless_failed: AbstractSet[str] = frozenset()) -> None:
        """Assert that no other entity of this run has this local path (a defect if one has: refuse, never mix),
        in the run's one registry: a file's own path was claimed when the name gate gave it; a copy's
        (``keep.both``, or found at a copy's path) is claimed here. ``unless_failed``: entities that failed in this
        run (nothing of theirs is written): a path one of them was given is free again."""
        owner = self._registry.owner_of(destination) if unless_failed else None
        if owner is not None and owner != entity_id and owner in unless_failed:
            self._registry.release(destination, owner)
        self._registry.claim(destination, entity_id)

    def _names_of(self, folder: Path, parent_id: Optional[str]) -> Set[str]:
        """The remote folder's names (listed once more, whole, the first time this run needs them) plus the copy
        names this run chose there. Call with ``_copies_lock`` held."""
        names = self._folder_names.get(folder)
        if names is None:
            names = self._folder_names[folder] = self._remote_names(parent_id) | self._kept_names.get(folder, set())
        return names

    def copy_name_taken(self, copy: IndexRow, folder: Path, parent_id: Optional[str]) -> bool:
        """An earlier keep.both copy whose name a remote entity has now: that entity wins the path."""
        name = copy.local_path.rpartition("/")[2]
        with self._copies_lock:
            taken = self._names.same_name_key(name) in self._names_of(folder, parent_id)
        if taken and copy.local_stat_matches(self._target.root):  # untouched: the remote entity may replace it
            with self._lock:
                self._abandoned.add(copy.local_path)
        return taken

    def _keep_both(self, destination: Path, parent_id: Optional[str], entity_id: str) -> Decision:
        """``keep.both``: a copy name that neither the local folder nor the remote folder has, nor another entity of
        this run (a copy, or an entry of a list)."""
        with self._copies_lock:
            taken = self._names_of(destination.parent, parent_id)
            chosen = copy_name(
                destination,
                taken=_SameNames(
                    taken,
                    self._names.same_name_key,
                    given=lambda name: self._registry.owner_of(destination.with_name(name)) is not None,
                ),
            )
            self._names.check_length(chosen)  # a copy name too long for this filesystem fails its file, as any name
            taken.add(self._names.same_name_key(chosen.name))
            self.claim(chosen, entity_id)
        return Decision(Action.KEEP_BOTH, chosen)

    def _remote_names(self, parent_id: Optional[str]) -> Set[str]:
        if not parent_id:
            return set()
        children = self._platform.iter_children(
            parent_id, include_types=(EntityType.FOLDER, EntityType.FILE, EntityType.LINK)
        )
        if not self._names.maps_names:
            return {header.name for header in children}
        mapped = local_names((Listed(h.name, h.id, h.type.is_container) for h in children), self._names)
        return {self._names.same_name_key(local.name) for local in mapped.values()}

    def _unblock(self, destination: Path) -> Decision:
        """A local folder where the remote has a file. With ``delete``, a folder that holds only what synclient
        wrote (untouched files, manifests, partials) is removed and the file downloaded, whatever ``if_collision``
        says (nothing of the user's is in the way). Otherwise ``if_collision`` applies, and ``overwrite.local`` is a
        conflict reported with its path: a folder is never overwritten, and nothing is written."""
        rel_dir = self._target.relative(destination)
        rows = (
            folder_contents_if_ours(
                self._target,
                self._index,
                rel_dir,
                path_filter=self._options.path_filter,
                size_age=self.size_age,
            )
            if self._options.delete
            else None
        )
        if rows is None:
            decision = collide(destination, self._options.if_collision)
            if decision.action is Action.OVERWRITE:
                raise PathConflictError(
                    f"{destination} is a local folder and the remote has a file of that name; not replaced "
                    + (
                        "(it holds files synclient did not write or that changed since)"
                        if self._options.delete
                        else "(with delete, a folder holding only files synclient wrote is)"
                    )
                )
            return decision
        for row in rows:
            self.handle(row.rel_path)
            removal = self._effects.remove_indexed(row)
            if removal is not None:
                self._effects.removed(removal)
        if not self._effects.clear_folder(rel_dir):
            raise PathConflictError(
                f"{destination} is a local folder that could not be emptied; the remote file "
                "of that name is not written"
            )
        return Decision(Action.DOWNLOAD, destination)

    def make_room(self, rel_path: str, path: Path) -> bool:
        """A file where the remote now has a folder (called by the walker). It goes if it is synclient's own and no
        user's: a keep.both copy or manifest of synclient's, or, with ``delete``, a file synclient wrote that nobody
        changed. A dry run removes nothing; it plans what the real run reports."""
        local = self._target.relative(path)
        if self._holds_our_leftover(path, local, rel_path):
            copy = self._index.copy_at(local)
            with self._lock:  # a held copy that was here is its file's no more: that file is decided again
                self._displaced.add(local)
            if not self._effects.remove_own_file(local, path, copy):
                return False
            log.info("%s: removed synclient's own file to make room for a remote folder", path)
            return True
        if not self._options.delete:
            return False
        row = self._index.get_many([rel_path]).get(rel_path)
        if row is None or row.local_path != local or may_be_filtered(self.size_age, row):
            return False  # (not synclient's; or one the size and age filters may leave out: not this run's)
        removal = self._effects.remove_indexed(row)
        if removal is None or removal.action is not Action.DELETE or removal.error is not None:
            return False
        self.handle(rel_path)
        self._effects.removed(removal)
        return True


class _SameNames(AbstractSet):
    """Names as the local filesystem compares them: ``name in`` asks whether a name is one of them there."""

    def __init__(
        self, keys: Set[str], same_name: Callable[[str], str], given: Callable[[str], bool] = lambda name: False
    ) -> None:
        self._keys = keys
        self._same = same_name
        self._given = given  # a name of the folder the run gave another entity

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (self._same(name) in self._keys or self._given(name))

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)
