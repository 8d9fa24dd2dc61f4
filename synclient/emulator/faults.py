"""Seeded fault decisions and the per-user throttle gate.

Decisions come from one ``random.Random(fault_seed)`` so a run with the same seed and the same
request order injects the same faults.
"""

from __future__ import annotations

import enum
import hashlib
import random
import threading
import time
from collections import defaultdict, deque
from typing import Callable, Deque, Dict, Optional, Tuple

from .knobs import Knobs, RateWindow

CONCURRENCY_REASON = "Too many concurrent requests. Allowed {limit} concurrent connections at any time."
FREQUENCY_REASON = "Requests are too frequent. Allowed {limit} requests every {seconds:g} seconds."
MAINTENANCE_REASON = "Synapse is down for maintenance."


class DataFault(enum.Enum):
    NONE = "none"
    CUT = "cut"  # body cut mid-stream: connection closed before Content-Length bytes
    STALL = "stall"  # headers sent, then silence


class FaultPlan:
    """Fault decisions that depend only on (fault_seed, request identity, how often it was seen).

    Hashing instead of drawing from one shared random stream keeps a run reproducible even
    though concurrent clients reach the server in a different order every time.
    """

    def __init__(self, seed: int) -> None:
        self._lock = threading.Lock()
        self.reseed(seed)
        self.started_at = time.monotonic()

    def reseed(self, seed: int) -> None:
        with self._lock:
            self._seed = seed
            self._seen: Dict[Tuple[str, str], int] = defaultdict(int)
            self._random = random.Random(seed)

    def _draw(self, kind: str, key: str) -> Tuple[float, float]:
        """Two independent uniforms in [0, 1) for this occurrence of (kind, key)."""
        with self._lock:
            occurrence = self._seen[(kind, key)]
            self._seen[(kind, key)] = occurrence + 1
            seed = self._seed
        digest = hashlib.sha256(f"{seed}|{kind}|{key}|{occurrence}".encode("utf-8", "replace")).digest()
        return (int.from_bytes(digest[:8], "big") / 2.0**64, int.from_bytes(digest[8:16], "big") / 2.0**64)

    def api_5xx(self, knobs: Knobs, route_class: str, request_key: str) -> Optional[int]:
        rate = knobs.api_5xx_rate_for(route_class)
        if rate <= 0:
            return None
        chance, pick = self._draw("5xx", request_key)
        if chance >= rate:
            return None
        statuses = knobs.fault_api_5xx_statuses
        return statuses[int(pick * len(statuses))]

    def api_malformed(self, knobs: Knobs, route_class: str, request_key: str) -> Optional[float]:
        """None, or the pick (in [0, 1)) choosing how a 2xx JSON answer is garbled (see hostile.py)."""
        rate = knobs.api_malformed_rate_for(route_class)
        if rate <= 0:
            return None
        chance, pick = self._draw("malformed", request_key)
        return pick if chance < rate else None

    def data_corrupt(self, knobs: Knobs, request_key: str) -> Optional[float]:
        """None, or the pick (in [0, 1)) choosing which byte of this data body is flipped."""
        if knobs.fault_data_corrupt_rate <= 0:
            return None
        chance, pick = self._draw("corrupt", request_key)
        return pick if chance < knobs.fault_data_corrupt_rate else None

    def api_429(self, knobs: Knobs, request_key: str) -> bool:
        return knobs.fault_api_429_rate > 0 and self._draw("429", request_key)[0] < knobs.fault_api_429_rate

    def data_fault(self, knobs: Knobs, request_key: str) -> Tuple[DataFault, float]:
        """The fault for this data request and, for a cut, the fraction of the body sent first."""
        if knobs.fault_data_cut_rate <= 0 and knobs.fault_data_stall_rate <= 0:
            return DataFault.NONE, 1.0
        chance, fraction = self._draw("data", request_key)
        if chance < knobs.fault_data_cut_rate:
            return DataFault.CUT, fraction * 0.9  # somewhere in the first 90% of the body
        if chance < knobs.fault_data_cut_rate + knobs.fault_data_stall_rate:
            return DataFault.STALL, 0.0
        return DataFault.NONE, 1.0

    def jitter(self, spread_ms: float) -> float:
        if spread_ms <= 0:
            return 0.0
        with self._lock:
            return self._random.uniform(-spread_ms, spread_ms)

    def in_maintenance(self, knobs: Knobs) -> bool:
        if knobs.maintenance_window is None:
            return False
        start, seconds = knobs.maintenance_window
        elapsed = time.monotonic() - self.started_at
        return start <= elapsed < start + seconds


class ThrottleGate:
    """Synapse's per-user limits: concurrent requests and requests per window (60 s), answered with 429.

    The window slides by default; the real service counts in fixed time blocks that start at a user's first
    request after the last block ended (``MemoryTimeBlockCountingSemaphoreImpl``; knob ``rate_window_mode``). A
    sliding window is the stricter of the two (every block is one of its windows), so a client that rides it rides
    Synapse's. Refused requests are not counted, as there.
    """

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._in_flight: Dict[int, int] = defaultdict(int)
        self._recent: Dict[int, Deque[float]] = defaultdict(deque)
        self._blocks: Dict[int, Tuple[float, int]] = {}  # user -> (block start, admitted in it)

    def enter(self, user_id: int, knobs: Knobs) -> Optional[str]:
        """Admit the request (returns None; call ``leave`` later) or return the 429 reason."""
        now = self._clock()
        with self._lock:
            if knobs.max_requests_per_minute and self._window_full(user_id, now, knobs):
                return FREQUENCY_REASON.format(limit=knobs.max_requests_per_minute, seconds=knobs.rate_window_seconds)
            if knobs.max_concurrent_per_user and self._in_flight[user_id] >= knobs.max_concurrent_per_user:
                return CONCURRENCY_REASON.format(limit=knobs.max_concurrent_per_user)
            if knobs.max_requests_per_minute:
                if knobs.rate_window_mode is RateWindow.BLOCK:
                    start, count = self._blocks[user_id]
                    self._blocks[user_id] = (start, count + 1)
                else:
                    self._recent[user_id].append(now)
            self._in_flight[user_id] += 1
            return None

    def _window_full(self, user_id: int, now: float, knobs: Knobs) -> bool:
        if knobs.rate_window_mode is RateWindow.BLOCK:
            start, count = self._blocks.get(user_id, (now, 0))
            if now >= start + knobs.rate_window_seconds:
                start, count = now, 0  # the last block ended: this request opens a new one
            self._blocks[user_id] = (start, count)
            return count >= knobs.max_requests_per_minute
        recent = self._recent[user_id]
        while recent and recent[0] <= now - knobs.rate_window_seconds:
            recent.popleft()
        return len(recent) >= knobs.max_requests_per_minute

    def leave(self, user_id: int) -> None:
        with self._lock:
            self._in_flight[user_id] -= 1

    def reset(self) -> None:
        with self._lock:
            self._recent.clear()
            self._blocks.clear()
