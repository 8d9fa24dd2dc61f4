"""Writing entities: ``POST /entity`` (a Project, a Folder, an EntityView), ``DELETE /entity/{id}`` (the trash can,
or at once with ``skipTrashCan``) and ``PUT /entity/{id}/annotations2``, with Synapse's access decisions in its
order and words (services/repository-managers/.../manager/entity/EntityAuthorizationUtils.java and
.../entity/decider/EntityDeciderFunctions.java; the messages: lib/models/.../repo/model/AuthorizationConstants.java).

The emulator's user may create in, update and delete what it can read and download (an entity without a ``deny``
mark, and what it created); a ``deny`` mark (``true`` or ``"download"``) refuses all three. Knobs refuse more:
``uncertified_user`` (Synapse's ``DENY_IF_CREATE_TYPE_IS_NOT_PROJECT_AND_NOT_CERTIFIED``: projects only) and
``deny_create`` (no CREATE anywhere, projects included).
"""

from __future__ import annotations

import re
import uuid
from typing import Any, Dict, List, Optional

from . import wire
from .entity_names import InvalidName, entity_name
from .routes import ApiError, Request, Response, Routes, _route, invalid_id_reason, lack_access_reason, not_found_reason
from .store import DenyMode, Entity, EntityKind, NameConflict, parse_syn_id
from .view_builds import build_snapshot

ROOT_ENTITY_ID = 4489
#: AuthorizationConstants.ERR_MSG_ANONYMOUS_USERS_HAVE_ONLY_READ_ACCESS_PERMISSION
ANONYMOUS_READ_ONLY = "Anonymous users have only READ access permission."
#: AuthorizationConstants.ERR_MSG_CERTIFIED_USER_CONTENT
CERTIFIED_ONLY = "Only certified users may create or update content in Synapse."
#: EntityMetadataIndexProvider.SCOPE_SIZE_LIMITED_EXCEEDED_FILE_VIEW
SCOPE_TOO_BIG = (
    "The view's scope exceeds the maximum number of %d projects and/or folders. "
    "Note: The sub-folders of each project and folder in the scope count towards the limit."
)
#: TableViewManagerImpl.MAX_COLUMNS_PER_VIEW (ColumnConstants.MY_SQL_MAX_COLUMNS_PER_TABLE)
MAX_COLUMNS_PER_VIEW = 152
#: EntityMetadataIndexProvider.SCOPE_SIZE_LIMITED_EXCEEDED_PROJECT_VIEW and
#: PROJECT_TYPE_CANNOT_BE_COMBINED_WITH_ANY_OTHER_TYPE
PROJECT_SCOPE_TOO_BIG = "The view's scope exceeds the maximum number of %d projects."
PROJECT_TYPE_ALONE = "The Project type cannot be combined with any other type."
VIEW_TYPE_PROJECT = 0x02
#: the kinds POST /entity makes, by concreteType
CREATABLE = {kind.concrete_type: kind for kind in (EntityKind.PROJECT, EntityKind.FOLDER, EntityKind.ENTITYVIEW)}
#: ViewTypeMask.getMaskForDepricatedType: the deprecated ``type`` of a view -> its mask (File 0x01, Project 0x02,
#: Table 0x04)
DEPRECATED_VIEW_TYPES = {"file": 0x01, "project": 0x02, "file_and_table": 0x01 | 0x04}
#: Annotations v2 value types (AnnotationsValueType.json) -> how the store keeps a value of it
ANNOTATION_TYPES = ("STRING", "DOUBLE", "LONG", "TIMESTAMP_MS", "BOOLEAN")


def in_trash_reason(entity_id: int) -> str:
    """EntityDeciderFunctions.DENY_IF_IN_TRASH (AuthorizationConstants.ERR_MSG_ENTITY_IN_TRASH_TEMPLATE): a 404
    (BaseControllerExceptionHandlerAdvice maps EntityInTrashCanException to NOT_FOUND)."""
    return f"Entity syn{entity_id} is in trash can."


def conflict_reason(entity_id: int) -> str:
    """NodeManagerImpl.lockAndCheckEtag's ConflictingUpdateException: a 412."""
    return f"Object: syn{entity_id} was updated since you last fetched it, retrieve it again and re-apply the update"


def _parse_id(ref: object) -> int:
    try:
        return parse_syn_id(str(ref))
    except ValueError:
        raise ApiError(400, invalid_id_reason(ref)) from None


def _existing(routes: Routes, entity_id: int) -> Entity:
    """DENY_IF_DOES_NOT_EXIST then DENY_IF_IN_TRASH."""
    entity = routes.store.entity(entity_id)
    if entity is None:
        raise ApiError(404, not_found_reason(f"syn{entity_id}"))
    if routes.store.in_trash(entity_id):
        raise ApiError(404, in_trash_reason(entity_id))
    return entity


def _check_write(routes: Routes, request: Request, entity: Optional[Entity], access: str, kind: EntityKind) -> None:
    """The rest of determineCreateAccess (``entity`` the parent, None for Synapse's root), determineUpdateAccess
    and determineDeleteAccess once the entity exists and is out of the trash: anonymous, certification (CREATE of
    anything but a project, UPDATE of anything but a project), then the ACL."""
    knobs = routes.context.knobs
    if request.caller.is_anonymous:
        raise ApiError(403, ANONYMOUS_READ_ONLY)
    if access in ("CREATE", "UPDATE") and kind is not EntityKind.PROJECT and knobs.uncertified_user:
        raise ApiError(403, CERTIFIED_ONLY)
    if access == "CREATE" and knobs.deny_create:
        raise ApiError(403, lack_access_reason("CREATE"))
    if entity is not None and routes.store.effective_deny(entity) is not DenyMode.NONE:
        raise ApiError(403, lack_access_reason(access))


# --- POST /entity -----------------------------------------------------------------------------------
def _id_list(body: Dict[str, Any], key: str) -> List[int]:
    value = body.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise ApiError(400, f"{key} must be an array.")
    return [_parse_id(item) for item in value]


def _view_type_mask(body: Dict[str, Any]) -> int:
    """ViewTypeMask.getViewTypeMask(viewType, viewTypeMask): the mask if given, else the deprecated type's."""
    mask = body.get("viewTypeMask")
    if mask is not None:
        if isinstance(mask, bool) or not isinstance(mask, int):
            raise ApiError(400, "viewTypeMask must be an integer.")
        return mask
    old_type = body.get("type")
    if old_type is None:
        raise ApiError(400, "Either 'viewType' or 'viewTypeMask' must be provided")
    if old_type not in DEPRECATED_VIEW_TYPES:
        raise ApiError(400, f"Unknown type: {old_type}")
    return DEPRECATED_VIEW_TYPES[old_type]


def create_entity(routes: Routes, request: Request) -> Response:
    """EntityController.createEntity: 201 and the entity as ``GET /entity/{id}`` answers it."""
    entity = _create(routes, request, request.json())
    return Response(status=201, body=wire.entity_json(routes.store, entity))


def create_bundle(routes: Routes, request: Request) -> Response:
    """EntityBundleV2Controller.createEntityBundle (EntityBundleServiceImpl.createEntityBundle): the entity of an
    EntityBundleCreate made as ``POST /entity`` makes it, then its annotations (merged into the new entity's, none);
    201 and the bundle of the entity (and the annotations when given). An ``accessControlList`` is not modelled:
    the emulator has one user, and the bundle answers none."""
    given = request.json()
    entity_body = given.get("entity")
    if not isinstance(entity_body, dict):
        raise ApiError(400, "entityBundleCreate.entity is required.")
    annotations = given.get("annotations")
    values: Dict[str, List[Any]] = {}
    if annotations is not None:
        if not isinstance(annotations, dict) or not isinstance(annotations.get("annotations"), dict):
            raise ApiError(400, "entityBundleCreate.annotations.annotations is required.")
        values = _annotation_map(annotations["annotations"])
    entity = _create(routes, request, entity_body)
    store = routes.store
    body: Dict[str, Any] = {}
    if annotations is not None:
        store.set_annotations(entity.id, {key: kept for key, kept in values.items() if kept})
        entity = store.known_entity(entity.id)
        body["annotations"] = wire.annotations_json(store, entity)
    body = dict({"entity": wire.entity_json(store, entity), "entityType": entity.kind.value}, **body)
    return Response(status=201, body=body)


def _create(routes: Routes, request: Request, body: Dict[str, Any]) -> Entity:
    concrete_type = body.get("concreteType")
    if concrete_type is None:
        raise ApiError(400, "concreteType is required.")
    kind = CREATABLE.get(str(concrete_type))
    if kind is None:
        raise ApiError(400, f"The emulator creates Project, Folder and EntityView entities, not {concrete_type}.")
    parent_ref = body.get("parentId")
    parent: Optional[Entity] = None
    if kind is EntityKind.PROJECT:
        if parent_ref is not None and _parse_id(parent_ref) != ROOT_ENTITY_ID:
            raise ApiError(400, "A project's parentId must be the root (syn4489).")
    elif parent_ref is None:
        raise ApiError(400, "parentId cannot be null")
    else:
        # NodeManagerImpl.createNode: a parent that does not exist or is in the trash (not isNodeAvailable) is a
        # NotFoundException before any access decision
        parent = routes.store.entity(_parse_id(parent_ref))
        if parent is None or routes.store.in_trash(parent.id):
            raise ApiError(404, f"The given parent: {parent_ref} does not exist")
    _check_write(routes, request, parent, "CREATE", kind)
    if parent is not None and parent.kind not in (EntityKind.PROJECT, EntityKind.FOLDER):
        raise ApiError(400, f"syn{parent.id} is a {parent.kind.value}: only a project or a folder can hold entities.")
    given_name = body.get("name")
    # NameValidation.validateName lets a null name through and NodeDAOImpl.create names the entity by its id
    named_by_id = given_name is None
    try:
        name = entity_name(f"unnamed-{uuid.uuid4().hex}" if named_by_id else str(given_name))
    except InvalidName as error:
        raise ApiError(400, str(error)) from None
    fields: Dict[str, Any] = {}
    if body.get("description") is not None:
        fields["description"] = str(body["description"])
    view: Optional[Dict[str, Any]] = None
    if kind is EntityKind.ENTITYVIEW:
        view = _view_fields(routes, body)
        fields["isSearchEnabled"] = bool(body.get("isSearchEnabled") or False)
    store = routes.store
    try:
        with store.batch():
            entity_id = store.create_entity(kind, name, None if parent is None else parent.id)
            if named_by_id:
                name = f"syn{entity_id}"
                store.rename(entity_id, name)
            if fields:
                store.set_entity_fields(entity_id, fields)
            if view is not None:
                store.set_table_schema(entity_id, view["columnIds"], view["scopeIds"], view["viewTypeMask"])
    except NameConflict:
        shown = f"syn{ROOT_ENTITY_ID}" if parent is None else f"syn{parent.id}"
        raise ApiError(409, f"An entity with the name: {name} already exists with a parentId: {shown}") from None
    if view is not None:
        rebuild_view(routes, entity_id)
    return store.known_entity(entity_id)


def rebuild_view(routes: Routes, view_id: int) -> None:
    """A view made or whose schema changed: its snapshot taken again (from the replication when lagging) and its
    build started (``view_build_seconds_per_1000_files``)."""
    knobs = routes.context.knobs
    files = build_snapshot(routes.store, view_id, lag=knobs.view_lag)
    routes.context.view_builds.start(view_id, files, knobs.view_build_seconds_per_1000_files)


def check_schema(routes: Routes, column_ids: List[int]) -> None:
    """ColumnModelManagerImpl.validateSchemaSize as a view's or a table's columns are bound: every column exists,
    once and with a name of its own, and a row of them fits ``MAX_BYTES_PER_ROW``."""
    seen_ids: set = set()
    seen_names: set = set()
    for column_id in column_ids:
        model = routes.store.column_model(column_id)
        if model is None:
            raise ApiError(404, f"Column does not exist for id: {column_id}")
        # ColumnModelManagerImpl.getAndValidateColumnModels: ids and names unique
        if column_id in seen_ids:
            raise ApiError(400, f"Duplicate column: '{model.get('name')}'")
        if model.get("name") in seen_names:
            raise ApiError(400, f"Duplicate column name: '{model.get('name')}'")
        seen_ids.add(column_id)
        seen_names.add(model.get("name"))
    size = sum(max_cell_bytes(routes.store.column_model(c) or {}) for c in column_ids)
    if size > MAX_BYTES_PER_ROW:  # ColumnModelManagerImpl.validateSchemaSize
        raise ApiError(
            400,
            f"Too much data per column. The maximum size for a row is about {MAX_BYTES_PER_ROW} bytes. "
            f"The size for the given columns would be {size} bytes",
        )


def _view_fields(routes: Routes, body: Dict[str, Any]) -> Dict[str, Any]:
    """An EntityView's schema and scope, checked as Synapse checks them: at most 152 columns, the scope's
    containers (the scope's projects and folders and every folder below them; a project view: its scope's ids) within
    ``max_containers_per_view`` (TableConstants.MAX_CONTAINERS_PER_VIEW, NodeDAOImpl.getAllContainerIds), then every
    column exists, once and with a name of its own."""
    column_ids = _id_list(body, "columnIds")
    if len(column_ids) > MAX_COLUMNS_PER_VIEW:  # TableViewManagerImpl.validateViewSchemaSize, before the scope
        raise ApiError(
            400,
            f"A view cannot have {len(column_ids)} columns.  It must have {MAX_COLUMNS_PER_VIEW} columns or less.",
        )
    scope_ids = _id_list(body, "scopeIds")
    mask = _view_type_mask(body)
    # EntityMetadataIndexProvider.validateScopeAndType: a project view holds projects only and counts its scope's
    # ids; any other mask (none too) counts the containers of the scope
    limit = routes.context.knobs.max_containers_per_view
    if mask & VIEW_TYPE_PROJECT and mask != VIEW_TYPE_PROJECT:
        raise ApiError(400, PROJECT_TYPE_ALONE)
    if mask == VIEW_TYPE_PROJECT:
        if len(set(scope_ids)) > limit:
            raise ApiError(400, PROJECT_SCOPE_TOO_BIG % limit)
    elif len(routes.store.container_ids_below(scope_ids, limit + 1)) > limit:
        raise ApiError(400, SCOPE_TOO_BIG % limit)
    # the columns are bound after the view is checked (ColumnModelManagerImpl.bindColumnsToVersionOfObject)
    check_schema(routes, column_ids)
    return {"columnIds": column_ids, "scopeIds": scope_ids, "viewTypeMask": mask}


#: ColumnConstants.MY_SQL_MAX_BYTES_PER_ROW and the byte sizes TableModelUtils.calculateMaxSizeForType gives a cell:
#: MAX_INTEGER_BYTES_AS_STRING (len("-9223372036854775807")), MAX_DOUBLE_BYTES_AS_STRING, MAX_BOOLEAN_BYTES_AS_STRING
#: ("FALSE"), MAX_ENTITY_ID_BYTES_AS_STRING (3 + 20 + 1 + 20), MEDIUMTEXT 64000 // 152, LARGETEXT 64000 // 30
MAX_BYTES_PER_ROW = 64000
_CELL_BYTES = {
    "BOOLEAN": 5,
    "INTEGER": 20,
    "DATE": 20,
    "SUBMISSIONID": 20,
    "EVALUATIONID": 20,
    "DOUBLE": 23,
    "FILEHANDLEID": 20,
    "USERID": 20,
    "ENTITYID": 44,
    "MEDIUMTEXT": 64000 // 152,
    "LARGETEXT": 64000 // 30,
    "JSON": 64000 // 30,
}
_LIST_CELL_BYTES = {"INTEGER_LIST": 20, "DATE_LIST": 20, "USERID_LIST": 20, "BOOLEAN_LIST": 5, "ENTITYID_LIST": 44}


def max_cell_bytes(model: Dict[str, Any]) -> int:
    """TableModelUtils.calculateMaxSizeForType: the most bytes a cell of the column may take (4 a character)."""
    column_type = model.get("columnType")
    size = int(model.get("maximumSize") or 0)
    length = int(model.get("maximumListLength") or 0)
    if column_type in ("STRING", "LINK"):
        return 4 * size
    if column_type == "STRING_LIST":
        return 4 * size * length
    if column_type in _LIST_CELL_BYTES:
        return _LIST_CELL_BYTES[column_type] * length
    return _CELL_BYTES.get(str(column_type), 0)


# --- PUT /entity/{id} -------------------------------------------------------------------------------
def update_entity(routes: Routes, request: Request) -> Response:
    """EntityController.updateEntity (EntityServiceImpl.updateEntity; the id is the body's, the path's when the body
    has none): UPDATE access, the etag checked (412 as NodeManagerImpl.lockAndCheckEtag), then the name, the parent
    (a move), the description and a view's columns, scope and mask; a view whose schema or scope changed is built
    again. 200 and the entity with its new etag."""
    body = request.json()
    entity = _existing(routes, _parse_id(body.get("id") or request.params[0]))
    _check_write(routes, request, entity, "UPDATE", entity.kind)
    if body.get("concreteType") not in (None, entity.kind.concrete_type):
        raise ApiError(400, f"syn{entity.id} is a {entity.kind.concrete_type}, not a {body.get('concreteType')}.")
    if entity.kind not in CREATABLE.values():
        raise ApiError(400, f"The emulator updates Project, Folder and EntityView entities, not {entity.kind.value}.")
    if body.get("etag") != entity.etag:
        raise ApiError(412, conflict_reason(entity.id))
    store = routes.store
    parent_ref = body.get("parentId")
    if entity.kind is not EntityKind.PROJECT and parent_ref is not None and _parse_id(parent_ref) != entity.parent_id:
        parent = _existing(routes, _parse_id(parent_ref))
        _check_write(routes, request, parent, "CREATE", entity.kind)
        try:
            store.move(entity.id, parent.id)
        except NameConflict:
            raise ApiError(
                409, f"An entity with the name: {entity.name} already exists with a parentId: {parent_ref}"
            ) from None
        except ValueError as error:
            raise ApiError(400, str(error)) from None
    name = body.get("name")
    if name is not None and name != entity.name:
        try:
            store.rename(entity.id, entity_name(str(name)))
        except InvalidName as error:
            raise ApiError(400, str(error)) from None
        except NameConflict:
            shown = f"syn{ROOT_ENTITY_ID}" if entity.parent_id is None else f"syn{entity.parent_id}"
            raise ApiError(409, f"An entity with the name: {name} already exists with a parentId: {shown}") from None
    fields = store.entity_fields(entity.id)
    if body.get("description") is not None:
        fields["description"] = str(body["description"])
    else:
        fields.pop("description", None)
    rebuild = False
    if entity.kind is EntityKind.ENTITYVIEW:
        view = _view_fields(routes, body)
        fields["isSearchEnabled"] = bool(body.get("isSearchEnabled") or False)
        before = store.table_schema(entity.id)
        rebuild = before != (view["columnIds"], view["scopeIds"], view["viewTypeMask"])
        store.set_table_schema(entity.id, view["columnIds"], view["scopeIds"], view["viewTypeMask"])
    store.set_entity_fields(entity.id, fields)
    store.touch(entity.id)
    if rebuild:
        rebuild_view(routes, entity.id)
    return Response(body=wire.entity_json(store, store.known_entity(entity.id)))


# --- DELETE /entity/{id} ----------------------------------------------------------------------------
def _skip_trash_can(query: Dict[str, str]) -> bool:
    text = query.get("skipTrashCan")
    if text is None or text == "":
        return False
    if text.lower() not in ("true", "false"):
        raise ApiError(400, f"Invalid boolean value [{text}]")
    return text.lower() == "true"


def delete_entity(routes: Routes, request: Request) -> Response:
    """EntityController.deleteEntity -> TrashManagerImpl.moveToTrash: 204. An entity that does not exist or is
    already in the trash can is a silent 204 too (PLFM-2921, PLFM-3923); else DELETE access, then the entity and
    its subtree go to the trash can (kept out of every listing; ``GET`` answers 404 "... is in trash can."), or with
    ``skipTrashCan=true`` are removed at once (Synapse flags them for a priority purge)."""
    entity_id = _parse_id(request.params[0])
    skip = _skip_trash_can(request.query)
    store = routes.store
    entity = store.entity(entity_id)
    if entity is None or store.in_trash(entity_id):
        return Response(status=204, body=b"")
    _check_write(routes, request, entity, "DELETE", entity.kind)
    if skip:
        store.delete(entity_id)
    else:
        store.move_to_trash(entity_id)
    return Response(status=204, body=b"")


# --- PUT /entity/{id}/annotations2 ------------------------------------------------------------------
#: AnnotationsV2Utils: the key pattern, the reserved keys, the limits; StringValueListValidator.MAX_STRING_SIZE
_ANNOTATION_KEY = re.compile(r"[a-zA-Z0-9,_.]+")
_RESERVED_ANNOTATION_KEYS = ("_accessrequirementids",)
MAX_ANNOTATION_KEYS = 100
MAX_VALUES_PER_KEY = 100
MAX_STRING_CHARACTERS = 500
#: AnnotationsV2ValueListValidator.NULL_IS_NOT_ALLOWED
NULL_VALUE = "null is not allowed. To indicate no values, use an empty list."
_LONG = re.compile(r"[+-]?[0-9]+")  # Long.valueOf


def _annotation_key(key: str) -> str:
    """AnnotationsV2Utils.checkKeyName (an InvalidModelException: 400)."""
    key = key.strip()
    if key == "":
        raise ApiError(400, "Annotation names cannot be empty strings")
    if not _ANNOTATION_KEY.fullmatch(key):
        raise ApiError(
            400, f"Invalid annotation name: '{key}'. Annotation names may only contain; letters, numbers, '_' and '.'"
        )
    if key.lower() in _RESERVED_ANNOTATION_KEYS:
        raise ApiError(400, f"Invalid annotation name: '{key}'. The annotation name is a system reserved annotation.")
    return key


def _annotation_values(key: str, given: object) -> List[Any]:
    """One AnnotationsValue -> the values as the store keeps them (str, int, float, bool), checked as
    AnnotationsV2Utils.checkValue and its value validators do (every value a string on the wire; a number or a
    boolean a client sends is read as its text)."""
    _annotation_key(key)
    if not isinstance(given, dict):
        raise ApiError(400, f"The value of annotation {key} must be an AnnotationsValue object.")
    values = given.get("value")
    if values is None:
        raise ApiError(400, f"value list for key={key} can not be null")
    if not isinstance(values, list):
        raise ApiError(400, f"annotation {key}: value must be an array.")
    if len(values) > MAX_VALUES_PER_KEY:
        raise ApiError(400, f"key={key} has exceeded the maximum number of values allowed: {MAX_VALUES_PER_KEY}")
    value_type = given.get("type")
    if value_type is None:
        raise ApiError(400, f"a value or a value type must be set for values associated with key={key}")
    if value_type not in ANNOTATION_TYPES:
        raise ApiError(400, f"annotation {key}: type must be one of {', '.join(ANNOTATION_TYPES)}.")
    kept: List[Any] = []
    characters = 0
    for value in values:
        if value is None:
            raise ApiError(400, NULL_VALUE)
        text = str(value).lower() if isinstance(value, bool) else str(value)
        try:
            if value_type in ("LONG", "TIMESTAMP_MS"):
                if not _LONG.fullmatch(text):
                    raise ValueError(text)
                kept.append(int(text))
            elif value_type == "DOUBLE":
                kept.append(float(text))
            elif value_type == "BOOLEAN":
                if text.lower() not in ("true", "false"):
                    raise ValueError(text)
                kept.append(text.lower() == "true")
            else:
                characters += len(text)
                if characters > MAX_STRING_CHARACTERS:
                    raise ApiError(
                        400, f"Total String value too long. Can be at most {MAX_STRING_CHARACTERS} characters."
                    )
                kept.append(text)
        except ValueError:
            raise ApiError(400, f"Value associated with key={key} is not valid for type={value_type}: {text}") from None
    return kept


def _annotation_map(annotations: Dict[Any, Any]) -> Dict[str, List[Any]]:
    """AnnotationsV2Utils.validateAnnotations: at most 100 keys, each checked."""
    if len(annotations) > MAX_ANNOTATION_KEYS:
        raise ApiError(400, f"Exceeded maximum number of annotation keys: {MAX_ANNOTATION_KEYS}")
    return {str(key): _annotation_values(str(key), given) for key, given in annotations.items()}


def put_annotations(routes: Routes, request: Request) -> Response:
    """EntityController.updateAnnotationsV2 (NodeManagerImpl.updateUserAnnotations): an etag is required (400, before
    the entity is looked at), then UPDATE access, the annotations checked, and they replace the entity's if their
    ``etag`` is the entity's (412 otherwise, lockAndCheckEtag); the entity is touched (a new etag and modifiedOn);
    200 and the annotations with the new etag."""
    body = request.json()
    etag = body.get("etag")
    if not etag:  # NodeManagerImpl.updateUserAnnotations: before the entity is looked at
        raise ApiError(400, "etag is required and must not be the empty string.")
    entity = _existing(routes, _parse_id(request.params[0]))
    _check_write(routes, request, entity, "UPDATE", entity.kind)
    annotations = body.get("annotations") or {}
    if not isinstance(annotations, dict):
        raise ApiError(400, "annotations must be a map.")
    values = _annotation_map(annotations)
    if etag != entity.etag:
        raise ApiError(412, conflict_reason(entity.id))
    routes.store.touch(entity.id)  # NodeDAOImpl.touch: modifiedOn (and modifiedBy) too
    routes.store.set_annotations(entity.id, {key: kept for key, kept in values.items() if kept})
    return Response(body=wire.annotations_json(routes.store, routes.store.known_entity(entity.id)))


#: the API listener matches these after ``routes.ROUTES`` (their GET routes share the paths)
ENTITY_WRITE_ROUTES = [
    _route("POST", r"/repo/v1/entity", create_entity, "entity"),
    _route("POST", r"/repo/v1/entity/bundle2/create", create_bundle, "bundle"),
    _route("PUT", r"/repo/v1/entity/([^/]+)", update_entity, "entity"),
    _route("DELETE", r"/repo/v1/entity/([^/]+)", delete_entity, "entity"),
    _route("PUT", r"/repo/v1/entity/([^/]+)/annotations2", put_annotations, "entity"),
]
