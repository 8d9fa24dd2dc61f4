"""TLS for the emulator's listeners: a throwaway certificate authority made at start, as real Synapse is HTTPS only.

``trustme`` (a test extra) makes the CA and one server certificate for the emulator's host (also ``localhost`` and
``127.0.0.1``); the CA's PEM file is what a client trusts (``ca_bundle`` in ``info()`` and the ``serve`` JSON
line). Accepted sockets are wrapped here but shake hands in their handler's thread (:func:`handshake`), so one slow
or hostile client never holds up the accept loop; each handshake is counted, per listener, with whether the client
resumed an earlier TLS session.
"""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import tempfile
from typing import Optional

HANDSHAKE_TIMEOUT = 30.0  # seconds a client gets to finish its handshake


class EmulatorTls:
    """The CA and server certificate of one emulator; ``ca_bundle`` is the CA's PEM file (removed by
    :meth:`close`). The same object serves every restart, so clients keep trusting it."""

    def __init__(self, host: str) -> None:
        try:
            import trustme
        except ImportError:  # pragma: no cover - the test extra has it
            raise RuntimeError("TLS needs the 'trustme' package: pip install 'synclient[test]' (or trustme)") from None
        self._ca = trustme.CA(organization_name="synclient emulator")
        names = sorted({host, "localhost", "127.0.0.1"})
        self._certificate = self._ca.issue_cert(*names)
        self._folder = tempfile.mkdtemp(prefix="synclient-emulator-tls-")
        self.ca_bundle = os.path.join(self._folder, "ca.pem")
        self._ca.cert_pem.write_to_path(self.ca_bundle)

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._certificate.configure_cert(context)
        return context

    def close(self) -> None:
        shutil.rmtree(self._folder, ignore_errors=True)


def wrap_accepted(context: Optional[ssl.SSLContext], sock: socket.socket) -> socket.socket:
    """The accepted socket, TLS-wrapped when the listener serves TLS (no handshake yet: see :func:`handshake`)."""
    if context is None:
        return sock
    return context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)


def handshake(sock: socket.socket) -> Optional[bool]:
    """Complete a wrapped socket's handshake (in the handler's thread); whether the client resumed an earlier
    session, or None for a plain socket. Raises ``ssl.SSLError``/``OSError`` when the client gives up (for instance
    because it does not trust our CA)."""
    if not isinstance(sock, ssl.SSLSocket):
        return None
    previous = sock.gettimeout()
    sock.settimeout(HANDSHAKE_TIMEOUT)
    try:
        sock.do_handshake()
    finally:
        sock.settimeout(previous)
    return bool(sock.session_reused)
