"""synapseclient's download cache, read and written the way synapseclient 4.14 does (``synapseclient/core/cache.py``).

synapseclient records every file it downloads in ``<root>/<handle % 1000>/<handle>/.cacheMap``: a JSON object
``{path: {"modified_time": "2024-05-01T12:00:00.000Z", "content_md5": "..."}}``, changed only under a lock
that is a directory (``.cacheMap.lock``, made with ``mkdir``; older than 10 s it is broken). synclient shares it:
a file this machine already holds (synapseclient got it, or another sync) is copied instead of downloaded
(:meth:`SynapseCache.lookup`), and every file synclient installs is recorded (:meth:`SynapseCache.record`), so
synapseclient finds it too. The root is ``~/.synapseCache`` unless the config file (:func:`config_path`) says
``[cache] location``.

Two departures from synapseclient, both invisible to it: a map is replaced atomically (a temp file beside it and
``os.replace``) instead of rewritten in place, so no reader ever sees half of it; and :meth:`SynapseCache.lookup`
reads without the lock, because a map caught while synapseclient rewrites it in place is not valid JSON and reads
as empty, which costs only a download.
"""

from __future__ import annotations

import datetime
import errno
import json
import logging
import math
import os
import re
import shutil
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Optional, Union

from synclient.errors import CacheLockTimeoutError
from synclient.platform.credentials import config_path, read_config_file
from synclient.portable import ReplacingWriter

log = logging.getLogger("synclient.synapse_cache")

DEFAULT_ROOT = "~/.synapseCache"
FANOUT = 1000
CACHE_MAP = ".cacheMap"
#: synapseclient's lock: a lock this old is abandoned and broken; a blocking acquire retries this often, this long
LOCK_MAX_AGE_SECONDS = 10.0
LOCK_RETRY_SECONDS = 0.5
LOCK_TIMEOUT_SECONDS = 70.0

PathLike = Union[str, "os.PathLike[str]"]


def cache_root() -> Path:
    """Where synapseclient keeps its cache on this machine: ``[cache] location`` of the config file (with ``~``
    and environment variables expanded, as synapseclient does), else ``~/.synapseCache``."""
    parser = read_config_file(config_path())
    location = parser.get("cache", "location") if parser.has_option("cache", "location") else DEFAULT_ROOT
    return Path(os.path.expandvars(os.path.expanduser(location)))


def cache_root_of(syn: object) -> Optional[Path]:
    """The cache root a ``synapseclient.Synapse`` uses (``syn.cache.cache_root_dir``), or None (duck-typed)."""
    root = getattr(getattr(syn, "cache", None), "cache_root_dir", None)
    return Path(root).expanduser() if root else None


def normalize_path(path: PathLike) -> str:
    """A cache map's key for ``path``: absolute, forward slashes (synapseclient's ``utils.normalize_path``)."""
    return re.sub(r"\\", "/", os.path.abspath(path))


def epoch_to_iso(seconds: float) -> str:
    """``seconds`` since the epoch as synapseclient writes times: UTC, milliseconds rounded, ``Z``
    (``utils.datetime_to_iso(utils.from_unix_epoch_time_secs(seconds))``)."""
    moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.timezone.utc)
    if moment.microsecond >= 999500:  # rounds up to the next second, as synapseclient's does
        moment = moment.replace(microsecond=0) + datetime.timedelta(seconds=1)
    return (
        f"{moment.year:04}-{moment.month:02}-{moment.day:02}T{moment.hour:02}:{moment.minute:02}:"
        f"{moment.second:02}.{int(round(moment.microsecond / 1000.0)):03}Z"
    )


def same_modified_time(mtime: float, recorded: Optional[str]) -> bool:
    """synapseclient's ``compare_timestamps``: a recorded time ending in ``.000Z`` (what every writer of the map
    writes now) matches the whole second of ``mtime``; another one must match to the millisecond."""
    if recorded is None:
        return False
    if recorded.endswith(".000Z"):
        return recorded == epoch_to_iso(math.floor(mtime))
    return recorded == epoch_to_iso(mtime)


def read_cache_map(cache_dir: PathLike) -> Dict[str, object]:
    """The map of one file handle's cache folder; absent, unreadable or not a JSON object reads as empty, as in
    synapseclient (a corrupt map is overwritten by the next record)."""
    try:
        with open(os.path.join(cache_dir, CACHE_MAP), encoding="utf-8") as handle:
            loaded = json.load(handle)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:  # ValueError: not JSON (a half-written map), or not UTF-8
        log.debug("cache map in %s unreadable (%s); read as empty", cache_dir, exc)
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _entry_time(entry: object) -> Optional[str]:
    """The recorded modified time of an entry; very old synapseclients recorded the time alone, as a string."""
    if isinstance(entry, dict):
        value = entry.get("modified_time")
        return value if isinstance(value, str) else None
    return entry if isinstance(entry, str) else None


def _entry_md5(entry: object) -> Optional[str]:
    value = entry.get("content_md5") if isinstance(entry, dict) else None
    return value if isinstance(value, str) else None


def _matching_key(cache_map: Dict[str, object], key: str) -> Optional[str]:
    """The key of ``cache_map`` naming the same file as ``key``: itself, or one differing only in case where the
    filesystem ignores case (``os.path.normcase``: Windows keys of older clients; the identity elsewhere)."""
    if key in cache_map:
        return key
    folded = os.path.normcase(key)
    return next((other for other in cache_map if os.path.normcase(other) == folded), None)


@dataclass
class CacheLock:
    """synapseclient's cache lock: the directory ``<name>.lock`` made with ``mkdir`` in the cache folder (which
    ``makedirs`` creates too), its mtime set to the moment it was taken, removed on release. A lock older than
    :data:`LOCK_MAX_AGE_SECONDS` belongs to a process that died holding it and is taken over. ``clock`` and
    ``sleep`` are the wall clock and the wait between tries (injectable: tests run a fake clock)."""

    folder: Path
    name: str = CACHE_MAP
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
    max_age: float = LOCK_MAX_AGE_SECONDS
    held: bool = field(default=False, init=False)

    @property
    def path(self) -> Path:
        return self.folder / f"{self.name}.lock"

    def age(self) -> float:
        try:
            return self.clock() - os.path.getmtime(self.path)
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.EACCES):
                raise
            return 0.0  # released meanwhile: not old, the next try takes it

    def acquire(self) -> bool:
        """One try: True when the lock is now ours (free, or abandoned and broken)."""
        if self.held:
            return True
        try:
            self._make()
        except OSError as exc:
            if exc.errno not in (errno.EEXIST, errno.EACCES):
                raise
            age = self.age()
            if age <= self.max_age:
                return False
            log.warning("breaking the synapseclient cache lock %s, %.0f s old", self.path, age)
        self.held = True
        os.utime(self.path, (0, self.clock()))  # its age is measured from now, whatever the disk's clock says
        return True

    def _make(self) -> None:
        """``os.makedirs(path)``, as synapseclient takes it, in one ``mkdir`` when the cache folder exists (every
        system call here is paid once per file a sync records)."""
        try:
            os.mkdir(self.path)
        except FileNotFoundError:  # the handle's first record: its cache folder is made, then the lock
            os.makedirs(self.path)

    def blocking_acquire(self, timeout: float = LOCK_TIMEOUT_SECONDS) -> None:
        """Try every :data:`LOCK_RETRY_SECONDS` until ``timeout``; then :class:`CacheLockTimeoutError`."""
        started = self.clock()
        while self.clock() - started < timeout:
            if self.acquire():
                return
            self.sleep(LOCK_RETRY_SECONDS)
        raise CacheLockTimeoutError(f"the synapseclient cache lock {self.path} was not released within {timeout:.0f} s")

    def release(self) -> None:
        if not self.held:
            return
        try:
            os.rmdir(self.path)  # what synapseclient's rmtree does to an empty lock, in one system call
        except FileNotFoundError:
            pass
        except OSError as exc:
            if exc.errno != errno.ENOTEMPTY:
                raise
            shutil.rmtree(self.path, ignore_errors=True)
        self.held = False

    def __enter__(self) -> CacheLock:
        self.blocking_acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()


class SynapseCache:
    """One cache root, shared with synapseclient. Thread-safe: every call works on files only."""

    def __init__(
        self, root: PathLike, *, clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self.root = Path(root)
        self._clock = clock
        self._sleep = sleep

    @classmethod
    def if_present(cls, root: Optional[PathLike] = None) -> Optional[SynapseCache]:
        """The cache at ``root`` (default: the machine's, :func:`cache_root`) when that folder exists, else None: a
        sync uses a cache that synapseclient made, and never makes one itself."""
        root = Path(root) if root is not None else cache_root()
        return cls(root) if root.is_dir() else None

    def cache_dir(self, file_handle_id: Union[str, int]) -> Path:
        return self.root / str(int(file_handle_id) % FANOUT) / str(file_handle_id)

    def lock(self, file_handle_id: Union[str, int]) -> CacheLock:
        return CacheLock(self.cache_dir(file_handle_id), clock=self._clock, sleep=self._sleep)

    def record(self, file_handle_id: Union[str, int], path: PathLike, md5: str) -> None:
        """Add ``path`` (whose bytes have MD5 ``md5``) to the handle's map, as synapseclient's ``Cache.add`` does:
        the same key, the file's mtime to the whole second, the same JSON. Under the lock: one read of the map,
        one atomic replace of it."""
        cache_dir = self.cache_dir(file_handle_id)
        key = normalize_path(path)
        with self.lock(file_handle_id):
            cache_map = read_cache_map(cache_dir)
            earlier = _matching_key(cache_map, key)
            if earlier is not None and earlier != key:  # the same file under another case: the key moves
                del cache_map[earlier]
            cache_map[key] = {"modified_time": epoch_to_iso(math.floor(os.path.getmtime(key))), "content_md5": md5}
            _replace_map(cache_dir, cache_map)

    def lookup(
        self, file_handle_id: Union[str, int], *, md5: Optional[str], size: int, not_at: Optional[PathLike] = None
    ) -> Optional[Path]:
        """A recorded copy of the handle's bytes that can stand in for a download, or None: a regular file with the
        recorded modified time (unchanged since it was recorded), ``size`` bytes, and a recorded MD5 equal to the
        platform's ``md5`` (an entry without one may still be used: the copy hashes every byte and must match).
        The most recently recorded candidate first, as synapseclient picks; never ``not_at`` (the destination
        itself). Without the platform's MD5 nothing could prove a copy right: None."""
        if not md5:
            return None
        cache_dir = self.cache_dir(file_handle_id)
        if not cache_dir.is_dir():  # the common miss: one stat, no lock, no read
            return None
        wanted = md5.lower()
        avoid = normalize_path(not_at) if not_at is not None else None
        entries = sorted(read_cache_map(cache_dir).items(), key=lambda item: _entry_time(item[1]) or "", reverse=True)
        for key, entry in entries:
            recorded_md5 = _entry_md5(entry)
            if key == avoid or (recorded_md5 is not None and recorded_md5.lower() != wanted):
                continue
            try:
                info = os.lstat(key)
            except OSError:
                continue
            if (
                stat.S_ISREG(info.st_mode)
                and info.st_size == size
                and same_modified_time(info.st_mtime, _entry_time(entry))
            ):
                return Path(key)
        return None


def _replace_map(cache_dir: Path, cache_map: Dict[str, object]) -> None:
    """Write the map as synapseclient's ``_write_cache_map`` does (``json.dump`` then a newline, for R's parser),
    into a temp file beside it that then replaces it: a reader sees the old map or the new one, never a part."""
    temp = cache_dir / f"{CACHE_MAP}.{os.getpid()}.{threading.get_ident()}.tmp"  # one per thread: no clash
    # a killed process's leftover of the same name: removed, never written through (it may be a hard link); the
    # umask decides the permissions, as for synapseclient's open(..., "w")
    with ReplacingWriter(cache_dir / CACHE_MAP, temp, mode=0o666) as handle:
        json.dump(cache_map, handle)
        handle.write("\n")
