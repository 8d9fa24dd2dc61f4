"""The cluster budget: one platform user's limits shared by the driver and the workers of a Dask cluster.

Against real Dask clusters started once for the module: one in this process (its worker's tasks run in this
process's threads) and one with a worker process of its own. Every bound is one that holds whatever the machine's
load: a lease only ever comes back late, never early.
"""

import math
import pickle
import threading
import time
from pathlib import Path

import pytest
import responses
from client_support import FAST, REPO, ROOT, TOKEN

from synclient.platform.gate import AdaptiveGate
from synclient.platform.rest import Platform

distributed = pytest.importorskip("distributed")
import dask  # noqa: E402 (installed with distributed)

from synclient.cluster import budget as budget_module  # noqa: E402 (after the skip: needs distributed)
from synclient.cluster.budget import ClusterAdmission, ClusterBudget, close_admission  # noqa: E402
from synclient.errors import CallCancelledError, ConfigError  # noqa: E402

HANDSHAKE_SECONDS = 30.0  # only reached when something is broken


# dashboard_address=":0": any free port (the scheduler's HTTP server is there without a dashboard too, and two
# clusters would contend for its default 8787). No sampling profiler: before Python 3.12 it can deadlock a worker
# whose threads allocate (CPython gh-116969), as synclient's own clusters are started (synclient.cluster.connect).
NO_PROFILER = {"distributed.worker.profile.enabled": False}


@pytest.fixture(scope="module")
def cluster():
    """A Dask cluster in this process (the driver's default client)."""
    with (
        dask.config.set(NO_PROFILER),
        distributed.Client(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=":0") as client,
    ):
        yield client


@pytest.fixture(scope="module")
def process_cluster():
    """A Dask cluster whose worker is a process of its own (not the default client: use ``as_current()``)."""
    with (
        dask.config.set(NO_PROFILER),
        distributed.LocalCluster(
            processes=True, n_workers=1, threads_per_worker=1, dashboard_address=":0", silence_logs=40
        ) as local,
        distributed.Client(local, set_as_default=False) as client,
    ):
        yield client


class LastReading:
    """A monotonic clock that remembers, per thread, what it read last: the start ``enter`` just recorded."""

    def __init__(self) -> None:
        self._local = threading.local()

    def __call__(self) -> float:
        self._local.value = time.monotonic()
        return self._local.value

    @property
    def last(self) -> float:
        return self._local.value


def run_threads(target, count):
    threads = [threading.Thread(target=target) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(HANDSHAKE_SECONDS)
    assert not any(thread.is_alive() for thread in threads)


def wait_until(condition):
    deadline = time.monotonic() + HANDSHAKE_SECONDS
    while not condition():
        assert time.monotonic() < deadline, "handshake not reached"
        time.sleep(0.01)


# -- the budget ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "limits",
    [
        dict(name=""),
        dict(name=None),
        dict(concurrent=0),
        dict(concurrent=True),
        dict(concurrent=2.5),
        dict(requests=0),
        dict(requests="600"),
        dict(window_seconds=0),
        dict(window_seconds=-1.0),
        dict(window_seconds=math.inf),
        dict(window_seconds=math.nan),
        dict(window_seconds="60"),
    ],
)
def test_limits_that_are_not_positive_numbers_are_one_line_config_errors(limits):
    with pytest.raises(ConfigError) as info:
        ClusterBudget(**{"name": "run", **limits})
    assert "\n" not in str(info.value)


def test_a_budget_has_synapses_limits_a_name_per_run_and_travels_by_pickle():
    budget = ClusterBudget.for_run()
    assert (budget.concurrent, budget.requests, budget.window_seconds) == (3, 600, 60.0)
    assert budget.window_leases == 594 and budget.hold_seconds == pytest.approx(60.6)  # the gate's reserve, margin
    assert ClusterBudget.for_run().name != budget.name
    assert pickle.loads(pickle.dumps(budget)) == budget
    with pytest.raises(TypeError):
        ClusterBudget("run")  # keyword-only


def test_without_a_dask_worker_or_client_an_admission_is_a_config_error(monkeypatch):
    def nothing_here():
        raise ValueError("none")

    monkeypatch.setattr(budget_module.distributed, "get_worker", nothing_here)
    monkeypatch.setattr(budget_module.distributed, "get_client", nothing_here)
    with pytest.raises(ConfigError, match="no Dask worker or client here"):
        ClusterBudget.for_run().admission()


def test_a_process_has_one_admission_per_budget_until_it_is_closed(cluster):
    budget = ClusterBudget.for_run(window_seconds=0.1)
    admission = budget.admission()
    assert budget.admission() is admission and budget.name in repr(admission)
    with pytest.raises(ConfigError, match="other limits"):
        ClusterBudget(name=budget.name, concurrent=5).admission()
    close_admission(budget.name)
    with pytest.raises(CallCancelledError, match="closed"):
        admission.enter(cancel=None)
    another = budget.admission()
    assert another is not admission
    another.close()
    close_admission(budget.name)  # none left: nothing to do


def test_threads_asking_at_once_get_the_one_admission(cluster):
    budget = ClusterBudget.for_run(window_seconds=0.1)
    together, got = threading.Barrier(4), []

    def ask():
        together.wait(HANDSHAKE_SECONDS)
        got.append(budget.admission())

    run_threads(ask, 4)
    assert len(got) == 4 and all(admission is got[0] for admission in got)
    got[0].close()


def test_a_name_the_scheduler_knows_with_other_limits_is_a_config_error(cluster):
    budget = ClusterBudget.for_run(window_seconds=0.1)
    ClusterAdmission(budget=budget).close()
    with pytest.raises(ConfigError, match="a budget of its own"):
        ClusterAdmission(budget=ClusterBudget(name=budget.name, requests=50, window_seconds=0.1))


def test_an_admission_made_for_a_client_keeps_its_semaphores_on_that_clients_scheduler(cluster, process_cluster):
    """The driver makes its admission with the run's client, which need not be the process's default one."""
    budget = ClusterBudget.for_run(window_seconds=0.1)
    admission = budget.admission(client=process_cluster)  # ``cluster`` is the default client here

    def semaphores(dask_scheduler):
        return sorted(dask_scheduler.extensions["semaphores"].max_leases)

    try:
        assert f"{budget.name}-window" in process_cluster.run_on_scheduler(semaphores)
        assert f"{budget.name}-window" not in cluster.run_on_scheduler(semaphores)
        assert admission.enter(cancel=None) >= 0  # and its leases are taken there
        admission.leave()
    finally:
        admission.close()


# -- the limits, from many threads ---------------------------------------------------------------------------------


def test_never_more_requests_in_flight_than_the_concurrency_allows(cluster):
    budget = ClusterBudget.for_run(concurrent=3, requests=1000, window_seconds=0.2)
    admission = budget.admission()  # made here, used from other threads
    lock = threading.Lock()
    inside, most, entries = 0, 0, []

    def calls():
        nonlocal inside, most
        for _ in range(10):
            admission.enter(cancel=None)
            with lock:
                inside += 1
                most = max(most, inside)
                entries.append(1)
            time.sleep(0.001)  # a request's time in flight
            with lock:
                inside -= 1
            admission.leave()

    run_threads(calls, 8)
    admission.close()
    assert len(entries) == 80 and most <= 3


def test_no_window_holds_more_starts_than_the_budget_less_its_reserve(cluster):
    budget = ClusterBudget.for_run(concurrent=3, requests=10, window_seconds=0.5)
    assert budget.window_leases == 9
    clock = LastReading()
    admission = ClusterAdmission(budget=budget, clock=clock)
    lock = threading.Lock()
    starts = []

    def calls():
        for _ in range(6):
            admission.enter(cancel=None)
            started = clock.last  # the start enter recorded, on this thread
            admission.leave()
            with lock:
                starts.append(started)

    run_threads(calls, 5)
    admission.close()
    starts.sort()
    assert len(starts) == 30
    # any 10 consecutive starts span at least a window: no window of 0.5 s holds 10
    assert all(starts[i + 9] - starts[i] >= budget.window_seconds for i in range(len(starts) - 9))


@responses.activate
def test_a_platforms_attempts_pass_the_cluster_budget_and_give_their_leases_back(cluster):
    budget = ClusterBudget.for_run(requests=100, window_seconds=30.0)
    frequent = {"reason": "Requests are too frequent. Allowed 600 requests every 60 seconds."}
    responses.add(responses.GET, REPO + "/userProfile", status=429, json=frequent)
    responses.add(responses.GET, REPO + "/userProfile", json={"ownerId": "1"})
    with Platform(
        endpoint=ROOT, token=TOKEN, retry=FAST, gate=AdaptiveGate(max_limit=4), admission=budget.admission()
    ) as platform:
        assert platform.get_user_profile() == {"ownerId": "1"}
    in_flight = distributed.Semaphore(max_leases=budget.concurrent, name=f"{budget.name}-concurrent")
    started = distributed.Semaphore(max_leases=budget.window_leases, name=f"{budget.name}-window")
    assert in_flight.get_value() == 0 and started.get_value() == 2  # both starts count for their window
    close_admission(budget.name)


# -- cancelling ----------------------------------------------------------------------------------------------------


def cancelled_while_waiting(admission):
    """Start a thread that waits in ``admission.enter``, set its cancel event once it is on its way; what it met."""
    cancel, on_its_way, met = threading.Event(), threading.Event(), []

    def enter():
        on_its_way.set()
        try:
            admission.enter(cancel=cancel)
            met.append("entered")
            admission.leave()
        except CallCancelledError as exc:
            met.append(exc)

    thread = threading.Thread(target=enter)
    thread.start()
    on_its_way.wait(HANDSHAKE_SECONDS)
    cancel.set()
    thread.join(HANDSHAKE_SECONDS)
    assert not thread.is_alive()
    return met


def test_waiting_for_the_concurrency_stops_when_cancelled_and_gives_its_window_lease_back(cluster):
    budget = ClusterBudget.for_run(concurrent=1, requests=3, window_seconds=60.0)  # two starts per window
    admission = budget.admission()
    admission.enter(cancel=None)  # the one request in flight, and one of the window's two starts
    [met] = cancelled_while_waiting(admission)
    assert isinstance(met, CallCancelledError) and "cancelled" in str(met)
    admission.leave()
    # the cancelled attempt's window lease came back: the window's second start is still free
    give_up = threading.Event()
    too_late = threading.Timer(HANDSHAKE_SECONDS, give_up.set)  # only when the lease never came back
    too_late.start()
    try:
        admission.enter(cancel=give_up)
    finally:
        too_late.cancel()
    admission.leave()
    admission.close()


def test_waiting_for_the_window_stops_when_cancelled(cluster):
    budget = ClusterBudget.for_run(requests=2, window_seconds=60.0)  # one start per window
    admission = budget.admission()
    admission.enter(cancel=None)
    admission.leave()
    [met] = cancelled_while_waiting(admission)
    assert isinstance(met, CallCancelledError)
    admission.close()


def test_closing_stops_the_attempts_waiting(cluster):
    budget = ClusterBudget.for_run(concurrent=1, requests=100, window_seconds=0.1)
    admission = budget.admission()
    admission.enter(cancel=None)
    on_its_way, met = threading.Event(), []

    def enter():
        on_its_way.set()
        try:
            admission.enter(cancel=None)
        except CallCancelledError as exc:
            met.append(exc)

    thread = threading.Thread(target=enter)
    thread.start()
    on_its_way.wait(HANDSHAKE_SECONDS)
    admission.close()
    thread.join(HANDSHAKE_SECONDS)
    assert "closed" in str(met[0])
    admission.leave()


# -- shared with the workers ---------------------------------------------------------------------------------------


def enter_from_threads(budget, folder, threads, *, own_admission):
    """A task: ``threads`` threads enter the budget once each, and say whether the driver had let go by then.
    ``own_admission``: a second admission in this process (the driver's process), else the process's one."""
    admission = ClusterAdmission(budget=budget) if own_admission else budget.admission()  # in the task's thread
    released, seen = Path(folder, "released"), []

    def one():
        Path(folder, f"waiting-{threading.get_ident()}").touch()
        admission.enter(cancel=None)
        seen.append(released.exists())
        admission.leave()

    run_threads(one, threads)
    if own_admission:
        admission.close()
    return seen


@pytest.mark.parametrize("where", ["thread", "process"])
def test_a_tasks_requests_wait_for_the_drivers_to_end(where, request, tmp_path):
    client = request.getfixturevalue("cluster" if where == "thread" else "process_cluster")
    budget = ClusterBudget.for_run(concurrent=2, requests=100, window_seconds=0.2)
    with client.as_current():
        admission = ClusterAdmission(budget=budget)
    for _ in range(2):
        admission.enter(cancel=None)  # the driver holds every slot
    task = client.submit(enter_from_threads, budget, str(tmp_path), 3, own_admission=where == "thread", pure=False)
    wait_until(lambda: len(list(tmp_path.glob("waiting-*"))) == 3)
    (tmp_path / "released").touch()
    for _ in range(2):
        admission.leave()
    assert task.result(timeout=HANDSHAKE_SECONDS) == [True, True, True]  # none entered before the driver let go
    admission.close()
    client.run(close_admission, budget.name)  # the workers' own, at the end of a run


def test_a_window_lease_outlives_dasks_lease_timeout():
    """A window lease is held longer than Dask's lease timeout (60.6 s against 30 s by default): it is refreshed,
    though its admission was made in one thread and used from another. Shrunk: a timeout of 1 s, a window of 30 s."""
    timeouts = {
        "distributed.scheduler.locks.lease-timeout": "1s",
        "distributed.scheduler.locks.lease-validation-interval": "0.1s",
    }
    with (
        dask.config.set({**timeouts, **NO_PROFILER}),
        distributed.Client(processes=False, n_workers=0, dashboard_address=":0", set_as_default=False) as client,
        client.as_current(),
    ):
        budget = ClusterBudget.for_run(requests=100, window_seconds=30.0)
        admission = ClusterAdmission(budget=budget)
        run_threads(lambda: (admission.enter(cancel=None), admission.leave()), 1)
        observer = distributed.Semaphore(max_leases=budget.window_leases, name=f"{budget.name}-window")
        time.sleep(1.5)  # past the lease timeout and the validations that would have dropped it
        assert observer.get_value() == 1
        admission.close()
