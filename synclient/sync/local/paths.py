"""Remote names become local paths only after validation; nothing a server says escapes the target directory."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Optional, Union

from synclient import portable
from synclient.errors import FileInTheWayError, LocalIOError, TargetError, UnsafePathError
from synclient.sync.local.folders import CheckedPathFolder, DescriptorFolder
from synclient.transfer.partial import PARTIAL_SUFFIXES, SymlinkFreeFolders, realpath

NAME_MAX_BYTES = 255
RESERVED_NAME = ".synclient"  # the index folder at the target's top
Folder = Union[DescriptorFolder, CheckedPathFolder]  # what open_folder gives, as this system allows
_WINDOWS_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10))}


def check_remote_name(name: str) -> str:
    """``name`` if it can be one component of a remote path, else :class:`UnsafePathError`: what no mapping for a
    local filesystem may turn into a harmless name (``..`` must never become ``.．``). What only the local
    filesystem cannot hold (a backslash, a name too long, Windows' names) is checked on the local name, once
    mapped (:func:`validate_name`, which the name gate calls)."""
    if not isinstance(name, str) or not name:
        raise UnsafePathError("empty name")
    if name in (".", ".."):
        raise UnsafePathError(f"name {name!r} is a directory reference")
    if "\x00" in name:
        raise UnsafePathError(f"name {name!r} contains NUL")
    if "/" in name:
        raise UnsafePathError(f"name {name!r} contains a path separator")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from the server's JSON: no file name on disk spells it
        raise UnsafePathError(f"name {name!r} is not valid Unicode") from None
    return name


def validate_name(name: str) -> str:
    """Return ``name`` if it is one plain path component on this OS, else raise :class:`UnsafePathError`."""
    check_remote_name(name)
    if "\\" in name:
        raise UnsafePathError(f"name {name!r} contains a path separator")
    if len(name.encode("utf-8", "surrogateescape")) > NAME_MAX_BYTES:
        raise UnsafePathError(f"name {name[:40]!r}... is longer than {NAME_MAX_BYTES} bytes")
    if os.name == "nt" and (
        name.split(".")[0].upper() in _WINDOWS_RESERVED
        or name[-1] in ". "
        or any(c in name for c in '<>:"|?*')
        or any(ord(c) < 32 for c in name)
    ):
        raise UnsafePathError(f"name {name!r} is not allowed on Windows")
    return name


class TargetDirectory:
    """The local root of a sync; hands out child paths that provably stay inside it."""

    def __init__(self, path: Path, *, create: bool = True) -> None:
        self.create = create
        if not create:  # dry run: nothing is written, not even the target folder
            if path.exists() and not path.is_dir():
                raise TargetError(f"target {path} exists and is not a directory")
            self.root = Path(os.path.realpath(path))
            return
        try:
            path.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise TargetError(f"target {path} exists and is not a directory") from None
        except OSError as exc:
            raise LocalIOError.from_exception(f"cannot create target {path}", exc) from None
        if not path.is_dir():
            raise TargetError(f"target {path} is not a directory")
        self.root = Path(os.path.realpath(path))

    def relative(self, path: Path) -> str:
        """A path under the root as the index spells it: relative, '/'-separated; the root itself is ""."""
        return "" if path == self.root else path.relative_to(self.root).as_posix()

    def contains(self, path: Path) -> bool:
        return self._spelled_inside(realpath(path))

    def _spelled_inside(self, text: str) -> bool:
        root = str(self.root)
        return text == root or text.startswith(root + os.sep)

    def child(self, parent: Path, name: str) -> Path:
        """``parent / name`` for a validated ``name`` under a ``parent`` inside the target."""
        validate_name(name)
        if parent == self.root and name == RESERVED_NAME:
            raise UnsafePathError(f"{name!r} is reserved for synclient's index in the target")
        if name.endswith(PARTIAL_SUFFIXES):
            # A remote file named like another file's partial download (".a.bin.<handle>.synclient-partial") would
            # be taken for that download's bytes, then moved away onto "a.bin": the partial namespace is ours.
            raise UnsafePathError(f"name {name!r} is reserved for synclient's partial downloads")
        return parent / name

    def make_folder(self, parent: Path, name: str) -> Path:
        """Create (or reuse) a sub-folder. A symlink in its place is never followed (one leading inside would let two
        remote folders share local files, one leading outside would let the sync write and delete outside the
        target); a file in its place is a :class:`LocalIOError` the caller may resolve and retry."""
        path = self.child(parent, name)
        try:
            mode = os.lstat(path).st_mode
        except (FileNotFoundError, NotADirectoryError):  # (below a file a dry run did not remove)
            if not self.create:
                return path
            try:
                os.mkdir(path)
            except FileExistsError:
                pass  # a concurrent creator won; checked below
            except OSError as exc:
                raise LocalIOError.from_exception(f"cannot create folder {path}", exc) from None
            mode = os.lstat(path).st_mode
        if stat.S_ISLNK(mode):
            where = "inside" if self.contains(path) else "outside"
            raise UnsafePathError(f"{path} is a symlink leading {where} the target; not followed")
        if not stat.S_ISDIR(mode):
            raise FileInTheWayError(f"{path} exists and is not a folder")
        return path

    def check_file_destination(self, path: Path, folders: Optional[SymlinkFreeFolders] = None) -> None:
        """The folder a file lands in must still resolve inside the target (no symlinked parent out of it);
        ``folders``: the run's :class:`~synclient.transfer.partial.SymlinkFreeFolders`, to check a plain folder
        cheaply."""
        if folders is not None and folders.plain(path.parent) and self._spelled_inside(str(path.parent)):
            return  # it resolves to itself: inside, as it is spelled inside
        if not self.contains(path.parent):
            raise UnsafePathError(f"{path.parent} resolves outside the target; not written")

    def open_folder(self, rel_dir: str) -> Folder:
        """The folder ``rel_dir`` ('/'-separated, relative to the root), reached one component at a time without
        following any symlink: whatever a user or another process put in the way, a name used with it is inside
        the target at the moment of use (:mod:`synclient.sync.local.folders`). A symlink on the way is an
        :class:`UnsafePathError`; a missing folder is ``FileNotFoundError``. The caller closes the folder."""
        opener = DescriptorFolder if portable.CAPABILITIES.dir_fd else CheckedPathFolder
        return opener.open(self.root, rel_dir)

    def lstat_inside(self, rel_path: str) -> Optional[os.stat_result]:
        """``lstat`` of a path inside the target reached without following symlinks; None when absent."""
        folder, _, name = rel_path.rpartition("/")
        try:
            held = self.open_folder(folder)
        except FileNotFoundError:
            return None
        with held:
            try:
                return held.lstat(name)
            except FileNotFoundError:
                return None

    def unlink_inside(self, rel_path: str, *, expected: os.stat_result) -> bool:
        """Remove the regular file at ``rel_path`` if it is still the one ``expected`` describes (same inode, size
        and mtime), reached without following any symlink; the final component is never followed either. Returns
        False (and removes nothing) when the file changed or is gone."""
        folder, _, name = rel_path.rpartition("/")
        try:
            held = self.open_folder(folder)
        except FileNotFoundError:
            return False
        with held:
            try:
                now = held.lstat(name)
            except FileNotFoundError:
                return False
            if not (
                stat.S_ISREG(now.st_mode)
                and (now.st_ino, now.st_dev, now.st_size, now.st_mtime_ns)
                == (expected.st_ino, expected.st_dev, expected.st_size, expected.st_mtime_ns)
            ):
                return False
            held.unlink(name)
            return True

    def remove_empty_folders(self, rel_dir: str, *, stop_at: str = "") -> None:
        """``rmdir`` ``rel_dir`` and its parents while they are empty, up to (not including) ``stop_at``."""
        while rel_dir and rel_dir != stop_at:
            parent, _, name = rel_dir.rpartition("/")
            try:
                held = self.open_folder(parent)
            except (OSError, UnsafePathError):
                return
            with held:
                try:
                    held.rmdir(name)
                except (OSError, UnsafePathError):
                    return
            rel_dir = parent
