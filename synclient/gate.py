"""The one control-plane gate every REST call passes.

Synapse answers 429 above a few concurrent requests per user and above a request rate per minute, without
``Retry-After``. A client whose threads each back off on their own keeps hammering; this gate makes one 429 slow
every thread: an adaptive concurrency limit plus a shared cool-down and, once the server has complained about
frequency, a pace between request starts. The limit works like TCP congestion control: it starts at the platform's
documented 3 concurrent requests, probes one more, and while the server has never throttled it doubles (slow
start); after a 429 it halves and from then on grows by one only after a long run of successes (AIMD), so a
throttled server sees well under 1% of requests refused.
The lock is only ever held for bookkeeping, never across network I/O.
"""
from __future__ import annotations

import collections
import threading
import time
from typing import Deque, Optional


class ThrottleKind:
    CONCURRENCY = "concurrency"
    FREQUENCY = "frequency"


class AdaptiveGate:
    """Adaptive concurrency limit + shared cool-down + learned pacing for control-plane requests."""

    def __init__(self, *, initial_limit: int = 3, max_limit: int = 32, min_limit: int = 1,
                 growth_successes: int = 50, clock=time.monotonic) -> None:
        if not 1 <= min_limit <= initial_limit <= max_limit:
            raise ValueError("gate limits must satisfy 1 <= min <= initial <= max")
        self._cond = threading.Condition(threading.Lock())
        self._limit = initial_limit
        self._max_limit = max_limit
        self._min_limit = min_limit
        self._growth_successes = growth_successes
        self._in_flight = 0
        self._successes_at_limit = 0
        self._slow_start = True           # until the first 429: grow fast
        self._cool_until = 0.0
        self._min_interval = 0.0          # seconds between request starts, learned from "too frequent" 429s
        self._next_start = 0.0
        self._starts: Deque[float] = collections.deque()  # start times in the last 60 s
        self._clock = clock
        self.throttled = 0
        self.peak_in_flight = 0

    @property
    def limit(self) -> int:
        return self._limit

    @property
    def min_interval(self) -> float:
        return self._min_interval

    def acquire(self) -> None:
        with self._cond:
            while True:
                now = self._clock()
                wait = max(self._cool_until - now, self._next_start - now)
                if self._in_flight < self._limit and wait <= 0:
                    break
                self._cond.wait(timeout=wait if wait > 0 else None)
            self._in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self._in_flight)
            self._next_start = now + self._min_interval
            self._starts.append(now)
            while self._starts and self._starts[0] < now - 60.0:
                self._starts.popleft()

    def release(self, *, throttled: Optional[str] = None, retry_after: Optional[float] = None) -> None:
        """Give the slot back; ``throttled`` is a :class:`ThrottleKind` when the answer was a 429."""
        with self._cond:
            self._in_flight -= 1
            now = self._clock()
            if throttled is None:
                self._successes_at_limit += 1
                needed = self._limit if self._slow_start else self._growth_successes * self._limit
                if self._successes_at_limit >= needed:
                    self._successes_at_limit = 0
                    if self._limit < self._max_limit:
                        # slow start: one careful probe past the documented limit, then doubling
                        step = self._limit if self._slow_start and self._limit > 3 else 1
                        self._limit = min(self._max_limit, self._limit + step)
                    elif self._min_interval:
                        self._min_interval *= 0.9  # probe for a faster pace, slowly
            else:
                self.throttled += 1
                self._successes_at_limit = 0
                self._slow_start = False
                if throttled == ThrottleKind.CONCURRENCY:
                    observed = min(self._limit, self._in_flight + 1)  # in flight when the 429 was answered
                    self._limit = max(self._min_limit, observed // 2)
                else:
                    # Pace at 90% of what the server just refused, over its 60 s window.
                    recent = max(len(self._starts), 1)
                    self._min_interval = max(self._min_interval * 1.5, 60.0 / recent / 0.9)
                pause = retry_after if retry_after is not None else (1.0 if throttled == ThrottleKind.FREQUENCY
                                                                     else 0.25)
                self._cool_until = max(self._cool_until, now + pause)
            self._cond.notify_all()

    def __enter__(self) -> "AdaptiveGate":
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:  # plain success path; throttles are reported through release()
        self.release()
