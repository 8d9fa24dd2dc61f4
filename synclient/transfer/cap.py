"""The run's transfer cap (``--max-transfer SIZE``, ``--cutoff-mode``, rclone's meanings): one
:class:`TransferCap` that every download of a run goes through (single streams, ranged parts, external URLs).

It counts the bytes that come from storage in this run, chunk by chunk, as the downloader writes them (bytes kept
from an earlier run's partial or copied from synapseclient's cache are not downloaded: not counted), and says
whether a file may start and whether a running stream goes on:

- ``hard`` (the default): a file starts while the count is below the cap; once it reaches the cap, every running
  stream stops at its next chunk (the chunk in hand is written first: the count exceeds the cap by at most one
  chunk per stream that was running) and no stream starts again;
- ``soft``: no file starts once the count reached the cap; the running ones finish;
- ``cautious``: a file starts only when its size fits in what the cap leaves after the count and the files
  already running (each holds its full size until it ends); a file of unknown size never starts. Running
  streams stop at the cap as in ``hard`` (only a file fetched again after bad bytes can get there).

A file stopped or not started is reported as left by the cap (:class:`~synclient.errors.TransferCapReached`),
never as failed; a stopped file's partial stays for the next run, which resumes it. :func:`forecast` applies the
same rules to a dry run's planned sizes.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable, FrozenSet, Iterable, Optional, Tuple

from synclient.choices import Choice
from synclient.errors import TransferCapReached
from synclient.units import format_size


class CutoffMode(Choice):
    HARD = "hard"  # stop every transfer at the cap
    SOFT = "soft"  # start no new file at the cap; running ones finish
    CAUTIOUS = "cautious"  # start no file that would take the run past the cap


@dataclass
class CapTicket:
    """One started file's share of the cap: in ``cautious`` mode, the bytes of its size not yet received."""

    held: int = 0


class TransferCap:
    """The bytes downloaded in one run against ``limit``. Thread-safe; one per run (per process: a Dask run
    cannot share it, and refuses the cap)."""

    def __init__(self, limit: int, mode: CutoffMode = CutoffMode.HARD) -> None:
        if limit < 0:
            raise ValueError("a transfer cap cannot be negative")
        self.limit = limit
        self.mode = mode
        self.received = 0  # bytes downloaded in this run (every stream, finished files and partials alike)
        self._held = 0  # cautious: the bytes the running files may still take
        self._lock = threading.Lock()

    @property
    def reached(self) -> bool:
        with self._lock:
            return self.received >= self.limit

    def _admits(self, size: Optional[int]) -> bool:
        if self.mode is CutoffMode.CAUTIOUS:
            return size is not None and self.received + self._held + size <= self.limit
        return self.received < self.limit

    def would_start(self, size: Optional[int]) -> bool:
        """Whether a file of ``size`` bytes (None: unknown) may start now, reserving nothing (a check before its
        URL is asked for; the start itself is :meth:`start`)."""
        with self._lock:
            return self._admits(size)

    def start(self, size: Optional[int], what: str) -> CapTicket:
        """Admit a file of ``size`` bytes about to start downloading, or raise :class:`TransferCapReached`."""
        with self._lock:
            if not self._admits(size):
                raise TransferCapReached(f"{what}: not started, the --max-transfer cap is reached")
            held = (size or 0) if self.mode is CutoffMode.CAUTIOUS else 0
            self._held += held
            return CapTicket(held)

    def done(self, ticket: CapTicket) -> None:
        """A started file ended (installed, failed or stopped): what it still held is free again."""
        with self._lock:
            self._held -= ticket.held
            ticket.held = 0

    def _stops_streams(self) -> bool:
        return self.mode is not CutoffMode.SOFT and self.received >= self.limit

    def check_stream(self, what: str) -> None:
        """Before a stream's GET: raise :class:`TransferCapReached` when streams stop at the cap and it is reached
        (the next part of a file whose earlier parts were running, a retry)."""
        with self._lock:
            if self._stops_streams():
                raise TransferCapReached(f"{what}: stopped at the --max-transfer cap")

    def count(self, size: int, ticket: Optional[CapTicket], what: str) -> None:
        """``size`` bytes of a stream arrived (and were written): counted; raise :class:`TransferCapReached` when
        the stream is to stop now."""
        with self._lock:
            self.received += size
            if ticket is not None and ticket.held:
                taken = min(size, ticket.held)
                ticket.held -= taken
                self._held -= taken
            if self._stops_streams():
                raise TransferCapReached(f"{what}: stopped at the --max-transfer cap")

    def metered(
        self, sink: Callable[[int, memoryview], None], ticket: Optional[CapTicket], what: str
    ) -> Callable[[int, memoryview], None]:
        """``sink`` with each chunk counted after it is written (so the bytes downloaded are kept)."""

        def counted(offset: int, data: memoryview) -> None:
            sink(offset, data)
            self.count(len(data), ticket, what)

        return counted


@dataclass(frozen=True)
class CapForecast:
    """What a run under the cap would do with a dry run's planned downloads, in the plan's order (the real run
    starts files in its pool's order: with files of different sizes, which ones fit may differ; their count does
    not when the files are of one size). ``files`` / ``bytes``: the downloads that finish under the cap and their
    sizes; ``left_files`` / ``left_bytes``: the others (a ``hard`` run starts one of them and keeps its partial);
    ``left``: their remote paths."""

    limit: int
    mode: CutoffMode
    files: int = 0
    bytes: int = 0
    left_files: int = 0
    left_bytes: int = 0
    left: FrozenSet[str] = field(default_factory=frozenset)

    def to_json(self) -> dict:
        return {
            "max_transfer": self.limit,
            "cutoff_mode": self.mode.value,
            "files": self.files,
            "bytes": self.bytes,
            "left_files": self.left_files,
            "left_bytes": self.left_bytes,
            "left": sorted(self.left),
        }

    def line(self) -> str:
        """The dry run's line about the cap."""
        fits = f"{self.files} file{'s' if self.files != 1 else ''} ({format_size(self.bytes)})"
        text = f"under the --max-transfer cap of {format_size(self.limit)} ({self.mode.value}): {fits} would finish"
        if self.left_files:
            text += f", {self.left_files} ({format_size(self.left_bytes)}) left for a later run"
        return text


def forecast(downloads: Iterable[Tuple[str, Optional[int]]], limit: int, mode: CutoffMode) -> CapForecast:
    """Apply ``mode``'s rule to ``downloads`` (remote path, size; None: unknown, taken as 0 except by ``cautious``,
    which never starts such a file), in order."""
    used = files = fitted = left_files = left_bytes = 0
    left = set()
    for path, size in downloads:
        known = size or 0
        if mode is CutoffMode.CAUTIOUS:
            fits = size is not None and used + known <= limit
        elif mode is CutoffMode.SOFT:
            fits = used < limit
        else:  # hard: a file that crosses the cap stops there, its partial kept
            fits = used + known <= limit if used < limit else False
            if not fits and used < limit:
                used = limit
        if fits:
            used += known
            files += 1
            fitted += known
        else:
            left_files += 1
            left_bytes += known
            left.add(path)
    return CapForecast(limit, mode, files, fitted, left_files, left_bytes, frozenset(left))
