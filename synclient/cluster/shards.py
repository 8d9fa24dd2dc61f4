"""Shards: the files a sync decided to fetch, grouped into the units of work a Dask worker runs.

The driver decides every file (walk, index, bundle, claims: the ordinary engine); what it would fetch is a
:class:`~synclient.transfer.jobs.FetchJob` (the one job type of the fetch stage, whatever the fetcher), and a
:class:`Sharder` groups them in the order the walk found them, so one folder's files stay
together (a listing page is one folder's). A shard is sealed as soon as it holds :attr:`ShardSizes.files` files or
:attr:`ShardSizes.bytes` bytes, so workers start while the walk goes on; what is left when the driver has nothing
else to do is split into one shard per worker, balanced by bytes (each file also weighs
:data:`FILE_WEIGHT`, the cost of its URL and its request), in contiguous runs so folders stay together.

Everything here is plain data: a shard is pickled into its Dask task.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

from synclient.errors import ConfigError
from synclient.transfer.jobs import FetchJob

MiB = 1 << 20
#: what a file weighs in the balance beyond its bytes: its URL and its request's round trips
FILE_WEIGHT = MiB


def weight(file: FetchJob) -> int:
    """What ``file`` weighs in a shard's balance: its bytes and :data:`FILE_WEIGHT`."""
    return file.size + FILE_WEIGHT


@dataclass(frozen=True)
class Shard:
    """A worker's unit of work: files fetched by one run of synclient's engine on one pool."""

    number: int
    files: Tuple[FetchJob, ...]

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
    _pending: List[FetchJob] = field(default_factory=list)
    _pending_bytes: int = 0
    _numbered: int = 0

    @property
    def pending(self) -> int:
        return len(self._pending)

    def add(self, file: FetchJob) -> Optional[Shard]:
        """Take a file; a shard once this one fills it."""
        self._pending.append(file)
        self._pending_bytes += file.size
        if len(self._pending) >= self.sizes.files or self._pending_bytes >= self.sizes.bytes:
            return self._seal(self._pending)[0]
        return None

    def drain(self, *, parts: int) -> List[Shard]:
        """Every file still waiting, as up to ``parts`` shards of about equal weight."""
        return self._seal(*split_balanced(self._pending, parts=parts))

    def _seal(self, *groups: Sequence[FetchJob]) -> List[Shard]:
        shards: List[Shard] = []
        for group in groups:
            shards.append(Shard(self._numbered, tuple(group)))
            self._numbered += 1
        self._pending, self._pending_bytes = [], 0
        return shards


def split_balanced(files: Sequence[FetchJob], *, parts: int) -> List[List[FetchJob]]:
    """``files`` cut into at most ``parts`` contiguous runs, each cut where the running weight passes the next
    multiple of an equal share (so a run is never more than one file heavier than its share)."""
    if not files:
        return []
    parts = max(1, min(parts, len(files)))
    total = sum(weight(file) for file in files)
    runs: List[List[FetchJob]] = [[]]
    running = 0
    for file in files:
        if runs[-1] and len(runs) < parts and running + weight(file) / 2 > total * len(runs) / parts:
            runs.append([])
        runs[-1].append(file)
        running += weight(file)
    return runs
