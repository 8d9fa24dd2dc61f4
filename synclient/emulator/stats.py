"""Counters that tests read through ``GET /emulator/stats`` (or ``Emulator.stats()``)."""

from __future__ import annotations

import enum
import json
import re
import threading
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any, Deque, Dict, List, Optional

_SYN_ID = re.compile(r"/syn\d+(?=/|$)", re.IGNORECASE)
_VERSION = re.compile(r"/version/\d+(?=/|$)")
_NUMBER = re.compile(r"/\d+(?=/|$)")


def route_key(method: str, path: str) -> str:
    """``POST /repo/v1/entity/syn12/version/3/bundle2`` -> ``POST /repo/v1/entity/{id}/version/{v}/bundle2``."""
    path = path.split("?", 1)[0]
    path = _SYN_ID.sub("/{id}", path)
    path = _VERSION.sub("/version/{v}", path)
    path = _NUMBER.sub("/{id}", path)
    return f"{method} {path}"


class Plane(enum.Enum):
    """The listeners that serve bytes; each keeps its own request, byte and status counters."""

    DATA = "data"  # the S3-like host behind pre-signed URLs
    EXTERNAL = "external"  # the plain web server behind external file handles


@dataclass
class PlaneCounters:
    requests: int = 0
    bytes: int = 0
    #: requests that carried an ``Authorization`` header (the platform token must never go there)
    auth_headers: int = 0
    by_status: Counter = field(default_factory=Counter)


@dataclass(frozen=True)
class Exchange:
    """One platform request and its answer as sent, recorded when the ``record_exchanges`` knob is above 0."""

    method: str
    path: str
    query: Dict[str, str]
    #: the request body parsed as JSON, else its text (``None`` when empty)
    request: object
    status: int
    #: the answer parsed as JSON (``{}`` for none), else ``None`` (other bytes are not kept)
    response: object


def _as_json(payload: object) -> object:
    """A body as JSON: dicts and lists copied (the route may keep them), bytes and text parsed, else ``None``."""
    if payload is None:
        return {}  # what the listener sends for no body
    if isinstance(payload, (dict, list)):
        return json.loads(json.dumps(payload))
    try:
        return json.loads(payload.decode("utf-8") if isinstance(payload, (bytes, bytearray)) else str(payload))
    except ValueError:  # UnicodeDecodeError is one
        return None


class ExchangeLog:
    """The last N exchanges (N = the knob at each request: memory stays bounded; 0 records nothing)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: Deque[Exchange] = deque()

    def record(
        self, limit: int, method: str, path: str, query: Dict[str, str], body: bytes, status: int, answer: object
    ) -> None:
        """``answer`` is the route's ``Response.body`` (JSON value, bytes or text)."""
        if limit <= 0:
            return
        request: Optional[object] = None
        if body:
            request = _as_json(body)
            if request is None:
                request = body.decode("utf-8", "replace")
        exchange = Exchange(method, path, dict(query), request, status, _as_json(answer))
        with self._lock:
            self._kept.append(exchange)
            while len(self._kept) > limit:
                self._kept.popleft()

    def snapshot(self) -> List[Exchange]:
        with self._lock:
            return list(self._kept)

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()


class Stats:
    """Thread-safe counters; one lock, held only for the increment itself."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._in_flight = 0
        self._data_in_flight = 0
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.api_requests = 0
            self.api_by_route: Counter = Counter()
            self.api_by_class: Counter = Counter()
            self.planes: Dict[Plane, PlaneCounters] = {plane: PlaneCounters() for plane in Plane}
            self.throttled_429 = 0
            self.peak_api_concurrency = self._in_flight
            self.peak_data_concurrency = self._data_in_flight
            self.paced_body_seconds = 0.0
            self.api_5xx_injected = 0
            self.data_cuts_injected = 0
            self.data_stalls_injected = 0
            self.api_by_status: Counter = Counter()
            self.connections: Counter = Counter()  # listener -> connections accepted (and handshaken, over TLS)
            self.tls_handshakes: Counter = Counter()  # listener -> completed TLS handshakes
            self.tls_resumed: Counter = Counter()  # listener -> of those, resumed sessions

    def connection_accepted(self, listener: str, *, tls: bool, resumed: bool) -> None:
        with self._lock:
            self.connections[listener] += 1
            if tls:
                self.tls_handshakes[listener] += 1
                self.tls_resumed[listener] += int(resumed)

    def api_started(self, method: str, path: str) -> None:
        with self._lock:
            self.api_requests += 1
            self.api_by_route[route_key(method, path)] += 1
            self._in_flight += 1
            self.peak_api_concurrency = max(self.peak_api_concurrency, self._in_flight)

    def api_routed(self, route_class: str) -> None:
        """A request matched a route of that class (``knobs.ROUTE_CLASSES``: the classes faults target)."""
        with self._lock:
            self.api_by_class[route_class] += 1

    def api_answered(self, status: int) -> None:
        with self._lock:
            self.api_by_status[str(status)] += 1
            if status == 429:
                self.throttled_429 += 1

    def api_finished(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def api_fault(self) -> None:
        with self._lock:
            self.api_5xx_injected += 1

    def transfer_started(self, plane: Plane, has_authorization: bool) -> None:
        with self._lock:
            counters = self.planes[plane]
            counters.requests += 1
            if has_authorization:
                counters.auth_headers += 1

    def data_body_started(self) -> None:
        with self._lock:
            self._data_in_flight += 1
            self.peak_data_concurrency = max(self.peak_data_concurrency, self._data_in_flight)

    def data_body_finished(self) -> None:
        with self._lock:
            self._data_in_flight -= 1

    def data_body_sent(self, seconds: float) -> None:
        """A bandwidth-capped body took ``seconds`` from its first byte to its last: bytes / (these seconds x cap)
        says how much of the cap the client's reading used (1.0: the link, not the client, was the limit)."""
        with self._lock:
            self.paced_body_seconds += seconds

    def transfer_answered(self, plane: Plane, status: int) -> None:
        with self._lock:
            self.planes[plane].by_status[str(status)] += 1

    def transfer_sent(self, plane: Plane, count: int) -> None:
        with self._lock:
            self.planes[plane].bytes += count

    def data_cut(self) -> None:
        with self._lock:
            self.data_cuts_injected += 1

    def data_stall(self) -> None:
        with self._lock:
            self.data_stalls_injected += 1

    def snapshot(self) -> Dict[str, Any]:
        with self._lock:
            data, external = self.planes[Plane.DATA], self.planes[Plane.EXTERNAL]
            return {
                "api_requests": self.api_requests,
                "api_by_route": dict(self.api_by_route),
                "api_by_class": dict(self.api_by_class),
                "api_by_status": dict(self.api_by_status),
                "data_requests": data.requests,
                "data_bytes": data.bytes,
                "data_by_status": dict(data.by_status),
                "auth_headers_on_data": data.auth_headers,
                "external_requests": external.requests,
                "external_bytes": external.bytes,
                "external_by_status": dict(external.by_status),
                "auth_headers_on_external": external.auth_headers,
                "throttled_429": self.throttled_429,
                "peak_api_concurrency": self.peak_api_concurrency,
                "peak_data_concurrency": self.peak_data_concurrency,
                "paced_body_seconds": round(self.paced_body_seconds, 4),
                "api_in_flight": self._in_flight,
                "api_5xx_injected": self.api_5xx_injected,
                "data_cuts_injected": self.data_cuts_injected,
                "data_stalls_injected": self.data_stalls_injected,
                "connections": dict(self.connections),
                "tls_handshakes": dict(self.tls_handshakes),
                "tls_resumed": dict(self.tls_resumed),
            }
