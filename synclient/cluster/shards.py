"""Shards: the files a sync decided to fetch, grouped into the units of work a Dask worker runs.

The driver decides every file (walk, index, bundle, claims: the ordinary engine); what it would fetch becomes a
:class:`ShardFile`, and a :class:`Sharder` groups them in the order the walk found them, so one folder's files stay
together (a listing page is one folder's). A shard is sealed as soon as it holds :attr:`ShardSizes.files` files or
:attr:`ShardSizes.bytes` bytes, so workers start while the walk goes on; what is left when the driver has nothing
else to do is split into one shard per worker, balanced by bytes (each file also weighs
:data:`FILE_WEIGHT`, the cost of its URL and its request), in contiguous runs so folders stay together.

Everything here is plain data: a shard is pickled into its Dask task.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

from synclient.errors import ConfigError, UnsafePathError
from synclient.platform.models import FileHandle

MiB = 1 << 20
#: what a file weighs in the balance beyond its bytes: its URL and its request's round trips
FILE_WEIGHT = MiB


@dataclass(frozen=True)
class LocalState:
    """What lay at a destination when the driver decided the file: a later run of the same shard tells from it
    whether a file now there was installed by an earlier try of the shard (it differs) or is what was decided on."""

    size: int
    mtime_ns: int
    inode: int

    @classmethod
    def of(cls, path: "os.PathLike[str]") -> Optional["LocalState"]:
        """None when nothing is there, or it cannot be seen (a folder on the way is now a file, or unreadable:
        the fetch then fails where a local one fails, per file)."""
        try:
            info = os.lstat(path)
        except OSError:
            return None
        return cls(info.st_size, info.st_mtime_ns, info.st_ino)


@dataclass(frozen=True)
class ShardFile:
    """One file version to fetch to ``destination`` (absolute, inside the target: the driver's name gate made the
    path, :mod:`synclient.sync.local.name_gate`; a worker makes no path of a remote name)."""

    entity_id: str
    version: Optional[int]
    handle: FileHandle
    destination: str
    before: Optional[LocalState] = None

    def __post_init__(self) -> None:
        parts = self.destination.replace(os.sep, "/").split("/")
        if not os.path.isabs(self.destination) or ".." in parts or "\x00" in self.destination:
            raise UnsafePathError(f"{self.entity_id}: a shard's destination {self.destination!r} is not a path "
                                  "the driver's name gate gives")

    @property
    def size(self) -> int:
        return self.handle.content_size or 0

    @property
    def weight(self) -> int:
        return self.size + FILE_WEIGHT


@dataclass(frozen=True)
class Shard:
    """A worker's unit of work: files fetched by one run of synclient's engine on one pool."""

    number: int
    files: Tuple[ShardFile, ...]

    @property
    def bytes(self) -> int:
        return sum(file.size for file in self.files)


@dataclass(frozen=True)
class ShardSizes:
    """When a shard is sealed while the walk goes on: at this many files, or this many bytes."""

    files: int = 500  # five URL batches
    bytes: int = 1 << 30

    def __post_init__(self) -> None:
        if self.files < 1 or self.bytes < 1:
            raise ConfigError(f"shard sizes must be positive, got {self.files} files and {self.bytes} bytes")


@dataclass
class Sharder:
    """Groups files into shards in the order they come. Not thread-safe: the caller holds its lock."""

    sizes: ShardSizes = field(default_factory=ShardSizes)
    _pending: List[ShardFile] = field(default_factory=list)
    _pending_bytes: int = 0
    _numbered: int = 0

    @property
    def pending(self) -> int:
        return len(self._pending)

    def add(self, file: ShardFile) -> Optional[Shard]:
        """Take a file; a shard once this one fills it."""
        self._pending.append(file)
        self._pending_bytes += file.size
        if len(self._pending) >= self.sizes.files or self._pending_bytes >= self.sizes.bytes:
            return self._seal(self._pending)[0]
        return None

    def drain(self, *, parts: int) -> List[Shard]:
        """Every file still waiting, as up to ``parts`` shards of about equal weight."""
        return self._seal(*split_balanced(self._pending, parts=parts))

    def _seal(self, *groups: Sequence[ShardFile]) -> List[Shard]:
        shards = []
        for group in groups:
            shards.append(Shard(self._numbered, tuple(group)))
            self._numbered += 1
        self._pending, self._pending_bytes = [], 0
        return shards


def split_balanced(files: Sequence[ShardFile], *, parts: int) -> List[List[ShardFile]]:
    """``files`` cut into at most ``parts`` contiguous runs, each cut where the running weight passes the next
    multiple of an equal share (so a run is never more than one file heavier than its share)."""
    if not files:
        return []
    parts = max(1, min(parts, len(files)))
    total = sum(file.weight for file in files)
    runs: List[List[ShardFile]] = [[]]
    running = 0
    for file in files:
        if runs[-1] and len(runs) < parts and running + file.weight / 2 > total * len(runs) / parts:
            runs.append([])
        runs[-1].append(file)
        running += file.weight
    return runs
