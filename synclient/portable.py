"""What this operating system offers synclient, chosen once when synclient is imported.

Linux gives the fast paths: positional I/O (``os.pwrite``/``os.preadv``), ``flock``, ``O_DIRECT`` with
``/proc/self/mountinfo``, reflinks (``ioctl(FICLONE)``), ``O_PATH`` descriptors read back through
``/proc/self/fd``, and descriptor-relative calls (``dir_fd=``). Each has a fallback that macOS or Windows run
instead, chosen here once so no call site asks again:

====================  ==============================================  =============================================
capability            fast path                                       fallback
====================  ==============================================  =============================================
``positional_io``     ``os.pwrite`` / ``os.preadv`` (``os.pread``     a lock per descriptor around ``lseek`` +
                      where a macOS build lacks ``preadv``)           ``write`` / ``read``
``flock``             ``fcntl.flock`` on ``.synclient/lock``          the ``filelock`` library (``msvcrt`` on
                                                                      Windows)
``direct_io``         ``O_DIRECT`` where ``mountinfo`` says local     off: buffered I/O
``reflink``           ``ioctl(FICLONE)``                              a plain copy
``proc_fd``           ``O_PATH`` + ``readlink /proc/self/fd/N``       ``os.path.realpath``
``dir_fd``            walk and remove relative to folder descriptors  walk by path with ``lstat`` checks
                                                                      (:mod:`synclient.sync.local.folders`)
====================  ==============================================  =============================================

``SYNCLIENT_PORTABLE`` (read once, at import) forces fallbacks on a system that has the fast paths, so that tests
on Linux run the code other systems will: ``all`` (or ``1``) for every one, or a comma-separated list of the
capability names above. Unset, empty or ``0``: the fast path wherever the system has it.

Also the safe ways to touch a file that every layer above shares: :data:`SAFE_READ_FLAGS` to read one, and
:class:`ReplacingWriter` to replace a small one whole (a manifest, synapseclient's cache map, the gate's state).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Callable, FrozenSet, List, Optional, TextIO, Tuple

from synclient.errors import ConfigError

ENV_VAR = "SYNCLIENT_PORTABLE"
#: ``os.open`` flag that keeps Windows from translating line ends in a file's bytes (0 elsewhere: no such mode)
O_BINARY = getattr(os, "O_BINARY", 0)
#: a file read without following a symlink, and without waiting for a writer should a FIFO have taken its name (a
#: resume journal, a file an earlier shard installed, the gate's state file)
SAFE_READ_FLAGS = (
    os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0) | O_BINARY
)


@dataclass(frozen=True)
class Capabilities:
    """Which fast paths this process uses (True) and which it replaces with their fallback (False)."""

    positional_io: bool
    flock: bool
    direct_io: bool
    reflink: bool
    proc_fd: bool
    dir_fd: bool

    @classmethod
    def names(cls) -> FrozenSet[str]:
        return frozenset(field.name for field in fields(cls))


def _has_fcntl() -> bool:
    return importlib.util.find_spec("fcntl") is not None


def _has_dir_fd() -> bool:
    """Open, ``lstat`` (``os.stat`` without following), unlink and rmdir relative to a folder's descriptor, and
    list a folder by its descriptor: all or nothing (Windows has none of them)."""
    return (
        {os.open, os.stat, os.unlink, os.rmdir} <= os.supports_dir_fd
        and os.stat in os.supports_follow_symlinks
        and os.listdir in os.supports_fd
        and hasattr(os, "O_DIRECTORY")
    )


def offered() -> Capabilities:
    """What this system has, whatever the switch says."""
    linux = sys.platform.startswith("linux")
    return Capabilities(
        positional_io=hasattr(os, "pwrite") and hasattr(os, "pread"),  # preadv where it exists, else pread
        flock=_has_fcntl(),
        direct_io=linux and hasattr(os, "O_DIRECT") and os.path.exists("/proc/self/mountinfo"),
        reflink=linux and _has_fcntl(),  # FICLONE is a Linux ioctl number
        proc_fd=linux and hasattr(os, "O_PATH") and os.path.isdir("/proc/self/fd"),
        dir_fd=_has_dir_fd(),
    )


def disabled_by(value: str) -> FrozenSet[str]:
    """The capabilities a ``SYNCLIENT_PORTABLE`` value turns off. An unknown name is an error, not ignored: a
    misspelt switch would otherwise run the fast paths in a test meant for the fallbacks."""
    value = value.strip().lower()
    if value in ("", "0"):
        return frozenset()
    if value in ("1", "all"):
        return Capabilities.names()
    names = frozenset(name.strip() for name in value.split(",") if name.strip())
    unknown = names - Capabilities.names()
    if unknown:
        raise ConfigError(
            f"{ENV_VAR}={value!r}: unknown capability {', '.join(sorted(unknown))} "
            f"(known: all, {', '.join(sorted(Capabilities.names()))})"
        )
    return names


def chosen(disabled: FrozenSet[str]) -> Capabilities:
    """What this system offers less what ``disabled`` turns off."""
    have = offered()
    return Capabilities(**{name: getattr(have, name) and name not in disabled for name in Capabilities.names()})


# -- positional I/O ----------------------------------------------------------------------------------------------

#: one lock per descriptor number for the fallback: lseek and the read or write after it must not interleave with
#: another thread's on the same descriptor (numbers are reused, never many: the dict stays small)
_fd_locks: dict = {}


def _fd_lock(fd: int) -> threading.Lock:
    lock = _fd_locks.get(fd)
    return lock if lock is not None else _fd_locks.setdefault(fd, threading.Lock())


#: the signatures of :data:`pwrite` and :data:`preadv` as synclient calls them (memoryviews, one read buffer)
Pwrite = Callable[[int, memoryview, int], int]
Preadv = Callable[[int, List[memoryview], int], int]


def _pwrite_with_seek(fd: int, data: memoryview, offset: int) -> int:
    with _fd_lock(fd):
        os.lseek(fd, offset, os.SEEK_SET)
        return os.write(fd, data)


def _preadv_with_seek(fd: int, buffers: List[memoryview], offset: int) -> int:
    """``os.preadv(fd, [buffer], offset)`` for one buffer, as the call sites use it: bytes read into it."""
    (buffer,) = buffers
    with _fd_lock(fd):
        os.lseek(fd, offset, os.SEEK_SET)
        data = os.read(fd, len(buffer))
    buffer[: len(data)] = data
    return len(data)


def _preadv_by_pread(fd: int, buffers: List[memoryview], offset: int) -> int:
    """One buffer's ``os.preadv`` by ``os.pread`` and a copy (a macOS build without ``preadv``)."""
    (buffer,) = buffers
    data = os.pread(fd, len(buffer), offset)
    buffer[: len(data)] = data
    return len(data)


def _positional_calls(capabilities: Capabilities) -> Tuple[Pwrite, Preadv]:
    """(pwrite, preadv) for ``capabilities``: the system's own calls on the fast path, nothing wrapped around them."""
    if not capabilities.positional_io:
        return _pwrite_with_seek, _preadv_with_seek
    return os.pwrite, getattr(os, "preadv", _preadv_by_pread)


# -- the choice, made once ---------------------------------------------------------------------------------------

CAPABILITIES = chosen(disabled_by(os.environ.get(ENV_VAR, "")))

#: ``pwrite(fd, data, offset) -> bytes written`` (may be fewer than ``len(data)``, as ``os.pwrite``), and
#: ``preadv(fd, [buffer], offset) -> bytes read`` into the one buffer (as ``os.preadv`` with one buffer)
pwrite, preadv = _positional_calls(CAPABILITIES)


def use(capabilities: Capabilities) -> Capabilities:
    """Switch this process to ``capabilities`` and return the previous ones. For tests, which force fallbacks
    without a new process; a run reads :data:`CAPABILITIES` as chosen at import and never calls this."""
    global CAPABILITIES, pwrite, preadv
    previous = CAPABILITIES
    CAPABILITIES = capabilities
    pwrite, preadv = _positional_calls(capabilities)
    return previous


# -- an exclusive lock on a file ---------------------------------------------------------------------------------


def try_lock_file(path: os.PathLike[str] | str) -> Optional[Callable[[], None]]:
    """Lock ``path`` (created if missing) for this holder alone, without waiting: the function that releases it,
    or None when another holder has it. Held until released or until the process ends, as the kernel drops it."""
    if CAPABILITIES.flock:
        import fcntl

        fd = os.open(path, os.O_RDWR | os.O_CREAT | O_BINARY, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        except BaseException:
            os.close(fd)
            raise
        return lambda: os.close(fd)  # closing drops the flock
    import filelock  # msvcrt.locking on Windows; on a POSIX system forced here, its own flock

    lock = filelock.FileLock(os.fspath(path), thread_local=False)  # released by whichever thread closes the sync
    try:
        lock.acquire(timeout=0)
    except filelock.Timeout:
        return None
    return lock.release


# -- a small file replaced whole ---------------------------------------------------------------------------------

#: a new file that must be new: never opened through a link (or anything else) already at its name
NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _remove_if_there(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


class ReplacingWriter:
    """A small text file written under a temporary name beside its target, then moved over the target by one
    ``os.replace``: a reader sees the old file or the new one, never a part. The temporary file is created fresh
    (``O_EXCL``, ``O_NOFOLLOW``), so nothing already at its name (a killed writer's leftover, a planted link) is
    ever written through, and it is removed whatever fails. Written in one go in a ``with`` block (replaced at its
    end, removed on an exception), or streamed: ``handle`` until :meth:`commit` or :meth:`discard`.

    ``clear_leftover``: remove whatever is at the temporary name first (else the open fails and it is removed, so
    only the next write succeeds). ``mode``: the new file's permissions before the umask. ``errors``, ``newline``:
    as ``open``'s."""

    def __init__(
        self,
        target: Path,
        temp: Path,
        *,
        mode: int,
        clear_leftover: bool = True,
        errors: str = "strict",
        newline: Optional[str] = None,
    ) -> None:
        self.target = target
        self.temp = temp
        if clear_leftover:
            _remove_if_there(temp)
        try:
            descriptor = os.open(temp, NEW_FILE_FLAGS | O_BINARY, mode)
        except BaseException:
            if os.path.lexists(temp):  # what was there (or came there): removed, never written through
                _remove_if_there(temp)
            raise
        try:
            self.handle: TextIO = open(descriptor, "w", encoding="utf-8", errors=errors, newline=newline)
        except BaseException:
            os.close(descriptor)
            _remove_if_there(temp)
            raise

    def commit(self, *, keep_target_if: Optional[Callable[[Path, Path], bool]] = None) -> None:
        """Close the new file and move it over the target; ``keep_target_if(temp, target)`` true: the target stays
        as it is (its mtime too) and the new file is removed. On any error nothing new is left behind."""
        try:
            self.handle.close()
            if keep_target_if is not None and keep_target_if(self.temp, self.target):
                os.unlink(self.temp)
            else:
                os.replace(self.temp, self.target)
        except BaseException:
            self.discard()
            raise

    def discard(self) -> None:
        """Close and remove the new file; the target stays as it is. Never raises an error of its own: closing a
        file being thrown away flushes what its buffer still holds, which fails again on a full disk (the file is
        closed all the same), and that must neither leave the file behind nor hide the error that discarded it."""
        try:
            self.handle.close()
        except OSError:
            pass
        finally:
            try:
                os.unlink(self.temp)
            except OSError:
                pass

    def __enter__(self) -> TextIO:
        return self.handle

    def __exit__(self, kind: object, error: object, traceback: object) -> None:
        if error is None:
            self.commit()
        else:
            self.discard()
