"""Store rows -> the JSON shapes the Synapse REST API documents (EntityHeader, FileEntity, ...)."""
from __future__ import annotations

from typing import Dict, List, Optional

from .store import DenyMode, Entity, EntityKind, FileHandle, Store, Version

BUCKET = "synclient-emulator"
ROOT_ID = "syn4489"  # Synapse's root folder: the parentId of every project
ERROR_RESPONSE = "org.sagebionetworks.repo.model.ErrorResponse"
S3_FILE_HANDLE = "org.sagebionetworks.repo.model.file.S3FileHandle"
VERSIONABLE = "org.sagebionetworks.repo.model.VersionableEntity"


def syn(entity_id: int) -> str:
    return f"syn{entity_id}"


def error_body(reason: str) -> Dict[str, str]:
    return {"concreteType": ERROR_RESPONSE, "reason": reason}


def data_key(handle: FileHandle) -> str:
    """S3 key of a handle's bytes; its last segment is the blob's MD5 (the data listener's address)."""
    return f"{handle.created_by}/{handle.id}/{handle.md5}"


def data_path(handle: FileHandle) -> str:
    return f"/{BUCKET}/{data_key(handle)}"


def entity_header(store: Store, entity: Entity) -> Dict[str, object]:
    version = entity.current_version
    return {
        "name": entity.name,
        "id": syn(entity.id),
        "type": entity.kind.concrete_type,
        "versionNumber": version,
        "versionLabel": str(version),
        "benefactorId": store.benefactor_id(entity),
        "createdOn": entity.created_on,
        "modifiedOn": entity.modified_on,
        "createdBy": str(entity.created_by),
        "modifiedBy": str(entity.modified_by),
        "isLatestVersion": True,
    }


def entity_json(store: Store, entity: Entity, version: Optional[Version] = None) -> Dict[str, object]:
    """The Entity model; for files, of the given version (default: the current one)."""
    body: Dict[str, object] = {
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
        latest = version.version_number == entity.current_version
        body.update({
            "versionNumber": version.version_number,
            "versionLabel": str(version.version_number),
            "isLatestVersion": latest,
            "dataFileHandleId": str(version.file_handle_id),
        })
        if not latest:
            body["etag"] = version.etag
            body["modifiedOn"] = version.modified_on
    elif entity.kind is EntityKind.LINK:
        target = store.entity(entity.link_target) if entity.link_target else None
        links_to: Dict[str, object] = {"targetId": syn(entity.link_target)}
        if entity.link_target_version is not None:
            links_to["targetVersionNumber"] = entity.link_target_version
        body["linksTo"] = links_to
        body["linksToClassName"] = (target.kind.concrete_type if target else EntityKind.FILE.concrete_type)
    return body


def file_handle_json(handle: FileHandle) -> Dict[str, object]:
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


def _annotation_value(values: List[object]) -> Dict[str, object]:
    if values and all(isinstance(v, bool) for v in values):
        kind, shown = "BOOLEAN", [str(v).lower() for v in values]
    elif values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        kind, shown = "LONG", [str(v) for v in values]
    elif values and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        kind, shown = "DOUBLE", [str(float(v)) for v in values]
    else:
        kind, shown = "STRING", [str(v) for v in values]
    return {"type": kind, "value": shown}


def annotations_json(store: Store, entity: Entity) -> Dict[str, object]:
    """Annotations v2: {"id", "etag", "annotations": {key: {"type", "value": [...]}}}."""
    stored = store.annotations(entity.id)
    return {
        "id": syn(entity.id),
        "etag": entity.etag,
        "annotations": {key: _annotation_value(list(values)) for key, values in stored.items()},
    }


def restriction_information(entity: Entity) -> Dict[str, object]:
    return {
        "objectId": entity.id,
        "restrictionLevel": "OPEN",
        "hasUnmetAccessRequirement": False,
    }


def permissions_json(store: Store, entity: Entity) -> Dict[str, object]:
    deny = store.effective_deny(entity)
    return {
        "canView": deny is not DenyMode.READ,
        "canEdit": False,
        "canMove": False,
        "canAddChild": False,
        "canCertifiedUserEdit": False,
        "canCertifiedUserAddChild": False,
        "isCertifiedUser": True,
        "canChangePermissions": False,
        "canChangeSettings": False,
        "canDelete": False,
        "canDownload": deny is DenyMode.NONE,
        "canUpload": False,
        "canEnableInheritance": False,
        "ownerPrincipalId": entity.created_by,
        "canPublicRead": False,
        "canModerate": False,
        "isCertificationRequired": False,
        "isEntityOpenData": False,
    }


def path_json(store: Store, entity: Entity) -> Dict[str, object]:
    chain = [entity.id] + store.ancestor_ids(entity.id)
    headers = [{"name": "root", "id": ROOT_ID, "type": EntityKind.FOLDER.concrete_type}]
    found = store.entities(chain)
    for entity_id in reversed(chain):
        if entity_id in found:
            headers.append(entity_header(store, found[entity_id]))
    return {"path": headers}


def version_info(entity: Entity, version: Version, handle: Optional[FileHandle]) -> Dict[str, object]:
    return {
        "id": syn(entity.id),
        "versionNumber": version.version_number,
        "versionLabel": str(version.version_number),
        "modifiedBy": str(entity.modified_by),
        "modifiedByPrincipalId": str(entity.modified_by),
        "modifiedOn": version.modified_on,
        "contentMd5": handle.md5 if handle else None,
        "contentSize": str(handle.size) if handle else None,
        "isLatestVersion": version.version_number == entity.current_version,
    }


def user_profile(user_id: int, user_name: str) -> Dict[str, object]:
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
