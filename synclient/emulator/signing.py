"""AWS-style pre-signed URLs for the data listener: HMAC-SHA256 over path, date and expiry."""

from __future__ import annotations

import datetime
import enum
import hashlib
import hmac
import math
import time
from typing import Mapping, Optional
from urllib.parse import quote, unquote, urlencode

AMZ_DATE_FORMAT = "%Y%m%dT%H%M%SZ"


class UrlCheck(enum.Enum):
    VALID = "valid"
    MALFORMED = "malformed"  # missing or unparsable X-Amz-* parameters
    BAD_SIGNATURE = "bad_signature"  # tampered path, date, expiry or signature
    EXPIRED = "expired"


def _signature(secret: str, path: str, amz_date: str, expires: str) -> str:
    message = f"{unquote(path)}\n{amz_date}\n{expires}".encode()
    return hmac.new(secret.encode("ascii"), message, hashlib.sha256).hexdigest()


def sign_url(secret: str, base: str, path: str, lifetime: float, now: Optional[float] = None) -> str:
    """``base`` + quoted ``path`` + X-Amz-* query, valid for ``lifetime`` seconds from ``now``."""
    moment = datetime.datetime.fromtimestamp(time.time() if now is None else now, datetime.timezone.utc)
    amz_date = moment.strftime(AMZ_DATE_FORMAT)
    expires = str(max(1, math.ceil(lifetime)))
    quoted = quote(path)
    query = urlencode(
        [
            ("X-Amz-Algorithm", "AWS4-HMAC-SHA256"),
            ("X-Amz-Date", amz_date),
            ("X-Amz-SignedHeaders", "host"),
            ("X-Amz-Expires", expires),
            ("X-Amz-Credential", f"EMULATOR/{amz_date[:8]}/us-east-1/s3/aws4_request"),
            ("X-Amz-Signature", _signature(secret, quoted, amz_date, expires)),
        ]
    )
    return f"{base}{quoted}?{query}"


def check_url(secret: str, path: str, query: Mapping[str, str], now: Optional[float] = None) -> UrlCheck:
    """Validate the signature first (a tampered expiry must not pass as merely 'expired')."""
    try:
        amz_date = query["X-Amz-Date"]
        expires = query["X-Amz-Expires"]
        signature = query["X-Amz-Signature"]
        signed_at = datetime.datetime.strptime(amz_date, AMZ_DATE_FORMAT).replace(tzinfo=datetime.timezone.utc)
        lifetime = int(expires)
    except (KeyError, ValueError):
        return UrlCheck.MALFORMED
    if not hmac.compare_digest(_signature(secret, path, amz_date, expires), signature):
        return UrlCheck.BAD_SIGNATURE
    current = time.time() if now is None else now
    if current > signed_at.timestamp() + lifetime:
        return UrlCheck.EXPIRED
    return UrlCheck.VALID
