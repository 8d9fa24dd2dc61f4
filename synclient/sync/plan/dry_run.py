"""A dry run's answer: what a sync would do, with totals and a time estimate, and nothing written.

The estimate models the real run's two costs: its REST calls, paced by the platform's per-user limits as the gate
paces them (:class:`CallLimits`: a window of N requests, M at a time), and its bytes at the data rate the last
real run into the target measured, or at the bandwidth limit (``--bwlimit``, its timetable followed from now) when
that is slower. The two overlap (the data plane works while the control plane asks), so the estimate is the larger
of the two.
"""

from __future__ import annotations

import heapq
import threading
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from synclient.html_view import FIRST_ROWS, Rows, html_table, size_cell
from synclient.results import FileResult, counted
from synclient.sync.plan.planner import Action
from synclient.transfer.bandwidth import BandwidthTimetable
from synclient.transfer.cap import CapForecast
from synclient.units import format_size

DEFAULT_BYTES_PER_SECOND = 50e6  # until a real run in this target measured better
DEFAULT_FILES_PER_SECOND = 20.0
#: Synapse's documented per-user limits: what the gate meets until a refusal says others
SYNAPSE_REQUESTS_PER_WINDOW = 600
SYNAPSE_WINDOW_SECONDS = 60.0
SYNAPSE_CONCURRENCY = 3
DEFAULT_SECONDS_PER_CALL = 0.1  # until the dry run's own calls measured one


@dataclass(frozen=True)
class CallLimits:
    """What paces a run's REST calls: at most ``requests_per_window`` start in any ``window_seconds``, at most
    ``concurrency`` at a time, each taking ``seconds_per_call``."""

    requests_per_window: int = SYNAPSE_REQUESTS_PER_WINDOW
    window_seconds: float = SYNAPSE_WINDOW_SECONDS
    concurrency: int = SYNAPSE_CONCURRENCY
    seconds_per_call: float = DEFAULT_SECONDS_PER_CALL

    def seconds_for(self, calls: int) -> float:
        """How long ``calls`` REST calls take: as fast as the concurrency allows, a window's worth at a time (the
        calls past a window's worth wait for the first ones to leave it)."""
        if calls <= 0:
            return 0.0
        pace = self.seconds_per_call / max(1, self.concurrency)
        per_window = max(1, self.requests_per_window)
        if per_window * pace >= self.window_seconds:  # the calls never fill a window: the window never binds
            return calls * pace
        full_windows, rest = divmod(calls - 1, per_window)
        return full_windows * self.window_seconds + (rest + 1) * pace


@dataclass(frozen=True)
class PlanEntry:
    rel_path: str
    entity_id: str
    version: Optional[int]
    size: Optional[int]
    action: Action
    destination: Optional[Path]
    # what the file's bundle said, when the dry run was asked for it (SyncOptions.entity_details): the entity's and
    # its data file handle's records and its annotations (Annotations v2), as FileResult keeps them
    entity: Optional[Dict[str, Any]] = field(default=None, repr=False, compare=False)
    file_handle: Optional[Dict[str, Any]] = field(default=None, repr=False, compare=False)
    annotations: Optional[Dict[str, Any]] = field(default=None, repr=False, compare=False)

    def to_json(self) -> Dict[str, Any]:
        return {
            "path": self.rel_path,
            "entity_id": self.entity_id,
            "version": self.version,
            "size": self.size,
            "action": self.action.value,
            "destination": str(self.destination) if self.destination is not None else None,
        }


@dataclass(repr=False)
class SyncPlan:
    """Every planned action of a dry run. ``estimate_seconds`` models the real run: its ``rest_calls`` under the
    platform's ``limits``, and its bytes at the data rate measured by the last real run into the same target (kept
    in its index), or a conservative default. A download planned from its listing alone has no size of its own
    (``PlanEntry.size`` None) where its folder holds several: their bytes are ``listed_bytes``, their folders' sums
    (``entity/children``'s ``sumFileSizesBytes``) less what the folders' other files hold."""

    entries: List[PlanEntry] = field(default_factory=list)
    failures: List[FileResult] = field(default_factory=list)  # entities that could not be planned
    folders: Dict[str, str] = field(default_factory=dict)  # every folder found: rel path -> entity id
    renamed: List[str] = field(default_factory=list)  # what would get another local name, one line each
    bytes_per_second: float = DEFAULT_BYTES_PER_SECOND
    files_per_second: float = DEFAULT_FILES_PER_SECOND  # the last real run's (kept; the estimate counts calls)
    listed_bytes: int = 0
    hashed_bytes: int = 0  # checksum: the local bytes the dry run hashed, as the real run will
    rest_calls: int = 0  # the REST calls the real run is expected to make
    filtered: int = 0  # files the size and age filters left out (neither downloaded nor deleted)
    filters: Dict[str, Any] = field(default_factory=dict)  # the size, age and order settings given
    limits: CallLimits = field(default_factory=CallLimits)
    cap: Optional[CapForecast] = None  # --max-transfer: which downloads would finish under the cap
    bandwidth: Optional[BandwidthTimetable] = None  # the real run's bandwidth limit (TransferConfig.bwlimit)
    #: told each entry as it is planned (a progress display)
    on_entry: Optional[Callable[[PlanEntry], None]] = field(default=None, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, entry: PlanEntry) -> None:
        with self._lock:
            self.entries.append(entry)
        if self.on_entry is not None:
            self.on_entry(entry)

    def sized(self, sizes: Dict[str, int]) -> None:
        """Give the entries of these remote paths their sizes (downloads planned from the listing alone)."""
        if not sizes:
            return
        with self._lock:
            self.entries = [
                replace(e, size=sizes[e.rel_path]) if e.size is None and e.rel_path in sizes else e
                for e in self.entries
            ]

    def add_failure(self, result: FileResult) -> None:
        with self._lock:
            self.failures.append(result)

    def count(self, *actions: Action) -> int:
        return sum(1 for e in self.entries if e.action in actions)

    @property
    def fetch_entries(self) -> List[PlanEntry]:
        return [e for e in self.entries if e.action.fetches]

    @property
    def bytes_to_fetch(self) -> int:
        return sum(e.size or 0 for e in self.fetch_entries) + self.listed_bytes

    @property
    def data_seconds(self) -> float:
        """How long the bytes take: at the data rate, or at the bandwidth limit (from now) where that is slower."""
        if self.bandwidth is None:
            return self.bytes_to_fetch / self.bytes_per_second
        return self.bandwidth.seconds_to_move(
            self.bytes_to_fetch, start=datetime.now(), unlimited=self.bytes_per_second
        )

    @property
    def estimate_seconds(self) -> float:
        """The real run's wall time: the longer of its REST calls under the limits and its bytes at the data rate."""
        return max(self.limits.seconds_for(self.rest_calls), self.data_seconds)

    def summary(self) -> str:
        conflicts = self.count(Action.OVERWRITE, Action.KEEP_LOCAL, Action.KEEP_BOTH)
        return (
            f"dry run: {counted(len(self.fetch_entries), 'file')} to download ({format_size(self.bytes_to_fetch)}), "
            + (f"{self.count(Action.REPAIR)} to repair (local bytes differ), " if self.count(Action.REPAIR) else "")
            + f"{self.count(Action.SKIP, Action.ADOPT)} up to date, {counted(conflicts, 'conflict')}, "
            f"{self.count(Action.DELETE)} to delete, {len(self.failures)} failed"
            + (f", {counted(self.filtered, 'file')} left out by the filters" if self.filtered else "")
            + "; "
            f"estimated {self.estimate_seconds:.1f} s"
            + (f" + hashing {format_size(self.hashed_bytes)} of local copies (checksum)" if self.hashed_bytes else "")
            + (f"; {self.cap.line()}" if self.cap is not None else "")
            + (
                f"; bandwidth limit {self.bandwidth.describe()}: the bytes take {self.data_seconds:.1f} s"
                if self.bandwidth is not None
                else ""
            )
        )

    def to_json(self) -> Dict[str, Any]:
        return {
            "dry_run": True,
            "to_download": len(self.fetch_entries),
            "bytes_to_download": self.bytes_to_fetch,
            "to_repair": self.count(Action.REPAIR),  # of those to download: our copies whose bytes differ (checksum)
            "bytes_hashed": self.hashed_bytes,  # checksum: the local bytes read to decide (the real run reads them too)
            "up_to_date": self.count(Action.SKIP, Action.ADOPT),
            "conflicts": self.count(Action.OVERWRITE, Action.KEEP_LOCAL, Action.KEEP_BOTH),
            "to_delete": self.count(Action.DELETE),
            "estimate_seconds": round(self.estimate_seconds, 2),
            "rest_calls": self.rest_calls,
            "filtered": self.filtered,
            "filters": dict(self.filters),
            "bwlimit": None if self.bandwidth is None else self.bandwidth.spec,
            "bwlimit_seconds": None if self.bandwidth is None else round(self.data_seconds, 2),
            "entries": [e.to_json() for e in sorted(self.entries, key=lambda e: e.rel_path)],
            "failures": [f.to_json() for f in self.failures],
            "renamed": list(self.renamed),
            "cap": self.cap.to_json() if self.cap is not None else None,
        }

    def __repr__(self) -> str:
        """One line (a notebook cell showed every entry): ``<SyncPlan 322 to download (162.8 MiB), 0 up to date,
        0 to delete, 0 failed, estimated 3.2 s>``; the entries are ``.entries``."""
        conflicts = self.count(Action.OVERWRITE, Action.KEEP_LOCAL, Action.KEEP_BOTH)
        return (
            f"<SyncPlan {len(self.fetch_entries)} to download ({format_size(self.bytes_to_fetch)}), "
            f"{self.count(Action.SKIP, Action.ADOPT)} up to date, "
            + (f"{conflicts} conflicts, " if conflicts else "")
            + f"{self.count(Action.DELETE)} to delete, "
            f"{len(self.failures)} failed, estimated {self.estimate_seconds:.1f} s>"
        )

    def _repr_html_(self) -> str:
        """A notebook's view: the totals, the first failures and the first entries (:mod:`synclient.html_view`)."""
        first = heapq.nsmallest(FIRST_ROWS, self.entries, key=lambda e: e.rel_path)
        return html_table(
            "SyncPlan (dry run)",
            [
                ("to download", len(self.fetch_entries)),
                ("bytes to download", format_size(self.bytes_to_fetch)),
                ("up to date", self.count(Action.SKIP, Action.ADOPT)),
                ("conflicts", self.count(Action.OVERWRITE, Action.KEEP_LOCAL, Action.KEEP_BOTH)),
                ("to delete", self.count(Action.DELETE)),
                ("failed", len(self.failures)),
                ("estimated seconds", f"{self.estimate_seconds:.1f}"),
            ],
            [
                Rows(
                    "failures",
                    ("entity", "path", "error"),
                    [(f.entity_id, f.path, f.error) for f in self.failures[:FIRST_ROWS]],
                    len(self.failures),
                ),
                Rows(
                    "entries",
                    ("action", "entity", "version", "size", "path"),
                    [(e.action.value, e.entity_id, e.version, size_cell(e.size), e.rel_path) for e in first],
                    len(self.entries),
                ),
            ],
        )
