"""Pre-signed URLs: fetched in batches of up to 100 handles, just in time, refreshed before or on expiry.

A URL may live only 30 s, so URLs are asked for when files are ready to start (after their bundle), a full batch
at a time; the last, partial batch is sent once no listing or bundle task can add to it. A URL's expiry is read
from its own query (``X-Amz-Date`` + ``X-Amz-Expires``) so a stream refreshes it *before* using a stale one;
a 403 from storage also triggers a refresh.
"""

from __future__ import annotations

import calendar
import threading
import time
from typing import Callable, List, Optional, Tuple
from urllib.parse import parse_qs, urlsplit

from synclient.errors import AccessDeniedError, MalformedAnswerError, NotFoundError, PlatformError, SynclientError
from synclient.platform.models import FileHandleRequest, PresignedUrlAnswer
from synclient.platform.rest import Platform
from synclient.redaction import redact_url  # (also re-exported: how a URL is shown)
from synclient.transfer.pool import Priority, TaskPool

UrlCallback = Callable[[Optional["SignedUrl"], Optional[SynclientError]], None]
EXPIRY_MARGIN_SECONDS = 3.0


def url_expiry(url: str) -> Optional[float]:
    """Epoch seconds at which a pre-signed URL stops working, when its query says so (AWS/GCS style)."""
    query = {k.lower(): v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    for prefix in ("x-amz-", "x-goog-"):
        date, expires = query.get(prefix + "date"), query.get(prefix + "expires")
        if date and expires:
            try:
                start = calendar.timegm(time.strptime(date, "%Y%m%dT%H%M%SZ"))
                return start + float(expires)
            except ValueError:
                return None
    if "expires" in query:  # CloudFront / legacy S3: absolute epoch seconds
        try:
            return float(query["expires"])
        except ValueError:
            return None
    return None


class SignedUrl:
    """A pre-signed URL and when it expires. Its repr never shows the signature."""

    __slots__ = ("url", "expires_at")

    def __init__(self, url: str) -> None:
        self.url = url
        self.expires_at = url_expiry(url)

    def fresh(self, *, margin: float = EXPIRY_MARGIN_SECONDS) -> bool:
        return self.expires_at is None or time.time() + margin < self.expires_at

    def __repr__(self) -> str:
        return f"SignedUrl({redact_url(self.url)!r})"


def _answer_to_result(
    answer: Optional[PresignedUrlAnswer], request: FileHandleRequest
) -> Tuple[Optional[SignedUrl], Optional[SynclientError]]:
    if answer is not None and answer.url:
        return SignedUrl(answer.url), None
    where = f"file handle {request.file_handle_id} of {request.entity_id}"
    if answer is not None and answer.malformed:  # that handle's row alone: the batch's other rows stand
        error = MalformedAnswerError(f"no pre-signed URL for {where}: malformed answer: {answer.malformed}")
        return None, error.spent()
    code = answer.failure_code if answer else "MISSING"
    if code == "UNAUTHORIZED":
        return None, AccessDeniedError(f"download of {where} is not allowed (UNAUTHORIZED)", status=403)
    if code == "NOT_FOUND":
        return None, NotFoundError(f"{where} was not found", status=404)
    return None, PlatformError(f"no pre-signed URL for {where} ({code})")


class UrlBroker:
    """Collects files that need a URL and asks the platform for them in batches, on the shared pool."""

    def __init__(self, platform: Platform, pool: TaskPool, *, batch_size: int = 100) -> None:
        self._platform = platform
        self._pool = pool
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self._pending: List[Tuple[FileHandleRequest, UrlCallback]] = []
        pool.add_idle_check(self._flush_tail)

    def request(self, request: FileHandleRequest, on_ready: UrlCallback) -> None:
        """Queue ``request``; ``on_ready(url, error)`` runs on the pool when its batch is answered."""
        with self._lock:
            self._pending.append((request, on_ready))
            batch = self._take(self._batch_size) if len(self._pending) >= self._batch_size else None
        if batch:
            self._pool.submit(Priority.URL_BATCH, self._fetch, batch)

    def fetch_one(self, request: FileHandleRequest) -> SignedUrl:
        """A fresh URL right now (refresh from inside a running stream); raises on failure."""
        answers = self._platform.get_presigned_urls([request])
        url, error = _answer_to_result(answers.get(request.file_handle_id), request)
        if error is not None:
            raise error
        assert url is not None
        return url

    def _take(self, count: int) -> List[Tuple[FileHandleRequest, UrlCallback]]:
        batch, self._pending = self._pending[:count], self._pending[count:]
        return batch

    def _flush_tail(self) -> None:
        """Send a partial batch only when nothing upstream (listings, bundles) can still add to it."""
        with self._lock:
            if not self._pending:
                return
        if self._pool.outstanding(Priority.LISTING, Priority.BUNDLE):
            return
        with self._lock:
            batches = [self._take(self._batch_size) for _ in range(0, len(self._pending), self._batch_size)]
        for batch in batches:
            self._pool.submit(Priority.URL_BATCH, self._fetch, batch)

    def _fetch(self, batch: List[Tuple[FileHandleRequest, UrlCallback]]) -> None:
        try:
            answers = self._platform.get_presigned_urls([request for request, _ in batch])
        except SynclientError as exc:
            for _, on_ready in batch:
                on_ready(None, exc)
            return
        for request, on_ready in batch:
            on_ready(*_answer_to_result(answers.get(request.file_handle_id), request))
