"""The data listener: an S3-like origin serving blobs behind pre-signed URLs.

Never looks at the platform token (it only counts requests that carry one). Bodies go out with
zero-copy ``os.sendfile`` unless a bandwidth cap or a fault needs paced, chunked writes.
``ObjectHandler`` holds what every byte-serving listener shares (ranges, latency, bandwidth, cuts, stalls,
corruption); the external web server (``external.py``) is the other one.
"""

from __future__ import annotations

import email.utils
import errno
import os
import re
import select
import socket
import ssl
import time
import uuid
from dataclasses import dataclass
from typing import Dict, Optional, Tuple
from urllib.parse import parse_qs, urlsplit

from . import hostile
from .faults import DataFault
from .httpbase import EmulatorHandler
from .signing import UrlCheck, check_url
from .stats import Plane
from .wire import BUCKET

_MD5 = re.compile(r"^[0-9a-f]{32}$")
_SINGLE_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")
PACED_CHUNK = 64 * 1024
_ZERO_COPY = hasattr(os, "sendfile") and hasattr(select, "poll")  # Linux and macOS; not Windows
SENDFILE_STEP = 1 << 30
#: a paced body goes out in this many slices per second (10 ms each): smooth enough for a TCP receiver
PACED_SLICES_PER_SECOND = 100


@dataclass(frozen=True)
class ByteRange:
    start: int
    end: int  # inclusive, as in HTTP

    @property
    def length(self) -> int:
        return self.end - self.start + 1


class RangeNotSatisfiable(Exception):
    """The requested range lies outside the object (answered with 416)."""


def parse_range(header: Optional[str], size: int) -> Optional[ByteRange]:
    """One byte range from a Range header; None means "send the whole object".

    Like S3, multi-range and malformed headers are ignored (whole object, 200).
    """
    if not header:
        return None
    match = _SINGLE_RANGE.match(header.strip().replace(" ", ""))
    if not match or (match.group(1) == "" and match.group(2) == ""):
        return None
    first, last = match.group(1), match.group(2)
    if first == "":  # suffix range: the last N bytes
        count = int(last)
        if count == 0 or size == 0:
            raise RangeNotSatisfiable()
        return ByteRange(max(0, size - count), size - 1)
    start = int(first)
    if last != "" and int(last) < start:
        return None  # syntactically invalid: ignored per RFC 9110
    if start >= size:
        raise RangeNotSatisfiable()
    end = size - 1 if last == "" else int(last)
    return ByteRange(start, min(end, size - 1))


def s3_error_xml(code: str, message: str) -> bytes:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{message}</Message>'
        f"<RequestId>{uuid.uuid4().hex[:16].upper()}</RequestId></Error>"
    ).encode()


_URL_ERRORS = {
    UrlCheck.MALFORMED: (
        "AccessDenied",
        "Query-string authentication requires the Signature, Expires and AWSAccessKeyId parameters",
    ),
    UrlCheck.BAD_SIGNATURE: (
        "SignatureDoesNotMatch",
        "The request signature we calculated does not match the signature you provided.",
    ),
    UrlCheck.EXPIRED: ("AccessDenied", "Request has expired"),
}


def _sleep_to_pace(started: float, sent: int, bytes_per_second: int) -> None:
    """Sleep until ``sent`` bytes since ``started`` are no more than ``bytes_per_second`` allows."""
    ahead = sent / bytes_per_second - (time.monotonic() - started)
    if ahead > 0:
        time.sleep(ahead)


@dataclass(frozen=True)
class ServePolicy:
    """How a listener answers a GET of an object."""

    #: answer a Range header with 206 (else 200 and the whole body)
    honour_range: bool
    #: send ``Accept-Ranges: bytes``
    advertise_ranges: bool
    #: send Content-Length (else the body ends when the connection closes, HTTP/1.0-style)
    send_length: bool


class ObjectHandler(EmulatorHandler):
    """Serves stored blobs with the data-plane knobs; subclasses find the blob and say how errors look."""

    plane = Plane.DATA

    def do_GET(self) -> None:
        self._serve(head_only=False)

    def do_HEAD(self) -> None:
        self._serve(head_only=True)

    def _serve(self, head_only: bool) -> None:
        raise NotImplementedError

    def _policy(self, knobs) -> ServePolicy:
        raise NotImplementedError

    def _error_body(self, code: str, message: str) -> Tuple[str, bytes]:
        """(Content-Type, body) of an error answer."""
        raise NotImplementedError

    def _object_headers(self) -> Dict[str, str]:
        """Headers this kind of host adds to every object answer."""
        return {}

    def _error(self, status: int, code: str, message: str, head_only: bool, extra: Optional[Dict] = None) -> None:
        self.server.context.stats.transfer_answered(self.plane, status)
        content_type, body = self._error_body(code, message)
        headers = {"Content-Type": content_type}
        headers.update(extra or {})
        self.send_whole(status, headers, body, head_only)

    def _count_request(self) -> None:
        self.server.context.stats.transfer_started(self.plane, "Authorization" in self.headers)

    def _send_object(self, source, size: int, md5: str, head_only: bool, knobs) -> None:
        context = self.server.context
        policy = self._policy(knobs)
        parts = urlsplit(self.path)
        location = hostile.redirect_location(knobs, parts.path, self.path, context.api_endpoint)
        if location is not None:  # hostile-server mode: the object is "somewhere else"
            hostile.count("redirects")
            context.stats.transfer_answered(self.plane, 302)
            self.send_whole(302, {"Location": location}, b"", head_only)
            return
        try:
            wanted = parse_range(self.headers.get("Range"), size) if policy.honour_range else None
        except RangeNotSatisfiable:
            self._error(
                416,
                "InvalidRange",
                "The requested range is not satisfiable",
                head_only,
                {"Content-Range": f"bytes */{size}"},
            )
            return
        if wanted is not None and knobs.data_wrong_content_range and size > 1:
            shift = 1 if wanted.end + 1 < size else -1
            if wanted.start + shift >= 0:
                wanted = ByteRange(wanted.start + shift, wanted.end + shift)
        headers = {
            "Content-Type": "application/octet-stream",
            "ETag": f'"{md5}"',
            "Last-Modified": email.utils.formatdate(os.fstat(source.fileno()).st_mtime, usegmt=True),
        }
        if policy.advertise_ranges:
            headers["Accept-Ranges"] = "bytes"
        headers.update(self._object_headers())
        if wanted is None:
            status, offset, count = 200, 0, size
        else:
            status, offset, count = 206, wanted.start, wanted.length
            headers["Content-Range"] = f"bytes {wanted.start}-{wanted.end}/{size}"
        if knobs.data_latency_ms > 0:
            time.sleep(knobs.data_latency_ms / 1000.0)
        fault, cut_fraction, corrupt_pick = DataFault.NONE, 1.0, None
        if not head_only and count:
            request_key = f"{urlsplit(self.path).path} {self.headers.get('Range')}"
            fault, cut_fraction = context.faults.data_fault(knobs, request_key)
            corrupt_pick = context.faults.data_corrupt(knobs, request_key)
        plan = hostile.body_plan(knobs, parts.path, count)
        if plan is not None:  # hostile-server mode: a body longer or shorter than the object
            self._send_hostile_body(source, status, headers, offset, count, plan, head_only, knobs)
            return
        context.stats.transfer_answered(self.plane, status)
        if not policy.send_length:
            self.close_connection = True  # the body ends where the connection does
        self.wfile.write(self.response_head(status, headers, count if policy.send_length else None))
        if head_only:
            return
        if fault is DataFault.STALL:
            context.stats.data_stall()
            context.stopping.wait(knobs.stall_seconds)
            self._drop_connection()
            return
        if fault is DataFault.CUT:
            context.stats.data_cut()
            cut_at = int(count * cut_fraction)
            self._paced(source, offset, cut_at, knobs.bandwidth_per_conn)
            self._drop_connection()
            return
        if corrupt_pick is not None:  # wrong bytes, right length (hostile.py)
            hostile.count("data_corrupt")
            self._paced(
                source, offset, count, knobs.bandwidth_per_conn, flip_at=hostile.corrupt_offset(count, corrupt_pick)
            )
        elif knobs.bandwidth_per_conn:
            started = time.monotonic()
            self._paced(source, offset, count, knobs.bandwidth_per_conn)
            if self.plane is Plane.DATA:  # paced_body_seconds describes the data host's links
                context.stats.data_body_sent(time.monotonic() - started)
        else:
            self._sendfile(source, offset, count)

    def _send_hostile_body(
        self,
        source,
        status: int,
        headers: Dict[str, str],
        offset: int,
        count: int,
        plan: hostile.BodyPlan,
        head_only: bool,
        knobs,
    ) -> None:
        """``plan.count`` bytes where the object has ``count`` (its bytes cut short, or followed by a tail), with a
        Content-Length that says ``plan.count`` or none at all; other data faults do not apply to this body."""
        self.server.context.stats.transfer_answered(self.plane, status)
        if not plan.send_length:
            self.close_connection = True
        self.wfile.write(self.response_head(status, headers, plan.count if plan.send_length else None))
        if head_only:
            return
        hostile.count("bodies")
        if (
            self._send_copied(source, offset, min(count, plan.count), bytes_per_second=knobs.bandwidth_per_conn)
            and plan.count > count
        ):
            tail = hostile.tail_bytes(plan.count - count)
            self.server.context.stats.transfer_sent(self.plane, len(tail))
            try:
                self.wfile.write(tail)
            except OSError:
                self.close_connection = True

    def _drop_connection(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _sendfile(self, source, offset: int, count: int) -> bool:
        """Zero-copy body; the socket has a timeout (non-blocking at OS level), so wait on EAGAIN. False when
        the client went away (the connection is then closed)."""
        stats = self.server.context.stats
        sock = self.connection
        if isinstance(sock, ssl.SSLSocket) or not _ZERO_COPY:  # TLS encrypts in user space; Windows has neither
            return self._send_copied(source, offset, count)
        poller = select.poll()
        poller.register(sock.fileno(), select.POLLOUT)
        timeout_ms = int((sock.gettimeout() or 300) * 1000)
        remaining = count
        try:
            while remaining > 0:
                step = min(remaining, SENDFILE_STEP)
                # counted before it goes out, corrected after: a client that has the bytes finds them counted
                stats.transfer_sent(self.plane, step)
                try:
                    sent = os.sendfile(sock.fileno(), source.fileno(), offset, step)
                except BlockingIOError:
                    stats.transfer_sent(self.plane, -step)
                    if not poller.poll(timeout_ms):
                        raise socket.timeout("send timed out") from None
                    continue
                except BaseException:
                    stats.transfer_sent(self.plane, -step)
                    raise
                if sent != step:
                    stats.transfer_sent(self.plane, sent - step)
                if sent == 0:
                    break
                offset += sent
                remaining -= sent
        except OSError as error:
            # clients close early on purpose (e.g. synapseclient reads only the headers of a full GET)
            self.close_connection = True
            if error.errno not in (errno.EPIPE, errno.ECONNRESET, None) and not isinstance(error, socket.timeout):
                raise
            return False
        return remaining == 0

    def _send_copied(
        self,
        source,
        offset: int,
        count: int,
        *,
        chunk_size: int = PACED_CHUNK,
        flip_at: int = -1,
        bytes_per_second: int = 0,
    ) -> bool:
        """The body through Python: over TLS, without ``sendfile`` (Windows), or to flip byte ``flip_at`` (if >= 0)
        or pace it to ``bytes_per_second`` in small chunks. False when the client went away."""
        stats = self.server.context.stats
        started = time.monotonic()
        sent_total = 0
        source.seek(offset)
        try:
            while sent_total < count:
                chunk = source.read(min(chunk_size, count - sent_total))
                if not chunk:
                    break
                if sent_total <= flip_at < sent_total + len(chunk):
                    chunk = hostile.flip(chunk, flip_at - sent_total)
                stats.transfer_sent(self.plane, len(chunk))  # before it goes out (see _sendfile)
                try:
                    self.wfile.write(chunk)
                except OSError:
                    stats.transfer_sent(self.plane, -len(chunk))
                    raise
                sent_total += len(chunk)
                if bytes_per_second:
                    _sleep_to_pace(started, sent_total, bytes_per_second)
        except OSError:
            self.close_connection = True
            return False
        return sent_total == count

    def _paced(self, source, offset: int, count: int, bytes_per_second: int, flip_at: int = -1) -> None:
        """The body in slices, sleeping so the connection never exceeds ``bytes_per_second``; the body's byte
        ``flip_at`` (if >= 0) goes out inverted. Unaltered slices go out with ``sendfile``: copying them through
        Python cost the server a core at a few hundred MB/s, CPU the client under test then did not get."""
        if flip_at < 0 and bytes_per_second:
            self.wfile.flush()
            started = time.monotonic()
            sent_total = 0
            step = max(4096, bytes_per_second // PACED_SLICES_PER_SECOND)
            while sent_total < count:
                size = min(step, count - sent_total)
                if not self._sendfile(source, offset + sent_total, size):
                    return
                sent_total += size
                _sleep_to_pace(started, sent_total, bytes_per_second)
            return
        chunk_size = PACED_CHUNK if not bytes_per_second else max(1024, min(PACED_CHUNK, bytes_per_second // 20))
        self._send_copied(
            source, offset, count, chunk_size=chunk_size, flip_at=flip_at, bytes_per_second=bytes_per_second
        )


class DataHandler(ObjectHandler):
    def do_GET(self) -> None:
        stats = self.server.context.stats
        stats.data_body_started()
        try:
            self._serve(head_only=False)
        finally:
            stats.data_body_finished()

    def _policy(self, knobs) -> ServePolicy:
        # an S3 that ignores Range still advertises it: the knob models a broken origin, not a different one
        return ServePolicy(honour_range=not knobs.data_ignore_range, advertise_ranges=True, send_length=True)

    def _error_body(self, code: str, message: str) -> Tuple[str, bytes]:
        return "application/xml", s3_error_xml(code, message)

    def _object_headers(self) -> Dict[str, str]:
        return {"x-amz-request-id": uuid.uuid4().hex[:16].upper()}

    def _serve(self, head_only: bool) -> None:
        context = self.server.context
        knobs = context.knobs
        self._count_request()
        self.read_body()
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        verdict = check_url(context.store.secret, parts.path, query)
        if verdict is not UrlCheck.VALID:
            self._error(403, *_URL_ERRORS[verdict], head_only)
            return
        segments = parts.path.split("/")
        md5 = segments[-1]
        blob = context.store.blob_path(md5) if _MD5.match(md5) else None
        if len(segments) < 3 or segments[1] != BUCKET or blob is None or not os.path.exists(blob):
            self._error(404, "NoSuchKey", "The specified key does not exist.", head_only)
            return
        with open(blob, "rb") as source:
            size = os.fstat(source.fileno()).st_size
            self._send_object(source, size, md5, head_only, knobs)
