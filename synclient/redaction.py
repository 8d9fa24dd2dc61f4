"""One redactor: every line synclient prints, logs, raises or puts in ``--json`` passes :func:`redact`.

What it removes from a text:

- the user and password of a URL (``https://alice:pw@host/`` -> ``https://***@host/``; also ``alice:pw@host``
  without a scheme, as a URL's ``netloc`` is often shown);
- the query string (and fragment) of a URL, and of a request path after an HTTP method or urllib3's ``url:``
  (``?<redacted>``): a pre-signed URL's query is its signature; a local path with a ``?`` stays as it is;
- tokens: every secret registered with :func:`register_secret` (the token synclient holds registers itself when
  it is resolved, :func:`synclient.platform.credentials.clean_token`; URL passwords of the proxies do when redaction is
  installed), anything shaped like a Synapse personal access token (a JWT: ``eyJ...`` base64url segments), any
  ``Authorization`` header value, ``Bearer <value>`` and ``token=<value>``-like pairs.

Where it is applied: the CLI's output channels (stdout lines, stderr lines, the ``--json`` document, the ``-v``
log formatter); :class:`RedactingFilter`, put by :func:`install_redaction` on every logger of the ``synclient``,
``urllib3``, ``requests`` and ``distributed`` trees (so a library user's own log handlers get clean lines too);
``str()`` and ``repr()`` of every :class:`~synclient.errors.SynclientError`; the URLs built into messages
(:func:`redact_url`, :func:`url_host`); what a Dask shard sends back to the driver.

Nothing here is installed at import: :func:`install_redaction` is called when a
:class:`~synclient.platform.rest.Platform` or a data client is created and when the CLI starts. This module imports
nothing of synclient (the lowest layer), so every other module may use it.
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Any, FrozenSet, Iterable, List, Optional, Set
from urllib.parse import quote, unquote, urlsplit

REDACTED = "[redacted]"
#: what a URL's userinfo becomes in a text
USERINFO_MASK = "***"
#: what a URL's query string becomes (``SignedUrl`` reprs and messages have said so since the first release)
QUERY_MASK = "?<redacted>"
#: a registered secret shorter than this is ignored: no token is that short, and replacing such a text everywhere
#: would blank out ordinary words
MIN_SECRET_LENGTH = 6

#: the logger trees :func:`install_redaction` filters
LOGGER_TREES = ("synclient", "urllib3", "requests", "distributed")

_SCHEME = r"[A-Za-z][A-Za-z0-9+.\-]*://"
#: ``scheme://userinfo@``: everything up to the authority's last ``@`` (a password may hold an unescaped ``@``)
_URL_USERINFO = re.compile(r"(?<![A-Za-z0-9+.\-])(" + _SCHEME + r")[^\s/?#]*@")
#: an authority that is no ``host[:port]`` (``scheme://user:pass?word@host``, an unescaped ``?``, ``#`` or ``/`` in a
#: password): all of it up to the path goes, since nothing can tell where the password ends
_URL_BAD_AUTHORITY = re.compile(
    r"(?<![A-Za-z0-9+.\-])(" + _SCHEME + r")[^\s/?#@:\[\]]+:"
    r"(?!\d*(?:[/?#\s\"'<>]|$))[^\s]*@"
)
#: ``user:password@host`` without a scheme (a ``netloc`` printed alone); a plain ``user@host`` (an e-mail address)
#: carries no password and stays
_BARE_USERINFO = re.compile(r"(?<![\w.~%!$&'()*+,;=:@/\-])[\w.~%!$&'()*+,;=\-]+:[^\s/@]+@(?=[\w\[])")
#: the query of an absolute URL (and its fragment): up to a space or quote, a final punctuation mark left out
_QUERY_END = r"[^\s\"'<>]*[^\s\"'<>.,;:)\]}]"
_URL_QUERY = re.compile(r"(" + _SCHEME + r"[^\s?#\"'<>]*)\?(?!<redacted>)" + _QUERY_END)
#: the query of a request path (``GET /bucket/key?X-Amz-Signature=...``, urllib3's ``with url: /path?...``); a
#: local path with a ``?`` in a name elsewhere in a text stays as it is
_PATH_QUERY = re.compile(
    r"((?:\b(?:GET|HEAD|POST|PUT|DELETE|PATCH|OPTIONS|CONNECT)\s+|\burl:\s*)/[^\s?#\"'<>]*)"
    r"\?(?!<redacted>)" + _QUERY_END
)
#: a JWT (a Synapse personal access token is one) or its first segment alone (a token cut short still is one)
_JWT = re.compile(r"(?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9_\-]{16,}(?:\.[A-Za-z0-9_\-]+){0,2}")
_AUTHORIZATION_VALUE = re.compile(
    r"""(?i)(authorization['"]?\s*[:=]\s*['"]?)(?!\[redacted\])"""
    r"""[^\s'"\r\n,;)}\]][^'"\r\n,;)}\]]*"""
)
_BEARER_VALUE = re.compile(r"""(?i)\b(bearer)(?:\s|%20|\+)+(?!\[redacted\])[^\s'",;)}\]]+""")
_SECRET_PAIR = re.compile(
    r"""(?i)\b((?:auth_?token|access_?token|api_?key|password|passwd|secret)"""
    r"""['"]?\s*[:=]\s*['"]?|token(?:['"]?\s*:\s*['"]?|=))(?!\[redacted\]|<)[^\s'",;&)}\]]+"""
)

_secrets: Set[str] = set()
_secrets_lock = threading.Lock()


def register_secret(secret: Optional[str]) -> None:
    """Never show ``secret`` again, in any form :func:`redact` knows (as given, stripped, escaped as ``repr`` shows
    it, percent-encoded). Idempotent; None, an empty text and a text shorter than :data:`MIN_SECRET_LENGTH` are
    ignored. The registry is the process's: a token resolved once is redacted from then on, wherever it shows."""
    forms = _secret_forms(secret) if isinstance(secret, str) else []
    if forms:
        with _secrets_lock:
            _secrets.update(forms)


def registered_secrets() -> FrozenSet[str]:
    with _secrets_lock:
        return frozenset(_secrets)


def register_url_credentials(url: Optional[str]) -> None:
    """Register the password of ``url`` (e.g. a proxy's), or its user name when it has no password (a token
    may stand there alone: ``https://TOKEN@host``)."""
    if not url:
        return
    try:
        parts = urlsplit(url if "://" in url else "//" + url)
        value = parts.password if parts.password is not None else parts.username
    except ValueError:
        return
    if value:
        register_secret(value)
        register_secret(unquote(value))


def _secret_forms(secret: Optional[str]) -> List[str]:
    if not secret or len(secret.strip()) < MIN_SECRET_LENGTH:
        return []
    forms = {secret, secret.strip(), repr(secret)[1:-1], repr(secret.strip())[1:-1], quote(secret.strip(), safe="")}
    return [form for form in forms if len(form) >= MIN_SECRET_LENGTH]


def redact(text: Any, *, secrets: Iterable[Optional[str]] = ()) -> str:
    """``text`` (made a ``str``) without what the module's docstring lists; ``secrets``: more secrets for this call
    only. Idempotent: a redacted text comes back unchanged."""
    text = text if isinstance(text, str) else str(text)
    extra = [form for secret in secrets for form in _secret_forms(secret)]
    for form in sorted(registered_secrets().union(extra), key=len, reverse=True):
        if form in text:
            text = text.replace(form, REDACTED)
    text = _URL_USERINFO.sub(lambda match: match.group(1) + USERINFO_MASK + "@", text)
    text = _URL_BAD_AUTHORITY.sub(lambda match: match.group(1) + USERINFO_MASK + "@", text)
    text = _BARE_USERINFO.sub(USERINFO_MASK + "@", text)
    text = _URL_QUERY.sub(lambda match: match.group(1) + QUERY_MASK, text)
    text = _PATH_QUERY.sub(lambda match: match.group(1) + QUERY_MASK, text)
    text = _AUTHORIZATION_VALUE.sub(lambda match: match.group(1) + REDACTED, text)
    text = _BEARER_VALUE.sub(lambda match: f"{match.group(1)} {REDACTED}", text)
    text = _SECRET_PAIR.sub(lambda match: match.group(1) + REDACTED, text)
    return _JWT.sub(REDACTED, text)


#: C0 controls, DEL and C1 controls: what a terminal acts on (ESC sequences, a carriage return that rewrites the line,
#: a line feed that forges the next one); a remote name may hold any of them
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CONTROL_SPELLING = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def visible(text: str, *, keep: str = "") -> str:
    """``text`` with every control character (but those in ``keep``) spelled as an escape (``\\x1b``, ``\\n``): what
    a server named is shown, never acted on by the terminal. For lines printed to a terminal or a log."""
    return _CONTROL.sub(
        lambda match: (
            match.group(0)
            if match.group(0) in keep
            else _CONTROL_SPELLING.get(match.group(0), f"\\x{ord(match.group(0)):02x}")
        ),
        text,
    )


def redact_data(value: Any) -> Any:
    """A JSON-able structure (dicts, lists, strings, numbers) with every string, keys included, redacted."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(key) if isinstance(key, str) else key: redact_data(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_data(item) for item in value]
    return value


def redact_url(url: str) -> str:
    """The URL without its query string and without a user or password in it (an external URL may carry them):
    signatures and credentials never reach logs, reprs or reports. Its path goes through :func:`redact` too."""
    parts = urlsplit(url)
    authority = url_host(url)
    return redact(f"{parts.scheme}://{authority}{parts.path}") + (QUERY_MASK if parts.query else "")


def url_host(url: str) -> str:
    """``host[:port]`` of ``url``, never its user or password (``[...]`` around an IPv6 address); a port that is not
    a number is left out."""
    parts = urlsplit(url)
    try:
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        port = ""
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    return host + port


def has_userinfo(url: str) -> bool:
    """``url`` names a user or a password (``scheme://user:password@host``)."""
    return "@" in urlsplit(url).netloc


# -- logs ---------------------------------------------------------------------------------------------------------


class RedactingFilter(logging.Filter):
    """A record's message (its arguments merged in) and its traceback, redacted. It never drops a record."""

    _formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed record is logging's own error to report
            return True
        record.msg, record.args = redact(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


_FILTER = RedactingFilter()
_install_lock = threading.Lock()


def install_redaction() -> None:
    """Put the one :class:`RedactingFilter` on every logger of :data:`LOGGER_TREES` that exists (a filter of a
    logger applies to the records logged there, not to those of its children, so each gets it), and register the
    credentials of the proxies the environment names. Idempotent, cheap enough to call whenever a client is made
    (loggers created since are covered then); never done at import."""
    import urllib.request

    with _install_lock:
        names = [name for name in list(logging.Logger.manager.loggerDict) if name.split(".")[0] in LOGGER_TREES]
        for name in set(names) | {"synclient", "urllib3", "urllib3.connectionpool", "requests"}:
            logger = logging.getLogger(name)
            if _FILTER not in logger.filters:
                logger.addFilter(_FILTER)
    for proxy in urllib.request.getproxies().values():
        register_url_credentials(proxy)


def redaction_installed(logger: logging.Logger) -> bool:
    return _FILTER in logger.filters
