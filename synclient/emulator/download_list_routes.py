"""The download list routes (Synapse-Repository-Services' ``DownloadListController``): add, remove and clear a
user's list; and as asynchronous jobs (the table query service's machinery: 201 ``{"token"}``, 202 while pending,
201 with the answer) adding a folder's children or a view query's rows, querying the list (available files,
actions required, statistics) and making its manifest CSV. Also the creator-only file handle routes
(``GET /fileHandle/{id}``, ``GET /fileHandle/{id}/url``) through which synapseclient fetches that manifest.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from .download_list import (
    DEFAULT_SORT,
    MAX_FILES_PER_BATCH,
    CartError,
    DownloadLists,
    ItemKey,
    actions_required,
    available_files,
    filter_files,
    manifest_csv,
    sort_files,
    statistics,
)
from .routes import ApiError, Request, Response, Routes, _route, make_page_token, parse_page_token
from .sql import QueryError, table_id_of
from .store import CALLER, EntityKind, now_iso, parse_syn_id
from .table_routes import job_answer, jobs_of, request_model
from .tables import Job, run_query

DOWNLOAD_PKG = "org.sagebionetworks.repo.model.download."
QUERY_REQUEST = DOWNLOAD_PKG + "DownloadListQueryRequest"
QUERY_RESPONSE = DOWNLOAD_PKG + "DownloadListQueryResponse"
AVAILABLE_REQUEST = DOWNLOAD_PKG + "AvailableFilesRequest"
AVAILABLE_RESPONSE = DOWNLOAD_PKG + "AvailableFilesResponse"
ACTION_REQUEST = DOWNLOAD_PKG + "ActionRequiredRequest"
ACTION_RESPONSE = DOWNLOAD_PKG + "ActionRequiredResponse"
STATISTICS_REQUEST = DOWNLOAD_PKG + "FilesStatisticsRequest"
STATISTICS_RESPONSE = DOWNLOAD_PKG + "FilesStatisticsResponse"
ADD_REQUEST = DOWNLOAD_PKG + "AddToDownloadListRequest"
ADD_RESPONSE = DOWNLOAD_PKG + "AddToDownloadListResponse"
MANIFEST_REQUEST = DOWNLOAD_PKG + "DownloadListManifestRequest"
MANIFEST_RESPONSE = DOWNLOAD_PKG + "DownloadListManifestResponse"

#: the job kinds (a token fetched through another family's route is unknown there)
QUERY_JOB, ADD_JOB, MANIFEST_JOB = "downloadListQuery", "downloadListAdd", "downloadListManifest"
#: DownloadListManagerImpl.YOU_MUST_LOGIN_TO_ACCESS_YOUR_DOWNLOAD_LIST (an UnauthorizedException: 401)
LOGIN_REASON = "You must login to access your download list"

_DETAILS_FIELDS: Dict[str, Any] = {
    AVAILABLE_REQUEST: {"concreteType": str, "nextPageToken": str, "sort": list, "filter": str},
    ACTION_REQUEST: {"concreteType": str, "nextPageToken": str},
    STATISTICS_REQUEST: {"concreteType": str},
}
_CSV_DESCRIPTOR = {
    "separator": str,
    "quoteCharacter": str,
    "escapeCharacter": str,
    "lineEnd": str,
    "isFirstLineHeader": bool,
}
_TABLE_QUERY = {
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


def _lists(routes: Routes) -> DownloadLists:
    return routes.context.download_lists


def _user_id(request: Request) -> int:
    caller = request.caller
    if caller.is_anonymous:
        raise ApiError(401, LOGIN_REASON)
    return caller.id


def _batch(body: dict, name: str) -> List[ItemKey]:
    """A batch of DownloadListItems as keys (validateBatch: 1 to MAX_FILES_PER_BATCH items)."""
    batch = body.get(name)
    if not isinstance(batch, list):
        raise ApiError(400, "batch is required.")
    if not batch:
        raise ApiError(400, "Batch must contain at least one item")
    if len(batch) > MAX_FILES_PER_BATCH:
        raise ApiError(400, f"Batch size of '{len(batch)}' exceeds the maximum of '{MAX_FILES_PER_BATCH}'")
    keys: List[ItemKey] = []
    for index, item in enumerate(batch):
        if not isinstance(item, dict) or item.get("fileEntityId") is None:
            raise ApiError(400, f"Null fileEntityId at index: {index}")
        try:
            entity_id = parse_syn_id(item["fileEntityId"])
        except ValueError:
            raise ApiError(400, f"Invalid Entity ID: {item['fileEntityId']}") from None
        version = item.get("versionNumber")
        if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
            raise ApiError(400, f"versionNumber at index {index} must be an integer.")
        keys.append((entity_id, version))
    return keys


# --- add, remove, clear ----------------------------------------------------------------------------------------
def add_batch(routes: Routes, request: Request) -> Response:
    user_id = _user_id(request)
    keys = _batch(request.json(), "batchToAdd")
    # filterUnsupportedTypes: only existing files are added
    entities = routes.store.entities(sorted({entity_id for entity_id, _ in keys}))
    files = [key for key in keys if key[0] in entities and entities[key[0]].kind is EntityKind.FILE]
    try:
        added = _lists(routes).add(user_id, files, now_iso(), routes.context.knobs.download_list_limit)
    except CartError as error:
        raise ApiError(400, str(error)) from None
    return Response(body={"numberOfFilesAdded": added})


def remove_batch(routes: Routes, request: Request) -> Response:
    user_id = _user_id(request)
    keys = _batch(request.json(), "batchToRemove")
    return Response(body={"numberOfFilesRemoved": _lists(routes).remove(user_id, keys)})


def clear(routes: Routes, request: Request) -> Response:
    _lists(routes).clear(_user_id(request))
    return Response(body=b"", content_type="text/plain")  # a void method answered 200 with no body


# --- the asynchronous jobs -------------------------------------------------------------------------------------
def _start(routes: Routes, request: Request, kind: str, body: dict) -> Response:
    user_id = _user_id(request)
    job = jobs_of(routes).start(kind, 0, body, user_id, routes.context.knobs.query_pending_polls)
    return Response(status=201, body={"token": job.id})


def _get(routes: Routes, request: Request, kind: str, run) -> Response:
    return job_answer(routes, request.params[0], kind, run, bad_request=(CartError, QueryError))


def query_start(routes: Routes, request: Request) -> Response:
    raw = request.json()
    details = raw.get("requestDetails")
    if not isinstance(details, dict):
        raise ApiError(400, "requestBody.requestDetails is required.")
    details_type = details.get("concreteType")
    if details_type not in _DETAILS_FIELDS:
        raise ApiError(400, f"Unknown type: {details_type}")
    body = request_model(
        dict(raw, requestDetails=None), QUERY_REQUEST, {"concreteType": str}, "DownloadListQueryRequest"
    )
    body["requestDetails"] = request_model(details, str(details_type), _DETAILS_FIELDS[details_type], "requestDetails")
    return _start(routes, request, QUERY_JOB, body)


def _page(total: List[Any], token: Optional[str]) -> Tuple[List[Any], Optional[str]]:
    """A NextPageToken page (``{limit}a{offset}``, 50 by default): the next token only when more remain."""
    limit, offset = parse_page_token(token)
    page = total[offset : offset + limit]
    more = len(total) > offset + limit
    return page, make_page_token(limit, offset + limit) if more else None


def query_get(routes: Routes, request: Request) -> Response:
    def run(job: Job) -> Dict[str, Any]:
        details = job.request["requestDetails"]
        items = _lists(routes).items(job.user_id)
        store = routes.store
        answer: Dict[str, Any]
        if details["concreteType"] == AVAILABLE_REQUEST:
            files = filter_files(available_files(store, items), details.get("filter"))
            files = sort_files(files, details.get("sort") or list(DEFAULT_SORT))
            page, token = _page(files, details.get("nextPageToken"))
            answer = {"concreteType": AVAILABLE_RESPONSE, "page": [f.result_json() for f in page]}
        elif details["concreteType"] == ACTION_REQUEST:
            page, token = _page(actions_required(store, items), details.get("nextPageToken"))
            answer = {"concreteType": ACTION_RESPONSE, "page": page}
        else:
            token = None
            answer = dict(statistics(store, items), concreteType=STATISTICS_RESPONSE)
        if token is not None:
            answer["nextPageToken"] = token
        return {"concreteType": QUERY_RESPONSE, "responseDetails": answer}

    return _get(routes, request, QUERY_JOB, run)


def add_start(routes: Routes, request: Request) -> Response:
    body = request_model(
        request.json(),
        ADD_REQUEST,
        {"concreteType": str, "parentId": str, "query": _TABLE_QUERY, "useVersionNumber": bool},
        "AddToDownloadListRequest",
    )
    if ("parentId" in body) == ("query" in body):
        if "parentId" in body:
            raise ApiError(400, "Please provide request.parentId or request.query() but not both.")
        raise ApiError(400, "Must include either request.parentId or request.query().")
    return _start(routes, request, ADD_JOB, body)


def _keys_of_parent(routes: Routes, parent_ref: str, use_version: bool) -> List[ItemKey]:
    """The files directly in a folder (or project) the user may read; a dataset's items at their versions."""
    parent = routes._entity(parent_ref)
    store = routes.store
    if parent.kind.is_item_list:
        return [(item.entity_id, item.version_number if use_version else None) for item in store.items(parent.id)]
    keys: List[ItemKey] = []
    for child_id in store.subtree_ids(parent.id):
        child = store.entity(child_id)
        if child is not None and child.parent_id == parent.id and child.kind is EntityKind.FILE:
            if store.effective_deny(child).value != "read":
                keys.append((child.id, child.current_version if use_version else None))
    return keys


def _keys_of_query(routes: Routes, query: Dict[str, Any], use_version: bool) -> List[ItemKey]:
    """The file rows of a view query (ROW_ID, ROW_VERSION), as the query service selects them."""
    sql = query.get("sql")
    if not isinstance(sql, str) or not sql.strip():
        raise ApiError(400, "query.sql is required.")
    table_id = table_id_of(sql)
    if table_id is None:
        raise ApiError(400, "The query must name a view: SELECT ... FROM syn<id>.")
    view = routes._entity(str(table_id))
    if not view.kind.is_queryable:
        raise ApiError(400, f"syn{view.id} is a {view.kind.value}, not a view.")
    outcome = run_query(routes.store, view, sql, routes.context.knobs.view_lag)
    ids = [row[0] for row in outcome.rows if row[0] is not None]
    entities = routes.store.entities(ids)
    return [
        (int(row[0]), int(row[1]) if use_version and row[1] is not None else None)
        for row in outcome.rows
        if row[0] is not None and row[0] in entities and entities[row[0]].kind is EntityKind.FILE
    ]


def add_get(routes: Routes, request: Request) -> Response:
    def run(job: Job) -> Dict[str, Any]:
        body = job.request
        use_version = body.get("useVersionNumber", True) is not False  # DEFAULT_USE_VERSION
        if "parentId" in body:
            keys = _keys_of_parent(routes, body["parentId"], use_version)
        else:
            keys = _keys_of_query(routes, body["query"], use_version)
        added = _lists(routes).add_up_to(job.user_id, keys, now_iso(), routes.context.knobs.download_list_limit)
        return {"concreteType": ADD_RESPONSE, "numberOfFilesAdded": added}

    return _get(routes, request, ADD_JOB, run)


def manifest_start(routes: Routes, request: Request) -> Response:
    body = request_model(
        request.json(),
        MANIFEST_REQUEST,
        {"concreteType": str, "csvTableDescriptor": _CSV_DESCRIPTOR},
        "DownloadListManifestRequest",
    )
    return _start(routes, request, MANIFEST_JOB, body)


def manifest_get(routes: Routes, request: Request) -> Response:
    def run(job: Job) -> Dict[str, Any]:
        store = routes.store
        files = available_files(store, _lists(routes).items(job.user_id))
        data = manifest_csv(store, files, job.request.get("csvTableDescriptor") or {})
        md5, size = store.put_bytes(data)
        with store.batch():
            handle_id = store.create_file_handle(
                md5, size, f"manifest-{job.id}.csv", "text/csv", created_by=job.user_id
            )
        return {"concreteType": MANIFEST_RESPONSE, "resultFileHandleId": str(handle_id)}

    return _get(routes, request, MANIFEST_JOB, run)


# --- the creator's file handle routes --------------------------------------------------------------------------
def _own_handle(routes: Routes, request: Request):
    """The handle, for its creator only (FileHandleManagerImpl.getRawFileHandle: 403 for anyone else)."""
    handle = routes.store.file_handle(int(request.params[0]))
    if handle is None:
        raise ApiError(404, f"FileHandle {request.params[0]} does not exist.")
    caller = CALLER.get()
    if caller is None or handle.created_by != caller.id:
        raise ApiError(403, "Only the creator of a FileHandle can access it directly by its ID.")
    return handle


def get_file_handle(routes: Routes, request: Request) -> Response:
    return Response(body=routes._handle_json(_own_handle(routes, request)))


def get_file_handle_url(routes: Routes, request: Request) -> Response:
    return routes._url_response(_own_handle(routes, request), request)


_LIST = r"/repo/v1/download/list"
#: the API listener matches these after the table routes
DOWNLOAD_LIST_ROUTES = [
    _route("POST", _LIST + r"/add", add_batch, "other"),
    _route("POST", _LIST + r"/remove", remove_batch, "other"),
    _route("DELETE", _LIST + r"/?", clear, "other"),
    _route("POST", _LIST + r"/add/async/start", add_start, "other"),
    _route("GET", _LIST + r"/add/async/get/([^/]+)", add_get, "other"),
    _route("POST", _LIST + r"/query/async/start", query_start, "other"),
    _route("GET", _LIST + r"/query/async/get/([^/]+)", query_get, "other"),
    _route("POST", _LIST + r"/manifest/async/start", manifest_start, "other"),
    _route("GET", _LIST + r"/manifest/async/get/([^/]+)", manifest_get, "other"),
    _route("GET", r"/file/v1/fileHandle/(\d+)", get_file_handle, "filehandle"),
    _route("GET", r"/file/v1/fileHandle/(\d+)/url", get_file_handle_url, "filehandle"),
]
