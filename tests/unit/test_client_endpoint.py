"""Platform against endpoints that are not (yet) known to be Synapse, message shapes, and cancellation of retries."""

import logging
import socket
import threading

import pytest
import responses
from client_support import FAST, REPO, ROOT, TOKEN, error, prove

from synclient.errors import (
    AccessDeniedError,
    CallCancelledError,
    ConfigError,
    EndpointError,
    MalformedAnswerError,
    NotFoundError,
    PlatformError,
    ServerError,
)
from synclient.platform.rest import FIRST_CONTACT_ATTEMPTS, FIRST_CONTACT_MAX_BACKOFF, Platform, RetryPolicy

HTML = "<html><body><h1>Not Found</h1></body></html>"


# -- message shapes -------------------------------------------------------------------------------------------------


@responses.activate
def test_an_api_error_names_the_method_once(platform):
    responses.add(responses.POST, REPO + "/entity/syn2/bundle2", **error(403, "You lack READ access"))
    with pytest.raises(AccessDeniedError) as info:
        platform.get_file_bundle("syn2")
    assert str(info.value) == "POST /entity/{id}/bundle2: HTTP 403: You lack READ access"
    assert info.value.method == "POST" and info.value.url == REPO + "/entity/syn2/bundle2"


@responses.activate
def test_a_synapse_404_is_not_found_and_proves_the_endpoint(platform):
    responses.add(responses.GET, REPO + "/entity/syn9/type", **error(404, "Entity syn9 does not exist"))
    with pytest.raises(NotFoundError) as info:
        platform.get_entity_header("syn9")
    assert str(info.value) == "GET /entity/{id}/type: HTTP 404: Entity syn9 does not exist"
    assert platform.endpoint_proven


# -- endpoints that are not Synapse ---------------------------------------------------------------------------------


@responses.activate
def test_a_web_server_answering_429_pages_is_an_endpoint_error_after_the_first_contact_tries(platform):
    responses.add(
        responses.GET, REPO + "/entity/syn1/type", status=429, body="<html>slow down</html>", content_type="text/html"
    )
    with pytest.raises(EndpointError, match="not a Synapse API"):
        platform.get_entity_header("syn1")
    assert len(responses.calls) == FIRST_CONTACT_ATTEMPTS


@responses.activate
def test_a_plain_web_server_404_is_an_endpoint_error_naming_it(platform):
    responses.add(responses.GET, REPO + "/entity/syn1/type", status=404, body=HTML, content_type="text/html")
    with pytest.raises(EndpointError) as info:
        platform.get_entity_header("syn1")
    message = str(info.value)
    assert message.startswith(f"endpoint {REPO} is not a Synapse API: GET /entity/{{id}}/type answered HTTP 404")
    assert "text/html" in message and info.value.endpoint == REPO
    assert isinstance(info.value, ConfigError) and len(responses.calls) == 1


@responses.activate
def test_after_the_endpoint_answered_well_an_html_404_is_still_not_found(platform):
    prove(platform)
    responses.add(responses.GET, REPO + "/entity/syn9/type", status=404, body=HTML, content_type="text/html")
    with pytest.raises(NotFoundError):
        platform.get_entity_header("syn9")


@responses.activate
@pytest.mark.parametrize(
    "location,differs",
    [
        ("https://platform.test/repo/v1/entity/syn1/type", "another scheme"),
        ("http://www.platform.test/repo/v1/entity/syn1/type", "another host"),
    ],
)
def test_a_redirect_is_not_followed_and_says_where_it_goes(platform, location, differs):
    responses.add(responses.GET, REPO + "/entity/syn1/type", status=301, headers={"Location": location})
    with pytest.raises(EndpointError) as info:
        platform.get_entity_header("syn1")
    assert f"endpoint {REPO} redirects to {differs} ({location.split('/repo')[0]}, HTTP 301)" in str(info.value)
    assert len(responses.calls) == 1


@responses.activate
def test_an_empty_object_is_a_malformed_answer_not_a_key_error(platform):
    responses.add(responses.GET, REPO + "/entity/syn1/type", json={})
    with pytest.raises(
        EndpointError,
        match=r"malformed answer to GET /entity/\{id\}/type \(entity header lacks "
        r"its 'id' field\), so it is probably not a Synapse API",
    ):
        platform.get_entity_header("syn1")
    assert not platform.endpoint_proven


@responses.activate
def test_after_the_endpoint_answered_well_a_missing_field_is_a_platform_error(platform):
    prove(platform)
    responses.add(responses.POST, REPO + "/entity/syn2/bundle2", json={"fileHandles": []})
    with pytest.raises(MalformedAnswerError) as info:
        platform.get_file_bundle("syn2")
    assert isinstance(info.value, PlatformError) and isinstance(info.value, ServerError)
    assert str(info.value) == "POST /entity/{id}/bundle2: malformed answer: bundle lacks its 'entity' field"


@responses.activate
def test_an_html_page_gets_a_few_announced_tries_then_an_endpoint_error(platform, caplog):
    responses.add(responses.GET, REPO + "/entity/syn1/type", body=HTML, content_type="text/html")
    with caplog.at_level(logging.WARNING, logger="synclient.platform.rest"):
        with pytest.raises(EndpointError) as info:
            platform.get_entity_header("syn1")
    assert len(responses.calls) == FIRST_CONTACT_ATTEMPTS
    assert str(info.value) == (
        f"endpoint {REPO} gave a malformed answer (a text/html body, not JSON), so it is "
        f"probably not a Synapse API; gave up after {FIRST_CONTACT_ATTEMPTS} tries of "
        f"GET /entity/{{id}}/type"
    )
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == FIRST_CONTACT_ATTEMPTS - 1
    assert all(w.startswith(f"endpoint {REPO} gave a malformed answer") and "trying again in" in w for w in warnings)


@responses.activate
def test_after_the_endpoint_answered_well_malformed_json_keeps_the_full_retry_policy(platform):
    prove(platform)
    for _ in range(FAST.max_attempts):
        responses.add(responses.GET, REPO + "/entity/syn2/type", body='{"id": "syn2", "na')
    with pytest.raises(ServerError, match="malformed JSON answer"):
        platform.get_entity_header("syn2")
    assert len(responses.calls) == 1 + FAST.max_attempts


def test_connection_refused_is_quick_and_names_the_endpoint():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        root = f"http://127.0.0.1:{probe.getsockname()[1]}"  # bound, not listening: refused
        with Platform(endpoint=root, token=TOKEN) as platform, pytest.raises(EndpointError) as info:
            waits = _record_waits(platform)
            platform.get_entity_header("syn1")
    # quick by policy, not by a clock: a refusal is immediate, and the waits between the tries are the short ones
    assert len(waits) == FIRST_CONTACT_ATTEMPTS - 1
    assert sum(waits) <= (FIRST_CONTACT_ATTEMPTS - 1) * FIRST_CONTACT_MAX_BACKOFF
    assert str(info.value).startswith(f"endpoint {root}/repo/v1 refused the connection")
    assert f"gave up after {FIRST_CONTACT_ATTEMPTS} tries" in str(info.value)


# -- cancellation ---------------------------------------------------------------------------------------------------


#: at least 30 minutes before the 2nd try: only a cancel can end the wait before the test's 30 s safety bound
SLOW = RetryPolicy(max_attempts=10, max_total_seconds=7200.0, initial_backoff=3600.0, max_backoff=7200.0)


def _record_waits(platform):
    """The seconds of each wait between tries of ``platform``'s calls, recorded as they start (then waited)."""
    waits, wait = [], platform._sleep

    def recorded(seconds):
        waits.append(seconds)
        wait(seconds)

    platform._sleep = recorded
    return waits


@responses.activate
def test_a_cancel_stops_a_call_waiting_between_retries():
    responses.add(responses.GET, REPO + "/userProfile", **error(503, "Synapse is down for maintenance."))
    cancel, raised = threading.Event(), []
    with Platform(endpoint=ROOT, token=TOKEN, retry=SLOW, cancel_event=cancel) as platform:
        waits = _record_waits(platform)

        def call():
            try:
                platform.get_user_profile()
            except CallCancelledError as exc:
                raised.append(exc)

        caller = threading.Thread(target=call, daemon=True)
        caller.start()
        while not waits and caller.is_alive():  # until the call waits to retry
            cancel.wait(0.01)
        cancel.set()
        caller.join(timeout=30)
        assert not caller.is_alive(), "the cancel did not end the wait between tries"
    assert waits and waits[0] >= 1800 and len(raised) == 1
    assert len(responses.calls) == 1  # no try after the cancel


@responses.activate
def test_cancel_on_swaps_the_event_in_for_a_block_only():
    responses.add(responses.GET, REPO + "/userProfile", json={"ownerId": "1"})
    cancelled = threading.Event()
    cancelled.set()
    with Platform(endpoint=ROOT, token=TOKEN) as platform:
        own = platform.cancel_event
        with platform.cancel_on(cancelled), pytest.raises(CallCancelledError):
            platform.get_user_profile()
        assert platform.cancel_event is own and len(responses.calls) == 0
        assert platform.get_user_profile() == {"ownerId": "1"}
