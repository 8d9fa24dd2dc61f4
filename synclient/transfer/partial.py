"""Partial files beside their destination, and the resume journal of a multipart download.

A download is written to a hidden temporary file in the destination's own folder (same filesystem, so the final
``os.replace`` is atomic) whose name carries the file handle id: bytes found there on the next run belong to the
same stored object and can be continued. A multipart download also keeps a journal beside it: a header line (handle
id, size, MD5, part size) and then one line per finished part, appended with ``O_APPEND`` (no lock, no rewrite).
A part is listed only after its bytes were written, and the final MD5 check catches anything the journal got wrong.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Set

TEMP_SUFFIX = ".synclient-partial"
JOURNAL_SUFFIX = ".parts"
_MAX_TEMP_NAME = 200  # stay well below NAME_MAX (255) with our prefix and suffixes


def temp_path(destination: Path, file_handle_id: str) -> Path:
    name = f".{destination.name}.{file_handle_id}{TEMP_SUFFIX}"
    if len(name.encode("utf-8", "surrogateescape")) > _MAX_TEMP_NAME:
        digest = hashlib.sha1(destination.name.encode("utf-8", "surrogateescape")).hexdigest()[:20]
        name = f".synclient-{digest}.{file_handle_id}{TEMP_SUFFIX}"
    return destination.with_name(name)


def journal_path(temp: Path) -> Path:
    return temp.with_name(temp.name + JOURNAL_SUFFIX)


def discard_partial(destination: Path, file_handle_id: str) -> None:
    """Remove what an earlier run left of downloading this handle to ``destination``: its temp file and journal.

    A run killed after moving a finished download into place but before removing its journal leaves the journal
    behind; the next run finds the file already right (adopts it) and calls this, so nothing stale stays."""
    temp = temp_path(destination, file_handle_id)
    for path in (journal_path(temp), temp):
        try:
            path.unlink()
        except FileNotFoundError:
            pass


def open_temp(path: Path, *, truncate: bool = False) -> int:
    """Open (creating) a temp file for writing without following a symlink planted at its name."""
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    if truncate:
        flags |= os.O_TRUNC
    return os.open(path, flags, 0o644)


def preallocate(fd: int, size: int) -> None:
    """Reserve the file's blocks up front (a full disk fails now, not at 97%); fall back to a sparse size."""
    if size == 0:
        return
    if hasattr(os, "posix_fallocate"):
        try:
            os.posix_fallocate(fd, 0, size)
            return
        except OSError as exc:
            import errno
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, getattr(errno, "ENOTSUP", errno.EOPNOTSUPP)):
                raise
    os.ftruncate(fd, size)


@dataclass(frozen=True)
class JournalHeader:
    file_handle_id: str
    size: int
    md5: str
    part_size: int


class ResumeJournal:
    """The list of finished parts of one multipart download."""

    def __init__(self, path: Path, header: JournalHeader) -> None:
        self.path = path
        self.header = header
        self._fd = -1

    def load_finished(self) -> Set[int]:
        """Parts an earlier run finished for the same header; an unreadable or foreign journal counts as none."""
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return set()
        if not lines:
            return set()
        try:
            if JournalHeader(**json.loads(lines[0])) != self.header:
                return set()
        except (ValueError, TypeError):
            return set()
        return {int(line) for line in lines[1:] if line.strip().isdigit()}

    def open(self, *, fresh: bool) -> None:
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
        if fresh:
            flags |= os.O_TRUNC
        self._fd = os.open(self.path, flags, 0o644)
        if fresh:
            os.write(self._fd, (json.dumps(asdict(self.header)) + "\n").encode())

    def mark_finished(self, index: int) -> None:
        os.write(self._fd, f"{index}\n".encode())  # one small O_APPEND write: atomic among threads

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def remove(self) -> None:
        self.close()
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
