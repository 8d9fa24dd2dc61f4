"""Column models for a view a client makes: ``POST /column/batch``, ``GET /column/tableview/defaults``, the
asynchronous ``/column/view/scope`` job (the annotation columns of the files in a scope) and the table transaction
job's schema change (``/entity/{id}/table/transaction``), as Synapse's TableController answers them.
synapseclient 4.14's ``syn.store(EntityViewSchema(...))`` calls the first three, its models API's
``EntityView(...).store()`` the defaults and the transaction (after ``POST /entity/bundle2/create``).
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from .entity_routes import MAX_COLUMNS_PER_VIEW, check_schema, rebuild_view
from .routes import (
    _ID,
    ApiError,
    Request,
    Response,
    Routes,
    _route,
    invalid_id_reason,
    make_page_token,
    parse_page_token,
)
from .store import DenyMode, EntityKind, parse_syn_id
from .table_routes import job_answer, jobs_of, request_model
from .tables import COLUMN_TYPES, DEFAULT_FILE_VIEW_COLUMNS, DEFAULT_STRING_SIZE, LIST_TYPES, column_model

#: ListWrapper's concreteType is the class of its items (ListWrapper.writeToJSONObject)
COLUMN_MODEL_CLASS = "org.sagebionetworks.repo.model.table.ColumnModel"
VIEW_COLUMN_MODEL_REQUEST = "org.sagebionetworks.repo.model.table.ViewColumnModelRequest"
VIEW_COLUMN_MODEL_RESPONSE = "org.sagebionetworks.repo.model.table.ViewColumnModelResponse"
#: ColumnModel.json's fields a client may give (``id`` and ``concreteType`` are dropped: the store gives ids)
_COLUMN_FIELDS = (
    "name",
    "columnType",
    "maximumSize",
    "maximumListLength",
    "enumValues",
    "defaultValue",
    "facetType",
    "jsonSubColumns",
)
_SIZED = ("STRING", "LINK", "STRING_LIST")
#: the default columns of a view without the file bit (Constants.BASIC_DEAFULT_COLUMNS: the file columns' first 12)
_BASIC_DEFAULT_COLUMNS = DEFAULT_FILE_VIEW_COLUMNS[:12]
#: AnnotationType -> ColumnType (AnnotationType.getColumnType), and ColumnTypeListMappings.listType
_ANNOTATION_COLUMN_TYPES = {
    "STRING": "STRING",
    "LONG": "INTEGER",
    "DOUBLE": "DOUBLE",
    "TIMESTAMP_MS": "DATE",
    "BOOLEAN": "BOOLEAN",
}
_LIST_OF = {"STRING": "STRING_LIST", "INTEGER": "INTEGER_LIST", "DATE": "DATE_LIST", "BOOLEAN": "BOOLEAN_LIST"}
#: the ViewColumnModelRequest fields a job keeps (ViewColumnModelRequest.json, ViewScope.json)
_VIEW_COLUMNS_REQUEST_FIELDS: Dict[str, Any] = {
    "concreteType": str,
    "viewScope": {"scope": list, "viewEntityType": str, "viewTypeMask": int, "viewType": str},
    "includeDerivedAnnotations": bool,
    "nextPageToken": str,
}


def _list_wrapper(models: List[Dict[str, Any]]) -> Dict[str, Any]:
    return {"concreteType": COLUMN_MODEL_CLASS, "list": models}


#: TableConstants.RESERVED_COLUMNS_NAMES (compared upper-cased and trimmed)
_RESERVED_NAMES = ("ROW_ID", "ROW_VERSION", "ROW_ETAG", "ROW_BENEFACTOR", "ROW_SEARCH_CONTENT", "ROW_HASH_CODE")
#: TableConstants.MAX_COLUMN_NAME_SIZE_CHARS; ColumnConstants.MAX_ALLOWED_STRING_SIZE, MAX_ALLOWED_LIST_LENGTH
MAX_COLUMN_NAME_CHARS = 256
MAX_STRING_SIZE = 1000
MAX_LIST_LENGTH = 100
#: ColumnModelManagerImpl.validateFacetType: the facets a type may have (a type not named here has none)
_ENUMERATION_ONLY = ("USERID", "ENTITYID", "SUBMISSIONID", "EVALUATIONID", "BOOLEAN") + LIST_TYPES
_RANGE_ONLY = ("DOUBLE", "DATE")


def _check_facet(facet: object, column_type: str) -> None:
    """ColumnModelManagerImpl.validateFacetType, its messages (``Date columns...`` for a DOUBLE too)."""
    if facet is None or column_type in ("INTEGER", "STRING"):
        return
    if column_type in _ENUMERATION_ONLY:
        if facet != "enumeration":
            raise ApiError(400, f"{column_type} columns can only be enumeration faceted")
    elif column_type in _RANGE_ONLY:
        if facet != "range":
            raise ApiError(400, "Date columns can only be ranges")
    else:
        raise ApiError(400, f"The ColumnType:{column_type} can not be faceted")


def _bounded(model: Dict[str, Any], key: str, low: int, high: int, too_big: str, too_small: str) -> None:
    value = model[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise ApiError(400, f"ColumnModel.{key} must be an integer.")
    if value > high:
        raise ApiError(400, too_big)
    if value < low:
        raise ApiError(400, too_small)


def _normalized(given: object) -> Dict[str, Any]:
    """A ColumnModel as the store keeps it, checked and normalized as ColumnModelManagerImpl.validateColumnModel
    and ColumnModelUtils.createNormalizedClone do it: the given fields without nulls, ``id`` or ``concreteType``;
    the name at most 256 characters and not a reserved one (ROW_ID, ...); the facet allowed for the type; a STRING,
    LINK or STRING_LIST's maximumSize in 1..1000 (50 when not given), a list type's maximumListLength in 2..100
    (100 when not given)."""
    if not isinstance(given, dict):
        raise ApiError(400, "Each ColumnModel must be a JSON object.")
    model = {key: given[key] for key in _COLUMN_FIELDS if given.get(key) is not None}
    name = model.get("name")
    if name is None:
        raise ApiError(400, "name is required.")
    if not isinstance(name, str) or not name.strip():
        raise ApiError(400, "ColumnModel.name is required and must not be the empty string.")
    if len(name) > MAX_COLUMN_NAME_CHARS:
        raise ApiError(400, f"Column name must be: {MAX_COLUMN_NAME_CHARS} characters or less.")
    if name.upper().strip() in _RESERVED_NAMES:
        raise ApiError(400, f"The column name: {name} is a system reserved column name.")
    model["name"] = name.strip()
    column_type = model.get("columnType")
    if column_type is None:
        raise ApiError(400, "ColumnModel.columnType cannot be null")
    if column_type not in COLUMN_TYPES + LIST_TYPES:
        raise ApiError(400, f"The emulator does not support columnType {column_type}.")
    _check_facet(model.get("facetType"), column_type)
    if column_type in LIST_TYPES:
        model.setdefault("maximumListLength", MAX_LIST_LENGTH)
        _bounded(
            model,
            "maximumListLength",
            2,
            MAX_LIST_LENGTH,
            f"ColumnModel.maximumListLength for a LIST column cannot exceed: {MAX_LIST_LENGTH}",
            "ColumnModel.maximumListLength for a LIST column must be at least 2",
        )
    if column_type in _SIZED:
        model.setdefault("maximumSize", DEFAULT_STRING_SIZE)
        _bounded(
            model,
            "maximumSize",
            1,
            MAX_STRING_SIZE,
            f"ColumnModel.maxSize for a STRING cannot exceed: {MAX_STRING_SIZE}",
            "ColumnModel.maxSize for a STRING must be greater than 0",
        )
    return model


def create_columns(routes: Routes, request: Request) -> Response:
    """TableController.createColumnModels: a ListWrapper of ColumnModels -> the same with ids, 201; an identical
    model keeps the id it already has (ColumnModelDAOImpl: models are immutable and shared). The anonymous user
    may not (ColumnModelManagerImpl.createColumnModels: 403)."""
    if request.caller.is_anonymous:
        raise ApiError(403, "You must login to create a ColumnModel")
    given = request.json().get("list")
    if not isinstance(given, list):
        raise ApiError(400, "ListWrapper.list is required.")
    models = []
    for item in given:
        model = _normalized(item)
        models.append(dict(model, id=str(routes.store.column_model_id(model))))
    return Response(status=201, body=_list_wrapper(models))


def default_columns(routes: Routes, request: Request) -> Response:
    """TableController.getDefaultColumnsForViewType: an entity view's default columns, with ids (the file columns
    when the mask has the file bit, else the basic ones)."""
    view_entity_type = request.query.get("viewEntityType", "entityview")
    if view_entity_type != "entityview":
        raise ApiError(400, f"The emulator has entity views only, not {view_entity_type}.")
    text = request.query.get("viewTypeMask")
    if text is None:
        raise ApiError(400, "viewTypeMask is required.")
    try:
        mask = int(text)
    except ValueError:
        raise ApiError(
            400,
            "Failed to convert value of type 'java.lang.String' to required type 'java.lang.Long'; "
            f'nested exception is java.lang.NumberFormatException: For input string: "{text}"',
        ) from None
    defaults = DEFAULT_FILE_VIEW_COLUMNS if mask & 0x01 else _BASIC_DEFAULT_COLUMNS
    models = []
    for name, column_type, size, facet in defaults:
        model = column_model(name, column_type, size, facet)
        models.append(dict(model, id=str(routes.store.column_model_id(model))))
    return Response(body=_list_wrapper(models))


def view_columns_start(routes: Routes, request: Request) -> Response:
    body = request_model(
        request.json(), VIEW_COLUMN_MODEL_REQUEST, _VIEW_COLUMNS_REQUEST_FIELDS, "ViewColumnModelRequest"
    )
    scope = body.get("viewScope")
    if scope is None:
        raise ApiError(400, "viewScope is required.")
    if not scope.get("scope"):
        raise ApiError(400, "scope.scopeIds is required and must not be empty.")
    job = jobs_of(routes).start("viewColumns", 0, body, request.caller.id, routes.context.knobs.query_pending_polls)
    return Response(status=201, body={"token": job.id})


def view_columns_get(routes: Routes, request: Request) -> Response:
    def run(job) -> Dict[str, Any]:
        scope = job.request["viewScope"]
        scope_ids = []
        for ref in scope["scope"]:
            try:
                scope_ids.append(parse_syn_id(str(ref)))
            except ValueError:
                raise ApiError(400, invalid_id_reason(ref)) from None
        limit, offset = parse_page_token(job.request.get("nextPageToken"))
        models = scope_annotation_columns(routes, scope_ids)
        page = models[offset : offset + limit]
        answer: Dict[str, Any] = {"concreteType": VIEW_COLUMN_MODEL_RESPONSE, "results": page}
        if offset + limit < len(models):
            answer["nextPageToken"] = make_page_token(limit, offset + limit)
        return answer

    return job_answer(routes, request.params[0], "viewColumns", run)


# --- the table transaction: schema changes -----------------------------------------------------------------------
TRANSACTION_REQUEST = "org.sagebionetworks.repo.model.table.TableUpdateTransactionRequest"
TRANSACTION_RESPONSE = "org.sagebionetworks.repo.model.table.TableUpdateTransactionResponse"
SCHEMA_CHANGE_REQUEST = "org.sagebionetworks.repo.model.table.TableSchemaChangeRequest"
SCHEMA_CHANGE_RESPONSE = "org.sagebionetworks.repo.model.table.TableSchemaChangeResponse"
_TRANSACTION_FIELDS: Dict[str, Any] = {
    "concreteType": str,
    "entityId": str,
    "changes": list,
    "createSnapshot": bool,
}


def transaction_start(routes: Routes, request: Request) -> Response:
    """TableController.updateTableAsyncStart: 201 AsyncJobId. The emulator's transactions change schemas only."""
    body = request_model(request.json(), TRANSACTION_REQUEST, _TRANSACTION_FIELDS, "TableUpdateTransactionRequest")
    for change in body.get("changes") or []:
        if not isinstance(change, dict) or change.get("concreteType") != SCHEMA_CHANGE_REQUEST:
            raise ApiError(400, "The emulator's table transactions hold TableSchemaChangeRequests only.")
    if body.get("createSnapshot"):
        raise ApiError(400, "The emulator makes no table snapshots.")
    entity_id = parse_syn_id(request.params[0])
    job = jobs_of(routes).start(
        "transaction", entity_id, body, request.caller.id, routes.context.knobs.query_pending_polls
    )
    return Response(status=201, body={"token": job.id})


def _new_column_ids(routes: Routes, current: List[int], change: Dict[str, Any], *, is_view: bool) -> List[int]:
    """TableSchemaChangeRequest -> the schema's column ids: ``orderedColumnIds`` when given, else the ColumnChanges
    applied to the current ids (old -> new; no old: added; no new: removed)."""
    columns = list(current)
    for column_change in change.get("changes") or []:
        old, new = column_change.get("oldColumnId"), column_change.get("newColumnId")
        if old is not None and int(old) in columns:
            index = columns.index(int(old))
            if new is None:
                columns.pop(index)
            else:
                columns[index] = int(new)
        elif new is not None and int(new) not in columns:
            columns.append(int(new))
    ordered = change.get("orderedColumnIds")
    if ordered is not None:
        columns = [int(column_id) for column_id in ordered]
    if is_view and len(columns) > MAX_COLUMNS_PER_VIEW:  # TableViewManagerImpl.applySchemaChange
        raise ApiError(
            400, f"A view cannot have {len(columns)} columns.  It must have {MAX_COLUMNS_PER_VIEW} columns or less."
        )
    check_schema(routes, columns)
    return columns


def transaction_get(routes: Routes, request: Request) -> Response:
    """TableController.updateTableAsyncGet: each schema change applied in order, a view's snapshot and build made
    again; 201 TableUpdateTransactionResponse with each change's TableSchemaChangeResponse (the new schema)."""

    def run(job) -> Dict[str, Any]:
        entity = routes._entity(str(job.entity_id))
        if not entity.kind.is_queryable:
            raise ApiError(400, f"syn{entity.id} is not a table or a view.")
        store = routes.store
        results = []
        for change in job.request.get("changes") or []:
            current, scope_ids, mask = store.table_schema(entity.id)
            columns = _new_column_ids(routes, current, change, is_view=entity.kind is EntityKind.ENTITYVIEW)
            store.set_table_schema(entity.id, columns, scope_ids, mask)
            results.append(
                {
                    "concreteType": SCHEMA_CHANGE_RESPONSE,
                    "schema": [dict(store.column_model(c) or {}) for c in columns],
                }
            )
        if entity.kind is EntityKind.ENTITYVIEW:
            rebuild_view(routes, entity.id)
        return {"concreteType": TRANSACTION_RESPONSE, "results": results}

    return job_answer(routes, request.params[1], "transaction", run)


def _annotation_type(values: List[Any]) -> str:
    """The Annotations v2 type of a key's stored values (as wire.annotations_json writes it)."""
    if values and all(isinstance(v, bool) for v in values):
        return "BOOLEAN"
    if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return "LONG"
    if values and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return "DOUBLE"
    return "STRING"


def scope_annotation_columns(routes: Routes, scope_ids: List[int]) -> List[Dict[str, Any]]:
    """The column models of the annotations of the readable files below the scope, as TableIndexDAOImpl
    .getPossibleColumnModelsForContainers aggregates them: one model per key and annotation type (by key, then
    type), a list type with maximumListLength when a file has more than one value (DOUBLE has no list type),
    STRING's maximumSize the longest value (50 when none is longer than 0)."""
    store = routes.store
    aggregates: Dict[Tuple[str, str], List[int]] = {}  # (key, annotation type) -> [longest value, most values]
    for entity in store.files_below(scope_ids):
        if store.effective_deny(entity) is DenyMode.READ:
            continue
        for key, values in store.annotations(entity.id).items():
            values = list(values)
            aggregate = aggregates.setdefault((key, _annotation_type(values)), [0, 0])
            aggregate[0] = max([aggregate[0]] + [len(str(value)) for value in values])
            aggregate[1] = max(aggregate[1], len(values))
    models = []
    for (key, annotation_type), (longest, most) in sorted(aggregates.items()):
        column_type = _ANNOTATION_COLUMN_TYPES[annotation_type]
        model: Dict[str, Any] = {"name": key}
        if most > 1 and column_type in _LIST_OF:
            column_type = _LIST_OF[column_type]
            model["maximumListLength"] = most
        model["columnType"] = column_type
        if column_type in ("STRING", "STRING_LIST"):
            model["maximumSize"] = longest or DEFAULT_STRING_SIZE
        models.append(model)
    return models


_SCOPE = r"/repo/v1/column/view/scope/async"
#: the API listener matches these before ``table_routes.TABLE_ROUTES`` (whose ``/column/(\d+)`` they do not match)
COLUMN_ROUTES = [
    _route("POST", r"/repo/v1/column/batch", create_columns, "entity"),
    _route("GET", r"/repo/v1/column/tableview/defaults", default_columns, "entity"),
    _route("POST", _SCOPE + r"/start", view_columns_start, "query"),
    _route("GET", _SCOPE + r"/get/([^/]+)", view_columns_get, "query"),
    _route("POST", rf"/repo/v1/entity/{_ID}/table/transaction/async/start", transaction_start, "query"),
    _route("GET", rf"/repo/v1/entity/{_ID}/table/transaction/async/get/([^/]+)", transaction_get, "query"),
]
