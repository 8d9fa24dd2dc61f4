"""The data plane's bandwidth limit (``--bwlimit``, ``TransferConfig.bwlimit``): rclone's rates and timetables,
and the one token bucket every body read of a process passes.

- :class:`BandwidthTimetable`: ``10M`` (10 MiB/s all the time), ``off``, or rclone's timetable
  ``"08:00,10M 18:00,off"`` (local time: the entry in force is the last one whose time has passed, wrapping to the
  previous day's last before the first) with rclone's weekday entries ``Mon-10:00,2M``.
- :class:`BandwidthLimiter`: a token bucket shared by every connection, part and file of the process. Readers ask
  :meth:`BandwidthLimiter.grant` before each read and read what they are granted. The bucket holds at most
  :func:`burst_bytes` (a tenth of a second's worth, at least 32 KiB), so no second carries more than the limit plus
  that burst; grants are pieces of a quarter of it, so a reader woken late (a loaded machine) still finds its
  piece while the bucket fills, and the long-run rate stays the limit. Waiting readers queue in order: one sleeps
  on the clock at a time, the rest wait for their turn (no thundering herd). The rate is read again from the
  timetable at every refill, so it changes at the timetable's times during a run. The clock and the sleep are
  injected (tests run it on a fake clock).
- :func:`process_limiter`: the one limiter of this process for a timetable; on a Dask cluster each worker process
  has its own, so the limit there is per worker.

No limit (``bwlimit`` unset or ``off``) builds no limiter at all: the read loop takes no lock and calls nothing.
"""

from __future__ import annotations

import bisect
import re
import threading
import time
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Callable, Deque, Dict, Optional, Tuple, Union

from synclient.errors import Cancelled, ConfigError
from synclient.units import format_rate, parse_size

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
MINUTES_PER_DAY = 24 * 60
MINUTES_PER_WEEK = 7 * MINUTES_PER_DAY
SECONDS_PER_WEEK = MINUTES_PER_WEEK * 60

#: the smallest burst: below it reads get small enough to cost more in calls than they carry
MIN_BURST = 32 * 1024
#: a waiting reader looks at its cancel event (and the timetable) at least this often
MAX_SLEEP = 0.25

_ENTRY = re.compile(r"^(?:(?P<day>[A-Za-z]{3})-)?(?P<hour>\d{1,2}):(?P<minute>\d{2}),(?P<rate>.+)$")

#: a rate in bytes per second; None: no limit
Rate = Optional[float]


def burst_bytes(rate: float) -> float:
    """What the bucket holds at most at ``rate``: 0.1 s worth, at least :data:`MIN_BURST`."""
    return max(rate / 10, MIN_BURST)


def piece_bytes(rate: float) -> int:
    """The most one grant gives at ``rate``: a quarter of the burst, so that the bucket still has room for three
    more while a granted reader is late to come back."""
    return max(1, int(burst_bytes(rate) / 4))


def _parse_rate(text: str) -> Rate:
    if ":" in text:
        raise ConfigError(f"{text!r}: one rate per entry (synclient only downloads: no UP:DOWN pair)")
    if text.strip().lower() == "off":
        return None
    try:
        rate = parse_size(text)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return float(rate) if rate > 0 else None


@dataclass(frozen=True)
class BandwidthTimetable:
    """A bandwidth limit over the week: ``starts`` (minutes into the week, Monday 00:00 = 0, ascending) and the
    rate each starts (bytes/s; None: no limit). A constant limit is one entry at minute 0. ``spec``: as given."""

    spec: str
    starts: Tuple[int, ...]
    rates: Tuple[Rate, ...]

    @classmethod
    def of(cls, value: Union[str, int, None]) -> Optional[BandwidthTimetable]:
        """``value`` read as rclone reads ``--bwlimit`` (an int: bytes per second); None when it sets no limit at
        all (None, ``off``, ``0``). Raises :class:`ConfigError` with one line on bad syntax."""
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise ConfigError(f"{value!r}: a rate such as 10M, or a timetable such as '08:00,10M 18:00,off'")
        if isinstance(value, int):
            if value < 0:
                raise ConfigError(f"{value}: a rate in bytes per second is at least 0")
            return cls(str(value), (0,), (float(value),)) if value else None
        tokens = value.split()
        if not tokens:
            raise ConfigError("empty: a rate such as 10M, or a timetable such as '08:00,10M 18:00,off'")
        if len(tokens) == 1 and "," not in tokens[0]:
            rate = _parse_rate(tokens[0])
            return None if rate is None else cls(value.strip(), (0,), (rate,))
        by_start: Dict[int, Rate] = {}
        for token in tokens:
            for start, rate in _entry(token):
                if start in by_start:
                    raise ConfigError(f"{token!r}: a second entry for the same time")
                by_start[start] = rate
        starts = tuple(sorted(by_start))
        rates = tuple(by_start[start] for start in starts)
        if all(rate is None for rate in rates):
            return None
        return cls(value.strip(), starts, rates)

    @property
    def constant(self) -> bool:
        return len(self.starts) == 1

    def rate_at(self, when: datetime) -> Rate:
        """The rate in force at local time ``when``: the last entry whose time has passed this week, else the
        week's last (Sunday's last entry is in force until Monday's first)."""
        if len(self.starts) == 1:
            return self.rates[0]
        minute = when.weekday() * MINUTES_PER_DAY + when.hour * 60 + when.minute
        return self.rates[bisect.bisect_right(self.starts, minute) - 1]  # (index -1: the week's last)

    def seconds_to_next_change(self, when: datetime) -> float:
        """Seconds from ``when`` to the next entry's start (a constant limit: never, infinity)."""
        if len(self.starts) == 1:
            return float("inf")
        minute = when.weekday() * MINUTES_PER_DAY + when.hour * 60 + when.minute
        into_week = minute * 60 + when.second + when.microsecond / 1e6
        following = bisect.bisect_right(self.starts, minute)
        start = self.starts[following] * 60 if following < len(self.starts) else self.starts[0] * 60 + SECONDS_PER_WEEK
        return start - into_week

    def seconds_to_move(self, size: int, *, start: datetime, unlimited: float) -> float:
        """How long ``size`` bytes take from local time ``start`` when each period moves them at its rate, capped by
        ``unlimited`` (bytes/s: what the link gives with no limit, which is also the rate of ``off`` periods)."""
        if size <= 0:
            return 0.0
        if self.constant:
            return size / min(self.rates[0] or unlimited, unlimited)
        week = self._bytes_per_week(unlimited)
        seconds, left = 0.0, float(size)
        if left > 2 * week:  # whole weeks at once (every week moves the same bytes)
            weeks = int(left // week) - 1
            seconds, left = weeks * SECONDS_PER_WEEK, left - weeks * week
        now = start
        while True:
            rate = min(self.rate_at(now) or unlimited, unlimited)
            span = self.seconds_to_next_change(now)
            if rate * span >= left:
                return seconds + left / rate
            seconds, left = seconds + span, left - rate * span
            now = now + timedelta(seconds=span)

    def _bytes_per_week(self, unlimited: float) -> float:
        spans = [
            later - earlier
            for earlier, later in zip(self.starts, self.starts[1:] + (self.starts[0] + MINUTES_PER_WEEK,))
        ]
        return sum(min(rate or unlimited, unlimited) * span * 60 for rate, span in zip(self.rates, spans))

    def describe(self, when: Optional[datetime] = None) -> str:
        """``2.0 MiB/s``; a timetable: its rate at ``when`` (default: now) and the spec, ``off now (timetable
        '08:00,10M 18:00,off')``."""
        rate = self.rate_at(when or datetime.now())
        shown = "off" if rate is None else format_rate(rate)
        return shown if self.constant else f"{shown} now (timetable {self.spec!r})"


def _entry(token: str) -> Tuple[Tuple[int, Rate], ...]:
    """One timetable entry's starts in the week (a daily entry: one each day) and its rate."""
    match = _ENTRY.match(token)
    if match is None:
        raise ConfigError(f"{token!r}: a timetable entry is HH:MM,RATE or Day-HH:MM,RATE (such as Mon-08:00,10M)")
    hour, minute = int(match["hour"]), int(match["minute"])
    if hour > 23 or minute > 59:
        raise ConfigError(f"{token!r}: no such time of day (00:00 to 23:59)")
    rate = _parse_rate(match["rate"])
    of_day = hour * 60 + minute
    day = match["day"]
    if day is None:
        return tuple((index * MINUTES_PER_DAY + of_day, rate) for index in range(len(DAYS)))
    if day.lower() not in DAYS:
        raise ConfigError(f"{token!r}: the day is one of Mon, Tue, Wed, Thu, Fri, Sat, Sun")
    return ((DAYS.index(day.lower()) * MINUTES_PER_DAY + of_day, rate),)


class BandwidthLimiter:
    """A token bucket shared by the threads that read bodies (see the module's docstring). Thread-safe."""

    def __init__(
        self,
        timetable: BandwidthTimetable,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        local_now: Callable[[], datetime] = datetime.now,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.timetable = timetable
        self._monotonic, self._local_now, self._sleep = monotonic, local_now, sleep
        self._lock = threading.Lock()
        self._head_taken = False  # one reader at a time takes from the bucket (and sleeps for it)
        self._turns: Deque[threading.Event] = deque()  # the others, in the order they came
        self._tokens = float("inf")  # full: the first refill caps it at the burst
        self._refilled_at = monotonic()

    def _rate(self) -> Rate:
        return self.timetable.rates[0] if self.timetable.constant else self.timetable.rate_at(self._local_now())

    def grant(self, wanted: int, *, cancelled: Optional[Callable[[], bool]] = None) -> int:
        """Wait until the bucket holds a piece of ``wanted`` bytes and take it; the bytes the caller may now read
        (at least 1, at most ``wanted``; all of it while the timetable says off). Raises :class:`Cancelled` when
        ``cancelled()`` turns true while waiting."""
        if wanted <= 0 or self._rate() is None:
            return wanted
        self._wait_for_turn(cancelled)
        try:
            return self._take(wanted, cancelled)
        finally:
            self._pass_turn()

    def _take(self, wanted: int, cancelled: Optional[Callable[[], bool]]) -> int:
        while True:
            with self._lock:
                rate = self._refill()
                if rate is None:
                    return wanted
                piece = min(wanted, piece_bytes(rate))
                if self._tokens >= piece - 1e-6:  # (float dust of the refill)
                    self._tokens -= piece
                    return piece
                wait = (piece - self._tokens) / rate
            if cancelled is not None and cancelled():
                raise Cancelled()
            self._sleep(min(wait, MAX_SLEEP))

    def _refill(self) -> Rate:
        """Add what the rate in force earned since the last refill; that rate (None: no limit now)."""
        now = self._monotonic()
        elapsed, self._refilled_at = max(0.0, now - self._refilled_at), now
        rate = self._rate()
        if rate is None:
            self._tokens = float("inf")
        else:
            self._tokens = min(self._tokens + elapsed * rate, burst_bytes(rate))
        return rate

    def _wait_for_turn(self, cancelled: Optional[Callable[[], bool]]) -> None:
        with self._lock:
            if not self._head_taken:
                self._head_taken = True
                return
            turn = threading.Event()
            self._turns.append(turn)
        while not turn.wait(MAX_SLEEP):  # (real time: the head sleeps on the clock for all of us)
            if cancelled is not None and cancelled():
                with self._lock:
                    if not turn.is_set():
                        self._turns.remove(turn)
                        raise Cancelled()
                self._pass_turn()  # handed the turn meanwhile: hand it on
                raise Cancelled()

    def _pass_turn(self) -> None:
        with self._lock:
            if self._turns:
                self._turns.popleft().set()
            else:
                self._head_taken = False


_limiters: Dict[Tuple[Tuple[int, ...], Tuple[Rate, ...]], BandwidthLimiter] = {}
_limiters_lock = threading.Lock()


def process_limiter(timetable: Optional[BandwidthTimetable]) -> Optional[BandwidthLimiter]:
    """The limiter every data plane of this process with this limit shares (runs, Dask shards on one worker);
    None for no limit."""
    if timetable is None:
        return None
    key = (timetable.starts, timetable.rates)
    with _limiters_lock:
        limiter = _limiters.get(key)
        if limiter is None:
            limiter = _limiters[key] = BandwidthLimiter(timetable)
        return limiter
