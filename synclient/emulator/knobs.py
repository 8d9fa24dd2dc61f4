"""Every tunable of the emulator in one validated dataclass, plus the parsers the CLI needs.

Field names are the snake_case of the CLI flags (``--api-latency-ms`` -> ``api_latency_ms``);
scripts and other tools rely on both spellings, so keep them stable.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from dataclasses import dataclass
from typing import Any, Dict, Iterable, Optional, Tuple, Union


class RateWindow(str, enum.Enum):
    """How the per-user request window is counted."""

    #: any window of that length holds at most N admitted requests (the stricter, the default)
    SLIDING = "sliding"
    #: Synapse's own way (``MemoryTimeBlockCountingSemaphoreImpl``): a block of that length starts at the user's
    #: first request after the last block ended, and holds at most N
    BLOCK = "block"


#: Route classes that API 5xx faults can target separately.
ROUTE_CLASSES = ("children", "bundle", "filehandle", "entity", "query", "other")

#: What hostile-server mode (``hostile_rate``) can mutate; see hostile.py and docs/emulator.md.
HOSTILE_KINDS = ("names", "sizes", "handle_ids", "paging", "url_credentials", "redirects", "bodies")

_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "m": 1000**2,
    "mb": 1000**2,
    "g": 1000**3,
    "gb": 1000**3,
    "t": 1000**4,
    "tb": 1000**4,
    "ki": 1024,
    "kib": 1024,
    "mi": 1024**2,
    "mib": 1024**2,
    "gi": 1024**3,
    "gib": 1024**3,
    "ti": 1024**4,
    "tib": 1024**4,
}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(text: Union[str, int, float]) -> int:
    """Parse "32MB" (decimal), "4KiB" (binary) or a plain byte count into bytes."""
    if isinstance(text, bool):
        raise ValueError(f"not a size: {text!r}")
    if isinstance(text, (int, float)):
        if text < 0:
            raise ValueError(f"size must not be negative: {text!r}")
        return int(text)
    match = _SIZE_RE.match(str(text))
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _SIZE_UNITS:
        raise ValueError(f"not a size: {text!r} (examples: 50, 4KiB, 32MB)")
    return int(float(match.group(1)) * _SIZE_UNITS[unit])


def parse_rate(text: Union[str, float]) -> float:
    """A probability in [0, 1]."""
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"rate must be between 0 and 1: {text!r}")
    return value


def parse_route_rates(text: Union[str, float, Dict[str, float], Dict[str, str]]) -> Union[float, Dict[str, float]]:
    """``0.05`` (all route classes) or ``children=0.1,bundle=0.02`` (per class)."""
    if isinstance(text, dict):
        rates = {}
        for route_class, rate in text.items():
            if route_class not in ROUTE_CLASSES:
                raise ValueError(f"unknown route class {route_class!r}; known: {', '.join(ROUTE_CLASSES)}")
            rates[route_class] = parse_rate(rate)
        return rates
    if isinstance(text, (int, float)):
        return parse_rate(text)
    if "=" not in text:
        return parse_rate(text)
    pairs = {}
    for item in text.split(","):
        key, _, value = item.partition("=")
        pairs[key.strip()] = value.strip()
    return parse_route_rates(pairs)


def parse_kinds(text: Union[str, Iterable[str], None]) -> Tuple[str, ...]:
    """``all`` (or None), ``none``, ``names,sizes`` or a list of kinds -> the kinds, in ``HOSTILE_KINDS`` order."""
    if text is None:
        return HOSTILE_KINDS
    if isinstance(text, str):
        word = text.strip().lower()
        if word == "all":
            return HOSTILE_KINDS
        items = [] if word in ("", "none") else [item.strip() for item in word.split(",") if item.strip()]
    else:
        items = [str(item).strip().lower() for item in text]
    unknown = sorted(set(items) - set(HOSTILE_KINDS))
    if unknown:
        raise ValueError(
            f"unknown hostile kind(s) {', '.join(unknown)}; known: {', '.join(HOSTILE_KINDS)} (or all, none)"
        )
    return tuple(kind for kind in HOSTILE_KINDS if kind in items)


def parse_window(text: Union[str, Tuple[float, float], None]) -> Optional[Tuple[float, float]]:
    """``START:SECONDS`` (seconds after startup) -> (start, seconds)."""
    if text is None:
        return None
    start_text: Union[str, float]
    seconds_text: Union[str, float]
    if isinstance(text, (tuple, list)):
        start_text, seconds_text = text
    else:
        start_text, sep, seconds_text = str(text).partition(":")
        if not sep:
            raise ValueError(f"maintenance window must be START:SECONDS, got {text!r}")
    start, seconds = float(start_text), float(seconds_text)
    if start < 0 or seconds <= 0:
        raise ValueError(f"maintenance window needs START >= 0 and SECONDS > 0, got {text!r}")
    return (start, seconds)


@dataclass
class Knobs:
    """Latency, throttling and fault settings. Change them live with ``Emulator.set_knobs``."""

    api_latency_ms: float = 0.0
    api_latency_jitter_ms: float = 0.0
    data_latency_ms: float = 0.0
    #: bytes per second per data connection; 0 = unlimited (zero-copy sendfile)
    bandwidth_per_conn: int = 0
    #: per-user concurrent API requests; 0 = unlimited
    max_concurrent_per_user: int = 0
    #: per-user API requests per rate window (Synapse: 600 per 60 s); 0 = off
    max_requests_per_minute: int = 0
    #: the rate window's length in seconds (a shorter one runs the same dynamics faster, for tests)
    rate_window_seconds: float = 60.0
    #: sliding window or Synapse's fixed time blocks
    rate_window_mode: RateWindow = RateWindow.SLIDING
    #: pre-signed URL lifetime in seconds
    url_lifetime: float = 900.0
    #: probability of a 5xx answer, for all route classes (float) or per class (dict)
    fault_api_5xx_rate: Union[float, Dict[str, float]] = 0.0
    #: which statuses injected 5xx faults use (picked at random among them)
    fault_api_5xx_statuses: Tuple[int, ...] = (500, 502, 503)
    #: probability of a random 429 with Synapse's concurrency reason (a "429 storm")
    fault_api_429_rate: float = 0.0
    #: probability that a data body is cut mid-stream (connection closed early)
    fault_data_cut_rate: float = 0.0
    #: probability that a data body stalls (headers sent, then silence for stall_seconds)
    fault_data_stall_rate: float = 0.0
    fault_seed: int = 0
    #: (start, seconds) after startup during which the API answers 503 "down for maintenance"
    maintenance_window: Optional[Tuple[float, float]] = None
    #: seconds sent as Retry-After on 429s; None = no header (like real Synapse)
    throttle_retry_after: Optional[int] = None
    #: answer ranged GETs with 200 + the full body, like a server that ignores Range
    data_ignore_range: bool = False
    #: answer ranged GETs with 206 and a Content-Range that does not match the request
    data_wrong_content_range: bool = False
    #: how long a stalled body stays silent before the connection is closed
    stall_seconds: float = 30.0
    #: probability that a 2xx JSON answer is truncated or not JSON at all; float or per route class
    fault_api_malformed_rate: Union[float, Dict[str, float]] = 0.0
    #: probability that a data body carries wrong bytes (same length, one byte flipped)
    fault_data_corrupt_rate: float = 0.0
    #: stable seeded fraction of file handles whose contentMd5/contentSize do not match their bytes
    hostile_handle_rate: float = 0.0
    #: how those handles lie: "md5", "size+1" or "size-1" (see hostile.py)
    hostile_handle_mode: str = "md5"
    #: hostile-server mode: the stable seeded fraction of eligible entities/handles/listings/objects whose answers
    #: are mutated the way a broken or malicious server would (0 = off); see hostile.py
    hostile_rate: float = 0.0
    #: which mutations hostile_rate applies (``HOSTILE_KINDS``; a tuple, or "all", "none", "names,sizes")
    hostile_kinds: Tuple[str, ...] = HOSTILE_KINDS
    #: the external listener honours Range (206); off: always 200 with the whole body, no Accept-Ranges
    external_ranges: bool = True
    #: the external listener sends Content-Length; off: none, the body ends when the connection closes
    external_content_length: bool = True
    #: GETs of a table query job answered 202 (PROCESSING) before its result; counted per job, never timed
    query_pending_polls: int = 1
    #: rows per page of a table query (Synapse derives its maxRowsPerPage from a byte budget)
    query_page_rows: int = 1000
    #: files a user's download list may hold (Synapse: DownloadListManagerImpl.MAX_FILES_PER_USER, 100,000)
    download_list_limit: int = 100_000
    #: views answer from their snapshot (taken at seeding and by refresh_views), not from the live store
    view_lag: bool = False
    #: keep the last N platform exchanges (request and JSON answer) for ``Emulator.exchanges()``; 0 = off
    record_exchanges: int = 0
    #: the user is not certified: POST /entity of anything but a project answers 403 (Synapse's
    #: DENY_IF_CREATE_TYPE_IS_NOT_PROJECT_AND_NOT_CERTIFIED), and so does an annotation update
    uncertified_user: bool = False
    #: the user may create nothing: POST /entity answers 403 "You lack CREATE access ..." (projects too)
    deny_create: bool = False
    #: containers (the scope's projects and folders and every folder below them) a view's scope may hold
    #: (Synapse: TableConstants.MAX_CONTAINERS_PER_VIEW, 35,000)
    max_containers_per_view: int = 35_000
    #: seconds a view created through the API takes to build, per 1,000 files in its scope; its queries answer 202
    #: until then (view_builds.py)
    view_build_seconds_per_1000_files: float = 0.0

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        for name in ("api_latency_ms", "api_latency_jitter_ms", "data_latency_ms", "url_lifetime", "stall_seconds"):
            if float(getattr(self, name)) < 0:
                raise ValueError(f"{name} must not be negative")
        self.bandwidth_per_conn = parse_size(self.bandwidth_per_conn)
        for name in ("max_concurrent_per_user", "max_requests_per_minute"):
            value = int(getattr(self, name))
            if value < 0:
                raise ValueError(f"{name} must not be negative")
            setattr(self, name, value)
        if self.url_lifetime <= 0:
            raise ValueError("url_lifetime must be positive")
        self.rate_window_seconds = float(self.rate_window_seconds)
        if self.rate_window_seconds <= 0:
            raise ValueError("rate_window_seconds must be positive")
        try:
            self.rate_window_mode = RateWindow(self.rate_window_mode)
        except ValueError:
            raise ValueError(f"rate_window_mode must be sliding or block, got {self.rate_window_mode!r}") from None
        self.fault_api_5xx_rate = parse_route_rates(self.fault_api_5xx_rate)
        self.fault_api_malformed_rate = parse_route_rates(self.fault_api_malformed_rate)
        if self.hostile_handle_mode not in ("md5", "size+1", "size-1"):
            raise ValueError("hostile_handle_mode must be md5, size+1 or size-1")
        self.fault_api_5xx_statuses = tuple(int(s) for s in self.fault_api_5xx_statuses)
        if not self.fault_api_5xx_statuses or any(not 500 <= s <= 599 for s in self.fault_api_5xx_statuses):
            raise ValueError("fault_api_5xx_statuses must be non-empty 5xx codes")
        for name in (
            "fault_api_429_rate",
            "fault_data_cut_rate",
            "fault_data_stall_rate",
            "fault_data_corrupt_rate",
            "hostile_handle_rate",
            "hostile_rate",
        ):
            setattr(self, name, parse_rate(getattr(self, name)))
        self.hostile_kinds = parse_kinds(self.hostile_kinds)
        self.maintenance_window = parse_window(self.maintenance_window)
        self.query_pending_polls = int(self.query_pending_polls)
        self.query_page_rows = int(self.query_page_rows)
        self.download_list_limit = int(self.download_list_limit)
        if self.download_list_limit < 1:
            raise ValueError("download_list_limit must be positive")
        self.record_exchanges = int(self.record_exchanges)
        if self.record_exchanges < 0:
            raise ValueError("record_exchanges must not be negative")
        if self.query_pending_polls < 0 or self.query_page_rows < 1:
            raise ValueError("query_pending_polls must not be negative and query_page_rows must be positive")
        self.max_containers_per_view = int(self.max_containers_per_view)
        if self.max_containers_per_view < 1:
            raise ValueError("max_containers_per_view must be positive")
        self.view_build_seconds_per_1000_files = float(self.view_build_seconds_per_1000_files)
        if self.view_build_seconds_per_1000_files < 0:
            raise ValueError("view_build_seconds_per_1000_files must not be negative")
        for name in ("external_ranges", "external_content_length", "view_lag", "uncertified_user", "deny_create"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false")
        if self.throttle_retry_after is not None:
            self.throttle_retry_after = int(self.throttle_retry_after)

    def api_5xx_rate_for(self, route_class: str) -> float:
        if isinstance(self.fault_api_5xx_rate, dict):
            return self.fault_api_5xx_rate.get(route_class, 0.0)
        return self.fault_api_5xx_rate

    def api_malformed_rate_for(self, route_class: str) -> float:
        if isinstance(self.fault_api_malformed_rate, dict):
            return self.fault_api_malformed_rate.get(route_class, 0.0)
        return self.fault_api_malformed_rate

    def hostile(self, kind: str) -> bool:
        """Whether hostile-server mode may apply ``kind`` at all (a rate above 0 and the kind chosen)."""
        return self.hostile_rate > 0 and kind in self.hostile_kinds

    def replace(self, **changes) -> Knobs:
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise TypeError(f"unknown knob(s): {', '.join(sorted(unknown))}")
        return dataclasses.replace(self, **changes)


#: ``--profile synapse``: production limits and realistic latencies.
SYNAPSE_PROFILE = dict(
    max_concurrent_per_user=3,
    max_requests_per_minute=600,
    url_lifetime=30.0,
    api_latency_ms=50.0,
    api_latency_jitter_ms=20.0,
    data_latency_ms=20.0,
)

PROFILES = {"synapse": SYNAPSE_PROFILE}


def profile_knobs(name: str) -> Dict[str, Any]:
    try:
        return dict(PROFILES[name])
    except KeyError:
        raise ValueError(f"unknown profile {name!r}; known: {', '.join(PROFILES)}") from None
