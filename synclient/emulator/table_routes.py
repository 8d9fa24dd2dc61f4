"""The table routes: column models and the table query service (query, next page, CSV download) as Synapse's
asynchronous jobs. ``POST .../async/start`` answers 201 ``{"token": jobId}``; ``GET .../async/get/{token}``
answers 202 with the job's AsynchronousJobStatus for ``query_pending_polls`` GETs, then 201 with the job's response
(``TableController``: every ``.../async/get`` is ``@ResponseStatus(HttpStatus.CREATED)``; the 202 is
``BaseControllerExceptionHandlerAdvice``'s answer to ``NotReadyException``), or the error it failed with
(``AsynchJobUtils.throwExceptionIfFailed`` rethrows a failed job's exception: 400 for a bad query, 403, 404).
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any, Dict, Optional, Tuple, Type

from . import hostile, wire
from .routes import _ID, ApiError, Request, Response, Routes, _route
from .sql import QueryError
from .store import Entity, EntityKind, parse_syn_id
from .tables import AsyncJobs, Job, JobNotReady, QueryOutcome, column_models_of, csv_bytes, row_json, run_query

QUERY_BUNDLE_REQUEST = "org.sagebionetworks.repo.model.table.QueryBundleRequest"
QUERY_RESULT_BUNDLE = "org.sagebionetworks.repo.model.table.QueryResultBundle"
QUERY_RESULT = "org.sagebionetworks.repo.model.table.QueryResult"
QUERY_NEXT_PAGE_TOKEN = "org.sagebionetworks.repo.model.table.QueryNextPageToken"
ROW_SET = "org.sagebionetworks.repo.model.table.RowSet"
DOWNLOAD_REQUEST = "org.sagebionetworks.repo.model.table.DownloadFromTableRequest"
DOWNLOAD_RESULT = "org.sagebionetworks.repo.model.table.DownloadFromTableResult"

# QueryBundleRequest.partMask bits (Synapse's BUNDLE_MASK_*)
PART_RESULTS = 0x1
PART_COUNT = 0x2
PART_SELECT_COLUMNS = 0x4
PART_MAX_ROWS_PER_PAGE = 0x8
PART_COLUMN_MODELS = 0x10
PART_FACETS = 0x20
PART_SUM_FILE_SIZES = 0x40
PART_LAST_UPDATED_ON = 0x80
PART_COMBINED_SQL = 0x100
PART_ACTIONS_REQUIRED = 0x200
#: a request without a partMask gets every part but actionsRequired (QueryOptions.withMask: a null mask is -1 for
#: every other part, and returnActionsRequired only when a mask was given)
DEFAULT_PARTS = 0x3FF & ~PART_ACTIONS_REQUIRED


def jobs_of(routes: Routes) -> AsyncJobs:
    """The emulator's asynchronous jobs (table queries, CSV downloads, download-list requests)."""
    return routes.context.jobs


def _object(value, message: str) -> dict:
    if not isinstance(value, dict):
        raise ApiError(400, message)
    return value


# --- request models -------------------------------------------------------------------------------
# Synapse parses a job's request into its model class and stores that object re-serialized: concreteType set to
# the class when absent, then only the model's non-null fields (AsynchJobStatusUtils.createDBOFromDTO); the 202
# status echoes that, so a field the model lacks (synapseclient's ``query.isConsistent``: in no schema) is gone.
# Field -> JSON kind (a dict: a nested model), from lib-auto-generated .../repo/model/table/*.json.
_ModelFields = Dict[str, Any]
#: Query.json
_QUERY_FIELDS: _ModelFields = {
    "sql": str,
    "additionalFilters": list,
    "selectedFacets": list,
    "includeEntityEtag": bool,
    "selectFileColumn": int,
    "selectFileVersionColumn": int,
    "offset": int,
    "limit": int,
    "sort": list,
}
#: every AsynchronousRequestBody (its concreteType) that implements HasEntityId.json (entityId)
_REQUEST_FIELDS: _ModelFields = {"concreteType": str, "entityId": str}
#: QueryBundleRequest.json
_BUNDLE_REQUEST_FIELDS: _ModelFields = dict(_REQUEST_FIELDS, query=_QUERY_FIELDS, partMask=int)
#: QueryNextPageToken.json
_NEXT_PAGE_FIELDS: _ModelFields = dict(_REQUEST_FIELDS, token=str)
#: DownloadFromTableRequest.json (extends Query.json), its CsvTableDescriptor.json
_DOWNLOAD_REQUEST_FIELDS: _ModelFields = dict(
    _REQUEST_FIELDS,
    **_QUERY_FIELDS,
    writeHeader=bool,
    includeRowIdAndRowVersion=bool,
    fileName=str,
    csvTableDescriptor={
        "separator": str,
        "quoteCharacter": str,
        "escapeCharacter": str,
        "lineEnd": str,
        "isFirstLineHeader": bool,
    },
)
_KIND_NAMES: Dict[type, str] = {str: "a string", int: "an integer", bool: "a boolean", list: "an array"}


def _is_kind(value: object, kind: type) -> bool:
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def _model(value, fields: _ModelFields, what: str) -> Dict[str, Any]:
    """``value`` as its model keeps it: the fields ``fields`` names, without nulls; 400 for a field of another
    JSON type (Synapse cannot parse such a body either)."""
    body = _object(value, f"{what} must be a JSON object.")
    kept: Dict[str, Any] = {}
    for name, kind in fields.items():
        given = body.get(name)
        if given is None:
            continue
        if isinstance(kind, dict):
            kept[name] = _model(given, kind, f"{what}.{name}")
            continue
        if not _is_kind(given, kind):
            raise ApiError(400, f"{what}.{name} must be {_KIND_NAMES[kind]}.")
        kept[name] = given
    return kept


def request_model(value, concrete_type: str, fields: _ModelFields, what: str) -> Dict[str, Any]:
    """A job's request body as Synapse stores it (see above), with its ``concreteType``."""
    body = _model(value, fields, what)
    _check_type(body, concrete_type)
    return dict(body, concreteType=concrete_type)


def _check_type(body: dict, expected: str) -> None:
    given = body.get("concreteType")
    if given is not None and given != expected:
        raise ApiError(400, f"concreteType must be {expected}, got {given}.")


def _sql_of(value, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ApiError(400, f"{where} is required.")
    return value


def _start(routes: Routes, request: Request, kind: str, body: dict) -> Response:
    job = jobs_of(routes).start(
        kind, parse_syn_id(request.params[0]), body, request.caller.id, routes.context.knobs.query_pending_polls
    )
    return Response(status=201, body={"token": job.id})


def _get(routes: Routes, request: Request, kind: str, run) -> Response:
    return job_answer(routes, request.params[1], kind, run)


def job_answer(
    routes: Routes, token: str, kind: str, run, *, bad_request: Tuple[Type[Exception], ...] = (QueryError,)
) -> Response:
    """``.../async/get/{token}`` of any asynchronous job: 202 while it runs, then 201 and ``run(job)``'s answer, or
    the error a Synapse job fails with (an :class:`ApiError`'s status; 400 for the ``bad_request`` errors); 404 for
    a token no job has."""

    def outcome(job: Job) -> Tuple[int, Dict[str, Any]]:
        try:
            return 201, run(job)
        except ApiError as error:
            return error.status, wire.error_body(error.reason)
        except bad_request as error:
            return 400, wire.error_body(str(error))

    try:
        status, body = jobs_of(routes).poll(token, kind, outcome)
    except KeyError:
        raise ApiError(404, f"Asynchronous job {token} does not exist.") from None
    return Response(status=status, body=body)


def _queryable(routes: Routes, job: Job) -> Entity:
    entity = routes._entity(str(job.entity_id))
    if not entity.kind.is_queryable:
        raise ApiError(400, f"syn{entity.id} is a {entity.kind.value}, not a table or view the emulator can query.")
    return entity


def _run(routes: Routes, job: Job, sql_text: str, facets: bool = False) -> Tuple[Entity, QueryOutcome]:
    entity = _queryable(routes, job)
    if routes.context.view_builds.building(entity.id):
        raise JobNotReady(f"syn{entity.id} is still building")
    return entity, run_query(routes.store, entity, sql_text, routes.context.knobs.view_lag, facets)


# --- query and next page --------------------------------------------------------------------------
def _page_token(state: dict) -> Dict[str, Any]:
    """A QueryNextPageToken as Synapse makes one (``TableQueryUtils.createNextPageToken``): its concreteType and an
    opaque ``token``, no ``entityId`` (the next page's URL names the table)."""
    token = base64.urlsafe_b64encode(json.dumps(state, sort_keys=True).encode("utf-8")).decode("ascii")
    return {"concreteType": QUERY_NEXT_PAGE_TOKEN, "token": token}


def _query_result(
    routes: Routes, entity, outcome: QueryOutcome, state: dict, asked: Optional[str] = None
) -> Dict[str, Any]:
    """A QueryResult: one page of the rows (``state``: sql, offset, limit, includeEntityEtag) and, when the page is
    full, the token of the next page (which holds no rows when none remain, as on Synapse). Under hostile ``paging``
    for this table every page has a token: the one asked with (``asked``) again, or on the first page the honest next
    one or this page's own (hostile.py)."""
    offset, limit = state["offset"], state["limit"]
    window = outcome.rows[offset:] if limit is None else outcome.rows[offset : offset + limit]
    page_rows = routes.context.knobs.query_page_rows
    page = window[:page_rows]
    row_set = {
        "concreteType": ROW_SET,
        "tableId": f"syn{entity.id}",
        "etag": entity.etag,
        "headers": outcome.headers,
        "rows": [row_json(row, outcome.column_types, state["includeEntityEtag"]) for row in page],
    }
    result: Dict[str, Any] = {"concreteType": QUERY_RESULT, "queryResults": row_set}
    if len(page) == page_rows:  # a full page has a next page, maybe an empty one (TableQueryManagerImpl:
        # isRowCountEqualToMaxRowsPerPage decides; the rows beyond are not counted)
        result["nextPageToken"] = _page_token(
            dict(state, offset=offset + page_rows, limit=None if limit is None else limit - page_rows)
        )
    if hostile.chosen(routes.context.knobs, "paging", f"query:syn{entity.id}"):
        hostile.count("paging")
        if asked is not None:
            result["nextPageToken"] = dict(_page_token({}), token=asked)
        elif "nextPageToken" not in result:
            result["nextPageToken"] = _page_token(state)
    return result


def _query_state(query: dict) -> dict:
    for key in ("additionalFilters", "selectedFacets", "sort"):
        if query.get(key):
            raise ApiError(400, f"The emulator does not support {key} in a Query; write the condition in the sql.")
    state = {"sql": query["sql"], "includeEntityEtag": bool(query.get("includeEntityEtag"))}
    for key in ("offset", "limit"):
        value = query.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ApiError(400, f"Query.{key} must be a non-negative integer.")
        state[key] = value
    state["offset"] = state["offset"] or 0
    return state


def query_start(routes: Routes, request: Request) -> Response:
    body = request_model(request.json(), QUERY_BUNDLE_REQUEST, _BUNDLE_REQUEST_FIELDS, "QueryBundleRequest")
    query = _object(body.get("query"), "QueryBundleRequest.query is required.")
    _sql_of(query.get("sql"), "query.sql")
    return _start(routes, request, "query", body)


def query_get(routes: Routes, request: Request) -> Response:
    def run(job: Job) -> Dict[str, Any]:
        query = job.request["query"]
        state = _query_state(query)
        mask = job.request.get("partMask")
        mask = DEFAULT_PARTS if mask is None else mask
        entity, outcome = _run(routes, job, state["sql"], facets=bool(mask & PART_FACETS))
        bundle: Dict[str, Any] = {"concreteType": QUERY_RESULT_BUNDLE}
        if mask & PART_RESULTS:
            bundle["queryResult"] = _query_result(routes, entity, outcome, state)
        if mask & PART_COUNT:
            bundle["queryCount"] = len(outcome.rows)
        if mask & PART_SELECT_COLUMNS:
            bundle["selectColumns"] = outcome.headers
        if mask & PART_MAX_ROWS_PER_PAGE:
            bundle["maxRowsPerPage"] = routes.context.knobs.query_page_rows
        if mask & PART_COLUMN_MODELS:
            bundle["columnModels"] = column_models_of(routes.store, entity.id)
        if mask & PART_FACETS:
            bundle["facets"] = outcome.facets
        if mask & PART_SUM_FILE_SIZES:
            bundle["sumFileSizes"] = {"sumFileSizesBytes": outcome.file_sizes, "greaterThan": False}
        if mask & PART_LAST_UPDATED_ON:
            bundle["lastUpdatedOn"] = outcome.last_updated_on
        if mask & PART_COMBINED_SQL:
            bundle["combinedSql"] = state["sql"]
        if mask & PART_ACTIONS_REQUIRED:
            bundle["actionsRequired"] = []
        return bundle

    return _get(routes, request, "query", run)


def next_page_start(routes: Routes, request: Request) -> Response:
    body = request_model(request.json(), QUERY_NEXT_PAGE_TOKEN, _NEXT_PAGE_FIELDS, "QueryNextPageToken")
    if not body.get("token"):
        raise ApiError(400, "QueryNextPageToken.token is required.")
    return _start(routes, request, "nextPage", body)


def next_page_get(routes: Routes, request: Request) -> Response:
    def run(job: Job) -> Dict[str, Any]:
        try:
            state = json.loads(base64.urlsafe_b64decode(str(job.request["token"]).encode("ascii")))
            if not isinstance(state, dict) or not {"sql", "offset", "limit", "includeEntityEtag"} <= set(state):
                raise ValueError(state)
        except (ValueError, binascii.Error, UnicodeError):
            raise ApiError(400, "Invalid nextPageToken.") from None
        entity, outcome = _run(routes, job, state["sql"])
        return _query_result(routes, entity, outcome, state, asked=str(job.request["token"]))

    return _get(routes, request, "nextPage", run)


# --- CSV download ---------------------------------------------------------------------------------
def csv_start(routes: Routes, request: Request) -> Response:
    body = request_model(request.json(), DOWNLOAD_REQUEST, _DOWNLOAD_REQUEST_FIELDS, "DownloadFromTableRequest")
    _sql_of(body.get("sql"), "sql")
    return _start(routes, request, "csv", body)


def csv_get(routes: Routes, request: Request) -> Response:
    def run(job: Job) -> Dict[str, Any]:
        body = job.request
        for key in ("additionalFilters", "selectedFacets", "sort"):
            if body.get(key):
                raise ApiError(400, f"The emulator does not support {key} in a DownloadFromTableRequest.")
        entity, outcome = _run(routes, job, body["sql"])
        include_etag = bool(body.get("includeEntityEtag")) and entity.kind is EntityKind.ENTITYVIEW
        data = csv_bytes(
            outcome,
            body.get("csvTableDescriptor") or {},
            body.get("writeHeader", True) is not False,
            body.get("includeRowIdAndRowVersion", True) is not False,
            include_etag,
        )
        store = routes.store
        md5, size = store.put_bytes(data)
        with store.batch():
            handle_id = store.create_file_handle(md5, size, f"Job-{job.id}.csv", "text/csv")
            store.add_result_handle(handle_id, entity.id)
        return {
            "concreteType": DOWNLOAD_RESULT,
            "resultsFileHandleId": str(handle_id),
            "tableId": f"syn{entity.id}",
            "etag": entity.etag,
            "headers": outcome.headers,
        }

    return _get(routes, request, "csv", run)


# --- columns --------------------------------------------------------------------------------------
def table_columns(routes: Routes, request: Request) -> Response:
    """PaginatedColumnModels of a table type (the emulator's datasets have none)."""
    entity = routes._entity(request.params[0])
    if not entity.kind.is_table_type:
        raise ApiError(400, f"syn{entity.id} is not a table or view.")
    models = column_models_of(routes.store, entity.id)
    return Response(body={"results": models, "totalNumberOfResults": len(models)})


def get_column(routes: Routes, request: Request) -> Response:
    model = routes.store.column_model(int(request.params[0]))
    if model is None:
        raise ApiError(404, f"ColumnModel {request.params[0]} does not exist.")
    return Response(body=model)


_ASYNC = rf"/repo/v1/entity/{_ID}/table"
#: the API listener matches these after ``routes.ROUTES``
TABLE_ROUTES = [
    _route("GET", rf"/repo/v1/entity/{_ID}/column", table_columns, "entity"),
    _route("GET", r"/repo/v1/column/(\d+)", get_column, "entity"),
    _route("POST", _ASYNC + r"/query/async/start", query_start, "query"),
    _route("GET", _ASYNC + r"/query/async/get/([^/]+)", query_get, "query"),
    _route("POST", _ASYNC + r"/query/nextPage/async/start", next_page_start, "query"),
    _route("GET", _ASYNC + r"/query/nextPage/async/get/([^/]+)", next_page_get, "query"),
    _route("POST", _ASYNC + r"/download/csv/async/start", csv_start, "query"),
    _route("GET", _ASYNC + r"/download/csv/async/get/([^/]+)", csv_get, "query"),
]
