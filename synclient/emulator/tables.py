"""Entity views and tables: their columns, their rows, and the table query service behind the async job routes.

A view's rows are computed from the store (every file below its scope containers, with its annotations); a table's
rows are stored. A query runs in a fresh in-memory SQLite database holding just that table's rows, with a statement
that ``sql.py`` built from the validated query (never from the client's text).

Views are live by default: a query sees the store as it is. With the ``view_lag`` knob on, a view answers from its
snapshot instead, taken when it was seeded and again by ``refresh_views`` (Synapse's views are eventually
consistent: a view's row can say version 1 while the file is at version 2).
"""

from __future__ import annotations

import datetime
import io
import itertools
import json
import sqlite3
import threading
import uuid
from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import sql as sqlmod
from .store import DenyMode, Entity, EntityKind, Store, now_iso, parse_syn_id
from .wire import BUCKET, EXTERNAL_FILE_HANDLE, S3_FILE_HANDLE, data_key

#: viewTypeMask bit of files (the only kind of entity the emulator's views show)
VIEW_TYPE_FILE = 1
#: Synapse's default STRING size when a column model gives none
DEFAULT_STRING_SIZE = 50
COLUMN_TYPES = (
    "STRING",
    "INTEGER",
    "DOUBLE",
    "BOOLEAN",
    "DATE",
    "ENTITYID",
    "FILEHANDLEID",
    "USERID",
    "LARGETEXT",
    "LINK",
)
#: Synapse's list column types (ColumnType.json): a cell is the JSON array of its values, as a RowSet writes it
#: (``["a", "b"]``); the emulator's queries select them but compare them as text
LIST_TYPES = ("STRING_LIST", "INTEGER_LIST", "BOOLEAN_LIST", "DATE_LIST", "ENTITYID_LIST", "USERID_LIST")
_SIZED_TYPES = ("STRING", "LINK")
_INTEGER_TYPES = ("INTEGER", "DATE", "FILEHANDLEID", "USERID")
#: Synapse's default columns of a file view (``ObjectField``, in ``FILE_DEFAULT_COLUMNS`` order): name, type,
#: maximumSize, facetType
DEFAULT_FILE_VIEW_COLUMNS: Tuple[Tuple[str, str, Optional[int], Optional[str]], ...] = (
    ("id", "ENTITYID", None, None),
    ("name", "STRING", 256, None),
    ("createdOn", "DATE", None, "range"),
    ("createdBy", "USERID", None, "enumeration"),
    ("etag", "STRING", 36, None),
    ("type", "STRING", 20, "enumeration"),
    ("currentVersion", "INTEGER", None, None),
    ("parentId", "ENTITYID", None, "enumeration"),
    ("benefactorId", "ENTITYID", None, None),
    ("projectId", "ENTITYID", None, "enumeration"),
    ("modifiedOn", "DATE", None, "range"),
    ("modifiedBy", "USERID", None, "enumeration"),
    ("dataFileHandleId", "FILEHANDLEID", None, None),
    ("dataFileSizeBytes", "INTEGER", None, None),
    ("dataFileMD5Hex", "STRING", 100, None),
)
DEFAULT_COLUMN_NAMES = tuple(column[0] for column in DEFAULT_FILE_VIEW_COLUMNS)


def column_model(
    name: str, column_type: str, maximum_size: Optional[int] = None, facet_type: Optional[str] = None
) -> Dict[str, Any]:
    """A ColumnModel without its id (the store gives ids). ColumnModel has no ``concreteType``: its interface
    (lib-auto-generated .../repo/model/table/ColumnModelInterface.json) declares none."""
    if column_type not in COLUMN_TYPES:
        raise ValueError(f"column type must be one of {', '.join(COLUMN_TYPES)}, got {column_type!r}")
    model: Dict[str, Any] = {"name": name, "columnType": column_type}
    if column_type in _SIZED_TYPES:
        model["maximumSize"] = maximum_size or DEFAULT_STRING_SIZE
    if facet_type:
        model["facetType"] = facet_type
    return model


@dataclass(frozen=True)
class Column:
    id: int
    name: str
    type: str

    def select_column(self) -> Dict[str, Any]:
        return {"name": self.name, "columnType": self.type, "id": str(self.id)}


def _schema_model(store: Store, column_id: int) -> Dict[str, Any]:
    """The ColumnModel of a column in a table's schema (stored before the schema names it)."""
    model = store.column_model(column_id)
    if model is None:
        raise KeyError(f"column model {column_id} of a schema is not in the store")
    return model


def columns_of(store: Store, entity_id: int) -> List[Column]:
    column_ids, _scope, _mask = store.table_schema(entity_id)
    found = []
    for column_id in column_ids:
        model = _schema_model(store, column_id)
        found.append(Column(column_id, str(model["name"]), str(model["columnType"])))
    return found


def column_models_of(store: Store, entity_id: int) -> List[Dict[str, Any]]:
    column_ids, _scope, _mask = store.table_schema(entity_id)
    return [_schema_model(store, column_id) for column_id in column_ids]


# --- values ---------------------------------------------------------------------------------------
def epoch_ms(iso: str) -> int:
    """``2024-01-02T03:04:05.678Z`` -> milliseconds since the epoch (Synapse's DATE values)."""
    parsed = datetime.datetime.strptime(iso.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z")
    return int(parsed.timestamp() * 1000)


def to_cell(value: Any, column_type: str) -> object:  # (a JSON value, a query literal)
    """A value given in a spec, an annotation or a query literal -> what the row table stores for that type
    (ints for ids, dates, users, handles; 0/1 for booleans). ValueError when it is not one."""
    if value is None:
        return None
    if column_type in ("STRING", "LARGETEXT", "LINK"):
        return str(value).lower() if isinstance(value, bool) else str(value)
    if column_type == "ENTITYID":
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ValueError(f"not an ENTITYID: {value!r}")
        return parse_syn_id(int(value) if isinstance(value, float) else value)
    if column_type == "BOOLEAN":
        if isinstance(value, bool):
            return int(value)
        if str(value).lower() in ("true", "false"):
            return int(str(value).lower() == "true")
        raise ValueError(f"not a BOOLEAN: {value!r}")
    if column_type == "DOUBLE":
        if isinstance(value, bool):
            raise ValueError(f"not a DOUBLE: {value!r}")
        return float(value)
    if isinstance(value, bool):
        raise ValueError(f"not an {column_type}: {value!r}")
    if column_type == "DATE" and isinstance(value, str) and not value.lstrip("-").isdigit():
        try:
            return epoch_ms(value if "." in value else value.replace("Z", ".000Z"))
        except ValueError:
            raise ValueError(f"not a DATE (epoch milliseconds or ISO 8601 UTC): {value!r}") from None
    if isinstance(value, float) and not value.is_integer():
        raise ValueError(f"not an {column_type}: {value!r}")
    return int(value)


def wire_value(cell: Any, column_type: str) -> Optional[str]:  # (a stored cell)
    """A stored cell as Synapse writes it in a RowSet or a CSV: a string, or None."""
    if cell is None:
        return None
    if column_type == "ENTITYID":
        return f"syn{cell}"
    if column_type == "BOOLEAN":
        return "true" if cell else "false"
    if column_type == "DOUBLE":
        return repr(float(cell))
    return str(cell)


def list_cell(values: Optional[Sequence[Any]], column_type: str) -> Optional[str]:
    """An annotation's values in a list column: the JSON array Synapse writes for them (strings for STRING_LIST and
    ENTITYID_LIST, numbers for INTEGER_LIST, DATE_LIST and USERID_LIST, booleans for BOOLEAN_LIST); None when there
    are none or one does not fit the type."""
    if not values:
        return None
    item_type = column_type[: -len("_LIST")]
    try:
        items = [to_cell(value, item_type) for value in values]
    except (TypeError, ValueError):
        return None
    if item_type == "ENTITYID":
        items = [f"syn{item}" for item in items]
    elif item_type == "BOOLEAN":
        items = [bool(item) for item in items]
    return json.dumps(items, separators=(",", ":"))


# --- rows -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TableRow:
    row_id: int
    version: int
    etag: Optional[str]
    cells: Tuple[object, ...]
    #: a view row: the file's size, for sumFileSizes
    file_size: int = 0


def _file_cells(
    store: Store, entity: Entity, columns: Sequence[Column], annotations: Optional[Dict[str, Any]] = None
) -> Tuple[Tuple[object, ...], int]:
    """A file's cells in a view's columns; ``annotations``: the ones to show (default: the store's)."""
    handle = store.file_handle(entity.file_handle_id) if entity.file_handle_id else None
    size = handle.size if handle is not None and handle.records_size else None
    fixed = {
        "id": entity.id,
        "name": entity.name,
        "createdOn": epoch_ms(entity.created_on),
        "createdBy": entity.created_by,
        "etag": entity.etag,
        "type": EntityKind.FILE.value,
        "currentVersion": entity.current_version,
        "parentId": entity.parent_id,
        "benefactorId": store.benefactor_id(entity),
        "projectId": entity.project_id,
        "modifiedOn": epoch_ms(entity.modified_on),
        "modifiedBy": entity.modified_by,
        "dataFileHandleId": entity.file_handle_id,
        "dataFileSizeBytes": size,
        "dataFileMD5Hex": handle.md5 if handle is not None and handle.records_md5 else None,
        # the other file fields a view may have as columns (ObjectField; not among the defaults)
        "dataFileConcreteType": (
            None if handle is None else EXTERNAL_FILE_HANDLE if handle.storage.is_external else S3_FILE_HANDLE
        ),
        "dataFileName": handle.file_name if handle is not None else None,
        "dataFileBucket": BUCKET if handle is not None and not handle.storage.is_external else None,
        "dataFileKey": data_key(handle) if handle is not None and not handle.storage.is_external else None,
    }
    if annotations is None:
        annotations = store.annotations(entity.id)
    cells: List[object] = []
    for column in columns:
        if column.name in fixed:
            cells.append(fixed[column.name])
            continue
        if column.type in LIST_TYPES:
            cells.append(list_cell(annotations.get(column.name), column.type))
            continue
        values = annotations.get(column.name) or [None]
        try:
            cells.append(to_cell(values[0], column.type))
        except (TypeError, ValueError):
            cells.append(None)  # an annotation of another type: no value in this column
    return tuple(cells), size or 0


def live_view_rows(store: Store, view_id: int) -> List[TableRow]:
    """A file view's rows now: every readable file below its scope, by id (none when its viewTypeMask has no file
    bit: the emulator's views show files only)."""
    _columns, scope_ids, mask = store.table_schema(view_id)
    columns = columns_of(store, view_id)
    rows = []
    shows_files = mask is None or bool(mask & VIEW_TYPE_FILE)
    for entity in store.files_below(scope_ids or []) if shows_files else []:
        if store.effective_deny(entity) is DenyMode.READ:
            continue  # a view shows only the rows the caller may read
        cells, size = _file_cells(store, entity, columns)
        rows.append(TableRow(entity.id, entity.current_version, entity.etag, cells, size))
    return rows


def refresh_view(store: Store, view_id: int) -> None:
    """Take a view's snapshot: what it answers while ``view_lag`` is on."""
    rows = [
        [row.row_id, row.version, row.etag, list(row.cells), row.file_size] for row in live_view_rows(store, view_id)
    ]
    store.set_view_snapshot(view_id, {"takenOn": now_iso(), "rows": rows})


def table_rows(store: Store, entity: Entity, lag: bool) -> Tuple[List[TableRow], str]:
    """(rows, lastUpdatedOn) of a view (live, or its snapshot when lagging) or a table."""
    if entity.kind is EntityKind.TABLE:
        return [
            TableRow(row_id, version, None, tuple(cells)) for row_id, version, cells in store.table_rows(entity.id)
        ], entity.modified_on
    snapshot = store.view_snapshot(entity.id) if lag else None
    if snapshot is None:
        return live_view_rows(store, entity.id), now_iso()
    return [TableRow(r[0], r[1], r[2], tuple(r[3]), r[4]) for r in snapshot["rows"]], snapshot["takenOn"]


# --- running a query ------------------------------------------------------------------------------
#: text columns compare without case, as Synapse's MySQL tables do (their collation is case-insensitive); NOCASE
#: folds ASCII only, where MySQL's collation also folds accents: the one difference left (docs/emulator.md)
_AFFINITY = {
    **{list_type: "TEXT" for list_type in LIST_TYPES},
    "DOUBLE": "REAL",
    "STRING": "TEXT COLLATE NOCASE",
    "LARGETEXT": "TEXT COLLATE NOCASE",
    "LINK": "TEXT COLLATE NOCASE",
}


@dataclass
class QueryOutcome:
    """The rows a query selected, before paging."""

    headers: List[Dict[str, Any]]
    column_types: List[str]
    #: (row id, version, etag, cells); row id and version are None for COUNT / DISTINCT rows
    rows: List[Tuple[Optional[int], Optional[int], Optional[str], Tuple[object, ...]]]
    aggregate: bool
    file_sizes: int
    last_updated_on: str
    #: the FacetColumnResults of the table's faceted columns (run_query's ``facets``)
    facets: List[Dict[str, Any]] = field(default_factory=list)


def run_query(store: Store, entity: Entity, query_sql: str, lag: bool, facets: bool = False) -> QueryOutcome:
    """Validate and run a query of ``entity`` (whose id the query must name); QueryError says what is wrong.
    With ``facets``, also the facet results of the table's faceted columns over the rows the query's WHERE keeps
    (see ``facet_results``)."""
    columns = columns_of(store, entity.id)
    names = [column.name for column in columns]
    query = sqlmod.parse(query_sql, names)
    if query.table_id != entity.id:
        raise sqlmod.QueryError(
            f"The query's FROM syn{query.table_id} does not match the entity of the request (syn{entity.id})."
        )
    types = {column.name: column.type for column in columns}

    def convert(name: str, literal: object) -> object:
        try:
            return to_cell(literal, types[name])
        except (TypeError, ValueError):
            raise sqlmod.QueryError(
                f"{literal!r} is not a valid value for column '{name}' of type {types[name]}."
            ) from None

    statement, params, selected = sqlmod.build(query, names, convert)
    rows, last_updated_on = table_rows(store, entity, lag)
    database = sqlite3.connect(":memory:")
    try:
        definitions = ", ".join(f"c{i} {_AFFINITY.get(column.type, 'INTEGER')}" for i, column in enumerate(columns))
        database.execute(
            f"CREATE TABLE {sqlmod.ROW_TABLE} (row_id INTEGER, row_version INTEGER, row_etag TEXT, "
            f"file_size INTEGER{', ' + definitions if definitions else ''})"
        )
        marks = ", ".join("?" * (4 + len(columns)))
        database.executemany(
            f"INSERT INTO {sqlmod.ROW_TABLE} VALUES ({marks})",
            [(row.row_id, row.version, row.etag, row.file_size) + tuple(row.cells) for row in rows],
        )
        found = database.execute(statement, params).fetchall()
        sizes = {row.row_id: row.file_size for row in rows}
        facet_cells: List[Tuple[object, ...]] = []
        if facets:  # the facet queries keep the query's FROM and WHERE only (FacetTransformerValueCounts/Range)
            where_only = replace(
                query, columns=[], star=True, count=False, distinct=False, order=[], limit=None, offset=None
            )
            where_statement, where_params, _all = sqlmod.build(where_only, names, convert)
            facet_cells = [tuple(r[3:]) for r in database.execute(where_statement, where_params).fetchall()]
    finally:
        database.close()
    if query.count:
        headers = [{"name": "COUNT(*)", "columnType": "INTEGER"}]
        column_types = ["INTEGER"]
    else:
        headers = [columns[i].select_column() for i in selected]
        column_types = [columns[i].type for i in selected]
    result = [(r[0], r[1], r[2], tuple(r[3:])) for r in found]
    total = sum(sizes.get(r[0], 0) for r in result) if not query.is_aggregate else 0
    facet_list = facet_results(store, columns, facet_cells) if facets else []
    return QueryOutcome(headers, column_types, result, query.is_aggregate, total, last_updated_on, facet_list)


# --- facets ---------------------------------------------------------------------------------------
# services/repository-managers/.../repo/manager/table/FacetModel.java: one result per faceted column of the
# table's schema, in schema order (whatever the query selects); FacetTransformerValueCounts.java and
# FacetTransformerRange.java: the SQL each runs (the query's FROM and WHERE, without its own ORDER BY, LIMIT, OFFSET)
# and how its rows become a FacetColumnResult (lib-auto-generated .../repo/model/table/FacetColumnResult*.json).
FACET_VALUES = "org.sagebionetworks.repo.model.table.FacetColumnResultValues"
FACET_RANGE = "org.sagebionetworks.repo.model.table.FacetColumnResultRange"
#: FacetTransformerValueCounts.MAX_NUM_FACET_CATEGORIES
MAX_FACET_VALUES = 100
#: the value of a facet count of rows without a value (TableConstants.NULL_VALUE_KEYWORD)
NULL_FACET_VALUE = "org.sagebionetworks.UNDEFINED_NULL_NOTSET"


def _order_key(cell: object) -> Tuple[int, object]:
    """MySQL's ascending order of a cell: NULL first; numbers by value; text case-insensitively (the index's
    utf8 general_ci collation, ColumnTypeInfo), the exact text breaking ties."""
    if cell is None:
        return (0, 0)
    if isinstance(cell, str):
        return (1, (cell.casefold(), cell))
    return (1, cell)


def _value_counts(name: str, column_type: str, cells: Sequence[object]) -> Dict[str, Any]:
    """``SELECT col AS value, COUNT(*) AS frequency ... GROUP BY col ORDER BY frequency DESC, value ASC LIMIT 100``;
    a NULL value is NULL_FACET_VALUE; nothing is selected (the emulator takes no selectedFacets)."""
    counts: Dict[object, int] = {}
    shown: Dict[object, object] = {}  # a group's value as its first row writes it, as MySQL shows a folded group
    for cell in cells:
        group = cell.casefold() if isinstance(cell, str) else cell  # general_ci: values apart only in case are one
        shown.setdefault(group, cell)
        counts[group] = counts.get(group, 0) + 1
    ranked = sorted(
        ((shown[group], count) for group, count in counts.items()), key=lambda item: (-item[1], _order_key(item[0]))
    )[:MAX_FACET_VALUES]
    values = []
    for cell, count in ranked:
        value = wire_value(cell, column_type)
        values.append({"value": NULL_FACET_VALUE if value is None else value, "count": count, "isSelected": False})
    return {"concreteType": FACET_VALUES, "columnName": name, "facetType": "enumeration", "facetValues": values}


def _range(name: str, column_type: str, cells: Sequence[object]) -> Dict[str, Any]:
    """``SELECT MIN(col), MAX(col) ...``: columnMin/columnMax as strings, absent (SQL NULL, never written) when no
    row has a value; selectedMin/selectedMax only for a selected range (never here)."""
    present = [cell for cell in cells if cell is not None]
    result: Dict[str, Any] = {"concreteType": FACET_RANGE, "columnName": name, "facetType": "range"}
    if present:
        result["columnMin"] = wire_value(min(present, key=_order_key), column_type)
        result["columnMax"] = wire_value(max(present, key=_order_key), column_type)
    return result


def facet_results(store: Store, columns: Sequence[Column], cells: Sequence[Tuple[object, ...]]) -> List[Dict[str, Any]]:
    """The FacetColumnResults of the faceted columns among ``columns`` over rows of ``cells`` (every column's)."""
    results = []
    for index, column in enumerate(columns):
        facet_type = _schema_model(store, column.id).get("facetType")
        column_cells = [row[index] for row in cells]
        if facet_type == "enumeration":
            results.append(_value_counts(column.name, column.type, column_cells))
        elif facet_type == "range":
            results.append(_range(column.name, column.type, column_cells))
    return results


def row_json(row, column_types: Sequence[str], include_etag: bool) -> Dict[str, Any]:
    row_id, version, etag, cells = row
    body: Dict[str, Any] = {}
    if row_id is not None:
        body["rowId"] = row_id
        body["versionNumber"] = version
        if include_etag and etag is not None:
            body["etag"] = etag
    body["values"] = [wire_value(cell, kind) for cell, kind in zip(cells, column_types)]
    return body


def csv_bytes(
    outcome: QueryOutcome, descriptor: Dict[str, Any], write_header: bool, row_id_and_version: bool, include_etag: bool
) -> bytes:
    """The CSV Synapse writes for a DownloadFromTableRequest: every field quoted (opencsv's default), nulls as empty
    fields, ROW_ID, ROW_VERSION (and ROW_ETAG for a view with includeEntityEtag) first unless aggregate."""
    separator = str(descriptor.get("separator") or ",")
    quote = str(descriptor.get("quoteCharacter") or '"')
    escape = str(descriptor.get("escapeCharacter") or "\\")
    line_end = str(descriptor.get("lineEnd") or "\n")
    with_ids = row_id_and_version and not outcome.aggregate
    with_etag = with_ids and include_etag and any(row[2] is not None for row in outcome.rows)

    def field(value: Optional[str]) -> str:
        if value is None:
            return ""
        escaped = value.replace(escape, escape + escape) if escape != quote else value
        return quote + escaped.replace(quote, escape + quote) + quote

    out = io.StringIO()
    if write_header:
        names = (["ROW_ID", "ROW_VERSION"] if with_ids else []) + (["ROW_ETAG"] if with_etag else [])
        names += [str(header["name"]) for header in outcome.headers]
        out.write(separator.join(field(name) for name in names) + line_end)
    for row in outcome.rows:
        values = [wire_value(cell, kind) for cell, kind in zip(row[3], outcome.column_types)]
        prefix = ([str(row[0]), str(row[1])] if with_ids else []) + ([row[2]] if with_etag else [])
        out.write(separator.join(field(value) for value in prefix + values) + line_end)
    return out.getvalue().encode("utf-8")


# --- async jobs -----------------------------------------------------------------------------------
class JobNotReady(Exception):
    """A job cannot run yet (a view still building: Synapse's TableUnavailableException, which its worker retries):
    the GET answers 202 with the job PROCESSING and the job runs again at the next GET."""


@dataclass
class Job:
    id: str
    kind: str  # "query", "nextPage" or "csv": the route family that may fetch it
    entity_id: int
    request: Dict[str, Any]
    started_on: str
    user_id: int
    polls_left: int
    #: the status's etag (``AsynchJobStatusDAOImpl.startJob``: a random UUID)
    etag: str = field(default_factory=lambda: str(uuid.uuid4()))
    #: (status, body) once the job ran: the same answer for every later GET
    outcome: Optional[Tuple[int, Dict[str, Any]]] = None
    #: held while the job runs (other jobs' polls do not wait for it)
    running: threading.Lock = field(default_factory=threading.Lock)


class AsyncJobs:
    """The emulator's asynchronous jobs: a job answers 202 for ``query_pending_polls`` GETs, then its outcome.

    Counted per job, never timed: the n-th GET of a job gets the same answer in every run."""

    FIRST_JOB_ID = 9000001

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: Dict[str, Job] = {}
        self._ids = itertools.count(self.FIRST_JOB_ID)

    def start(self, kind: str, entity_id: int, request: Dict[str, Any], user_id: int, polls: int) -> Job:
        with self._lock:
            job = Job(str(next(self._ids)), kind, entity_id, request, now_iso(), user_id, max(0, polls))
            self._jobs[job.id] = job
            return job

    def poll(self, token: str, kind: str, run) -> Tuple[int, Dict[str, Any]]:
        """(status, body) of one GET of the job: 202 + its status while pending, then ``run(job)``'s outcome.
        KeyError for a token that names no job of that kind."""
        with self._lock:
            job = self._jobs.get(token)
            if job is None or job.kind != kind:
                raise KeyError(token)
            if job.polls_left > 0:
                job.polls_left -= 1
                return 202, job_status(job)
        with job.running:
            if job.outcome is None:
                try:
                    job.outcome = run(job)
                except JobNotReady:
                    return 202, job_status(job)
            return job.outcome


def job_status(job: Job) -> Dict[str, Any]:
    """An AsynchronousJobStatus of a job still PROCESSING (lib-auto-generated .../repo/model/asynch/
    AsynchronousJobStatus.json; what ``AsynchJobStatusDAOImpl.startJob`` sets, plus the progress a worker reports).
    ``requestBody`` is the request as the job stored it: the routes keep only its model's fields."""
    return {
        "jobState": "PROCESSING",
        "jobCanceling": False,
        "requestBody": job.request,
        "etag": job.etag,
        "jobId": job.id,
        "startedByUserId": job.user_id,
        "startedOn": job.started_on,
        "changedOn": now_iso(),
        "progressMessage": "Processing the query.",
        "progressCurrent": 0,
        "progressTotal": 100,
        "runtimeMS": 0,
    }


def table_download_failure(store: Store, handle_id: int, object_ref) -> Optional[str]:
    """None when a handle may be downloaded through a table or view (the TableEntity association): a CSV its query
    made, or a handle in one of a table's FILEHANDLEID cells. Else ``"UNAUTHORIZED"``."""
    try:
        entity = store.entity(parse_syn_id(object_ref))
    except ValueError:
        return "UNAUTHORIZED"
    if entity is None or not entity.kind.is_queryable or store.effective_deny(entity) is not DenyMode.NONE:
        return "UNAUTHORIZED"
    if store.result_handle_table(handle_id) == entity.id:
        return None
    if entity.kind is EntityKind.TABLE:
        handle_columns = [i for i, column in enumerate(columns_of(store, entity.id)) if column.type == "FILEHANDLEID"]
        for _row_id, _version, cells in store.table_rows(entity.id):
            if any(cells[i] == handle_id for i in handle_columns):
                return None
    return "UNAUTHORIZED"
