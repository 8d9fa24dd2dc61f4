"""What ``delete=True`` may remove: files synclient wrote that are gone remotely, and nothing else, ever.

An indexed file is deleted only when all of these hold:

1. its row belongs to this sync's root, and no listing of this run showed its path;
2. no folder above it failed to be listed or visited in this run: an unlisted folder proves nothing about what is
   gone;
3. the filters want it (an excluded file is not this run's business): the patterns its path, the size and age
   filters its indexed size and its local copy's modification time (as rclone judges a destination's file);
4. it is reached from the target's root without following any symlink, resolved at the moment of unlinking (the
   final component is not followed either), so nothing outside the target is ever read or removed;
5. it is still the regular file synclient left there (same size and mtime as indexed, same inode as just checked).

A file that fails (5) is a local change: kept, reported as a conflict. A file no longer reachable without a symlink,
or replaced by a folder, is gone as far as synclient is concerned: its row is dropped and nothing is removed. After
the files, the folders they were in that the remote no longer has lose their stale manifest and are removed once
empty.
"""

from __future__ import annotations

import logging
import os
import stat
from dataclasses import dataclass
from typing import AbstractSet, Callable, Iterable, Iterator, List, Optional, Set

from synclient.errors import LocalIOError, SynclientError, UnsafePathError
from synclient.sync.local.paths import TargetDirectory
from synclient.sync.plan.filters import PathFilter, SizeAgeFilter
from synclient.sync.plan.planner import Action
from synclient.sync.records.index import IndexRow, LocalIndex
from synclient.sync.records.manifest import MANIFEST_FILENAME, MANIFEST_FILENAMES, manifest_name_is_ours

log = logging.getLogger("synclient.sync")


def is_under_any(rel_path: str, folders: AbstractSet[str]) -> bool:
    """True when one of the folders above ``rel_path`` (the root is "") is in ``folders``."""
    if not folders:
        return False
    if "" in folders:
        return True
    parts = rel_path.split("/")
    return any("/".join(parts[:i]) in folders for i in range(1, len(parts)))


def untouched(row: IndexRow, info: Optional[os.stat_result]) -> bool:
    """The local file is the regular file synclient left (size and mtime as indexed)."""
    return (
        info is not None
        and stat.S_ISREG(info.st_mode)
        and info.st_size == row.local_size
        and info.st_mtime_ns == row.mtime_ns
    )


@dataclass(frozen=True)
class Removal:
    """One vanished file's outcome: ``action`` DELETE (removed, or would be in a dry run) or KEEP_LOCAL (changed
    locally, kept); ``error`` when removing it failed."""

    row: IndexRow
    action: Action
    error: Optional[SynclientError] = None
    reason: str = ""


def remove_indexed_file(target: TargetDirectory, row: IndexRow, *, dry_run: bool) -> Optional[Removal]:
    """Remove one indexed file if it is still synclient's (rules 4 and 5); None when it is already gone."""
    try:
        info = target.lstat_inside(row.local_path)
    except UnsafePathError as exc:  # the file is not reachable inside the target any more: not ours to touch
        log.info("%s: %s; its index row is dropped, nothing is removed", row.local_path, exc)
        return None
    except OSError as exc:
        return Removal(row, Action.DELETE, LocalIOError.from_exception(f"cannot check {row.local_path}", exc))
    if info is None or stat.S_ISDIR(info.st_mode):  # gone (a folder there now is not the file synclient wrote)
        return None
    if not untouched(row, info):
        return Removal(row, Action.KEEP_LOCAL, reason="changed locally")
    if dry_run:
        return Removal(row, Action.DELETE)
    try:
        removed = target.unlink_inside(row.local_path, expected=info)
    except UnsafePathError as exc:
        return Removal(row, Action.KEEP_LOCAL, reason=str(exc))
    except OSError as exc:
        return Removal(row, Action.DELETE, LocalIOError.from_exception(f"cannot delete {row.local_path}", exc))
    return Removal(row, Action.DELETE) if removed else Removal(row, Action.KEEP_LOCAL, reason="changed locally")


class DeletionPass:
    """The vanished files of one run (see the module's rules), removed or, in a dry run, only decided."""

    def __init__(
        self,
        *,
        target: TargetDirectory,
        index: LocalIndex,
        root_id: str,
        path_filter: PathFilter,
        seen: AbstractSet[str],
        unvisited: AbstractSet[str],
        handled: AbstractSet[str],
        dry_run: bool,
        size_age: SizeAgeFilter = SizeAgeFilter(),
    ) -> None:
        self._target = target
        self._size_age = size_age
        self._index = index
        self._root_id = root_id
        self._filter = path_filter
        self._seen = seen
        self._unvisited = unvisited
        self._handled = handled  # already removed (or planned) during the walk: a file where a folder now is
        self._dry_run = dry_run
        self.emptied_folders: Set[str] = set()

    def candidates(self) -> Iterator[IndexRow]:
        for row in self._index.iter_rows(self._root_id):
            if (
                row.rel_path in self._seen
                or row.rel_path in self._handled
                or is_under_any(row.rel_path, self._unvisited)
                or not self._filter.wants_file(row.rel_path)
                or self._size_age.refuses_known(size=row.size, modified_on=row.mtime_ns // 1_000_000)
            ):
                continue
            yield row

    def run(self) -> Iterator[Removal]:
        """Each vanished file's removal, for the caller to report (and, for a removed file, forget its row)."""
        for row in self.candidates():
            removal = remove_indexed_file(self._target, row, dry_run=self._dry_run)
            self.emptied_folders.add(row.local_path.rpartition("/")[0])
            if removal is None:  # already gone locally: only the row remains
                if not self._dry_run:
                    self._index.forget(row.rel_path)
                continue
            yield removal

    def tidy_folders(self, *, listed: AbstractSet[str]) -> None:
        """Folders of vanished files that the remote no longer has (not ``listed``): their stale manifest goes
        (even where a locally changed file is kept), then each is removed once empty, up to the nearest folder the
        remote still has."""
        if self._dry_run:
            return
        ours = self._index.manifest_files()
        for rel_dir in sorted(self.emptied_folders, key=len, reverse=True):
            if not rel_dir or rel_dir in listed:
                continue
            stop = next((p for p in _ancestors(rel_dir) if p in listed), "")
            folder = rel_dir
            while folder and folder != stop:  # this folder and those above it that the remote no longer has
                for name in MANIFEST_FILENAMES:
                    remove_stale_manifest(self._target, folder, index=self._index, name=name, ours=ours)
                folder = folder.rpartition("/")[0]
            self._target.remove_empty_folders(rel_dir, stop_at=stop)


def _ancestors(rel_dir: str) -> Iterable[str]:
    parts = rel_dir.split("/")
    return ("/".join(parts[:i]) for i in range(len(parts) - 1, 0, -1))


def remove_stale_manifest(
    target: TargetDirectory,
    rel_dir: str,
    *,
    index: LocalIndex,
    name: str = MANIFEST_FILENAME,
    ours: AbstractSet[str] = frozenset(),
) -> bool:
    """Remove synclient's manifest ``name`` from a folder (not a remote file of that name that synclient
    downloaded, nor, for a name others use too, one synclient did not record writing: ``ours``, the index's
    :meth:`~synclient.sync.records.index.LocalIndex.manifest_files`)."""
    rel = f"{rel_dir}/{name}" if rel_dir else name
    if index.get_many([rel]) or not (manifest_name_is_ours(name) or rel in ours):
        return False
    try:
        info = target.lstat_inside(rel)
        if info is None or not stat.S_ISREG(info.st_mode):
            return False
        return target.unlink_inside(rel, expected=info)
    except (OSError, UnsafePathError) as exc:
        log.warning("cannot remove the stale manifest %s: %s", rel, exc)
        return False


def folder_contents_if_ours(
    target: TargetDirectory, index: LocalIndex, rel_dir: str, *, path_filter: PathFilter = PathFilter()
) -> Optional[List[IndexRow]]:
    """The indexed files under a local folder if everything in it is synclient's own (untouched indexed files the
    filters want, its manifests, partial downloads, folders of those: an empty folder holds nothing of anyone's),
    else None. Reached without following symlinks."""
    from synclient.transfer.partial import PARTIAL_SUFFIXES

    rows = {row.local_path: row for row in index.rows_under(rel_dir)}
    manifests = index.manifest_files()
    found: List[IndexRow] = []
    pending = [rel_dir]
    while pending:
        folder = pending.pop()
        try:
            held = target.open_folder(folder)
        except (OSError, UnsafePathError):
            return None
        try:
            names = held.listdir()
            for name in names:
                rel = f"{folder}/{name}"
                info = held.lstat(name)
                row = rows.get(rel)
                if stat.S_ISDIR(info.st_mode):
                    pending.append(rel)
                elif row is not None:
                    if not (untouched(row, info) and path_filter.wants_file(row.rel_path)):
                        return None  # changed locally, or outside what this run may touch
                    found.append(row)
                elif not (
                    stat.S_ISREG(info.st_mode)
                    and (manifest_name_is_ours(name) or rel in manifests or name.endswith(PARTIAL_SUFFIXES))
                ):
                    return None
        except (OSError, UnsafePathError):
            return None
        finally:
            held.close()
    return found


def clear_folder(target: TargetDirectory, rel_dir: str) -> bool:
    """Remove a folder made only of synclient's own things (checked by :func:`folder_contents_if_ours`, indexed
    files already removed): manifests, partials, empty folders. False when something else turned up."""
    from synclient.transfer.partial import PARTIAL_SUFFIXES

    pending, order = [rel_dir], []
    while pending:
        folder = pending.pop()
        order.append(folder)
        try:
            held = target.open_folder(folder)
        except (OSError, UnsafePathError):
            return False
        try:
            for name in held.listdir():
                info = held.lstat(name)
                if stat.S_ISDIR(info.st_mode):
                    pending.append(f"{folder}/{name}")
                elif stat.S_ISREG(info.st_mode) and (name in MANIFEST_FILENAMES or name.endswith(PARTIAL_SUFFIXES)):
                    held.unlink(name)  # a manifest.csv here passed folder_contents_if_ours: synclient's
                else:  # appeared since the check: not ours, so the folder stays
                    return False
        except (OSError, UnsafePathError):
            return False
        finally:
            held.close()
    for folder in reversed(order):
        parent, _, name = folder.rpartition("/")
        try:
            held = target.open_folder(parent)
        except (OSError, UnsafePathError):
            return False
        with held:
            try:
                held.rmdir(name)
            except (OSError, UnsafePathError):
                return False
    return True


def delete_vanished(
    *,
    target: TargetDirectory,
    index: LocalIndex,
    root_id: str,
    path_filter: PathFilter,
    seen: AbstractSet[str],
    unvisited: AbstractSet[str],
    handled: AbstractSet[str],
    listed: AbstractSet[str],
    dry_run: bool,
    report: Callable[[Removal], None],
    size_age: SizeAgeFilter = SizeAgeFilter(),
) -> None:
    """``delete=True``, after the walk: remove the files synclient wrote (and nobody changed since) that are gone
    remotely, ``report`` each removal, then tidy the folders the remote dropped (see the module's rules)."""
    if unvisited:
        log.warning(
            "%d folders could not be listed or visited; no file under them is deleted in this run", len(unvisited)
        )
    index.flush()
    deletion = DeletionPass(
        target=target,
        index=index,
        root_id=root_id,
        path_filter=path_filter,
        seen=seen,
        unvisited=unvisited,
        handled=handled,
        dry_run=dry_run,
        size_age=size_age,
    )
    for removal in deletion.run():
        report(removal)
    index.flush()
    deletion.tidy_folders(listed=listed)
