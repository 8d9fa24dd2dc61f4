"""Threaded HTTP/1.1 server plumbing shared by the API and data listeners."""

from __future__ import annotations

import email.utils
import logging
import socket
import ssl
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Dict, Optional, Set

from .tls import handshake, wrap_accepted

if TYPE_CHECKING:  # pragma: no cover - these modules import this one
    from .admin_routes import AdminRoutes
    from .context import EmulatorContext
    from .routes import Routes

log = logging.getLogger("synclient.emulator")


class EmulatorHTTPServer(ThreadingHTTPServer):
    """Keeps track of open connections so ``stop`` can cut them (clients then see a reset). ``listener`` names it
    in the stats ("api", "data", "external"); with ``ssl_context`` it serves HTTPS."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024  # 64+ clients connecting at once must not overflow the backlog
    # the API listener's routes, set by the emulator when it binds (server.py)
    routes: Routes
    admin_routes: AdminRoutes

    def __init__(
        self,
        address,
        handler,
        context: EmulatorContext,
        *,
        listener: str = "api",
        ssl_context: Optional[ssl.SSLContext] = None,
    ) -> None:
        self.context = context
        self.listener = listener
        self.ssl_context = ssl_context
        self._connections: Set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, handler)

    def get_request(self):
        sock, address = super().get_request()
        return wrap_accepted(self.ssl_context, sock), address

    def process_request(self, request, client_address) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def handle_error(self, request, client_address) -> None:
        log.debug("connection from %s ended with an error", client_address, exc_info=True)


class EmulatorHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "synclient-emulator"
    sys_version = ""
    timeout = 300  # idle keep-alive connections are dropped after this
    server: EmulatorHTTPServer  # (typeshed knows only a BaseServer)

    def setup(self) -> None:
        resumed = handshake(self.request)  # in this thread, not the accept loop's
        self.server.context.stats.connection_accepted(
            self.server.listener, tls=resumed is not None, resumed=bool(resumed)
        )
        super().setup()
        # Headers and body go out in separate writes on the data plane; without NODELAY,
        # Nagle + delayed ACK would add ~40 ms to small answers.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - signature of the base class
        log.debug("%s %s", self.address_string(), format % args)

    def read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def response_head(self, status: int, headers: Dict[str, str], content_length: Optional[int]) -> bytes:
        """Status line + headers as bytes, so small answers leave in a single write."""
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = ""
        lines = [
            f"HTTP/1.1 {status} {phrase}",
            f"Server: {self.server_version}",
            f"Date: {email.utils.formatdate(usegmt=True)}",
        ]
        for name, value in headers.items():
            lines.append(f"{name}: {value}")
        if content_length is not None:
            lines.append(f"Content-Length: {content_length}")
        if self.close_connection:
            lines.append("Connection: close")
        self.log_request(status, content_length if content_length is not None else "-")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")

    def send_whole(self, status: int, headers: Dict[str, str], body: bytes, head_only: bool = False) -> None:
        self.wfile.write(self.response_head(status, headers, len(body)) + (b"" if head_only else body))
