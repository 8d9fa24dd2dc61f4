"""What the gate learned, shared by the runs of one platform user on one machine: a small state file.

Synapse's limits are per user, and a command that starts right after another of the same user shares the
platform's window with the calls the first one made. Each gate that :func:`~synclient.platform.gate.shared_gate`
makes reads the user's state file when it is made and merges into it what it added (periodically, and when its
:class:`~synclient.platform.rest.Platform` closes), so the next command starts its window knowing those calls: it
neither waits blindly nor takes its predecessor's calls for another client's.

The file holds only the wall-clock times of the calls started within the window (at most
:data:`MAX_SHARED_STARTS`, the newest) and what 429s taught: the window's length, the budget, the stated sizes,
a ``Retry-After`` hold. Its name is a digest of the endpoint and the token together; the token itself is never
written. It lives in the user's cache folder (:func:`cache_dir`), is replaced atomically (a temporary file, then
``os.replace``) under a lock file beside it (the ``filelock`` library: ``fcntl.flock`` on POSIX, ``msvcrt`` on
Windows), so two commands at once add their calls in turn. A missing, corrupt, oversized or unreadable file (or a
symbolic link) reads as empty, and a file that cannot be written is skipped (both with a debug log); a folder that is
not the user's alone is not used: sharing helps a run, it never fails one.

``SYNCLIENT_CACHE_DIR`` moves the folder (tests point it at their own); ``SYNCLIENT_GATE_STATE=0`` turns sharing
off.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import stat
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Optional, Tuple

import filelock

from synclient import portable

log = logging.getLogger(__name__)

CACHE_DIR_ENV = "SYNCLIENT_CACHE_DIR"
SWITCH_ENV = "SYNCLIENT_GATE_STATE"
#: the file format; another version reads as empty
FORMAT_VERSION = 1
#: the newest starts the file keeps (Synapse's window is 600 calls; a file rewritten every few seconds stays small)
MAX_SHARED_STARTS = 5_000
#: how long a command waits for the lock before it goes on without the file (a holder only reads and writes it)
LOCK_TIMEOUT_SECONDS = 5.0
#: a state file no command wrote for this long is removed (an emulator on a passing port leaves one per run)
STALE_AFTER_SECONDS = 7 * 24 * 3600.0
#: the most bytes a state file is read for (the newest starts and the rest take under 100 KiB); a bigger file is
#: ignored, as a corrupt one is
MAX_FILE_BYTES = 256 * 1024
#: a hold read from the file ends at most this long from now (the gate's longest ``Retry-After``): a file written
#: under a clock that was ahead must not stall the next command
MAX_HOLD_SECONDS = 300.0
#: starts are kept to the microsecond: the same start read back compares equal
_DIGITS = 6


def cache_dir() -> Path:
    """synclient's folder in the user's cache: ``SYNCLIENT_CACHE_DIR``, else ``%LOCALAPPDATA%\\synclient\\Cache``
    on Windows, ``~/Library/Caches/synclient`` on macOS, ``$XDG_CACHE_HOME/synclient`` or ``~/.cache/synclient``
    elsewhere."""
    chosen = os.environ.get(CACHE_DIR_ENV)
    if chosen:
        return Path(chosen).expanduser()
    if sys.platform == "win32":
        local = os.environ.get("LOCALAPPDATA")
        return (Path(local) if local else Path.home() / "AppData" / "Local") / "synclient" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "synclient"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache") / "synclient"


def sharing_enabled() -> bool:
    """False when ``SYNCLIENT_GATE_STATE`` is ``0``, ``off``, ``false`` or ``no``."""
    return os.environ.get(SWITCH_ENV, "").strip().lower() not in ("0", "off", "false", "no")


def user_key(endpoint: str, token: Optional[str]) -> str:
    """The file's name stem for one platform user: one digest of the endpoint and the token together (the token
    cannot be read back from it)."""
    material = f"synclient gate state\0{endpoint.rstrip('/')}\0{token or ''}"
    return hashlib.sha256(material.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True)
class GateRecord:
    """What the runs of one user share. Times are wall-clock seconds (``time.time()``); None: not learned."""

    starts: Tuple[float, ...] = ()  # the calls started within the window, oldest first
    window_seconds: Optional[float] = None
    budget: Optional[int] = None
    budget_ceiling: Optional[int] = None
    stated_concurrency: Optional[int] = None
    cool_until: Optional[float] = None  # a Retry-After holds every start back until then

    def to_json(self) -> Dict[str, Any]:
        return {
            "version": FORMAT_VERSION,
            "starts": list(self.starts),
            "window_seconds": self.window_seconds,
            "budget": self.budget,
            "budget_ceiling": self.budget_ceiling,
            "stated_concurrency": self.stated_concurrency,
            "cool_until": self.cool_until,
        }

    @classmethod
    def from_json(cls, data: object) -> GateRecord:
        """The record a file held; ValueError when it is not one this version wrote."""
        if not isinstance(data, dict) or data.get("version") != FORMAT_VERSION:
            raise ValueError("not a gate state of this version")
        starts = data.get("starts")
        if not isinstance(starts, list) or not all(_is_time(value) for value in starts):
            raise ValueError("starts is not a list of times")
        return cls(
            starts=tuple(sorted(round(float(value), _DIGITS) for value in starts)),
            window_seconds=_positive(data.get("window_seconds"), float),
            budget=_positive(data.get("budget"), int),
            budget_ceiling=_positive(data.get("budget_ceiling"), int),
            stated_concurrency=_positive(data.get("stated_concurrency"), int),
            cool_until=_positive(data.get("cool_until"), float),
        )

    def merged(self, newer: GateRecord) -> GateRecord:
        """Both records' starts; what ``newer`` learned where it learned something, else what this one holds."""
        return GateRecord(
            starts=tuple(sorted(set(self.starts) | {round(start, _DIGITS) for start in newer.starts})),
            window_seconds=newer.window_seconds if newer.window_seconds is not None else self.window_seconds,
            budget=newer.budget if newer.budget is not None else self.budget,
            budget_ceiling=newer.budget_ceiling if newer.budget_ceiling is not None else self.budget_ceiling,
            stated_concurrency=(
                newer.stated_concurrency if newer.stated_concurrency is not None else self.stated_concurrency
            ),
            cool_until=max(
                (held for held in (self.cool_until, newer.cool_until) if held is not None),
                default=None,
            ),
        )

    def within(self, now: float, *, default_window: float, margin_share: float) -> GateRecord:
        """Only the starts of the window that ends ``now`` (its learned length or ``default_window``, plus the
        margin), at most :data:`MAX_SHARED_STARTS`; a hold that has passed is dropped, one from further than
        :data:`MAX_HOLD_SECONDS` ahead is cut to that. A budget lowered below a
        stated size (runs shared the window) is back at the size once a window passed without calls: the next
        command starts at full speed, not where a crowd left it."""
        horizon = now - (self.window_seconds or default_window) * (1.0 + margin_share)
        kept = tuple(start for start in self.starts if horizon <= start <= now + 1.0)  # no start from the future
        cool_until = self.cool_until if self.cool_until is not None and self.cool_until > now else None
        if cool_until is not None:
            cool_until = min(cool_until, now + MAX_HOLD_SECONDS)
        budget = self.budget if kept or self.budget_ceiling is None else self.budget_ceiling
        return replace(self, starts=kept[-MAX_SHARED_STARTS:], cool_until=cool_until, budget=budget)


def _is_time(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _positive(value: object, kind: Callable[[float], Any]) -> Any:
    if value is None:
        return None
    if not isinstance(value, (int, float)) or not _is_time(value) or value <= 0 or kind(value) != value:
        raise ValueError(f"not a positive {kind.__name__}: {value!r}")
    return kind(value)


class GateStateFile:
    """One user's state file: ``load()`` when a gate is made, ``merge(record)`` to add what it learned since."""

    def __init__(
        self,
        path: Path,
        *,
        default_window: float,
        margin_share: float,
        wall_clock: Callable[[], float] = time.time,
        lock_timeout: float = LOCK_TIMEOUT_SECONDS,
    ) -> None:
        self.path = Path(path)
        self._lock_path = self.path.with_name(self.path.name + ".lock")
        self._default_window = default_window
        self._margin_share = margin_share
        self._wall_clock = wall_clock
        self._lock_timeout = lock_timeout

    @classmethod
    def for_user(cls, endpoint: str, token: Optional[str], **settings: Any) -> Optional[GateStateFile]:
        """The state file of this user of ``endpoint`` in :func:`cache_dir`; None when sharing is off."""
        if not sharing_enabled():
            return None
        return cls(cache_dir() / "gate" / f"{user_key(endpoint, token)}.json", **settings)

    def load(self) -> GateRecord:
        """What the file holds within the window; an empty record when it is missing, corrupt or locked too long.
        Removes the folder's state files that no command wrote for :data:`STALE_AFTER_SECONDS` on the way."""
        try:
            with self._locked():
                self._remove_stale()
                return self._read().within(
                    self._wall_clock(), default_window=self._default_window, margin_share=self._margin_share
                )
        except (OSError, filelock.Timeout) as exc:
            log.debug("gate state %s not read (%s): starting without it", self.path, exc)
            return GateRecord()

    def merge(self, newer: GateRecord) -> Optional[GateRecord]:
        """Add ``newer`` to the file under its lock (read, merge, keep the window, replace atomically): what the file
        holds now, or None when it could not be written."""
        try:
            with self._locked():
                merged = (
                    self._read()
                    .merged(newer)
                    .within(self._wall_clock(), default_window=self._default_window, margin_share=self._margin_share)
                )
                self._write(merged)
                return merged
        except (OSError, filelock.Timeout) as exc:
            log.debug("gate state %s not written (%s)", self.path, exc)
            return None

    def _remove_stale(self) -> None:
        """Old state files and left-over temporary files (a command killed while it wrote). Lock files stay: one
        removed while a command holds it would let the next command lock a new file beside the held one."""
        horizon = self._wall_clock() - STALE_AFTER_SECONDS
        try:
            with os.scandir(self.path.parent) as entries:
                for entry in entries:
                    if entry.name.endswith((".json", ".tmp")) and entry.stat().st_mtime < horizon:
                        os.unlink(entry.path)
        except OSError as exc:  # a folder not made yet, a file another command removed first: nothing to do
            log.debug("gate state folder %s not swept (%s)", self.path.parent, exc)

    def _locked(self) -> filelock.BaseFileLock:
        self._private_folder()
        # a new lock object each time: filelock's is re-entrant per object, and two gates must exclude each other
        return filelock.FileLock(os.fspath(self._lock_path), timeout=self._lock_timeout, thread_local=False)

    def _private_folder(self) -> None:
        """Make the file's folder (this user's alone); OSError when it is not: a folder another user can write to
        (a shared ``SYNCLIENT_CACHE_DIR``), a symbolic link, another user's. There, anyone could put a link where the
        lock, temporary or state file goes, and a command would write through it."""
        folder = self.path.parent
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not hasattr(os, "getuid"):  # Windows: the user's own profile folder, its ACLs
            return
        info = os.lstat(folder)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
            raise OSError(f"{folder} is not a folder of this user's alone (a link, or others may write to it)")

    def _read(self) -> GateRecord:
        """The file's record: not through a symbolic link, a regular file only, at most :data:`MAX_FILE_BYTES`."""
        try:
            handle = os.fdopen(os.open(self.path, portable.SAFE_READ_FLAGS), "rb")
        except FileNotFoundError:
            return GateRecord()
        except OSError as exc:  # a symbolic link (ELOOP), no permission
            log.debug("gate state %s ignored: %s", self.path, exc)
            return GateRecord()
        try:
            with handle:
                if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                    raise ValueError("not a regular file")
                data = handle.read(MAX_FILE_BYTES + 1)
            if len(data) > MAX_FILE_BYTES:
                raise ValueError(f"larger than {MAX_FILE_BYTES} bytes")
            return GateRecord.from_json(json.loads(data.decode("utf-8")))
        except (OSError, ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError are ValueErrors
            log.debug("gate state %s ignored: %s", self.path, exc)
            return GateRecord()

    def _write(self, record: GateRecord) -> None:
        temp = self.path.with_name(f"{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        # (a temporary file a killed command left under this name: the open fails, it is removed, the next write
        # succeeds)
        with portable.ReplacingWriter(self.path, temp, mode=0o600, clear_leftover=False) as handle:
            json.dump(record.to_json(), handle, separators=(",", ":"))


def starts_of(times: Iterable[float]) -> Tuple[float, ...]:
    """Wall-clock start times as the file keeps them (to the microsecond, sorted)."""
    return tuple(sorted(round(start, _DIGITS) for start in times))
