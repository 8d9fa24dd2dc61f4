import threading

from synclient.gate import AdaptiveGate, ThrottleKind


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_concurrency_429_halves_limit_and_sets_cool_down():
    clock = FakeClock()
    gate = AdaptiveGate(initial_limit=8, max_limit=32, clock=clock)
    for _ in range(8):
        gate.acquire()
    gate.release(throttled=ThrottleKind.CONCURRENCY)
    assert gate.limit == 4
    assert gate.throttled == 1
    # a second 429 while 7 are still in flight halves again from the current limit
    gate.release(throttled=ThrottleKind.CONCURRENCY)
    assert gate.limit == 2


def test_slow_start_probes_one_past_three_then_doubles_until_the_first_429():
    gate = AdaptiveGate(max_limit=32)
    assert gate.limit == 3
    seen = []
    for _ in range(40):
        gate.acquire()
        gate.release()
        seen.append(gate.limit)
    assert sorted(set(seen)) == [3, 4, 8, 16, 32]


def test_limit_grows_back_by_one_only_after_a_long_run_of_successes():
    gate = AdaptiveGate(initial_limit=2, max_limit=4, growth_successes=5)
    gate.acquire()
    gate.acquire()
    gate.release(throttled=ThrottleKind.CONCURRENCY, retry_after=0)  # leave slow start
    gate.release()
    assert gate.limit == 1
    for _ in range(4):
        gate.acquire()
        gate.release()
    assert gate.limit == 2
    for _ in range(9):
        gate.acquire()
        gate.release()
    assert gate.limit == 2
    gate.acquire()
    gate.release()
    assert gate.limit == 3
    for _ in range(15 + 20):
        gate.acquire()
        gate.release()
    assert gate.limit == 4  # capped at max_limit


def test_acquire_blocks_beyond_limit_until_release():
    gate = AdaptiveGate(initial_limit=1, max_limit=1)
    gate.acquire()
    entered = threading.Event()

    def second():
        gate.acquire()
        entered.set()
        gate.release()

    thread = threading.Thread(target=second)
    thread.start()
    assert not entered.wait(0.2)
    gate.release()
    assert entered.wait(2)
    thread.join()


def test_frequency_429_learns_a_pace_between_starts():
    clock = FakeClock()
    gate = AdaptiveGate(initial_limit=4, max_limit=4, clock=clock)
    for _ in range(600):
        gate.acquire()
        gate.release()
        clock.now += 0.05
    gate.acquire()
    gate.release(throttled=ThrottleKind.FREQUENCY, retry_after=0)
    # 601 starts in the last 60 s were refused: pace at <= 90% of that rate
    assert gate.min_interval >= 60.0 / 601 / 0.9 - 1e-9
    assert gate.limit == 4  # pacing, not concurrency, answers a frequency limit


def test_retry_after_delays_every_thread():
    clock = FakeClock()
    gate = AdaptiveGate(initial_limit=4, clock=clock)
    gate.acquire()
    gate.release(throttled=ThrottleKind.CONCURRENCY, retry_after=5.0)
    done = threading.Event()

    def caller():
        gate.acquire()
        done.set()
        gate.release()

    thread = threading.Thread(target=caller)
    thread.start()
    assert not done.wait(0.3)  # fake clock has not moved: still cooling down
    clock.now += 5.1
    with gate._cond:
        gate._cond.notify_all()
    assert done.wait(2)
    thread.join()
