"""The API listener: Synapse REST routes under /repo/v1, /file/v1, /auth/v1 plus /emulator/ admin.

Every platform request passes, in order: maintenance window -> token -> throttle gate ->
random 429 -> latency -> random 5xx -> the route itself.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import re
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Pattern, Tuple
from urllib.parse import parse_qs, urlsplit

from . import wire
from .admin import Admin, content_from_json, parse_syn_id
from .faults import CONCURRENCY_REASON, MAINTENANCE_REASON
from .httpbase import EmulatorHandler
from .seed import SpecError, seed_spec
from .signing import sign_url
from .store import DenyMode, Entity, EntityKind, NameConflict, SortBy, User

log = logging.getLogger("synclient.emulator")

PAGE_SIZE = 50
MAX_BATCH_FILES = 100
FILE_ENTITY_ASSOCIATION = "FileEntity"
INCLUDE_TYPES = {"project": EntityKind.PROJECT, "folder": EntityKind.FOLDER, "file": EntityKind.FILE,
                 "link": EntityKind.LINK}
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

    def _presigned_url(self, handle) -> str:
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
        if entity.kind is EntityKind.FILE:
            file_version = version or self.store.version(entity.id, entity.current_version)
            handle = self.store.file_handle(file_version.file_handle_id)
        if wanted.get("includeFileHandles"):
            body["fileHandles"] = [wire.file_handle_json(handle)] if handle else []
        if wanted.get("includeFileName") and handle:
            body["fileName"] = handle.file_name
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
        query = request.json()
        parent_ref = query.get("parentId")
        parent_id = None
        if parent_ref is not None:
            parent = self._entity(str(parent_ref))
            parent_id = parent.id
        kinds = self._include_types(query.get("includeTypes"))
        try:
            sort_by = SortBy[query.get("sortBy") or "NAME"]
        except KeyError:
            raise ApiError(400, f"Unknown sortBy: {query.get('sortBy')}") from None
        direction = query.get("sortDirection") or "ASC"
        if direction not in ("ASC", "DESC"):
            raise ApiError(400, f"Unknown sortDirection: {direction}")
        limit, offset = parse_page_token(query.get("nextPageToken"))
        page = self.store.children(parent_id, kinds, sort_by, direction == "ASC", limit + 1, offset)
        body: Dict[str, object] = {"page": [wire.entity_header(self.store, e) for e in page[:limit]]}
        if len(page) > limit:
            body["nextPageToken"] = make_page_token(limit, offset + limit)
        if query.get("includeTotalChildCount") or query.get("includeSumFileSizes"):
            count, total = self.store.count_children(parent_id, kinds)
            if query.get("includeTotalChildCount"):
                body["totalChildCount"] = count
            if query.get("includeSumFileSizes"):
                body["sumFileSizesBytes"] = total
        return Response(body=body)

    @staticmethod
    def _include_types(types) -> List[EntityKind]:
        if types is None:
            return list(EntityKind)
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
            raise ApiError(400, "includeTypes must include at least one type.")
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
        query = request.json()
        requested = query.get("requestedFiles")
        if not isinstance(requested, list) or not requested:
            raise ApiError(400, "requestedFiles is required.")
        if len(requested) > MAX_BATCH_FILES:
            raise ApiError(400, f"Request exceeds the maximum number of files of {MAX_BATCH_FILES}.")
        want_urls = bool(query.get("includePreSignedURLs"))
        want_handles = bool(query.get("includeFileHandles"))
        if not (want_urls or want_handles or query.get("includePreviewPreSignedURLs")):
            raise ApiError(400, "At least one of includePreSignedURLs, includeFileHandles or "
                                "includePreviewPreSignedURLs must be true.")
        results = []
        for item in requested:
            if not isinstance(item, dict):
                raise ApiError(400, "Each requested file must be an object.")
            handle_ref = str(item.get("fileHandleId", ""))
            result: Dict[str, object] = {"fileHandleId": handle_ref}
            failure = self._download_failure(handle_ref, item.get("associateObjectId"),
                                             item.get("associateObjectType"))
            if failure:
                result["failureCode"] = failure
            else:
                handle = self.store.file_handle(int(handle_ref))
                if want_handles:
                    result["fileHandle"] = wire.file_handle_json(handle)
                if want_urls:
                    result["preSignedURL"] = self._presigned_url(handle)
            results.append(result)
        return Response(status=201, body={"requestedFiles": results})

    def _download_failure(self, handle_ref: str, object_ref, object_type) -> Optional[str]:
        """None when the user may download the handle through that object, else a failureCode."""
        if not handle_ref.isdigit() or self.store.file_handle(int(handle_ref)) is None:
            return "NOT_FOUND"
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
    """``"{limit}a{offset}"`` -> (limit, offset); None -> first page."""
    if token is None or token == "":
        return PAGE_SIZE, 0
    match = re.match(r"^(\d+)a(\d+)$", str(token))
    if not match or int(match.group(1)) <= 0:
        raise ApiError(400, f"Invalid nextPageToken: {token}")
    return int(match.group(1)), int(match.group(2))


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


class ApiHandler(EmulatorHandler):
    """One thread per connection; dispatches platform routes and /emulator/ admin routes."""

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        context = self.server.context
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        body = self.read_body()
        if parts.path.startswith("/emulator/"):
            response = self._safely(lambda: self.server.admin_routes.handle(method, parts.path, query, body))
            self._send(response)
            return
        context.stats.api_started(method, parts.path)
        response = Response(status=500)
        try:
            response = self._safely(lambda: self._platform(method, parts.path, query, body))
            self._send(response)
        finally:
            context.stats.api_finished(response.status)

    def _safely(self, produce: Callable[[], Response]) -> Response:
        try:
            return produce()
        except ApiError as error:
            return Response(status=error.status, body=wire.error_body(error.reason), headers=error.headers)
        except Exception as error:  # a bug in a route must still answer, as a JSON 500
            log.exception("emulator route failed")
            return Response(status=500, body=wire.error_body(f"Emulator error: {error!r}"))

    def _platform(self, method: str, path: str, query: Dict[str, str], body: bytes) -> Response:
        context = self.server.context
        knobs = context.knobs
        route, params = self._match(method, path)
        if context.faults.in_maintenance(knobs):
            raise ApiError(503, MAINTENANCE_REASON)
        user = self._authenticate() if route.needs_auth else None
        gate_user = user.id if user else 0
        reason = context.gate.enter(gate_user, knobs)
        if reason is not None:
            raise ApiError(429, reason, self._retry_after(knobs))
        try:
            request_key = f"{method} {path}?{sorted(query.items())} {body!r}"
            if context.faults.api_429(knobs, request_key):
                limit = knobs.max_concurrent_per_user or 3
                raise ApiError(429, CONCURRENCY_REASON.format(limit=limit), self._retry_after(knobs))
            delay_ms = knobs.api_latency_ms + context.faults.jitter(knobs.api_latency_jitter_ms)
            if delay_ms > 0:
                time.sleep(delay_ms / 1000.0)
            status = context.faults.api_5xx(knobs, route.route_class, request_key)
            if status is not None:
                context.stats.api_fault()
                raise ApiError(status, "Injected fault: the server had a temporary problem.")
            request = Request(method, path, query, body, user, params)
            return route.handler(self.server.routes, request)
        finally:
            context.gate.leave(gate_user)

    @staticmethod
    def _retry_after(knobs) -> Dict[str, str]:
        return {} if knobs.throttle_retry_after is None else {"Retry-After": str(knobs.throttle_retry_after)}

    def _match(self, method: str, path: str) -> Tuple[Route, Tuple[str, ...]]:
        path_matched = False
        for route in ROUTES:
            match = route.pattern.match(path)
            if match:
                path_matched = True
                if route.method == method:
                    return route, match.groups()
        if path_matched:
            raise ApiError(405, f"Method {method} not allowed on {path}.")
        log.info("emulator: no route for %s %s", method, path)
        raise ApiError(404, f"No such route: {method} {path}")

    def _authenticate(self) -> User:
        header = self.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        user = None
        if scheme.lower() == "bearer" and token.strip():
            user = self.server.context.store.user_for_token(token.strip())
        if user is None:
            challenge = 'Bearer realm="synapse", error="invalid_token"' if header else 'Bearer realm="synapse"'
            raise ApiError(401, "Unauthenticated: a valid access token is required." if not header
                           else "Invalid access token.", {"WWW-Authenticate": challenge})
        return user

    def _send(self, response: Response) -> None:
        headers = dict(response.headers or {})
        body = response.body
        if isinstance(body, (bytes, bytearray)):
            payload = bytes(body)
        elif isinstance(body, str):
            payload = body.encode("utf-8")
        else:
            payload = json.dumps(body if body is not None else {}).encode("utf-8")
        if payload or response.content_type.startswith("application/json"):
            headers.setdefault("Content-Type", response.content_type)
        self.send_whole(response.status, headers, payload)


class AdminRoutes:
    """``/emulator/...``: stats, knobs and live mutations. No token, not counted in stats."""

    def __init__(self, context, admin: Admin, on_info: Callable[[], dict]) -> None:
        self.context = context
        self.admin = admin
        self.on_info = on_info

    def handle(self, method: str, path: str, query: Dict[str, str], body: bytes) -> Response:
        request = Request(method, path, query, body, None, ())
        try:
            return self._handle(method, path, query, request)
        except (KeyError, LookupError) as error:
            raise ApiError(404, str(error.args[0] if error.args else error)) from None
        except NameConflict as error:
            raise ApiError(409, str(error)) from None
        except (ValueError, TypeError, SpecError) as error:
            raise ApiError(400, str(error)) from None

    def _handle(self, method: str, path: str, query: Dict[str, str], request: Request) -> Response:
        segments = [s for s in path.split("/") if s][1:]  # drop "emulator"
        key = (method, "/".join(segments))
        if key == ("GET", "stats"):
            return Response(body=self.context.stats.snapshot())
        if key == ("POST", "stats/reset"):
            self.context.stats.reset()
            return Response(body={})
        if key == ("GET", "info"):
            return Response(body=self.on_info())
        if key == ("GET", "knobs"):
            return Response(body=_knobs_json(self.context.knobs))
        if key == ("POST", "knobs"):
            return Response(body=_knobs_json(self.context.set_knobs(**request.json())))
        if key == ("POST", "seed"):
            return Response(status=201, body={"projects": seed_spec(self.context.store, request.json())})
        if key == ("GET", "resolve"):
            return Response(body={"id": self.admin.resolve(query.get("project", ""), query.get("path", ""))})
        if key == ("POST", "file"):
            data = request.json()
            content = content_from_json(data)
            entity_id = self.admin.add_file(data["parentId"], data["name"], b"" if content is None else content)
            return Response(status=201, body={"id": entity_id})
        if key == ("POST", "folder"):
            data = request.json()
            return Response(status=201, body={"id": self.admin.add_folder(data["parentId"], data["name"])})
        if method == "POST" and len(segments) == 3 and segments[0] == "entity":
            return self._entity_action(segments[1], segments[2], request.json())
        raise ApiError(404, f"No such emulator route: {method} {path}")

    def _entity_action(self, entity_ref: str, action: str, data: dict) -> Response:
        if action == "version":
            content = content_from_json(data)
            if content is None:
                raise ApiError(400, 'give "content", "content_b64" or "size" (+"seed")')
            return Response(status=201, body={"versionNumber": self.admin.add_version(entity_ref, content)})
        if action == "delete":
            self.admin.delete_entity(entity_ref)
        elif action == "rename":
            self.admin.rename_entity(entity_ref, data["name"])
        elif action == "move":
            self.admin.move_entity(entity_ref, data["parentId"])
        else:
            raise ApiError(404, f"Unknown entity action: {action}")
        return Response(body={})


def _knobs_json(knobs) -> dict:
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(knobs).items()}
