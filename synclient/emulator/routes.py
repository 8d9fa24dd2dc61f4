"""The platform routes of the API listener: Synapse REST semantics on top of the store.

Each route takes a ``Request`` and returns a ``Response`` or raises ``ApiError``; the HTTP
pipeline around them (auth, throttles, faults, latency) lives in ``api.py``.
"""
from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Pattern, Tuple

from . import hostile, wire
from .signing import sign_url
from .store import CALLER, DenyMode, Entity, EntityKind, SortBy, User, parse_syn_id
from .tables import table_download_failure

log = logging.getLogger("synclient.emulator")

PAGE_SIZE = 50
MAX_BATCH_FILES = 100
FILE_ENTITY_ASSOCIATION = "FileEntity"
TABLE_ENTITY_ASSOCIATION = "TableEntity"
INCLUDE_TYPES = {kind.value: kind for kind in EntityKind}
# Types Synapse knows but the emulator never stores: accepted in includeTypes, never matched.
# Newer clients send types added after this list was written, so any other lowercase word is accepted.
OTHER_TYPES = re.compile(r"^[a-z]+$")
EMULATOR_VERSION = "emulator-1"


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
    handler: Callable[["Routes", Request], Response]
    route_class: str
    needs_auth: bool = True


_ID = r"(syn\d+|\d+)"


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
            raise ApiError(400, f"Invalid entity id: {ref}") from None
        entity = self.store.entity(entity_id)
        if entity is None:
            raise ApiError(404, f"Entity syn{entity_id} does not exist.")
        if self.store.effective_deny(entity) is DenyMode.READ:
            raise ApiError(403, f"You lack READ access to the requested entity (syn{entity_id}).")
        return entity

    def _version(self, entity: Entity, version_text: Optional[str]):
        if version_text is None:
            return None
        number = int(version_text)
        if entity.kind is not EntityKind.FILE:
            if number != 1:
                raise ApiError(404, f"Version {number} of syn{entity.id} does not exist.")
            return None
        version = self.store.version(entity.id, number)
        if version is None:
            raise ApiError(404, f"Version {number} of syn{entity.id} does not exist.")
        return version

    def _handle_json(self, handle) -> Dict[str, object]:
        """The handle's JSON; with ``hostile_handle_rate`` some handles misdescribe their bytes (hostile.py)."""
        return hostile.lie_about_handle(self.context.knobs,
                                        wire.file_handle_json(handle, self.context.external_endpoint))

    def _presigned_url(self, handle) -> str:
        """A signed data-host URL; for an external handle Synapse answers its externalURL itself."""
        if handle.storage.is_external:
            return hostile.external_url(self.context.knobs, str(handle.id),
                                        wire.external_url(handle, self.context.external_endpoint))
        return sign_url(self.store.secret, self.context.data_endpoint, wire.data_path(handle),
                        self.context.knobs.url_lifetime)

    # --- routes -------------------------------------------------------------------------------
    def version(self, request: Request) -> Response:
        return Response(body={"version": EMULATOR_VERSION})

    def user_profile(self, request: Request) -> Response:
        return Response(body=wire.user_profile(request.user.id, request.user.user_name))

    def get_entity(self, request: Request) -> Response:
        entity = self._entity(request.params[0])
        version = self._version(entity, request.params[1] if len(request.params) > 1 else None)
        return Response(body=wire.entity_json(self.store, entity, version))

    def entity_type(self, request: Request) -> Response:
        return Response(body=wire.entity_header(self.store, self._entity(request.params[0])))

    def entity_versions(self, request: Request) -> Response:
        entity = self._entity(request.params[0])
        offset = int(request.query.get("offset", 0))
        limit = int(request.query.get("limit", 10))
        if entity.kind.is_table_type:  # one version, "in progress" (no snapshots in the emulator)
            results = [wire.item_list_version_info(entity)][offset:offset + limit]
            return Response(body={"results": results, "totalNumberOfResults": 1})
        if entity.kind is not EntityKind.FILE:
            return Response(body={"results": [], "totalNumberOfResults": 0})
        versions = self.store.versions(entity.id)
        results = [wire.version_info(entity, v, self.store.file_handle(v.file_handle_id))
                   for v in versions[offset:offset + limit]]
        return Response(body={"results": results, "totalNumberOfResults": len(versions)})

    def entity_path(self, request: Request) -> Response:
        return Response(body=wire.path_json(self.store, self._entity(request.params[0])))

    def annotations(self, request: Request) -> Response:
        entity = self._entity(request.params[0])
        self._version(entity, request.params[1] if len(request.params) > 1 else None)
        return Response(body=wire.annotations_json(self.store, entity))

    def generated_by(self, request: Request) -> Response:
        entity = self._entity(request.params[0])
        self._version(entity, request.params[1] if len(request.params) > 1 else None)
        raise ApiError(404, f"No activity for syn{entity.id}.")

    def bundle(self, request: Request) -> Response:
        wanted = request.json()
        entity = self._entity(request.params[0])
        version = self._version(entity, request.params[1] if len(request.params) > 1 else None)
        body: Dict[str, object] = {}
        if wanted.get("includeEntity"):
            body["entity"] = wire.entity_json(self.store, entity, version)
            body["entityType"] = entity.kind.value
        if wanted.get("includeAnnotations"):
            body["annotations"] = wire.annotations_json(self.store, entity)
        if wanted.get("includePermissions"):
            body["permissions"] = wire.permissions_json(self.store, entity)
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
            body["restrictionInformation"] = wire.restriction_information(entity)
        if wanted.get("includeThreadCount"):
            body["threadCount"] = 0
        if wanted.get("includeBenefactorACL") or wanted.get("includeAccessControlList"):
            acl = {"id": f"syn{self.store.benefactor_id(entity)}", "etag": entity.etag,
                   "resourceAccess": [{"principalId": entity.created_by, "accessType": ["READ", "DOWNLOAD"]}]}
            if wanted.get("includeBenefactorACL"):
                body["benefactorAcl"] = acl
            if wanted.get("includeAccessControlList") and self.store.benefactor_id(entity) == entity.id:
                body["accessControlList"] = acl
        return Response(body=body)

    def restriction_information(self, request: Request) -> Response:
        wanted = request.json()
        entity = self._entity(str(wanted.get("objectId", "")))
        return Response(body=wire.restriction_information(entity))

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
        body: Dict[str, object] = {"page": [wire.entity_header(self.store, e) for e in page[:limit]]}
        honest = make_page_token(limit, offset + limit) if len(page) > limit else None
        token = hostile.children_token(self.context.knobs, "root" if parent_id is None else f"syn{parent_id}",
                                       asked or None, honest, make_page_token(limit, 0))
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
        references = request.json().get("references") or []
        ids = []
        for reference in references:
            try:
                ids.append(parse_syn_id(reference.get("targetId", "")))
            except (ValueError, AttributeError):
                raise ApiError(400, f"Invalid reference: {reference}") from None
        found = self.store.entities(ids)
        results = [wire.entity_header(self.store, found[i]) for i in ids
                   if i in found and self.store.effective_deny(found[i]) is not DenyMode.READ]
        return Response(body={"results": results, "totalNumberOfResults": len(results)})

    def lookup(self, request: Request) -> Response:
        query = request.json()
        parent_ref = query.get("parentId")
        parent_id = self._entity(str(parent_ref)).id if parent_ref else None
        found = self.store.child_by_name(parent_id, str(query.get("entityName", "")))
        if found is None:
            raise ApiError(404, "Entity not found.")
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
            result: Dict[str, object] = {"fileHandleId": handle_ref}
            failure = self._download_failure(handle_ref, item.get("associateObjectId"),
                                             item.get("associateObjectType"))
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
        failure = self._download_failure(handle_ref, request.query.get("fileAssociateId"),
                                         request.query.get("fileAssociateType"))
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
            raise ApiError(403, f"You lack DOWNLOAD access to syn{entity.id}.")
        return self._url_response(self.store.file_handle(version.file_handle_id), request)

    def _url_response(self, handle, request: Request) -> Response:
        url = self._presigned_url(handle)
        if request.query.get("redirect", "true").lower() == "false":
            return Response(body=url, content_type="text/plain;charset=UTF-8")
        return Response(status=307, body=b"", headers={"Location": url})


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
    _route("POST", r"/repo/v1/entity/id", Routes.lookup, "entity"),
    _route("POST", r"/repo/v1/restrictionInformation", Routes.restriction_information, "other"),
    _route("GET", rf"/repo/v1/entity/{_ID}", Routes.get_entity, "entity"),
    _route("GET", rf"/repo/v1/entity/{_ID}/version/(\d+)", Routes.get_entity, "entity"),
    _route("GET", rf"/repo/v1/entity/{_ID}/version", Routes.entity_versions, "entity"),
    _route("GET", rf"/repo/v1/entity/{_ID}/type", Routes.entity_type, "entity"),
    _route("GET", rf"/repo/v1/entity/{_ID}/path", Routes.entity_path, "entity"),
    _route("GET", rf"/repo/v1/entity/{_ID}/annotations2", Routes.annotations, "entity"),
    _route("GET", rf"/repo/v1/entity/{_ID}/version/(\d+)/annotations2", Routes.annotations, "entity"),
    _route("GET", rf"/repo/v1/entity/{_ID}/generatedBy", Routes.generated_by, "entity"),
    _route("GET", rf"/repo/v1/entity/{_ID}/version/(\d+)/generatedBy", Routes.generated_by, "entity"),
    _route("POST", rf"/repo/v1/entity/{_ID}/bundle2", Routes.bundle, "bundle"),
    _route("POST", rf"/repo/v1/entity/{_ID}/version/(\d+)/bundle2", Routes.bundle, "bundle"),
    _route("GET", rf"/repo/v1/entity/{_ID}/file", Routes.entity_file_url, "filehandle"),
    _route("GET", rf"/repo/v1/entity/{_ID}/version/(\d+)/file", Routes.entity_file_url, "filehandle"),
    _route("POST", r"/file/v1/fileHandle/batch", Routes.file_handle_batch, "filehandle"),
    _route("GET", r"/file/v1/file/(\d+)", Routes.file_url, "filehandle"),
]
