"""The control plane: ``Platform``, a typed REST client for the Synapse API.

Every call goes through one :class:`~synclient.gate.AdaptiveGate` (shared across threads), is retried by tenacity
on 429/5xx/connection trouble with exponential backoff + jitter (honouring ``Retry-After``), and fails with a typed
error from :mod:`synclient.errors` carrying the status and the server's ``reason``. The token only ever goes to
the platform's own endpoints: redirects are not followed here, and the data plane uses its own session.
"""
from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Mapping, Optional, Sequence, Tuple

import requests
import tenacity
from requests.adapters import HTTPAdapter

from synclient import __version__
from synclient.config import Endpoints, resolve_endpoints, resolve_token
from synclient.errors import (AccessDeniedError, AuthenticationError, BadRequestError, NotFoundError,
                              PlatformError, ServerError, ThrottledError)
from synclient.gate import AdaptiveGate, ThrottleKind
from synclient.models import (ChildrenPage, Entity, EntityHeader, EntityType, FileBundle, FileHandle,
                              FileHandleRequest, PresignedUrlAnswer)

log = logging.getLogger("synclient.client")

RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
URL_BATCH_MAX = 100  # the server's limit on requestedFiles per /fileHandle/batch
USER_AGENT = f"synclient/{__version__}"


@dataclass
class CallStats:
    """Counters of control-plane traffic, for the run report."""

    calls: int = 0        # HTTP attempts sent, retries included
    retries: int = 0
    throttled: int = 0
    by_route: Dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def count(self, route: str, *, retry: bool, throttled: bool) -> None:
        with self._lock:
            self.calls += 1
            self.retries += retry
            self.throttled += throttled
            self.by_route[route] = self.by_route.get(route, 0) + 1


class _RetryableFailure(Exception):
    """Internal: an attempt failed in a way worth retrying; ``error`` is what to raise if retries run out."""

    def __init__(self, error: PlatformError, retry_after: Optional[float] = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


def _retry_after_seconds(response: requests.Response) -> Optional[float]:
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # HTTP-date form: fall back to our own backoff


class _WaitRetryAfterOrBackoff(tenacity.wait.wait_base):
    """Honour the server's Retry-After; otherwise exponential backoff with "equal jitter": each wait is half its
    exponential step plus a random part of up to the other half.

    Full jitter (anywhere from 0 to the step) let all ten tries of one call fall inside a 10 s outage about once
    in 300 calls (simulated), so a short maintenance window failed files; with the floor, ten tries span at least
    32 s at the default policy, and the random half still spreads threads that failed together.
    """

    def __init__(self, *, initial: float, maximum: float) -> None:
        self._backoff = (tenacity.wait_exponential(multiplier=initial / 2, max=maximum / 2)
                         + tenacity.wait_random_exponential(multiplier=initial / 2, max=maximum / 2))

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        if isinstance(exc, _RetryableFailure) and exc.retry_after is not None:
            return exc.retry_after
        return self._backoff(retry_state)


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 10
    max_total_seconds: float = 300.0
    initial_backoff: float = 0.2
    max_backoff: float = 20.0


class Platform:
    """A session with the platform's REST services.

    ``Platform(endpoint="http://127.0.0.1:8080", token="...")`` derives ``/repo/v1``, ``/file/v1`` and
    ``/auth/v1`` from one service root; ``repo_endpoint=``/``file_endpoint=``/``auth_endpoint=`` set them one by
    one (real Synapse). Without arguments, endpoint and token come from the environment, ``~/.synapseConfig`` or
    keyring (see :mod:`synclient.config`).
    """

    def __init__(self, endpoint: Optional[str] = None, *, token: Optional[str] = None,
                 repo_endpoint: Optional[str] = None, file_endpoint: Optional[str] = None,
                 auth_endpoint: Optional[str] = None, profile: Optional[str] = None,
                 max_connections: int = 64, timeout: Tuple[float, float] = (10.0, 60.0),
                 retry: RetryPolicy = RetryPolicy(), gate: Optional[AdaptiveGate] = None) -> None:
        self.endpoints: Endpoints = resolve_endpoints(endpoint, repo_endpoint=repo_endpoint,
                                                      file_endpoint=file_endpoint, auth_endpoint=auth_endpoint)
        self._token = resolve_token(token, profile=profile)
        self.timeout = timeout
        self.retry = retry
        # the gate's ceiling is the number of threads that may call at once; it adapts below that on 429s
        self.gate = gate or AdaptiveGate(max_limit=max(3, max_connections))
        self.stats = CallStats()
        self._session = _platform_session(self.endpoints.repo)
        self.resize_pool(max_connections)

    def __repr__(self) -> str:  # never shows the token
        state = "with token" if self._token else "anonymous"
        return f"Platform(repo={self.endpoints.repo!r}, {state})"

    @property
    def has_token(self) -> bool:
        return bool(self._token)

    def resize_pool(self, max_connections: int) -> None:
        """Size the connection pool to the number of threads that may call at once (no 'pool is full')."""
        adapter = HTTPAdapter(pool_connections=4, pool_maxsize=max(4, max_connections), max_retries=0)
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)

    def close(self) -> None:
        self._session.close()

    def __enter__(self) -> "Platform":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- the one way a REST call is made ------------------------------------------------------------------------

    def _request(self, method: str, service: str, path: str, *, body: Optional[Mapping[str, Any]] = None,
                 params: Optional[Mapping[str, str]] = None, route: str, parse_json: bool = True) -> Any:
        base = {"repo": self.endpoints.repo, "file": self.endpoints.file, "auth": self.endpoints.auth}[service]
        url = base + path
        attempts = 0

        def attempt() -> Any:
            nonlocal attempts
            attempts += 1
            return self._attempt(method, url, body=body, params=params, route=route, parse_json=parse_json,
                                 is_retry=attempts > 1)

        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(_RetryableFailure),
            wait=_WaitRetryAfterOrBackoff(initial=self.retry.initial_backoff, maximum=self.retry.max_backoff),
            stop=(tenacity.stop_after_attempt(self.retry.max_attempts)
                  | tenacity.stop_after_delay(self.retry.max_total_seconds)),
            reraise=True)
        try:
            return retrying(attempt)
        except _RetryableFailure as failure:
            raise failure.error from None

    def _attempt(self, method: str, url: str, *, body, params, route: str, parse_json: bool, is_retry: bool) -> Any:
        headers = {"Authorization": f"Bearer {self._token}"} if self._token else {}
        if body is not None:
            headers["Content-Type"] = "application/json"
        self.gate.acquire()
        throttle: Optional[str] = None
        retry_after: Optional[float] = None
        try:
            try:
                response = self._session.request(method, url, params=params, headers=headers,
                                                 data=json.dumps(body) if body is not None else None,
                                                 timeout=self.timeout, allow_redirects=False)
                content = response.content  # read fully inside the gate: a cut body is retried below
            except (requests.ConnectionError, requests.Timeout) as exc:
                error = ServerError(f"{method} {route}: connection failed ({exc.__class__.__name__})",
                                    method=method, url=url)
                raise _RetryableFailure(error) from None
            status = response.status_code
            if status == 429:
                reason = _reason(content)
                throttle = (ThrottleKind.FREQUENCY if "frequent" in (reason or "").lower()
                            else ThrottleKind.CONCURRENCY)
                retry_after = _retry_after_seconds(response)
        finally:
            self.gate.release(throttled=throttle, retry_after=retry_after)
            self.stats.count(route, retry=is_retry, throttled=throttle is not None)
        if status >= 400:
            error = _error_for(status, _reason(content), method=method, route=route, url=url)
            if status in RETRYABLE_STATUS:
                log.debug("%s %s -> %s, will retry", method, route, status)
                raise _RetryableFailure(error, retry_after=retry_after)
            raise error
        if not parse_json:
            return content.decode("utf-8", errors="replace")
        if not content:
            return None
        try:
            return json.loads(content)
        except ValueError:
            # A body that is not JSON on a 2xx is a cut or garbled answer: worth another try.
            raise _RetryableFailure(ServerError(f"{method} {route}: malformed JSON answer", status=status,
                                                method=method, url=url)) from None

    # -- the API synclient uses ----------------------------------------------------------------------------------

    def get_user_profile(self) -> Dict[str, Any]:
        return self._request("GET", "repo", "/userProfile", route="GET /userProfile")

    def get_entity(self, entity_id: str, *, version: Optional[int] = None) -> Entity:
        path = f"/entity/{entity_id}" + (f"/version/{version}" if version is not None else "")
        return Entity.from_wire(self._request("GET", "repo", path, route="GET /entity/{id}"))

    def get_entity_header(self, entity_id: str) -> EntityHeader:
        """The cheapest way to learn an entity's type (``GET /entity/{id}/type``)."""
        return EntityHeader.from_wire(self._request("GET", "repo", f"/entity/{entity_id}/type",
                                                    route="GET /entity/{id}/type"))

    def list_children(self, parent_id: str, *, include_types: Iterable[EntityType],
                      page_token: Optional[str] = None) -> ChildrenPage:
        body: Dict[str, Any] = {"parentId": parent_id,
                                "includeTypes": [t.children_filter for t in include_types],
                                "sortBy": "NAME", "sortDirection": "ASC"}
        if page_token:
            body["nextPageToken"] = page_token
        answer = self._request("POST", "repo", "/entity/children", body=body, route="POST /entity/children")
        return ChildrenPage(headers=[EntityHeader.from_wire(h) for h in answer.get("page") or []],
                            next_page_token=answer.get("nextPageToken"))

    def get_file_bundle(self, entity_id: str, *, version: Optional[int] = None,
                        include_annotations: bool = False) -> FileBundle:
        path = f"/entity/{entity_id}" + (f"/version/{version}" if version is not None else "") + "/bundle2"
        body = {"includeEntity": True, "includeFileHandles": True, "includeAnnotations": include_annotations}
        answer = self._request("POST", "repo", path, body=body, route="POST /entity/{id}/bundle2")
        entity = Entity.from_wire(answer["entity"])
        handles = [FileHandle.from_wire(h) for h in answer.get("fileHandles") or []]
        data_handle = next((h for h in handles if h.id == entity.data_file_handle_id), None)
        return FileBundle(entity=entity, file_handle=data_handle, annotations=answer.get("annotations") or {})

    def get_activity(self, entity_id: str, *, version: Optional[int] = None) -> Optional[Dict[str, Any]]:
        """The provenance record (Activity) of an entity version, or None when it has none."""
        path = f"/entity/{entity_id}" + (f"/version/{version}" if version is not None else "") + "/generatedBy"
        try:
            return self._request("GET", "repo", path, route="GET /entity/{id}/generatedBy")
        except NotFoundError:
            return None

    def get_presigned_urls(self, requests_: Sequence[FileHandleRequest]) -> Dict[str, PresignedUrlAnswer]:
        """Pre-signed URLs for up to 100 file handles in one call, keyed by file handle id."""
        if not 0 < len(requests_) <= URL_BATCH_MAX:
            raise ValueError(f"a URL batch holds 1 to {URL_BATCH_MAX} file handles, got {len(requests_)}")
        body = {"requestedFiles": [{"fileHandleId": r.file_handle_id, "associateObjectId": r.entity_id,
                                    "associateObjectType": "FileEntity"} for r in requests_],
                "includePreSignedURLs": True, "includeFileHandles": False, "includePreviewPreSignedURLs": False}
        answer = self._request("POST", "file", "/fileHandle/batch", body=body, route="POST /fileHandle/batch")
        result: Dict[str, PresignedUrlAnswer] = {}
        for row in answer.get("requestedFiles") or []:
            handle_id = str(row.get("fileHandleId"))
            result[handle_id] = PresignedUrlAnswer(file_handle_id=handle_id, url=row.get("preSignedURL"),
                                                   failure_code=row.get("failureCode"))
        return result


def _platform_session(endpoint: str) -> requests.Session:
    """A session whose environment is read once, not on every request.

    With ``trust_env`` on, requests re-reads proxy variables, ``~/.netrc`` and CA-bundle variables for every call
    (about a quarter of its CPU per request). We read proxies and the CA bundle here, once, and never use netrc:
    the platform token is our only credential.
    """
    session = requests.Session()
    session.trust_env = False
    session.proxies.update(requests.utils.get_environ_proxies(endpoint))
    ca_bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
    if ca_bundle:
        session.verify = ca_bundle
    session.headers.update({"User-Agent": USER_AGENT, "Accept": "application/json"})
    return session


def _reason(content: bytes) -> Optional[str]:
    try:
        reason = json.loads(content).get("reason")
        return str(reason) if reason is not None else None
    except (ValueError, AttributeError):
        return None


def _error_for(status: int, reason: Optional[str], *, method: str, route: str, url: str) -> PlatformError:
    text = f"{method} {route}: HTTP {status}" + (f": {reason}" if reason else "")
    kind = (AuthenticationError if status == 401 else AccessDeniedError if status == 403 else
            NotFoundError if status == 404 else ThrottledError if status == 429 else
            ServerError if status >= 500 else BadRequestError)
    return kind(text, status=status, reason=reason, method=method, url=url)

