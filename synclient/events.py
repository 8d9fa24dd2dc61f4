"""The observer API: what a sync tells a progress display, a report or your own code, file by file.

A run calls, for every file it fetches, ``file_planned(file)`` once, then ``bytes_transferred(file, count)`` as its
bytes arrive, and for every file it settles (fetched, skipped, deleted or failed) ``file_finished(result)``. The
``file`` of a fetch is one :class:`PlannedFile` object for the whole download, so it can key a per-file view;
``result.path`` and ``result.entity_id`` match its ``path`` and ``entity_id``.

Methods are called from pool threads, concurrently: implementations must be thread-safe and quick (an observer
that blocks holds up the transfer that called it). An exception raised by an observer is not caught.

    class Slowest(SyncObserver):
        def __init__(self):
            self.lock, self.bytes = threading.Lock(), collections.Counter()
        def bytes_transferred(self, file, count):
            with self.lock:
                self.bytes[file.path] += count

    sync_from_platform("syn123", "data", observer=Slowest())
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from synclient.results import FileResult


@dataclass(frozen=True, eq=False)
class PlannedFile:
    """A file the run is about to fetch: which entity version, where it goes, how many bytes."""

    entity_id: str
    version: Optional[int]
    path: Path
    size: int


class SyncObserver:
    """Override what you need; every method is a no-op here."""

    def file_planned(self, file: PlannedFile) -> None:
        """``file`` entered the plan as work to do (``file.size`` bytes to fetch)."""

    def bytes_transferred(self, file: PlannedFile, count: int) -> None:
        """``count`` more bytes of ``file`` arrived from storage (retried bytes are counted again), or were copied
        from synapseclient's download cache."""

    def bytes_reused(self, file: PlannedFile, count: int) -> None:
        """``count`` bytes of ``file`` were on disk already, kept from the partial download an earlier run left: not
        transferred (told before the file's first ``bytes_transferred``; a display starts the file further on)."""

    def file_finished(self, result: FileResult) -> None:
        """A file reached its final state (downloaded, skipped, deleted or failed)."""


class ObserverGroup(SyncObserver):
    """Fans every event out to several observers."""

    def __init__(self, observers: Sequence[Optional[SyncObserver]]) -> None:
        self._observers = [o for o in observers if o is not None]

    def file_planned(self, file: PlannedFile) -> None:
        for observer in self._observers:
            observer.file_planned(file)

    def bytes_transferred(self, file: PlannedFile, count: int) -> None:
        for observer in self._observers:
            observer.bytes_transferred(file, count)

    def bytes_reused(self, file: PlannedFile, count: int) -> None:
        for observer in self._observers:
            observer.bytes_reused(file, count)

    def file_finished(self, result: FileResult) -> None:
        for observer in self._observers:
            observer.file_finished(result)
