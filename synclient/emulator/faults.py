"""Seeded fault decisions and the per-user throttle gate.

Decisions come from one ``random.Random(fault_seed)`` so a run with the same seed and the same
request order injects the same faults.
"""
from __future__ import annotations

import enum
import random
import threading
import time
from collections import defaultdict, deque
from typing import Deque, Dict, Optional

from .knobs import Knobs

CONCURRENCY_REASON = "Too many concurrent requests. Allowed {limit} concurrent connections at any time."
FREQUENCY_REASON = "Requests are too frequent. Allowed {limit} requests every 60 seconds."
MAINTENANCE_REASON = "Synapse is down for maintenance."


class DataFault(enum.Enum):
    NONE = "none"
    CUT = "cut"        # body cut mid-stream: connection closed before Content-Length bytes
    STALL = "stall"    # headers sent, then silence


class FaultPlan:
    def __init__(self, seed: int) -> None:
        self._lock = threading.Lock()
        self.reseed(seed)
        self.started_at = time.monotonic()

    def reseed(self, seed: int) -> None:
        with self._lock:
            self._random = random.Random(seed)

    def _chance(self, rate: float) -> bool:
        if rate <= 0:
            return False
        with self._lock:
            return self._random.random() < rate

    def api_5xx(self, knobs: Knobs, route_class: str) -> Optional[int]:
        if not self._chance(knobs.api_5xx_rate_for(route_class)):
            return None
        with self._lock:
            return self._random.choice(knobs.fault_api_5xx_statuses)

    def api_429(self, knobs: Knobs) -> bool:
        return self._chance(knobs.fault_api_429_rate)

    def data_fault(self, knobs: Knobs) -> DataFault:
        if self._chance(knobs.fault_data_cut_rate):
            return DataFault.CUT
        if self._chance(knobs.fault_data_stall_rate):
            return DataFault.STALL
        return DataFault.NONE

    def cut_fraction(self) -> float:
        """How far into the body a cut happens (somewhere in the first 90%)."""
        with self._lock:
            return self._random.uniform(0.0, 0.9)

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
    """Synapse's per-user limits: concurrent requests and requests per 60 s, answered with 429."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._in_flight: Dict[int, int] = defaultdict(int)
        self._recent: Dict[int, Deque[float]] = defaultdict(deque)

    def enter(self, user_id: int, knobs: Knobs) -> Optional[str]:
        """Admit the request (returns None; call ``leave`` later) or return the 429 reason."""
        now = time.monotonic()
        with self._lock:
            if knobs.max_requests_per_minute:
                recent = self._recent[user_id]
                while recent and recent[0] <= now - 60.0:
                    recent.popleft()
                if len(recent) >= knobs.max_requests_per_minute:
                    return FREQUENCY_REASON.format(limit=knobs.max_requests_per_minute)
            if knobs.max_concurrent_per_user and self._in_flight[user_id] >= knobs.max_concurrent_per_user:
                return CONCURRENCY_REASON.format(limit=knobs.max_concurrent_per_user)
            if knobs.max_requests_per_minute:
                self._recent[user_id].append(now)
            self._in_flight[user_id] += 1
            return None

    def leave(self, user_id: int) -> None:
        with self._lock:
            self._in_flight[user_id] -= 1

    def reset(self) -> None:
        with self._lock:
            self._recent.clear()
