"""Files selected by SQL over a file view or a table (``download_query``; the CLI's ``get --query``).

The query runs on the platform (every page of its asynchronous query jobs); its ``id`` column names the entities,
and a version column (``currentVersion`` or ``versionNumber``), when selected, pins each to that version. The
entities then go through :func:`~synclient.sync.sources.by_id.plan_sources` exactly as a list of ids does (one
header call per 1,000 ids, the same names, renamings and report).

A row of a **file view** that carries ``dataFileHandleId``, ``dataFileMD5Hex`` and ``dataFileSizeBytes`` describes
its file completely for a download (a :class:`~synclient.sync.sources.by_id.FileVersionFacts`, annotations from the
view's annotation columns among those selected): such a file skips its bundle call and goes straight to the URL batches
(100 files per call), so the calls of a query that selects N files are its own polls + ceil(N/1000) + ceil(N/100),
not one per file. The row describes the entity version it was read at (the RowSet row's ``versionNumber``); views
lag behind edits, so the row is used only when that is the version being downloaded. Otherwise (another current
version, a table's row, a row without those columns, a ``dataFileConcreteType`` that is not platform storage) the
file takes its bundle call.

:class:`ViewRows` serves a sync planned from a view (``view=``) the same way: ``SELECT *`` of the view, read when
the first file needs more than the index (a re-sync that finds nothing changed never reads it).
"""

from __future__ import annotations

import json
import logging
import re
import threading
from dataclasses import dataclass, field
from typing import List, Optional, Protocol, Sequence, Tuple

from synclient.errors import CallCancelledError, Cancelled, ConfigError, MalformedAnswerError, SynclientError
from synclient.platform.models import (
    EntityHeader,
    EntityType,
    FileHandle,
    parse_entity_id,
    wire_entity_id,
    wire_handle_id,
    wire_md5,
    wire_whole_number,
)
from synclient.platform.rest import ASYNC_JOB_TIMEOUT, Platform
from synclient.sync.sources.by_id import DescribedFiles, FileVersionFacts
from synclient.sync.sources.id_lists import EntityRef

#: the table or view a query reads: ``FROM syn123`` (as synapseclient finds it)
_FROM_TABLE = re.compile(r"\bfrom\s+(syn[0-9]+)(?:\.[0-9]+)?\b", re.IGNORECASE | re.ASCII)
#: a whole number in a cell: ASCII digits only (``str.isdigit`` also takes "²", which ``int`` then refuses)
_DIGITS = re.compile(r"[0-9]{1,19}", re.ASCII)
ID_COLUMN = "id"
VERSION_COLUMNS = ("currentVersion", "versionNumber")
#: the file view columns that describe a row's file handle completely (id, MD5, size)
HANDLE_COLUMNS = ("dataFileHandleId", "dataFileMD5Hex", "dataFileSizeBytes")
PARENT_COLUMN = "parentId"
CONCRETE_TYPE_COLUMN = "dataFileConcreteType"
#: handles in the platform's own storage: their pre-signed URLs are https (an external handle's may be sftp)
STORAGE_HANDLES = (
    "org.sagebionetworks.repo.model.file.S3FileHandle",
    "org.sagebionetworks.repo.model.file.GoogleCloudFileHandle",
)
#: the columns Synapse gives every file view (the others are its annotation columns)
DEFAULT_VIEW_COLUMNS = frozenset(
    name.lower()
    for name in (
        "id",
        "name",
        "createdOn",
        "createdBy",
        "etag",
        "type",
        "currentVersion",
        "parentId",
        "benefactorId",
        "projectId",
        "modifiedOn",
        "modifiedBy",
        "dataFileHandleId",
        "dataFileSizeBytes",
        "dataFileMD5Hex",
        "dataFileName",
        "dataFileConcreteType",
        "dataFileBucket",
        "dataFileKey",
        "path",
        "versionNumber",
    )
)
#: a view column's type -> the annotation type of its values (Annotations v2); a list column's cell is JSON
_ANNOTATION_TYPES = {
    "STRING": "STRING",
    "INTEGER": "LONG",
    "DOUBLE": "DOUBLE",
    "BOOLEAN": "BOOLEAN",
    "DATE": "TIMESTAMP_MS",
    "ENTITYID": "STRING",
    "USERID": "STRING",
    "LINK": "STRING",
    "LARGETEXT": "STRING",
    "MEDIUMTEXT": "STRING",
}

log = logging.getLogger("synclient.sync")


def looks_like_sql(text: str) -> bool:
    """A command-line argument that is a query, not an id (``SELECT ... FROM syn123``)."""
    return re.match(r"\s*select\s", text, re.IGNORECASE) is not None


def table_of(sql: str) -> str:
    """The id of the table or view ``sql`` reads (a usage error when it names none)."""
    match = _FROM_TABLE.search(sql)
    if match is None:
        raise ConfigError("a query reads one table or file view by its id: SELECT id FROM syn123 WHERE ...")
    return parse_entity_id(match.group(1))[0]


@dataclass
class QuerySelection:
    """The entities a query selected, in row order, and what its rows say of their files."""

    sql: str
    table_id: str
    rows: int = 0
    refs: List[EntityRef] = field(default_factory=list)
    rows_without_id: int = 0
    # (entity id, the version its row describes) -> what the row says of the file: a file view's rows only mean
    # this (a table's row versions are the table's), and only for the version fetched (the pipeline's lookup)
    row_files: DescribedFiles = field(default_factory=dict)


def select(platform: Platform, sql: str, *, table_id: str) -> QuerySelection:
    """Run ``sql`` on the table or view ``table_id`` (every page) and read the entities its rows select."""
    selection = QuerySelection(sql=sql, table_id=table_id)
    for page in platform.query_table(table_id, sql):
        columns = _Columns(page.columns, page.column_types)
        for row in page.rows:
            selection.rows += 1
            ref = columns.ref_of(row.values, row=selection.rows)
            if ref is None:
                selection.rows_without_id += 1
                continue
            selection.refs.append(ref)
            known = columns.file_facts(row.values, row.version)
            if known is not None:
                selection.row_files[ref.entity_id, known.version] = known
    return selection


class FileRows(Protocol):
    """What a file view's rows say of a file version (a sync planned from a view: :class:`ViewRows`, or
    ``view="auto"``'s :class:`~synclient.sync.sources.auto_view.AutoView`), None when they say nothing of it."""

    def get(self, entity_id: str, version: Optional[int]) -> Optional[FileVersionFacts]: ...


class ViewRows:
    """What a file view's rows (``SELECT *``) say of its files, for a sync planned from it (``view=``): read once,
    by the first :meth:`get` (a pool task that needs a file's bundle otherwise); thread-safe. A view that cannot
    stand in for bundles (no handle columns, a failed query) is said once, and every file takes its bundle."""

    def __init__(self, platform: Platform, view: EntityHeader) -> None:
        if view.type is not EntityType.ENTITY_VIEW:
            raise ConfigError(f"{view.id} is a {view.type.label}, not a file view: --view takes a file view")
        self._platform = platform
        self._view = view
        self._lock = threading.Lock()
        self._rows: Optional[DescribedFiles] = None

    def get(self, entity_id: str, version: Optional[int]) -> Optional[FileVersionFacts]:
        with self._lock:  # the others wait for the one read (a few pages: seconds, not minutes)
            if self._rows is None:
                self._rows = self._read()
        return self._rows.get((entity_id, version))

    def _read(self) -> DescribedFiles:
        try:
            return read_view_files(self._platform, self._view.id)
        except (CallCancelledError, Cancelled):
            return {}  # the run stops: nothing to say
        except SynclientError as exc:
            log.warning(
                "the file view %s cannot stand in for the files' bundle calls (%s): each file takes its own",
                self._view.id,
                exc,
            )
            return {}


def read_view_files(platform: Platform, view_id: str, *, timeout: float = ASYNC_JOB_TIMEOUT) -> DescribedFiles:
    """What every row of the file view ``view_id`` (``SELECT *``, every page) says of its file, by (entity id,
    version); ``timeout``: how long the view may answer 202 (being built) before :class:`JobTimeoutError`. A
    :class:`ConfigError` when the view has no handle columns."""
    known: DescribedFiles = {}
    number = 0
    for page in platform.query_table(view_id, f"SELECT * FROM {view_id}", timeout=timeout):
        columns = _Columns(page.columns, page.column_types)
        if columns.handle is None:
            raise ConfigError(f"it has no {', '.join(HANDLE_COLUMNS)} columns")
        for row in page.rows:
            number += 1
            ref = columns.ref_of(row.values, row=number)
            file = columns.file_facts(row.values, row.version)
            if ref is not None and file is not None:
                known[ref.entity_id, file.version] = file
    return known


class _Columns:
    """Where a page's columns of interest are (names as Synapse's file views have them; case ignored)."""

    def __init__(self, names: Sequence[str], types: Sequence[Optional[str]] = ()) -> None:
        where = {name.lower(): index for index, name in enumerate(names)}
        if ID_COLUMN not in where:
            shown = ", ".join(names) or "none"
            raise ConfigError(
                f"the query selects no 'id' column (its columns: {shown}): select the entity ids, "
                "e.g. SELECT id, name FROM syn123 ..."
            )
        self.names = names
        self.id = where[ID_COLUMN]
        self.version = next((where[name.lower()] for name in VERSION_COLUMNS if name.lower() in where), None)
        self.parent = where.get(PARENT_COLUMN.lower())
        self.modified = where.get("modifiedon")  # (the size and age filters)
        self.concrete_type = where.get(CONCRETE_TYPE_COLUMN.lower())
        handle_id, md5, size = (where.get(name.lower()) for name in HANDLE_COLUMNS)
        self.handle: Optional[Tuple[int, int, int]] = (
            (handle_id, md5, size) if handle_id is not None and md5 is not None and size is not None else None
        )
        self.annotations = [
            (index, name, types[index] if index < len(types) else None)
            for index, name in enumerate(names)
            if name.lower() not in DEFAULT_VIEW_COLUMNS
        ]

    def ref_of(self, values: Sequence[Optional[str]], *, row: int) -> Optional[EntityRef]:
        """The row's entity (None for an empty id cell), at the version it pins: its version column's, else one
        written into the id (``syn1.2``), else none."""
        value = values[self.id]
        if value is None or not value.strip():
            return None
        entity_id, version = _entity_ref(value, row=row)
        pinned = values[self.version] if self.version is not None else None
        if self.version is not None and pinned is not None:
            version = _whole_number(pinned, column=self.names[self.version], row=row)
        return EntityRef(entity_id, version)

    def file_facts(self, values: Sequence[Optional[str]], row_version: Optional[int]) -> Optional[FileVersionFacts]:
        """What the row says of its file at ``row_version`` (the RowSet row's), when it says all a download needs:
        the handle's id, MD5 and size, in the platform's storage as far as the row tells."""
        if self.handle is None or row_version is None:
            return None
        handle_id, md5, size = (values[index] for index in self.handle)
        if not handle_id or not md5 or not size:
            return None
        parent = values[self.parent] if self.parent is not None else None
        try:  # as a bundle's handle is checked (models.py); a cell that is not one leaves the file to its bundle
            handle = FileHandle(
                id=wire_handle_id(handle_id, "dataFileHandleId", "a view row"),
                content_size=wire_whole_number(size, "dataFileSizeBytes", "a view row"),
                content_md5=wire_md5(md5, "dataFileMD5Hex", "a view row"),
            )
            # (a folder's id: --keep-paths asks for its path by it, the index records it)
            parent = wire_entity_id(parent, "parentId", "a view row") if parent else None
        except MalformedAnswerError:
            return None
        kind = values[self.concrete_type] if self.concrete_type is not None else None
        if kind and kind not in STORAGE_HANDLES:
            return None  # an external URL may be one synclient does not fetch: its bundle says which
        annotations = {
            name: annotation
            for index, name, column_type in self.annotations
            if (annotation := _annotation(values[index], column_type)) is not None
        }
        modified = values[self.modified] if self.modified is not None else None
        return FileVersionFacts(handle, row_version, parent, annotations, from_row=True, modified_on=modified)


def _entity_ref(value: str, *, row: int) -> Tuple[str, Optional[int]]:
    """An id cell: ``syn123``, ``syn123.4`` or a bare number (a column of type ENTITYID may hold either)."""
    text = value.strip()
    try:
        return parse_entity_id(f"syn{text}" if _DIGITS.fullmatch(text) else text)
    except ConfigError:
        raise ConfigError(f"row {row} of the query: {value!r} in its 'id' column is not a platform id") from None


def _whole_number(value: str, *, column: str, row: int) -> int:
    if not _DIGITS.fullmatch(value.strip()):
        raise ConfigError(f"row {row} of the query: {value!r} in its {column!r} column is not a version number")
    return int(value)


def _annotation(cell: Optional[str], column_type: Optional[str]) -> Optional[dict]:
    """A view cell as an annotation (Annotations v2: ``{"type": ..., "value": [...]}``), None when empty."""
    if cell is None or cell == "":
        return None
    base = (column_type or "STRING").upper()
    values = [cell]
    if base.endswith("_LIST"):
        base = base[: -len("_LIST")]
        try:
            parsed = json.loads(cell)
        except ValueError:
            parsed = None
        values = [str(item) for item in parsed] if isinstance(parsed, list) else [cell]
        if not values:
            return None
    return {"type": _ANNOTATION_TYPES.get(base, "STRING"), "value": values}
