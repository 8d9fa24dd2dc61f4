"""The planner: remote file x index row x local file -> one action, decided before any byte moves.

Like rclone's src-only / dst-only / match, every remote file falls in exactly one row of this table:

| local file                         | index row for the path            | remote vs local        | action           |
|------------------------------------|-----------------------------------|------------------------|------------------|
| any                                | same id + version, stat unchanged | (not even asked)       | SKIP (no call)   |
| absent                             | any                               | -                      | DOWNLOAD         |
| ours: stat as synclient left it    | yes                               | same MD5               | SKIP (refresh)   |
| ours: stat as synclient left it    | yes                               | other MD5 (new version)| DOWNLOAD         |
| ours, ``checksum``: hashed         | yes, same MD5                     | local MD5 differs      | REPAIR           |
| changed since, or never indexed    | any                               | same MD5 (hash once)   | ADOPT (one link) |
| ... a hard link (link count > 1)   | any                               | same MD5               | DOWNLOAD (own)   |
| changed since, or never indexed    | any                               | other MD5              | if_collision     |
| not a regular file (symlink, ...)  | any                               | -                      | if_collision     |
| a folder                           | any                               | -                      | BLOCKED          |

``if_collision`` (synapseclient's names): ``overwrite.local`` replaces the local file, ``keep.local`` keeps it and
skips the remote one, ``keep.both`` saves the remote file beside it as ``name(1).ext`` (a name neither the local
folder nor the remote one has). A folder is never overwritten by a file here: the runner empties it first when it
holds only what synclient wrote and ``delete`` is on (whatever ``if_collision`` says: nothing of the user's is in
the way), else applies ``if_collision`` to it, where ``overwrite.local`` becomes a reported conflict.
"""

from __future__ import annotations

import enum
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import AbstractSet, Optional

from synclient.choices import Choice
from synclient.platform.models import EntityHeader, FileHandle
from synclient.sync.records.index import IndexRow
from synclient.transfer.hashing import file_md5


class Action(enum.Enum):
    DOWNLOAD = "download"  # absent locally, or our own unmodified copy of an older version
    SKIP = "skip"  # up to date
    ADOPT = "adopt"  # a local file already holding the remote bytes (hashed once, now indexed)
    OVERWRITE = "overwrite"  # conflict: local changes replaced (overwrite.local)
    KEEP_LOCAL = "keep-local"  # conflict: local changes kept, remote not fetched (keep.local)
    KEEP_BOTH = "keep-both"  # conflict: remote saved beside the local file as name(1).ext (keep.both)
    DELETE = "delete"  # gone remotely, a file synclient wrote and nobody changed (delete=True)
    BLOCKED = "blocked"  # conflict: a local folder where the remote has a file (overwrite.local)
    REPAIR = "repair"  # checksum: our own copy, stat untouched, whose bytes are not the remote's (fetched again)

    @property
    def fetches(self) -> bool:
        return self in (Action.DOWNLOAD, Action.OVERWRITE, Action.KEEP_BOTH, Action.REPAIR)

    @property
    def hashed(self) -> bool:
        """With ``checksum``, the local file of this action was read whole (our own copy, or one hashed anyway)."""
        return self in (Action.SKIP, Action.REPAIR, Action.ADOPT)


class Collision(Choice):
    OVERWRITE_LOCAL = "overwrite.local"
    KEEP_LOCAL = "keep.local"
    KEEP_BOTH = "keep.both"


@dataclass(frozen=True)
class Decision:
    action: Action
    destination: Path  # where the bytes go (or already are)
    reason: str = ""  # why, where the action alone does not say (a repair: what differed)


def is_up_to_date(row: Optional[IndexRow], header: EntityHeader, target_root: Path) -> bool:
    """The zero-call fast path: same entity and version as indexed, local stat untouched."""
    return (
        row is not None
        and row.entity_id == header.id
        and header.version_number is not None
        and row.version == header.version_number
        and row.local_stat_matches(target_root)
    )


def copy_name(destination: Path, *, taken: AbstractSet[str] = frozenset()) -> Path:
    """``name(1).ext``, ``name(2).ext``, ...: the first that neither exists locally nor is in ``taken`` (the names
    of the remote folder, and copies this run already chose)."""
    stem, suffix = os.path.splitext(destination.name)
    n = 1
    while True:
        candidate = destination.with_name(f"{stem}({n}){suffix}")
        if candidate.name not in taken and not os.path.lexists(candidate):
            return candidate
        n += 1


def decide(
    *,
    destination: Path,
    handle: FileHandle,
    row: Optional[IndexRow],
    target_root: Path,
    collision: Collision,
    taken: AbstractSet[str] = frozenset(),
    checksum: bool = False,
) -> Decision:
    """The action for one remote file; ``taken``: names a ``keep.both`` copy must not get (see :func:`copy_name`);
    ``checksum``: our own untouched copy is hashed too, not trusted by its stat (a repair when its bytes differ)."""
    remote_md5 = (handle.content_md5 or "").lower()
    if row is not None and row.local_path != _relative(destination, target_root):
        # an earlier keep.both put our copy elsewhere: it still counts if untouched and the same bytes
        if row.local_stat_matches(target_root) and same_bytes(row, handle):
            copy = target_root / row.local_path
            reason = repair_reason(copy, handle, size=row.local_size) if checksum else None
            return Decision(Action.SKIP, copy) if reason is None else Decision(Action.REPAIR, copy, reason)
        row = None
    try:
        info = os.lstat(destination)
    except (FileNotFoundError, NotADirectoryError):  # (a file where its folder will be: a dry run only)
        return Decision(Action.DOWNLOAD, destination)
    if stat.S_ISREG(info.st_mode):
        if row is not None and row.local_stat_matches(target_root):  # ours, untouched since we wrote it
            if not same_bytes(row, handle):
                return Decision(Action.DOWNLOAD, destination)
            reason = repair_reason(destination, handle, size=info.st_size) if checksum else None
            if reason is not None:
                return Decision(Action.REPAIR, destination, reason)
            return Decision(Action.SKIP, destination)
        if info.st_size == handle.content_size and remote_md5 and file_md5(destination) == remote_md5:
            if info.st_nlink > 1:  # the same bytes, but one file with another name (another entity's, the cache's):
                return Decision(Action.DOWNLOAD, destination)  # a file of its own replaces the name, nothing lost
            return Decision(Action.ADOPT, destination)
    return _collide(destination, collision, taken=taken, is_folder=stat.S_ISDIR(info.st_mode))


def repair_reason(path: Path, handle: FileHandle, *, size: int) -> Optional[str]:
    """Why the local file at ``path`` (``size`` bytes) is not the handle's bytes, hashed (``checksum``), or None.
    A handle that records no MD5 (an external URL) is compared by size alone."""
    if handle.content_size is not None and size != handle.content_size:
        return "local size differed"
    remote_md5 = (handle.content_md5 or "").lower()
    if not remote_md5:
        return None  # (size only: nothing else to compare with)
    return None if file_md5(path) == remote_md5 else "local MD5 differed"


def same_bytes(row: IndexRow, handle: FileHandle) -> bool:
    """The indexed file holds the handle's bytes: the same MD5 (and size, when recorded), or, for a handle that
    records no MD5 (an external URL), the same handle (nothing else could tell)."""
    if handle.content_md5:
        return row.md5 == handle.content_md5.lower() and (
            handle.content_size is None or row.size == handle.content_size
        )
    return row.file_handle_id == handle.id


def same_recorded_bytes(one: FileHandle, other: FileHandle) -> bool:
    """Two handles record the same bytes: the same MD5 and size, both recorded."""
    return (
        bool(one.content_md5)
        and one.content_size is not None
        and (one.content_md5 or "").lower() == (other.content_md5 or "").lower()
        and one.content_size == other.content_size
    )


def _collide(destination: Path, collision: Collision, *, taken: AbstractSet[str], is_folder: bool) -> Decision:
    if is_folder:  # the runner decides: replaced if synclient's own and delete is on, else collide()
        return Decision(Action.BLOCKED, destination)
    return collide(destination, collision, taken=taken)


def collide(destination: Path, collision: Collision, *, taken: AbstractSet[str] = frozenset()) -> Decision:
    """The collision policy alone (``if_collision``)."""
    if collision is Collision.KEEP_LOCAL:
        return Decision(Action.KEEP_LOCAL, destination)
    if collision is Collision.KEEP_BOTH:
        return Decision(Action.KEEP_BOTH, copy_name(destination, taken=taken))
    return Decision(Action.OVERWRITE, destination)


def _relative(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()
