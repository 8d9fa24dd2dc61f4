"""MD5 of files on disk: a downloaded file read back (through :class:`~synclient.transfer.direct.DirectFile`,
around the page cache where it was written that way), the growing prefix of a multipart download
(:class:`PrefixHasher`), and a local file the planner compares with the remote one (:func:`file_md5`).

Every reader reads :data:`HASH_READ` bytes at a time.
"""

from __future__ import annotations

import hashlib
import os
import queue
import threading
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Union

from synclient.errors import IntegrityError, LocalIOError
from synclient.transfer.direct import DirectFile, aligned_buffer

if TYPE_CHECKING:  # pragma: no cover
    from synclient.transfer.http import ByteRange

EMPTY_MD5 = hashlib.md5(b"").hexdigest()
#: bytes per read of every MD5 reader of a file
HASH_READ = 4 * 1024 * 1024
#: buffers of a read-ahead: one being hashed, one being read, one spare so neither side waits on a single slot
_READ_AHEAD_BUFFERS = 3


def file_md5(path: Union[str, os.PathLike], *, on_read: Optional[Callable[[int], None]] = None) -> str:
    """MD5 (hex) of the file at ``path``, read to its end; ``on_read`` is told each read's length (a progress bar
    of bytes hashed)."""
    md5 = hashlib.md5()
    with open(path, "rb", buffering=0) as handle:
        buffer = memoryview(bytearray(HASH_READ))
        for count in iter(lambda: handle.readinto(buffer), 0):
            md5.update(buffer[:count])
            if on_read is not None:
                on_read(count)
    return md5.hexdigest()


def hash_file_range(
    file: DirectFile, start: int, end: int, md5: hashlib._Hash, buffer: Optional[memoryview] = None
) -> None:
    """Feed bytes ``start .. end - 1`` of ``file`` to ``md5``, read through ``buffer`` (an
    :func:`aligned_buffer`, reused: no allocations)."""
    if start >= end:
        return
    buffer = buffer if buffer is not None else aligned_buffer(min(HASH_READ, end - start))
    offset = start
    while offset < end:
        received = _read_block(file, buffer, offset, end)
        md5.update(received)
        offset += len(received)


def _read_block(file: DirectFile, buffer: memoryview, offset: int, end: int) -> memoryview:
    """The next bytes of ``file`` from ``offset`` (at most ``end - offset``) read into ``buffer``; never empty."""
    received = file.read_into(buffer, offset, end)
    if not received:
        raise LocalIOError("partial file shrank while it was being verified")
    return received


def hash_with_read_ahead(file: DirectFile, start: int, end: int, md5: hashlib._Hash, buffers: List[memoryview]) -> None:
    """:func:`hash_file_range`, with a helper thread reading the next blocks while this one hashes.

    A file written around the page cache is read back from the disk for its MD5, and each read waits for the
    device; the MD5 (~700 MB/s) is the critical path of a large file on a fast link. ``preadv`` and ``md5.update``
    both release the GIL, so the two overlap: S5's 2 GiB hashed in 3.3 s of hashing time instead of 4.6-5.7 s.
    The helper is the hasher's own I/O, not a task of the sync, so it does not take a worker from the pool.
    """
    free: queue.Queue[memoryview] = queue.Queue()
    for buffer in buffers:
        free.put(buffer)
    filled: queue.Queue[Any] = queue.Queue()
    stop = threading.Event()

    def read_ahead() -> None:
        offset = start
        try:
            while offset < end:
                buffer = free.get()
                if stop.is_set():
                    return
                view = _read_block(file, buffer, offset, end)
                filled.put((buffer, view))
                offset += len(view)
        except BaseException as exc:  # handed to the hashing thread, which raises it
            filled.put(exc)

    reader = threading.Thread(target=read_ahead, name="synclient-hash-read-ahead", daemon=True)
    reader.start()
    try:
        hashed = start
        while hashed < end:
            item = filled.get()
            if isinstance(item, BaseException):
                raise item
            buffer, view = item
            md5.update(view)
            hashed += len(view)
            free.put(buffer)
    finally:
        stop.set()
        free.put(buffers[0])  # wakes a reader waiting for a buffer, so it sees stop
        reader.join()


class PrefixHasher:
    """MD5 of a file whose parts are written out of order: the written prefix is hashed while it grows.

    Every writer reports how far its part is written contiguously (:meth:`advance`, after each chunk). Whoever
    finds the prefix extended hashes the new bytes (read back from the file) while the others go on
    receiving; only bookkeeping happens under the lock, and one thread at a time hashes. Hashing follows the
    frontier chunk by chunk rather than part by part, so when the last byte arrives little is left to hash: the
    MD5 (~700 MB/s on one core) overlaps the download instead of trailing it.
    """

    def __init__(self, file: DirectFile, parts: List[ByteRange]) -> None:
        self._file = file
        self._parts = parts
        self._written = [part.start for part in parts]  # per part: end of its contiguously written bytes
        self._frontier_part = 0
        self._hashed = 0  # every byte before this offset is in the MD5
        self._busy = False
        self._lock = threading.Lock()
        self._md5 = hashlib.md5()
        self._buffers: List[memoryview] = []

    def advance(self, index: int, written_end: int) -> None:
        """Part ``index`` is written without gaps from its start up to ``written_end``."""
        with self._lock:
            if written_end > self._written[index]:
                self._written[index] = written_end
            if self._busy:
                return  # the thread hashing now will see this on its next look
            self._busy = True
        try:
            while True:
                with self._lock:
                    start, part = self._hashed, self._frontier_part
                    end = start
                    while part < len(self._parts):
                        end = self._written[part]
                        if end < self._parts[part].end:
                            break
                        part += 1
                    if end <= start:
                        self._busy = False
                        return
                read_ahead = self._file.direct and end - start > 2 * HASH_READ
                while len(self._buffers) < (_READ_AHEAD_BUFFERS if read_ahead else 1):
                    self._buffers.append(aligned_buffer(HASH_READ))
                if read_ahead:
                    hash_with_read_ahead(self._file, start, end, self._md5, self._buffers)
                else:
                    hash_file_range(self._file, start, end, self._md5, self._buffers[0])
                with self._lock:
                    self._hashed, self._frontier_part = end, part
        except BaseException:
            with self._lock:
                self._busy = False
            raise

    def part_done(self, index: int) -> None:
        self.advance(index, self._parts[index].end)

    @property
    def hashed(self) -> int:
        """Length of the prefix already in the MD5."""
        with self._lock:
            return self._hashed

    def hexdigest(self) -> str:
        with self._lock:
            if self._hashed != (self._parts[-1].end if self._parts else 0):
                raise IntegrityError("MD5 requested before every part was hashed")
            self._buffers = []
            return self._md5.hexdigest()
