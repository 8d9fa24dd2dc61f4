"""A forwarding proxy on 127.0.0.1 for tests: ``CONNECT host:port`` tunnels (how HTTPS goes through a corporate
proxy) and absolute-URI requests for plain HTTP, each recorded, so a test can prove which hosts went through it.

Only loopback targets are allowed: the tests must never reach the network.
"""

from __future__ import annotations

import select
import socket
import socketserver
import threading
from collections import Counter
from typing import Counter as CounterType
from urllib.parse import urlsplit

_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


class _Handler(socketserver.StreamRequestHandler):
    rbufsize = 0  # unbuffered: nothing of the tunnelled stream may sit in a reader's buffer

    def handle(self) -> None:
        request_line = self.rfile.readline(65536).decode("latin-1").strip()
        headers = []
        while True:
            line = self.rfile.readline(65536)
            if line in (b"\r\n", b"\n", b""):
                break
            headers.append(line)
        method, _, rest = request_line.partition(" ")
        target = rest.rpartition(" ")[0]
        if method == "CONNECT":
            host, _, port = target.rpartition(":")
        else:  # plain HTTP through the proxy: an absolute URI
            parts = urlsplit(target)
            host, port = parts.hostname or "", str(parts.port or 80)
        proxy: ConnectProxy = self.server.proxy  # type: ignore[attr-defined]
        if host.strip("[]") not in _LOOPBACK:
            self.wfile.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            return
        proxy.record(method, f"{host}:{port}")
        try:
            upstream = socket.create_connection((host.strip("[]"), int(port)), timeout=30)
        except OSError:
            self.wfile.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        with upstream:
            if method == "CONNECT":
                self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                parts = urlsplit(target)
                path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
                upstream.sendall(f"{method} {path} HTTP/1.1\r\n".encode("latin-1") + b"".join(headers) + b"\r\n")
            self._relay(upstream)

    def _relay(self, upstream: socket.socket) -> None:
        client = self.connection
        sockets = [client, upstream]
        while True:
            readable, _, _ = select.select(sockets, [], [], 60)
            if not readable:
                return
            for source in readable:
                data = source.recv(65536)
                if not data:
                    return
                (upstream if source is client else client).sendall(data)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class ConnectProxy:
    """``with ConnectProxy() as proxy:`` serves on ``proxy.url``; ``proxy.tunnels`` counts CONNECTs per
    ``host:port`` and ``proxy.forwarded`` plain-HTTP requests per ``host:port``."""

    def __init__(self) -> None:
        self.tunnels: CounterType[str] = Counter()
        self.forwarded: CounterType[str] = Counter()
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.proxy = self  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)

    def record(self, method: str, host_port: str) -> None:
        with self._lock:
            (self.tunnels if method == "CONNECT" else self.forwarded)[host_port] += 1

    def __enter__(self) -> ConnectProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
