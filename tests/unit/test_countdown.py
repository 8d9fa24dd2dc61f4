"""Countdown: exactly one caller, the one that reaches zero, is told to finish."""

import threading

import pytest

from synclient.transfer.countdown import Countdown


def _end_one(barrier: threading.Barrier, countdown: Countdown, results: list) -> None:
    barrier.wait()
    results.append(countdown.count_down())


@pytest.mark.parametrize("callers", [1, 2, 8, 32])
def test_exactly_one_of_many_simultaneous_callers_sees_zero(callers):
    for _ in range(20):  # rounds: the threads are released together each time, in whatever order
        countdown = Countdown(callers)
        barrier = threading.Barrier(callers)
        results = []
        threads = [threading.Thread(target=_end_one, args=(barrier, countdown, results)) for _ in range(callers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(results) == [False] * (callers - 1) + [True]
        assert countdown.remaining == 0


def test_the_extra_count_keeps_parts_from_finishing_before_the_starter():
    parts = 4
    countdown = Countdown(parts + 1)  # as a multipart download starts it
    barrier = threading.Barrier(parts)
    results = []

    def part() -> None:
        barrier.wait()
        results.append(countdown.count_down())

    threads = [threading.Thread(target=part) for _ in range(parts)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [False] * parts  # every part ended, and none was last
    assert countdown.remaining == 1
    assert countdown.count_down() is True  # the starting task's own count finishes


def test_with_nothing_but_the_extra_count_the_starter_finishes():
    countdown = Countdown(0 + 1)  # every part already on disk (a resumed download)
    assert countdown.count_down() is True


def test_counting_down_past_zero_is_a_bug_and_raises():
    countdown = Countdown(2)
    assert countdown.count_down() is False
    assert countdown.count_down() is True
    with pytest.raises(RuntimeError, match="past zero"):
        countdown.count_down()
    assert countdown.remaining == 0  # the misuse did not move it below zero


@pytest.mark.parametrize("count", [0, -1])
def test_a_countdown_starts_at_one_or_more(count):
    with pytest.raises(ValueError):
        Countdown(count)
