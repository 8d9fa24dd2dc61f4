"""The control plane: ``Platform``, a typed REST client for the Synapse API.

Every call goes through the :class:`~synclient.platform.gate.AdaptiveGate` of its platform user (shared by every thread
and every ``Platform`` of that user in the process; it knows the platform's concurrency and per-window limits), and
fails with a typed error from :mod:`synclient.errors` carrying the status and the server's ``reason``. The error's
nature decides the retry: a retryable one (a passing 5xx, a failed connection, a cut answer, a 429) is tried again
by tenacity with exponential backoff + jitter (honouring ``Retry-After``; a 429 is paced by the gate and does not
use up tries), and raised marked :meth:`~synclient.errors.SynclientError.spent` once the tries ran out. The token
only ever goes to the platform's own endpoints: redirects are not followed here, and the data plane uses its own
session.

An endpoint that has never given a well-formed answer gets a few short, logged tries before an
:class:`~synclient.errors.EndpointError` names it (a wrong endpoint fails in seconds, not minutes); a cancelled run
stops calls that wait to retry (:attr:`Platform.cancel_event`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import re
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, TypeVar
from urllib.parse import urljoin, urlsplit

import requests
import tenacity
from requests.adapters import HTTPAdapter

from synclient._version import __version__
from synclient.errors import (
    AccessDeniedError,
    AuthenticationError,
    BadRequestError,
    CallCancelledError,
    ConfigError,
    EndpointError,
    JobTimeoutError,
    MalformedAnswerError,
    NotFoundError,
    PermanentServerError,
    PlatformError,
    ServerError,
    SynclientError,
    ThrottledError,
    exception_chain,
)
from synclient.platform.credentials import Endpoints, clean_token, resolve_endpoints, resolve_token
from synclient.platform.gate import AdaptiveGate, RestAdmission, Throttle, ThrottleKind, shared_gate
from synclient.platform.models import (
    ACTION_REQUIRED_REQUEST,
    ALL_CHILD_TYPE_NAMES,
    AVAILABLE_FILES_REQUEST,
    DOWNLOAD_LIST_MANIFEST_REQUEST,
    DOWNLOAD_LIST_QUERY_REQUEST,
    FILES_STATISTICS_REQUEST,
    LIST_WRAPPER,
    QUERY_BUNDLE_REQUEST,
    QUERY_RESULTS_PART,
    VIEW_COLUMN_MODEL_REQUEST,
    ActionRequired,
    Annotations,
    ChildrenPage,
    DownloadListItem,
    DownloadListItemResult,
    DownloadListPage,
    Entity,
    EntityHeader,
    EntityType,
    FileBundle,
    FileHandleRequest,
    PageTrail,
    PresignedUrlAnswer,
    QueryPage,
    manifest_handle_id,
    user_profile_from_wire,
    wire_entity_id,
    wire_handle_id,
    wire_object,
    wire_whole_number,
)
from synclient.platform.tls import TrustedCAs, certificate_problem, resolve_trusted_cas, untrusted_certificate
from synclient.redaction import install_redaction, redact_url

log = logging.getLogger("synclient.platform.rest")

#: the 5xx statuses of a passing trouble (a failing, overloaded or restarting server, a gateway that lost it): the
#: rest (501 Not Implemented, 505 HTTP Version Not Supported, ...) say the request will fail however often it is
#: sent, so their ServerError is not tried again (:func:`_error_for`)
TRANSIENT_SERVER_STATUS = frozenset({500, 502, 503, 504})
URL_BATCH_MAX = 100  # the server's limit on requestedFiles per /fileHandle/batch
HEADER_BATCH_MAX = 1000  # references per POST /entity/header (no documented limit; one page of a large list)
CART_REMOVE_MAX = 1000  # items per POST /download/list/remove (DownloadListManagerImpl.MAX_FILES_PER_BATCH)
USER_AGENT = f"synclient/{__version__}"
#: an asynchronous job (a table query) is polled after this many seconds, then twice as long each time up to the
#: maximum, and given up after ASYNC_JOB_TIMEOUT seconds; every poll is one REST call within the user's budget
ASYNC_POLL_FIRST = 0.1
ASYNC_POLL_MAX = 2.0
ASYNC_JOB_TIMEOUT = 600.0
T = TypeVar("T")


@dataclass
class CallStats:
    """Counters of control-plane traffic, for the run report."""

    calls: int = 0  # HTTP attempts sent, retries included
    retries: int = 0
    throttled: int = 0
    by_route: Dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0  # the attempts' time from sending to the answer read (not the time waiting in the gate)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def count(self, route: str, *, retry: bool, throttled: bool, seconds: float = 0.0) -> None:
        with self._lock:
            self.calls += 1
            self.seconds += seconds
            self.retries += retry
            self.throttled += throttled
            self.by_route[route] = self.by_route.get(route, 0) + 1


class _RetryableFailure(Exception):
    """Internal: an attempt failed in a way worth retrying; ``error`` is what to raise if retries run out.

    ``endpoint_problem`` says what is wrong with the endpoint if this happens before it ever answered well
    (then the last failure is raised as an :class:`EndpointError` with that text instead of ``error``).
    ``paced``: the gate holds the next try back until the platform's window has room, so no wait of our own.
    """

    def __init__(
        self,
        error: PlatformError,
        retry_after: Optional[float] = None,
        *,
        endpoint_problem: Optional[str] = None,
        paced: bool = False,
    ) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after
        self.endpoint_problem = endpoint_problem
        self.paced = paced


def _retry_after_seconds(response: requests.Response) -> Optional[float]:
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # HTTP-date form: fall back to our own backoff


class _WaitRetryAfterOrBackoff(tenacity.wait.wait_base):
    """Honour the server's Retry-After; no wait when the gate paces the next try; otherwise exponential backoff
    with "equal jitter": each wait is half its exponential step plus a random part of up to the other half.

    Full jitter (anywhere from 0 to the step) let all ten tries of one call fall inside a 10 s outage about once
    in 300 calls (simulated), so a short maintenance window failed files; with the floor, ten tries span at least
    32 s at the default policy, and the random half still spreads threads that failed together.
    """

    def __init__(self, *, initial: float, maximum: float) -> None:
        self._backoff = tenacity.wait_exponential(
            multiplier=initial / 2, max=maximum / 2
        ) + tenacity.wait_random_exponential(multiplier=initial / 2, max=maximum / 2)

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        if isinstance(exc, _RetryableFailure):
            if exc.retry_after is not None:
                return exc.retry_after
            if exc.paced:
                return 0.0
        return self._backoff(retry_state)


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 10
    max_total_seconds: float = 300.0
    initial_backoff: float = 0.2
    max_backoff: float = 20.0

    def first_contact(self) -> RetryPolicy:
        """The policy while the endpoint has never answered well: a wrong endpoint is far likelier than a passing
        fault, so a few short tries (each announced by a warning), then an :class:`EndpointError`."""
        return RetryPolicy(
            max_attempts=min(self.max_attempts, FIRST_CONTACT_ATTEMPTS),
            max_total_seconds=min(self.max_total_seconds, FIRST_CONTACT_SECONDS),
            initial_backoff=self.initial_backoff,
            max_backoff=min(self.max_backoff, FIRST_CONTACT_MAX_BACKOFF),
        )


FIRST_CONTACT_ATTEMPTS = 3
FIRST_CONTACT_SECONDS = 8.0
FIRST_CONTACT_MAX_BACKOFF = 1.0
MAX_THROTTLED_ATTEMPTS = 100  # 429s of one call before it fails: the gate paces them, so these mean contention
MAX_THROTTLED_SECONDS = 900.0  # nor may a call that was refused go on for longer than this, gate waits included
FIRST_CONTACT_CONNECT_TIMEOUT = 4.0  # seconds; the usual connect timeout applies once the endpoint answered


class Platform:
    """A session with the platform's REST services.

    ``Platform(endpoint="http://127.0.0.1:8080", token="...")`` derives ``/repo/v1``, ``/file/v1`` and
    ``/auth/v1`` from one service root; ``repo_endpoint=``/``file_endpoint=``/``auth_endpoint=`` set them one by
    one (real Synapse). Without arguments, endpoint and token come from the environment, ``~/.synapseConfig`` or
    keyring (see :mod:`synclient.platform.credentials`).

    Until the endpoint has given one well-formed answer (``endpoint_proven``), connection failures and answers
    that are not the API's JSON get a few short tries, then raise :class:`EndpointError` naming the endpoint;
    after that, the full :class:`RetryPolicy` applies.

    Cancellation: when ``cancel_event`` (given here, assigned later, or swapped in for a while with
    :meth:`cancel_on`) is set, a call waiting to retry stops at once with :class:`CallCancelledError`, and no
    new attempt is sent.

    ``admission`` (given here or assigned later, e.g. for one sharded run): limits shared with the user's other
    processes (:class:`~synclient.platform.gate.RestAdmission`). Each attempt the process gate let through enters it
    too, and leaves when its answer was read; the time waited there, as in the gate, is not retry time.
    """

    def __init__(
        self,
        endpoint: Optional[str] = None,
        *,
        token: Optional[str] = None,
        repo_endpoint: Optional[str] = None,
        file_endpoint: Optional[str] = None,
        auth_endpoint: Optional[str] = None,
        profile: Optional[str] = None,
        max_connections: int = 64,
        timeout: Tuple[float, float] = (10.0, 60.0),
        retry: RetryPolicy = RetryPolicy(),
        gate: Optional[AdaptiveGate] = None,
        cancel_event: Optional[threading.Event] = None,
        ca_bundle: Optional[str] = None,
        admission: Optional[RestAdmission] = None,
    ) -> None:
        install_redaction()  # the logs of synclient, urllib3 and requests show no credential, signature or token
        self.endpoints: Endpoints = resolve_endpoints(
            endpoint, repo_endpoint=repo_endpoint, file_endpoint=file_endpoint, auth_endpoint=auth_endpoint
        )
        self._token = resolve_token(token, profile=profile)
        self.timeout = timeout
        self.retry = retry
        self.cancel_event: threading.Event = cancel_event or threading.Event()
        # one gate per platform user in the process (the limits are per user); its ceiling is the number of
        # threads that may call at once, and it adapts below that on 429s
        self.gate = gate or shared_gate(self.endpoints.repo, self._token, max_limit=max(3, max_connections))
        #: admission shared with the user's other processes (a Dask cluster's), after the gate; None: this one only
        self.admission: Optional[RestAdmission] = admission
        self.stats = CallStats()
        self._endpoint_proven = False
        #: the CAs this platform's REST calls and its runs' data plane trust (see :mod:`synclient.platform.tls`)
        self.trusted_cas: TrustedCAs = resolve_trusted_cas(ca_bundle)
        self._session = _platform_session(self.endpoints.repo)
        self.resize_pool(max_connections)

    @classmethod
    def from_synapseclient(cls, syn: Any, **settings: Any) -> Platform:
        """The platform a logged-in ``synapseclient.Synapse`` talks to, as that user: its three endpoints
        (``repoEndpoint``, ``fileHandleEndpoint``, ``authEndpoint``) and its token (``credentials.secret``).
        ``settings`` are the other keyword arguments of ``Platform`` (``max_connections=``, ``retry=``, ...).

        Duck-typed, so synapseclient stays optional. A ``Synapse`` that is not logged in is a :class:`ConfigError`
        (an anonymous platform would fail later, on the first private entity, with a less helpful message)."""
        # syn is duck-typed (Any): its attributes are checked to be non-empty strings below
        endpoints: Dict[str, Any] = {
            name: getattr(syn, attribute, None)
            for name, attribute in (
                ("repo_endpoint", "repoEndpoint"),
                ("file_endpoint", "fileHandleEndpoint"),
                ("auth_endpoint", "authEndpoint"),
            )
        }
        missing = [attribute for attribute, value in endpoints.items() if not isinstance(value, str) or not value]
        if missing:
            raise ConfigError(
                f"{type(syn).__name__} is not a synapseclient.Synapse (no {missing[0]}): "
                "pass a synapseclient.Synapse, logged in"
            )
        credentials = getattr(syn, "credentials", None)
        token = getattr(credentials, "secret", None) if credentials is not None else None
        if not isinstance(token, str) or not token.strip():
            raise ConfigError(
                "the synapseclient.Synapse given is not logged in: call syn.login() first "
                "(or log in with 'synapse config' / SYNAPSE_AUTH_TOKEN and call syn.login())"
            )
        return cls(token=clean_token(token, where="the synapseclient login"), **endpoints, **settings)

    def __repr__(self) -> str:  # never shows the token
        state = "with token" if self._token else "anonymous"
        return f"Platform(repo={self.endpoints.repo!r}, {state})"

    @property
    def has_token(self) -> bool:
        return bool(self._token)

    def token_for_workers(self) -> Optional[str]:
        """The token, for the processes of a sharded run (:mod:`synclient.cluster`) that call as this user."""
        return self._token

    @property
    def endpoint_proven(self) -> bool:
        """True once the endpoint has given one well-formed Synapse answer (success or JSON error)."""
        return self._endpoint_proven

    @contextlib.contextmanager
    def cancel_on(self, event: threading.Event) -> Iterator[None]:
        """``with platform.cancel_on(pool.cancel_event): ...``: calls inside stop waiting to retry once ``event``
        is set; the previous event is back afterwards, so a cancelled run does not cancel the next one."""
        previous, self.cancel_event = self.cancel_event, event
        try:
            yield
        finally:
            self.cancel_event = previous

    def resize_pool(self, max_connections: int) -> None:
        """Size the connection pool to the number of threads that may call at once (no 'pool is full')."""
        adapter = _ContextAdapter(
            self.trusted_cas.ssl_context(), pool_connections=4, pool_maxsize=max(4, max_connections), max_retries=0
        )
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)

    def close(self) -> None:
        self._session.close()
        self.gate.share()  # the user's next command starts from this one's calls (synclient.platform.gate_state)

    def __enter__(self) -> Platform:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the one way a REST call is made ------------------------------------------------------------------------

    def _call(
        self,
        method: str,
        service: str,
        path: str,
        *,
        parse: Callable[[Any], T],
        route: str,
        body: Optional[Mapping[str, Any]] = None,
        params: Optional[Mapping[str, str]] = None,
        with_status: bool = False,
    ) -> T:
        """One REST call whose answer ``parse`` turns into a typed value; a parsed answer proves the endpoint.
        ``with_status``: ``parse`` gets ``(HTTP status, answer)``, for a route whose 2xx statuses differ in meaning."""
        answer = self._request(method, service, path, body=body, params=params, route=route, with_status=with_status)
        try:
            value = parse(answer)
        except MalformedAnswerError as exc:
            raise self._malformed_answer(exc, service=service, route=route, method=method) from None
        self._endpoint_proven = True
        return value

    def _malformed_answer(self, exc: MalformedAnswerError, *, service: str, route: str, method: str) -> SynclientError:
        base = self._base(service)
        if not self._endpoint_proven:
            return EndpointError(
                f"endpoint {base} gave a malformed answer to {route} ({exc}), so it is probably not a Synapse API",
                endpoint=base,
            )
        # JSON that lacks a field the API documents will not gain it on another try: raised as retries spent
        return MalformedAnswerError(f"{route}: malformed answer: {exc}", method=method, url=base).spent()

    def _base(self, service: str) -> str:
        return {"repo": self.endpoints.repo, "file": self.endpoints.file, "auth": self.endpoints.auth}[service]

    def _request(
        self,
        method: str,
        service: str,
        path: str,
        *,
        body: Optional[Mapping[str, Any]] = None,
        params: Optional[Mapping[str, str]] = None,
        route: str,
        with_status: bool = False,
    ) -> Any:
        base = self._base(service)
        call = _Call(method=method, base=base, url=base + path, route=route)

        def attempt() -> Any:
            if self.cancel_event.is_set():
                raise CallCancelledError(f"{route}: cancelled")
            call.attempts += 1
            return self._attempt(call, body=body, params=params)

        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(_RetryableFailure),
            wait=self._wait,
            stop=functools.partial(self._stop, call=call),
            sleep=self._sleep,
            before_sleep=self._announce_retry,
            reraise=True,
        )
        try:
            answer = retrying(attempt)
        except _RetryableFailure as failure:
            if self.cancel_event.is_set():
                raise CallCancelledError(f"{route}: cancelled while waiting to retry") from None
            if failure.endpoint_problem and not self._endpoint_proven:
                tries = f"{call.attempts} tries" if call.attempts > 1 else "1 try"
                raise EndpointError(
                    f"{failure.endpoint_problem}; gave up after {tries} of {route}", endpoint=base
                ) from None
            raise failure.error.spent() from None  # its tries are used up: an outer loop must not multiply them
        return (call.status, answer) if with_status else answer

    def _policy(self) -> RetryPolicy:
        return self.retry if self._endpoint_proven else self.retry.first_contact()

    def _wait(self, retry_state: tenacity.RetryCallState) -> float:
        policy = self._policy()
        return _WaitRetryAfterOrBackoff(initial=policy.initial_backoff, maximum=policy.max_backoff)(retry_state)

    def _stop(self, retry_state: tenacity.RetryCallState, *, call: _Call) -> bool:
        """Stop after ``max_attempts`` failures or ``max_total_seconds``; a 429 is not a failure (the gate paces the
        next try), nor is time spent waiting in the gate, so :data:`MAX_THROTTLED_ATTEMPTS` and
        :data:`MAX_THROTTLED_SECONDS` bound those: a platform that keeps refusing fails the call, it does not hang."""
        policy = self._policy()
        elapsed = retry_state.seconds_since_start or 0.0
        failures = retry_state.attempt_number - call.throttled_attempts
        refused = call.throttled_attempts >= MAX_THROTTLED_ATTEMPTS or (
            call.throttled_attempts > 0 and elapsed >= MAX_THROTTLED_SECONDS
        )
        return (
            self.cancel_event.is_set()
            or failures >= policy.max_attempts
            or refused
            or elapsed - call.gate_wait >= policy.max_total_seconds
        )

    def _sleep(self, seconds: float) -> None:
        self.cancel_event.wait(seconds)  # returns at once when the run is cancelled

    def _announce_retry(self, retry_state: tenacity.RetryCallState) -> None:
        failure = retry_state.outcome.exception() if retry_state.outcome else None
        seconds = retry_state.next_action.sleep if retry_state.next_action else 0.0
        if isinstance(failure, _RetryableFailure) and failure.endpoint_problem and not self._endpoint_proven:
            log.warning(
                "%s; trying again in %.1f s (try %d of %d)",
                failure.endpoint_problem,
                seconds,
                retry_state.attempt_number + 1,
                self._policy().max_attempts,
            )
        else:
            log.debug("%s, will retry in %.1f s", failure, seconds)

    def _attempt(self, call: _Call, *, body: Optional[Mapping[str, Any]], params: Optional[Mapping[str, str]]) -> Any:
        headers = {"Authorization": f"Bearer {self._token}"} if self._token else {}
        if body is not None:
            headers["Content-Type"] = "application/json"
        ticket = self.gate.acquire(cancel=self.cancel_event)
        call.gate_wait += ticket.waited
        throttle: Optional[Throttle] = None
        sent = False
        began = 0.0
        try:
            with self._admitted(call):
                sent = True
                began = time.monotonic()
                try:
                    response = self._session.request(
                        call.method,
                        call.url,
                        params=params,
                        headers=headers,
                        data=json.dumps(body) if body is not None else None,
                        timeout=self._timeout(),
                        allow_redirects=False,
                    )
                    content = response.content  # read fully inside the gate: a cut body is retried below
                except (requests.ConnectionError, requests.Timeout) as exc:
                    raise self._connection_failure(call, exc) from None
                status = response.status_code
                if status == 429:
                    reason = _reason(content)
                    throttle = Throttle.from_reason(reason, retry_after=_retry_after_seconds(response))
                    if reason is not None or self._endpoint_proven:
                        # the platform's own throttle: the gate paces the next try, so it is not a failure (a 429
                        # page from an endpoint never proven to be Synapse still is: a wrong endpoint fails fast)
                        call.throttled_attempts += 1
        finally:  # also when the admission was cancelled: the gate's slot is never kept
            self.gate.release(ticket, throttle)
            if sent:
                self.stats.count(
                    call.route,
                    retry=call.attempts > 1,
                    throttled=throttle is not None,
                    seconds=time.monotonic() - began,
                )
        call.status = status
        if 300 <= status < 400:
            raise _redirect_error(call, response)
        if status >= 400:
            return self._error_answer(call, response, content, throttle=throttle)
        if not content:
            return None
        try:
            return json.loads(content)
        except ValueError:
            # A body that is not JSON on a 2xx is a cut or garbled answer: worth another try.
            error = MalformedAnswerError(
                f"{call.route}: malformed JSON answer", status=status, method=call.method, url=call.url
            )
            problem = (
                f"endpoint {call.base} gave a malformed answer ({_content_kind(response)}, not JSON), so "
                f"it is probably not a Synapse API"
            )
            raise _RetryableFailure(error, endpoint_problem=problem) from None

    @contextlib.contextmanager
    def _admitted(self, call: _Call) -> Iterator[None]:
        """Inside: the attempt is admitted by the limits shared with the user's other processes, when there are
        any (:attr:`admission`). Raises :class:`CallCancelledError` when ``cancel_event`` is set while waiting."""
        admission = self.admission  # the one entered is the one left, should the run swap it meanwhile
        if admission is None:
            yield
            return
        call.gate_wait += admission.enter(cancel=self.cancel_event)
        try:
            yield
        finally:
            admission.leave()

    def _timeout(self) -> Tuple[float, float]:
        if self._endpoint_proven:
            return self.timeout
        connect, read = self.timeout
        return min(connect, FIRST_CONTACT_CONNECT_TIMEOUT), read

    def _connection_failure(self, call: _Call, exc: Exception) -> Exception:
        """A connection that failed: retryable, except a TLS failure on an endpoint that never answered."""
        error = ServerError(
            f"{call.route}: connection failed ({exc.__class__.__name__})", method=call.method, url=call.url
        )
        untrusted = certificate_problem(exc)
        if untrusted is not None:  # every call would fail alike: no retry
            return untrusted_certificate(f"endpoint {call.base}", untrusted, self.trusted_cas)
        proxy = requests.utils.select_proxy(call.url, self._session.proxies)
        if isinstance(exc, requests.exceptions.ProxyError) and proxy:  # the proxy failed, not the endpoint
            problem = (
                f"{_proxy_named(proxy)} (on the way to endpoint {call.base}) "
                f"{_connection_problem(exc, connect_timeout=self._timeout()[0], service='proxy')}; to reach the "
                f"endpoint directly, add {urlsplit(call.url).hostname} to NO_PROXY"
            )
        else:
            through = f" (through {_proxy_named(proxy)})" if proxy else ""
            problem = f"endpoint {call.base}{through} {_connection_problem(exc, connect_timeout=self._timeout()[0])}"
        if isinstance(exc, requests.exceptions.SSLError) and not self._endpoint_proven:
            return EndpointError(problem, endpoint=call.base)
        return _RetryableFailure(error, endpoint_problem=problem)

    def _error_answer(
        self, call: _Call, response: requests.Response, content: bytes, *, throttle: Optional[Throttle]
    ) -> Any:
        """Raise the typed error of a 4xx/5xx (``throttle``: what a 429 said), tried again when it is retryable; an
        answer that is not Synapse's JSON error marks a wrong endpoint."""
        status = response.status_code
        error = _error_for(status, _reason(content), method=call.method, route=call.route, url=call.url)
        problem = None
        if _is_synapse_error(content):
            self._endpoint_proven = True
        elif not self._endpoint_proven:
            problem = (
                f"endpoint {call.base} is not a Synapse API: {call.route} answered HTTP {status} with "
                f"{_content_kind(response)}, not the API's JSON error"
            )
            if not error.retryable:
                raise EndpointError(problem, endpoint=call.base)
        if error.retryable:
            log.debug("%s -> %s, will retry", call.route, status)
            retry_after = throttle.retry_after if throttle is not None else _retry_after_seconds(response)
            paced = throttle is not None and throttle.kind is ThrottleKind.FREQUENCY and retry_after is None
            raise _RetryableFailure(error, retry_after=retry_after, endpoint_problem=problem, paced=paced)
        raise error

    # -- the API synclient uses ----------------------------------------------------------------------------------

    def get_user_profile(self) -> Dict[str, Any]:
        return self._call("GET", "repo", "/userProfile", parse=user_profile_from_wire, route="GET /userProfile")

    def get_entity(self, entity_id: str, *, version: Optional[int] = None) -> Entity:
        return self._call(
            "GET", "repo", _entity_path(entity_id, version), parse=Entity.from_wire, route="GET /entity/{id}"
        )

    def get_entity_header(self, entity_id: str) -> EntityHeader:
        """The cheapest way to learn an entity's type (``GET /entity/{id}/type``)."""
        return self._call(
            "GET", "repo", f"/entity/{entity_id}/type", parse=EntityHeader.from_wire, route="GET /entity/{id}/type"
        )

    def get_entity_headers(self, entity_ids: Sequence[str]) -> Dict[str, EntityHeader]:
        """Headers of many entities (``POST /entity/header``, :data:`HEADER_BATCH_MAX` per call), keyed by id. The
        platform leaves out what does not exist or may not be read: those ids are missing from the answer."""
        found: Dict[str, EntityHeader] = {}
        unique = list(dict.fromkeys(entity_ids))
        for start in range(0, len(unique), HEADER_BATCH_MAX):
            body = {"references": [{"targetId": entity_id} for entity_id in unique[start : start + HEADER_BATCH_MAX]]}
            headers = self._call(
                "POST", "repo", "/entity/header", body=body, parse=_header_list, route="POST /entity/header"
            )
            found.update((header.id, header) for header in headers)
        return found

    def get_entity_path(self, entity_id: str) -> List[EntityHeader]:
        """The entity's chain (``GET /entity/{id}/path``, an ``EntityPath``): Synapse's root folder first, then the
        project and each folder down to the entity itself, each item only its id, name and type. Synapse names an
        item the caller may not read ``Redacted`` (NodeManagerImpl.getNodePath) and keeps its id."""
        return self._call(
            "GET", "repo", f"/entity/{entity_id}/path", parse=_entity_path_items, route="GET /entity/{id}/path"
        )

    def list_children(
        self,
        parent_id: str,
        *,
        include_types: Iterable[EntityType],
        page_token: Optional[str] = None,
        sum_file_sizes: bool = False,
    ) -> ChildrenPage:
        """One page of ``parent_id``'s children; ``sum_file_sizes``: the page also says the sum of the current
        file sizes of all its children of these types (``includeSumFileSizes``; the server sums on every page)."""
        body: Dict[str, Any] = {
            "parentId": parent_id,
            "includeTypes": [t.children_filter for t in include_types],
            "sortBy": "NAME",
            "sortDirection": "ASC",
        }
        if page_token:
            body["nextPageToken"] = page_token
        if sum_file_sizes:
            body["includeSumFileSizes"] = True
        return self._call(
            "POST", "repo", "/entity/children", body=body, parse=ChildrenPage.from_wire, route="POST /entity/children"
        )

    def iter_children(self, parent_id: str, *, include_types: Iterable[EntityType]) -> Iterator[EntityHeader]:
        """Every child of ``parent_id`` of these types, page after page (a token given twice, or an empty page
        with a next one, is a :class:`MalformedAnswerError`: see :class:`PageTrail`)."""
        trail = PageTrail(f"the children of {parent_id}")
        page_token: Optional[str] = None
        while True:
            page = self.list_children(parent_id, include_types=include_types, page_token=page_token)
            yield from page.headers
            page_token = trail.follow(page.next_page_token, rows=len(page.headers))
            if not page_token:
                return

    def get_file_bundle(
        self, entity_id: str, *, version: Optional[int] = None, include_annotations: bool = False
    ) -> FileBundle:
        path = _entity_path(entity_id, version) + "/bundle2"
        body = {"includeEntity": True, "includeFileHandles": True, "includeAnnotations": include_annotations}
        return self._call(
            "POST", "repo", path, body=body, parse=FileBundle.from_wire, route="POST /entity/{id}/bundle2"
        )

    def get_activity(self, entity_id: str, *, version: Optional[int] = None) -> Optional[Dict[str, Any]]:
        """The provenance record (Activity) of an entity version, or None when it has none."""
        path = _entity_path(entity_id, version) + "/generatedBy"
        try:
            return self._call("GET", "repo", path, parse=_optional_activity, route="GET /entity/{id}/generatedBy")
        except NotFoundError:
            return None

    def get_presigned_urls(self, requests_: Sequence[FileHandleRequest]) -> Dict[str, PresignedUrlAnswer]:
        """Pre-signed URLs for up to 100 file handles in one call, keyed by file handle id."""
        if not 0 < len(requests_) <= URL_BATCH_MAX:
            raise ValueError(f"a URL batch holds 1 to {URL_BATCH_MAX} file handles, got {len(requests_)}")
        body = {
            "requestedFiles": [
                {
                    "fileHandleId": r.file_handle_id,
                    "associateObjectId": r.entity_id,
                    "associateObjectType": "FileEntity",
                }
                for r in requests_
            ],
            "includePreSignedURLs": True,
            "includeFileHandles": False,
            "includePreviewPreSignedURLs": False,
        }
        return self._call(
            "POST",
            "file",
            "/fileHandle/batch",
            body=body,
            parse=PresignedUrlAnswer.batch_from_wire,
            route="POST /fileHandle/batch",
        )

    def query_table(self, table_id: str, sql: str, *, timeout: float = ASYNC_JOB_TIMEOUT) -> Iterator[QueryPage]:
        """Every page of ``sql`` over the table or view ``table_id``: Synapse's asynchronous query jobs
        (``POST /entity/{id}/table/query/async/start``, polled until its answer, then ``.../nextPage/...`` while
        the answer has a next page token); ``timeout``: how long the first page may keep answering 202 (a view
        being built)."""
        body = {
            "concreteType": QUERY_BUNDLE_REQUEST,
            "entityId": table_id,
            "partMask": QUERY_RESULTS_PART,
            "query": {"sql": sql, "includeEntityEtag": False},
        }
        trail = PageTrail(f"the query of {table_id}")
        page = self._async_job(
            f"/entity/{table_id}/table/query",
            body,
            parse=QueryPage.from_bundle,
            route="/entity/{id}/table/query",
            timeout=timeout,
        )
        yield page
        while (token := trail.follow(page.next_page_token, rows=len(page.rows))) is not None:
            page = self._async_job(
                f"/entity/{table_id}/table/query/nextPage",
                token,
                parse=QueryPage.from_result,
                route="/entity/{id}/table/query/nextPage",
            )
            yield page

    # -- what the user creates in their own account (a temporary file view: --view auto) ---------------------------

    def find_project(self, name: str) -> Optional[str]:
        """The id of the project named ``name`` (``POST /entity/child`` with no parent; names of projects are
        unique on the platform), None when there is none the caller can see."""
        return self.find_child(None, name)

    def find_child(self, parent_id: Optional[str], name: str) -> Optional[str]:
        """The id of the child named ``name`` of ``parent_id`` (a project when None): ``POST /entity/child``
        (names are unique among siblings), None when there is none the caller can see."""
        body = {"entityName": name} if parent_id is None else {"parentId": parent_id, "entityName": name}
        try:
            return self._call(
                "POST", "repo", "/entity/child", body=body, parse=_entity_id_answer, route="POST /entity/child"
            )
        except NotFoundError:
            return None

    def holds_anything(self, container_id: str) -> bool:
        """Whether the container has a child of any kind (one children call, every type Synapse knows)."""
        body = {"parentId": container_id, "includeTypes": list(ALL_CHILD_TYPE_NAMES), "sortBy": "NAME"}
        page = self._call(
            "POST", "repo", "/entity/children", body=body, parse=ChildrenPage.from_wire, route="POST /entity/children"
        )
        return bool(page.headers or page.next_page_token)

    def create_entity(self, entity: Mapping[str, Any]) -> Entity:
        """Create an entity (``POST /entity``, its JSON with its ``concreteType``): the entity as created."""
        return self._call("POST", "repo", "/entity", body=entity, parse=Entity.from_wire, route="POST /entity")

    def delete_entity(self, entity_id: str) -> None:
        """Delete an entity and what it holds for good (``DELETE /entity/{id}?skipTrashCan=true``: nothing is
        left in the caller's trash can)."""
        self._call(
            "DELETE",
            "repo",
            f"/entity/{entity_id}",
            params={"skipTrashCan": "true"},
            parse=lambda answer: None,
            route="DELETE /entity/{id}",
        )

    def get_annotations(self, entity_id: str) -> Annotations:
        """An entity's annotations (``GET /entity/{id}/annotations2``)."""
        return self._call(
            "GET",
            "repo",
            f"/entity/{entity_id}/annotations2",
            parse=Annotations.from_wire,
            route="GET /entity/{id}/annotations2",
        )

    def set_annotations(self, annotations: Annotations) -> Annotations:
        """Replace an entity's annotations (``PUT /entity/{id}/annotations2``, at the etag they were read or
        created at)."""
        return self._call(
            "PUT",
            "repo",
            f"/entity/{annotations.entity_id}/annotations2",
            body=annotations.to_wire(),
            parse=Annotations.from_wire,
            route="PUT /entity/{id}/annotations2",
        )

    def create_columns(self, models: Sequence[Mapping[str, Any]]) -> List[str]:
        """The ids of these column models (``POST /column/batch``; the platform gives an existing model's id)."""
        body = {"concreteType": LIST_WRAPPER, "list": [dict(model) for model in models]}
        ids = self._call("POST", "repo", "/column/batch", body=body, parse=_column_ids, route="POST /column/batch")
        if len(ids) != len(models):
            raise self._malformed_answer(
                MalformedAnswerError(f"{len(ids)} column ids for {len(models)} column models"),
                service="repo",
                route="POST /column/batch",
                method="POST",
            )
        return ids

    def view_scope_columns(self, scope_ids: Sequence[str], *, view_type_mask: int) -> List[Dict[str, Any]]:
        """The annotation columns of the entities a file view of this scope would show (every page of the
        asynchronous ``ViewColumnModelRequest``), as column models without ids."""
        columns: List[Dict[str, Any]] = []
        trail = PageTrail("the view scope's columns")
        token: Optional[str] = None
        while True:
            body: Dict[str, Any] = {
                "concreteType": VIEW_COLUMN_MODEL_REQUEST,
                "viewScope": {"scope": list(scope_ids), "viewEntityType": "entityview", "viewTypeMask": view_type_mask},
            }
            if token:
                body["nextPageToken"] = token
            page, token = self._async_job("/column/view/scope", body, parse=_scope_columns, route="/column/view/scope")
            columns.extend(page)
            token = trail.follow(token, rows=len(page))
            if not token:
                return columns

    # -- the download list (the portal's Download Cart) ---------------------------------------------------------

    def download_list_available(self) -> List[DownloadListItemResult]:
        """Every available file of the user's download list, page after page (each page one asynchronous
        ``DownloadListQueryRequest`` job with an ``AvailableFilesRequest``: its start and its polls)."""
        return [row for page in self._download_list_pages(AVAILABLE_FILES_REQUEST) for row in page.files]

    def download_list_page(self, *, page_token: Optional[str] = None) -> DownloadListPage:
        """One page of the download list's available files (one asynchronous job): the page after ``page_token``,
        or the first."""
        return self._download_list_query(AVAILABLE_FILES_REQUEST, page_token)

    def download_list_actions(self) -> List[ActionRequired]:
        """What the user must do on the portal before the cart's other files can be downloaded (every page of the
        ``ActionRequiredRequest``): one count per action."""
        return [action for page in self._download_list_pages(ACTION_REQUIRED_REQUEST) for action in page.actions]

    def download_list_available_count(self) -> int:
        """How many files of the download list the user may download now (``FilesStatisticsRequest``: one job)."""
        return self._download_list_query(FILES_STATISTICS_REQUEST, None).available

    def download_list_requiring_action(self) -> int:
        """How many files of the download list need an action first (``FilesStatisticsRequest``: one job). Not the
        sum of the actions' counts: each counts the files that need it, and one file can need several."""
        return self._download_list_query(FILES_STATISTICS_REQUEST, None).requiring_action

    def _download_list_pages(self, details_type: str, page_token: Optional[str] = None) -> Iterator[DownloadListPage]:
        """Every page from ``page_token`` on (None: the first), one job each."""
        trail = PageTrail("the download list")
        token = page_token
        while True:
            page = self._download_list_query(details_type, token)
            yield page
            token = trail.follow(page.next_page_token, rows=len(page.files) + len(page.actions))
            if not token:
                return

    def iter_download_list_pages(self, *, page_token: Optional[str] = None) -> Iterator[DownloadListPage]:
        """The available files' pages from ``page_token`` on (None: the first), one job each, in order."""
        return self._download_list_pages(AVAILABLE_FILES_REQUEST, page_token)

    def _download_list_query(self, details_type: str, page_token: Optional[str]) -> DownloadListPage:
        details: Dict[str, Any] = {"concreteType": details_type}
        if page_token:
            details["nextPageToken"] = page_token
        body = {"concreteType": DOWNLOAD_LIST_QUERY_REQUEST, "requestDetails": details}
        return self._async_job(
            "/download/list/query", body, parse=DownloadListPage.from_wire, route="/download/list/query"
        )

    def download_list_manifest(self) -> str:
        """The id of a file handle of the download list's manifest CSV (an asynchronous job, as
        synapseclient's ``get-download-list`` asks for it); its URL comes from a URL batch (its creator may)."""
        body = {"concreteType": DOWNLOAD_LIST_MANIFEST_REQUEST, "csvTableDescriptor": {"isFirstLineHeader": True}}
        return self._async_job(
            "/download/list/manifest", body, parse=manifest_handle_id, route="/download/list/manifest"
        )

    def remove_from_download_list(self, items: Sequence[DownloadListItem]) -> int:
        """Remove these items (each keyed as it was added) from the download list, :data:`CART_REMOVE_MAX` per
        call; the number the platform removed."""
        removed = 0
        for start in range(0, len(items), CART_REMOVE_MAX):
            body = {"batchToRemove": [item.to_wire() for item in items[start : start + CART_REMOVE_MAX]]}
            removed += self._call(
                "POST",
                "repo",
                "/download/list/remove",
                body=body,
                parse=_removed_count,
                route="POST /download/list/remove",
            )
        return removed

    def _async_job(
        self,
        path: str,
        body: Mapping[str, Any],
        *,
        parse: Callable[[Any], T],
        route: str,
        timeout: float = ASYNC_JOB_TIMEOUT,
    ) -> T:
        """Start an asynchronous job and poll it until it answers: 202 with a PROCESSING job status meanwhile; a
        failed job is answered with its error status (or, as older servers do, a FAILED job status); a
        :class:`JobTimeoutError` when it has not answered after ``timeout`` seconds."""
        token = self._call(
            "POST", "repo", path + "/async/start", body=body, parse=_job_token, route=f"POST {route}/async/start"
        )
        delay, waited = ASYNC_POLL_FIRST, 0.0
        while True:
            answer = self._call(
                "GET",
                "repo",
                f"{path}/async/get/{token}",
                parse=_job_answer(parse),
                route=f"GET {route}/async/get/{{token}}",
                with_status=True,
            )
            if answer is not _PENDING:
                return answer
            if waited >= timeout:
                raise JobTimeoutError(
                    f"{route}: the platform's job {token} did not finish within {timeout:g} s",
                    method="GET",
                    url=self.endpoints.repo + path,
                )
            delay = min(delay, max(timeout - waited, 0.0))  # (the last poll falls on the bound)
            self._sleep(delay)
            if self.cancel_event.is_set():
                raise CallCancelledError(f"{route}: cancelled while waiting for the platform's job")
            waited += delay
            delay = min(delay * 2, ASYNC_POLL_MAX)


#: what a poll of an asynchronous job gives while the job runs
_PENDING = object()


def _entity_id_answer(answer: Any) -> str:
    """An ``EntityId``: its ``id``."""
    what = "an entity id answer"
    return wire_entity_id(wire_object(answer, what).get("id"), "id", what)


def _column_ids(answer: Any) -> List[str]:
    """A ``ListWrapper`` of ColumnModels: their ids, in order."""
    what = "a column batch answer"
    models = wire_object(answer, what).get("list")
    if not isinstance(models, list):
        raise MalformedAnswerError(f"{what} has no list of column models")
    return [wire_handle_id(wire_object(model, what).get("id"), "id", what) for model in models]  # (digits)


def _scope_columns(answer: Any) -> Tuple[List[Dict[str, Any]], Optional[str]]:
    """A ``ViewColumnModelResponse``: its column models (checked to be objects naming a name and a type) and its
    next page token."""
    what = "a view scope's columns"
    obj = wire_object(answer, what)
    results = obj.get("results") or []
    if not isinstance(results, list):
        raise MalformedAnswerError(f"{what}: results is not a list")
    models = []
    for model in results:
        column = dict(wire_object(model, what))
        if not isinstance(column.get("name"), str) or not isinstance(column.get("columnType"), str):
            raise MalformedAnswerError(f"{what}: a column model without a name or a type")
        models.append(column)
    token = obj.get("nextPageToken")
    if token is not None and not isinstance(token, str):
        raise MalformedAnswerError(f"{what}: nextPageToken is not a string")
    return models, token


def _removed_count(answer: Any) -> int:
    what = "a download list remove answer"
    return wire_whole_number(wire_object(answer, what).get("numberOfFilesRemoved"), "numberOfFilesRemoved", what)


def _job_token(answer: Any) -> str:
    """The ``token`` of an AsyncJobId."""
    token = wire_object(answer, "an asynchronous job id").get("token")
    if not isinstance(token, str) or not re.fullmatch(r"[A-Za-z0-9_-]+", token):
        raise MalformedAnswerError("an asynchronous job id lacks a token made of letters and digits")
    return token


def _job_answer(parse: Callable[[Any], T]) -> Callable[[Tuple[int, Any]], Any]:
    """A poll's ``(status, answer)``: :data:`_PENDING` for a 202 with the job's PROCESSING status, ``parse`` of
    the job's response for a 201 (Synapse's ``.../async/get/{token}`` controllers are all
    ``@ResponseStatus(HttpStatus.CREATED)``; the 202 is its answer to ``NotReadyException``), a failed job's error.
    Any other status, or a 202 that is not a running job's status, is a malformed answer: not waited on."""

    def parse_poll(polled: Tuple[int, Any]) -> Any:
        status, answer = polled
        state = wire_object(answer, "an asynchronous job's answer").get("jobState")
        if state == "FAILED":  # as older servers answered a failed job
            message = answer.get("errorMessage") or answer.get("errorDetails") or "no reason given"
            raise BadRequestError(f"the platform's job failed: {message}", status=400)
        if status == 202:
            if state != "PROCESSING":
                raise MalformedAnswerError(f"HTTP 202 with a job state {state!r}, not PROCESSING")
            return _PENDING
        if status != 201:
            raise MalformedAnswerError(f"HTTP {status}: an asynchronous job answers 201 when done, 202 meanwhile")
        return parse(answer)

    return parse_poll


@dataclass
class _Call:
    """One REST call across its attempts."""

    method: str
    base: str  # the service endpoint, named in endpoint errors
    url: str
    route: str  # "GET /entity/{id}": method and path template, for messages and stats
    attempts: int = 0
    throttled_attempts: int = 0  # answered 429: paced by the gate, not counted as failures
    gate_wait: float = 0.0  # seconds spent waiting in the gate, not counted as retry time
    status: int = 0  # the HTTP status of the last attempt


def _entity_path(entity_id: str, version: Optional[int]) -> str:
    """``/entity/{id}``, or ``/entity/{id}/version/{n}`` for one version of it."""
    return f"/entity/{entity_id}" + (f"/version/{version}" if version is not None else "")


def _entity_path_items(answer: Any) -> List[EntityHeader]:
    """The items of an ``EntityPath`` answer (``{"path": [EntityHeader, ...]}``), root first; a malformed item
    fails the answer (a chain with a hole would name the wrong folders)."""
    items = wire_object(answer, "an entity path").get("path") or []
    if not isinstance(items, list):
        raise MalformedAnswerError("the 'path' of an entity path is not a list")
    return [EntityHeader.from_wire(item) for item in items]


def _header_list(answer: Any) -> List[EntityHeader]:
    """The headers of a ``POST /entity/header`` answer. A malformed row is left out (said in a warning), so its
    entity alone is missing from the answer, as one that does not exist or may not be read is."""
    rows = wire_object(answer, "a list of entity headers").get("results") or []
    if not isinstance(rows, list):
        raise MalformedAnswerError("the 'results' of a list of entity headers is not a list")
    headers = []
    for row in rows:
        try:
            headers.append(EntityHeader.from_wire(row))
        except MalformedAnswerError as exc:
            entity = row.get("id") if isinstance(row, Mapping) else None
            log.warning("POST /entity/header: the header of %.40r is malformed (%s): left out", entity, exc)
    return headers


def _optional_activity(answer: Any) -> Optional[Dict[str, Any]]:
    return None if answer is None else dict(wire_object(answer, "an activity"))


class _ContextAdapter(HTTPAdapter):
    """requests' adapter with one SSL context for every connection. Given ``verify``, requests hands urllib3 the
    bundle's path for each new connection, and urllib3 then parses the whole bundle again (see
    :meth:`TrustedCAs.ssl_context`); here the context carries the CAs and no path reaches urllib3."""

    def __init__(self, ssl_context: ssl.SSLContext, **kwargs: Any) -> None:
        self._ssl_context = ssl_context  # before super().__init__, which makes the pool manager
        super().__init__(**kwargs)

    def init_poolmanager(self, *args: Any, **pool_kwargs: Any) -> None:
        super().init_poolmanager(*args, ssl_context=self._ssl_context, **pool_kwargs)

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        return super().proxy_manager_for(proxy, ssl_context=self._ssl_context, **proxy_kwargs)

    def cert_verify(self, conn: Any, url: str, verify: Any, cert: Any) -> None:
        super().cert_verify(conn, url, verify, cert)
        conn.ca_certs = conn.ca_cert_dir = None  # the context has them


def _platform_session(endpoint: str) -> requests.Session:
    """A session whose environment is read once, not on every request.

    With ``trust_env`` on, requests re-reads proxy variables, ``~/.netrc`` and CA-bundle variables for every call
    (about a quarter of its CPU per request). We read proxies and the CA bundle here, once, and never use netrc:
    the platform token is our only credential.
    """
    session = requests.Session()
    session.trust_env = False
    session.proxies.update(requests.utils.get_environ_proxies(endpoint))
    session.verify = True  # against the context of the adapters (resize_pool), not a bundle path
    session.headers.update({"User-Agent": USER_AGENT, "Accept": "application/json"})
    return session


def _reason(content: bytes) -> Optional[str]:
    try:
        reason = json.loads(content).get("reason")
        return str(reason) if reason is not None else None
    except (ValueError, AttributeError):
        return None


def _is_synapse_error(content: bytes) -> bool:
    """Synapse answers every error with a JSON object carrying ``reason``; a web server's error page does not."""
    try:
        answer = json.loads(content)
    except ValueError:
        return False
    return isinstance(answer, dict) and "reason" in answer


def _content_kind(response: requests.Response) -> str:
    if not response.content:
        return "an empty body"
    kind = (response.headers.get("Content-Type") or "").split(";")[0].strip()
    return f"a {kind} body" if kind else "a body of unknown type"


def _error_for(status: int, reason: Optional[str], *, method: str, route: str, url: str) -> PlatformError:
    """The typed error of an HTTP error status, ``"POST /entity/{id}/bundle2: HTTP 403: <reason>"`` (``route``
    already starts with the method). Its nature decides whether the call is tried again (``error.retryable``)."""
    text = f"{route}: HTTP {status}" + (f": {reason}" if reason else "")
    kind = (
        AuthenticationError
        if status == 401
        else AccessDeniedError
        if status == 403
        else NotFoundError
        if status == 404
        else ThrottledError
        if status == 429
        else ServerError
        if status in TRANSIENT_SERVER_STATUS
        else PermanentServerError
        if status >= 500
        else BadRequestError
    )
    return kind(text, status=status, reason=reason, method=method, url=url)


def _redirect_error(call: _Call, response: requests.Response) -> EndpointError:
    """Redirects are never followed (the token must not travel elsewhere): say where the endpoint points to."""
    location = response.headers.get("Location") or ""
    ours, theirs = urlsplit(call.base), urlsplit(urljoin(call.url, location))
    where = (
        redact_url(f"{theirs.scheme}://{theirs.netloc}") if theirs.netloc else "an unknown place (no Location header)"
    )
    differs = (
        "another scheme"
        if theirs.scheme != ours.scheme
        else "another host"
        if theirs.netloc != ours.netloc
        else "another path"
    )
    return EndpointError(
        f"endpoint {call.base} redirects to {differs} ({where}, HTTP {response.status_code}); "
        f"redirects are not followed: set the endpoint to the address it redirects to",
        endpoint=call.base,
    )


def _proxy_named(proxy: str) -> str:
    """A proxy as an error names it: its URL without credentials, and the environment variable it came from."""
    variable = next(
        (name for name, value in os.environ.items() if name.lower().endswith("_proxy") and value == proxy), None
    )
    shown = redact_url(requests.utils.prepend_scheme_if_needed(proxy, "http"))
    return f"the proxy {shown}" + (f" from {variable}" if variable else "")


def _connection_problem(exc: Exception, *, connect_timeout: float, service: str = "service") -> str:
    """What went wrong with a connection, in words (the exception's own text is long and names internals);
    ``service``: what was being reached."""
    if isinstance(exc, requests.exceptions.SSLError):
        detail = re.search(r"\[SSL: [A-Z_]+\][^('\"]*", str(exc))
        hint = ": is it an http:// server?" if "WRONG_VERSION_NUMBER" in str(exc) else ""
        return f"failed the TLS handshake ({detail.group(0).strip() if detail else 'SSL error'}){hint}"
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return f"did not accept a connection within {connect_timeout:g} s"
    if isinstance(exc, requests.Timeout):
        return "accepted the connection but did not answer in time"
    causes = list(exception_chain(exc))
    if any(isinstance(cause, ConnectionRefusedError) for cause in causes):
        return f"refused the connection (is the {service} running, and is the port right?)"
    if any(isinstance(cause, socket.gaierror) for cause in causes):
        return "has a host name that does not resolve"
    if any(isinstance(cause, ConnectionResetError) for cause in causes):
        return "reset the connection"
    return f"could not be reached ({exc.__class__.__name__})"
