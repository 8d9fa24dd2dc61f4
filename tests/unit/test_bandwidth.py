"""The bandwidth limit (synclient/transfer/bandwidth.py) on a fake clock: rclone's syntax, the rate over every
second, the long-run rate, threads sharing one limit, a timetable changing the rate at its minute."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta
from typing import List, Tuple

import pytest

from synclient.errors import Cancelled, ConfigError
from synclient.transfer.bandwidth import (
    BandwidthLimiter,
    BandwidthTimetable,
    burst_bytes,
    piece_bytes,
    process_limiter,
)
from synclient.transfer.config import TransferConfig
from synclient.units import parse_size

KiB, MiB = 1024, 1024 * 1024
MONDAY = datetime(2026, 11, 23)  # a Monday, 00:00 local time


class FakeClock:
    """Time passes only when the limiter sleeps (one reader sleeps at a time: the others wait for their turn)."""

    def __init__(self, start: datetime = MONDAY) -> None:
        self.start, self.now = start, 0.0
        self._lock = threading.Lock()

    def monotonic(self) -> float:
        with self._lock:
            return self.now

    def local_now(self) -> datetime:
        return self.start + timedelta(seconds=self.monotonic())

    def sleep(self, seconds: float) -> None:
        assert seconds > 0
        with self._lock:
            self.now += seconds

    def limiter(self, spec: str) -> BandwidthLimiter:
        timetable = BandwidthTimetable.of(spec)
        assert timetable is not None
        return BandwidthLimiter(timetable, monotonic=self.monotonic, local_now=self.local_now, sleep=self.sleep)


Grants = List[Tuple[float, int]]  # (time granted, bytes)


def read(clock: FakeClock, limiter: BandwidthLimiter, total: int, *, chunk: int = 1 * MiB, grants: Grants) -> None:
    """A reader's loop: a chunk at a time, as the body pump asks."""
    while total > 0:
        granted = limiter.grant(min(chunk, total))
        assert 1 <= granted <= min(chunk, total)
        grants.append((clock.monotonic(), granted))
        total -= granted


def worst_window(grants: Grants, window: float = 1.0) -> int:
    """The most bytes granted within any ``window`` seconds (each window starting at a grant)."""
    return max(sum(size for time, size in grants if start <= time < start + window) for start, _ in grants)


# -- parsing ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [("10M", 10 * MiB), ("512k", 512 * KiB), ("1.5G", int(1.5 * 1024 * MiB)), ("100", 100 * KiB), ("2MiB", 2 * MiB)],
)
def test_a_rate_is_rclones_binary_size_per_second(text, expected):
    timetable = BandwidthTimetable.of(text)
    assert timetable is not None and timetable.constant and timetable.rates == (float(expected),)
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["off", "OFF", "0", "0k", "00:00,off 12:00,0"])
def test_off_and_zero_set_no_limit(text):
    assert BandwidthTimetable.of(text) is None
    assert TransferConfig(bwlimit=text).bandwidth_timetable() is None


def test_an_int_is_bytes_per_second_and_no_limit_builds_no_limiter():
    timetable = TransferConfig(bwlimit=3000).bandwidth_timetable()
    assert timetable is not None and timetable.rates == (3000.0,)
    assert TransferConfig().bandwidth_timetable() is None
    assert process_limiter(None) is None


def test_one_limiter_per_process_and_limit():
    first, second = BandwidthTimetable.of("7M"), BandwidthTimetable.of("7168k")
    assert process_limiter(first) is process_limiter(second)  # (the same limit, however written)
    assert process_limiter(BandwidthTimetable.of("6M")) is not process_limiter(first)


@pytest.mark.parametrize(
    "text, says",
    [
        ("", "empty"),
        ("10X", "not a size"),
        ("-5M", "not a size"),
        ("10M:1M", "UP:DOWN"),
        ("08:00,10M 18:00", "HH:MM,RATE"),
        ("8h,10M", "HH:MM,RATE"),
        ("25:00,1M", "no such time"),
        ("08:60,1M", "no such time"),
        ("Mox-08:00,1M", "the day is one of"),
        ("08:00,1M 08:00,2M", "same time"),
        ("08:00,fast", "not a size"),
    ],
)
def test_bad_syntax_is_one_line(text, says):
    with pytest.raises(ConfigError) as raised:
        TransferConfig(bwlimit=text)
    message = str(raised.value)
    assert says in message and "\n" not in message and message.startswith("bwlimit ")


def test_the_entry_in_force_is_the_last_passed_wrapping_to_the_day_before():
    timetable = BandwidthTimetable.of("08:00,10M 18:00,off")
    assert timetable is not None
    monday = MONDAY
    assert timetable.rate_at(monday.replace(hour=7, minute=59)) is None  # yesterday's 18:00 entry
    assert timetable.rate_at(monday.replace(hour=8)) == 10 * MiB
    assert timetable.rate_at(monday.replace(hour=17, minute=59, second=59)) == 10 * MiB
    assert timetable.rate_at(monday.replace(hour=18)) is None
    assert timetable.seconds_to_next_change(monday.replace(hour=7, minute=59, second=30)) == 30.0
    assert timetable.seconds_to_next_change(monday.replace(hour=19)) == 13 * 3600


def test_weekday_entries_wrap_over_the_week():
    timetable = BandwidthTimetable.of("Mon-08:00,1M Fri-18:00,4M Sun-20:00,off")
    assert timetable is not None and not timetable.constant
    assert timetable.rate_at(MONDAY.replace(hour=7)) is None  # Sunday 20:00's
    assert timetable.rate_at(MONDAY + timedelta(days=3, hours=12)) == 1 * MiB  # Thursday
    assert timetable.rate_at(MONDAY + timedelta(days=5)) == 4 * MiB  # Saturday
    # a daily entry applies every day, beside the weekday ones
    mixed = BandwidthTimetable.of("Sat-10:00,1M 12:00,2M")
    assert mixed is not None and mixed.rate_at(MONDAY + timedelta(days=5, hours=11)) == 1 * MiB
    assert mixed.rate_at(MONDAY + timedelta(days=5, hours=9)) == 2 * MiB  # Friday 12:00's


def test_the_time_planned_bytes_take_follows_the_timetable():
    constant = BandwidthTimetable.of("2M")
    assert constant is not None
    assert constant.seconds_to_move(20 * MiB, start=MONDAY, unlimited=1e12) == 10.0
    assert constant.seconds_to_move(20 * MiB, start=MONDAY, unlimited=1 * MiB) == 20.0  # the link is slower
    timetable = BandwidthTimetable.of("00:00,1M 00:01,off")
    assert timetable is not None
    # 30 MiB from 23:59:30 Sunday... Monday 00:00:00: 60 s at 1 MiB/s, then off (the link's 10 MiB/s)
    assert timetable.seconds_to_move(30 * MiB, start=MONDAY, unlimited=10 * MiB) == 30.0
    assert timetable.seconds_to_move(70 * MiB, start=MONDAY, unlimited=10 * MiB) == 61.0
    week = timetable.seconds_to_move(10**13, start=MONDAY, unlimited=10 * MiB)  # weeks at once, then the rest
    assert 10**13 / (10 * MiB) < week < 10**13 / (10 * MiB) * 1.001


# -- the bucket -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec, rate", [("2M", 2 * MiB), ("10M", 10 * MiB), ("100k", 100 * KiB), ("1k", 1 * KiB)])
def test_no_second_carries_more_than_the_limit_and_the_burst_and_the_long_run_is_the_limit(spec, rate):
    clock = FakeClock()
    limiter = clock.limiter(spec)
    grants: Grants = []
    seconds = 12
    read(clock, limiter, int(burst_bytes(rate) + rate * seconds), grants=grants)
    assert worst_window(grants) <= rate + burst_bytes(rate)
    assert max(size for _, size in grants) <= piece_bytes(rate)  # (a limit below one chunk a second: pieces)
    # the bytes beyond the first burst took exactly the limit's time
    assert clock.now == pytest.approx(seconds, abs=1 / rate)


def test_threads_share_one_limit():
    clock = FakeClock()
    limiter = clock.limiter("1M")
    grants: Grants = []
    lock = threading.Lock()
    each = 3 * MiB

    def reader() -> None:
        mine: Grants = []
        read(clock, limiter, each, chunk=256 * KiB, grants=mine)
        with lock:
            grants.extend(mine)

    threads = [threading.Thread(target=reader) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(size for _, size in grants) == 6 * each
    assert worst_window(grants) <= MiB + burst_bytes(MiB)
    assert clock.now == pytest.approx((6 * each - burst_bytes(MiB)) / MiB, rel=1e-6)  # 18 s, not 3


def test_a_timetable_change_mid_run_changes_the_rate_at_its_minute():
    clock = FakeClock(start=MONDAY.replace(hour=9, minute=59, second=50))
    limiter = clock.limiter("09:00,1M 10:00,4M 10:01,off")
    grants: Grants = []
    read(clock, limiter, 10 * MiB + 60 * 4 * MiB + 5 * MiB, grants=grants)

    def carried(start: float, end: float) -> int:
        return sum(size for time, size in grants if start <= time < end)

    # 10 s at 1 MiB/s before 10:00, 4 MiB/s from 10:00 to 10:01 (each second within a piece), then no limit
    for second in range(1, 9):
        assert abs(carried(second, second + 1) - 1 * MiB) <= piece_bytes(MiB)
    for second in range(11, 69):
        assert abs(carried(second, second + 1) - 4 * MiB) <= piece_bytes(4 * MiB)
    assert carried(70.0, 71.0) > 4 * MiB  # off: what was left came at once
    assert clock.now < 70.25


def test_a_waiting_reader_stops_when_cancelled():
    clock = FakeClock()
    limiter = clock.limiter("32k")
    for _ in range(4):
        assert limiter.grant(8 * KiB) == 8 * KiB  # the first burst (32 KiB), at once
    assert clock.now == 0
    with pytest.raises(Cancelled):
        limiter.grant(8 * KiB, cancelled=lambda: True)
    # the turn was handed on: the next reader is served once the bucket holds its piece
    assert limiter.grant(8 * KiB) == 8 * KiB
    assert clock.now == pytest.approx(0.25)


def test_a_queued_reader_stops_when_cancelled_and_leaves_the_queue():
    clock = FakeClock()
    limiter = clock.limiter("32k")
    for _ in range(4):
        limiter.grant(8 * KiB)  # (the bucket is empty now)
    head_sleeping, release = threading.Event(), threading.Event()

    def held_sleep(seconds: float) -> None:  # the head sleeps until the test lets it go
        head_sleeping.set()
        release.wait()
        clock.sleep(seconds)

    limiter._sleep = held_sleep
    head = threading.Thread(target=limiter.grant, args=(8 * KiB,))
    head.start()
    assert head_sleeping.wait(10)
    with pytest.raises(Cancelled):
        limiter.grant(8 * KiB, cancelled=lambda: True)  # queued behind the head, then cancelled
    release.set()
    head.join()
    limiter._sleep = clock.sleep
    assert limiter.grant(8 * KiB) == 8 * KiB  # nobody left waiting in the queue for a turn that never comes


class _GrantsThree:
    def __init__(self) -> None:
        self.asked: List[int] = []

    def grant(self, wanted: int, *, cancelled=None) -> int:
        self.asked.append(wanted)
        return min(wanted, 3)


def test_the_body_pump_reads_what_the_limiter_granted():
    from synclient.transfer.http import DataClient, _pump

    class _Bytes:
        def read(self, amount, decode_content=False):
            return b"x" * amount

    limiter = _GrantsThree()
    received: List[Tuple[int, int]] = []
    end = _pump(
        _Bytes(),
        0,
        20,
        sink=lambda offset, data: received.append((offset, len(data))),
        chunk_size=8,
        cancelled=lambda: False,
        where="https://s/x",
        limiter=limiter,  # type: ignore[arg-type]
    )
    assert end == 20 and all(size <= 3 for _, size in received) and sum(size for _, size in received) == 20
    assert limiter.asked[0] == 8 and limiter.asked[-1] == 2  # a chunk asked, the body's rest at its end
    assert DataClient(2).limiter is None  # no limit: nothing in the read loop
