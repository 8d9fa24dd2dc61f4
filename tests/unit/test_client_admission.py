"""A Platform's admission shared with the user's other processes (``Platform.admission``, a ``RestAdmission``):
every attempt enters it after the process gate and leaves it before the gate's slot goes back."""

import threading

import pytest
import responses
from client_support import FAST, REPO, ROOT, TOKEN, error, prove

from synclient.errors import CallCancelledError, ServerError
from synclient.platform.gate import AdaptiveGate
from synclient.platform.rest import Platform, RetryPolicy

FREQUENT = "Requests are too frequent. Allowed 600 requests every 60 seconds."


class CountingAdmission:
    """A RestAdmission that counts; ``waited`` is what each enter says it waited, ``refuse`` what it raises."""

    def __init__(self, *, waited=0.0, refuse=None, gate=None):
        self.entered = self.left = 0
        self.waited = waited
        self.refuse = refuse
        self.gate = gate
        self.gate_in_flight = []  # the process gate's requests in flight at each enter and leave
        self.cancels = []

    def enter(self, *, cancel):
        self.cancels.append(cancel)
        self.gate_in_flight.append(self.gate.policy.in_flight)
        if self.refuse is not None:
            raise self.refuse
        self.entered += 1
        return self.waited

    def leave(self):
        self.gate_in_flight.append(self.gate.policy.in_flight)
        self.left += 1


@pytest.fixture
def admitted(platform):
    platform.admission = CountingAdmission(gate=platform.gate)
    return platform


@responses.activate
def test_every_attempt_enters_and_leaves_inside_the_gate_retries_and_429s_included(admitted):
    responses.add(responses.GET, REPO + "/userProfile", **error(429, FREQUENT))
    responses.add(responses.GET, REPO + "/userProfile", **error(503, "down for maintenance"))
    responses.add(responses.GET, REPO + "/userProfile", json={"ownerId": "1"})
    assert admitted.get_user_profile() == {"ownerId": "1"}
    admission = admitted.admission
    assert admission.entered == admission.left == len(responses.calls) == admitted.stats.calls == 3
    assert admission.gate_in_flight == [1] * 6  # entered after the gate admitted, left before its slot went back
    assert admission.cancels == [admitted.cancel_event] * 3
    assert admitted.gate.policy.in_flight == 0


@responses.activate
def test_an_attempt_whose_answer_failed_leaves_too(admitted):
    responses.add(responses.GET, REPO + "/userProfile", **error(500, "boom"))
    with pytest.raises(ServerError):
        admitted.get_user_profile()
    assert admitted.admission.entered == admitted.admission.left == FAST.max_attempts


@responses.activate
def test_a_cancelled_admission_sends_nothing_and_gives_the_gates_slot_back():
    gate = AdaptiveGate(initial_limit=1, max_limit=1)
    refusal = CallCancelledError("cancelled while waiting for the cluster's request limits")
    with Platform(
        endpoint=ROOT, token=TOKEN, retry=FAST, gate=gate, admission=CountingAdmission(refuse=refusal, gate=gate)
    ) as platform:
        with pytest.raises(CallCancelledError):
            platform.get_user_profile()
        assert len(responses.calls) == 0 and platform.stats.calls == 0
        assert platform.admission.left == 0  # never entered, never left
    assert gate.policy.in_flight == 0
    gate.release(gate.acquire(cancel=threading.Event()))  # the one slot is free


@responses.activate
def test_an_admission_that_fails_to_leave_still_gives_the_gates_slot_back(platform):
    class BrokenLeave(CountingAdmission):
        def leave(self):
            raise CallCancelledError("the cluster is gone")

    platform.admission = BrokenLeave(gate=platform.gate)
    responses.add(responses.GET, REPO + "/userProfile", json={"ownerId": "1"})
    with pytest.raises(CallCancelledError):
        platform.get_user_profile()
    assert platform.gate.policy.in_flight == 0


@responses.activate
@pytest.mark.parametrize("waited,succeeds", [(3600.0, True), (0.0, False)])
def test_time_waiting_for_admission_is_not_retry_time(waited, succeeds):
    """A call whose retry time is spent by its first try still gets its tries when the admission made it wait."""
    no_time = RetryPolicy(max_attempts=4, max_total_seconds=0.0, initial_backoff=0.001, max_backoff=0.01)
    with Platform(endpoint=ROOT, token=TOKEN, retry=no_time, gate=AdaptiveGate(max_limit=4)) as platform:
        prove(platform)  # from now on the full policy applies, not the first contact's
        platform.admission = CountingAdmission(waited=waited, gate=platform.gate)
        responses.add(responses.GET, REPO + "/userProfile", **error(503, "down for maintenance"))
        responses.add(responses.GET, REPO + "/userProfile", json={"ownerId": "1"})
        if succeeds:
            assert platform.get_user_profile() == {"ownerId": "1"}
        else:
            with pytest.raises(ServerError):
                platform.get_user_profile()
