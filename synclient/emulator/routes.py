"""The platform routes of the API listener: Synapse REST semantics on top of the store.

Each route takes a ``Request`` and returns a ``Response`` or raises ``ApiError``; the HTTP
pipeline around them (auth, throttles, faults, latency) lives in ``api.py``.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Pattern, Tuple
from urllib.parse import unquote

from . import hostile, wire
from .signing import sign_url
from .store import CALLER, DenyMode, Entity, EntityKind, SortBy, User, parse_syn_id
from .tables import table_download_failure

log = logging.getLogger("synclient.emulator")
#: Synapse's root folder (the parent of every project); ``parentId`` of a project lookup (EntityManagerImpl.ROOT_ID)
ROOT_ENTITY_ID = 4489

PAGE_SIZE = 50
MAX_BATCH_FILES = 100
FILE_ENTITY_ASSOCIATION = "FileEntity"
TABLE_ENTITY_ASSOCIATION = "TableEntity"
INCLUDE_TYPES = {kind.value: kind for kind in EntityKind}
# Types Synapse knows but the emulator never stores: accepted in includeTypes, never matched.
# Newer clients send types added after this list was written, so any other lowercase word is accepted.
OTHER_TYPES = re.compile(r"^[a-z]+$")
EMULATOR_VERSION = "emulator-1"
#: SynapseVersionInfo's ``stackInstance`` (schema .../repo/model/versionInfo/SynapseVersionInfo.json), which Synapse's
#: SynapseVersionInfoController always sets from its stack configuration
EMULATOR_STACK_INSTANCE = "emulator"
#: the file handle associations ``GET /file/{id}`` accepts (schema .../repo/model/file/FileHandleAssociateType.json)
FILE_HANDLE_ASSOCIATE_TYPES = frozenset(
    (
        "FileEntity",
        "TableEntity",
        "WikiAttachment",
        "WikiMarkdown",
        "UserProfileAttachment",
        "MessageAttachment",
        "TeamAttachment",
        "SubmissionAttachment",
        "VerificationSubmission",
        "AccessRequirementAttachment",
        "DataAccessRequestAttachment",
        "DataAccessSubmissionAttachment",
        "FormData",
    )
)


class ApiError(Exception):
    def __init__(self, status: int, reason: str, headers: Optional[Dict[str, str]] = None) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.headers = headers or {}


@dataclass
class Request:
    method: str
    path: str
    query: Dict[str, str]
    body: bytes
    user: Optional[User]
    params: Tuple[str, ...]

    @property
    def caller(self) -> User:
        """The user of a route that needs authentication: the dispatcher always names one (maybe anonymous)."""
        if self.user is None:
            raise ApiError(401, "Invalid access token")
        return self.user

    def json(self) -> dict:
        if not self.body:
            return {}
        try:
            value = json.loads(self.body)
        except ValueError:
            raise ApiError(400, "The request body is not valid JSON.") from None
        if not isinstance(value, dict):
            raise ApiError(400, "The request body must be a JSON object.")
        return value


@dataclass
class Response:
    status: int = 200
    body: object = None  # JSON-able, or bytes/str for text
    headers: Optional[Dict[str, str]] = None
    content_type: str = "application/json;charset=UTF-8"


@dataclass(frozen=True)
class Route:
    method: str
    pattern: Pattern
    handler: Callable[[Routes, Request], Response]
    route_class: str
    needs_auth: bool = True


#: an entity id in a path, ``syn`` in any case (Synapse lower-cases ids: KeyFactory.stringToKey)
_ID = r"((?i:syn)?\d+)"
#: the entity routes' id: any segment, read by ``Routes._entity`` (400 when it is not an id, as Synapse answers)
_ANY_ID = r"([^/]+)"


class Routes:
    """The platform routes; each takes a Request and returns a Response or raises ApiError."""

    def __init__(self, context) -> None:
        self.context = context
        self.store = context.store

    # --- helpers ------------------------------------------------------------------------------
    def _entity(self, ref: str, need: DenyMode = DenyMode.READ) -> Entity:
        try:
            entity_id = parse_syn_id(ref)
        except ValueError:
            raise ApiError(400, invalid_id_reason(ref)) from None
        entity = self.store.entity(entity_id)
        if entity is None:
            raise ApiError(404, not_found_reason(f"syn{entity_id}"))
        if self.store.in_trash(entity_id):  # EntityDeciderFunctions.DENY_IF_IN_TRASH: EntityInTrashCanException, 404
            raise ApiError(404, f"Entity syn{entity_id} is in trash can.")
        if self.store.effective_deny(entity) is DenyMode.READ:
            raise ApiError(403, lack_access_reason("READ"))
        return entity

    def _certified(self) -> bool:
        """Whether the caller is a certified user (the knob ``uncertified_user`` says it is not)."""
        return not self.context.knobs.uncertified_user

    def _version(self, entity: Entity, version_text: Optional[str]):
        if version_text is None:
            return None
        number = int(version_text)
        if entity.kind is not EntityKind.FILE:
            if number != 1:
                raise ApiError(404, not_found_reason(f"syn{entity.id}.{number}"))
            return None
        version = self.store.version(entity.id, number)
        if version is None:
            raise ApiError(404, not_found_reason(f"syn{entity.id}.{number}"))
        return version

    def _handle_json(self, handle) -> Dict[str, Any]:
        """The handle's JSON; with ``hostile_handle_rate`` some handles misdescribe their bytes (hostile.py)."""
        return hostile.lie_about_handle(
            self.context.knobs, wire.file_handle_json(handle, self.context.external_endpoint)
        )

    def _presigned_url(self, handle) -> str:
        """A signed data-host URL; for an external handle Synapse answers its externalURL itself."""
        if handle.storage.is_external:
            return hostile.external_url(
                self.context.knobs, str(handle.id), wire.external_url(handle, self.context.external_endpoint)
            )
        return sign_url(
            self.store.secret, self.context.data_endpoint, wire.data_path(handle), self.context.knobs.url_lifetime
        )

    # --- routes -------------------------------------------------------------------------------
    def version(self, request: Request) -> Response:
        return Response(body={"version": EMULATOR_VERSION, "stackInstance": EMULATOR_STACK_INSTANCE})

    def user_profile(self, request: Request) -> Response:
        return Response(body=wire.user_profile(request.caller.id, request.caller.user_name))

    def get_entity(self, request: Request) -> Response:
        entity = self._entity(request.params[0])
        version = self._version(entity, request.params[1] if len(request.params) > 1 else None)
        return Response(body=wire.entity_json(self.store, entity, version))

    def entity_type(self, request: Request) -> Response:
        return Response(body=wire.entity_header(self.store, self._entity(request.params[0])))

    def entity_versions(self, request: Request) -> Response:
        """VersionInfo pages, newest first. A table type's current version is "in progress", not a snapshot, and
        Synapse skips it (NodeManagerImpl.getVersionsOfEntity): with no snapshots in the emulator that lists none.
        Every other entity has revision 1 at least (NodeDAOImpl.createNewNode), files one revision per version.
        ``totalNumberOfResults`` is Synapse's estimate from the page (PaginatedResults.createWithLimitAndOffset)."""
        entity = self._entity(request.params[0])
        offset = _int_param(request.query, "offset", 0)
        limit = _int_param(request.query, "limit", 10)
        if offset < 0:
            raise ApiError(400, "pagination offset must be 0 or greater")
        if limit < 1:
            raise ApiError(400, "pagination limit must be 1 or greater")
        ref = unquote(request.params[0])
        if entity.kind.is_table_type:
            results: List[Dict[str, Any]] = []
        elif entity.kind is EntityKind.FILE:
            results = [
                wire.version_info(ref, entity, v, self.store.file_handle(v.file_handle_id))
                for v in self.store.versions(entity.id)[offset : offset + limit]
            ]
        else:
            results = [wire.version_info(ref, entity, None, None)][offset : offset + limit]
        total = offset + len(results) + (1 if len(results) >= limit else 0)
        return Response(body={"results": results, "totalNumberOfResults": total})

    def entity_path(self, request: Request) -> Response:
        return Response(body=wire.path_json(self.store, self._entity(request.params[0])))

    def annotations(self, request: Request) -> Response:
        entity = self._entity(request.params[0])
        named = len(request.params) > 1
        if named:
            try:
                self._version(entity, request.params[1])
            except ApiError:  # NodeDAOImpl.getUserAnnotationsForVersion: CANNOT_FIND_A_NODE_WITH_ID + the id as sent
                raise ApiError(404, f"Cannot find a node with id: {unquote(request.params[0])}") from None
        return Response(body=wire.annotations_json(self.store, entity, of_version=named))

    def generated_by(self, request: Request) -> Response:
        """No provenance in the emulator: 404 "No activity", Synapse's answer for a revision without one. Synapse
        looks the revision up first and checks no READ (NodeManagerImpl.getActivityForNode, NodeDAOImpl
        .getActivityId/getCurrentRevisionNumber, DBOActivityDAOImpl.getDBO)."""
        ref = unquote(request.params[0])
        try:
            entity = self.store.entity(parse_syn_id(ref))
        except ValueError:
            raise ApiError(400, invalid_id_reason(ref)) from None
        if entity is None:
            raise ApiError(404, not_found_reason(ref))
        if len(request.params) > 1:
            number = int(request.params[1])
            exists = (
                self.store.version(entity.id, number) is not None
                if entity.kind is EntityKind.FILE
                else number == entity.current_version
            )
            if not exists:
                raise ApiError(404, f"Activity for: '{ref}', version: '{number}' does not exist")
        raise ApiError(404, "No activity")

    def bundle(self, request: Request) -> Response:
        wanted = request.json()
        entity = self._entity(request.params[0])
        version = self._version(entity, request.params[1] if len(request.params) > 1 else None)
        body: Dict[str, Any] = {}
        if wanted.get("includeEntity"):
            body["entity"] = wire.entity_json(self.store, entity, version)
            body["entityType"] = entity.kind.value
        if wanted.get("includeAnnotations"):
            body["annotations"] = wire.annotations_json(self.store, entity, of_version=len(request.params) > 1)
        if wanted.get("includePermissions"):
            body["permissions"] = wire.permissions_json(self.store, entity, certified=self._certified())
        if wanted.get("includeEntityPath"):
            body["path"] = wire.path_json(self.store, entity)
        if wanted.get("includeHasChildren"):
            count, _ = self.store.count_children(entity.id, list(EntityKind))
            body["hasChildren"] = count > 0
        handle = None
        # Synapse reads the handle only with DOWNLOAD access and answers an empty list (and no fileName) without it
        # (EntityBundleServiceImpl.getEntityBundle; NodeManagerImpl.getFileHandleIdForVersion checks DOWNLOAD)
        if entity.kind is EntityKind.FILE and self.store.effective_deny(entity) is DenyMode.NONE:
            file_version = version or self.store.version(entity.id, entity.current_version)
            handle = self.store.file_handle(file_version.file_handle_id)
        if wanted.get("includeFileHandles"):
            body["fileHandles"] = [self._handle_json(handle)] if handle else []
        if wanted.get("includeFileName") and handle:
            body["fileName"] = hostile.file_name(self.context.knobs, str(handle.id), handle.file_name)
        if wanted.get("includeRestrictionInformation"):
            body["restrictionInformation"] = wire.restriction_information(
                self.store, entity, certified=self._certified()
            )
        if wanted.get("includeThreadCount"):
            body["threadCount"] = 0
        if wanted.get("includeBenefactorACL") or wanted.get("includeAccessControlList"):
            acl = {
                "id": f"syn{self.store.benefactor_id(entity)}",
                "etag": entity.etag,
                "resourceAccess": [{"principalId": entity.created_by, "accessType": ["READ", "DOWNLOAD"]}],
            }
            if wanted.get("includeBenefactorACL"):
                body["benefactorAcl"] = acl
            if wanted.get("includeAccessControlList") and self.store.benefactor_id(entity) == entity.id:
                body["accessControlList"] = acl
        return Response(body=body)

    def restriction_information(self, request: Request) -> Response:
        """RestrictionInformationRequest -> RestrictionInformationResponse. Synapse checks no READ on the object
        (the caller's permissions are in the answer) and supports ENTITY and TEAM; the emulator has no teams
        (RestrictionInformationManagerImpl.getRestrictionInformation)."""
        wanted = request.json()
        if wanted.get("objectId") is None:
            raise ApiError(400, "RestrictionInformationRequest.objectId is required.")
        object_type = wanted.get("restrictableObjectType")
        if object_type is None:
            raise ApiError(400, "RestrictionInformationRequest.restrictableObjectType is required.")
        if object_type != "ENTITY":
            raise ApiError(400, f"Unsupported type: {object_type}")
        try:
            entity_id = parse_syn_id(wanted["objectId"])
        except ValueError:
            raise ApiError(400, invalid_id_reason(wanted["objectId"])) from None
        entity = self.store.entity(entity_id)
        if entity is None:
            raise ApiError(404, not_found_reason(f"syn{entity_id}"))
        return Response(body=wire.restriction_information(self.store, entity, certified=self._certified()))

    def children(self, request: Request) -> Response:
        """Synapse's ``EntityManagerImpl.getChildren``: a null parentId lists projects (includeTypes is then
        [project], whatever was asked); else includeTypes is required, the caller needs READ on the parent, and
        children the caller may not read are left out of the page and of the counts
        (``EntityAclManager.getNonvisibleChildren``)."""
        query = request.json()
        parent_ref = query.get("parentId")
        parent_id = None
        if parent_ref is None:
            kinds = [EntityKind.PROJECT]
        else:
            kinds = self._include_types(query.get("includeTypes"))
            parent = self._entity(str(parent_ref))
            parent_id = parent.id
        try:
            sort_by = SortBy[query.get("sortBy") or "NAME"]
        except KeyError:
            raise ApiError(400, f"Unknown sortBy: {query.get('sortBy')}") from None
        direction = query.get("sortDirection") or "ASC"
        if direction not in ("ASC", "DESC"):
            raise ApiError(400, f"Unknown sortDirection: {direction}")
        asked = query.get("nextPageToken")
        limit, offset = parse_page_token(asked)
        page = self.store.children(parent_id, kinds, sort_by, direction == "ASC", limit + 1, offset)
        body: Dict[str, Any] = {"page": [wire.entity_header(self.store, e) for e in page[:limit]]}
        honest = make_page_token(limit, offset + limit) if len(page) > limit else None
        token = hostile.children_token(
            self.context.knobs,
            "root" if parent_id is None else f"syn{parent_id}",
            asked or None,
            honest,
            make_page_token(limit, 0),
        )
        if token is not None:
            body["nextPageToken"] = token
        if query.get("includeTotalChildCount") or query.get("includeSumFileSizes"):
            count, total = self.store.count_children(parent_id, kinds, readable_only=True)
            if query.get("includeTotalChildCount"):
                body["totalChildCount"] = count
            if query.get("includeSumFileSizes"):
                body["sumFileSizesBytes"] = total
        return Response(body=body)

    @staticmethod
    def _include_types(types) -> List[EntityKind]:
        if types is None:  # ValidateArgument.required (EntityManagerImpl.getChildren)
            raise ApiError(400, "EntityChildrenRequest.includeTypes is required.")
        if not isinstance(types, list):
            raise ApiError(400, "includeTypes must be a list.")
        kinds = []
        for name in types:
            key = str(name).lower()
            if key in INCLUDE_TYPES:
                kinds.append(INCLUDE_TYPES[key])
            elif not OTHER_TYPES.match(key):
                raise ApiError(400, f"Unknown EntityType: {name}")
        if not types:
            raise ApiError(400, "EntityChildrenRequest.includeTypes must include at least one type")
        return kinds

    def headers(self, request: Request) -> Response:
        """One header per reference, in their order, of the version a reference names (``targetVersionNumber``) or
        the current one; a reference without ``targetId``, to an entity or version that does not exist, or that
        the caller cannot read is left out (NodeDAOImpl.getEntityHeader(List<Reference>), NodeManagerImpl
        .getNodeHeader). ``totalNumberOfResults`` is the page's size (createMisusedPaginatedResults)."""
        references = request.json().get("references") or []
        if not isinstance(references, list):
            raise ApiError(400, "references must be a list.")
        wanted: List[Tuple[int, Optional[int]]] = []
        for reference in references:
            if not isinstance(reference, dict):
                raise ApiError(400, f"Invalid reference: {reference}")
            target = reference.get("targetId")
            if target is None:
                continue
            try:
                wanted.append((parse_syn_id(target), _version_number(reference.get("targetVersionNumber"))))
            except ValueError:
                raise ApiError(400, invalid_id_reason(target)) from None
        found = self.store.entities([entity_id for entity_id, _ in wanted])
        results = []
        for entity_id, number in wanted:
            entity = found.get(entity_id)
            if entity is None or self.store.effective_deny(entity) is DenyMode.READ:
                continue
            if number is None or number == entity.current_version:
                results.append(wire.entity_header(self.store, entity))
                continue
            version = self.store.version(entity_id, number) if entity.kind is EntityKind.FILE else None
            if version is not None:
                results.append(wire.entity_header(self.store, entity, version))
        return Response(body={"results": results, "totalNumberOfResults": len(results)})

    def lookup_child(self, request: Request) -> Response:
        """``POST /entity/child``: EntityLookupRequest -> EntityId; a null ``parentId`` looks up a project by name
        (EntityController.lookupChild, EntityManagerImpl.lookupChild, NodeDAOImpl.lookupChild)."""
        query = request.json()
        name = query.get("entityName")
        if name is None:
            raise ApiError(400, "EntityLookupRequest.entityName is required.")
        parent_ref = query.get("parentId")
        parent_id = None
        if parent_ref is not None:
            try:
                parent_id = parse_syn_id(parent_ref)
            except ValueError:
                raise ApiError(400, invalid_id_reason(parent_ref)) from None
            if parent_id == ROOT_ENTITY_ID:
                parent_id = None
            else:
                parent = self.store.entity(parent_id)
                if parent is None or self.store.effective_deny(parent) is DenyMode.READ:
                    raise ApiError(403, "Lack of READ permission on the parent entity.")
        found = self.store.child_by_name(parent_id, str(name))
        if found is None:
            shown = str(ROOT_ENTITY_ID) if parent_ref is None else str(parent_ref)
            raise ApiError(404, f"Child not found for parent: '{shown}' with name: '{name}'")
        child = self.store.entity(found)
        if child is None or self.store.effective_deny(child) is DenyMode.READ:
            raise ApiError(403, "Lack of READ permission on the requested entity.")
        return Response(body={"id": f"syn{found}"})

    def file_handle_batch(self, request: Request) -> Response:
        """Synapse's ``FileHandleManagerImpl.getFileHandleAndUrlBatch``: its checks in its order and words, then
        authorization first (``AuthorizationManagerImpl.canDownLoadFile``): a handle not known through the object
        is UNAUTHORIZED; NOT_FOUND only for an authorized handle that is missing."""
        query = request.json()
        requested = query.get("requestedFiles")
        if requested is None:
            raise ApiError(400, "requestedFiles is required.")
        if not isinstance(requested, list):
            raise ApiError(400, "requestedFiles must be a list.")
        want_urls = bool(query.get("includePreSignedURLs"))
        want_handles = bool(query.get("includeFileHandles"))
        if not (want_urls or want_handles or query.get("includePreviewPreSignedURLs")):
            raise ApiError(400, "Must include either FileHandles or pre-signed URLs or preview pre-signed URLs")
        if len(requested) > MAX_BATCH_FILES:
            raise ApiError(400, f"Request exceeds the maximum number of objects per request: {MAX_BATCH_FILES}")
        if not requested:
            raise ApiError(400, "FileHandleAssociations is empty.  Must include at least one FileHandleAssociation")
        for item in requested:  # AuthorizationManagerImpl.validate(FileHandleAssociation)
            if item is None:
                raise ApiError(400, "FileHandleAssociation cannot be null")
            if not isinstance(item, dict):
                raise ApiError(400, "Each requested file must be an object.")
            for field in ("fileHandleId", "associateObjectId", "associateObjectType"):
                if item.get(field) is None:
                    raise ApiError(400, f"FileHandleAssociation.{field} cannot be null")
        results = []
        for item in requested:
            handle_ref = str(item["fileHandleId"])
            result: Dict[str, Any] = {"fileHandleId": handle_ref}
            failure = self._download_failure(handle_ref, item.get("associateObjectId"), item.get("associateObjectType"))
            if failure:
                result["failureCode"] = failure
            else:
                handle = self.store.file_handle(int(handle_ref))
                if want_handles:
                    result["fileHandle"] = self._handle_json(handle)
                if want_urls:
                    result["preSignedURL"] = self._presigned_url(handle)
            results.append(result)
        return Response(status=201, body={"requestedFiles": results})

    def _download_failure(self, handle_ref: str, object_ref, object_type) -> Optional[str]:
        """None when the caller may download the handle through that object, else a failureCode. As Synapse's
        ``AuthorizationManagerImpl.canDownloadFile``: the handle's creator may always; anyone else needs the handle
        to be the object's and DOWNLOAD on the object. An unknown handle is therefore UNAUTHORIZED."""
        handle = self.store.file_handle(int(handle_ref)) if handle_ref.isdigit() else None
        caller = CALLER.get()
        if handle is not None and caller is not None and handle.created_by == caller.id:
            return None
        if handle is None:
            return "UNAUTHORIZED"
        if object_type == TABLE_ENTITY_ASSOCIATION:
            return table_download_failure(self.store, int(handle_ref), object_ref)
        if object_type != FILE_ENTITY_ASSOCIATION:
            return "UNAUTHORIZED"
        try:
            entity = self.store.entity(parse_syn_id(object_ref))
        except ValueError:
            return "UNAUTHORIZED"
        if entity is None or not self.store.handle_is_used_by(int(handle_ref), entity.id):
            return "UNAUTHORIZED"
        if self.store.effective_deny(entity) is not DenyMode.NONE:
            return "UNAUTHORIZED"
        return None

    def file_url(self, request: Request) -> Response:
        handle_ref = request.params[0]
        _require_association(request.query)
        failure = self._download_failure(
            handle_ref, request.query.get("fileAssociateId"), request.query.get("fileAssociateType")
        )
        if failure == "NOT_FOUND":
            raise ApiError(404, f"FileHandle {handle_ref} does not exist.")
        if failure:
            raise ApiError(403, f"You lack DOWNLOAD access to file handle {handle_ref}.")
        return self._url_response(self.store.file_handle(int(handle_ref)), request)

    def entity_file_url(self, request: Request) -> Response:
        entity = self._entity(request.params[0])
        if entity.kind is not EntityKind.FILE:
            raise ApiError(400, f"syn{entity.id} is not a file.")
        version = self._version(entity, request.params[1] if len(request.params) > 1 else None)
        version = version or self.store.version(entity.id, entity.current_version)
        if self.store.effective_deny(entity) is not DenyMode.NONE:
            raise ApiError(403, lack_access_reason("DOWNLOAD"))
        return self._url_response(self.store.file_handle(version.file_handle_id), request)

    def _url_response(self, handle, request: Request) -> Response:
        url = self._presigned_url(handle)
        if request.query.get("redirect", "true").lower() == "false":
            return Response(body=url, content_type="text/plain;charset=UTF-8")
        return Response(status=307, body=b"", headers={"Location": url})


def lack_access_reason(access_type: str) -> str:
    """Synapse's 403 reason when an entity's ACL does not grant the access (EntityDeciderFunctions.DENY,
    AuthorizationConstants.ERR_MSG_YOU_LACK_ACCESS_TO_REQUESTED_ENTITY_TEMPLATE)."""
    return f"You lack {access_type} access to the requested entity."


def not_found_reason(what: str) -> str:
    """Synapse's 404 reason for an entity (``syn1``) or a version (``syn1.2``, IdAndVersion.toString) that does not
    exist (NodeDAOImpl.RESOURCE_DOES_NOT_EXIST; EntityDeciderFunctions.DENY_IF_DOES_NOT_EXIST)."""
    return f"Resource: '{what}' does not exist"


def invalid_id_reason(ref) -> str:
    """Synapse's 400 reason for an id it cannot read (KeyFactory.IS_NOT_A_VALID_SYNAPSE_ID_SUFFIX)."""
    return f"{unquote(str(ref))} is not a valid Synapse ID."


def _int_param(query: Dict[str, str], name: str, default: int) -> int:
    """An Integer request parameter; not a number is Spring's 400 (a MethodArgumentTypeMismatchException)."""
    text = query.get(name)
    if text is None:
        return default
    if re.match(r"^[+-]?[0-9]+$", text) and -(2**31) <= int(text) < 2**31:
        return int(text)
    raise ApiError(
        400,
        "Failed to convert value of type 'java.lang.String' to required type 'java.lang.Integer'; "
        f'nested exception is java.lang.NumberFormatException: For input string: "{text}"',
    )


def _version_number(value) -> Optional[int]:
    """A Reference's ``targetVersionNumber``: absent/null, or an integer."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ApiError(400, f"targetVersionNumber must be an integer: {value!r}")
    return value


def _require_association(query: Dict[str, str]) -> None:
    """``GET /file/{id}`` declares ``fileAssociateType`` and ``fileAssociateId`` required (UploadController
    .fileRedirectURLForAffiliate): Spring answers 400 with its MissingServletRequestParameterException message,
    the type checked first; a type that is no FileHandleAssociateType fails its conversion, also 400."""
    for name, java_type in (("fileAssociateType", "FileHandleAssociateType"), ("fileAssociateId", "String")):
        if name not in query:
            raise ApiError(
                400, f"Required request parameter '{name}' for method parameter type {java_type} is not present"
            )
    if query["fileAssociateType"] not in FILE_HANDLE_ASSOCIATE_TYPES:
        raise ApiError(
            400,
            "Failed to convert value of type 'java.lang.String' to required type "
            "'org.sagebionetworks.repo.model.file.FileHandleAssociateType'",
        )


def parse_page_token(token) -> Tuple[int, int]:
    """``"{limit}a{offset}"`` -> (limit, offset); None -> first page. Refused as Synapse's ``NextPageToken`` refuses
    a token (in its words): not two parts around ``a`` (Java's ``split``, trailing empty parts dropped), a part that
    is not a number, a limit over 50. A limit under 1 or a negative offset, which Synapse would take into its SQL,
    the emulator refuses too."""
    if token is None or token == "":
        return PAGE_SIZE, 0
    text = str(token)
    parts = text.split("a")
    while parts and parts[-1] == "":
        parts.pop()
    if len(parts) != 2:
        raise ApiError(400, f"Unknow token format: {text}")
    for part in parts:
        if not re.fullmatch(r"[+-]?[0-9]+", part):
            raise ApiError(400, f'For input string: "{part}"')
    limit, offset = int(parts[0]), int(parts[1])
    if limit > PAGE_SIZE:
        raise ApiError(400, f"Limit must not exceed: {PAGE_SIZE}")
    if limit <= 0 or offset < 0:
        raise ApiError(400, f"Invalid nextPageToken: {text}")
    return limit, offset


def make_page_token(limit: int, offset: int) -> str:
    return f"{limit}a{offset}"


def _route(method: str, path: str, handler, route_class: str, needs_auth: bool = True) -> Route:
    return Route(method, re.compile("^" + path + "$"), handler, route_class, needs_auth)


ROUTES: List[Route] = [
    _route("GET", r"/repo/v1/version", Routes.version, "other", needs_auth=False),
    _route("GET", r"/repo/v1/userProfile/?", Routes.user_profile, "other"),
    _route("POST", r"/repo/v1/entity/children", Routes.children, "children"),
    _route("POST", r"/repo/v1/entity/header", Routes.headers, "entity"),
    _route("POST", r"/repo/v1/entity/child", Routes.lookup_child, "entity"),
    _route("POST", r"/repo/v1/restrictionInformation", Routes.restriction_information, "other"),
    _route("GET", rf"/repo/v1/entity/{_ANY_ID}", Routes.get_entity, "entity"),
    _route("GET", rf"/repo/v1/entity/{_ANY_ID}/version/(\d+)", Routes.get_entity, "entity"),
    _route("GET", rf"/repo/v1/entity/{_ANY_ID}/version", Routes.entity_versions, "entity"),
    _route("GET", rf"/repo/v1/entity/{_ANY_ID}/type", Routes.entity_type, "entity"),
    _route("GET", rf"/repo/v1/entity/{_ANY_ID}/path", Routes.entity_path, "entity"),
    _route("GET", rf"/repo/v1/entity/{_ANY_ID}/annotations2", Routes.annotations, "entity"),
    _route("GET", rf"/repo/v1/entity/{_ANY_ID}/version/(\d+)/annotations2", Routes.annotations, "entity"),
    _route("GET", rf"/repo/v1/entity/{_ANY_ID}/generatedBy", Routes.generated_by, "entity"),
    _route("GET", rf"/repo/v1/entity/{_ANY_ID}/version/(\d+)/generatedBy", Routes.generated_by, "entity"),
    _route("POST", rf"/repo/v1/entity/{_ANY_ID}/bundle2", Routes.bundle, "bundle"),
    _route("POST", rf"/repo/v1/entity/{_ANY_ID}/version/(\d+)/bundle2", Routes.bundle, "bundle"),
    _route("GET", rf"/repo/v1/entity/{_ANY_ID}/file", Routes.entity_file_url, "filehandle"),
    _route("GET", rf"/repo/v1/entity/{_ANY_ID}/version/(\d+)/file", Routes.entity_file_url, "filehandle"),
    _route("POST", r"/file/v1/fileHandle/batch", Routes.file_handle_batch, "filehandle"),
    _route("GET", r"/file/v1/file/(\d+)", Routes.file_url, "filehandle"),
]
