"""Hours of simulated traffic through the gate's decision core against a simulated Synapse (fake clock, seeded).

The server keeps Synapse's per-user limits: concurrent requests (counted from arrival to departure) and requests
per window (refusals are not counted, as ``MemoryTimeBlockCountingSemaphore`` does), in two flavours: the sliding
window the emulator keeps, and the fixed time block the real service keeps. Client workers want requests without
pause (a sustained first sync) and handle 429 as ``Platform`` does: a frequency refusal without ``Retry-After``
goes straight back to the gate, a concurrency refusal backs off a little, a ``Retry-After`` is honoured.
The claims: throughput within 5% of the window's rate, fewer than 1% of requests refused.
"""

from __future__ import annotations

import collections
import heapq
import itertools
import random
from dataclasses import dataclass, field
from typing import Callable, Deque, List, Optional, Tuple

import pytest

from synclient.platform.gate import Throttle, ThrottleKind, ThrottlePolicy

HOUR = 3600.0


@dataclass
class Server:
    concurrency: int = 3
    per_window: int = 600
    window: float = 60.0
    block_window: bool = False  # Synapse's fixed time block instead of the emulator's sliding window
    states_limits: bool = True  # the 429 text names the limit's size
    retry_after: Optional[float] = None
    service: Tuple[float, float] = (0.030, 0.070)  # seconds the server holds an admitted request
    network: Tuple[float, float] = (0.001, 0.010)  # one-way delay
    in_flight: int = 0
    admitted: Deque[float] = field(default_factory=collections.deque)
    block_started: float = -1e18
    block_count: int = 0

    def admit(self, now: float) -> Optional[str]:
        """None when admitted (call ``depart`` later), else the 429's text."""
        if self.block_window:
            if now >= self.block_started + self.window:
                self.block_started, self.block_count = now, 0
            full = self.block_count >= self.per_window
        else:
            while self.admitted and self.admitted[0] <= now - self.window:
                self.admitted.popleft()
            full = len(self.admitted) >= self.per_window
        if full:
            return (
                f"Requests are too frequent. Allowed {self.per_window} requests every {self.window:.0f} seconds."
                if self.states_limits
                else "Requests are too frequent."
            )
        if self.in_flight >= self.concurrency:
            return (
                f"Too many concurrent requests. Allowed {self.concurrency} concurrent connections at any time."
                if self.states_limits
                else "Too many concurrent requests."
            )
        if self.block_window:
            self.block_count += 1
        else:
            self.admitted.append(now)
        self.in_flight += 1
        return None

    def depart(self) -> None:
        self.in_flight -= 1


@dataclass
class Outcome:
    seconds: float
    successes: int = 0
    refused: int = 0
    successes_after: Callable[[float], int] = lambda t: 0

    @property
    def attempts(self) -> int:
        return self.successes + self.refused


def simulate(
    server: Server,
    *,
    hours: float,
    workers: int = 8,
    seed: int = 1,
    neighbour_rate: float = 0.0,
    neighbour_until: float = 0.0,
) -> Outcome:
    """Run ``workers`` greedy client workers through one ``ThrottlePolicy`` for ``hours`` of simulated time.

    ``neighbour_rate``: another process of the same user sends this many requests per second (taking window
    room, ignoring refusals) until ``neighbour_until``.
    """
    rng = random.Random(seed)
    policy = ThrottlePolicy(max_limit=workers)
    events: List[tuple] = []
    order = itertools.count()
    waiting: Deque[int] = collections.deque()
    success_times: List[float] = []
    outcome = Outcome(seconds=hours * HOUR)
    wake_at = [None]

    def at(time: float, action, *args) -> None:
        heapq.heappush(events, (time, next(order), action, args))

    def pump(now: float) -> None:
        while waiting:
            delay = policy.start_delay(now)
            if delay is None:
                return  # a finish will pump again
            if delay > 0:
                if wake_at[0] is None or wake_at[0] > now + delay:
                    wake_at[0] = now + delay
                    at(now + delay, wake)
                return
            start(now, waiting.popleft())

    def wake(now: float) -> None:
        if wake_at[0] is not None and wake_at[0] <= now:
            wake_at[0] = None
        pump(now)

    def start(now: float, worker: int) -> None:
        ticket = policy.on_start(now)
        at(now + rng.uniform(*server.network), arrive, worker, ticket)

    def arrive(now: float, worker: int, ticket) -> None:
        refusal = server.admit(now)
        back = rng.uniform(*server.network)
        if refusal is None:
            service = rng.uniform(*server.service)
            at(now + service, depart)
            at(now + service + back, answer, worker, ticket, None)
        else:
            at(
                now + 0.002 + back,
                answer,
                worker,
                ticket,
                Throttle.from_reason(refusal, retry_after=server.retry_after),
            )

    def depart(now: float) -> None:
        server.depart()

    def answer(now: float, worker: int, ticket, throttle: Optional[Throttle]) -> None:
        policy.on_finish(ticket, now, throttle)
        if throttle is None:
            outcome.successes += 1
            success_times.append(now)
            pause = 0.0
        else:
            outcome.refused += 1
            pause = _client_wait(throttle, rng)
        at(now + pause, want, worker)
        pump(now)

    def want(now: float, worker: int) -> None:
        waiting.append(worker)
        pump(now)

    def neighbour(now: float) -> None:
        if server.admit(now) is None:
            at(now + 0.05, depart)
        if now + 1 / neighbour_rate < neighbour_until:
            at(now + 1 / neighbour_rate, neighbour)

    for worker in range(workers):
        at(0.0, want, worker)
    if neighbour_rate:
        at(0.0, neighbour)
    end = hours * HOUR
    while events and events[0][0] < end:
        time, _, action, args = heapq.heappop(events)
        action(time, *args)
    outcome.successes_after = lambda t: sum(1 for s in success_times if s >= t)
    return outcome


def _client_wait(throttle: Throttle, rng: random.Random) -> float:
    """What ``Platform`` waits before the next try of a refused call (see ``Platform._wait``)."""
    if throttle.retry_after is not None:
        return throttle.retry_after
    if throttle.kind is ThrottleKind.FREQUENCY:
        return 0.0
    return 0.1 + rng.uniform(0.0, 0.1)


def assert_rides_the_window(outcome: Outcome, server: Server) -> None:
    limit_rate = server.per_window / server.window
    rate = outcome.successes / outcome.seconds
    assert rate <= limit_rate * 1.0001
    assert rate >= 0.95 * limit_rate, f"{rate:.3f} req/s is under 95% of the window's {limit_rate:.3f}"
    assert outcome.refused < 0.01 * outcome.attempts, f"{outcome.refused} of {outcome.attempts} refused"


@pytest.mark.parametrize("block_window", [False, True], ids=["sliding-window", "time-block"])
def test_two_hours_at_synapse_limits_ride_the_window(block_window):
    server = Server(block_window=block_window)
    outcome = simulate(server, hours=2)
    assert_rides_the_window(outcome, server)


def test_with_retry_after_on_every_429():
    server = Server(retry_after=2.0)
    outcome = simulate(server, hours=2, seed=2)
    assert_rides_the_window(outcome, server)


@pytest.mark.parametrize("block_window", [False, True], ids=["sliding-window", "time-block"])
def test_limits_whose_size_the_server_does_not_state(block_window):
    server = Server(states_limits=False, block_window=block_window)
    outcome = simulate(server, hours=2, seed=3)
    assert_rides_the_window(outcome, server)


def test_a_scaled_window_six_seconds_long_with_many_workers():
    # S6 scaled: the same dynamics ten times faster, API latency 5 ms
    server = Server(per_window=600, window=6.0, service=(0.003, 0.007), network=(0.0002, 0.001))
    outcome = simulate(server, hours=1, workers=32, seed=4)
    assert_rides_the_window(outcome, server)


def test_a_neighbour_process_shares_the_window_then_leaves_and_full_speed_comes_back():
    # another process of the user takes half the window for the first half hour
    server = Server()
    outcome = simulate(server, hours=2, seed=5, neighbour_rate=5.0, neighbour_until=0.5 * HOUR)
    assert outcome.refused < 0.01 * outcome.attempts
    last_hour = outcome.successes_after(1 * HOUR) / HOUR
    assert last_hour >= 0.95 * server.per_window / server.window


def test_concurrency_bound_traffic_keeps_the_stated_slots_busy_without_refusals():
    # a window too large to bind: the concurrency limit is the only one
    server = Server(per_window=10**9)
    outcome = simulate(server, hours=0.5, seed=6)
    mean_round_trip = 0.0055 + 0.050 + 0.0055
    assert outcome.successes / outcome.seconds >= 0.95 * server.concurrency / mean_round_trip
    assert outcome.refused < 0.01 * outcome.attempts
