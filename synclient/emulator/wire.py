"""Store rows -> the JSON shapes the Synapse REST API documents (EntityHeader, FileEntity, ...)."""

from __future__ import annotations

import hashlib
from typing import Any, Dict, List, Optional

from .store import CALLER, DenyMode, Entity, EntityKind, FileHandle, HandleStorage, Store, Version

BUCKET = "synclient-emulator"
ROOT_ID = "syn4489"  # Synapse's root folder: the parentId of every project
#: the name Synapse gives a path item the caller may not read (NodeManagerImpl.ENTITY_NAME_PERMISSION_DENIED)
REDACTED_NAME = "Redacted"
ERROR_RESPONSE = "org.sagebionetworks.repo.model.ErrorResponse"
S3_FILE_HANDLE = "org.sagebionetworks.repo.model.file.S3FileHandle"
EXTERNAL_FILE_HANDLE = "org.sagebionetworks.repo.model.file.ExternalFileHandle"
#: Synapse labels (and comments) the current, not yet snapshotted version of a table or view so
#: (``TableConstants.IN_PROGRESS``, set when an entity of a table type is created)
IN_PROGRESS = "in progress"
VERSIONABLE = "org.sagebionetworks.repo.model.VersionableEntity"
#: the etag Synapse answers for any version that is not the current one, and for annotations asked of a named version
#: (``NodeConstants.ZERO_E_TAG``: lib/jdomodels/.../dbo/persistence/NodeMapper.java, NodeDAOImpl.java, PLFM-1420)
ZERO_ETAG = "00000000-0000-0000-0000-000000000000"


def syn(entity_id: int) -> str:
    return f"syn{entity_id}"


def error_body(reason: str) -> Dict[str, str]:
    return {"concreteType": ERROR_RESPONSE, "reason": reason}


def data_key(handle: FileHandle) -> str:
    """S3 key of a handle's bytes; its last segment is the blob's MD5 (the data listener's address)."""
    return f"{handle.created_by}/{handle.id}/{handle.md5}"


def data_path(handle: FileHandle) -> str:
    return f"/{BUCKET}/{data_key(handle)}"


def version_label(entity: Entity, version_number: int) -> str:
    return IN_PROGRESS if entity.kind.is_table_type else str(version_number)


def entity_header(store: Store, entity: Entity, version: Optional[Version] = None) -> Dict[str, Any]:
    """An EntityHeader; of the given file version (default: the current one) as Synapse's header query fills it:
    that revision's number, label and modifiedOn, ``isLatestVersion`` whether it is the current one
    (lib/jdomodels/.../dbo/dao/NodeDAOImpl.java ``ENTITY_HEADER_ROWMAPPER``)."""
    number = entity.current_version if version is None else version.version_number
    return {
        "name": entity.name,
        "id": syn(entity.id),
        "type": entity.kind.concrete_type,
        "versionNumber": number,
        "versionLabel": version_label(entity, number),
        "benefactorId": store.benefactor_id(entity),
        "createdOn": entity.created_on,
        "modifiedOn": entity.modified_on if version is None else version.modified_on,
        "createdBy": str(entity.created_by),
        "modifiedBy": str(entity.modified_by),
        "isLatestVersion": number == entity.current_version,
    }


def entity_json(store: Store, entity: Entity, version: Optional[Version] = None) -> Dict[str, Any]:
    """The Entity model; for files, of the given version (default: the current one)."""
    body: Dict[str, Any] = {
        "name": entity.name,
        "id": syn(entity.id),
        "etag": entity.etag,
        "createdOn": entity.created_on,
        "modifiedOn": entity.modified_on,
        "createdBy": str(entity.created_by),
        "modifiedBy": str(entity.modified_by),
        "parentId": ROOT_ID if entity.parent_id is None else syn(entity.parent_id),
        "concreteType": entity.kind.concrete_type,
    }
    if entity.kind is EntityKind.FILE:
        version = version or store.version(entity.id, entity.current_version)
        assert version is not None  # a file always has its current version
        latest = version.version_number == entity.current_version
        body.update(
            {
                "versionNumber": version.version_number,
                "versionLabel": str(version.version_number),
                "isLatestVersion": latest,
                "dataFileHandleId": str(version.file_handle_id),
            }
        )
        if not latest:
            body["etag"] = ZERO_ETAG
            body["modifiedOn"] = version.modified_on
    elif entity.kind is EntityKind.LINK:
        target_id = entity.link_target
        assert target_id is not None  # a link is made with its target
        target = store.entity(target_id) if target_id else None
        links_to: Dict[str, Any] = {"targetId": syn(target_id)}
        if entity.link_target_version is not None:
            links_to["targetVersionNumber"] = entity.link_target_version
        body["linksTo"] = links_to
        body["linksToClassName"] = target.kind.concrete_type if target else EntityKind.FILE.concrete_type
    elif entity.kind.is_item_list:
        body.update(_item_list_fields(store, entity))
    elif entity.kind.is_queryable:
        body.update(_queryable_fields(store, entity))
    if entity.kind in (EntityKind.PROJECT, EntityKind.FOLDER, EntityKind.ENTITYVIEW):
        body.update(store.entity_fields(entity.id))  # what POST /entity gave (description, isSearchEnabled)
    return body


def _table_version_fields(entity: Entity) -> Dict[str, Any]:
    """What every table type has: its one, current, "in progress" version (no snapshots in the emulator)."""
    return {
        "versionNumber": entity.current_version,
        "versionLabel": IN_PROGRESS,
        "versionComment": IN_PROGRESS,
        "isLatestVersion": True,
    }


def _queryable_fields(store: Store, entity: Entity) -> Dict[str, Any]:
    """An EntityView's (``scopeIds`` as numeric strings, ``viewTypeMask``) or a TableEntity's own fields."""
    column_ids, scope_ids, view_type_mask = store.table_schema(entity.id)
    fields: Dict[str, Any] = dict(
        _table_version_fields(entity), columnIds=[str(c) for c in column_ids], isSearchEnabled=False
    )
    if entity.kind is EntityKind.ENTITYVIEW:
        fields["scopeIds"] = [str(s) for s in scope_ids or []]
        fields["viewTypeMask"] = view_type_mask
    return fields


def _item_list_fields(store: Store, entity: Entity) -> Dict[str, Any]:
    """A Dataset's or DatasetCollection's own fields (Table -> View -> EntityRefCollectionView). No columns: the
    emulator's datasets have an empty schema, which Synapse allows (``GET /entity/{id}/column`` lists none)."""
    items = store.items(entity.id)
    fields: Dict[str, Any] = dict(
        _table_version_fields(entity),
        columnIds=[],
        isSearchEnabled=False,
        items=[{"entityId": syn(item.entity_id), "versionNumber": item.version_number} for item in items],
    )
    if entity.kind is EntityKind.DATASET:
        fields.update(_dataset_summary(store, items))
    return fields


def _dataset_summary(store: Store, items) -> Dict[str, Any]:
    """A Dataset's service-computed ``count``, ``size`` and ``checksum``, as Synapse's one SQL statement gives them
    (``NodeDAOImpl.SELECT_FILE_SUMMARY_FOR_ID_AND_VERSION``, set by ``DatasetMetadataProvider.validateEntity``):
    over the items whose version has a file handle, ``COUNT(*)``, ``SUM(size)`` (sizes not recorded add nothing; 0
    when none is) and ``MD5(GROUP_CONCAT(md5 ORDER BY md5 SEPARATOR ''))``: the MD5s sorted (the column's collation
    ignores case) and joined with no separator. MD5s not recorded are left out; with none at all (an empty dataset
    too) the checksum is SQL NULL, which Synapse does not write."""
    handles = []
    for item in items:
        version = store.version(item.entity_id, item.version_number)
        handle = store.file_handle(version.file_handle_id) if version else None
        if handle is not None:
            handles.append(handle)
    md5s = sorted((handle.md5 for handle in handles if handle.records_md5), key=str.lower)
    summary: Dict[str, Any] = {
        "size": sum(handle.size for handle in handles if handle.records_size),
        "count": len(handles),
    }
    if md5s:
        summary["checksum"] = hashlib.md5("".join(md5s).encode("utf-8")).hexdigest()
    return summary


def file_handle_json(handle: FileHandle, external_endpoint: str = "") -> Dict[str, Any]:
    """An S3FileHandle, or an ExternalFileHandle (no bucket, key or preview; contentMd5 and contentSize only when
    recorded: Synapse leaves out what a handle's creator did not give)."""
    if handle.storage.is_external:
        return _external_handle_json(handle, external_endpoint)
    return {
        "id": str(handle.id),
        "etag": handle.etag,
        "createdBy": str(handle.created_by),
        "createdOn": handle.created_on,
        "modifiedOn": handle.created_on,
        "concreteType": S3_FILE_HANDLE,
        "contentType": handle.content_type,
        "contentMd5": handle.md5,
        "fileName": handle.file_name,
        "storageLocationId": 1,
        "contentSize": handle.size,
        "status": "AVAILABLE",
        "bucketName": BUCKET,
        "key": data_key(handle),
        "isPreview": False,
    }


def external_url(handle: FileHandle, external_endpoint: str) -> str:
    """The handle's URL: emulator-served ones live on the external listener of this run (its port may change)."""
    if handle.storage is HandleStorage.EXTERNAL:
        return f"{external_endpoint}{handle.external_url}"
    return str(handle.external_url)


def _external_handle_json(handle: FileHandle, external_endpoint: str) -> Dict[str, Any]:
    body: Dict[str, Any] = {
        "id": str(handle.id),
        "etag": handle.etag,
        "createdBy": str(handle.created_by),
        "createdOn": handle.created_on,
        "modifiedOn": handle.created_on,
        "concreteType": EXTERNAL_FILE_HANDLE,
        "contentType": handle.content_type,
        "fileName": handle.file_name,
        "status": "AVAILABLE",
        "externalURL": external_url(handle, external_endpoint),
    }
    if handle.records_md5:
        body["contentMd5"] = handle.md5
    if handle.records_size:
        body["contentSize"] = handle.size
    return body


def _annotation_value(values: List[Any]) -> Dict[str, Any]:  # (values as stored: str, int, float, bool)
    if values and all(isinstance(v, bool) for v in values):
        kind, shown = "BOOLEAN", [str(v).lower() for v in values]
    elif values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        kind, shown = "LONG", [str(v) for v in values]
    elif values and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        kind, shown = "DOUBLE", [str(float(v)) for v in values]
    else:
        kind, shown = "STRING", [str(v) for v in values]
    return {"type": kind, "value": shown}


def annotations_json(store: Store, entity: Entity, of_version: bool = False) -> Dict[str, Any]:
    """Annotations v2: {"id", "etag", "annotations": {key: {"type", "value": [...]}}}; asked of a named version (even
    the current one) their etag is :data:`ZERO_ETAG` (NodeDAOImpl.getUserAnnotationsForVersion)."""
    stored = store.annotations(entity.id)
    return {
        "id": syn(entity.id),
        "etag": ZERO_ETAG if of_version else entity.etag,
        "annotations": {key: _annotation_value(list(values)) for key, values in stored.items()},
    }


def restriction_information(store: Store, entity: Entity, *, certified: bool = True) -> Dict[str, Any]:
    """A RestrictionInformationResponse of an entity without access requirements: Synapse always sets the caller's
    ``userEntityPermissions`` and ``restrictionDetails`` (``[]`` when nothing restricts it)
    (services/repository-managers/.../dataaccess/RestrictionInformationManagerImpl.java)."""
    permissions = permissions_json(store, entity, certified=certified)
    return {
        "objectId": entity.id,
        "restrictionLevel": "OPEN",
        "hasUnmetAccessRequirement": False,
        "userEntityPermissions": permissions,
        "restrictionDetails": [],
    }


def permissions_json(store: Store, entity: Entity, *, certified: bool = True) -> Dict[str, Any]:
    """The caller's UserEntityPermissions as Synapse computes them (services/repository-managers/.../manager/entity/
    EntityAuthorizationUtils.getUserPermissionsForEntity) for the emulator's caller: a certified user (the anonymous
    user is not) with READ and DOWNLOAD on the entity's ACL unless a deny takes them, no other ACL permission, no
    admin, no access requirement, no open data. So: canView/canDownload follow the deny; canUpload is "not
    anonymous"; isCertificationRequired is always true; canChangeSettings is granted to the entity's certified
    creator (EntityDeciderFunctions.GRANT_IF_USER_IS_CREATOR, before any ACL check); isDataContributor needs UPDATE
    and DELETE (UserAccessRestrictionUtils.isUserDataContributor); every other ACL-based field is false."""
    deny = store.effective_deny(entity)
    caller = CALLER.get() or store.user
    anonymous = caller.is_anonymous
    certified = certified and not anonymous  # ``certified=False``: the knob uncertified_user
    return {
        "canView": deny is not DenyMode.READ,
        "canEdit": False,
        "canMove": False,
        "canAddChild": False,
        "canCertifiedUserEdit": False,
        "canCertifiedUserAddChild": False,
        "isCertifiedUser": certified,
        "canChangePermissions": False,
        "canChangeSettings": certified and caller.id == entity.created_by,
        "canDelete": False,
        "canDownload": deny is DenyMode.NONE,
        "canUpload": not anonymous,
        "canEnableInheritance": False,
        "ownerPrincipalId": entity.created_by,
        "canPublicRead": False,
        "canModerate": False,
        "isCertificationRequired": True,
        "isEntityOpenData": False,
        "isDataContributor": False,
    }


def path_json(store: Store, entity: Entity) -> Dict[str, Any]:
    """An EntityPath: from Synapse's root folder down to the entity, each item only name, id and type (Synapse's
    path query selects those three: NodeDAOImpl.getEntityPath, ``NAME_ID_TYPE_ROWMAPPER``). Synapse names an item
    the caller may not read "Redacted" (NodeManagerImpl.getNodePath); the root folder's ACL grants authenticated
    users CREATE only (lib/jdomodels/.../private/bootstrap-entites-spb.xml), so the first item is always so named
    (an unreadable ancestor makes the entity unreadable in the emulator, which answers 403 before a path)."""
    chain = [entity.id] + store.ancestor_ids(entity.id)
    headers = [{"name": REDACTED_NAME, "id": ROOT_ID, "type": EntityKind.FOLDER.concrete_type}]
    found = store.entities(chain)
    for entity_id in reversed(chain):
        if entity_id in found:
            item = found[entity_id]
            headers.append({"name": item.name, "id": syn(item.id), "type": item.kind.concrete_type})
    return {"path": headers}


def version_info(
    entity_ref: str, entity: Entity, version: Optional[Version], handle: Optional[FileHandle]
) -> Dict[str, Any]:
    """A VersionInfo: of a file version, or (``version`` None) of the one revision every other entity has. ``id`` is
    the id as the caller wrote it; contentMd5/contentSize only when there are some: Synapse leaves null fields out
    (NodeDAOImpl.getVersionsOfEntity)."""
    number = entity.current_version if version is None else version.version_number
    body: Dict[str, Any] = {
        "id": entity_ref,
        "versionNumber": number,
        "versionLabel": str(number),
        "modifiedBy": str(entity.modified_by),
        "modifiedByPrincipalId": str(entity.modified_by),
        "modifiedOn": entity.modified_on if version is None else version.modified_on,
        "isLatestVersion": number == entity.current_version,
    }
    if handle is not None and handle.records_md5:
        body["contentMd5"] = handle.md5
    if handle is not None and handle.records_size:
        body["contentSize"] = str(handle.size)
    return body


def user_profile(user_id: int, user_name: str) -> Dict[str, Any]:
    return {
        "ownerId": str(user_id),
        "etag": "00000000-0000-0000-0000-000000000000",
        "userName": user_name,
        "firstName": "Emulated",
        "lastName": "User",
        "emails": [f"{user_name}@emulator.invalid"],
        "openIds": [],
        "createdOn": "2024-01-01T00:00:00.000Z",
    }
