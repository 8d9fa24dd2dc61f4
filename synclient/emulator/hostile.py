"""Hostile-server behaviours for resilience tests: a platform that lies or garbles its answers.

Three knobs (all off by default, all seeded by ``fault_seed``):

- ``fault_api_malformed_rate`` (float, or per route class like ``fault_api_5xx_rate``): a 2xx JSON answer goes out
  truncated (the first half of its text) or replaced by a non-JSON page. The decision is per request occurrence,
  so a retried request gets a fresh one.
- ``fault_data_corrupt_rate``: a data body carries wrong bytes (same length, one byte flipped at a seeded offset),
  as a bad disk or proxy would. Per request occurrence.
- ``hostile_handle_rate`` + ``hostile_handle_mode``: a stable, seeded fraction of file handles describe their
  bytes wrongly in every answer (bundle2 and fileHandle/batch alike): ``"md5"`` (a wrong ``contentMd5``),
  ``"size+1"`` / ``"size-1"`` (a wrong ``contentSize``). The stored bytes themselves are untouched.
"""
from __future__ import annotations

import hashlib
import json
import threading
from collections import Counter
from typing import Dict, Optional

HANDLE_MODES = ("md5", "size+1", "size-1")

# Injection counters of this process (every in-process emulator), so tests can prove a fault really happened.
# Kept here rather than in stats.py so that the emulator's documented stats stay as they are.
_counts: Counter = Counter()
_counts_lock = threading.Lock()


def count(kind: str) -> None:
    with _counts_lock:
        _counts[kind] += 1


def injected() -> Dict[str, int]:
    """``{"api_malformed": n, "data_corrupt": n, "handle_lies": n}`` since the process started."""
    with _counts_lock:
        return {kind: _counts[kind] for kind in ("api_malformed", "data_corrupt", "handle_lies")}
NOT_JSON = b"<html><body><h1>502 Bad Gateway</h1></body></html>"


def stable_fraction(seed: int, kind: str, key: str) -> float:
    """A uniform in [0, 1) that depends only on (seed, kind, key): the same on every call."""
    digest = hashlib.sha256(f"{seed}|{kind}|{key}".encode("utf-8", "replace")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0 ** 64


def handle_lies(knobs, handle_id: str) -> bool:
    rate = knobs.hostile_handle_rate
    return rate > 0 and stable_fraction(knobs.fault_seed, "handle", str(handle_id)) < rate


def lie_about_handle(knobs, handle_json: Dict[str, object]) -> Dict[str, object]:
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
        return payload[:len(payload) // 2]
    return NOT_JSON


def corrupt_offset(count: int, pick: float) -> int:
    """Which byte of a ``count``-byte body a corrupting server flips."""
    return min(count - 1, int(pick * count))


def flip(chunk: bytes, index: int) -> bytes:
    return chunk[:index] + bytes([chunk[index] ^ 0xFF]) + chunk[index + 1:]


def json_payload(body) -> Optional[bytes]:
    """The bytes the API listener would send for a JSON body (None for non-JSON bodies)."""
    if isinstance(body, (bytes, bytearray, str)):
        return None
    return json.dumps(body if body is not None else {}).encode("utf-8")


