"""A platform user's request limits, shared by every process of a run sharded over a Dask cluster.

Synapse's limits are per user: 3 concurrent requests and 600 requests per 60 s, for all of that user's processes
together. Each process paces itself with its :class:`~synclient.platform.gate.AdaptiveGate`, so the driver and the
workers of one run, each with a gate of its own, would together overshoot. A :class:`ClusterBudget`, made once per run
on the driver and carried to the workers inside the tasks' arguments, admits every REST attempt against limits kept for
the whole cluster by the Dask scheduler, in two ``distributed.Semaphore`` (no server of ours):

- ``{name}-concurrent``, ``concurrent`` leases: one per request, from its start until its answer was read;
- ``{name}-window``, ``requests`` less the gate's 1% reserve: one per request start, given back by a timer thread
  ``window_seconds`` plus the gate's 1% margin after that start. A lease comes back late, never early, so no window
  of ``window_seconds`` holds more starts than there are leases.

An attempt takes its window lease first, then its concurrency lease; one cancelled between the two gives the window
lease back at once (it started nothing). ``budget.admission()`` is this process's :class:`ClusterAdmission` of the
budget (one per name), a :class:`~synclient.platform.gate.RestAdmission` for every Platform of the process:
``platform.admission = budget.admission()``.

Threads. Dask finds its worker or client (``get_worker()``, ``get_client()``) in a task's thread or a driver's, not
in the pool threads that make synclient's REST calls. The semaphores are therefore bound explicitly to the scheduler
connection and event loop found by the thread that makes the admission (a task's, or the driver's once its Client
exists), and work from any thread after. In a process, one thread at a time waits at the scheduler for each
semaphore and the others wait here: a worker's 64 threads poll the scheduler no more than one thread would.

Leases and Dask's lease timeout. The scheduler takes back a lease its holder has not refreshed for
``distributed.scheduler.locks.lease-timeout`` (30 s by default, looked at every ``lease-validation-interval``, 10 s):
a process that dies gives its leases back within about 40 s, and the others go on. A live process refreshes its
leases every fifth of that timeout (each semaphore's refresh callback, on the process's event loop); a window lease
outlives the default timeout (60.6 s) only thanks to that refresh. So the window leases of a process that died, or
whose event loop stalled past the timeout, come back before their window ended: the cluster may then start a few
requests early, which the platform may refuse (429) and the process gates pace as usual. With a lease timeout of
``"inf"`` nothing expires: a dead process's leases are lost to the run.

Closing. :meth:`ClusterAdmission.close` (the driver at the end of a run; every worker, through
:func:`close_admission`, once the run is over) refuses new attempts and returns at once. The window leases still
held are not given back but left to the scheduler's lease timeout: a budget is one run's (a fresh name per run), so
once the run is over no process takes them again, and a release at that point would only race the cluster's own
shutdown (a ``local:N`` cluster stops right after the run). The timer and the refresh callbacks stop. The scheduler
keeps the two semaphores' names and counts (a few bytes per run) until it stops.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import math
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Deque, Dict, Optional, Tuple

from synclient.errors import CallCancelledError, ConfigError
from synclient.platform.gate import CANCEL_POLL_SECONDS, DEFAULT_WINDOW_SECONDS, MARGIN_SHARE, with_reserve

try:
    import distributed
except ImportError:  # the dask extra is optional: only a run over a Dask cluster imports this module
    raise ConfigError("dask is not installed: pip install 'synclient[dask]'") from None

log = logging.getLogger(__name__)

#: Synapse's documented limits per user
SYNAPSE_CONCURRENT = 3
SYNAPSE_REQUESTS = 600
#: what a call to a scheduler that is gone raises (a closed client: RuntimeError "IOLoop is closed")
_SCHEDULER_TROUBLE = (OSError, RuntimeError, TimeoutError, asyncio.TimeoutError)
#: keyword-only fields where dataclasses can say so (Python 3.10 on, as distributed itself needs)
_KEYWORD_ONLY: Dict[str, Any] = {"kw_only": True} if sys.version_info >= (3, 10) else {}


@dataclass(frozen=True, **_KEYWORD_ONLY)
class ClusterBudget:
    """The request limits one platform user's processes share in one run: Synapse's by default. ``name`` names the
    run's semaphores on the scheduler, so it is unique per run (:meth:`for_run`). Picklable: it travels to the
    workers inside the tasks' arguments."""

    name: str
    concurrent: int = SYNAPSE_CONCURRENT  # requests in flight at once
    requests: int = SYNAPSE_REQUESTS  # request starts per window
    window_seconds: float = DEFAULT_WINDOW_SECONDS

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ConfigError("a cluster budget needs a name: ClusterBudget.for_run() makes one for a run")
        for field_name in ("concurrent", "requests"):
            value = getattr(self, field_name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(
                    f"a cluster budget's {field_name} must be a whole number of at least 1, not {value!r}"
                )
        seconds = self.window_seconds
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds < math.inf:
            raise ConfigError(f"a cluster budget's window_seconds must be a positive number, not {seconds!r}")

    @classmethod
    def for_run(
        cls,
        *,
        concurrent: int = SYNAPSE_CONCURRENT,
        requests: int = SYNAPSE_REQUESTS,
        window_seconds: float = DEFAULT_WINDOW_SECONDS,
    ) -> ClusterBudget:
        """A budget of its own for one run (a fresh name)."""
        return cls(
            name=f"synclient-budget-{uuid.uuid4().hex}",
            concurrent=concurrent,
            requests=requests,
            window_seconds=window_seconds,
        )

    @property
    def window_leases(self) -> int:
        """Starts any window may hold: ``requests`` less the reserve the process gate keeps too."""
        return with_reserve(self.requests)

    @property
    def hold_seconds(self) -> float:
        """How long a start keeps its window lease: the window, plus the gate's margin for network jitter."""
        return self.window_seconds * (1.0 + MARGIN_SHARE)

    def admission(self, *, client: Any = None) -> ClusterAdmission:
        """This process's admission to the budget, shared by all its threads and Platforms. The first call in a
        process must come from a task's thread, or from the driver with its ``client`` (without one: the
        process's default client, which need not be the run's)."""
        with _admissions_lock:
            admission = _admissions.get(self.name)
        if admission is None:
            # made outside the lock (it calls the scheduler, and close_admission may run on the event loop)
            made = ClusterAdmission(budget=self, client=client)
            with _admissions_lock:
                admission = _admissions.setdefault(self.name, made)
            if admission is not made:
                made.close()  # another thread was first
        if admission.budget != self:
            raise ConfigError(f"cluster budget {self.name} is already in use in this process with other limits")
        return admission


class ClusterAdmission:
    """One process's admission to a :class:`ClusterBudget`: a :class:`~synclient.platform.gate.RestAdmission`.

    ``ClusterBudget.admission()`` gives the process's one; made here directly, it is a second one (tests).
    ``clock``: monotonic seconds, read once when an attempt starts (and by the timer); ``client``: the driver's
    ``distributed.Client`` whose scheduler keeps the semaphores (None: this thread's worker's, or the default
    client's)."""

    def __init__(
        self, *, budget: ClusterBudget, clock: Callable[[], float] = time.monotonic, client: Any = None
    ) -> None:
        self.budget = budget
        self._clock = clock
        scheduler, loop = (client.scheduler, client.loop) if client is not None else _scheduler_and_loop(budget.name)
        self._window = _Leases(
            budget.window_leases, budget_name=budget.name, role="window", scheduler=scheduler, loop=loop
        )
        try:
            self._concurrent = _Leases(
                budget.concurrent, budget_name=budget.name, role="concurrent", scheduler=scheduler, loop=loop
            )
        except BaseException:
            self._window.stop_refreshing()  # its refresh callback would otherwise stay on the loop
            raise
        self._cond = threading.Condition(threading.Lock())
        self._due: Deque[float] = collections.deque()  # when each window lease held goes back, oldest first
        self._closed = threading.Event()
        self._timer = threading.Thread(target=self._give_back_when_due, name=f"{budget.name}-timer", daemon=True)
        self._timer.start()

    def __repr__(self) -> str:
        state = "closed" if self._closed.is_set() else "open"
        return f"ClusterAdmission({self.budget.name!r}, {state})"

    def enter(self, *, cancel: Optional[threading.Event] = None) -> float:
        """Wait until this process may start one more request cluster-wide; the seconds waited.
        :class:`CallCancelledError` once ``cancel`` is set while waiting, or when the admission is closed."""
        entered = self._clock()
        self._window.take(cancel=cancel, closed=self._closed)
        try:
            self._concurrent.take(cancel=cancel, closed=self._closed)
        except BaseException:
            self._window.give_back()  # nothing started: the window does not owe this lease
            raise
        with self._cond:
            closed = self._closed.is_set()
            if not closed:
                started = self._clock()
                self._due.append(started + self.budget.hold_seconds)
                self._cond.notify()
        if closed:  # the timer may be gone: nothing starts, so both go back now
            self._concurrent.give_back()
            self._window.give_back()
            raise _closed_error(self.budget.name)
        return started - entered

    def leave(self) -> None:
        """The request ended: its concurrency lease goes back (its window lease when its window ended)."""
        self._concurrent.give_back(quiet=self._closed.is_set())

    def close(self) -> None:
        """No new attempt enters; the window leases held are left to the lease timeout (see the module's
        docstring): call it once the run is over."""
        with self._cond:
            self._closed.set()
            self._cond.notify_all()
        with _admissions_lock:
            if _admissions.get(self.budget.name) is self:
                del _admissions[self.budget.name]

    def _give_back_when_due(self) -> None:
        """The timer thread: each window lease back when its start's window ended, in the order taken (as
        ``Semaphore.release()`` gives back its oldest lease), until the admission is closed."""
        while True:
            with self._cond:
                while not self._due and not self._closed.is_set():
                    self._cond.wait()
                if self._closed.is_set():
                    break
                delay = self._due[0] - self._clock()
                if delay > 0:
                    self._cond.wait(delay)
                    continue
                self._due.popleft()
            self._window.give_back(quiet=self._closed.is_set())  # outside the lock: a call to the scheduler
        self._window.stop_refreshing()
        self._concurrent.stop_refreshing()


def close_admission(name: str) -> None:
    """Close this process's admission to the budget named ``name``, if it has one: once no task of the run may
    call any more, e.g. on every worker after the run with ``client.run(close_admission, budget.name)`` (it
    never waits for the scheduler, so it may run on a worker's event loop)."""
    with _admissions_lock:
        admission = _admissions.get(name)
    if admission is not None:
        admission.close()


class _Leases:
    """One of the budget's semaphores, as this process uses it: one thread at a time waits at the scheduler."""

    def __init__(self, max_leases: int, *, budget_name: str, role: str, scheduler: Any, loop: Any) -> None:
        self.budget_name = budget_name
        name = f"{budget_name}-{role}"
        self._semaphore = distributed.Semaphore(max_leases=max_leases, name=name, scheduler_rpc=scheduler, loop=loop)
        self._waiting = threading.Lock()  # held by the thread waiting at the scheduler
        try:
            self._semaphore.register()
        except ValueError:  # the scheduler's semaphore of that name has another size
            raise ConfigError(
                f"cluster budget semaphore {name} already exists with other limits: give each "
                "run a budget of its own (ClusterBudget.for_run())"
            ) from None
        except _SCHEDULER_TROUBLE as exc:
            raise _unreachable_error(budget_name, exc) from None

    def take(self, *, cancel: Optional[threading.Event], closed: threading.Event) -> None:
        _stop_if_asked(cancel, closed, self.budget_name)
        while not self._waiting.acquire(timeout=CANCEL_POLL_SECONDS):
            _stop_if_asked(cancel, closed, self.budget_name)
        try:
            # the scheduler answers False when the timeout passed without a lease: then cancel is looked at again
            while not self._acquire_within(CANCEL_POLL_SECONDS):
                _stop_if_asked(cancel, closed, self.budget_name)
        finally:
            self._waiting.release()

    def give_back(self, *, quiet: bool = False) -> None:
        """One lease back. Never raises (it runs in clean-ups): a lease the scheduler did not hear back expires by
        Dask's lease timeout, since this process no longer refreshes it."""
        try:
            self._semaphore.release()
        except Exception as exc:  # noqa: BLE001 - also what distributed raises once the client's loop is gone
            log.log(
                logging.DEBUG if quiet else logging.WARNING,
                "could not give back a lease of %s (%s: %s); the scheduler takes it back after its lease timeout",
                self._semaphore.name,
                type(exc).__name__,
                exc,
            )

    def stop_refreshing(self) -> None:
        refresh = getattr(self._semaphore, "refresh_callback", None)  # none with a lease timeout of "inf"
        if refresh is not None:
            try:
                self._semaphore.loop.add_callback(refresh.stop)  # on its loop: tornado's callbacks are not thread-safe
            except RuntimeError:  # the loop is closed: nothing refreshes any more
                pass

    def _acquire_within(self, seconds: float) -> bool:
        try:
            return bool(self._semaphore.acquire(timeout=seconds))
        except _SCHEDULER_TROUBLE as exc:
            raise _unreachable_error(self.budget_name, exc) from None


def _scheduler_and_loop(name: str) -> Tuple[Any, Any]:
    """The scheduler connection and event loop of this thread's Dask worker (in a task) or client (a driver)."""
    try:
        worker = distributed.get_worker()
    except ValueError:
        pass
    else:
        return worker.scheduler, worker.loop
    try:
        client = distributed.get_client()
    except ValueError:
        raise ConfigError(
            f"cluster budget {name}: no Dask worker or client here; make the admission in a task, or "
            "on the driver once its distributed.Client exists"
        ) from None
    return client.scheduler, client.loop


def _stop_if_asked(cancel: Optional[threading.Event], closed: threading.Event, name: str) -> None:
    if cancel is not None and cancel.is_set():
        raise CallCancelledError("cancelled while waiting for the cluster's request limits")
    if closed.is_set():
        raise _closed_error(name)


def _closed_error(name: str) -> CallCancelledError:
    return CallCancelledError(f"cluster budget {name} is closed: its run ended")


def _unreachable_error(name: str, exc: BaseException) -> CallCancelledError:
    """The scheduler is gone (or the client closed): the run cannot go on within the user's limits."""
    return CallCancelledError(
        f"cluster budget {name}: the Dask scheduler is out of reach ({type(exc).__name__}: {exc})"
    )


#: this process's admissions, by budget name
_admissions: Dict[str, ClusterAdmission] = {}
_admissions_lock = threading.Lock()
