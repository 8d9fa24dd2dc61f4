"""The one shared ``ThreadPoolExecutor`` of a sync, with priorities, bounded submission and a cancel event.

Tasks never wait for other tasks: work continues by submitting the next task (a listing page submits its
children, the last part of a file finalizes it). Submitting never blocks — it only appends a small descriptor to
a priority queue — so a pool thread can always submit, even at ``max_workers=1``. One dispatcher, running in a
helper thread of its own (the calling thread only waits, so Ctrl-C never lands inside the dispatcher's lock: see
:meth:`TaskPool.run`), hands queued tasks to the executor while fewer than ``max_workers`` are in flight, in
priority order: parts of files already started first, tree listings last, and listings only while the backlog of
files is below a high-water mark. That keeps memory flat on a million-file tree: the walk runs ahead of the
downloads by a bounded amount.
"""

from __future__ import annotations

import collections
import enum
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Deque, Dict, List, Optional

from synclient.errors import Cancelled

log = logging.getLogger("synclient.transfer")


class Priority(enum.IntEnum):
    """Lower runs first."""

    PART = 0  # ranged part / stream of a file already started: finish what is open
    URL_BATCH = 1  # pre-signed URLs for files waiting to start
    DOWNLOAD = 2  # start a file whose URL is known
    BUNDLE = 3  # learn a file's handle (size, MD5)
    LISTING = 4  # one children page of a folder


CONTROL_PLANE = frozenset({Priority.URL_BATCH, Priority.BUNDLE, Priority.LISTING})


class _Ordered:
    """A queued task with its ``--order-by`` key (:meth:`TaskPool.submit_ordered`)."""

    __slots__ = ("key", "task")

    def __init__(self, key: tuple, task: Callable[[], None]) -> None:
        self.key = key
        self.task = task

    def __call__(self) -> None:
        self.task()


class TaskPool:
    """Priority dispatcher over one ``ThreadPoolExecutor``. Call :meth:`run` from the thread that owns the sync."""

    def __init__(
        self,
        max_workers: int,
        *,
        backlog_high_water: Optional[int] = None,
        control_plane_limit: Callable[[], int] = lambda: 1 << 30,
    ) -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be >= 1")
        self.max_workers = max_workers
        self.cancel_event = threading.Event()
        self._backlog_high_water = backlog_high_water or max(1000, 8 * max_workers)
        self._control_plane_limit = control_plane_limit
        self._executor = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="synclient")
        self._cond = threading.Condition(threading.Lock())
        self._queues: Dict[Priority, Deque[Callable[[], None]]] = {p: collections.deque() for p in Priority}
        self._running: Dict[Priority, int] = {p: 0 for p in Priority}
        self._in_flight = 0
        self._idle_checks: List[Callable[[], None]] = []
        self._expected = 0  # results promised from outside the pool (a Dask shard's files): the run waits for them
        self.expected_high_water: Optional[int] = None  # listings wait while more than these are expected
        self.cpu_seconds = 0.0  # CPU time the tasks took, summed over their threads (a shard's own, per worker)
        self.unexpected_errors: List[BaseException] = []

    # -- called from anywhere, never blocks --------------------------------------------------------------------

    def submit(self, priority: Priority, fn: Callable[..., None], *args: Any, **kwargs: Any) -> None:
        task = (lambda: fn(*args, **kwargs)) if (args or kwargs) else fn
        with self._cond:
            self._queues[priority].append(task)
            self._cond.notify()

    def submit_ordered(self, priority: Priority, key: tuple, fn: Callable[..., None], *args: Any) -> None:
        """Like :meth:`submit`, but the task waits before every queued task of ``priority`` submitted this way with a
        larger ``key`` (ties and other tasks keep their order): ``--order-by`` among the downloads ready at once."""
        task = _Ordered(key, lambda: fn(*args))
        with self._cond:
            queue = self._queues[priority]
            at = len(queue)
            while at > 0:
                before = queue[at - 1]
                if not isinstance(before, _Ordered) or not before.key > key:
                    break
                at -= 1
            queue.insert(at, task)
            self._cond.notify()

    def outstanding(self, *priorities: Priority) -> int:
        """Queued plus running tasks of these priorities."""
        with self._cond:
            return sum(len(self._queues[p]) + self._running[p] for p in priorities)

    def expect(self, count: int = 1) -> None:
        """``count`` results will arrive from outside the pool (work running elsewhere, such as a Dask shard): the
        run does not end before each has been delivered (:meth:`deliver`) or the run is cancelled."""
        with self._cond:
            self._expected += count

    def deliver(self, priority: Priority, fn: Callable[..., None], *args: Any, count: int = 1) -> None:
        """An expected result arrived: ``fn(*args)`` becomes a task, and ``count`` fewer results are awaited."""
        with self._cond:
            self._expected -= count
            self._queues[priority].append(lambda: fn(*args))
            self._cond.notify()

    def add_idle_check(self, check: Callable[[], None]) -> None:
        """``check`` runs in the dispatcher thread on every dispatch round; it may submit tasks."""
        self._idle_checks.append(check)

    def check_cancelled(self) -> None:
        if self.cancel_event.is_set():
            raise Cancelled()

    # -- the dispatcher ------------------------------------------------------------------------------------------

    def run(self) -> None:
        """Dispatch until every queue is empty and nothing runs; Ctrl-C cancels promptly and re-raises.

        The dispatch loop runs in a helper thread, and the calling thread only waits for it. Ctrl-C raises
        ``KeyboardInterrupt`` in the main thread at an arbitrary bytecode; had the main thread been dispatching, it
        could land between taking the pool's lock and entering the ``with`` block, leaving the lock held for good
        and every worker (non-daemon threads, joined at interpreter exit) stuck on it.
        """
        finished = threading.Event()
        failure: List[BaseException] = []

        def dispatch() -> None:
            try:
                self._dispatch()
            except BaseException as exc:  # pragma: no cover - a bug in the dispatcher itself
                failure.append(exc)
            finally:
                finished.set()

        dispatcher = threading.Thread(target=dispatch, name="synclient-dispatch", daemon=True)
        interrupted = False
        try:
            dispatcher.start()
            while not finished.wait(timeout=0.2):
                pass
        except BaseException:
            interrupted = True
            self.cancel()
            raise
        finally:
            # A task's cancel (a fatal error) lets running tasks stop at their next chunk or retry wait, and the
            # run goes on to close the index after them; only Ctrl-C leaves at once.
            self._executor.shutdown(wait=not interrupted, cancel_futures=True)
        if failure:
            raise failure[0]

    def _dispatch(self) -> None:
        while not self.cancel_event.is_set():
            for check in self._idle_checks:
                check()
            with self._cond:
                task_priority = self._next_priority()
                if task_priority is None:
                    if self._in_flight == 0 and not self._expected and not any(self._queues.values()):
                        if not self._pending_after_checks():
                            return
                        continue
                    self._cond.wait(timeout=0.25)
                    continue
                task = self._queues[task_priority].popleft()
                self._running[task_priority] += 1
                self._in_flight += 1
            self._executor.submit(self._run_task, task_priority, task)

    def cancel(self, *, grace_seconds: float = 2.0) -> None:
        """Stop handing out work, tell running tasks to stop at their next chunk, wait briefly for them."""
        self.cancel_event.set()
        with self._cond:
            for queue in self._queues.values():
                queue.clear()
        deadline = time.monotonic() + grace_seconds
        with self._cond:
            while self._in_flight and time.monotonic() < deadline:
                self._cond.wait(timeout=0.05)

    def _pending_after_checks(self) -> bool:
        """Give idle checks one more chance (e.g. the URL batcher's tail flush) before declaring the run over."""
        self._cond.release()
        try:
            for check in self._idle_checks:
                check()
        finally:
            self._cond.acquire()
        return self._in_flight > 0 or self._expected > 0 or any(self._queues.values())

    def _next_priority(self) -> Optional[Priority]:
        if self._in_flight >= self.max_workers or self.cancel_event.is_set():
            return None
        control_running = sum(self._running[p] for p in CONTROL_PLANE)
        for priority in Priority:
            if not self._queues[priority]:
                continue
            if priority in CONTROL_PLANE and control_running >= max(1, self._control_plane_limit()):
                continue  # a worker would only sit in the gate; let data tasks have it
            if priority is Priority.LISTING and (
                self._backlog() >= self._backlog_high_water
                or (self.expected_high_water is not None and self._expected >= self.expected_high_water)
            ):
                continue  # the walk waits for the files it found to be fetched (here, or on a Dask cluster)
            return priority
        return None

    def _backlog(self) -> int:
        return len(self._queues[Priority.BUNDLE]) + len(self._queues[Priority.DOWNLOAD])

    def _run_task(self, priority: Priority, task: Callable[[], None]) -> None:
        cpu_started = time.thread_time()
        try:
            if not self.cancel_event.is_set():
                task()
        except Cancelled:
            pass
        except BaseException as exc:  # a bug in a task: keep it, finish the run, raise it at the end
            log.exception("unexpected error in a sync task")
            with self._cond:
                self.unexpected_errors.append(exc)
        finally:
            cpu = time.thread_time() - cpu_started
            with self._cond:
                self.cpu_seconds += cpu
                self._running[priority] -= 1
                self._in_flight -= 1
                self._cond.notify_all()
