"""A tiny HTTP server on a free 127.0.0.1 port, for tests of endpoints that are not the platform (a plain web
server, a redirect, an HTML page). Importable by name from the CLI tests."""

from __future__ import annotations

import contextlib
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, Iterator, List


@dataclass(frozen=True)
class Answer:
    """What the stub answers to every request."""

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: Dict[str, str] = field(default_factory=dict)


HTML_404 = Answer(404, b"<html><body><h1>Not Found</h1></body></html>", "text/html")
HTML_200 = Answer(200, b"<!doctype html><html><body>Welcome to nginx!</body></html>", "text/html")
EMPTY_OBJECT = Answer(200, b"{}")


@dataclass
class Stub:
    root: str
    paths: List[str] = field(default_factory=list)  # "GET /repo/v1/..." per request received


@contextlib.contextmanager
def stub_server(answer: Answer) -> Iterator[Stub]:
    """Serve ``answer`` to every GET and POST until the block ends."""
    stub = Stub(root="")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            stub.paths.append(f"{self.command} {self.path}")
            self.send_response(answer.status)
            self.send_header("Content-Type", answer.content_type)
            self.send_header("Content-Length", str(len(answer.body)))
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(answer.body)

        do_POST = do_GET

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="stub-http", daemon=True)
    thread.start()
    stub.root = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def refused_root() -> str:
    """The root URL of a 127.0.0.1 port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"
