"""Progress hooks: a subscriber interface for files/bytes events (progress bars and reports use it).

Methods are called from pool threads, concurrently: implementations must be thread-safe and quick.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from synclient.sync.results import FileResult


class SyncObserver:
    """Override what you need; every method is a no-op here."""

    def file_planned(self, *, size: int) -> None:
        """A file entered the plan as work to do (``size`` bytes to fetch, or 0 when unknown yet)."""

    def bytes_transferred(self, count: int) -> None:
        """``count`` more bytes arrived from storage (retried bytes are counted again)."""

    def file_finished(self, result: "FileResult") -> None:
        """A file reached its final state (downloaded, skipped or failed)."""


class ObserverGroup(SyncObserver):
    """Fans every event out to several observers."""

    def __init__(self, observers: Sequence[SyncObserver]) -> None:
        self._observers = [o for o in observers if o is not None]

    def file_planned(self, *, size: int) -> None:
        for observer in self._observers:
            observer.file_planned(size=size)

    def bytes_transferred(self, count: int) -> None:
        for observer in self._observers:
            observer.bytes_transferred(count)

    def file_finished(self, result: "FileResult") -> None:
        for observer in self._observers:
            observer.file_finished(result)
