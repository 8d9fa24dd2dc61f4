"""Data-plane HTTP: a client that can never carry the platform token, and one checked GET of a byte range.

The response is validated, not trusted: a ranged request must come back 206 with exactly the ``Content-Range``
asked for (a server that ignores ``Range`` is detected), the body must have the promised length, and a body that
delivers nothing for ``stall_timeout`` seconds is cut (the socket read timeout) so the caller can resume from its
offset. Chunks are read into a reusable per-thread buffer and handed to a sink, never held whole.
"""

from __future__ import annotations

import http.client
import re
import socket
import threading
import urllib.request
from dataclasses import dataclass
from typing import Callable, Dict, Mapping, Optional
from urllib.parse import urlsplit

import urllib3

from synclient._version import __version__
from synclient.errors import (
    Cancelled,
    IntegrityError,
    RangeNotHonouredError,
    TransferError,
    UrlRejectedError,  # noqa: F401 (UrlRejectedError re-exported)
)
from synclient.platform.tls import TrustedCAs, certificate_problem, resolve_trusted_cas, untrusted_certificate
from synclient.redaction import install_redaction, redact_url, url_host
from synclient.transfer.bandwidth import BandwidthLimiter
from synclient.transfer.direct import aligned_buffer
from synclient.transfer.urls import SignedUrl

_CONTENT_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+|\*)$")


#: one receive buffer per worker thread, reused for every chunk of every body that thread reads
_buffers = threading.local()


def _receive_buffer(size: int) -> memoryview:
    """This thread's buffer, at least ``size`` bytes. It grows to the largest read the thread has needed, so a
    thread that only ever fetched small files holds a small buffer, not a full chunk."""
    buffer = getattr(_buffers, "view", None)
    if buffer is None or len(buffer) < size:
        buffer = aligned_buffer(size)  # page-aligned, so large-file writes can bypass the page cache (direct.py)
        _buffers.view = buffer
    return buffer


class DataClient:
    """HTTP for pre-signed storage URLs: urllib3 directly, with no credentials of any kind.

    ``requests`` costs about twice the CPU per request (request preparation, hooks, per-request environment
    lookups); with many small files that CPU is the bottleneck on a 2-core machine, so the data plane talks
    urllib3. Nothing here ever adds an ``Authorization`` header, cookies or ``~/.netrc`` credentials. Proxies from
    the environment (``HTTPS_PROXY``/``HTTP_PROXY``/``NO_PROXY``) are read once and honoured per host; HTTPS goes
    through a proxy as a CONNECT tunnel, verified end to end. ``trusted_cas``: the CAs certificates must chain to,
    the platform's (:attr:`~synclient.platform.rest.Platform.trusted_cas`), so both planes trust alike. Connections (and
    so TLS handshakes) are kept per host and reused across files. ``limiter``: the bandwidth limit every body read
    through this client passes (None: no limit, and no cost).
    """

    def __init__(
        self, pool_size: int, *, trusted_cas: Optional[TrustedCAs] = None, limiter: Optional[BandwidthLimiter] = None
    ) -> None:
        self.limiter = limiter
        install_redaction()  # urllib3's DEBUG lines name signed URLs: they show them without their query
        self._pool_size = max(4, pool_size)
        self._headers = {
            "User-Agent": f"synclient/{__version__}",
            # identity: Range offsets must mean stored bytes, and MD5 is of the stored bytes
            "Accept-Encoding": "identity",
        }
        self._retries = urllib3.Retry(
            total=3, connect=0, read=0, status=0, other=0, redirect=3, raise_on_redirect=True, raise_on_status=False
        )
        self.trusted_cas = trusted_cas or resolve_trusted_cas()
        self._ssl_context = self.trusted_cas.ssl_context()  # one context: the bundle is parsed once
        self._direct = urllib3.PoolManager(
            num_pools=8,
            maxsize=self._pool_size,
            headers=self._headers,
            retries=self._retries,
            ssl_context=self._ssl_context,
        )
        self._proxies = urllib.request.getproxies()
        self._proxy_managers: Dict[str, urllib3.ProxyManager] = {}
        self._lock = threading.Lock()

    def _manager_for(self, url: str) -> urllib3.PoolManager:
        parts = urlsplit(url)
        proxy = self._proxies.get(parts.scheme)
        if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
            return self._direct
        with self._lock:
            if proxy not in self._proxy_managers:
                self._proxy_managers[proxy] = urllib3.ProxyManager(
                    proxy,
                    num_pools=8,
                    maxsize=self._pool_size,
                    headers=self._headers,
                    retries=self._retries,
                    ssl_context=self._ssl_context,
                )
            return self._proxy_managers[proxy]

    def get(
        self, url: str, *, headers: Dict[str, str], connect_timeout: float, read_timeout: float
    ) -> urllib3.BaseHTTPResponse:
        return self._manager_for(url).request(
            "GET",
            url,
            headers={**self._headers, **headers},
            preload_content=False,
            decode_content=False,
            timeout=urllib3.Timeout(connect=connect_timeout, read=read_timeout),
        )

    def close(self) -> None:
        self._direct.clear()
        for manager in self._proxy_managers.values():
            manager.clear()


@dataclass(frozen=True)
class ByteRange:
    """Bytes ``start`` .. ``end - 1`` of an object of ``total`` bytes (``end`` exclusive)."""

    start: int
    end: int
    total: int

    @property
    def length(self) -> int:
        return self.end - self.start

    @property
    def is_whole(self) -> bool:
        return self.start == 0 and self.end == self.total

    def header(self) -> str:
        return f"bytes={self.start}-{self.end - 1}"


def fetch_range(
    client: DataClient,
    url: SignedUrl,
    byte_range: ByteRange,
    *,
    sink: Callable[[int, memoryview], None],
    chunk_size: int,
    connect_timeout: float,
    stall_timeout: float,
    cancelled: Callable[[], bool],
) -> None:
    """GET ``byte_range`` of ``url`` and hand each chunk to ``sink(offset, data)``.

    ``data`` is a view of a buffer that is reused for the next chunk: the sink must consume it (write, hash)
    before it returns and keep no reference to it.

    Raises :class:`UrlRejectedError` on 403, :class:`RangeNotHonouredError` when the server ignores the range,
    :class:`TransferError` on anything else that went wrong (status, cut, stall), :class:`Cancelled` when
    ``cancelled()`` turns true between chunks.
    """
    where = redact_url(url.url)
    response = _get(
        client,
        url,
        {} if byte_range.is_whole else {"Range": byte_range.header()},
        where=where,
        connect_timeout=connect_timeout,
        stall_timeout=stall_timeout,
    )
    finished = False
    try:
        _check_status(response.status, response.headers, byte_range, where)
        offset = _pump(
            response,
            byte_range.start,
            byte_range.end,
            sink=sink,
            chunk_size=chunk_size,
            cancelled=cancelled,
            where=where,
            limiter=_limiter_of(client),
        )
        if offset < byte_range.end:
            raise TransferError(f"GET {where}: body ended at byte {offset}, expected {byte_range.end}")
        if "Content-Length" not in response.headers:
            _check_body_ends(response, offset, where)
        finished = True
    finally:
        _done_with(response, finished)


def fetch_whole(
    client: DataClient,
    url: SignedUrl,
    *,
    sink: Callable[[int, memoryview], None],
    chunk_size: int,
    connect_timeout: float,
    stall_timeout: float,
    cancelled: Callable[[], bool],
    on_head: Optional[Callable[[Optional[int], bool], None]] = None,
) -> int:
    """GET a whole object whose size nobody recorded (an external URL's handle without ``contentSize``); returns
    the number of bytes received. When the server announces a ``Content-Length`` the body must have it; without one,
    the body ends when the server closes the connection, and nothing can tell a cut from the end (such a file is
    only as good as its MD5, when the handle records one). ``on_head(length, ranges)`` is told, before the body,
    the length announced (or None) and whether the server takes ranges (``Accept-Ranges: bytes``), so a cut body
    can be resumed. Raises as :func:`fetch_range` does."""
    where = redact_url(url.url)
    response = _get(client, url, {}, where=where, connect_timeout=connect_timeout, stall_timeout=stall_timeout)
    finished = False
    try:
        _check_status(response.status, response.headers, None, where)
        length = response.headers.get("Content-Length")
        announced = int(length) if length is not None and length.isascii() and length.isdigit() else None
        if on_head is not None:
            on_head(announced, response.headers.get("Accept-Ranges", "").strip().lower() == "bytes")
        offset = _pump(
            response,
            0,
            announced,
            sink=sink,
            chunk_size=chunk_size,
            cancelled=cancelled,
            where=where,
            limiter=_limiter_of(client),
        )
        if announced is not None and offset < announced:
            raise TransferError(f"GET {where}: body ended at byte {offset}, expected {announced}")
        finished = True
        return offset
    finally:
        _done_with(response, finished)


def _limiter_of(client: DataClient) -> Optional[BandwidthLimiter]:
    """The client's bandwidth limiter (a stand-in client without the attribute has none)."""
    return getattr(client, "limiter", None)


def _get(
    client: DataClient,
    url: SignedUrl,
    headers: Dict[str, str],
    *,
    where: str,
    connect_timeout: float,
    stall_timeout: float,
) -> urllib3.BaseHTTPResponse:
    """The response (headers read, body not) of a GET, or a :class:`TransferError` naming ``where``."""
    try:
        return client.get(url.url, headers=headers, connect_timeout=connect_timeout, read_timeout=stall_timeout)
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        untrusted = certificate_problem(exc)
        if untrusted is not None:  # every file from this host would fail alike: the run stops (fatal)
            raise untrusted_certificate(
                f"the storage host {url_host(url.url)}", untrusted, client.trusted_cas
            ) from None
        raise TransferError(f"GET {where}: {exc.__class__.__name__}") from None


def _check_body_ends(response: urllib3.BaseHTTPResponse, offset: int, where: str) -> None:
    """A body that only its end delimits (no ``Content-Length``: some external web servers) must end where the
    platform's size says, since that size may be all the file is checked against."""
    try:
        more = _body_reader(response)(_receive_buffer(1)[:1])
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise TransferError(f"GET {where}: {exc.__class__.__name__} after byte {offset}") from None
    if more:
        raise IntegrityError(f"GET {where}: the body goes on past byte {offset}, where the recorded size ends it")


#: a read that timed out: socket.timeout is TimeoutError from Python 3.10 on, a mere OSError before
_TIMEOUTS = (TimeoutError, socket.timeout)


def _pump(
    response: urllib3.BaseHTTPResponse,
    offset: int,
    end: Optional[int],
    *,
    sink: Callable[[int, memoryview], None],
    chunk_size: int,
    cancelled: Callable[[], bool],
    where: str,
    limiter: Optional[BandwidthLimiter] = None,
) -> int:
    """Read the body into the sink from ``offset`` until ``end`` (None: until the body ends); the offset reached.
    With a ``limiter``, each read is of the bytes it granted first (acquired before the read: no second reads more
    than the limit and its burst)."""
    read_into = _body_reader(response)
    if end is not None:
        chunk_size = max(1, min(chunk_size, end - offset))
    buffer = _receive_buffer(chunk_size)
    try:
        while end is None or offset < end:
            if cancelled():
                raise Cancelled()
            wanted = chunk_size if end is None else min(chunk_size, end - offset)
            if limiter is not None:
                wanted = limiter.grant(wanted, cancelled=cancelled)
            received = read_into(buffer[:wanted])
            if not received:
                break
            sink(offset, buffer[:received])
            offset += received
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        if isinstance(exc, OSError) and not isinstance(exc, (ConnectionError, _TIMEOUTS)):
            raise  # local trouble (e.g. disk full in the sink) is not a transfer problem
        kind = "stalled" if isinstance(exc, (urllib3.exceptions.ReadTimeoutError, _TIMEOUTS)) else "cut"
        raise TransferError(
            f"GET {where}: body {kind} at byte {offset}" + (f" of {end}" if end is not None else "")
        ) from None
    return offset


def _done_with(response: urllib3.BaseHTTPResponse, finished: bool) -> None:
    if finished:
        response.release_conn()  # body fully read: the connection goes back to the pool
    else:
        response.close()  # unread body: the connection cannot be reused


def _body_reader(response: urllib3.BaseHTTPResponse) -> Callable[[memoryview], int]:
    """``readinto`` of the body, straight from http.client when urllib3 sits on it.

    ``urllib3``'s ``read(n)`` allocates a new ``bytes`` per chunk and copies it once more on the way (http.client
    reads into a ``bytearray`` and returns a copy); at hundreds of MB/s those copies and allocations cost as much
    CPU as the socket reads. The body is identity-encoded (we asked for it), so reading the underlying
    ``http.client.HTTPResponse`` (which still enforces ``Content-Length`` and chunking) loses nothing.
    """
    raw = getattr(response, "_fp", None)
    if isinstance(raw, http.client.HTTPResponse):
        return raw.readinto

    def read_into(view: memoryview) -> int:  # any other response type: urllib3's own copy path
        data = response.read(len(view), decode_content=False)
        view[: len(data)] = data
        return len(data)

    return read_into


def _check_status(status: int, headers: Mapping[str, str], byte_range: Optional[ByteRange], where: str) -> None:
    """``byte_range`` None: a whole object of unknown size, which only needs a 200."""
    if status == 403:
        raise UrlRejectedError(f"GET {where}: 403 (expired or refused URL)")
    if status >= 400:
        raise TransferError(f"GET {where}: HTTP {status}")
    if byte_range is None:
        if status != 200:
            raise TransferError(f"GET {where}: unexpected HTTP {status}")
        return
    if byte_range.is_whole and status == 200:
        _check_length(headers, byte_range, where)
        return
    if status == 200:
        raise RangeNotHonouredError(f"GET {where}: server ignored Range ({byte_range.header()})")
    if status != 206:
        raise TransferError(f"GET {where}: unexpected HTTP {status}")
    match = _CONTENT_RANGE.match(headers.get("Content-Range", ""))
    if not match or (int(match.group(1)), int(match.group(2)) + 1) != (byte_range.start, byte_range.end):
        raise RangeNotHonouredError(
            f"GET {where}: Content-Range {headers.get('Content-Range')!r} does not match {byte_range.header()}"
        )
    if match.group(3) != "*" and int(match.group(3)) != byte_range.total:
        raise IntegrityError(f"GET {where}: object is {match.group(3)} bytes, platform says {byte_range.total}")
    _check_length(headers, byte_range, where)


def _check_length(headers: Mapping[str, str], byte_range: ByteRange, where: str) -> None:
    length: Optional[str] = headers.get("Content-Length")
    if length is not None and length.isascii() and length.isdigit() and int(length) != byte_range.length:
        raise IntegrityError(f"GET {where}: Content-Length {length}, expected {byte_range.length}")
