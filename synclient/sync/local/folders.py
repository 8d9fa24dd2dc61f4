"""A folder inside the target reached from its root without following any symlink, and the calls made in it.

Deletion reads, lists and removes only through such a folder (:meth:`TargetDirectory.open_folder`), so nothing a
user or another process puts on the way (a folder swapped for a symlink) leads it outside the target. Two ways,
chosen once by :data:`synclient.portable.CAPABILITIES` (``dir_fd``):

- :class:`DescriptorFolder` (Linux, macOS, BSDs): each component is opened relative to its parent's descriptor
  with ``O_NOFOLLOW``, and every call is relative to the last descriptor (``dir_fd=``). What the descriptor names
  is fixed when it is opened, so there is no window between a check and a use.
- :class:`CheckedPathFolder` (Windows, which has no ``dir_fd``): each component is ``lstat``-ed in turn and
  refused if it is a symlink (or any reparse point: a junction too) or no folder, and its identity (device,
  inode) is kept. Before each call the walk is done again and must meet the same folders. A window remains, and
  is accepted: a component swapped for a symlink between that check and the call itself (microseconds) is
  followed by that one call. It needs write access to the target's folders, timed to the system call; the
  descriptor way has no such window.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import List, Tuple

from synclient.errors import UnsafePathError

_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def is_link(info: os.stat_result) -> bool:
    """A symlink, or on Windows any reparse point (a junction leads elsewhere just as a symlink does)."""
    return stat.S_ISLNK(info.st_mode) or bool(
        getattr(info, "st_file_attributes", 0) & stat.FILE_ATTRIBUTE_REPARSE_POINT
    )


def _through_symlink(root: Path, rel_dir: str, part: str) -> UnsafePathError:
    return UnsafePathError(f"{root / rel_dir} is reached through a symlink ({part!r}); not followed")


def _gone(root: Path, rel_dir: str) -> FileNotFoundError:
    """A file where a folder was: the folder is gone."""
    return FileNotFoundError(errno.ENOENT, "not a folder", str(root / rel_dir))


class DescriptorFolder:
    """A folder held by its descriptor; names are looked up in it (``dir_fd=``). :meth:`close` releases it."""

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = fd

    @classmethod
    def open(cls, root: Path, rel_dir: str) -> DescriptorFolder:
        fd = os.open(root, os.O_RDONLY | _O_DIRECTORY)
        try:
            for part in (p for p in rel_dir.split("/") if p):
                try:
                    child = os.open(part, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW, dir_fd=fd)
                except OSError as exc:
                    if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                        raise
                    if stat.S_ISLNK(os.lstat(part, dir_fd=fd).st_mode):
                        raise _through_symlink(root, rel_dir, part) from None
                    raise _gone(root, rel_dir) from None
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return cls(fd)

    def listdir(self) -> List[str]:
        return os.listdir(self.fd)

    def lstat(self, name: str) -> os.stat_result:
        return os.lstat(name, dir_fd=self.fd)

    def unlink(self, name: str) -> None:
        os.unlink(name, dir_fd=self.fd)

    def rmdir(self, name: str) -> None:
        os.rmdir(name, dir_fd=self.fd)

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> DescriptorFolder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class CheckedPathFolder:
    """A folder held by its path and the identity of every folder on it, checked again before each call (see the
    module's note on the window that remains)."""

    def __init__(self, root: Path, rel_dir: str, chain: List[Tuple[int, int]]) -> None:
        self.root = root
        self.rel_dir = rel_dir
        self.path = root.joinpath(*self._parts(rel_dir))
        self._chain = chain

    @staticmethod
    def _parts(rel_dir: str) -> List[str]:
        return [p for p in rel_dir.split("/") if p]

    @classmethod
    def _walk(cls, root: Path, rel_dir: str) -> List[Tuple[int, int]]:
        """(device, inode) of the root and each folder down to ``rel_dir``; a symlink on the way is an
        :class:`UnsafePathError`, a missing folder (or a file in its place) ``FileNotFoundError``."""
        info = os.stat(root)  # the root itself is followed, as the descriptor way opens it
        chain = [(info.st_dev, info.st_ino)]
        path = root
        for part in cls._parts(rel_dir):
            path = path / part
            try:
                info = os.lstat(path)
            except NotADirectoryError:
                raise _gone(root, rel_dir) from None
            if is_link(info):
                raise _through_symlink(root, rel_dir, part)
            if not stat.S_ISDIR(info.st_mode):
                raise _gone(root, rel_dir)
            chain.append((info.st_dev, info.st_ino))
        return chain

    @classmethod
    def open(cls, root: Path, rel_dir: str) -> CheckedPathFolder:
        return cls(root, rel_dir, cls._walk(root, rel_dir))

    def _checked(self, name: str) -> str:
        """The path of ``name`` in this folder, once the folders on the way were found to be the same as when it
        was opened."""
        if self._walk(self.root, self.rel_dir) != self._chain:
            raise UnsafePathError(f"{self.path} was replaced while in use; not touched")
        return os.path.join(self.path, name)

    def listdir(self) -> List[str]:
        return os.listdir(self._checked(""))

    def lstat(self, name: str) -> os.stat_result:
        return os.lstat(self._checked(name))

    def unlink(self, name: str) -> None:
        os.unlink(self._checked(name))  # never follows a symlink named ``name``: it removes the link

    def rmdir(self, name: str) -> None:
        os.rmdir(self._checked(name))

    def close(self) -> None:
        pass  # nothing held

    def __enter__(self) -> CheckedPathFolder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
