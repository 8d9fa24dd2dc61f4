"""What a sync returns: one :class:`FileResult` per file and a :class:`SyncReport` of the whole run.

The lowest layer of the package (it imports only its neighbours there: the size units, the notebook's table and
the redactor): errors, events, progress and the CLI all speak of these outcome types, and none of them sits above
the sync engine.
"""

from __future__ import annotations

import datetime
import enum
import json
import threading
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from synclient.html_view import FIRST_ROWS, Rows, html_table, size_cell
from synclient.units import format_rate, format_size

#: the ``action`` of a file downloaded again because its local bytes differed (``checksum``: the planner's REPAIR)
REPAIRED = "repair"
#: the ``action`` of a file whose bytes were copied from synapseclient's download cache instead of downloaded
FROM_SYNAPSE_CACHE = "synapse-cache"
#: the action of a file the run's --max-transfer cap left (not started, or stopped with its partial kept): SKIPPED
LEFT_BY_CAP = "cap"


def counted(number: int, noun: str, plural: Optional[str] = None) -> str:
    """``number`` and ``noun`` as a line says them: ``1 retry``, ``2 retries``, ``0 files`` (``plural`` when adding
    an s is not it: ``counted(n, "retry", "retries")``)."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


class SyncStatus(enum.Enum):
    DOWNLOADED = "downloaded"
    SKIPPED = "skipped"
    DELETED = "deleted"
    FAILED = "failed"


class Verification(enum.Enum):
    """What a file's bytes were checked against before it was put in place."""

    MD5 = "md5"  # the platform's MD5 (and size, when recorded): the normal case
    SIZE = "size"  # only the size: an external-URL file whose handle records no MD5
    NONE = "none"  # nothing: an external-URL file whose handle records neither; taken as the server sent it

    @classmethod
    def of(cls, md5: Optional[str], size: Optional[int]) -> Verification:
        return cls.MD5 if md5 else cls.SIZE if size is not None else cls.NONE


def annotation_value(kind: str, text: str) -> object:
    """One annotation value of the platform's Annotations v2 (``{"type": "LONG", "value": ["3"]}``) as Python."""
    if kind == "LONG":
        return int(text)
    if kind == "DOUBLE":
        return float(text)
    if kind == "BOOLEAN":
        return text.lower() == "true"
    if kind == "TIMESTAMP_MS":
        return datetime.datetime.fromtimestamp(int(text) / 1000, tz=datetime.timezone.utc)
    return text


def annotation_values(entry: Mapping[str, Any]) -> List[object]:
    """One annotation of Annotations v2 (``{"type", "value": [text, ...]}``) as its typed values."""
    return [annotation_value(str(entry.get("type", "STRING")), str(value)) for value in entry.get("value") or []]


def typed_annotations(wire: Mapping[str, Any]) -> Dict[str, List[object]]:
    """Annotations v2 (``{key: {"type", "value": [text, ...]}}``) as ``{key: [typed value, ...]}``."""
    return {key: annotation_values(entry) for key, entry in wire.items() if isinstance(entry, Mapping)}


class FileResult:
    """The outcome of one file: entity id, version, local path, size, MD5, status, error (a
    :class:`~synclient.errors.SynclientError` when it failed), planner action, and the file's annotations
    (``{name: [value, ...]}``, values typed as str, int, float, bool or UTC datetime; empty when it failed before
    they were known). ``entity`` and ``file_handle`` are the entity's and its data file handle's full records as
    the platform gave them (``id``, ``name``, ``etag``, ``createdOn``, ``parentId``, ``versionNumber``, ...; the
    handle's ``contentMd5``, ``fileName``, ...) when the sync was asked for them
    (``SyncOptions(entity_details=True)``), else None. ``verification``: what the bytes of a downloaded file were
    checked against (:class:`Verification`; ``NONE`` for an external-URL file whose handle records neither MD5 nor
    size), None for the other statuses. ``renamed``: why the file's local name is not its remote name (a name the
    local filesystem cannot hold, or cannot tell from another of its folder: docs/cli.md, "Names your filesystem
    cannot hold"), None when it is its remote name.

    A slotted, read-only class rather than a dataclass: a sync of a million files returns a million of these, so
    the path is kept as a string and turned into a ``Path`` when asked for, and the annotations are kept as the
    platform sent them (or as the index's JSON text) and turned into Python values when asked for.
    """

    __slots__ = (
        "entity_id",
        "version",
        "_path",
        "size",
        "md5",
        "status",
        "error",
        "action",
        "_annotations",
        "entity",
        "file_handle",
        "verification",
        "renamed",
    )
    # The slots' types, for type checkers (annotations without values add no class attributes, so they do not
    # clash with __slots__); __init__ sets them through object.__setattr__ since __setattr__ refuses.
    entity_id: str
    version: Optional[int]
    _path: Optional[str]
    size: Optional[int]
    md5: Optional[str]
    status: SyncStatus
    error: Optional[Exception]
    action: Optional[str]
    _annotations: Union[Mapping[str, Any], str, None]
    entity: Optional[Mapping[str, Any]]
    file_handle: Optional[Mapping[str, Any]]
    verification: Optional[Verification]
    renamed: Optional[str]

    def __init__(
        self,
        entity_id: str,
        version: Optional[int],
        path: Optional[Path],
        size: Optional[int],
        md5: Optional[str],
        status: SyncStatus,
        error: Optional[Exception] = None,
        action: Optional[str] = None,
        *,
        annotations: Union[Mapping[str, Any], str, None] = None,
        entity: Optional[Mapping[str, Any]] = None,
        file_handle: Optional[Mapping[str, Any]] = None,
        verification: Optional[Verification] = None,
        renamed: Optional[str] = None,
    ) -> None:
        set_ = object.__setattr__
        set_(self, "entity_id", entity_id)
        set_(self, "version", version)
        set_(self, "_path", str(path) if path is not None else None)
        set_(self, "size", size)
        set_(self, "md5", md5)
        set_(self, "status", status)
        set_(self, "error", error)
        set_(self, "action", action)  # the planner's Action value: download, skip, adopt, keep-both, ...
        set_(self, "_annotations", annotations or None)  # Annotations v2 map, or its JSON text from the index
        set_(self, "entity", entity)
        set_(self, "file_handle", file_handle)
        set_(self, "verification", verification)
        set_(self, "renamed", renamed)

    @property
    def annotations(self) -> Dict[str, List[object]]:
        wire = self._annotations
        if isinstance(wire, str):
            wire = json.loads(wire)
        return typed_annotations(wire or {})

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("FileResult is read-only")

    @property
    def path(self) -> Optional[Path]:
        return Path(self._path) if self._path is not None else None

    @property
    def ok(self) -> bool:
        return self.status is not SyncStatus.FAILED

    def _key(self) -> Tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FileResult) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key()[:3])

    def __repr__(self) -> str:
        fields_text = ", ".join(f"{name.lstrip('_')}={getattr(self, name)!r}" for name in self.__slots__[:8])
        return f"FileResult({fields_text})"

    def to_json(self) -> Dict[str, Any]:
        return {
            "entity_id": self.entity_id,
            "version": self.version,
            "path": self._path,
            "size": self.size,
            "md5": self.md5,
            "status": self.status.value,
            "action": self.action,
            "error": str(self.error) if self.error else None,
            "verification": self.verification.value if self.verification else None,
            "renamed": self.renamed,
        }


@dataclass
class QueryInfo:
    """The query a run downloaded what it selected (``download_query``): its SQL, table, and what it returned."""

    sql: str
    table: str
    rows: int  # every row of every page
    entities: int  # the rows that named an entity (an id twice counts twice)
    rows_without_id: int = 0


@dataclass
class CartInfo:
    """The download cart a run downloaded (``download_list``): its available files, the items removed from it
    after the run (``kept``: left for a later run, their files failed or the cart was kept), the files that need
    an action on the portal first (and the first few of those actions), and the manifest written."""

    files: int
    removed: int = 0
    kept: int = 0
    needing_action: int = 0
    actions: List[str] = field(default_factory=list)  # "access requirement 9", "download access to syn5", ...
    manifest: Optional[str] = None  # the manifest.csv written into the target

    def action_line(self, *, shown: int = 3) -> Optional[str]:
        """The one line about files that need an action on synapse.org first (None: none do)."""
        if not self.needing_action:
            return None
        more = ", ..." if len(self.actions) > shown else ""
        return (
            f"{counted(self.needing_action, 'file')} in your download cart "
            f"{'needs' if self.needing_action == 1 else 'need'} an action on synapse.org first "
            f"({', '.join(self.actions[:shown])}{more})"
        )


@dataclass
class WorkerCounts:
    """What one Dask worker did in a sharded run (:mod:`synclient.cluster`): its shards, the files it installed and
    their bytes, the seconds its shards ran and the CPU their threads took, its REST calls, retries and 429s."""

    worker: str
    shards: int = 0
    files: int = 0
    bytes: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    rest_calls: int = 0
    retries: int = 0
    throttled: int = 0


@dataclass
class SyncReport:
    """Totals of one run, for the summary line and ``--json``."""

    downloaded: int = 0
    from_cache: int = 0  # of the downloaded: copied from synapseclient's cache (their bytes are not downloaded)
    skipped: int = 0
    deleted: int = 0
    failed: int = 0
    bytes_downloaded: int = 0  # of the downloaded files: bytes that came over the wire in this run
    bytes_reused: int = 0  # of the downloaded files: bytes kept from partial downloads earlier runs left
    wall_seconds: float = 0.0
    rest_calls: int = 0
    retries: int = 0
    throttled: int = 0
    unverified: int = 0  # of the downloaded: external-URL files whose handle records neither MD5 nor size
    repaired: int = 0  # of the downloaded: our copies whose bytes differed from the remote's (checksum)
    filtered: int = 0  # files the size and age filters left out (neither downloaded nor deleted)
    filters: Dict[str, Any] = field(default_factory=dict)  # the size, age and order settings given (--json)
    manifest_errors: List[str] = field(default_factory=list)  # one line per folder whose manifest failed
    # entries of a list or dataset given another name, and entities whose names the local filesystem cannot hold
    # as they are (docs/cli.md), one line each
    renamed: List[str] = field(default_factory=list)
    query: Optional[QueryInfo] = None  # the query whose selection this run downloaded
    cart: Optional[CartInfo] = None  # the download cart this run downloaded
    workers: List[WorkerCounts] = field(default_factory=list)  # a sharded run's Dask workers (rest_calls: all)
    # --max-transfer (transfer/cap.py): the cap, the bytes it counted (partials of stopped files included), and the
    # files it left (SKIPPED, action "cap"; their sizes): the same command goes on with them
    max_transfer: Optional[int] = None
    transferred: int = 0
    cap_reached: bool = False
    left_files: int = 0
    left_bytes: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def count(self, result: FileResult, *, reused: int = 0) -> None:
        """Count ``result``; ``reused``: of a downloaded file's bytes, those an earlier run's partial gave."""
        with self._lock:
            if result.status is SyncStatus.DOWNLOADED:
                self.downloaded += 1
                if result.verification is Verification.NONE:
                    self.unverified += 1
                if result.action == REPAIRED:
                    self.repaired += 1
                if result.action == FROM_SYNAPSE_CACHE:
                    self.from_cache += 1
                else:
                    self.bytes_downloaded += (result.size or 0) - reused
                    self.bytes_reused += reused
            elif result.status is SyncStatus.SKIPPED:
                self.skipped += 1
                if result.action == LEFT_BY_CAP:
                    self.left_files += 1
                    self.left_bytes += result.size or 0
                    self.cap_reached = True
            elif result.status is SyncStatus.DELETED:
                self.deleted += 1
            else:
                self.failed += 1

    @property
    def bytes_per_second(self) -> float:
        return self.bytes_downloaded / self.wall_seconds if self.wall_seconds > 0 else 0.0

    @property
    def mb_per_second(self) -> float:
        """``--json``'s ``mb_per_second``: 10^6 bytes per second, as since the first release (people read
        :meth:`summary`, in binary units)."""
        return self.bytes_per_second / 1e6

    def to_json(self) -> Dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}
        data["query"] = asdict(self.query) if self.query is not None else None
        data["cart"] = asdict(self.cart) if self.cart is not None else None
        data["workers"] = [asdict(counts) for counts in self.workers]
        data["mb_per_second"] = round(self.mb_per_second, 2)
        return data

    def cap_line(self) -> Optional[str]:
        """The line that says the ``--max-transfer`` cap left files for a later run (None: it did not)."""
        if not self.cap_reached:
            return None
        return (
            f"stopped at the --max-transfer cap of {format_size(self.max_transfer or 0)}: "
            f"{counted(self.left_files, 'file')} ({format_size(self.left_bytes)}) left; "
            "run the same command again to go on"
        )

    def summary(self) -> str:
        deleted = f"{self.deleted} deleted, " if self.deleted else ""
        manifests = f", {counted(len(self.manifest_errors), 'manifest')} not written" if self.manifest_errors else ""
        notes = [f"{self.from_cache} from the synapseclient cache"] if self.from_cache else []
        if self.repaired:
            notes.append(f"{self.repaired} repaired: local bytes differed")
        if self.unverified:
            notes.append(f"{self.unverified} unverified: no MD5 or size recorded")
        noted = f" ({'; '.join(notes)})" if notes else ""
        renamed = f", {len(self.renamed)} renamed" if self.renamed else ""
        renamed += f", {counted(self.filtered, 'file')} left out by the filters" if self.filtered else ""
        # bytes kept from partial downloads did not come over the wire: said apart from those that did
        moved, reused = (
            (" transferred", f", {format_size(self.bytes_reused)} reused from partial downloads")
            if self.bytes_reused
            else ("", "")
        )
        return (
            f"{self.downloaded} downloaded{noted}, {self.skipped} skipped, {deleted}{self.failed} failed"
            f"{renamed}{manifests}; "
            f"{format_size(self.bytes_downloaded)}{moved} in {self.wall_seconds:.1f} s "
            f"({format_rate(self.bytes_per_second)}){reused}; {counted(self.rest_calls, 'REST call')}, "
            f"{counted(self.retries, 'retry', 'retries')}, {self.throttled} throttled"
            + (f"; on {counted(len(self.workers), 'Dask worker')}" if self.workers else "")
        )


class SyncResults(List[FileResult]):
    """The list of per-file results, with the run's :class:`SyncReport` as ``.report`` and every folder the run
    entered as ``.folders`` (path relative to the target, '/'-separated -> entity id)."""

    def __init__(
        self, results: List[FileResult], report: SyncReport, *, folders: Optional[Dict[str, str]] = None
    ) -> None:
        super().__init__(results)
        self.report = report
        self.folders: Dict[str, str] = folders or {}

    @property
    def failures(self) -> List[FileResult]:
        return [r for r in self if r.status is SyncStatus.FAILED]

    def __repr__(self) -> str:
        """One line (a notebook cell showed every file): ``<SyncResults 322 downloaded (162.8 MiB), 0 skipped,
        0 failed, 3.2 s>``; the files are the list's items, the totals ``.report``."""
        report = self.report
        deleted = f"{report.deleted} deleted, " if report.deleted else ""
        return (
            f"<SyncResults {report.downloaded} downloaded ({format_size(report.bytes_downloaded)}), "
            f"{report.skipped} skipped, {deleted}{report.failed} failed, {report.wall_seconds:.1f} s>"
        )

    def _repr_html_(self) -> str:
        """A notebook's view: the totals, the first failures and the first files (:mod:`synclient.html_view`)."""
        report = self.report
        failures = self.failures
        return html_table(
            "SyncResults",
            [
                ("downloaded", report.downloaded),
                ("skipped", report.skipped),
                ("deleted", report.deleted),
                ("failed", report.failed),
                ("bytes downloaded", format_size(report.bytes_downloaded)),
                ("seconds", f"{report.wall_seconds:.1f}"),
                ("rate", format_rate(report.bytes_per_second)),
            ],
            [
                Rows(
                    "failures",
                    ("entity", "path", "error"),
                    [(r.entity_id, r.path, r.error) for r in failures[:FIRST_ROWS]],
                    len(failures),
                ),
                Rows(
                    "files",
                    ("status", "entity", "version", "size", "path"),
                    [(r.status.value, r.entity_id, r.version, size_cell(r.size), r.path) for r in self[:FIRST_ROWS]],
                    len(self),
                ),
            ],
        )
