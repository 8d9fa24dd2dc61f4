"""The control-plane gate's decisions (``ThrottlePolicy``, fake clock) and its thread wrapper (``AdaptiveGate``).

The long-run behaviour against a simulated server is in ``test_gate_simulation.py``.
"""

import collections
import logging
import math
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from synclient.errors import CallCancelledError
from synclient.platform.gate import (
    MAX_COOL_DOWN,
    MAX_WINDOW_SECONDS,
    AdaptiveGate,
    Throttle,
    ThrottleKind,
    ThrottlePolicy,
    Ticket,
    shared_gate,
)

SYNAPSE_CONCURRENCY = "Too many concurrent requests. Allowed 3 concurrent connections at any time."
SYNAPSE_FREQUENCY = "Requests are too frequent. Allowed 600 requests every 60 seconds."


def concurrency(allowed=None, retry_after=None):
    return Throttle(ThrottleKind.CONCURRENCY, allowed=allowed, retry_after=retry_after)


def frequency(allowed=600, window=60.0, retry_after=None):
    return Throttle(ThrottleKind.FREQUENCY, allowed=allowed, window_seconds=window, retry_after=retry_after)


def run_successes(policy, count, now=0.0, step=0.0):
    for _ in range(count):
        ticket = policy.on_start(now)
        policy.on_finish(ticket, now)
        now += step
    return now


# -- what a 429 says ----------------------------------------------------------------------------------------------


def test_the_throttle_texts_of_synapse_are_read_with_their_sizes():
    assert Throttle.from_reason(SYNAPSE_CONCURRENCY) == Throttle(ThrottleKind.CONCURRENCY, allowed=3)
    assert Throttle.from_reason(SYNAPSE_FREQUENCY, retry_after=2.0) == Throttle(
        ThrottleKind.FREQUENCY, allowed=600, window_seconds=60.0, retry_after=2.0
    )
    assert Throttle.from_reason("Requests are too frequent.") == Throttle(ThrottleKind.FREQUENCY)
    assert Throttle.from_reason(None) == Throttle(ThrottleKind.CONCURRENCY)
    assert Throttle.from_reason("Allowed 100 requests every 6 seconds").window_seconds == 6.0


# -- concurrency --------------------------------------------------------------------------------------------------


def test_slow_start_probes_one_past_three_then_doubles_until_the_first_429():
    policy = ThrottlePolicy(max_limit=32)
    seen = []
    for _ in range(40):
        run_successes(policy, 1)
        seen.append(policy.limit)
    assert sorted(set(seen)) == [3, 4, 8, 16, 32]


def test_a_refusal_stating_the_limit_we_exceeded_sets_it_exactly_without_penalty():
    policy = ThrottlePolicy(max_limit=32)
    run_successes(policy, 3)
    assert policy.limit == 4  # the probe
    tickets = [policy.on_start(0.0) for _ in range(4)]
    policy.on_finish(tickets[3], 0.1, concurrency(allowed=3))
    assert (policy.limit, policy.ceiling) == (3, 3)
    run_successes(policy, 10_000)
    assert policy.limit == 3  # never probes past what the server stated


def test_a_refusal_within_the_stated_limit_halves_once_per_round_and_grows_back_to_the_stated_limit():
    policy = ThrottlePolicy(initial_limit=3, max_limit=32, growth_successes=5)
    probe = [policy.on_start(0.0) for _ in range(4)]
    policy.on_finish(probe[0], 0.0, concurrency(allowed=3))  # learn the ceiling
    for ticket in probe[1:]:
        policy.on_finish(ticket, 0.0)
    assert policy.limit == 3 and policy.ceiling == 3
    # another process holds slots: two of ours refused with 2 in flight; both started before the first cut
    first, second = policy.on_start(1.0), policy.on_start(1.0)
    policy.on_finish(first, 1.1, concurrency(allowed=3))
    assert policy.limit == 1
    policy.on_finish(second, 1.1, concurrency(allowed=3))
    assert policy.limit == 1  # the same round: not cut again
    # growing back to where the refusal came (2 in flight) and past it: five times the usual run of successes
    run_successes(policy, 24, now=2.0)
    assert policy.limit == 1
    run_successes(policy, 1, now=2.0)
    assert policy.limit == 2
    run_successes(policy, 50, now=3.0)
    assert policy.limit == 3
    run_successes(policy, 1000, now=4.0)
    assert policy.limit == 3


def test_an_unstated_concurrency_limit_is_found_by_halving_and_additive_growth():
    policy = ThrottlePolicy(initial_limit=8, max_limit=32, growth_successes=5)
    tickets = [policy.on_start(0.0) for _ in range(8)]
    policy.on_finish(tickets[0], 0.1, concurrency())
    assert policy.limit == 4
    policy.on_finish(tickets[1], 0.1, concurrency())  # in flight before the cut
    assert policy.limit == 4
    later = policy.on_start(0.2)
    policy.on_finish(later, 0.3, concurrency())  # a fresh refusal, 7 in flight: min(limit 4, 7) // 2
    assert policy.limit == 2


# -- frequency ----------------------------------------------------------------------------------------------------


def test_the_first_frequency_refusal_teaches_the_window_and_no_start_exceeds_it():
    policy = ThrottlePolicy(initial_limit=3, max_limit=3)
    now = run_successes(policy, 600, now=0.0, step=0.01)  # 600 starts in 6 s
    refused = policy.on_start(now)
    policy.on_finish(refused, now + 0.05, frequency())
    assert policy.budget == 594 and policy.budget_ceiling == 594 and policy.window_seconds == 60.0
    # the 600 starts are at 0.00 .. 5.99; the budget allows a start once all but 593 left the counted window
    delay = policy.start_delay(now + 0.05)
    assert delay == pytest.approx(0.06 + 60.6 - (now + 0.05))
    assert policy.start_delay(0.07 + 60.6) == 0.0


def test_an_unstated_window_size_is_learned_from_the_starts_it_admitted():
    policy = ThrottlePolicy(initial_limit=3, max_limit=3)
    now = run_successes(policy, 400, now=0.0, step=0.05)
    in_flight = [policy.on_start(now) for _ in range(2)]
    policy.on_finish(in_flight[0], now + 0.05, Throttle(ThrottleKind.FREQUENCY))
    # 401 admitted starts in the window, one other still in flight: 400, less the 1% reserve
    assert policy.budget == 396 and policy.window_seconds == 60.0
    policy.on_finish(in_flight[1], now + 0.06, Throttle(ThrottleKind.FREQUENCY))
    assert policy.budget == 396  # started before the lesson: no second cut


def drive_greedy(policy, now, starts):
    """Start ``starts`` requests as soon as the policy lets them, each answered at once; returns the budgets seen."""
    budgets = []
    while len(budgets) < starts:
        delay = policy.start_delay(now)
        if delay:
            now += delay
            continue
        policy.on_finish(policy.on_start(now), now)
        budgets.append(policy.budget)
        now += 0.001
    return budgets


def test_a_refusal_within_a_stated_budget_takes_what_was_left_and_clean_windows_regain_the_size():
    policy = ThrottlePolicy(initial_limit=3, max_limit=3)
    policy.on_finish(policy.on_start(0.0), 0.0, frequency(allowed=100, window=10.0))
    assert policy.budget == 99
    run_successes(policy, 60, now=1.0, step=0.01)
    # another process of the user took the rest of the window: the server refused after 60 of ours
    policy.on_finish(policy.on_start(2.0), 2.0, frequency(allowed=100, window=10.0))
    assert policy.budget == 59
    budgets = drive_greedy(policy, 2.0, 2000)
    assert budgets[-1] == 99 and budgets == sorted(budgets)
    assert set(budgets) == {59, 69, 79, 89, 99}  # a tenth of the size per clean window


def test_an_unstated_budget_doubles_per_clean_window_and_each_refusal_measures_it_again():
    policy = ThrottlePolicy(initial_limit=3, max_limit=3)
    run_successes(policy, 200, now=0.0, step=0.01)
    policy.on_finish(policy.on_start(2.0), 2.0, Throttle(ThrottleKind.FREQUENCY))
    assert policy.budget == 198
    run_successes(policy, 10, now=70.0)  # the next window
    policy.on_finish(policy.on_start(70.0), 70.0, Throttle(ThrottleKind.FREQUENCY))
    assert policy.budget == 9  # refused after 10 in the window: another client took the rest
    budgets = drive_greedy(policy, 70.0, 1000)
    assert sorted(set(budgets)) == [9, 18, 36, 72, 144, 288, 576]


def test_an_absurd_stated_window_is_capped():
    policy = ThrottlePolicy()
    policy.on_finish(policy.on_start(0.0), 0.0, Throttle.from_reason("Allowed 1 requests every 99999999 seconds"))
    assert policy.window_seconds == MAX_WINDOW_SECONDS
    assert Throttle.from_reason("Allowed 0 concurrent connections").allowed == 0
    policy.on_finish(policy.on_start(1.0), 1.0, Throttle.from_reason("Allowed 0 concurrent connections"))
    assert policy.limit >= 1  # a stated 0 is no size: treated as unstated


def test_retry_after_holds_every_start_back_but_never_beyond_the_cap():
    policy = ThrottlePolicy()
    policy.on_finish(policy.on_start(0.0), 0.0, concurrency(allowed=3, retry_after=5.0))
    assert policy.start_delay(1.0) == pytest.approx(4.0)
    assert policy.start_delay(5.0) == 0.0
    policy.on_finish(policy.on_start(5.0), 5.0, concurrency(allowed=3, retry_after=10_000.0))
    assert policy.start_delay(5.0) == pytest.approx(MAX_COOL_DOWN)


refusals = st.lists(
    st.tuples(
        st.sampled_from(["ok", "conc", "conc-stated", "freq", "freq-unstated", "retry"]),
        st.floats(min_value=0.0, max_value=30.0),
    ),
    max_size=60,
)


@settings(max_examples=40, deadline=None)
@given(refusals)
def test_from_any_history_of_refusals_the_gate_returns_to_full_speed(history):
    """Stability: no sequence of answers leaves the gate in a state it cannot leave; after a quiet spell it is
    back at the stated limits within a bounded time (about ten windows, plus the longest cool-down)."""
    policy = ThrottlePolicy(initial_limit=3, max_limit=16, growth_successes=5)
    now = 0.0
    throttles = {
        "ok": None,
        "conc": concurrency(),
        "conc-stated": concurrency(allowed=3),
        "freq": frequency(),
        "freq-unstated": Throttle(ThrottleKind.FREQUENCY),
        "retry": concurrency(retry_after=30.0),
    }
    for answer, gap in history:
        now += gap
        policy.on_finish(policy.on_start(now), now, throttles[answer])
        assert 1 <= policy.limit <= policy.ceiling
        assert policy.budget is None or 1 <= policy.budget <= (policy.budget_ceiling or policy.budget)
    # a clean server from here on: greedy demand, each answer 50 ms after its start
    deadline = now + MAX_COOL_DOWN + 16 * policy.counted_window
    in_flight = collections.deque()
    while now < deadline:
        while in_flight and in_flight[0].started_at + 0.05 <= now:
            policy.on_finish(in_flight.popleft(), now)
        delay = policy.start_delay(now)
        if delay == 0:
            in_flight.append(policy.on_start(now))
            continue
        next_answer = in_flight[0].started_at + 0.05 if in_flight else math.inf
        now = min(next_answer, now + delay if delay is not None else math.inf)
    assert policy.limit == policy.ceiling
    if policy.budget_ceiling is not None:
        assert policy.budget == policy.budget_ceiling
    elif policy.budget is not None:
        assert policy.budget >= 600  # unstated: from any budget, five quiet windows then ten doublings


# -- the thread wrapper -------------------------------------------------------------------------------------------


def test_acquire_blocks_beyond_the_limit_until_a_release():
    gate = AdaptiveGate(initial_limit=1, max_limit=1)
    ticket = gate.acquire()
    entered = threading.Event()

    def second():
        gate.release(gate.acquire())
        entered.set()

    thread = threading.Thread(target=second)
    thread.start()
    assert not entered.wait(0.2)
    gate.release(ticket)
    assert entered.wait(10)
    thread.join()


def test_a_caller_waiting_in_the_gate_stops_when_its_run_is_cancelled():
    gate = AdaptiveGate(initial_limit=1, max_limit=1)
    held = gate.acquire()
    cancel = threading.Event()
    outcome = []

    def waiter():
        try:
            gate.acquire(cancel=cancel)
        except CallCancelledError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=waiter)
    thread.start()
    cancel.set()
    thread.join(10)
    assert not thread.is_alive() and isinstance(outcome[0], CallCancelledError)
    gate.release(held)
    assert gate.policy.in_flight == 0


def test_one_gate_per_platform_user_in_the_process():
    a = shared_gate("http://127.0.0.1:1/repo/v1", "token-a", max_limit=8)
    again = shared_gate("http://127.0.0.1:1/repo/v1/", "token-a", max_limit=64)
    other_user = shared_gate("http://127.0.0.1:1/repo/v1", "token-b", max_limit=8)
    other_host = shared_gate("http://127.0.0.1:2/repo/v1", "token-a", max_limit=8)
    assert a is again and a is not other_user and a is not other_host
    assert a.policy.thread_cap == 64  # the caller with more threads widens the ceiling
    assert isinstance(a.acquire(), Ticket)


def test_sharing_the_window_with_another_client_is_said_once(caplog):
    policy = ThrottlePolicy(initial_limit=3, max_limit=3)
    policy.on_finish(policy.on_start(0.0), 0.0, frequency(allowed=100, window=10.0))
    with caplog.at_level(logging.DEBUG, logger="synclient.platform.gate"):
        for now in (1.0, 2.0, 3.0):  # three fresh rounds, each refused within the budget
            policy.on_finish(policy.on_start(now), now, frequency(allowed=100, window=10.0))
    shared = [r for r in caplog.records if "another client" in r.getMessage()]
    assert [r.levelno for r in shared] == [logging.INFO, logging.DEBUG, logging.DEBUG]
