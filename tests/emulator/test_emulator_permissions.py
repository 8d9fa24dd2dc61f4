from __future__ import annotations

import requests
from emuhelpers import Api


def _batch(api, entity_id, handle_id, **flags):
    body = {
        "requestedFiles": [
            {"fileHandleId": handle_id, "associateObjectId": entity_id, "associateObjectType": "FileEntity"}
        ],
        **flags,
    }
    return api.post("/file/v1/fileHandle/batch", body)


def test_unknown_token_is_401_and_no_token_is_the_anonymous_user(seeded):
    emu, project = seeded
    answer = Api(emu, token="wrong").get(f"/repo/v1/entity/{project}")
    assert answer.status_code == 401 and answer.headers["WWW-Authenticate"].startswith("Bearer")
    assert answer.headers["Content-Type"].startswith("application/json")
    assert answer.json()["concreteType"] == "org.sagebionetworks.repo.model.ErrorResponse"
    assert Api(emu, token="wrong").get("/repo/v1/userProfile").status_code == 401
    assert Api(emu, token=False).get(f"/repo/v1/entity/{project}").status_code == 403  # anonymous reads nothing
    assert Api(emu, token=False).get("/repo/v1/version").status_code == 200


def test_unknown_entity_is_404(seeded, api):
    answer = api.get("/repo/v1/entity/syn424242")
    assert answer.status_code == 404 and "reason" in answer.json()


def test_read_denied_entity_and_inherited_denial(seeded, api):
    emu, project = seeded
    for path in ("secret", "closed", "closed/inner"):
        entity = emu.resolve(project, path)
        assert api.get(f"/repo/v1/entity/{entity}").status_code == 403
        assert api.post(f"/repo/v1/entity/{entity}/bundle2", {"includeEntity": True}).status_code == 403
    secret = emu.resolve(project, "secret")
    handle = emu.store.version(int(secret[3:]), 1).file_handle_id
    answer = _batch(api, secret, str(handle), includePreSignedURLs=True)
    assert answer.status_code == 201
    assert answer.json()["requestedFiles"][0]["failureCode"] == "UNAUTHORIZED"
    assert "preSignedURL" not in answer.json()["requestedFiles"][0]


def test_download_denied_entity_is_readable_but_not_downloadable(seeded, api):
    emu, project = seeded
    entity = emu.resolve(project, "nodownload")
    bundle = api.post(f"/repo/v1/entity/{entity}/bundle2", {"includeEntity": True, "includePermissions": True})
    assert bundle.status_code == 200 and bundle.json()["permissions"]["canDownload"] is False
    handle = bundle.json()["entity"]["dataFileHandleId"]
    assert (
        _batch(api, entity, handle, includePreSignedURLs=True).json()["requestedFiles"][0]["failureCode"]
        == "UNAUTHORIZED"
    )
    answer = api.get(
        f"/file/v1/file/{handle}",
        params={"redirect": "false", "fileAssociateType": "FileEntity", "fileAssociateId": entity},
    )
    assert answer.status_code == 403


def test_file_handle_batch_rules(seeded, api):
    emu, project = seeded
    entity = emu.resolve(project, "d/a.txt")
    handle = api.post(f"/repo/v1/entity/{entity}/bundle2", {"includeEntity": True}).json()["entity"]["dataFileHandleId"]
    assert _batch(api, entity, handle).status_code == 400  # no include flag
    too_many = {
        "requestedFiles": [{"fileHandleId": handle, "associateObjectId": entity, "associateObjectType": "FileEntity"}]
        * 101,
        "includeFileHandles": True,
    }
    assert api.post("/file/v1/fileHandle/batch", too_many).status_code == 400
    answer = _batch(api, entity, "999999999", includeFileHandles=True).json()["requestedFiles"][0]
    assert answer["failureCode"] == "UNAUTHORIZED"  # authorization comes first: not that entity's handle
    other = emu.resolve(project, "case.txt")
    assert (
        _batch(api, other, handle, includeFileHandles=True).json()["requestedFiles"][0]["failureCode"] == "UNAUTHORIZED"
    )  # handle not used by that entity
    good = _batch(api, entity, handle, includeFileHandles=True, includePreSignedURLs=True)
    item = good.json()["requestedFiles"][0]
    assert good.status_code == 201 and "failureCode" not in item
    assert item["fileHandle"]["concreteType"] == "org.sagebionetworks.repo.model.file.S3FileHandle"
    assert requests.get(item["preSignedURL"]).content == b"text"


def test_file_url_redirect_and_text(seeded, api):
    emu, project = seeded
    entity = emu.resolve(project, "d/a.txt")
    handle = api.post(f"/repo/v1/entity/{entity}/bundle2", {"includeEntity": True}).json()["entity"]["dataFileHandleId"]
    params = {"fileAssociateType": "FileEntity", "fileAssociateId": entity}
    text = api.get(f"/file/v1/file/{handle}", params={"redirect": "false", **params})
    assert text.status_code == 200 and text.headers["Content-Type"].startswith("text/plain")
    assert requests.get(text.text).content == b"text"
    redirect = api.get(f"/file/v1/file/{handle}", params=params, allow_redirects=False)
    assert redirect.status_code == 307 and redirect.headers["Location"].startswith(emu.data_endpoint)
