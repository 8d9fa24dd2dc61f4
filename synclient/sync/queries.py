"""Files selected by SQL over a file view or a table (``download_query``; the CLI's ``get --query``).

The query runs on the platform (every page of its asynchronous query jobs); its ``id`` column names the entities,
and a version column (``currentVersion`` or ``versionNumber``), when selected, pins each to that version. The
entities then go through :func:`~synclient.sync.sources.plan_sources` exactly as a list of ids does (one header call
per 1,000 ids, the same names, renamings and report).

A row of a **file view** that carries ``dataFileHandleId``, ``dataFileMD5Hex`` and ``dataFileSizeBytes`` describes
its file completely for a download: such a file skips its bundle call and goes straight to the URL batches (100
files per call), so the calls of a query that selects N files are its own polls + ceil(N/1000) + ceil(N/100), not
one per file. The row describes the entity version it was read at (the RowSet row's ``versionNumber``); views lag
behind edits, so the row is used only when that is the version being downloaded. Otherwise (another current
version, a table's row, a row without those columns) the file takes its bundle call.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from synclient.client import Platform
from synclient.errors import ConfigError
from synclient.models import EntityHeader, EntityType, FileHandle, QueryPage, parse_entity_id
from synclient.sync.id_lists import EntityRef
from synclient.sync.sources import KnownFile

#: the table or view a query reads: ``FROM syn123`` (as synapseclient finds it)
_FROM_TABLE = re.compile(r"\bfrom\s+(syn[0-9]+)(?:\.[0-9]+)?\b", re.IGNORECASE)
ID_COLUMN = "id"
VERSION_COLUMNS = ("currentVersion", "versionNumber")
#: the file view columns that describe a row's file handle completely (id, MD5, size)
HANDLE_COLUMNS = ("dataFileHandleId", "dataFileMD5Hex", "dataFileSizeBytes")
PARENT_COLUMN = "parentId"
#: the columns Synapse gives every file view (the others are its annotation columns)
DEFAULT_VIEW_COLUMNS = frozenset(name.lower() for name in (
    "id", "name", "createdOn", "createdBy", "etag", "type", "currentVersion", "parentId", "benefactorId",
    "projectId", "modifiedOn", "modifiedBy", "dataFileHandleId", "dataFileSizeBytes", "dataFileMD5Hex",
    "dataFileName", "dataFileConcreteType", "dataFileBucket", "dataFileKey", "path", "versionNumber"))
#: a view column's type -> the annotation type of its values (Annotations v2); a list column's cell is JSON
_ANNOTATION_TYPES = {"STRING": "STRING", "INTEGER": "LONG", "DOUBLE": "DOUBLE", "BOOLEAN": "BOOLEAN",
                     "DATE": "TIMESTAMP_MS", "ENTITYID": "STRING", "USERID": "STRING", "LINK": "STRING",
                     "LARGETEXT": "STRING", "MEDIUMTEXT": "STRING"}


def looks_like_sql(text: str) -> bool:
    """A command-line argument that is a query, not an id (``SELECT ... FROM syn123``)."""
    return re.match(r"\s*select\s", text, re.IGNORECASE) is not None


def table_of(sql: str) -> str:
    """The id of the table or view ``sql`` reads (a usage error when it names none)."""
    match = _FROM_TABLE.search(sql)
    if match is None:
        raise ConfigError("a query reads one table or file view by its id: SELECT id FROM syn123 WHERE ...")
    return "syn" + match.group(1)[3:]


@dataclass(frozen=True)
class RowFile:
    """What a file view's row says of its file at the version it was read at: enough to download it without a
    bundle call."""

    version: int
    handle: FileHandle
    parent_id: Optional[str]


@dataclass
class QuerySelection:
    """The entities a query selected, in row order, and what its rows say of their files."""

    sql: str
    table_id: str
    rows: int = 0
    refs: List[EntityRef] = field(default_factory=list)
    rows_without_id: int = 0
    row_files: Dict[str, RowFile] = field(default_factory=dict)  # entity id -> what its row says of its file

    def known_files(self, headers: Iterable[EntityHeader]) -> Dict[Tuple[str, Optional[int]], KnownFile]:
        """The files of ``headers`` (each at the version it is fetched at) whose row describes that version: only
        a file view's rows may be given here (a table's row versions are the table's)."""
        known = {}
        for header in headers:
            row_file = self.row_files.get(header.id)
            if row_file is not None and row_file.version == header.version_number:
                known[header.id, header.version_number] = KnownFile(row_file.handle, row_file.version,
                                                                    row_file.parent_id)
        return known


def select(platform: Platform, sql: str, *, table_id: str) -> QuerySelection:
    """Run ``sql`` on the table or view ``table_id`` (every page) and read the entities its rows select."""
    selection = QuerySelection(sql=sql, table_id=table_id)
    for page in platform.query_table(table_id, sql):
        _read_page(page, selection)
    return selection


def _read_page(page: QueryPage, selection: QuerySelection) -> None:
    columns = _Columns(page.columns)
    for row in page.rows:
        selection.rows += 1
        value = row.values[columns.id]
        if value is None or not value.strip():
            selection.rows_without_id += 1
            continue
        entity_id, version = _entity_ref(value, row=selection.rows)
        if columns.version is not None and row.values[columns.version] is not None:
            version = _whole_number(row.values[columns.version], column=page.columns[columns.version],
                                    row=selection.rows)
        selection.refs.append(EntityRef(entity_id, version))
        if columns.handle is not None and row.version is not None:
            handle = columns.handle_of(row.values)
            if handle is not None:
                parent = row.values[columns.parent] if columns.parent is not None else None
                selection.row_files[entity_id] = RowFile(row.version, handle, parent)


class _Columns:
    """Where a page's columns of interest are (names as Synapse's file views have them; case ignored)."""

    def __init__(self, names: Sequence[str]) -> None:
        where = {name.lower(): index for index, name in enumerate(names)}
        if ID_COLUMN not in where:
            shown = ", ".join(names) or "none"
            raise ConfigError(f"the query selects no 'id' column (its columns: {shown}): select the entity ids, "
                              "e.g. SELECT id, name FROM syn123 ...")
        self.id = where[ID_COLUMN]
        self.version = next((where[name.lower()] for name in VERSION_COLUMNS if name.lower() in where), None)
        self.parent = where.get(PARENT_COLUMN.lower())
        handle = [where.get(name.lower()) for name in HANDLE_COLUMNS]
        self.handle: Optional[Tuple[int, int, int]] = (
            (handle[0], handle[1], handle[2]) if None not in handle else None)

    def handle_of(self, values: Sequence[Optional[str]]) -> Optional[FileHandle]:
        """The row's file handle, when its id, MD5 and size are all there."""
        assert self.handle is not None
        handle_id, md5, size = (values[index] for index in self.handle)
        if not handle_id or not md5 or not size or not size.isdigit() or not handle_id.isdigit():
            return None
        return FileHandle(id=handle_id, content_size=int(size), content_md5=md5)


def _entity_ref(value: str, *, row: int) -> Tuple[str, Optional[int]]:
    """An id cell: ``syn123``, ``syn123.4`` or a bare number (a column of type ENTITYID may hold either)."""
    text = value.strip()
    try:
        return parse_entity_id(f"syn{text}" if text.isdigit() else text)
    except ConfigError:
        raise ConfigError(f"row {row} of the query: {value!r} in its 'id' column is not a platform id") from None


def _whole_number(value: str, *, column: str, row: int) -> int:
    if not value.strip().isdigit():
        raise ConfigError(f"row {row} of the query: {value!r} in its {column!r} column is not a version number")
    return int(value)


def files_of_view(platform: Platform, view: EntityHeader) -> Dict[Tuple[str, Optional[int]], KnownFile]:
    """What a file view's rows (``SELECT *``) say of its files, keyed by (id, the version each row describes),
    annotations from its annotation columns: a sync with ``view=`` takes a file from here, not from its bundle,
    when its listing shows that same version (a row of a view that lags behind an edit does not match)."""
    if view.type is not EntityType.ENTITY_VIEW:
        raise ConfigError(f"{view.id} is a {view.type.label}, not a file view: --view takes a file view")
    known: Dict[Tuple[str, Optional[int]], KnownFile] = {}
    for page in platform.query_table(view.id, f"SELECT * FROM {view.id}"):
        columns = _Columns(page.columns)
        if columns.handle is None:
            raise ConfigError(f"the file view {view.id} has no {', '.join(HANDLE_COLUMNS)} columns: it cannot "
                              "stand in for the files' bundles")
        annotation_columns = [(index, name, page.column_types[index] if page.column_types else None)
                              for index, name in enumerate(page.columns) if name.lower() not in DEFAULT_VIEW_COLUMNS]
        for number, row in enumerate(page.rows, start=1):
            value = row.values[columns.id]
            handle = columns.handle_of(row.values)
            if value is None or handle is None or row.version is None:
                continue
            entity_id, _ = _entity_ref(value, row=number)
            parent = row.values[columns.parent] if columns.parent is not None else None
            annotations = {name: annotation for index, name, column_type in annotation_columns
                           if (annotation := _annotation(row.values[index], column_type)) is not None}
            known[entity_id, row.version] = KnownFile(handle, row.version, parent, annotations)
    return known


def _annotation(cell: Optional[str], column_type: Optional[str]) -> Optional[dict]:
    """A view cell as an annotation (Annotations v2: ``{"type": ..., "value": [...]}``), None when empty."""
    if cell is None or cell == "":
        return None
    base = (column_type or "STRING").upper()
    values = [cell]
    if base.endswith("_LIST"):
        base = base[:-len("_LIST")]
        try:
            parsed = json.loads(cell)
        except ValueError:
            parsed = None
        values = [str(item) for item in parsed] if isinstance(parsed, list) else [cell]
        if not values:
            return None
    return {"type": _ANNOTATION_TYPES.get(base, "STRING"), "value": values}
