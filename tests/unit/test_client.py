import json
import time

import pytest
import responses
from client_support import FAST, FILE, REPO, ROOT, TOKEN, error

from synclient.errors import (
    AccessDeniedError,
    AuthenticationError,
    BadRequestError,
    CallCancelledError,
    NotFoundError,
    ServerError,
    SynclientError,
    ThrottledError,
)
from synclient.platform.models import EntityType, FileHandleRequest
from synclient.platform.rest import Platform, RetryPolicy


@responses.activate
def test_not_found_is_typed_and_a_file_not_found_error(platform):
    responses.add(
        responses.GET,
        REPO + "/entity/syn9/type",
        **error(404, "The resource you are attempting to access cannot be found"),
    )
    with pytest.raises(NotFoundError) as info:
        platform.get_entity_header("syn9")
    assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, SynclientError)
    assert info.value.status == 404 and "cannot be found" in info.value.reason
    assert len(responses.calls) == 1  # 4xx are never retried


@responses.activate
@pytest.mark.parametrize("status,kind", [(401, AuthenticationError), (403, AccessDeniedError), (400, BadRequestError)])
def test_other_4xx_map_to_their_types_without_retry(platform, status, kind):
    responses.add(responses.GET, REPO + "/userProfile", **error(status, "nope"))
    with pytest.raises(kind):
        platform.get_user_profile()
    assert len(responses.calls) == 1


@responses.activate
def test_5xx_is_retried_then_succeeds(platform):
    responses.add(responses.GET, REPO + "/userProfile", **error(503, "Synapse is down for maintenance."))
    responses.add(responses.GET, REPO + "/userProfile", **error(502, "bad gateway"))
    responses.add(responses.GET, REPO + "/userProfile", json={"ownerId": "1", "userName": "u"})
    assert platform.get_user_profile()["userName"] == "u"
    assert platform.stats.calls == 3 and platform.stats.retries == 2


@responses.activate
def test_5xx_gives_up_after_max_attempts_with_the_servers_reason(platform):
    responses.add(responses.GET, REPO + "/userProfile", **error(500, "boom"))
    with pytest.raises(ServerError, match="boom"):
        platform.get_user_profile()
    assert len(responses.calls) == FAST.max_attempts


@responses.activate
def test_429_honours_retry_after_and_informs_the_shared_gate(platform):
    responses.add(
        responses.GET,
        REPO + "/userProfile",
        status=429,
        headers={"Retry-After": "0.3"},
        json={"reason": "Too many concurrent requests. Allowed 3 concurrent connections at any time."},
    )
    responses.add(responses.GET, REPO + "/userProfile", json={"ownerId": "1"})
    started = time.monotonic()
    platform.get_user_profile()
    assert time.monotonic() - started >= 0.3
    assert platform.gate.throttled == 1 and platform.stats.throttled == 1


FREQUENT = "Requests are too frequent. Allowed 600 requests every 60 seconds."


@responses.activate
def test_429s_do_not_use_up_a_calls_tries(platform):
    for _ in range(2 * FAST.max_attempts):
        responses.add(responses.GET, REPO + "/userProfile", **error(429, FREQUENT))
    responses.add(responses.GET, REPO + "/userProfile", json={"ownerId": "1"})
    assert platform.get_user_profile() == {"ownerId": "1"}
    assert platform.stats.throttled == 2 * FAST.max_attempts
    assert platform.gate.policy.budget_ceiling == 594  # learned from the text
    # refused with none of ours admitted: someone else holds the window, so the budget is what was left to us
    assert platform.gate.policy.budget == 1


@responses.activate
def test_a_call_refused_without_end_fails_typed_after_the_throttle_cap(platform, monkeypatch):
    monkeypatch.setattr("synclient.platform.rest.MAX_THROTTLED_ATTEMPTS", 5)
    responses.add(responses.GET, REPO + "/userProfile", **error(429, FREQUENT))
    with pytest.raises(ThrottledError, match="too frequent"):
        platform.get_user_profile()
    assert len(responses.calls) == 5


@responses.activate
def test_a_call_refused_for_too_long_fails_typed_instead_of_hanging(platform, monkeypatch):
    monkeypatch.setattr("synclient.platform.rest.MAX_THROTTLED_SECONDS", 0.0)
    responses.add(responses.GET, REPO + "/userProfile", **error(429, FREQUENT))
    with pytest.raises(ThrottledError):
        platform.get_user_profile()
    assert len(responses.calls) == 1


@responses.activate
def test_a_call_waiting_in_the_gate_stops_when_the_run_is_cancelled(platform):
    held = [platform.gate.acquire() for _ in range(platform.gate.limit)]
    platform.cancel_event.set()
    with pytest.raises(CallCancelledError):
        platform.get_user_profile()
    assert len(responses.calls) == 0
    for ticket in held:
        platform.gate.release(ticket)


def test_platforms_of_one_user_share_one_gate():
    with (
        Platform(endpoint=ROOT, token=TOKEN) as a,
        Platform(endpoint=ROOT, token=TOKEN) as b,
        Platform(endpoint=ROOT, token="another-user") as c,
    ):
        assert a.gate is b.gate and a.gate is not c.gate


@responses.activate
def test_truncated_json_body_is_retried(platform):
    responses.add(responses.GET, REPO + "/userProfile", body='{"ownerId": "1", "userN', status=200)
    responses.add(responses.GET, REPO + "/userProfile", json={"ownerId": "1"})
    assert platform.get_user_profile() == {"ownerId": "1"}


@responses.activate
def test_token_goes_in_the_bearer_header_and_never_in_repr(platform):
    responses.add(responses.GET, REPO + "/userProfile", json={"ownerId": "1"})
    platform.get_user_profile()
    assert responses.calls[0].request.headers["Authorization"] == f"Bearer {TOKEN}"
    assert TOKEN not in repr(platform)


@responses.activate
def test_children_page_is_parsed_and_paging_token_forwarded(platform):
    page = {
        "page": [
            {"id": "syn2", "name": "a.txt", "type": "org.sagebionetworks.repo.model.FileEntity", "versionNumber": 3},
            {"id": "syn3", "name": "d", "type": "org.sagebionetworks.repo.model.Folder"},
        ],
        "nextPageToken": "50a50",
    }
    responses.add(responses.POST, REPO + "/entity/children", json=page)
    result = platform.list_children("syn1", include_types=[EntityType.FOLDER, EntityType.FILE], page_token="50a0")
    body = json.loads(responses.calls[0].request.body)
    assert body["parentId"] == "syn1" and body["includeTypes"] == ["folder", "file"]
    assert body["nextPageToken"] == "50a0"
    assert [h.type for h in result.headers] == [EntityType.FILE, EntityType.FOLDER]
    assert result.headers[0].version_number == 3 and result.next_page_token == "50a50"


@responses.activate
def test_url_batch_maps_answers_and_failures(platform):
    responses.add(
        responses.POST,
        FILE + "/fileHandle/batch",
        status=201,
        json={
            "requestedFiles": [
                {"fileHandleId": "10", "preSignedURL": "http://data.test/b/10?X-Amz-Signature=abc"},
                {"fileHandleId": "11", "failureCode": "UNAUTHORIZED"},
            ]
        },
    )
    answers = platform.get_presigned_urls([FileHandleRequest("10", "syn2"), FileHandleRequest("11", "syn3")])
    assert answers["10"].url.startswith("http://data.test/") and answers["11"].failure_code == "UNAUTHORIZED"
    assert "Signature" not in repr(answers["10"])
    with pytest.raises(ValueError):
        platform.get_presigned_urls([FileHandleRequest(str(i), "syn1") for i in range(101)])


@responses.activate
def test_bundle_picks_the_data_file_handle(platform):
    responses.add(
        responses.POST,
        REPO + "/entity/syn2/version/3/bundle2",
        json={
            "entity": {
                "id": "syn2",
                "name": "a.txt",
                "concreteType": "org.sagebionetworks.repo.model.FileEntity",
                "versionNumber": 3,
                "dataFileHandleId": "10",
            },
            "fileHandles": [{"id": "9", "contentSize": 1}, {"id": "10", "contentSize": 42, "contentMd5": "ab" * 16}],
        },
    )
    bundle = platform.get_file_bundle("syn2", version=3)
    assert bundle.file_handle.id == "10" and bundle.file_handle.content_size == 42


@responses.activate
@pytest.mark.parametrize(
    "version,path", [(None, "/entity/syn2"), (3, "/entity/syn2/version/3"), (0, "/entity/syn2/version/0")]
)
def test_an_entity_its_bundle_and_its_activity_are_asked_for_at_the_path_of_the_version(platform, version, path):
    entity = {
        "id": "syn2",
        "name": "a.txt",
        "concreteType": "org.sagebionetworks.repo.model.FileEntity",
        "versionNumber": 3,
        "dataFileHandleId": "10",
    }
    responses.add(responses.GET, REPO + path, json=entity)
    responses.add(
        responses.POST,
        REPO + path + "/bundle2",
        json={"entity": entity, "fileHandles": [{"id": "10", "contentSize": 42}]},
    )
    responses.add(responses.GET, REPO + path + "/generatedBy", json={"id": "77", "name": "made"})
    assert platform.get_entity("syn2", version=version).id == "syn2"
    assert platform.get_file_bundle("syn2", version=version).file_handle.id == "10"
    assert platform.get_activity("syn2", version=version) == {"id": "77", "name": "made"}
    assert [call.request.url for call in responses.calls] == [
        REPO + path,
        REPO + path + "/bundle2",
        REPO + path + "/generatedBy",
    ]


def test_backoff_waits_at_least_half_of_each_exponential_step():
    """Ten tries of one call must not all fit in a short outage: every wait has a floor of half its step."""
    from types import SimpleNamespace

    from synclient.platform.rest import _WaitRetryAfterOrBackoff

    policy = RetryPolicy()
    wait = _WaitRetryAfterOrBackoff(initial=policy.initial_backoff, maximum=policy.max_backoff)
    floors = []
    for attempt in range(1, policy.max_attempts):
        step = min(policy.max_backoff, policy.initial_backoff * 2 ** (attempt - 1))
        waits = [wait(SimpleNamespace(attempt_number=attempt, outcome=None)) for _ in range(300)]
        assert step / 2 <= min(waits) and max(waits) <= step
        assert max(waits) - min(waits) > step / 4  # still jittered
        floors.append(step / 2)
    assert sum(floors) > 30  # a 10 s maintenance window cannot use up the default ten tries
