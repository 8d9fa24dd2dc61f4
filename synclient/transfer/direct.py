"""Writing downloads to disk: complete positional writes, and large files written and read back around the page
cache (``O_DIRECT``) where the filesystem allows it.

Why: a buffered write copies every byte into page-cache pages that the kernel must first find and zero. On a VM
whose host takes freed guest memory back (free page reporting, as on our benchmark machines), each of those pages
also costs a fault on the host: writing 2 GiB with ``dd`` took 4.8 CPU s buffered and 0.4 s with ``O_DIRECT``.
A large download is written once and verified by reading it back, so the cache buys it nothing during the sync.

``O_DIRECT`` wants offsets, lengths and buffer addresses aligned to the device's logical block size. Our receive
and hash buffers are ``mmap`` pages and parts start at multiples of the part size, so nearly every chunk is
aligned; what is not (the file's unaligned tail, a body cut mid-block and resumed from its last byte) goes through
the ordinary buffered descriptor. Linux keeps the two coherent: a direct read first writes back dirty cached
pages of its range. Network, FUSE and memory filesystems are never opened this way (``O_DIRECT`` turns each write
into a synchronous round trip on NFS, and tmpfs refuses it); anything that refuses it at run time falls back to
buffered I/O for that file.
"""

from __future__ import annotations

import errno
import mmap
import os
import re
from pathlib import Path
from typing import Optional

from synclient import portable

#: multiple of every common logical block size (512 and 4096); also the page size the buffers are aligned to
ALIGN = 4096

#: local block-device filesystems, where O_DIRECT is a plain DMA from our buffer to the disk
_DIRECT_FILESYSTEMS = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "jfs", "reiserfs", "bcachefs"})
_DIRECT_FLAG = getattr(os, "O_DIRECT", 0)
#: mountinfo writes space, tab, newline and backslash in paths as octal escapes (\040 ...)
_MOUNTINFO_ESCAPE = re.compile(r"\\([0-7]{3})")


def aligned_buffer(size: int) -> memoryview:
    """A writable buffer of at least ``size`` bytes whose address is page-aligned (anonymous ``mmap``)."""
    return memoryview(mmap.mmap(-1, max(ALIGN, -(-size // ALIGN) * ALIGN)))


def pwrite_all(fd: int, data: memoryview, offset: int) -> None:
    """``os.pwrite`` (:data:`synclient.portable.pwrite`) until every byte is written. On a nearly full disk pwrite
    may write only part of ``data`` and return the count without an error; ignoring that left a hole in a file
    whose streamed MD5 (of ``data``, not of the disk) still matched, and a corrupt file was installed. The retry of
    the remainder raises ENOSPC."""
    view = memoryview(data)
    while view:
        written = portable.pwrite(fd, view, offset)
        if written <= 0:
            raise OSError(errno.ENOSPC, "short write")
        view = view[written:]
        offset += written


def filesystem_type(path: Path, mountinfo: str = "/proc/self/mountinfo") -> Optional[str]:
    """The type of the filesystem holding ``path`` (the longest mount point above it in Linux's ``mountinfo``),
    None where unknown."""
    try:
        with open(mountinfo, encoding="utf-8", errors="surrogateescape") as mounts:
            lines = mounts.read().splitlines()
        resolved = os.path.realpath(path)
    except OSError:
        return None
    best, best_type = "", None
    for line in lines:
        fields = line.split(" ")
        try:
            mount_point = _MOUNTINFO_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), fields[4])
            fs_type = fields[fields.index("-", 6) + 1]
        except (IndexError, ValueError):
            continue
        inside = resolved == mount_point or resolved.startswith(mount_point.rstrip("/") + "/")
        if inside and len(mount_point) >= len(best):
            best, best_type = mount_point, fs_type
    return best_type


def open_direct(path: Path, same_as: int) -> int:
    """A second descriptor of the file ``path`` that bypasses the page cache, or -1 where that is not possible or
    not wise (not Linux, not a local disk filesystem, refused). It must be the very file ``same_as`` (a descriptor
    :func:`synclient.transfer.partial.open_for_write` gave) is open on: a name swapped meanwhile gives -1, never a
    descriptor of another file (the write rule)."""
    if not portable.CAPABILITIES.direct_io or filesystem_type(path.parent) not in _DIRECT_FILESYSTEMS:
        return -1
    flags = os.O_RDWR | _DIRECT_FLAG | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return -1
    try:
        mine, found = os.fstat(same_as), os.fstat(fd)
    except OSError:
        os.close(fd)
        return -1
    if (found.st_dev, found.st_ino) != (mine.st_dev, mine.st_ino):
        os.close(fd)
        return -1
    return fd


class DirectFile:
    """The two descriptors of one large download: ``fd`` (buffered, always valid) and ``direct_fd`` (or -1).

    Aligned stretches go through ``direct_fd``, the rest through ``fd``. A direct call that the filesystem
    refuses (``EINVAL``: it wants a larger alignment than ours) turns direct I/O off for this file and is redone
    buffered, so correctness never depends on it. The direct descriptor stays open until :meth:`close` even then:
    another thread may be using it, and a closed number could be reused by an unrelated file.
    """

    def __init__(self, fd: int, direct_fd: int = -1) -> None:
        self.fd = fd
        self.direct_fd = direct_fd
        self._direct = direct_fd >= 0

    @property
    def direct(self) -> bool:
        return self._direct

    def write(self, data: memoryview, offset: int) -> None:
        """Write all of ``data`` at ``offset``."""
        if self._direct and offset % ALIGN == 0:
            head = len(data) - len(data) % ALIGN
            if head:
                try:
                    pwrite_all(self.direct_fd, data[:head], offset)
                    data, offset = data[head:], offset + head
                except OSError as exc:
                    if exc.errno != errno.EINVAL:
                        raise
                    self._direct = False
        if len(data):
            pwrite_all(self.fd, data, offset)

    def read_into(self, buffer: memoryview, offset: int, end: int) -> memoryview:
        """Read from ``offset`` towards ``end`` into ``buffer`` (from :func:`aligned_buffer`) as much as fits; the
        returned view holds the bytes read from ``offset`` on (empty at end of file)."""
        if self._direct:
            start = offset - offset % ALIGN
            stop = min(start + len(buffer), -(-end // ALIGN) * ALIGN)
            try:
                received = portable.preadv(self.direct_fd, [buffer[: stop - start]], start)
                skip = offset - start
                return buffer[skip : max(skip, min(received, end - start))]
            except OSError as exc:
                if exc.errno != errno.EINVAL:
                    raise
                self._direct = False
        received = portable.preadv(self.fd, [buffer[: min(len(buffer), end - offset)]], offset)
        return buffer[:received]

    def close(self) -> None:
        for fd in (self.direct_fd, self.fd):
            if fd >= 0:
                os.close(fd)
        self.fd = self.direct_fd = -1
        self._direct = False
