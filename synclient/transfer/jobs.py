"""What travels through the fetch stage: one file version to fetch (:class:`FetchJob`) and what became of it
(:class:`FileFetched`).

The same two types go from the pipeline to a fetcher on this process's pool and, pickled, to a Dask worker and
back (:mod:`synclient.transfer.fetcher`, :mod:`synclient.cluster`): plain data, no callback, no open resource.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from synclient.errors import SynclientError, UnsafePathError
from synclient.events import PlannedFile
from synclient.platform.models import FileHandle


@dataclass(frozen=True)
class LocalState:
    """What lay at a destination when a file was handed to a fetcher that may start it much later (a Dask shard
    waits for a worker): a later run of that shard tells from it whether a file now there was installed by an
    earlier try of the shard (it differs) or is what was decided on."""

    size: int
    mtime_ns: int
    inode: int

    @classmethod
    def of(cls, path: os.PathLike[str]) -> Optional[LocalState]:
        """None when nothing is there, or it cannot be seen (a folder on the way is now a file, or unreadable:
        the fetch then fails where a local one fails, per file)."""
        try:
            info = os.lstat(path)
        except OSError:
            return None
        return cls(info.st_size, info.st_mtime_ns, info.st_ino)


@dataclass(frozen=True)
class FetchJob:
    """One file version to bring to ``destination``, verified (absolute, inside the target: the run's name gate
    made the path, :mod:`synclient.sync.local.name_gate`; nothing downstream makes a path of a remote name).

    ``planned`` is the one :class:`~synclient.events.PlannedFile` observers are told of for this fetch (its
    identity keys a per-file view); ``before``: what stood at the destination when the job went to a fetcher that
    starts it later (a Dask shard), None otherwise or when nothing stood there."""

    entity_id: str
    version: Optional[int]
    handle: FileHandle
    destination: Path
    before: Optional[LocalState] = None
    #: where its download waits among those ready to start (``--order-by``; None: in the order they come)
    order: Optional[tuple] = field(default=None, compare=False)
    planned: PlannedFile = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        text = str(self.destination)
        parts = text.replace(os.sep, "/").split("/")
        if not os.path.isabs(text) or ".." in parts or "\x00" in text:
            raise UnsafePathError(f"{self.entity_id}: the destination {text!r} is not a path the run's name gate gives")
        object.__setattr__(self, "planned", PlannedFile(self.entity_id, self.version, self.destination, self.size))

    def replaced(self, *, handle: Optional[FileHandle] = None, before: Optional[LocalState] = None) -> FetchJob:
        """This job with another ``handle`` (of the same bytes) or ``before``: observers still see the one fetch
        (the same ``planned``)."""
        job = FetchJob(
            self.entity_id,
            self.version,
            handle or self.handle,
            self.destination,
            before if before is not None else self.before,
            self.order,
        )
        object.__setattr__(job, "planned", self.planned)
        return job

    @property
    def size(self) -> int:
        """The handle's size (0 when it records none)."""
        return self.handle.content_size or 0

    @property
    def size_known(self) -> bool:
        return self.handle.content_size is not None


@dataclass(frozen=True)
class FileFetched:
    """What became of one :class:`FetchJob`: ``error`` None when the file is at its destination, verified."""

    entity_id: str
    destination: Path
    error: Optional[SynclientError] = None
    received: Optional[int] = None  # the handle's size, or the bytes got for a file whose handle records none
    earlier_try: bool = False  # installed by an earlier try of its Dask shard (found verified, not fetched again)
    from_cache: bool = False  # copied from synapseclient's download cache, not fetched from storage
    reused: int = 0  # of its bytes: kept from the partial download an earlier run left (not fetched again)

    @classmethod
    def of(
        cls,
        job: FetchJob,
        error: Optional[SynclientError] = None,
        *,
        received: Optional[int] = None,
        earlier_try: bool = False,
        from_cache: bool = False,
        reused: int = 0,
    ) -> FileFetched:
        """``job``'s outcome; ``received`` defaults to the handle's size when it records one (and it arrived)."""
        if received is None and error is None and job.size_known:
            received = job.size
        return cls(job.entity_id, job.destination, error, received, earlier_try, from_cache, reused)
