"""Data-plane HTTP: a session that can never carry the platform token, and one checked GET of a byte range.

The response is validated, not trusted: a ranged request must come back 206 with exactly the ``Content-Range``
asked for (a server that ignores ``Range`` is detected), the body must have the promised length, and a body that
delivers nothing for ``stall_timeout`` seconds is cut (the socket read timeout) so the caller can resume from its
offset. Chunks are read in bounded pieces and handed to a sink, never held whole.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Optional

import requests
import urllib3
from requests.adapters import HTTPAdapter

from synclient import __version__
from synclient.errors import IntegrityError, RangeNotHonouredError, TransferError
from synclient.transfer.pool import Cancelled
from synclient.transfer.urls import SignedUrl, redact_url

_CONTENT_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+|\*)$")


class UrlRejectedError(TransferError):
    """Storage answered 403 (an expired or refused pre-signed URL): refresh the URL and try again."""


class _StripAuthorization(requests.auth.AuthBase):
    """Set as the session's auth so neither a caller nor ~/.netrc can put credentials on a storage request."""

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers.pop("Authorization", None)
        return request


def make_data_session(pool_size: int) -> requests.Session:
    session = requests.Session()
    session.auth = _StripAuthorization()
    # identity: Range offsets must mean stored bytes, and MD5 is of the stored bytes.
    session.headers.update({"User-Agent": f"synclient/{__version__}", "Accept-Encoding": "identity"})
    adapter = HTTPAdapter(pool_connections=4, pool_maxsize=max(4, pool_size), max_retries=0)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


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


def fetch_range(session: requests.Session, url: SignedUrl, byte_range: ByteRange, *,
                sink: Callable[[int, bytes], None], chunk_size: int, connect_timeout: float,
                stall_timeout: float, cancelled: Callable[[], bool]) -> None:
    """GET ``byte_range`` of ``url`` and hand each chunk to ``sink(offset, data)``.

    Raises :class:`UrlRejectedError` on 403, :class:`RangeNotHonouredError` when the server ignores the range,
    :class:`TransferError` on anything else that went wrong (status, cut, stall), :class:`Cancelled` when
    ``cancelled()`` turns true between chunks.
    """
    headers = {} if byte_range.is_whole else {"Range": byte_range.header()}
    where = redact_url(url.url)
    try:
        response = session.get(url.url, headers=headers, stream=True, allow_redirects=True,
                               timeout=(connect_timeout, stall_timeout))
    except (requests.ConnectionError, requests.Timeout) as exc:
        raise TransferError(f"GET {where}: {exc.__class__.__name__}") from None
    with response:
        _check_status(response, byte_range, where)
        offset = byte_range.start
        try:
            while offset < byte_range.end:
                if cancelled():
                    raise Cancelled()
                data = response.raw.read(min(chunk_size, byte_range.end - offset), decode_content=False)
                if not data:
                    break
                sink(offset, data)
                offset += len(data)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            if isinstance(exc, OSError) and not isinstance(exc, (ConnectionError, TimeoutError)):
                raise  # local trouble (e.g. disk full in the sink) is not a transfer problem
            kind = "stalled" if isinstance(exc, (urllib3.exceptions.ReadTimeoutError, TimeoutError)) else "cut"
            raise TransferError(f"GET {where}: body {kind} at byte {offset} of {byte_range.end}") from None
        if offset < byte_range.end:
            raise TransferError(f"GET {where}: body ended at byte {offset}, expected {byte_range.end}")


def _check_status(response: requests.Response, byte_range: ByteRange, where: str) -> None:
    status = response.status_code
    if status == 403:
        raise UrlRejectedError(f"GET {where}: 403 (expired or refused URL)")
    if status >= 400:
        raise TransferError(f"GET {where}: HTTP {status}")
    if byte_range.is_whole and status == 200:
        _check_length(response, byte_range, where)
        return
    if status == 200:
        raise RangeNotHonouredError(f"GET {where}: server ignored Range ({byte_range.header()})")
    if status != 206:
        raise TransferError(f"GET {where}: unexpected HTTP {status}")
    match = _CONTENT_RANGE.match(response.headers.get("Content-Range", ""))
    if not match or (int(match.group(1)), int(match.group(2)) + 1) != (byte_range.start, byte_range.end):
        raise RangeNotHonouredError(f"GET {where}: Content-Range {response.headers.get('Content-Range')!r} "
                                    f"does not match {byte_range.header()}")
    if match.group(3) != "*" and int(match.group(3)) != byte_range.total:
        raise IntegrityError(f"GET {where}: object is {match.group(3)} bytes, platform says {byte_range.total}")
    _check_length(response, byte_range, where)


def _check_length(response: requests.Response, byte_range: ByteRange, where: str) -> None:
    length: Optional[str] = response.headers.get("Content-Length")
    if length is not None and length.isdigit() and int(length) != byte_range.length:
        raise IntegrityError(f"GET {where}: Content-Length {length}, expected {byte_range.length}")
