"""Hostile-server behaviours for resilience tests: a platform that lies or garbles its answers.

Knobs of the older, single-purpose faults (all off by default, all seeded by ``fault_seed``):

- ``fault_api_malformed_rate`` (float, or per route class like ``fault_api_5xx_rate``): a 2xx JSON answer goes out
  truncated (the first half of its text) or replaced by a non-JSON page. The decision is per request occurrence,
  so a retried request gets a fresh one.
- ``fault_data_corrupt_rate``: a data body carries wrong bytes (same length, one byte flipped at a seeded offset),
  as a bad disk or proxy would. Per request occurrence.
- ``hostile_handle_rate`` + ``hostile_handle_mode``: a stable, seeded fraction of file handles describe their
  bytes wrongly in every answer (bundle2 and fileHandle/batch alike): ``"md5"`` (a wrong ``contentMd5``),
  ``"size+1"`` / ``"size-1"`` (a wrong ``contentSize``). The stored bytes themselves are untouched.

Hostile-server mode (``hostile_rate`` + ``hostile_kinds``): answers a broken or malicious server would give. Each
kind decides per key with ``chosen`` -- a stable fraction of (``fault_seed``, kind, key), never per occurrence -- so
the same entity, handle, listing or object is mutated the same way in every answer, and a test can replay any
decision with the functions below. Kinds and their keys:

- ``names`` (key ``syn<id>``; a handle's ``fileName``: ``handle:<id>``): the name in every EntityHeader, Entity,
  bundle, path and query/view row becomes ``hostile_name``: with ``/``, ``..``, ``.``, with NUL, 300 bytes long,
  or a Windows-reserved name.
- ``sizes`` (key: handle id): a handle's ``contentSize`` becomes 1e20, 2**64, negative, a float or a string.
- ``handle_ids`` (key: handle id): a handle's id, wherever it appears (the handle's ``id``, ``dataFileHandleId``,
  a URL batch's ``fileHandleId``, a view's FILEHANDLEID cells), becomes one with path characters.
- ``paging`` (key ``children:syn<parent>`` or ``children:root``, ``query:syn<table>``): every page of that listing
  carries a ``nextPageToken`` that repeats the token asked with (or, on the first page, one that leads back to it):
  a listing that never ends.
- ``url_credentials`` (key: handle id): an external handle's URL (``externalURL``, the URL batch's
  ``preSignedURL``, the file route's redirect) carries ``user:pw-HOSTILE@``.
- ``redirects`` (key: the object URL's path): the data or external host answers 302 to another host: a port of
  127.0.0.1 where nothing listens, or the API host.
- ``bodies`` (key: the object URL's path): the data or external host sends a body longer or shorter than the
  object, with a Content-Length that says so, or without one (the body ends where the connection does).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import re
import socket
import threading
from collections import Counter
from dataclasses import dataclass
from typing import Any, Dict, List, Optional
from urllib.parse import urlsplit, urlunsplit

from .knobs import HOSTILE_KINDS

HANDLE_MODES = ("md5", "size+1", "size-1")
#: the user and password hostile external URLs carry: a secret a client must never print
URL_USER = "user"
URL_SECRET = "pw-HOSTILE"
#: handle ids with path characters
PATH_IDS = ("../../../PWNED", "..\\..\\..\\PWNED", "/tmp/PWNED", "PWNED/../../../x")
#: names Windows refuses for a file, with or without an extension
RESERVED_NAMES = ("CON", "PRN", "AUX", "NUL", "COM1", "LPT1", "con.txt", "nul.tar.gz")
LONG_NAME_BYTES = 300
NAME_FORMS = ("slash", "dotdot", "dot", "nul", "long", "reserved")
SIZE_FORMS = ("1e20", "2**64", "negative", "float", "string")
BODY_FORMS = ("longer", "longer-no-length", "shorter", "shorter-no-length")
REDIRECT_TARGETS = ("dead-port", "api-host")
#: what a longer body adds after the object's bytes
TAIL = b"HOSTILE-TAIL-"
_FILE_HANDLE_TYPES = (
    "org.sagebionetworks.repo.model.file.S3FileHandle",
    "org.sagebionetworks.repo.model.file.ExternalFileHandle",
)
_SYN_ID = re.compile(r"^syn\d+$")

# Injection counters of this process (every in-process emulator), so tests can prove a fault really happened.
# Kept here rather than in stats.py so that the emulator's documented stats stay as they are.
_counts: Counter = Counter()
_counts_lock = threading.Lock()


def count(kind: str) -> None:
    with _counts_lock:
        _counts[kind] += 1


def injected() -> Dict[str, int]:
    """Injections since the process started: ``{"api_malformed": n, "data_corrupt": n, "handle_lies": n}`` and one
    count per hostile-server kind (``"names"``, ``"sizes"``, ... see ``HOSTILE_KINDS``): mutated fields or answers."""
    with _counts_lock:
        return {kind: _counts[kind] for kind in ("api_malformed", "data_corrupt", "handle_lies") + HOSTILE_KINDS}


NOT_JSON = b"<html><body><h1>502 Bad Gateway</h1></body></html>"


def stable_fraction(seed: int, kind: str, key: str) -> float:
    """A uniform in [0, 1) that depends only on (seed, kind, key): the same on every call."""
    digest = hashlib.sha256(f"{seed}|{kind}|{key}".encode("utf-8", "replace")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def handle_lies(knobs, handle_id: str) -> bool:
    rate = knobs.hostile_handle_rate
    return rate > 0 and stable_fraction(knobs.fault_seed, "handle", str(handle_id)) < rate


def lie_about_handle(knobs, handle_json: Dict[str, Any]) -> Dict[str, Any]:
    """The handle as a hostile platform would describe it (unchanged for handles that do not lie)."""
    if not handle_lies(knobs, str(handle_json.get("id"))):
        return handle_json
    count("handle_lies")
    lied = dict(handle_json)
    mode = knobs.hostile_handle_mode
    if mode == "md5":
        md5 = str(lied.get("contentMd5") or "0" * 32)
        lied["contentMd5"] = hashlib.md5(md5.encode("ascii")).hexdigest()  # well-formed, and wrong
    elif "contentSize" not in lied:
        pass  # an external handle that records no size has no size to lie about
    elif mode == "size+1":
        lied["contentSize"] = int(lied["contentSize"]) + 1
    elif mode == "size-1":
        lied["contentSize"] = max(0, int(lied["contentSize"]) - 1)
    return lied


def malformed_payload(payload: bytes, pick: float) -> bytes:
    """A garbled version of a JSON answer: its first half (a cut body), or an HTML error page."""
    count("api_malformed")
    if pick < 0.5 and len(payload) > 1:
        return payload[: len(payload) // 2]
    return NOT_JSON


def corrupt_offset(count: int, pick: float) -> int:
    """Which byte of a ``count``-byte body a corrupting server flips."""
    return min(count - 1, int(pick * count))


def flip(chunk: bytes, index: int) -> bytes:
    return chunk[:index] + bytes([chunk[index] ^ 0xFF]) + chunk[index + 1 :]


def json_payload(body) -> Optional[bytes]:
    """The bytes the API listener would send for a JSON body (None for non-JSON bodies)."""
    if isinstance(body, (bytes, bytearray, str)):
        return None
    return json.dumps(body if body is not None else {}).encode("utf-8")


# --- hostile-server mode: the decisions ------------------------------------------------------------------------
def chosen(knobs, kind: str, key: str) -> bool:
    """Whether hostile-server mode mutates ``kind`` for ``key``: the same answer on every call for one
    (fault_seed, hostile_rate, kind, key)."""
    return knobs.hostile(kind) and stable_fraction(knobs.fault_seed, "hostile-" + kind, key) < knobs.hostile_rate


def _pick(seed: int, what: str, key: str, choices: int) -> int:
    """Which of ``choices`` forms a mutation of ``what`` takes for ``key``."""
    return min(choices - 1, int(stable_fraction(seed, "hostile-pick-" + what, key) * choices))


def hostile_name(seed: int, key: str, name: str) -> str:
    """The bad name answered for an entity (or handle) whose real name is ``name``."""
    form = NAME_FORMS[_pick(seed, "names", key, len(NAME_FORMS))]
    if form == "slash":
        return f"sub/{name}"
    if form == "dotdot":
        return ".."
    if form == "dot":
        return "."
    if form == "nul":
        return f"{name}\x00.evil"
    if form == "long":
        stem = name.encode("utf-8")[:100].decode("utf-8", "ignore")
        return stem + "L" * (LONG_NAME_BYTES - len(stem.encode("utf-8")))
    return RESERVED_NAMES[_pick(seed, "reserved", key, len(RESERVED_NAMES))]


def answered_name(knobs, entity_id: str, name: str) -> str:
    """The name hostile-server mode answers, in every answer, for entity ``entity_id`` (``syn<n>``) whose real
    name is ``name``: ``hostile_name`` for a chosen entity, else ``name``."""
    return hostile_name(knobs.fault_seed, entity_id, name) if chosen(knobs, "names", entity_id) else name


def file_name(knobs, handle_id: str, name: str) -> str:
    """A handle's ``fileName`` as answered (bundle2's ``fileName``; the walker below does the handle's own)."""
    key = f"handle:{handle_id}"
    if not chosen(knobs, "names", key):
        return name
    count("names")
    return hostile_name(knobs.fault_seed, key, name)


def hostile_size(seed: int, key: str, size: object):
    """The bad ``contentSize`` answered for a handle whose real size is ``size``."""
    real = size if isinstance(size, int) and not isinstance(size, bool) else 0
    form = SIZE_FORMS[_pick(seed, "sizes", key, len(SIZE_FORMS))]
    if form == "1e20":
        return 1e20
    if form == "2**64":
        return 2**64
    if form == "negative":
        return -max(real, 1)
    if form == "float":
        return real + 0.5
    return str(real)


def hostile_handle_id(seed: int, key: str) -> str:
    return PATH_IDS[_pick(seed, "handle_ids", key, len(PATH_IDS))]


def with_credentials(url: str) -> str:
    """``url`` with ``user:pw-HOSTILE@`` as its userinfo (replacing any it had)."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{URL_USER}:{URL_SECRET}@{host}"))


@dataclass(frozen=True)
class BodyPlan:
    """How a hostile data host sends an object's body: ``count`` bytes instead of the honest number (the
    object's bytes, cut short or followed by ``TAIL``), with or without a Content-Length that says ``count``."""

    count: int
    send_length: bool


def body_plan(knobs, key: str, honest_count: int) -> Optional[BodyPlan]:
    """None (an honest body), or how the body of the object at URL path ``key`` is mis-sent."""
    if not chosen(knobs, "bodies", key):
        return None
    form = BODY_FORMS[_pick(knobs.fault_seed, "bodies", key, len(BODY_FORMS))]
    delta = 1 + _pick(knobs.fault_seed, "bodies-delta", key, 16)
    shorter = form.startswith("shorter") and honest_count > 0
    count = max(0, honest_count - delta) if shorter else honest_count + delta
    return BodyPlan(count, not form.endswith("no-length"))


def tail_bytes(count: int) -> bytes:
    """The ``count`` bytes a longer body adds."""
    return (TAIL * (count // len(TAIL) + 1))[:count]


_dead = []  # type: List[socket.socket]
_dead_lock = threading.Lock()


def dead_port() -> int:
    """A port of 127.0.0.1 where nothing listens and nothing can: bound by this process, never listening (a
    connection is refused). One per process, kept open for its life."""
    with _dead_lock:
        if not _dead:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            _dead.append(sock)
            atexit.register(sock.close)
        return _dead[0].getsockname()[1]


def redirect_location(knobs, key: str, target: str, api_endpoint: str) -> Optional[str]:
    """None, or where a hostile data host redirects the request for ``target`` (path + query) of URL path ``key``."""
    if not chosen(knobs, "redirects", key):
        return None
    scheme = api_endpoint.partition("://")[0] or "http"
    if REDIRECT_TARGETS[_pick(knobs.fault_seed, "redirects", key, len(REDIRECT_TARGETS))] == "dead-port":
        return f"{scheme}://127.0.0.1:{dead_port()}{target}"
    return f"{api_endpoint}{target}"


def external_url(knobs, handle_id: str, url: str) -> str:
    """An external handle's URL as answered: with credentials for a ``url_credentials`` handle."""
    if not chosen(knobs, "url_credentials", str(handle_id)):
        return url
    count("url_credentials")
    return with_credentials(url)


def children_token(
    knobs, parent_key: str, asked: Optional[str], honest: Optional[str], first_page: str
) -> Optional[str]:
    """The ``nextPageToken`` of a children page: for a ``paging`` listing, the token asked with again (or, on the
    first page, the honest next token or the first page's own), so the listing never ends."""
    if not chosen(knobs, "paging", f"children:{parent_key}"):
        return honest
    count("paging")
    return asked or honest or first_page


# --- hostile-server mode: mutating a JSON answer -----------------------------------------------------------------
class _Mutator:
    """Rewrites one JSON answer (a fresh copy: job outcomes are cached and answered again)."""

    def __init__(self, knobs) -> None:
        self.knobs = knobs
        self.seed = knobs.fault_seed

    def name(self, key: str, name: object) -> object:
        if not isinstance(name, str) or not chosen(self.knobs, "names", key):
            return name
        count("names")
        return hostile_name(self.seed, key, name)

    def handle_id(self, handle_id: object) -> object:
        if handle_id is None or not chosen(self.knobs, "handle_ids", str(handle_id)):
            return handle_id
        count("handle_ids")
        return hostile_handle_id(self.seed, str(handle_id))

    def value(self, value):
        if isinstance(value, dict):
            return self.mapping(value)
        if isinstance(value, list):
            return [self.value(item) for item in value]
        return value

    def mapping(self, original: Dict[str, Any]) -> Dict[str, Any]:
        result = {key: self.value(item) for key, item in original.items()}
        if original.get("concreteType") in _FILE_HANDLE_TYPES:
            self.file_handle(original, result)
        elif isinstance(original.get("id"), str) and _SYN_ID.match(original["id"]) and "name" in original:
            result["name"] = self.name(original["id"], original["name"])
        if isinstance(original.get("headers"), list) and isinstance(original.get("rows"), list):
            result["rows"] = self.rows(original["headers"], original["rows"])
        for key in ("dataFileHandleId", "fileHandleId"):
            if key in original:
                result[key] = self.handle_id(original[key])
        return result

    def file_handle(self, original: Dict[str, Any], result: Dict[str, Any]) -> None:
        handle_id = str(original.get("id"))
        if "contentSize" in original and chosen(self.knobs, "sizes", handle_id):
            count("sizes")
            result["contentSize"] = hostile_size(self.seed, handle_id, original["contentSize"])
        if isinstance(original.get("fileName"), str):
            result["fileName"] = file_name(self.knobs, handle_id, original["fileName"])
        if isinstance(original.get("externalURL"), str):
            result["externalURL"] = external_url(self.knobs, handle_id, original["externalURL"])
        result["id"] = self.handle_id(original.get("id"))

    def rows(self, headers: List[object], rows: List[object]) -> List[object]:
        """A RowSet's rows: the ``name`` cell of an entity (its ``id`` cell, or else its rowId) and FILEHANDLEID
        cells."""
        names = [str(h.get("name")) if isinstance(h, dict) else "" for h in headers]
        types = [str(h.get("columnType")) if isinstance(h, dict) else "" for h in headers]
        handle_columns = [i for i, kind in enumerate(types) if kind == "FILEHANDLEID"]
        name_column = names.index("name") if "name" in names else None
        id_column = names.index("id") if "id" in names and types[names.index("id")] == "ENTITYID" else None
        mutated = []
        for row in rows:
            if not isinstance(row, dict) or not isinstance(row.get("values"), list):
                mutated.append(row)
                continue
            cells = list(row["values"])
            if name_column is not None and name_column < len(cells):
                entity = cells[id_column] if id_column is not None and id_column < len(cells) else None
                entity = entity if isinstance(entity, str) else f"syn{row.get('rowId')}"
                cells[name_column] = self.name(entity, cells[name_column])
            for column in handle_columns:
                if column < len(cells):
                    cells[column] = self.handle_id(cells[column])
            mutated.append(dict(row, values=cells))
        return mutated


def mutate_answer(knobs, body):
    """A 2xx JSON answer as hostile-server mode sends it: names, sizes, handle ids and external URLs mutated for the
    chosen keys (``body`` itself is left alone). Unchanged (the same object) when the mode is off."""
    if not any(knobs.hostile(kind) for kind in ("names", "sizes", "handle_ids", "url_credentials")):
        return body
    return _Mutator(knobs).value(body)
