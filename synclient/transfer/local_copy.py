"""A file's bytes from a copy already on this machine (synapseclient's download cache) instead of from storage.

The bytes go to a temporary name of their own beside the destination (``partial.copy_temp_path``: never a
download's resumable partial, so no later run writes into a linked file), are hashed on the way, and the caller
verifies and installs them exactly as a download's (``Downloader.copy_local``): a file never appears at its final
path unless complete and verified. The cheapest way the filesystem allows:

- a reflink (``ioctl(FICLONE)``: btrfs, XFS, bcachefs, ...): the new file shares the source's blocks
  copy-on-write, so a change to either never shows in the other; refused elsewhere, and then silently a copy;
- a hard link when asked for (``link=True``): no bytes written at all, but the two names are one file, so a change
  to one is a change to the other; across filesystems it cannot be made, and then a copy;
- a copy, hashed while it is written.
"""

from __future__ import annotations

import enum
import errno
import hashlib
import logging
import os
from pathlib import Path
from typing import Callable, NamedTuple, Optional

try:
    import fcntl  # for the reflink ioctl (Linux)
except ImportError:  # Windows: no reflink (portable.CAPABILITIES.reflink is False)
    fcntl = None  # type: ignore[assignment]

from synclient import portable
from synclient.errors import Cancelled
from synclient.transfer.direct import DirectFile, aligned_buffer, pwrite_all
from synclient.transfer.hashing import HASH_READ, hash_file_range
from synclient.transfer.partial import SymlinkFreeFolders, check_plain_folder, open_for_write

log = logging.getLogger("synclient.transfer")

#: ``_IOW(0x94, 9, int)`` from linux/fs.h: make the target file share the source file's blocks
FICLONE = 0x40049409
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | portable.O_BINARY


class CopyMethod(enum.Enum):
    REFLINK = "reflink"
    HARD_LINK = "hard link"
    COPY = "copy"


class FilledTemp(NamedTuple):
    """What a temp file holds after :func:`fill_temp`: its MD5 (hex), its size, and how it got there."""

    md5: str
    size: int
    method: CopyMethod


def fill_temp(
    source: Path,
    temp: Path,
    *,
    link: bool = False,
    folders: Optional[SymlinkFreeFolders] = None,
    cancelled: Callable[[], bool] = lambda: False,
) -> FilledTemp:
    """Put the bytes of ``source`` (a regular file, never followed through a symlink) at ``temp`` (a name no download
    resumes from: ``partial.copy_temp_path``), replacing what was there, and hash them. ``cancelled`` is asked
    between chunks of a copy or hash (:class:`Cancelled`); the caller removes ``temp`` when this raises."""
    if link and _hard_link(source, temp, folders):
        fd = os.open(temp, _READ_FLAGS)
        try:
            md5, size = _hash_fd(fd, cancelled)
        finally:
            os.close(fd)
        return FilledTemp(md5, size, CopyMethod.HARD_LINK)
    source_fd = os.open(source, _READ_FLAGS)
    try:
        fd = open_for_write(temp, folders=folders).fd  # a fresh file of this run: what was at the name is unlinked
        try:
            if _reflink(source_fd, fd):
                md5, size = _hash_fd(fd, cancelled)
                return FilledTemp(md5, size, CopyMethod.REFLINK)
            md5, size = _copy(source_fd, fd, cancelled)
            return FilledTemp(md5, size, CopyMethod.COPY)
        finally:
            os.close(fd)
    finally:
        os.close(source_fd)


def _hard_link(source: Path, temp: Path, folders: Optional[SymlinkFreeFolders]) -> bool:
    """``temp`` as another name of ``source``; False where no link can be made (another filesystem, a filesystem
    without hard links, too many links): the caller copies instead."""
    check_plain_folder(temp.parent, folders)
    try:
        temp.unlink()  # an earlier copy's leftover (or a symlink planted there): the link takes its place
    except FileNotFoundError:
        pass
    try:
        os.link(source, temp, follow_symlinks=False)
    except NotImplementedError:  # a system that cannot be told not to follow a symlink: a copy is always right
        log.debug("cannot hard-link %s without following symlinks here; copying it", source)
        return False
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.EOPNOTSUPP, errno.ENOTSUP):
            raise
        log.debug("cannot hard-link %s (%s); copying it", source, exc.strerror or exc)
        return False
    return True


def _reflink(source_fd: int, fd: int) -> bool:
    """Clone the source's blocks into ``fd``; False (nothing written) where the filesystem or the system cannot."""
    if not portable.CAPABILITIES.reflink:
        return False
    try:
        fcntl.ioctl(fd, FICLONE, source_fd)
    except OSError:  # EOPNOTSUPP, EXDEV, EINVAL, ENOTTY, ...: a plain copy does the job
        return False
    return True


def _hash_fd(fd: int, cancelled: Callable[[], bool] = lambda: False) -> tuple:
    """(MD5, size) of the file behind ``fd``, read from its start; ``cancelled`` is asked between reads."""
    size = os.fstat(fd).st_size
    md5 = hashlib.md5()
    file = DirectFile(fd)
    buffer = aligned_buffer(min(HASH_READ, size)) if size else None
    for start in range(0, size, HASH_READ):
        if cancelled():
            raise Cancelled()
        hash_file_range(file, start, min(start + HASH_READ, size), md5, buffer)
    return md5.hexdigest(), size


def _copy(source_fd: int, fd: int, cancelled: Callable[[], bool]) -> tuple:
    """Copy ``source_fd`` into ``fd`` from their starts, hashing each chunk; (MD5, bytes copied)."""
    md5 = hashlib.md5()
    buffer = memoryview(bytearray(max(1, min(HASH_READ, os.fstat(source_fd).st_size))))
    offset = 0
    while True:
        if cancelled():
            raise Cancelled()
        count = portable.preadv(source_fd, [buffer], offset)
        if not count:
            return md5.hexdigest(), offset
        pwrite_all(fd, buffer[:count], offset)
        md5.update(buffer[:count])
        offset += count
