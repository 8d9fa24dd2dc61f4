import threading

import pytest

from synclient.transfer.pool import Priority, TaskPool


def build_tree(pool, depth, fanout, seen, lock):
    """Each task submits its children: the shape of a recursive folder listing."""

    def task(level, label):
        with lock:
            seen.append(label)
        if level < depth:
            for i in range(fanout):
                pool.submit(Priority.LISTING, task, level + 1, f"{label}/{i}")

    pool.submit(Priority.LISTING, task, 0, "root")


@pytest.mark.parametrize("workers", [1, 2, 8])
def test_recursive_submission_completes_at_any_pool_size(workers):
    pool, seen, lock = TaskPool(workers), [], threading.Lock()
    build_tree(pool, depth=4, fanout=3, seen=seen, lock=lock)
    thread = threading.Thread(target=pool.run)
    thread.start()
    thread.join(timeout=20)
    assert not thread.is_alive(), "pool.run did not finish: deadlock"
    assert len(seen) == sum(3**i for i in range(5))


def test_higher_priority_runs_first_when_workers_are_scarce():
    pool, order = TaskPool(1), []
    pool.submit(Priority.LISTING, order.append, "listing")
    pool.submit(Priority.BUNDLE, order.append, "bundle")
    pool.submit(Priority.PART, order.append, "part")
    pool.run()
    assert order == ["part", "bundle", "listing"]


def test_listings_wait_while_the_file_backlog_is_above_high_water():
    pool, order = TaskPool(1, backlog_high_water=2), []
    for i in range(3):
        pool.submit(Priority.DOWNLOAD, order.append, f"d{i}")
    pool.submit(Priority.LISTING, order.append, "listing")
    pool.run()
    assert order.index("listing") > 0


def test_control_plane_tasks_are_capped_by_the_limit():
    running, peak, lock = [0], [0], threading.Lock()
    pair = threading.Barrier(2, timeout=30)  # two calls meet: the limit is reached, whatever the machine's load

    def call():
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        pair.wait()
        with lock:
            running[0] -= 1

    pool = TaskPool(8, control_plane_limit=lambda: 2)
    for _ in range(12):
        pool.submit(Priority.BUNDLE, call)
    pool.run()
    assert peak[0] == 2


def test_unexpected_exception_is_kept_and_the_rest_still_runs():
    pool, done = TaskPool(2), []

    def boom():
        raise RuntimeError("bug")

    pool.submit(Priority.BUNDLE, boom)
    pool.submit(Priority.BUNDLE, done.append, 1)
    pool.run()
    assert done == [1] and isinstance(pool.unexpected_errors[0], RuntimeError)


def test_cancel_stops_promptly_and_drops_queued_work():
    """Two workers, ten tasks that would each run for 30 s unless cancelled: a cancel once both run stops them at
    their next check and the other eight never start (no clock: the 30 s only bounds a broken cancel)."""
    pool, ran, started = TaskPool(2), [], threading.Semaphore(0)
    entered = []

    def slow():
        entered.append(1)
        started.release()
        for _ in range(3000):
            pool.check_cancelled()
            pool.cancel_event.wait(0.01)
        ran.append("finished")

    def cancel_once_both_run():
        for _ in range(2):
            started.acquire(timeout=30)
        pool.cancel()

    for _ in range(10):
        pool.submit(Priority.PART, slow)
    canceller = threading.Thread(target=cancel_once_both_run)
    canceller.start()
    pool.run()
    canceller.join(timeout=30)
    assert ran == [] and len(entered) == 2 and pool.cancel_event.is_set()
