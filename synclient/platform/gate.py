"""The one control-plane gate every REST call of a process passes, per platform user.

Synapse refuses a user's request with 429 for two reasons, and says which limit it applied
(Synapse-Repository-Services ``ThrottleUtils``; no ``Retry-After`` header):

- "Too many concurrent requests. Allowed 3 concurrent connections at any time."
- "Requests are too frequent. Allowed 600 requests every 60 seconds."

The gate knows both limits. :class:`ThrottlePolicy` is the decision core, pure and clock-driven so a simulation
can run it through hours of traffic in a second (``tests/unit/test_gate_simulation.py``); :class:`AdaptiveGate`
wraps it for threads.

- **Concurrency**: a limit that starts at the documented 3, probes one more and, while the server never refused,
  doubles (slow start). A refusal that states the limit sets the ceiling to it; otherwise (or when the user's
  other processes share the slots) the limit halves, and grows back by one after ``growth_successes x limit``
  successes, up to the ceiling.
- **Frequency**: a record of request starts over the window. The first "too frequent" refusal gives the window's
  size: from its text when present, else from the starts in the last window that the server admitted. From then
  on the gate never starts a request that would put more than its budget (the size less a 1% reserve, counted
  over the window plus a 1% margin for network jitter) in one window. A refusal despite the budget (another
  process of the same user shares the window) lowers the budget to what the server admitted from us, once per
  round of requests in flight. Every window that ran at the budget without a refusal grows it: by a tenth of a
  stated size (full speed again within ten windows), or, for an unstated size, doubling: past the server's size,
  the next refusal measures it again (a measured size is probed only every fifth window).
- ``Retry-After``, when a server sends one, holds every start back for that long (at most five minutes).

The gate paces one process, and remembers across processes: the gate :func:`shared_gate` makes for a platform user
starts from what the user's earlier commands on this machine left in a state file
(:mod:`synclient.platform.gate_state`: the calls started within the window, what 429s taught) and adds its own to
it, so a command started right after another neither waits blindly nor takes its predecessor's calls for another
client's. When several processes of one user share the limits (a run sharded over a Dask
cluster), a :class:`RestAdmission` admits each attempt the gate let through against limits kept for all of them
(:mod:`synclient.cluster.budget`).

Stability: every quantity is bounded (limit in [min, ceiling], budget in [1, stated size], cool-down at most
:data:`MAX_COOL_DOWN` ahead); decreases need a fresh refusal of a request started after the last decrease, and
increases need only time without refusals, so no state is absorbing (a property test drives arbitrary histories
and checks the way back to full speed). The lock is held for bookkeeping only,
never across network I/O.
"""

from __future__ import annotations

import collections
import enum
import hashlib
import logging
import math
import re
import threading
import time
import weakref
from dataclasses import dataclass
from dataclasses import replace as replaced
from typing import Callable, Deque, Iterable, List, Optional, Protocol, Set, Tuple

from synclient.errors import CallCancelledError
from synclient.platform.gate_state import GateRecord, GateStateFile, starts_of

log = logging.getLogger(__name__)

#: Synapse's window when a refusal does not state one.
DEFAULT_WINDOW_SECONDS = 60.0
#: the most a ``Retry-After`` may hold every start back, and the longest window a 429's text may teach (a server
#: stating an absurd window must not stall a run for days)
MAX_COOL_DOWN = 300.0
MAX_WINDOW_SECONDS = 3600.0
#: the record of starts keeps at most this many (Synapse's window is 600; an unthrottled 100,000-file sync would
#: otherwise keep every start of its last minute)
MAX_RECORDED_STARTS = 20_000
#: how often a thread waiting in the gate looks at its cancel event
CANCEL_POLL_SECONDS = 0.2
#: a gate with a state file adds its new starts to it at most this often (and a tenth of the window, when shorter:
#: a command started meanwhile learns of them), and once more when its platform closes
SHARE_EVERY_SECONDS = 5.0
MIN_SHARE_EVERY_SECONDS = 0.1
#: share of the stated window size kept in reserve, and share of its length added as margin (network jitter
#: moves a request's arrival at the server against its start here)
RESERVE_SHARE = 0.01
MARGIN_SHARE = 0.01
#: a clean window at the budget grows it by this share of the stated size
BUDGET_GROWTH = 0.1
#: an unstated size a refusal just measured is probed past only after this many quiet windows at it (and a
#: concurrency limit that was refused only after this many times the usual run of successes)
PROBE_AFTER_WINDOWS = 5

_CONCURRENCY_TEXT = re.compile(r"allowed\s+(\d+)\s+concurrent", re.IGNORECASE)
_FREQUENCY_TEXT = re.compile(r"allowed\s+(\d+)\s+requests?\s+every\s+(\d+(?:\.\d+)?)\s+seconds?", re.IGNORECASE)


class ThrottleKind(enum.Enum):
    CONCURRENCY = "concurrency"
    FREQUENCY = "frequency"


@dataclass(frozen=True)
class Throttle:
    """What one 429 answer said: which limit, and its size when the server stated it."""

    kind: ThrottleKind
    allowed: Optional[int] = None  # the limit's size, when stated
    window_seconds: Optional[float] = None  # FREQUENCY: the window's length, when stated
    retry_after: Optional[float] = None  # the Retry-After header, seconds

    @classmethod
    def from_reason(cls, reason: Optional[str], *, retry_after: Optional[float] = None) -> Throttle:
        text = reason or ""
        frequency = _FREQUENCY_TEXT.search(text)
        if frequency:
            return cls(
                ThrottleKind.FREQUENCY,
                allowed=int(frequency.group(1)),
                window_seconds=float(frequency.group(2)),
                retry_after=retry_after,
            )
        if "frequent" in text.lower():
            return cls(ThrottleKind.FREQUENCY, retry_after=retry_after)
        concurrency = _CONCURRENCY_TEXT.search(text)
        return cls(
            ThrottleKind.CONCURRENCY,
            allowed=int(concurrency.group(1)) if concurrency else None,
            retry_after=retry_after,
        )


@dataclass(frozen=True)
class Ticket:
    """One admitted request start; given back to :meth:`ThrottlePolicy.on_finish`."""

    started_at: float
    waited: float = 0.0  # seconds the caller spent in the gate before this start


class ThrottlePolicy:
    """The gate's decisions, without threads: when may the next request start, and what an answer teaches."""

    def __init__(
        self, *, initial_limit: int = 3, max_limit: int = 32, min_limit: int = 1, growth_successes: int = 50
    ) -> None:
        if not 1 <= min_limit <= initial_limit <= max_limit:
            raise ValueError("gate limits must satisfy 1 <= min <= initial <= max")
        # concurrency
        self.limit = initial_limit
        self.thread_cap = max_limit  # the caller's threads: never more in flight than these
        self.stated_concurrency: Optional[int] = None  # the server's stated limit, once a refusal said it
        self._min_limit = min_limit
        self._growth_successes = growth_successes
        self._slow_start = True
        self._successes = 0
        self._concurrency_cut_at = -math.inf
        self._refused_at = math.inf  # in flight at the last refusal that cut the limit
        self.in_flight = 0
        # frequency
        self.window_seconds = DEFAULT_WINDOW_SECONDS
        self.budget: Optional[int] = None  # starts allowed per window, once a refusal taught the window
        self.budget_ceiling: Optional[int] = None  # a stated size, less the reserve
        # admitted starts within the counted window (the newest, when there are more)
        self._starts: Deque[float] = collections.deque(maxlen=MAX_RECORDED_STARTS)
        # our starts not yet given to the other runs of this user (:meth:`take_unshared`)
        self._unshared: Deque[float] = collections.deque(maxlen=MAX_RECORDED_STARTS)
        self._budget_changed_at = -math.inf
        self._budget_bound = False  # a start had to wait for the budget since the last change
        self._budget_measured = False  # the budget is what the last refusal measured
        self._shared_noted = False  # "another client shares the window" was said once
        self._cool_until = -math.inf
        self.throttled = 0  # 429s answered, all kinds

    # -- decisions ----------------------------------------------------------------------------------------------

    @property
    def ceiling(self) -> int:
        """The most requests the limit may grow to."""
        if self.stated_concurrency is None:
            return self.thread_cap
        return max(self._min_limit, min(self.thread_cap, self.stated_concurrency))

    @property
    def counted_window(self) -> float:
        return self.window_seconds * (1.0 + MARGIN_SHARE)

    def start_delay(self, now: float) -> Optional[float]:
        """0 when a request may start now; seconds to wait; None to wait for a request to finish."""
        self._forget_before(now - self.counted_window)
        delay = self._cool_until - now
        if self.budget is not None and len(self._starts) >= self.budget:
            self._budget_bound = True
            delay = max(delay, self._starts[len(self._starts) - self.budget] + self.counted_window - now)
        if delay > 0:
            return delay
        if self.in_flight >= self.limit:
            return None
        return 0.0

    def on_start(self, now: float, *, waited: float = 0.0) -> Ticket:
        self.in_flight += 1
        self._starts.append(now)
        self._unshared.append(now)
        return Ticket(now, waited)

    def on_finish(self, ticket: Ticket, now: float, throttle: Optional[Throttle] = None) -> None:
        observed = self.in_flight  # in flight when this answer came, itself included
        self.in_flight -= 1
        if throttle is None:
            self._on_success(now)
            return
        self.throttled += 1
        self._successes = 0
        if throttle.retry_after is not None:
            self._cool_until = max(self._cool_until, now + min(max(throttle.retry_after, 0.0), MAX_COOL_DOWN))
        if throttle.kind is ThrottleKind.CONCURRENCY:
            self._on_concurrency_refusal(ticket, now, throttle, observed)
        else:
            self._on_frequency_refusal(ticket, now, throttle)

    # -- learning -----------------------------------------------------------------------------------------------

    def _on_success(self, now: float) -> None:
        self._successes += 1
        needed = self.limit if self._slow_start else self._growth_successes * self.limit
        if self.limit + 1 >= self._refused_at:
            needed *= PROBE_AFTER_WINDOWS  # back where a refusal came: probe it again only now and then
        if self._successes >= needed:
            self._successes = 0
            if self.limit < self.ceiling:
                # slow start: one careful probe past the documented 3, then doubling
                step = self.limit if self._slow_start and self.limit > 3 else 1
                self.limit = min(self.ceiling, self.limit + step)
        self._grow_budget(now)

    def _grow_budget(self, now: float) -> None:
        """After a window that ran at the budget without a refusal: a stated size is regained by a tenth of it per
        window; an unstated one doubles (past the server's size, the next refusal measures it again), the first
        time only after :data:`PROBE_AFTER_WINDOWS` quiet windows at what a refusal measured."""
        if self.budget is None or not self._budget_bound:
            return
        quiet_windows = PROBE_AFTER_WINDOWS if self.budget_ceiling is None and self._budget_measured else 1
        if now - self._budget_changed_at < quiet_windows * self.counted_window:
            return
        if self.budget_ceiling is not None:
            if self.budget >= self.budget_ceiling:
                return
            grown = min(self.budget_ceiling, self.budget + max(1, round(BUDGET_GROWTH * self.budget_ceiling)))
        else:
            grown = 2 * self.budget  # an overshoot costs one refusal, which measures the size again
        self._budget_measured = False
        self.budget = grown
        self._budget_changed_at = now
        self._budget_bound = False

    def _on_concurrency_refusal(self, ticket: Ticket, now: float, throttle: Throttle, observed: int) -> None:
        self._slow_start = False
        if throttle.allowed:
            self.stated_concurrency = throttle.allowed
            if observed > throttle.allowed:  # our own excess: now we know the size, no penalty
                self.limit = min(self.limit, self.ceiling)
                self._concurrency_cut_at = now
                return
        if ticket.started_at < self._concurrency_cut_at:
            return  # in flight before the last cut: that cut already answered this refusal
        # slots taken by someone else (or an unstated limit): halve, grow back additively
        self.limit = max(self._min_limit, min(self.limit, observed) // 2)
        self._concurrency_cut_at = now
        self._refused_at = observed

    def _on_frequency_refusal(self, ticket: Ticket, now: float, throttle: Throttle) -> None:
        self._forget_start(ticket.started_at)  # the server does not count what it refused
        if ticket.started_at < self._budget_changed_at:
            return
        if throttle.window_seconds:
            self.window_seconds = min(throttle.window_seconds, MAX_WINDOW_SECONDS)
        self._forget_before(now - self.counted_window)
        # what the server took in its window: our starts it did not refuse, less those still in flight (which it
        # may refuse too)
        admitted = max(1, len(self._starts) - self.in_flight)
        if throttle.allowed and self.budget_ceiling != with_reserve(throttle.allowed):
            self.budget = self.budget_ceiling = with_reserve(throttle.allowed)
            log.info(
                "the platform allows %d requests every %.0f s: pacing REST calls at %d per %.1f s",
                throttle.allowed,
                self.window_seconds,
                self.budget,
                self.counted_window,
            )
        elif self.budget is None:
            self.budget = with_reserve(admitted)
            log.info(
                "the platform refused a request after %d in %.0f s: pacing REST calls at %d per %.1f s",
                admitted,
                self.window_seconds,
                self.budget,
                self.counted_window,
            )
        else:
            # refused within our budget: another process of this user shares the window; take what it left us
            self.budget = max(1, min(self.budget - 1, with_reserve(admitted)))
            # said once (the CLI shows it as a note), then only in the debug log: sharing goes on for a while
            log.log(
                logging.DEBUG if self._shared_noted else logging.INFO,
                "refused within the request budget: another client of this user shares the window; pacing "
                "REST calls at %d per %.1f s for now",
                self.budget,
                self.counted_window,
            )
            self._shared_noted = True
        self._budget_changed_at = now
        self._budget_bound = False
        self._budget_measured = True

    def _forget_before(self, horizon: float) -> None:
        starts = self._starts
        while starts and starts[0] < horizon:
            starts.popleft()

    def _forget_start(self, started_at: float) -> None:
        for record in (self._starts, self._unshared):
            try:
                record.remove(started_at)
            except ValueError:
                pass  # already out of the window (or shared: the file may then count one refused call too many)

    # -- what the runs of one user share (synclient.platform.gate_state) ---------------------------------------

    def take_unshared(self) -> List[float]:
        """Our starts since the last call (less those refused), for the other runs of this user."""
        taken = list(self._unshared)
        self._unshared.clear()
        return taken

    def learned(self) -> GateRecord:
        """What 429s taught, times on this policy's clock; no starts (see :meth:`take_unshared`)."""
        return GateRecord(
            window_seconds=self.window_seconds if self.budget is not None else None,
            budget=self.budget,
            budget_ceiling=self.budget_ceiling,
            stated_concurrency=self.stated_concurrency,
            cool_until=self._cool_until if math.isfinite(self._cool_until) else None,
        )

    def adopt(self, starts: Iterable[float], learned: GateRecord) -> None:
        """Starts of the user's other runs (times on this policy's clock), counted in the window as ours are, and
        what they learned where this policy has not learned it itself."""
        others = list(starts)
        if others:
            self._starts = collections.deque(sorted([*self._starts, *others]), maxlen=MAX_RECORDED_STARTS)
        if self.budget is None and learned.budget is not None:
            self.window_seconds = min(learned.window_seconds or DEFAULT_WINDOW_SECONDS, MAX_WINDOW_SECONDS)
            self.budget_ceiling = learned.budget_ceiling
            self.budget = min(learned.budget, learned.budget_ceiling or learned.budget)
            self._budget_measured = learned.budget_ceiling is None
        if self.stated_concurrency is None and learned.stated_concurrency is not None:
            self.stated_concurrency = learned.stated_concurrency
            self.limit = max(self._min_limit, min(self.limit, self.ceiling))
        if learned.cool_until is not None:
            self._cool_until = max(self._cool_until, learned.cool_until)


def with_reserve(size: int) -> int:
    """The starts a window of ``size`` requests allows us: the size less a 1% reserve (at least one)."""
    return max(1, size - max(1, math.ceil(size * RESERVE_SHARE))) if size > 1 else 1


class RestAdmission(Protocol):
    """Admission to limits the process shares with the user's other processes (the workers of a Dask cluster:
    :mod:`synclient.cluster.budget`). Every REST attempt that the process gate admitted then enters, and leaves when
    its answer was read; the platform's limits are per user, and the process gate knows only its own process."""

    def enter(self, *, cancel: Optional[threading.Event]) -> float:
        """Wait until this process may start one more request; the seconds waited. :class:`CallCancelledError`
        once ``cancel`` is set while waiting (looked at every :data:`CANCEL_POLL_SECONDS` at least)."""
        ...

    def leave(self) -> None:
        """The request that entered ended."""
        ...


class AdaptiveGate:
    """The thread-safe gate: ``ticket = gate.acquire(cancel=event)`` ... ``gate.release(ticket, throttle)``."""

    def __init__(
        self,
        *,
        initial_limit: int = 3,
        max_limit: int = 32,
        min_limit: int = 1,
        growth_successes: int = 50,
        clock: Callable[[], float] = time.monotonic,
        state: Optional[GateStateFile] = None,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._policy = ThrottlePolicy(
            initial_limit=initial_limit, max_limit=max_limit, min_limit=min_limit, growth_successes=growth_successes
        )
        self._cond = threading.Condition(threading.Lock())
        self._clock = clock
        #: the state file this gate shares with the user's other runs (None: this process only)
        self.state = state
        self._wall_clock = wall_clock
        self._share_lock = threading.Lock()  # one merge at a time; never held with the gate's lock
        self._known: Set[float] = set()  # wall-clock starts the file and this gate both have
        self._next_share = -math.inf
        if state is not None:
            self._adopt(state.load())

    @property
    def policy(self) -> ThrottlePolicy:
        return self._policy

    @property
    def limit(self) -> int:
        return self._policy.limit

    @property
    def throttled(self) -> int:
        return self._policy.throttled

    def raise_ceiling(self, max_limit: int) -> None:
        """Another caller with more threads shares this gate; a ceiling the server stated stays."""
        with self._cond:
            self._policy.thread_cap = max(self._policy.thread_cap, max_limit)

    def acquire(self, *, cancel: Optional[threading.Event] = None) -> Ticket:
        """Wait until a request may start; :class:`CallCancelledError` once ``cancel`` is set."""
        with self._cond:
            entered = self._clock()
            while True:
                if cancel is not None and cancel.is_set():
                    raise CallCancelledError("cancelled while waiting for the platform's request limits")
                now = self._clock()
                delay = self._policy.start_delay(now)
                if delay == 0:
                    return self._policy.on_start(now, waited=now - entered)
                if cancel is not None:
                    delay = CANCEL_POLL_SECONDS if delay is None else min(delay, CANCEL_POLL_SECONDS)
                self._cond.wait(timeout=delay)

    def release(self, ticket: Ticket, throttle: Optional[Throttle] = None) -> None:
        """Give the slot back; ``throttle`` says what a 429 answer said."""
        with self._cond:
            now = self._clock()
            self._policy.on_finish(ticket, now, throttle)
            self._cond.notify_all()
            share = self.state is not None and now >= self._next_share
            if share:
                every = min(SHARE_EVERY_SECONDS, self._policy.window_seconds / 10)
                self._next_share = now + max(MIN_SHARE_EVERY_SECONDS, every)
        if share:
            self.share(wait=False)

    def share(self, *, wait: bool = True) -> None:
        """Add this gate's new starts and what it learned to the state file, and take in the starts the user's
        other runs added meanwhile (nothing without a state file). ``wait=False``: not when another thread is at it.
        Never raises: sharing helps a run, it never fails one."""
        state = self.state
        if state is None or not self._share_lock.acquire(blocking=wait):
            return
        try:
            with self._cond:
                offset = self._wall_clock() - self._clock()  # this policy's clock -> wall clock
                ours = starts_of(start + offset for start in self._policy.take_unshared())
                learned = self._policy.learned()
            if learned.cool_until is not None:
                learned = replaced(learned, cool_until=learned.cool_until + offset)
            merged = state.merge(replaced(learned, starts=ours))
            if merged is not None:
                self._known.update(ours)
                self._adopt(merged)
        except Exception as exc:  # noqa: BLE001 - a broken share must not fail the call that released
            log.debug("gate state not shared: %r", exc)
        finally:
            self._share_lock.release()

    def _adopt(self, shared: GateRecord) -> None:
        """Take in what the file holds that this gate does not know (wall-clock times)."""
        with self._cond:
            offset = self._wall_clock() - self._clock()
            others = [start - offset for start in shared.starts if start not in self._known]
            learned = shared
            if shared.cool_until is not None:
                learned = replaced(shared, cool_until=shared.cool_until - offset)
            self._policy.adopt(others, learned)
            self._known = set(shared.starts)  # the file keeps the window only: so does this set
            self._cond.notify_all()
        if others:
            log.debug("the gate counts %d calls of this user's other runs in the window", len(others))


_shared_gates: weakref.WeakValueDictionary[Tuple[str, str], AdaptiveGate] = weakref.WeakValueDictionary()
_shared_lock = threading.Lock()


def shared_gate(endpoint: str, token: Optional[str], *, max_limit: int) -> AdaptiveGate:
    """The gate of one platform user in this process: the platform's limits are per user, so every
    :class:`~synclient.platform.rest.Platform` of the same endpoint and token passes the same gate (alive while any of
    them is). The token is kept only as a digest. A new gate starts from the user's state file
    (:mod:`synclient.platform.gate_state`), unless ``SYNCLIENT_GATE_STATE=0``."""
    user = hashlib.sha256(token.encode("utf-8")).hexdigest() if token else "anonymous"
    key = (endpoint.rstrip("/"), user)
    with _shared_lock:
        gate = _shared_gates.get(key)
        if gate is None:
            state = GateStateFile.for_user(
                key[0], token, default_window=DEFAULT_WINDOW_SECONDS, margin_share=MARGIN_SHARE
            )
            gate = AdaptiveGate(max_limit=max_limit, state=state)
            _shared_gates[key] = gate
        else:
            gate.raise_ceiling(max_limit)
        return gate
