"""The platform's retries read the errors' nature: a retryable error is tried again, and once its tries ran out it is
raised marked spent (so an outer loop does not multiply them); any other error is raised at once."""

import pytest
import requests
import responses
from client_support import FAST, REPO, error, prove

from synclient.errors import (
    AccessDeniedError,
    BadRequestError,
    EndpointError,
    ErrorNature,
    MalformedAnswerError,
    NotFoundError,
    PermanentServerError,
    ServerError,
    ThrottledError,
    is_retryable,
)
from synclient.platform.rest import TRANSIENT_SERVER_STATUS

FREQUENT = "Requests are too frequent. Allowed 600 requests every 60 seconds."


def _spent(exc) -> bool:
    return exc.retries_spent and not exc.retryable and not is_retryable(exc)


@responses.activate
@pytest.mark.parametrize("status", sorted(TRANSIENT_SERVER_STATUS))
def test_a_transient_5xx_is_tried_again_then_raised_spent(platform, status):
    responses.add(responses.GET, REPO + "/userProfile", **error(status, "down"))
    with pytest.raises(ServerError, match="down") as info:
        platform.get_user_profile()
    assert len(responses.calls) == FAST.max_attempts
    assert info.value.nature is ErrorNature.RETRYABLE and _spent(info.value)


@responses.activate
@pytest.mark.parametrize("status", [501, 505, 507, 599])
def test_a_5xx_that_will_not_change_is_a_server_error_raised_at_once_and_not_retryable(platform, status):
    responses.add(responses.GET, REPO + "/userProfile", **error(status, "not implemented"))
    with pytest.raises(ServerError) as info:
        platform.get_user_profile()
    assert len(responses.calls) == 1
    assert type(info.value) is PermanentServerError and info.value.status == status  # still a ServerError
    assert info.value.nature is ErrorNature.PER_FILE and not info.value.retryable and not info.value.retries_spent
    assert ServerError("another").nature is ErrorNature.RETRYABLE


@responses.activate
def test_a_5xx_that_will_not_change_from_an_endpoint_never_proven_is_an_endpoint_error_at_once(platform):
    responses.add(responses.GET, REPO + "/userProfile", status=501, body="<html>no</html>", content_type="text/html")
    with pytest.raises(EndpointError, match="not a Synapse API"):
        platform.get_user_profile()
    assert len(responses.calls) == 1


@responses.activate
@pytest.mark.parametrize("status,kind", [(400, BadRequestError), (403, AccessDeniedError), (404, NotFoundError)])
def test_an_error_that_is_not_retryable_is_raised_at_once_and_not_marked_spent(platform, status, kind):
    responses.add(responses.GET, REPO + "/userProfile", **error(status, "no"))
    with pytest.raises(kind) as info:
        platform.get_user_profile()
    assert len(responses.calls) == 1
    assert not info.value.retryable and not info.value.retries_spent


@responses.activate
def test_a_failed_connection_is_raised_spent_once_the_tries_ran_out(platform):
    prove(platform)
    responses.calls.reset()
    responses.add(responses.GET, REPO + "/userProfile", body=requests.ConnectionError("reset"))
    with pytest.raises(ServerError, match="connection failed") as info:
        platform.get_user_profile()
    assert len(responses.calls) == FAST.max_attempts and _spent(info.value)


@responses.activate
def test_a_malformed_answer_is_raised_spent_once_the_tries_ran_out(platform):
    prove(platform)
    responses.calls.reset()
    responses.add(responses.GET, REPO + "/userProfile", body='{"ownerId": "1", "userN')
    with pytest.raises(MalformedAnswerError) as info:
        platform.get_user_profile()
    assert len(responses.calls) == FAST.max_attempts and _spent(info.value)


@responses.activate
def test_a_call_refused_past_the_throttle_cap_is_raised_spent(platform, monkeypatch):
    monkeypatch.setattr("synclient.platform.rest.MAX_THROTTLED_ATTEMPTS", 3)
    responses.add(responses.GET, REPO + "/userProfile", **error(429, FREQUENT))
    with pytest.raises(ThrottledError) as info:
        platform.get_user_profile()
    assert len(responses.calls) == 3 and _spent(info.value)


@responses.activate
def test_a_retryable_error_that_recovers_raises_nothing(platform):
    responses.add(responses.GET, REPO + "/userProfile", **error(503, "down"))
    responses.add(responses.GET, REPO + "/userProfile", json={"ownerId": "1"})
    assert platform.get_user_profile() == {"ownerId": "1"}
    assert len(responses.calls) == 2


@responses.activate
def test_well_formed_json_lacking_a_field_is_raised_spent_after_one_call(platform):
    """A 2xx whose JSON parses but lacks a documented field will not gain it on another try: one call, and an outer
    loop (the downloader refreshing a URL) does not try it again either."""
    prove(platform)
    responses.calls.reset()
    responses.add(responses.GET, REPO + "/entity/syn2/type", json={"name": "no id, no type"})
    with pytest.raises(MalformedAnswerError) as info:
        platform.get_entity_header("syn2")
    assert len(responses.calls) == 1 and _spent(info.value)
