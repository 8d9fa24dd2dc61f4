"""External file handles: the seed spec, their JSON, the URLs handed out, and the external listener."""

from __future__ import annotations

import socket
import sqlite3
from urllib.parse import urlsplit

import pytest
import requests
from emuhelpers import Api

from synclient.emulator import Emulator, SpecError, seeded_bytes
from synclient.emulator.cli import build_parser, knobs_from_args
from synclient.emulator.store import HandleStorage, Store

EXTERNAL = "org.sagebionetworks.repo.model.file.ExternalFileHandle"
BIG = 300 * 1024 + 7

SPEC = {
    "projects": [
        {
            "name": "p",
            "children": [
                {"type": "file", "name": "both.csv", "external": True, "content": "a,b\n1,2\n"},
                {
                    "type": "file",
                    "name": "neither.csv",
                    "external": True,
                    "content": "zz",
                    "record_md5": False,
                    "record_size": False,
                },
                {"type": "file", "name": "md5only.csv", "external": True, "content": "m", "record_size": False},
                {"type": "file", "name": "big.bin", "external": True, "size": BIG, "seed": 3},
                # (unicode belongs in a handle's fileName, which the external URL's path carries; Synapse
                # refuses it in names)
                {
                    "type": "file",
                    "name": "with space.txt",
                    "file_name": "with space é.txt",
                    "external": True,
                    "content": "quoted",
                },
                {
                    "type": "file",
                    "name": "vers.txt",
                    "external": True,
                    "versions": [{"content": "one"}, {"content": "two"}],
                },
                {"type": "file", "name": "y.csv", "external": "sftp://sftp.example.org/data/y.csv"},
                {
                    "type": "file",
                    "name": "z.bin",
                    "external": "https://example.org/z%20z.bin",
                    "md5": "0" * 32,
                    "size": 12,
                },
                {"type": "file", "name": "s3.txt", "content": "plain"},
                {"type": "file", "name": "locked.csv", "external": True, "content": "no", "deny": "download"},
            ],
        }
    ]
}


@pytest.fixture
def ext(emulator):
    """(emulator, Api, project id)."""
    return emulator, Api(emulator), emulator.seed_spec(SPEC)["p"]


def _handle(api, entity_id):
    bundle = api.post(f"/repo/v1/entity/{entity_id}/bundle2", {"includeEntity": True, "includeFileHandles": True})
    return bundle.json()["fileHandles"][0]


def _batch(api, entity_id, handle_id):
    answer = api.post(
        "/file/v1/fileHandle/batch",
        {
            "requestedFiles": [
                {"fileHandleId": handle_id, "associateObjectId": entity_id, "associateObjectType": "FileEntity"}
            ],
            "includePreSignedURLs": True,
            "includeFileHandles": True,
        },
    )
    assert answer.status_code == 201
    return answer.json()["requestedFiles"][0]


# --- seed spec ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "node, message",
    [
        ({"external": 5}, "external must be true or a URL"),
        ({"external": "gopher://x.org/a"}, "external must be true or a URL"),
        ({"external": "sftp://h/a", "content": "x"}, "has no content"),
        ({"external": "sftp://h/a", "versions": [{"content": "x"}]}, "has no versions"),
        ({"external": "sftp://h/a", "record_md5": False}, "has no record_md5"),
        ({"external": "sftp://h/a", "md5": "XYZ"}, "md5 must be 32 lowercase hex digits"),
        ({"external": "sftp://h/a", "size": "lots"}, "not a size"),
        ({"content": "x", "record_md5": False}, 'record_md5 only applies to a file with "external": true'),
        ({"external": True, "content": "x", "record_size": "no"}, "record_size must be true or false"),
        ({"external": True, "content": "x", "md5": "0" * 32}, "md5 only applies to a file with an external URL"),
    ],
)
def test_bad_external_specs_name_the_node(emulator, node, message):
    spec = {"projects": [{"name": "p", "children": [{"type": "file", "name": "f", **node}]}]}
    with pytest.raises(SpecError, match=r"projects\[0\]\.children\[0\]") as raised:
        emulator.seed_spec(spec)
    assert message in str(raised.value)
    assert emulator.info()["projects"] == {}  # nothing left behind


# --- wire shapes --------------------------------------------------------------------------------------------------
def test_external_handle_json_records_only_what_was_recorded(ext):
    emu, api, project = ext
    expected = {"both.csv": {"contentMd5", "contentSize"}, "neither.csv": set(), "md5only.csv": {"contentMd5"}}
    for name, recorded in expected.items():
        handle = _handle(api, emu.resolve(project, name))
        assert handle["concreteType"] == EXTERNAL
        assert {"contentMd5", "contentSize"} & set(handle) == recorded
        assert not {"bucketName", "key", "isPreview", "storageLocationId"} & set(handle)
        assert handle["fileName"] == name
        assert handle["externalURL"] == f"{emu.external_endpoint}/ext/{handle['id']}/{name}"
    both = _handle(api, emu.resolve(project, "both.csv"))
    assert both["contentSize"] == 8 and len(both["contentMd5"]) == 32


def test_foreign_urls_are_verbatim_and_record_what_is_given(ext):
    emu, api, project = ext
    sftp = _handle(api, emu.resolve(project, "y.csv"))
    assert sftp["externalURL"] == "sftp://sftp.example.org/data/y.csv"
    assert "contentMd5" not in sftp and "contentSize" not in sftp
    assert sftp["fileName"] == "y.csv"
    https = _handle(api, emu.resolve(project, "z.bin"))
    assert (https["externalURL"], https["contentMd5"], https["contentSize"]) == (
        "https://example.org/z%20z.bin",
        "0" * 32,
        12,
    )
    assert https["fileName"] == "z z.bin"  # the URL's last segment, as synapseclient names such handles


def test_urls_handed_out_for_external_handles_are_the_external_urls(ext):
    emu, api, project = ext
    entity_id = emu.resolve(project, "both.csv")
    handle = _handle(api, entity_id)
    batch = _batch(api, entity_id, handle["id"])
    assert batch["preSignedURL"] == handle["externalURL"]
    assert batch["fileHandle"] == handle
    by_handle = api.get(
        f"/file/v1/file/{handle['id']}?fileAssociateType=FileEntity&fileAssociateId={entity_id}", allow_redirects=False
    )
    assert (by_handle.status_code, by_handle.headers["Location"]) == (307, handle["externalURL"])
    as_text = api.get(f"/repo/v1/entity/{entity_id}/file?redirect=false")
    assert as_text.text == handle["externalURL"]
    sftp_id = emu.resolve(project, "y.csv")
    assert _batch(api, sftp_id, _handle(api, sftp_id)["id"])["preSignedURL"] == "sftp://sftp.example.org/data/y.csv"


def test_download_denial_applies_to_external_handles(ext):
    emu, api, project = ext
    entity_id = emu.resolve(project, "locked.csv")
    handle_id = api.get(f"/repo/v1/entity/{entity_id}").json()["dataFileHandleId"]  # bundle2 withholds the handle
    assert _batch(api, entity_id, handle_id)["failureCode"] == "UNAUTHORIZED"
    assert api.get(f"/repo/v1/entity/{entity_id}/file?redirect=false").status_code == 403


def test_versions_of_an_external_file_have_their_own_handles(ext):
    emu, api, project = ext
    entity_id = emu.resolve(project, "vers.txt")
    for number, content in ((1, b"one"), (2, b"two")):
        bundle = api.post(f"/repo/v1/entity/{entity_id}/version/{number}/bundle2", {"includeFileHandles": True})
        handle = bundle.json()["fileHandles"][0]
        assert handle["concreteType"] == EXTERNAL
        assert requests.get(handle["externalURL"]).content == content


def test_external_files_list_as_files(ext):
    emu, api, project = ext
    page = api.post("/repo/v1/entity/children", {"parentId": project, "includeTypes": ["file"]}).json()["page"]
    assert {header["name"] for header in page} >= {"both.csv", "y.csv"}
    assert {header["type"] for header in page} == {"org.sagebionetworks.repo.model.FileEntity"}


# --- the external listener ----------------------------------------------------------------------------------------
def _url(ext, name):
    emu, api, project = ext
    return _handle(api, emu.resolve(project, name))["externalURL"]


def test_serves_whole_bodies_and_ranges_without_auth(ext):
    emu = ext[0]
    url = _url(ext, "big.bin")
    data = seeded_bytes(BIG, 3)
    whole = requests.get(url)
    assert (whole.status_code, whole.content, whole.headers["Accept-Ranges"]) == (200, data, "bytes")
    assert int(whole.headers["Content-Length"]) == BIG
    part = requests.get(url, headers={"Range": "bytes=100-199"})
    assert (part.status_code, part.content) == (206, data[100:200])
    assert part.headers["Content-Range"] == f"bytes 100-199/{BIG}"
    assert requests.get(url, headers={"Range": f"bytes={BIG}-"}).status_code == 416
    assert requests.get(_url(ext, "with space.txt")).content == b"quoted"
    assert _url(ext, "with space.txt").endswith("/with%20space%20%C3%A9.txt")
    stats = emu.stats()
    assert stats["external_requests"] == 4
    assert stats["external_bytes"] == BIG + 100 + len(b"quoted")
    assert stats["external_by_status"] == {"200": 2, "206": 1, "416": 1}
    assert (stats["data_requests"], stats["auth_headers_on_external"]) == (0, 0)


def test_ignores_ranges_when_told(ext):
    emu = ext[0]
    emu.set_knobs(external_ranges=False)
    answer = requests.get(_url(ext, "big.bin"), headers={"Range": "bytes=100-199"})
    assert (answer.status_code, answer.content) == (200, seeded_bytes(BIG, 3))
    assert "Accept-Ranges" not in answer.headers and "Content-Range" not in answer.headers


def _raw_get(url: str) -> bytes:
    """The whole answer as the server sent it, read until the server closes the connection."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(f"GET {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\n\r\n".encode("ascii"))
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)


def test_sends_no_content_length_when_told_and_closes_after_the_body(ext):
    emu = ext[0]
    emu.set_knobs(external_content_length=False)
    raw = _raw_get(_url(ext, "big.bin"))  # returns only because the server closed the connection
    head, _, body = raw.partition(b"\r\n\r\n")
    assert b"content-length" not in head.lower() and b"transfer-encoding" not in head.lower()
    assert b"Connection: close" in head
    assert body == seeded_bytes(BIG, 3)


def test_honours_the_data_fault_knobs(ext):
    emu = ext[0]
    url = _url(ext, "big.bin")
    data = seeded_bytes(BIG, 3)
    emu.set_knobs(fault_data_corrupt_rate=1.0)
    corrupt = requests.get(url).content
    assert len(corrupt) == BIG and corrupt != data
    emu.set_knobs(fault_data_corrupt_rate=0.0, data_wrong_content_range=True)
    shifted = requests.get(url, headers={"Range": "bytes=10-19"})
    assert shifted.headers["Content-Range"] == f"bytes 11-20/{BIG}"
    emu.set_knobs(data_wrong_content_range=False, fault_data_cut_rate=1.0)
    with pytest.raises(requests.exceptions.ChunkedEncodingError):
        requests.get(url)  # fewer bytes than Content-Length, then the connection closes
    assert emu.stats()["data_cuts_injected"] == 1
    emu.set_knobs(fault_data_cut_rate=0.0, fault_data_stall_rate=1.0, stall_seconds=0.2)
    with pytest.raises(requests.exceptions.ChunkedEncodingError):
        requests.get(url, timeout=30)  # headers, silence until stall_seconds, then the connection closes
    assert emu.stats()["data_stalls_injected"] == 1
    emu.set_knobs(fault_data_stall_rate=0.0, bandwidth_per_conn="1MiB", data_latency_ms=1)
    assert requests.get(url).content == data  # paced, still whole


def test_counts_requests_that_carry_a_token(ext):
    emu = ext[0]
    requests.get(_url(ext, "both.csv"), headers={"Authorization": f"Bearer {emu.token}"})
    requests.get(_url(ext, "both.csv"))
    stats = emu.stats()
    assert (stats["external_requests"], stats["auth_headers_on_external"], stats["auth_headers_on_data"]) == (2, 1, 0)


def test_answers_404_for_anything_but_a_served_handle(ext):
    emu, api, project = ext
    both_path = urlsplit(_url(ext, "both.csv")).path
    s3_handle = _handle(api, emu.resolve(project, "s3.txt"))["id"]
    for path in ("/", "/ext/", "/ext/abc/x", f"/ext/{s3_handle}/s3.txt", both_path.rsplit("/", 1)[0] + "/other.csv"):
        assert requests.get(emu.external_endpoint + path).status_code == 404, path


# --- lifecycle, store, knobs --------------------------------------------------------------------------------------
def test_restart_keeps_the_external_port_and_a_new_run_renders_its_own(tmp_path):
    with Emulator(data_dir=str(tmp_path)) as emu:
        project = emu.seed_spec(SPEC)["p"]
        api = Api(emu)
        entity_id = emu.resolve(project, "both.csv")
        before = emu.external_endpoint
        emu.restart()
        assert emu.external_endpoint == before
        assert requests.get(_handle(api, entity_id)["externalURL"]).content == b"a,b\n1,2\n"
    with Emulator(data_dir=str(tmp_path)) as again:  # other ports: the stored path is rendered against them
        url = _handle(Api(again), entity_id)["externalURL"]
        assert url.startswith(again.external_endpoint + "/ext/")
        assert requests.get(url).content == b"a,b\n1,2\n"


def test_add_external_file(emulator):
    project = emulator.seed_spec({"projects": [{"name": "p"}]})["p"]
    entity_id = emulator.add_external_file(project, "late.txt", b"later", record_md5=False)
    handle = _handle(Api(emulator), entity_id)
    assert "contentMd5" not in handle and handle["contentSize"] == 5
    assert requests.get(handle["externalURL"]).content == b"later"


def test_a_store_from_before_external_handles_still_opens(tmp_path):
    db = sqlite3.connect(str(tmp_path / "emulator.sqlite3"))
    db.execute(
        "CREATE TABLE file_handles (id INTEGER PRIMARY KEY, md5 TEXT NOT NULL, size INTEGER NOT NULL,"
        " file_name TEXT NOT NULL, content_type TEXT NOT NULL, created_on TEXT NOT NULL,"
        " created_by INTEGER NOT NULL, etag TEXT NOT NULL)"
    )
    db.execute("INSERT INTO file_handles VALUES (5000001, ?, 1, 'a', 'text/plain', 'now', 1, 'e')", ("0" * 32,))
    db.commit()
    db.close()
    store = Store(str(tmp_path))
    try:
        handle = store.file_handle(5000001)
        assert (handle.storage, handle.records_md5, handle.records_size) == (HandleStorage.S3, True, True)
    finally:
        store.close()


def test_external_knobs_validate_and_have_cli_flags(emulator):
    with pytest.raises(ValueError, match="external_ranges must be true or false"):
        emulator.set_knobs(external_ranges="no")
    args = build_parser().parse_args(
        ["serve", "--no-external-ranges", "--no-external-content-length", "--external-port", "0"]
    )
    knobs = knobs_from_args(args)
    assert (knobs.external_ranges, knobs.external_content_length) == (False, False)
    defaults = knobs_from_args(build_parser().parse_args(["serve"]))
    assert (defaults.external_ranges, defaults.external_content_length) == (True, True)
