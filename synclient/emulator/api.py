"""The API listener: every platform request passes, in order, maintenance window -> token ->
throttle gate -> random 429 -> latency -> random 5xx -> the route itself (``routes.py``).
Paths under ``/emulator/`` go to the admin routes instead (``admin_routes.py``).
"""

from __future__ import annotations

import json
import logging
import time
from typing import Callable, Dict, Tuple
from urllib.parse import parse_qs, urlsplit

from . import hostile, wire
from .column_routes import COLUMN_ROUTES
from .download_list_routes import DOWNLOAD_LIST_ROUTES
from .entity_routes import ENTITY_WRITE_ROUTES
from .faults import CONCURRENCY_REASON, MAINTENANCE_REASON
from .httpbase import EmulatorHandler
from .routes import ROUTES, ApiError, Request, Response, Route
from .store import ANONYMOUS, CALLER, User
from .table_routes import TABLE_ROUTES

log = logging.getLogger("synclient.emulator")
_ALL_ROUTES = ROUTES + ENTITY_WRITE_ROUTES + COLUMN_ROUTES + TABLE_ROUTES + DOWNLOAD_LIST_ROUTES
#: the Authorization header's prefix (case and space as Synapse's HttpAuthUtil matches it) and its 401 challenge
BEARER = "Bearer "
CHALLENGE = 'Bearer realm="Synapse Repository Services"'


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
        answered = False
        try:
            response = self._safely(lambda: self._platform(method, parts.path, query, body))
            # counted before it goes out: a client that has the answer finds its status counted
            context.stats.api_answered(response.status)
            context.exchanges.record(
                context.knobs.record_exchanges, method, parts.path, query, body, response.status, response.body
            )
            answered = True
            self._send(response)
        finally:
            if not answered:
                context.stats.api_answered(response.status)
            context.stats.api_finished()

    def _safely(self, produce: Callable[[], Response]) -> Response:
        try:
            return produce()
        except ApiError as error:
            if error.status == 429:  # exactly {"reason": ...} and a line break (Synapse's throttlers, ThrottleUtils)
                return Response(status=429, body=json.dumps({"reason": error.reason}) + "\n", headers=error.headers)
            return Response(status=error.status, body=wire.error_body(error.reason), headers=error.headers)
        except Exception as error:  # a bug in a route must still answer, as a JSON 500
            log.exception("emulator route failed")
            return Response(status=500, body=wire.error_body(f"Emulator error: {error!r}"))

    def _platform(self, method: str, path: str, query: Dict[str, str], body: bytes) -> Response:
        context = self.server.context
        knobs = context.knobs
        route, params = self._match(method, path)
        context.stats.api_routed(route.route_class)
        if context.faults.in_maintenance(knobs):
            raise ApiError(503, MAINTENANCE_REASON)
        user = self._authenticate() if route.needs_auth else None
        gate_user = user.id if user else 0
        # Synapse's RequestThrottleFilter lets the anonymous user through unthrottled
        reason = None if user is ANONYMOUS else context.gate.enter(gate_user, knobs)
        if reason is not None:
            raise ApiError(429, reason, self._retry_after(knobs))
        caller = CALLER.set(user)
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
            response = route.handler(self.server.routes, request)
            if 200 <= response.status < 300 and isinstance(response.body, (dict, list)):
                response.body = hostile.mutate_answer(knobs, response.body)  # hostile-server mode (hostile.py)
            pick = context.faults.api_malformed(knobs, route.route_class, request_key)
            if pick is not None and 200 <= response.status < 300:
                payload = hostile.json_payload(response.body)
                if payload is not None:  # a 2xx JSON answer, garbled on the way out (hostile.py)
                    response.body = hostile.malformed_payload(payload, pick)
            return response
        finally:
            CALLER.reset(caller)
            if user is not ANONYMOUS:
                context.gate.leave(gate_user)

    @staticmethod
    def _retry_after(knobs) -> Dict[str, str]:
        return {} if knobs.throttle_retry_after is None else {"Retry-After": str(knobs.throttle_retry_after)}

    def _match(self, method: str, path: str) -> Tuple[Route, Tuple[str, ...]]:
        path_matched = False
        for route in _ALL_ROUTES:
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
        """Synapse's AuthenticationFilter: no bearer token (no header, another scheme, a blank token) is the
        anonymous user; a token it does not know is 401 ``Invalid access token`` (HttpAuthUtil.reject)."""
        header = self.headers.get("Authorization", "")
        if not header.startswith(BEARER) or not header[len(BEARER) :].strip():
            return ANONYMOUS
        user = self.server.context.store.user_for_token(header[len(BEARER) :].strip())
        if user is None:
            raise ApiError(401, "Invalid access token", {"WWW-Authenticate": CHALLENGE})
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
