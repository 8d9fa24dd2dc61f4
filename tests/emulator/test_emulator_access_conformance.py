"""Permissions, listings, file handles and the request pipeline answer as Synapse does (issue 30, items 4, 6, 13,
14, 15, 16, 19). Each test names the Synapse source (Sage-Bionetworks/Synapse-Repository-Services) its facts come
from."""

from __future__ import annotations

import sqlite3

import requests
from emuhelpers import Api

from synclient.emulator.store import ANONYMOUS_USER_ID, DATA_OWNER_ID, Store

FILES_AND_FOLDERS = ["file", "folder"]
REALM = 'Bearer realm="Synapse Repository Services"'


def _children(api, parent, **extra):
    return api.post("/repo/v1/entity/children", {"parentId": parent, **extra})


def _batch(api, entity_id, handle_id, **flags):
    body = {
        "requestedFiles": [
            {"fileHandleId": handle_id, "associateObjectId": entity_id, "associateObjectType": "FileEntity"}
        ],
        **flags,
    }
    return api.post("/file/v1/fileHandle/batch", body)


def _handle_id(api, entity_id):
    return api.get(f"/repo/v1/entity/{entity_id}").json()["dataFileHandleId"]


# -- 4: bundle2 of a file the caller may read but not download ---------------------------------------------------------


def test_bundle_withholds_the_handle_and_file_name_without_download(seeded, api):
    # services/repository-managers/.../repo/service/EntityBundleServiceImpl.java: getEntityFileHandlesFor*Version
    # throws UnauthorizedException without DOWNLOAD (NodeManagerImpl.getFileHandleIdForVersion), caught: an empty
    # list; fileName is looked up in that list, so it is not set
    emu, project = seeded
    wanted = {"includeEntity": True, "includeFileHandles": True, "includeFileName": True}
    denied = api.post(f"/repo/v1/entity/{emu.resolve(project, 'nodownload')}/bundle2", wanted)
    assert denied.status_code == 200
    assert denied.json()["fileHandles"] == [] and "fileName" not in denied.json()
    assert denied.json()["entity"]["dataFileHandleId"]  # the entity itself still names its handle
    allowed = api.post(f"/repo/v1/entity/{emu.resolve(project, 'd/a.txt')}/bundle2", wanted).json()
    assert [h["id"] for h in allowed["fileHandles"]] == [allowed["entity"]["dataFileHandleId"]]
    assert allowed["fileName"] == "a.txt"


# -- 6: children the caller may not read are not listed, nor counted ---------------------------------------------------


def test_children_hide_unreadable_children_and_count_only_readable_ones(seeded, api):
    # services/repository-managers/.../repo/manager/EntityManagerImpl.java getChildren: childIdsToExclude =
    # EntityAclManager.getNonvisibleChildren, passed to the page query and to NodeDAOImpl.getChildrenStats
    emu, project = seeded
    body = _children(
        api, project, includeTypes=FILES_AND_FOLDERS, includeTotalChildCount=True, includeSumFileSizes=True
    ).json()
    names = sorted(h["name"] for h in body["page"])
    assert names == ["Case.txt", "big.bin", "case.txt", "d", "n", "nodownload", "v.txt"]  # not secret, not closed
    assert body["totalChildCount"] == 7
    assert body["sumFileSizesBytes"] == 5 + 5 + (3 * 1024 * 1024 + 5) + 2 + 1 + 1  # secret's 1 byte left out
    secret = emu.resolve(project, "secret")
    assert api.get(f"/repo/v1/entity/{secret}").status_code == 403  # still there: a direct GET is refused


def test_children_sum_only_recorded_sizes(emulator, api):
    # lib/jdomodels/.../dbo/dao/NodeDAOImpl.java SQL_SELECT_CHIDREN_STATS: SUM(F.CONTENT_SIZE), NULL when the handle
    # records no size
    project = emulator.seed_spec(
        {
            "projects": [
                {
                    "name": "p",
                    "children": [
                        {"type": "file", "name": "a.txt", "content": "abc"},
                        {"type": "file", "name": "x.csv", "external": True, "content": "12345", "record_size": False},
                        {"type": "file", "name": "y.csv", "external": "sftp://h.example.org/y.csv"},
                    ],
                }
            ]
        }
    )["p"]
    body = _children(api, project, includeTypes=["file"], includeTotalChildCount=True, includeSumFileSizes=True).json()
    assert (body["totalChildCount"], body["sumFileSizesBytes"]) == (3, 3)


def test_root_listing_leaves_out_unreadable_projects(emulator, api):
    emulator.seed_spec({"projects": [{"name": "open"}, {"name": "shut", "deny": True}]})
    body = _children(api, None, includeTypes=["project"], includeTotalChildCount=True).json()
    assert [h["name"] for h in body["page"]] == ["open"] and body["totalChildCount"] == 1


# -- 14: children input checks -----------------------------------------------------------------------------------------


def test_children_input_checks_in_synapses_words(seeded, api):
    # EntityManagerImpl.getChildren: ValidateArgument.required(includeTypes, "EntityChildrenRequest.includeTypes");
    # lib/models/.../repo/model/NextPageToken.java: MAX_LIMIT 50, "Limit must not exceed: "
    emu, project = seeded
    missing = _children(api, project)
    assert (missing.status_code, missing.json()["reason"]) == (400, "EntityChildrenRequest.includeTypes is required.")
    empty = _children(api, project, includeTypes=[])
    assert empty.json()["reason"] == "EntityChildrenRequest.includeTypes must include at least one type"
    too_long = _children(api, project, includeTypes=FILES_AND_FOLDERS, nextPageToken="100a0")
    assert (too_long.status_code, too_long.json()["reason"]) == (400, "Limit must not exceed: 50")
    garbage = _children(api, project, includeTypes=FILES_AND_FOLDERS, nextPageToken="garbage")
    assert (garbage.status_code, garbage.json()["reason"]) == (400, "Unknow token format: garbage")
    assert _children(api, project, includeTypes=FILES_AND_FOLDERS, nextPageToken="50a0").status_code == 200


def test_a_null_parent_lists_projects_whatever_the_types(seeded, api):
    # EntityManagerImpl.getChildren: a null parentId becomes the root, and includeTypes becomes PROJECT_ONLY
    emu, project = seeded
    for types in (["file"], None):
        body = _children(api, None, **({"includeTypes": types} if types else {})).json()
        assert [h["id"] for h in body["page"]] == [project]


# -- 13: the throttle's 429 body ---------------------------------------------------------------------------------------


def test_a_429_body_is_exactly_the_throttlers_reason(seeded, api):
    # services/repository/.../web/filter/throttle/UserConcurrentConnectionThrottler.java
    # REASON_USER_THROTTLED_CONCURRENT is the JSON text, ThrottleUtils.setResponseError println()s it: no concreteType
    emu, project = seeded
    emu.set_knobs(fault_api_429_rate=1.0, max_concurrent_per_user=3)
    answer = api.get(f"/repo/v1/entity/{project}")
    assert answer.status_code == 429
    assert answer.content == (
        b'{"reason": "Too many concurrent requests. Allowed 3 concurrent connections at any time."}\n'
    )
    assert answer.headers["Content-Type"].startswith("application/json")


# -- 15: no token is the anonymous user; an unknown token is 401 -------------------------------------------------------


def test_no_token_is_the_anonymous_user_who_reads_nothing(seeded):
    # services/repository/.../auth/filter/AuthenticationFilter.java: no token -> BOOTSTRAP_PRINCIPAL.ANONYMOUS_USER;
    # EntityAuthorizationUtils.determineReadAccess ends in DENY: "You lack READ access to the requested entity."
    emu, project = seeded
    anonymous = Api(emu, token=False)
    entity = anonymous.get(f"/repo/v1/entity/{project}")
    assert entity.status_code == 403 and "WWW-Authenticate" not in entity.headers
    assert entity.json()["reason"].startswith("You lack READ access to the requested entity")
    assert anonymous.get("/repo/v1/entity/syn424242").status_code == 404
    assert anonymous.get("/repo/v1/version").status_code == 200
    profile = anonymous.get("/repo/v1/userProfile").json()
    assert profile["ownerId"] == str(ANONYMOUS_USER_ID)
    assert _children(anonymous, None, includeTypes=["project"]).json()["page"] == []
    assert _children(anonymous, project, includeTypes=FILES_AND_FOLDERS).status_code == 403
    handle = _handle_id(Api(emu), emu.resolve(project, "d/a.txt"))
    row = _batch(anonymous, emu.resolve(project, "d/a.txt"), handle, includePreSignedURLs=True).json()
    assert row["requestedFiles"][0]["failureCode"] == "UNAUTHORIZED"
    blank = Api(emu, token=False)
    blank.session.headers["Authorization"] = "Bearer  "
    assert blank.get(f"/repo/v1/entity/{project}").status_code == 403  # a blank bearer token is no token too


def test_an_unknown_token_is_401_invalid_access_token(seeded):
    # AuthenticationFilter: validateAccessToken fails -> HttpAuthUtil.reject(resp, "Invalid access token"), whose
    # WWW-Authenticate is Bearer realm="Synapse Repository Services"
    emu, project = seeded
    answer = Api(emu, token="wrong").get(f"/repo/v1/entity/{project}")
    assert answer.status_code == 401 and answer.headers["WWW-Authenticate"] == REALM
    assert answer.json() == {
        "concreteType": "org.sagebionetworks.repo.model.ErrorResponse",
        "reason": "Invalid access token",
    }


def test_the_anonymous_user_is_not_throttled(seeded):
    # services/repository/.../web/filter/throttle/RequestThrottleFilter.java: anonymous requests skip the throttlers
    emu, project = seeded
    emu.set_knobs(max_requests_per_minute=1)
    assert [Api(emu, token=False).get("/repo/v1/userProfile").status_code for _ in range(3)] == [200] * 3
    user = Api(emu)
    assert [user.get("/repo/v1/userProfile").status_code for _ in range(2)] == [200, 429]


# -- 16: an unknown handle is UNAUTHORIZED; seeded handles belong to another user --------------------------------------


def test_unknown_handle_is_unauthorized(seeded, api):
    # services/repository-managers/.../file/FileHandleManagerImpl.java getFileHandleAndUrlBatch: authorization first
    # (AuthorizationManagerImpl.canDownloadFile: a handle not associated with the object is denied), NOT_FOUND only
    # for an authorized handle that is missing
    emu, project = seeded
    row = _batch(api, emu.resolve(project, "d/a.txt"), "999999999", includeFileHandles=True).json()
    assert row["requestedFiles"][0]["failureCode"] == "UNAUTHORIZED"


def test_seeded_handles_are_the_data_owners_and_still_download(seeded, api):
    # AuthorizationManagerImpl.canDownloadFile: the handle's creator may always download it
    emu, project = seeded
    entity = emu.resolve(project, "d/a.txt")
    row = _batch(api, entity, _handle_id(api, entity), includeFileHandles=True, includePreSignedURLs=True)
    item = row.json()["requestedFiles"][0]
    assert item["fileHandle"]["createdBy"] == str(DATA_OWNER_ID) != str(emu.store.user.id)
    assert requests.get(item["preSignedURL"]).content == b"text"


def test_a_handle_the_caller_created_downloads_even_where_download_is_denied(seeded, api):
    emu, project = seeded
    entity = emu.resolve(project, "nodownload")
    md5, size = emu.store.put_bytes(b"mine")
    own = emu.store.create_file_handle(md5, size, "mine.txt", created_by=emu.store.user.id)
    item = _batch(api, entity, str(own), includePreSignedURLs=True).json()["requestedFiles"][0]
    assert "failureCode" not in item and requests.get(item["preSignedURL"]).content == b"mine"
    seeded_handle = _handle_id(api, entity)
    assert (
        _batch(api, entity, seeded_handle, includePreSignedURLs=True).json()["requestedFiles"][0]["failureCode"]
        == "UNAUTHORIZED"
    )


def test_an_older_store_gives_its_seeded_handles_to_the_data_owner(tmp_path):
    store = Store(str(tmp_path))
    md5, size = store.put_bytes(b"old")
    handle = store.create_file_handle(md5, size, "old.txt", created_by=store.user.id)
    query_handle = store.create_file_handle(md5, size, "Job-1.csv", created_by=store.user.id)
    store.add_result_handle(query_handle, 1)
    store.close()
    db = sqlite3.connect(str(tmp_path / "emulator.sqlite3"))
    db.execute("DELETE FROM meta WHERE key = 'handles_owner'")  # as a data dir written before the owner was
    db.commit()
    db.close()
    store = Store(str(tmp_path))
    try:
        assert store.file_handle(handle).created_by == DATA_OWNER_ID
        assert store.file_handle(query_handle).created_by == store.user.id  # a query's CSV is the caller's
    finally:
        store.close()


# -- 19: fileHandle/batch 400 reasons ----------------------------------------------------------------------------------


def test_file_handle_batch_refusals_in_synapses_words(seeded, api):
    # FileHandleManagerImpl: MUST_INCLUDE_EITHER, MAX_REQUESTS_PER_CALL_MESSAGE; AuthorizationManagerImpl.validate
    emu, project = seeded
    entity = emu.resolve(project, "d/a.txt")
    one = {"fileHandleId": _handle_id(api, entity), "associateObjectId": entity, "associateObjectType": "FileEntity"}

    def reason(body):
        answer = api.post("/file/v1/fileHandle/batch", body)
        assert answer.status_code == 400
        return answer.json()["reason"]

    assert reason({"includeFileHandles": True}) == "requestedFiles is required."
    assert (
        reason({"requestedFiles": [one]})
        == "Must include either FileHandles or pre-signed URLs or preview pre-signed URLs"
    )
    assert (
        reason({"requestedFiles": [one] * 101, "includeFileHandles": True})
        == "Request exceeds the maximum number of objects per request: 100"
    )
    assert (
        reason({"requestedFiles": [], "includeFileHandles": True})
        == "FileHandleAssociations is empty.  Must include at least one FileHandleAssociation"
    )
    assert (
        reason({"requestedFiles": [dict(one, associateObjectType=None)], "includeFileHandles": True})
        == "FileHandleAssociation.associateObjectType cannot be null"
    )
