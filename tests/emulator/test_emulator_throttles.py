from __future__ import annotations

import threading

import pytest
from emuhelpers import Api

from synclient.emulator.faults import ThrottleGate
from synclient.emulator.knobs import Knobs, RateWindow

CONCURRENCY = "Too many concurrent requests. Allowed 3 concurrent connections at any time."


def test_the_gate_admits_exactly_the_concurrent_limit_per_user():
    gate, knobs = ThrottleGate(), Knobs(max_concurrent_per_user=3)
    answers = [gate.enter(7, knobs) for _ in range(8)]
    assert answers[:3] == [None] * 3 and answers[3:] == [CONCURRENCY] * 5
    assert gate.enter(8, knobs) is None  # another user has limits of its own
    gate.leave(7)
    assert gate.enter(7, knobs) is None and gate.enter(7, knobs) == CONCURRENCY


def test_concurrency_limit_answers_429_with_synapse_reason(emulator_factory):
    # Over HTTP: all eight calls are released together and each admitted one is held 1 s, so the other five
    # meet the limit unless a thread is held up for a whole second (the gate's exact count is tested above)
    emu = emulator_factory(max_concurrent_per_user=3, api_latency_ms=1000)
    statuses, reasons, lock = [], [], threading.Lock()
    start = threading.Barrier(8)

    def call():
        api = Api(emu)
        start.wait()
        answer = api.get("/repo/v1/userProfile")
        with lock:
            statuses.append(answer.status_code)
            if answer.status_code == 429:
                reasons.append(answer.json()["reason"])
                assert "Retry-After" not in answer.headers  # like real Synapse

    threads = [threading.Thread(target=call) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(statuses) == 8
    assert statuses.count(200) >= 1 and statuses.count(200) <= 3
    assert statuses.count(429) >= 5
    assert set(reasons) == {CONCURRENCY}
    stats = emu.stats()
    assert stats["throttled_429"] == statuses.count(429)
    assert 1 <= stats["peak_api_concurrency"] <= 8


def test_frequency_limit_and_retry_after(emulator_factory):
    emu = emulator_factory(max_requests_per_minute=5, throttle_retry_after=7)
    api = Api(emu)
    statuses = [api.get("/repo/v1/userProfile").status_code for _ in range(5)]
    assert statuses == [200] * 5
    answer = api.get("/repo/v1/userProfile")
    assert answer.status_code == 429
    assert answer.json()["reason"] == "Requests are too frequent. Allowed 5 requests every 60 seconds."
    assert answer.headers["Retry-After"] == "7"
    emu.set_knobs(max_requests_per_minute=0)
    assert api.get("/repo/v1/userProfile").status_code == 200


def test_admin_routes_are_not_throttled_or_counted(emulator_factory):
    emu = emulator_factory(max_requests_per_minute=1)
    api = Api(emu, token=False)
    for _ in range(3):
        assert api.get("/emulator/stats").status_code == 200
    assert emu.stats()["api_requests"] == 0


def test_the_rate_window_slides_over_its_configured_length_and_the_text_says_it():
    now = [100.0]
    gate = ThrottleGate(clock=lambda: now[0])
    knobs = Knobs(max_requests_per_minute=3, rate_window_seconds=6)
    for _ in range(3):
        assert gate.enter(7, knobs) is None
        gate.leave(7)
        now[0] += 1.0
    # starts at 100, 101, 102; at 103 the window (97, 103] is full
    assert gate.enter(7, knobs) == "Requests are too frequent. Allowed 3 requests every 6 seconds."
    assert gate.enter(8, knobs) is None  # per user
    gate.leave(8)
    now[0] = 106.0  # the start at 100 has left the window; refusals were not counted
    assert gate.enter(7, knobs) is None
    gate.leave(7)
    assert gate.enter(7, knobs) is not None
    now[0] = 107.0
    assert gate.enter(7, knobs) is None


def test_in_block_mode_the_window_is_synapses_fixed_block_from_the_first_request():
    now = [100.0]
    gate = ThrottleGate(clock=lambda: now[0])
    knobs = Knobs(max_requests_per_minute=2, rate_window_seconds=10, rate_window_mode="block")
    assert knobs.rate_window_mode is RateWindow.BLOCK
    for at in (100.0, 109.0):  # the block opened at 100 holds two
        now[0] = at
        assert gate.enter(7, knobs) is None
        gate.leave(7)
    now[0] = 109.5
    assert gate.enter(7, knobs) is not None
    now[0] = 110.0  # the block ended: a new one opens here, though the start at 109 is 1 s old (sliding refuses)
    assert gate.enter(7, knobs) is None
    gate.leave(7)
    assert gate.enter(7, knobs) is None
    gate.leave(7)
    assert gate.enter(7, knobs) is not None


def test_an_unknown_rate_window_mode_is_refused():
    with pytest.raises(ValueError, match="sliding or block"):
        Knobs(rate_window_mode="leaky")
