"""Issue 33, part 1 (emulator): the download list (cart) as Synapse-Repository-Services' DownloadListController
serves it: add / remove / clear, the async add (a folder, a view query), the query job (available files paged and
sorted, actions required, statistics), the manifest job and the creator's file handle routes; every answer held
against Synapse's models (tests/conformance/checker.py); and synapseclient 4.14's ``get-download-list`` unchanged.
"""

from __future__ import annotations

import csv
import io
import os

import pytest
from emuhelpers import Api

from tests.conformance.checker import check

PKG = "org.sagebionetworks.repo.model.download."
LIST = "/repo/v1/download/list"

SPEC = {
    "projects": [
        {
            "name": "p",
            "children": [
                {
                    "type": "folder",
                    "name": "d",
                    "children": [
                        {"type": "file", "name": "c.txt", "content": "CCC", "annotations": {"k": ["v"]}},
                        {"type": "file", "name": "a.txt", "content": "A"},
                        {"type": "file", "name": "b.txt", "versions": [{"content": "b1"}, {"content": "bb2"}]},
                        {
                            "type": "folder",
                            "name": "sub",
                            "children": [{"type": "file", "name": "deep", "content": "x"}],
                        },
                    ],
                },
                {"type": "file", "name": "nodl", "content": "y", "deny": "download"},
                {"type": "file", "name": "secret", "content": "z", "deny": True},
                {"type": "entityview", "name": "v", "scope": ["d"], "columns": []},
            ],
        }
    ]
}


@pytest.fixture
def cart(emulator_factory):
    """(api, path -> id, emulator): SPEC seeded, jobs answer at once but for one 202 per job."""
    emu = emulator_factory(query_pending_polls=1)
    project = emu.seed_spec(SPEC)["p"]
    return Api(emu), lambda path: emu.resolve(project, path), emu


def _items(*pairs):
    return [{"fileEntityId": i} if v is None else {"fileEntityId": i, "versionNumber": v} for i, v in pairs]


def add(api, *pairs):
    answer = api.post(LIST + "/add", {"batchToAdd": _items(*pairs)})
    assert answer.status_code == 200, answer.text
    assert check("AddBatchOfFilesToDownloadListResponse", answer.json()) == []
    return answer.json()["numberOfFilesAdded"]


def remove(api, *pairs):
    answer = api.post(LIST + "/remove", {"batchToRemove": _items(*pairs)})
    assert answer.status_code == 200, answer.text
    assert check("RemoveBatchOfFilesFromDownloadListResponse", answer.json()) == []
    return answer.json()["numberOfFilesRemoved"]


def run_job(api, family: str, body: dict, model: str):
    """Start a job, GET it once (202, its status) and again (201, the answer, checked against ``model``)."""
    started = api.post(f"{LIST}/{family}/async/start", body)
    assert started.status_code == 201, started.text
    assert check("AsyncJobId", started.json()) == []
    token = started.json()["token"]
    pending = api.get(f"{LIST}/{family}/async/get/{token}")
    assert pending.status_code == 202, pending.text
    assert check("AsynchronousJobStatus", pending.json()) == []
    done = api.get(f"{LIST}/{family}/async/get/{token}")
    if done.status_code == 201:
        assert check(model, done.json()) == []
    return done


def query(api, details: dict):
    body = {"concreteType": PKG + "DownloadListQueryRequest", "requestDetails": details}
    done = run_job(api, "query", body, "DownloadListQueryResponse")
    assert done.status_code == 201, done.text
    return done.json()["responseDetails"]


def available(api, sort=None, token=None, filter_=None):
    details = {"concreteType": PKG + "AvailableFilesRequest"}
    if sort is not None:
        details["sort"] = sort
    if token is not None:
        details["nextPageToken"] = token
    if filter_ is not None:
        details["filter"] = filter_
    return query(api, details)


def stats(api):
    return query(api, {"concreteType": PKG + "FilesStatisticsRequest"})


def test_add_counts_new_files_only_and_skips_what_is_no_file(cart):
    api, ids, _ = cart
    assert add(api, (ids("d/a.txt"), None), (ids("d/b.txt"), 1), (ids("d"), None)) == 2  # a folder is no file
    assert add(api, (ids("d/a.txt"), None), (ids("d/a.txt"), 1)) == 1  # (id, None) and (id, 1) are two items
    assert stats(api)["totalNumberOfFiles"] == 3


def test_batches_are_validated_and_anonymous_callers_refused(cart):
    api, ids, emu = cart
    empty = api.post(LIST + "/add", {"batchToAdd": []})
    assert (empty.status_code, empty.json()["reason"]) == (400, "Batch must contain at least one item")
    too_many = api.post(LIST + "/add", {"batchToAdd": _items(*[(ids("d/a.txt"), n) for n in range(1, 1002)])})
    assert too_many.status_code == 400
    assert too_many.json()["reason"] == "Batch size of '1001' exceeds the maximum of '1000'"
    anonymous = Api(emu, token=False).post(LIST + "/add", {"batchToAdd": _items((ids("d/a.txt"), None))})
    assert anonymous.status_code == 401
    assert anonymous.json()["reason"] == "You must login to access your download list"


def test_available_files_resolve_versions_conform_and_sort(cart):
    api, ids, _ = cart
    add(api, (ids("d/c.txt"), None), (ids("d/a.txt"), None), (ids("d/b.txt"), 1), (ids("nodl"), None))
    page = available(api)["page"]
    # default sort: synId then versionNumber, ascending; a versionless item has no versionNumber
    assert [row["fileName"] for row in page] == ["c.txt", "a.txt", "b.txt"]
    assert [row.get("versionNumber") for row in page] == [None, None, 1]
    assert [row["fileSizeBytes"] for row in page] == [3, 1, 2]  # b.txt at version 1: "b1"
    assert all(row["projectName"] == "p" and row["isEligibleForPackaging"] for row in page)
    by_name = available(api, sort=[{"field": "fileName", "direction": "DESC"}])["page"]
    assert [row["fileName"] for row in by_name] == ["c.txt", "b.txt", "a.txt"]
    by_size = available(api, sort=[{"field": "fileSize", "direction": "ASC"}])["page"]
    assert [row["fileName"] for row in by_size] == ["a.txt", "b.txt", "c.txt"]
    assert available(api, filter_="ineligibleForPackaging")["page"] == []
    bad = run_job(
        api,
        "query",
        {
            "concreteType": PKG + "DownloadListQueryRequest",
            "requestDetails": {"concreteType": PKG + "AvailableFilesRequest", "sort": [{"field": "nope"}]},
        },
        "DownloadListQueryResponse",
    )
    assert bad.status_code == 400


def test_available_files_page_with_next_page_tokens(cart):
    api, ids, _ = cart
    file_id = ids("d/b.txt")
    # 120 items of one file: versionless, 1, 2 and 117 versions that do not exist (listed, neither available nor
    # requiring action, as Synapse's list keeps them)
    add(api, (file_id, None), (file_id, 1), (file_id, 2))
    add(api, *[(file_id, n) for n in range(3, 120)])
    first = available(api, token="2a0")
    assert len(first["page"]) == 2 and first["nextPageToken"] == "2a2"
    last = available(api, token="2a2")
    assert [row.get("versionNumber") for row in last["page"]] == [2] and "nextPageToken" not in last
    assert [row.get("versionNumber") for row in first["page"]] == [None, 1]
    assert stats(api)["totalNumberOfFiles"] == 120


def test_actions_required_one_per_requirement(cart):
    api, ids, _ = cart
    add(api, (ids("nodl"), None), (ids("nodl"), 1), (ids("secret"), None), (ids("d/a.txt"), None))
    page = query(api, {"concreteType": PKG + "ActionRequiredRequest"})["page"]
    assert page == [
        {
            "action": {"concreteType": PKG + "MeetAccessRequirement", "accessRequirementId": int(ids("nodl")[3:])},
            "count": 2,
        },
        {"action": {"concreteType": PKG + "RequestDownload", "benefactorId": int(ids("secret")[3:])}, "count": 1},
    ]
    assert stats(api) == {
        "concreteType": PKG + "FilesStatisticsResponse",
        "totalNumberOfFiles": 4,
        "numberOfFilesAvailableForDownload": 1,
        "numberOfFilesAvailableForDownloadAndEligibleForPackaging": 1,
        "numberOfFilesRequiringAction": 3,
        "sumOfFileSizesAvailableForDownload": 1,
    }


def test_remove_matches_the_version_exactly_and_clear_empties(cart):
    api, ids, _ = cart
    add(api, (ids("d/a.txt"), None), (ids("d/b.txt"), 2))
    assert remove(api, (ids("d/a.txt"), 1), (ids("d/b.txt"), None)) == 0
    assert remove(api, (ids("d/a.txt"), None)) == 1
    assert stats(api)["totalNumberOfFiles"] == 1
    cleared = api.session.delete(api.emu.endpoint + LIST)
    assert (cleared.status_code, cleared.content) == (200, b"")
    assert stats(api)["totalNumberOfFiles"] == 0


def test_the_list_has_a_limit(emulator_factory):
    emu = emulator_factory(query_pending_polls=1, download_list_limit=3)
    ids = emu.seed_spec(SPEC)["p"]
    api = Api(emu)
    a, b, c = (emu.resolve(ids, f"d/{name}") for name in ("a.txt", "b.txt", "c.txt"))
    assert add(api, (a, None), (b, None)) == 2
    over = api.post(LIST + "/add", {"batchToAdd": _items((c, None), (c, 1))})
    assert over.status_code == 400
    assert over.json()["reason"] == (
        "Adding '2' files to your download list would exceed the maximum number of '3' files.  You currently have"
        " '2' files on you download list."
    )
    folder = {"concreteType": PKG + "AddToDownloadListRequest", "parentId": emu.resolve(ids, "d")}
    done = run_job(api, "add", folder, "AddToDownloadListResponse")
    assert done.json()["numberOfFilesAdded"] == 1  # room for one more
    full = run_job(api, "add", folder, "AddToDownloadListResponse")
    assert full.status_code == 400
    assert full.json()["reason"] == "Your download list already has the maximum number of '3' files."


def test_async_add_of_a_folder_and_of_a_view_query(cart):
    api, ids, _ = cart
    folder = {"concreteType": PKG + "AddToDownloadListRequest", "parentId": ids("d"), "useVersionNumber": False}
    assert run_job(api, "add", folder, "AddToDownloadListResponse").json()["numberOfFilesAdded"] == 3  # not sub/
    assert {row.get("versionNumber") for row in available(api)["page"]} == {None}
    api.session.delete(api.emu.endpoint + LIST)
    view = {
        "concreteType": PKG + "AddToDownloadListRequest",
        "query": {"sql": f"SELECT * FROM {ids('v')} WHERE name <> 'a.txt'"},
    }
    assert run_job(api, "add", view, "AddToDownloadListResponse").json()["numberOfFilesAdded"] == 3
    rows = available(api)["page"]
    assert sorted((row["fileName"], row["versionNumber"]) for row in rows) == [("b.txt", 2), ("c.txt", 1), ("deep", 1)]
    both = dict(folder, query={"sql": f"SELECT * FROM {ids('v')}"})
    assert api.post(LIST + "/add/async/start", both).status_code == 400


def test_manifest_is_a_csv_of_the_available_files_for_its_creator_only(cart):
    api, ids, emu = cart
    body = {"concreteType": PKG + "DownloadListManifestRequest", "csvTableDescriptor": {}}
    empty = run_job(api, "manifest", body, "DownloadListManifestResponse")
    assert (empty.status_code, empty.json()["reason"]) == (400, "No files available for download.")
    add(api, (ids("d/c.txt"), None), (ids("d/b.txt"), 1), (ids("nodl"), None))
    done = run_job(api, "manifest", body, "DownloadListManifestResponse")
    handle_id = done.json()["resultFileHandleId"]
    handle = api.get(f"/file/v1/fileHandle/{handle_id}")
    assert handle.status_code == 200 and check("FileHandle", handle.json()) == []
    url = api.get(f"/file/v1/fileHandle/{handle_id}/url", params={"redirect": "false"}).text
    rows = list(csv.DictReader(io.StringIO(api.session.get(url).text)))
    assert list(rows[0])[:12] == [
        "ID",
        "name",
        "versionNumber",
        "contentType",
        "dataFileSizeBytes",
        "createdBy",
        "createdOn",
        "modifiedBy",
        "modifiedOn",
        "parentId",
        "synapseURL",
        "dataFileMD5Hex",
    ]
    assert list(rows[0])[12:] == ["k"]  # then the annotation names
    assert [(r["ID"], r["versionNumber"], r["dataFileSizeBytes"], r["k"]) for r in rows] == [
        (ids("d/b.txt"), "1", "2", ""),
        (ids("d/c.txt"), "1", "3", "v"),
    ]
    # another user's handle (a seeded file's) is not the caller's to read by id
    seeded = available(api)["page"][0]["fileHandleId"]
    assert api.get(f"/file/v1/fileHandle/{seeded}").status_code == 403


def _login(emu, tmp_path):
    synapseclient = pytest.importorskip("synapseclient")
    syn = synapseclient.Synapse(
        configPath=os.environ["SYNAPSE_CONFIG_FILE"],
        repoEndpoint=emu.endpoint + "/repo/v1",
        authEndpoint=emu.endpoint + "/auth/v1",
        fileHandleEndpoint=emu.endpoint + "/file/v1",
        portalEndpoint=emu.endpoint + "/",
        skip_checks=True,
        cache_root_dir=str(tmp_path / "cache"),
        silent=True,
    )
    syn.login(authToken=emu.token)
    return syn


def test_synapseclient_get_download_list_downloads_and_empties_the_cart(cart, tmp_path):
    pytest.importorskip("synapseclient")
    from synapseclient.__main__ import build_parser, get_download_list

    api, ids, emu = cart
    add(api, (ids("d/a.txt"), None), (ids("d/b.txt"), 1), (ids("nodl"), None))
    syn = _login(emu, tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    get_download_list(build_parser().parse_args(["get-download-list", "--downloadLocation", str(out)]), syn)
    assert (out / "a.txt").read_bytes() == b"A"
    assert (out / "b.txt").read_bytes() == b"b1"  # the version the cart pinned
    manifests = [p for p in out.iterdir() if p.suffix == ".csv"]
    assert len(manifests) == 1
    with manifests[0].open(newline="") as manifest:
        rows = list(csv.DictReader(manifest))
    assert sorted((r["ID"], r["error"]) for r in rows) == [(ids("d/a.txt"), ""), (ids("d/b.txt"), "")]
    left = stats(api)
    assert (left["totalNumberOfFiles"], left["numberOfFilesRequiringAction"]) == (1, 1)  # only nodl stays


def test_synapseclient_deprecated_manifest_call_reads_it_through_file_handle_batch(cart, tmp_path, monkeypatch):
    """``syn.get_download_list_manifest()`` (deprecated in 4.13, still there) fetches the manifest handle through
    ``fileHandle/batch`` with the handle as its own FileEntity association: its creator may."""
    api, ids, emu = cart
    add(api, (ids("d/c.txt"), None))
    syn = _login(emu, tmp_path)
    monkeypatch.chdir(tmp_path)
    path = syn.get_download_list_manifest()
    with open(path, newline="") as manifest:
        rows = list(csv.DictReader(manifest))
    assert [(r["ID"], r["name"], r["k"]) for r in rows] == [(ids("d/c.txt"), "c.txt", "v")]
