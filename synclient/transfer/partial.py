"""Partial files beside their destination, and the resume journal of a download.

A download is written to a hidden temporary file in the destination's own folder (same filesystem, so the final
``os.replace`` is atomic) whose name carries the file handle id: bytes found there on the next run belong to the
same stored object and can be continued. A download also keeps a journal beside it (a single stream from
``download.SINGLE_RESUME_MIN`` up): a header line (handle id, size, MD5, part size) and then marks, appended with
``O_APPEND`` (no lock, no rewrite), each saying how far a part (a single stream: part 0) is on disk. A mark is
written only after the bytes it vouches for were made durable (:class:`DurableMarks`), at least every
:data:`JOURNAL_EVERY` bytes of a stream, so a re-run after Ctrl-C, SIGKILL or a power cut continues every part from
its mark; the kept bytes are hashed from the disk, and the final MD5 check catches anything the journal got wrong.
Partials of other handles than the one a run settles for a file can never resume; :class:`LeftoverPartials` removes
them.

The write rule (:func:`open_for_write`, the one way synclient opens a file to write a download's bytes into): data
goes only to a file this run created with ``O_CREAT | O_EXCL``, or to a partial whose journal names its device and
inode, found with that identity and one link (checked with ``fstat`` on the opened descriptor, never through a
symlink). Anything else under the name (a hard link to a file elsewhere, a symlink, another inode, a partial of a
failed verification, whose journal is removed first) is unlinked, never written through, and the file starts afresh.
A copy from synapseclient's cache (reflink, hard link or copy) is made under a name of its own
(:func:`copy_temp_path`) that no resume ever opens, and renamed into place once verified.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import stat
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from types import MappingProxyType
from typing import AbstractSet, Callable, Dict, Iterable, List, Mapping, NamedTuple, Optional, Set, Tuple

from synclient import portable
from synclient.errors import NoRoomForFileError, UnsafePathError

log = logging.getLogger(__name__)

TEMP_SUFFIX = ".synclient-partial"
JOURNAL_SUFFIX = ".parts"
COPY_SUFFIX = ".synclient-copy"  # a copy from synapseclient's cache being verified: never resumed
#: names of in-flight downloads beside their files (a remote name ending so is refused: sync/local/paths.py)
PARTIAL_SUFFIXES = (TEMP_SUFFIX, TEMP_SUFFIX + JOURNAL_SUFFIX, COPY_SUFFIX)
_MAX_TEMP_NAME = 200  # stay well below NAME_MAX (255) with our prefix and suffixes
_DIGEST_STEM = ".synclient-"  # the temp stem of a name too long to spell out
_HANDLE_ROOM = 21  # "." and a file handle id (a 64-bit number has at most 20 digits)


def temp_path(destination: Path, file_handle_id: str) -> Path:
    return destination.with_name(f"{_temp_stem(destination)}.{file_handle_id}{TEMP_SUFFIX}")


def copy_temp_path(destination: Path, file_handle_id: str) -> Path:
    """Where a copy from synapseclient's cache (a hard link or reflink included) is made and verified before it is
    renamed into place: a name of its own, so that no download ever resumes from (writes into) a linked file."""
    return destination.with_name(f"{_temp_stem(destination)}.{file_handle_id}{COPY_SUFFIX}")


def _temp_stem(destination: Path) -> str:
    """A temp name up to ``.<handle><suffix>``: one per destination, whatever the handle, so that partials of
    other handles are found by it. A long name becomes a digest of itself to stay within NAME_MAX."""
    stem = f".{destination.name}"
    if len(stem.encode("utf-8", "surrogateescape")) + _HANDLE_ROOM + len(TEMP_SUFFIX) > _MAX_TEMP_NAME:
        digest = hashlib.sha1(destination.name.encode("utf-8", "surrogateescape")).hexdigest()[:20]
        stem = f"{_DIGEST_STEM}{digest}"
    return stem


def journal_path(temp: Path) -> Path:
    return temp.with_name(temp.name + JOURNAL_SUFFIX)


class LeftoverPartials:
    """Partial downloads that earlier runs left beside files this run settles; each folder is listed once.

    A download resumes only from a partial of the same file handle. Once a file is settled (downloaded again for a
    newer handle, or found already right and adopted), older partials of it can never be continued: an interrupted
    download of version 1 followed by version 2 would otherwise keep version 1's bytes on disk for good, and a run
    killed between moving a finished file into place and removing its journal would leave the journal.
    """

    def __init__(self) -> None:
        self._by_folder: Dict[str, Dict[str, List[Tuple[str, Path]]]] = {}
        self._scan_lock = threading.Lock()
        self._resuming: Set[Tuple[str, str]] = set()  # (folder, stem) whose kept partials a download resumes

    def discard(self, destination: Path, *, keep_handle: Optional[str] = None) -> None:
        """Remove the partials (temp files and journals) of ``destination`` but those of ``keep_handle``. With no
        partial of ``keep_handle`` under this name, one left under another name of the folder is renamed to this
        one (the entity was renamed remotely after an interrupted run: its bytes still belong to the same handle)."""
        # Runs once per file a run settles, in many threads: the lock is only taken to list a new folder; a file's
        # entry is taken with one dict.pop (atomic), and no two files of a run share a destination.
        key = os.path.dirname(destination)
        folder = self._by_folder.get(key)
        if folder is None:
            with self._scan_lock:
                folder = self._by_folder.get(key)
                if folder is None:
                    folder = self._by_folder[key] = _partials_in(destination.parent)
        stem = _temp_stem(destination)
        found = folder.pop(stem, None) or []
        if keep_handle is not None and not any(handle == keep_handle for handle, _ in found):
            found += self._adopt(key, folder, keep_handle, destination)
        if not found:
            return
        kept = [(handle, path) for handle, path in found if handle == keep_handle and _resumable(path)]
        if kept:  # the download about to start resumes from them
            self._resuming.add((key, stem))
            folder[stem] = kept
        for handle, path in found:
            if (handle, path) in kept:
                continue
            _remove(path, "stale partial download")

    def _adopt(
        self, key: str, folder: Dict[str, List[Tuple[str, Path]]], handle: str, destination: Path
    ) -> List[Tuple[str, Path]]:
        """Partials of ``handle`` under another name of the folder, renamed to ``destination``'s partial names.
        Never those another file of this run is resuming from."""
        for other in list(folder):
            if (key, other) in self._resuming or not any(
                h == handle and _resumable(path) for h, path in folder.get(other, ())
            ):
                continue
            entries = folder.pop(other, None) or []
            mine = [path for h, path in entries if h == handle and _resumable(path)]
            rest = [(h, path) for h, path in entries if path not in mine]
            if rest:
                folder.setdefault(other, []).extend(rest)
            temp = temp_path(destination, handle)
            adopted = []
            for path in mine:
                new = journal_path(temp) if path.name.endswith(TEMP_SUFFIX + JOURNAL_SUFFIX) else temp
                try:
                    os.replace(path, new)
                except OSError as exc:
                    log.warning("cannot resume %s from %s: %s", destination, path, exc.strerror or exc)
                    continue
                adopted.append((handle, new))
            if adopted:
                log.info("resuming %s from the partial download of its earlier name", destination.name)
            return adopted
        return []


def partial_key(destination: Path) -> Tuple[str, str]:
    """(folder, temp stem): names every partial download of ``destination``, whatever its file handle."""
    return os.path.dirname(destination), _temp_stem(destination)


def sweep_partials(
    folders: Iterable[Path],
    *,
    keep: AbstractSet[Tuple[str, str]],
    spare: Callable[[Path, Optional[str]], bool] = lambda folder, name: False,
) -> int:
    """Remove every partial download (temp file or journal) in ``folders`` but those of the destinations in
    ``keep`` (:func:`partial_key` of files that failed in this run, which the next run resumes) and those ``spare``
    says to leave (called with the folder and the file name the partial is of, None for a long name kept as a
    digest). Run at the end of a run that was not interrupted: any other partial there belongs to no file of the
    remote tree as it is now. Returns how many were removed."""
    removed = 0
    for folder in folders:
        if os.path.realpath(folder) != str(folder):  # swapped for a symlink during the run: not ours to clean
            continue
        for stem, entries in _partials_in(folder).items():
            name = None if stem.startswith(_DIGEST_STEM) else stem[1:]
            if (str(folder), stem) in keep or spare(folder, name):
                entries = [(handle, path) for handle, path in entries if not _resumable(path)]
            for _handle, path in entries:
                if _remove(path, "partial download of a file that is no longer there"):
                    removed += 1
    return removed


def _resumable(path: Path) -> bool:
    """A partial file or journal a download may resume from; not a cache copy left half-verified (never resumed)."""
    return not path.name.endswith(COPY_SUFFIX)


def _remove(path: Path, what: str) -> bool:
    try:
        path.unlink()
        return True
    except FileNotFoundError:
        return False
    except OSError as exc:  # cleanup only: the files themselves are unaffected
        log.warning("cannot remove the %s %s: %s", what, path, exc.strerror or exc)
        return False


def _partials_in(folder: Path) -> Dict[str, List[Tuple[str, Path]]]:
    """``{temp stem: [(handle id, path), ...]}`` for every temp file and journal in ``folder``."""
    found: Dict[str, List[Tuple[str, Path]]] = {}
    try:
        with os.scandir(folder) as entries:
            names = [entry.name for entry in entries]
    except OSError:  # absent (first sync) or unreadable: nothing to clean
        return found
    for name in names:
        suffix = next((suffix for suffix in PARTIAL_SUFFIXES if name.endswith(suffix)), None)
        if suffix is None:
            continue
        stem, _, handle = name[: -len(suffix)].rpartition(".")
        if stem and handle.isascii() and handle.isdigit():
            found.setdefault(stem, []).append((handle, folder / name))
    return found


def realpath(path: Path) -> str:
    """``os.path.realpath(path)``, the same string, cheaper for a folder that exists and has no symlink on its path.

    ``os.path.realpath`` calls ``lstat`` on every component (five for a folder four levels down), and the checks
    below run for every downloaded file. Here the kernel resolves the path once (``open(O_PATH)``, ``readlink`` of
    its ``/proc/self/fd`` entry): when that is the path itself, it is also what ``os.path.realpath`` returns. Any
    other outcome (a symlink on the way, a missing folder, no ``/proc`` or no ``O_PATH``: the ``proc_fd``
    capability of :mod:`synclient.portable`) is decided by ``os.path.realpath``.
    """
    text = str(path)
    fd = _open_plain(text)
    if fd is None:
        return os.path.realpath(text)
    os.close(fd)
    return text


def _open_plain(text: str) -> Optional[int]:
    """An ``O_PATH`` descriptor of the folder ``text`` when the kernel resolves ``text`` to itself (no symlink on
    the way), else None (also without ``O_PATH`` or ``/proc``)."""
    if not portable.CAPABILITIES.proc_fd or not text.startswith("/"):
        return None
    try:  # O_PATH: a descriptor that only names the folder, whose path /proc/self/fd tells
        fd = os.open(text, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if os.readlink(f"/proc/self/fd/{fd}") == text:
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


class SymlinkFreeFolders:
    """``realpath(folder) == str(folder)`` for the folders of one run, in one system call per check.

    Every file is checked three times (planned, temp opened, renamed into place), and each check costs
    :func:`realpath`'s three system calls; with many threads each system call also hands the GIL over twice. Here
    a folder that passed is kept open (``O_PATH``, which only names it) and a later check reads the path of that
    descriptor (``/proc/self/fd``): the folder it names is still at exactly this path, so nothing on the way
    became a symlink. Anything else (moved, deleted, replaced, a symlink on the way, an evicted entry) is decided by
    :func:`realpath` again, so every verdict is the one :func:`realpath` gives. At most ``capacity`` folders are
    held, and :meth:`close` lets them all go (a held folder would keep its filesystem busy).
    """

    def __init__(self, capacity: int = 64) -> None:
        self._capacity = capacity
        self._held: Dict[str, int] = {}  # folder -> O_PATH descriptor, oldest first
        self._lock = threading.Lock()
        self._closed = False

    def plain(self, folder: Path) -> bool:
        text = str(folder)
        fd = self._held.get(text)  # no lock: a descriptor closed (or even reused) meanwhile names another path,
        if fd is not None:  # and any descriptor whose path is this one shows that it is plain right now
            try:
                if os.readlink(f"/proc/self/fd/{fd}") == text:
                    return True
            except OSError:
                pass
        fd = _open_plain(text)
        if fd is None:  # not plain, or no way to tell cheaply: os.path.realpath decides
            return os.path.realpath(text) == text
        self._hold(text, fd)
        return True

    def _hold(self, text: str, fd: int) -> None:
        with self._lock:
            if self._closed:
                os.close(fd)
                return
            old = self._held.pop(text, None)
            self._held[text] = fd
            if old is not None:
                os.close(old)
            while len(self._held) > self._capacity:
                os.close(self._held.pop(next(iter(self._held))))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            held, self._held = self._held, {}
        for fd in held.values():
            os.close(fd)


def check_plain_folder(folder: Path, folders: Optional[SymlinkFreeFolders] = None) -> None:
    """The folder a download writes into is still a plain folder of the target (synclient made its path of plain
    folders): a folder swapped for a symlink since the file was planned is refused, not written through."""
    if not (folders.plain(folder) if folders is not None else realpath(folder) == str(folder)):
        raise UnsafePathError(f"{folder} is now reached through a symlink; not written")


@dataclass(frozen=True)
class FileIdentity:
    """Which file a name stood for: its device and inode (``st_dev``, ``st_ino``)."""

    device: int
    inode: int

    @classmethod
    def of(cls, info: os.stat_result) -> FileIdentity:
        return cls(info.st_dev, info.st_ino)


class WriteTarget(NamedTuple):
    """A file opened by :func:`open_for_write`: its descriptor, identity, the bytes it holds (0 when fresh) and
    whether it is the partial an earlier try or run left (``resumed``) rather than a file created now."""

    fd: int
    identity: FileIdentity
    size: int
    resumed: bool


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
#: a fresh file: created by this call or not at all, never through a symlink planted at its name
_CREATE_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0) | portable.O_BINARY
#: an existing partial: never created, never through a symlink, never blocking on something that is not a file
_REOPEN_FLAGS = os.O_RDWR | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0) | portable.O_BINARY


def open_for_write(
    path: Path,
    *,
    resume: Optional[FileIdentity] = None,
    folders: Optional[SymlinkFreeFolders] = None,
    append: bool = False,
) -> WriteTarget:
    """The one way synclient opens a file to write data into (the write rule).

    With ``resume`` (the identity a resume journal recorded for this partial), the file at ``path`` is continued
    when the opened descriptor (``fstat``, not the path) is a regular file of exactly that device and inode with one
    link. Anything else found there (a hard link to a file elsewhere, a symlink, another inode, a folder's entry that
    is not a file) is discarded: unlinked, never written through. The file is then created with ``O_CREAT |
    O_EXCL``, so the bytes go to an inode this call made. Raises ``OSError`` (and :class:`UnsafePathError` for a
    folder now reached through a symlink: :func:`check_plain_folder`)."""
    check_plain_folder(path.parent, folders)
    extra = os.O_APPEND if append else 0
    if resume is not None:
        found = _reopen(path, resume, extra)
        if found is not None:
            return found
    try:
        fd = os.open(path, _CREATE_FLAGS | extra, 0o644)
    except FileExistsError:
        _discard_name(path)
        fd = os.open(path, _CREATE_FLAGS | extra, 0o644)  # one made again meanwhile is someone else's: raised
    try:
        return WriteTarget(fd, FileIdentity.of(os.fstat(fd)), 0, False)
    except BaseException:
        os.close(fd)
        raise


def _reopen(path: Path, identity: FileIdentity, extra: int) -> Optional[WriteTarget]:
    """The partial at ``path`` opened for writing when it is ``identity``'s file with one link, else None."""
    try:  # a first look at the name: nothing but a regular file is ever opened (a FIFO or device could act on it)
        seen = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(seen.st_mode) or seen.st_nlink != 1 or FileIdentity.of(seen) != identity:
        log.info("%s is not the partial download its journal recorded; starting it afresh", path)
        return None
    try:
        fd = os.open(path, _REOPEN_FLAGS | extra)
    except OSError:  # gone, or a symlink swapped in meanwhile (ELOOP): not followed
        return None
    try:
        info = os.fstat(fd)  # the descriptor decides: the name may have changed since lstat
        if stat.S_ISREG(info.st_mode) and info.st_nlink == 1 and FileIdentity.of(info) == identity:
            return WriteTarget(fd, identity, info.st_size, True)
    except BaseException:
        os.close(fd)
        raise
    os.close(fd)
    log.info("%s changed while it was opened; starting it afresh", path)
    return None


def _discard_name(path: Path) -> None:
    """Unlink whatever is at ``path`` (a stale partial, a hard link, a symlink: the name only, never its target)."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


def preallocate(fd: int, size: int, path: Path) -> None:
    """Reserve the file's blocks up front (a full disk fails now, not at 97%); fall back to a sparse size. A
    filesystem that refuses them for lack of space refuses this file (:class:`NoRoomForFileError`, this file's
    failure): smaller files may still fit."""
    if size == 0:
        return
    if hasattr(os, "posix_fallocate"):
        try:
            os.posix_fallocate(fd, 0, size)
            return
        except OSError as exc:
            if exc.errno in _NO_SPACE:
                raise NoRoomForFileError.of(path, size, exc, free=free_space(path.parent)) from None
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, getattr(errno, "ENOTSUP", errno.EOPNOTSUPP)):
                raise
    os.ftruncate(fd, size)


def check_room(folder: Path, size: int, path: Path) -> None:
    """Refuse a file of ``size`` bytes that the filesystem of ``folder`` has no room for now
    (:class:`NoRoomForFileError`, this file's failure), before a byte of it is written: a file larger than the free
    space would otherwise fill the disk and fail every file after it."""
    free = free_space(folder)
    if free is not None and size > free:
        raise NoRoomForFileError.of(path, size, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), free=free)


def free_space(folder: Path) -> Optional[int]:
    """Bytes this process may still write on the filesystem of ``folder`` (root may use the blocks reserved for
    it), or None where the system or the filesystem does not tell."""
    if not hasattr(os, "statvfs"):
        return None
    try:
        info = os.statvfs(folder)
    except OSError:
        return None
    if not info.f_blocks:  # a filesystem that does not tell its size: nothing to judge by
        return None
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    return (info.f_bfree if root else info.f_bavail) * info.f_frsize


@dataclass(frozen=True)
class JournalHeader:
    file_handle_id: str
    size: int
    md5: str
    part_size: int  # 0: one stream (its one part is the whole file)

    def part_bounds(self, index: int) -> Optional[Tuple[int, int]]:
        """(start, end) of part ``index`` of the file, None for an index the file has no part of."""
        if self.part_size == 0:
            return (0, self.size) if index == 0 else None
        start = index * self.part_size
        return (start, min(start + self.part_size, self.size)) if 0 <= start < self.size else None


class JournalState(NamedTuple):
    """What a journal vouches for: the partial file it was written with, and per part (index) the end of the bytes
    from the part's start that were durable on disk when the mark was written (a finished part: its end)."""

    partial: FileIdentity
    marks: Dict[int, int]


class ResumeJournal:
    """The resume record of one partial download: a header line (the file handle, size, MD5 and part size, and the
    device and inode of the partial file it goes with) and then marks, one line each, appended with ``O_APPEND``:
    ``<part> <end>`` says that the part's bytes from its start up to offset ``end`` are durable on disk (a bare
    ``<part>``, as journals before marks wrote, that the part is finished). The last mark of a part wins; a line
    the file ends in without its newline (torn by a crash) and any line that is not a mark of one of the file's
    parts are ignored. Without the journal (or with another header, or another inode) a partial is never resumed:
    :func:`open_for_write` discards it."""

    def __init__(self, path: Path, header: JournalHeader) -> None:
        self.path = path
        self.header = header
        self._fd = -1

    def load(self) -> Optional[JournalState]:
        """The partial and marks an earlier try or run recorded for the same header; None for a journal that is
        missing, unreadable, foreign or of another file."""
        try:
            fd = os.open(self.path, portable.SAFE_READ_FLAGS)
        except OSError:
            return None
        try:
            with os.fdopen(fd, "rb") as journal:
                lines = journal.read().split(b"\n")
        except OSError:
            return None
        lines.pop()  # what follows the last newline: nothing, or a line torn by a crash
        if not lines:
            return None
        try:
            fields = json.loads(lines[0].decode("utf-8"))
            partial = FileIdentity(int(fields.pop("device")), int(fields.pop("inode")))
            if JournalHeader(**fields) != self.header:
                return None
        except (ValueError, TypeError, KeyError, AttributeError):  # UnicodeDecodeError is a ValueError
            return None
        marks: Dict[int, int] = {}
        for line in lines[1:]:
            mark = self._mark_of(line)
            if mark is not None:
                marks[mark[0]] = mark[1]
        return JournalState(partial, marks)

    def _mark_of(self, line: bytes) -> Optional[Tuple[int, int]]:
        """(part, durable end) of a mark line; None for anything else (garbage, a part the file has not, an end
        outside its part)."""
        words = line.split(b" ")
        # bytes.isdigit: ASCII only; a number longer than any offset is no mark (and int() refuses more than 4300
        # digits on Python 3.11: a ValueError out of here would end the run)
        if not 1 <= len(words) <= 2 or not all(word.isdigit() and len(word) <= _MAX_DIGITS for word in words):
            return None
        index = int(words[0])
        bounds = self.header.part_bounds(index)
        if bounds is None:
            return None
        end = int(words[1]) if len(words) == 2 else bounds[1]
        return (index, end) if bounds[0] <= end <= bounds[1] else None

    def start(
        self,
        partial: FileIdentity,
        marks: Mapping[int, int] = MappingProxyType({}),
        *,
        folders: Optional[SymlinkFreeFolders] = None,
    ) -> None:
        """Write the journal of ``partial`` afresh (a file of this run: :func:`open_for_write`), with the ``marks``
        already durable; later ones are appended by :meth:`mark`."""
        self.close()
        self._fd = open_for_write(self.path, folders=folders, append=True).fd
        header = dict(asdict(self.header), device=partial.device, inode=partial.inode)
        os.write(self._fd, (json.dumps(header) + "\n" + _mark_lines(marks)).encode())

    def mark(self, marks: Mapping[int, int]) -> None:
        """Append ``{part: end}`` marks; the caller made those bytes durable first (:class:`DurableMarks`)."""
        if self._fd >= 0 and marks:
            os.write(self._fd, _mark_lines(marks).encode())  # one small O_APPEND write: atomic among threads

    def sync(self) -> None:
        """The marks written so far on stable storage (a power cut keeps them; where the filesystem cannot sync,
        as safe as the OS keeps them)."""
        if self._fd >= 0:
            make_durable(self._fd)

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


_MAX_DIGITS = 20  # of a part index or an offset: 2**64 has 20


def _mark_lines(marks: Mapping[int, int]) -> str:
    return "".join(f"{index} {end}\n" for index, end in sorted(marks.items()))


#: a running stream's bytes on disk that its journal does not yet vouch for stay below this (when the chunk size is
#: not larger): what a SIGKILL or power cut can cost a stream at most, on top of bytes not yet on disk
JOURNAL_EVERY = 4 * 1024 * 1024


#: what a filesystem that cannot sync a file answers (some FUSE and network filesystems): a missing feature, not a
#: failed write (EIO, ENOSPC: bytes lost, the download fails)
_CANNOT_SYNC = frozenset({errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, getattr(errno, "ENOTSUP", errno.EOPNOTSUPP)})


def make_durable(fd: int) -> bool:
    """The file's written bytes (and the size and blocks needed to read them back) on stable storage; False on a
    filesystem that cannot sync a file (:data:`_CANNOT_SYNC`): the bytes are then as safe as the OS keeps them."""
    try:
        (os.fdatasync if hasattr(os, "fdatasync") else os.fsync)(fd)
    except OSError as exc:
        if exc.errno in _CANNOT_SYNC:
            return False
        raise
    return True


class DurableMarks:
    """Journals how far each stream of one partial file has written, the data made durable BEFORE the mark says
    so (aria2's control file habit): a crash or power cut never leaves a mark over bytes the disk has not got.

    Each stream reports, after each chunk it wrote, the end of its bytes written contiguously from its part's
    start (:meth:`advance`). When that is :data:`JOURNAL_EVERY` bytes past its last mark, less one chunk (so the
    next chunk cannot take it beyond), the file is synced once (``fdatasync``) and every stream's progress written
    before the sync is marked in one journal line per stream, the journal then synced too; a stream finished or
    stopped marks what it has at once (``final``). One sync at a time: a stream that waited for another's sync
    finds itself marked by it.

    On a filesystem that cannot sync a file (:func:`make_durable` says so) the download goes on, and the marks are
    still written when the file has an MD5: the bytes are in the OS's cache, which a killed process does not lose,
    and the final MD5 check catches what an OS crash would. A file without an MD5 gets no more marks there: nothing
    could catch a mark over bytes a crash lost."""

    def __init__(self, journal: ResumeJournal, fd: int, *, marked: Mapping[int, int], chunk_size: int) -> None:
        self._journal = journal
        self._fd = fd
        self._marked: Dict[int, int] = dict(marked)  # per stream (part): durable end its journal says
        self._written: Dict[int, int] = dict(marked)  # per stream: end of its bytes written (and returned)
        self._slack = max(JOURNAL_EVERY - chunk_size, 0)
        self._lock = threading.Lock()

    def advance(self, index: int, end: int, *, final: bool = False) -> None:
        """Stream ``index`` has written its bytes up to ``end``; journaled now if due (or ``final``)."""
        self._written[index] = end  # an existing key: no resize, safe beside the snapshot below
        if not final and end - self._marked[index] <= self._slack:
            return
        with self._lock:
            marked = self._marked[index]
            if marked >= end or (not final and end - marked <= self._slack):
                return  # another stream's sync covered it
            written = dict(self._written)  # every end in it was written before the sync below
            if not make_durable(self._fd) and not self._journal.header.md5:
                self._marked.update(written)  # (the next try comes JOURNAL_EVERY later, as after a sync)
                return
            due = {i: e for i, e in written.items() if e > self._marked[i]}
            self._journal.mark(due)
            self._journal.sync()  # and the marks themselves: a power cut keeps them too
            self._marked.update(due)

    def reset(self, index: int, end: int) -> None:
        """Stream ``index`` starts again from ``end``, below its mark: journaled at once (a mark that vouches for
        less needs no sync), before any of its bytes are rewritten."""
        with self._lock:
            self._written[index] = self._marked[index] = end
            self._journal.mark({index: end})
