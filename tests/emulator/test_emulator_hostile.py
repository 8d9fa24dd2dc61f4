"""Hostile-server mode (knobs ``hostile_rate`` + ``hostile_kinds``): for each kind, the knob on makes the answers
hostile as docs/emulator.md says, off leaves them byte-identical, and every mutation is the one
``hostile``'s replay functions compute from (fault_seed, kind, key)."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import pytest
import requests
from emuhelpers import Api

from synclient.emulator import Emulator, Knobs, hostile
from synclient.emulator.cli import build_parser, knobs_from_args
from synclient.emulator.knobs import HOSTILE_KINDS

SEED = 11
FILES = 24
SPEC = {
    "projects": [
        {
            "name": "p",
            "children": [
                {
                    "type": "folder",
                    "name": "d",
                    "children": [
                        {"type": "file", "name": f"f{i:02d}.txt", "content": f"content of file {i}\n" * (i + 1)}
                        for i in range(FILES)
                    ],
                },
                {"type": "file", "name": "ext.csv", "external": True, "content": "a,b\n1,2\n"},
                {"type": "file", "name": "noted.csv", "external": "https://example.org/data/noted.csv", "size": 5},
                {"type": "entityview", "name": "v", "scope": ["d"]},
                {"type": "table", "name": "t", "columns": [{"name": "n", "type": "INTEGER"}], "rows": [[1], [2], [3]]},
            ],
        }
    ]
}
VIEW_SQL = "SELECT * FROM {id}"

#: every type: Synapse requires includeTypes (EntityManagerImpl.getChildren)
ALL_TYPES = ["project", "folder", "file", "link", "dataset", "datasetcollection", "entityview", "table"]


def _list(api, parent_id, **extra):
    return api.post("/repo/v1/entity/children", {"includeTypes": ALL_TYPES, "parentId": parent_id, **extra})


@pytest.fixture
def site(emulator):
    """(emulator, Api, path -> id)."""
    project = emulator.seed_spec(SPEC)["p"]
    return emulator, Api(emulator), lambda path: project if path == "" else emulator.resolve(project, path)


def _files(ids):
    return [ids(f"d/f{i:02d}.txt") for i in range(FILES)]


def _bundle(api, entity_id):
    answer = api.post(
        f"/repo/v1/entity/{entity_id}/bundle2",
        {"includeEntity": True, "includeFileHandles": True, "includeFileName": True, "includeEntityPath": True},
    )
    assert answer.status_code == 200, answer.text
    return answer


def _honest_handle(emu, entity_id):
    """The handle id of the entity's current version, from the store (what the server knows, whatever it says)."""
    return str(emu.store.entity(int(entity_id[3:])).file_handle_id)


def _batch(api, entity_id, handle_id, urls=False):
    answer = api.post(
        "/file/v1/fileHandle/batch",
        {
            "requestedFiles": [
                {"fileHandleId": handle_id, "associateObjectId": entity_id, "associateObjectType": "FileEntity"}
            ],
            "includePreSignedURLs": urls,
            "includeFileHandles": True,
        },
    )
    assert answer.status_code == 201, answer.text
    return answer


def _query(api, entity_id, sql, token_of_next=None):
    """The QueryResult of a query (or of the next page with ``token_of_next``), through the async job routes."""
    base = f"/repo/v1/entity/{entity_id}/table/query"
    if token_of_next is None:
        started = api.post(base + "/async/start", {"query": {"sql": sql}, "partMask": 0x1})
        get = base + "/async/get/"
    else:
        started = api.post(
            base + "/nextPage/async/start",
            {"concreteType": "org.sagebionetworks.repo.model.table.QueryNextPageToken", "token": token_of_next},
        )
        get = base + "/nextPage/async/get/"
    assert started.status_code == 201, started.text
    path = get + started.json()["token"]
    answer = api.get(path)
    while answer.status_code == 202:
        answer = api.get(path)
    assert answer.status_code == 201, answer.text
    body = answer.json()
    return body.get("queryResult", body), answer.content


def _raw_get(url: str):
    """(status line + headers, {lower-case header: value}, body) exactly as the server sent them; the request
    asks the server to close the connection after the answer, so reading ends there."""
    parts = urlsplit(url)
    target = parts.path + ("?" + parts.query if parts.query else "")
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(f"GET {target} HTTP/1.1\r\nHost: {parts.netloc}\r\nConnection: close\r\n\r\n".encode("ascii"))
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return lines[0], headers, body


def _data_url(api, entity_id, handle_id):
    return _batch(api, entity_id, handle_id, urls=True).json()["requestedFiles"][0]["preSignedURL"]


def _snapshot(emu, api, ids):
    """The bytes of one answer of every kind hostile-server mode touches (URLs left out: signatures carry time)."""
    files = _files(ids)
    handle = _honest_handle(emu, files[3])
    taken = [
        _list(api, ids("")).content,
        _list(api, ids("d"), nextPageToken="10a10").content,
        api.post("/repo/v1/entity/header", {"references": [{"targetId": f} for f in files]}).content,
        api.get(f"/repo/v1/entity/{files[3]}").content,
        api.get(f"/repo/v1/entity/{files[3]}/path").content,
        _bundle(api, files[3]).content,
        _bundle(api, ids("ext.csv")).content,
        _batch(api, files[3], handle).content,
        _query(api, ids("v"), VIEW_SQL.format(id=ids("v")))[1],
        _query(api, ids("t"), VIEW_SQL.format(id=ids("t")))[1],
    ]
    for entity_id in (files[3], files[7]):
        status, headers, body = _raw_get(_data_url(api, entity_id, _honest_handle(emu, entity_id)))
        taken.append((status, headers.get("content-length"), headers.get("location"), body))
    external = api.get(f"/repo/v1/entity/{ids('ext.csv')}/file", params={"redirect": "false"}).text
    taken.append(_raw_get(external)[2])
    return taken


# --- the knobs ---------------------------------------------------------------------------------------------------
def test_knobs_default_off_and_parse_kinds():
    knobs = Knobs()
    assert knobs.hostile_rate == 0.0 and knobs.hostile_kinds == HOSTILE_KINDS
    assert not any(knobs.hostile(kind) for kind in HOSTILE_KINDS)
    assert Knobs(hostile_kinds="paging, names").hostile_kinds == ("names", "paging")
    assert Knobs(hostile_kinds=["bodies", "sizes"]).hostile_kinds == ("sizes", "bodies")
    assert Knobs(hostile_kinds={"redirects"}).hostile_kinds == ("redirects",)
    assert Knobs(hostile_kinds="all").hostile_kinds == HOSTILE_KINDS
    assert Knobs(hostile_kinds="none").hostile_kinds == ()
    on = Knobs(hostile_rate=0.5, hostile_kinds="names")
    assert on.hostile("names") and not on.hostile("sizes")
    with pytest.raises(ValueError, match="unknown hostile kind.*nosuch"):
        Knobs(hostile_kinds="names,nosuch")
    with pytest.raises(ValueError, match="between 0 and 1"):
        Knobs(hostile_rate=1.5)


def test_cli_flags_and_admin_api_set_the_knobs(emulator):
    args = build_parser().parse_args(
        ["serve", "--hostile-rate", "0.25", "--hostile-kinds", "names,bodies", "--fault-seed", "7"]
    )
    knobs = knobs_from_args(args)
    assert (knobs.hostile_rate, knobs.hostile_kinds, knobs.fault_seed) == (0.25, ("names", "bodies"), 7)
    admin = emulator.endpoint + "/emulator/knobs"
    answer = requests.post(admin, json={"hostile_rate": 0.5, "hostile_kinds": ["sizes", "paging"]})
    assert answer.status_code == 200, answer.text
    assert requests.get(admin).json()["hostile_kinds"] == ["sizes", "paging"]
    assert requests.get(admin).json()["hostile_rate"] == 0.5
    refused = requests.post(admin, json={"hostile_kinds": "names,evil"})
    assert refused.status_code == 400 and "unknown hostile kind" in refused.json()["reason"]
    with Emulator(hostile_rate=1, hostile_kinds="url_credentials", fault_seed=3) as emu:
        assert emu.knobs.hostile("url_credentials") and not emu.knobs.hostile("names")


# --- off is byte-identical ---------------------------------------------------------------------------------------
def test_off_leaves_every_answer_byte_identical(site):
    emu, api, ids = site
    emu.set_knobs(fault_seed=SEED)
    honest = _snapshot(emu, api, ids)
    assert _snapshot(emu, api, ids) == honest  # the snapshot itself is repeatable
    emu.set_knobs(hostile_rate=1.0)
    hostile_answers = _snapshot(emu, api, ids)
    assert all(a != b for a, b in zip(hostile_answers, honest)), "every answer of the snapshot is mutated"
    emu.set_knobs(hostile_rate=0.0)
    assert _snapshot(emu, api, ids) == honest
    emu.set_knobs(hostile_rate=1.0, hostile_kinds="none")
    assert _snapshot(emu, api, ids) == honest


# --- names -------------------------------------------------------------------------------------------------------
def _is_bad_name(name: str) -> bool:
    return (
        "/" in name
        or name in (".", "..")
        or "\x00" in name
        or len(name.encode("utf-8")) > 255
        or name in hostile.RESERVED_NAMES
    )


def test_names_are_hostile_and_the_same_in_every_answer(site):
    emu, api, ids = site
    emu.set_knobs(hostile_rate=1.0, hostile_kinds="names", fault_seed=SEED)
    before = hostile.injected()["names"]
    files = _files(ids)
    real = {entity_id: emu.store.entity(int(entity_id[3:])).name for entity_id in files}
    expected = {entity_id: hostile.hostile_name(SEED, entity_id, name) for entity_id, name in real.items()}
    assert all(_is_bad_name(name) for name in expected.values())
    forms = {hostile.NAME_FORMS[hostile._pick(SEED, "names", f, len(hostile.NAME_FORMS))] for f in files}
    assert forms == set(hostile.NAME_FORMS), "the seed shows every form"
    assert any(len(n.encode("utf-8")) == hostile.LONG_NAME_BYTES for n in expected.values())

    listed = _list(api, ids("d")).json()["page"]
    assert {h["id"]: h["name"] for h in listed} == expected
    headers = api.post("/repo/v1/entity/header", {"references": [{"targetId": f} for f in files]}).json()
    assert {h["id"]: h["name"] for h in headers["results"]} == expected
    rows, _ = _query(api, ids("v"), f"SELECT id, name FROM {ids('v')}")
    assert {r["values"][0]: r["values"][1] for r in rows["queryResults"]["rows"]} == expected
    for entity_id in files[:6]:
        assert api.get(f"/repo/v1/entity/{entity_id}").json()["name"] == expected[entity_id]
        assert api.get(f"/repo/v1/entity/{entity_id}/type").json()["name"] == expected[entity_id]
        bundle = _bundle(api, entity_id).json()
        assert bundle["entity"]["name"] == expected[entity_id]
        assert bundle["path"]["path"][-1]["name"] == expected[entity_id]
        handle_id = bundle["fileHandles"][0]["id"]
        file_name = hostile.hostile_name(SEED, f"handle:{handle_id}", real[entity_id])
        assert bundle["fileName"] == bundle["fileHandles"][0]["fileName"] == file_name
        alone = api.post(f"/repo/v1/entity/{entity_id}/bundle2", {"includeFileName": True}).json()
        assert alone == {"fileName": file_name}
    # a folder and the project are entities too: the dataset/collection/list sources see their names the same way
    folder = api.get(f"/repo/v1/entity/{ids('d')}").json()
    assert folder["name"] == hostile.hostile_name(SEED, ids("d"), "d")
    assert hostile.injected()["names"] > before


def test_names_rate_is_a_stable_seeded_fraction(site):
    emu, api, ids = site
    files = _files(ids)

    real = {f: emu.store.entity(int(f[3:])).name for f in files}

    def mutated(seed):
        emu.set_knobs(hostile_rate=0.5, hostile_kinds="names", fault_seed=seed)
        listed = _list(api, ids("d")).json()["page"]
        return {h["id"] for h in listed if h["name"] != real[h["id"]]}

    first = mutated(SEED)
    assert 0 < len(first) < FILES
    assert first == {f for f in files if hostile.chosen(emu.knobs, "names", f)}
    assert {h["id"]: h["name"] for h in _list(api, ids("d")).json()["page"]} == {
        f: hostile.answered_name(emu.knobs, f, real[f]) for f in files
    }
    assert mutated(SEED) == first, "same seed, same mutation"
    assert mutated(SEED + 1) != first, "another seed chooses other entities"


# --- sizes -------------------------------------------------------------------------------------------------------
def test_sizes_are_hostile_in_bundles_and_batches(site):
    emu, api, ids = site
    emu.set_knobs(hostile_rate=1.0, hostile_kinds="sizes", fault_seed=SEED)
    before = hostile.injected()["sizes"]
    seen = set()
    for entity_id in _files(ids) + [ids("ext.csv")]:
        handle = emu.store.file_handle(int(_honest_handle(emu, entity_id)))
        expected = hostile.hostile_size(SEED, str(handle.id), handle.size)
        seen.add(type(expected).__name__ + ("-" if isinstance(expected, int) and expected < 0 else ""))
        assert not (type(expected) is int and 0 <= expected < 2**63), expected
        bundle = _bundle(api, entity_id).json()
        batch = _batch(api, entity_id, str(handle.id)).json()["requestedFiles"][0]
        for answered in (bundle["fileHandles"][0]["contentSize"], batch["fileHandle"]["contentSize"]):
            assert answered == expected and type(answered) is type(expected)
    assert seen == {"float", "int", "int-", "str"}, "the seed shows huge, negative, float and string sizes"
    assert hostile.injected()["sizes"] > before


# --- handle ids --------------------------------------------------------------------------------------------------
def test_handle_ids_carry_path_characters_in_bundles_batches_and_rows(site):
    emu, api, ids = site
    emu.set_knobs(hostile_rate=1.0, hostile_kinds="handle_ids", fault_seed=SEED)
    before = hostile.injected()["handle_ids"]
    files = _files(ids)
    for entity_id in files[:8]:
        honest = _honest_handle(emu, entity_id)
        expected = hostile.hostile_handle_id(SEED, honest)
        assert expected in hostile.PATH_IDS and ("/" in expected or "\\" in expected)
        bundle = _bundle(api, entity_id).json()
        assert bundle["entity"]["dataFileHandleId"] == bundle["fileHandles"][0]["id"] == expected
        answered = _batch(api, entity_id, honest).json()["requestedFiles"][0]
        assert answered["fileHandleId"] == answered["fileHandle"]["id"] == expected
        assert api.get(f"/repo/v1/entity/{entity_id}").json()["dataFileHandleId"] == expected
    rows, _ = _query(api, ids("v"), f"SELECT id, dataFileHandleId FROM {ids('v')}")
    assert {r["values"][0]: r["values"][1] for r in rows["queryResults"]["rows"]} == {
        f: hostile.hostile_handle_id(SEED, _honest_handle(emu, f)) for f in files
    }
    assert hostile.injected()["handle_ids"] > before


# --- paging ------------------------------------------------------------------------------------------------------
def test_children_listing_repeats_its_token_forever(site):
    emu, api, ids = site
    emu.set_knobs(hostile_rate=1.0, hostile_kinds="paging", fault_seed=SEED)
    before = hostile.injected()["paging"]
    first = _list(api, ids("")).json()
    assert first["nextPageToken"] == "50a0", "a one-page listing answers a token back to its first page"
    for _ in range(5):
        again = _list(api, ids(""), nextPageToken="50a0").json()
        assert again == first
    page = _list(api, ids("d"), nextPageToken="10a10").json()
    assert page["nextPageToken"] == "10a10" and len(page["page"]) == 10
    assert _list(api, ids("d")).json()["nextPageToken"] == "50a0"
    assert hostile.injected()["paging"] >= before + 8
    emu.set_knobs(hostile_rate=0.0)
    assert _list(api, ids("d"), nextPageToken="10a10").json()["nextPageToken"] == "10a20"


def test_query_pages_repeat_their_token_forever(site):
    emu, api, ids = site
    emu.set_knobs(hostile_rate=1.0, hostile_kinds="paging", fault_seed=SEED, query_page_rows=5)
    sql = f"SELECT id FROM {ids('v')}"
    result, _ = _query(api, ids("v"), sql)
    token = result["nextPageToken"]["token"]  # the first page's token is the honest one (offset 5)...
    second, _ = _query(api, ids("v"), sql, token_of_next=token)
    assert second["queryResults"]["rows"] != result["queryResults"]["rows"]
    for _ in range(4):  # ...and from there on the same token and the same rows, for ever
        again, _ = _query(api, ids("v"), sql, token_of_next=token)
        assert again["nextPageToken"]["token"] == token
        assert again["queryResults"]["rows"] == second["queryResults"]["rows"]
    single, _ = _query(api, ids("t"), f"SELECT n FROM {ids('t')}")
    assert len(single["queryResults"]["rows"]) == 3 and "nextPageToken" in single, "a one-page result loops too"
    back, _ = _query(api, ids("t"), f"SELECT n FROM {ids('t')}", token_of_next=single["nextPageToken"]["token"])
    assert (
        back["nextPageToken"] == single["nextPageToken"]
        and back["queryResults"]["rows"] == single["queryResults"]["rows"]
    )


# --- external URLs -----------------------------------------------------------------------------------------------
def test_external_urls_carry_credentials_and_still_serve(site):
    emu, api, ids = site
    emu.set_knobs(hostile_rate=1.0, hostile_kinds="url_credentials", fault_seed=SEED)
    before = hostile.injected()["url_credentials"]
    secret = f"{hostile.URL_USER}:{hostile.URL_SECRET}@"
    for name in ("ext.csv", "noted.csv"):
        entity_id = ids(name)
        handle = _bundle(api, entity_id).json()["fileHandles"][0]
        assert secret in handle["externalURL"]
        batch = _batch(api, entity_id, handle["id"], urls=True).json()["requestedFiles"][0]
        assert batch["preSignedURL"] == batch["fileHandle"]["externalURL"] == handle["externalURL"]
        moved = api.get(f"/repo/v1/entity/{entity_id}/file", allow_redirects=False)
        assert moved.status_code == 307 and moved.headers["Location"] == handle["externalURL"]
    assert handle["externalURL"] == "https://user:pw-HOSTILE@example.org/data/noted.csv"
    served = requests.get(_bundle(api, ids("ext.csv")).json()["fileHandles"][0]["externalURL"])
    assert served.content == b"a,b\n1,2\n"
    s3 = _files(ids)[0]
    url = _data_url(api, s3, _honest_handle(emu, s3))
    assert "@" not in urlsplit(url).netloc, "S3 pre-signed URLs are not external URLs"
    assert hostile.injected()["url_credentials"] > before


# --- redirects ---------------------------------------------------------------------------------------------------
def test_data_urls_redirect_to_a_dead_port_or_the_api_host(site):
    emu, api, ids = site
    emu.set_knobs(hostile_rate=1.0, hostile_kinds="redirects", fault_seed=SEED)
    before = hostile.injected()["redirects"]
    targets = set()
    for entity_id in _files(ids):
        url = _data_url(api, entity_id, _honest_handle(emu, entity_id))
        answer = requests.get(url, allow_redirects=False)
        assert answer.status_code == 302 and answer.content == b""
        location = answer.headers["Location"]
        parts = urlsplit(url)
        assert location == hostile.redirect_location(emu.knobs, parts.path, f"{parts.path}?{parts.query}", emu.endpoint)
        assert location.endswith(f"{parts.path}?{parts.query}")
        if location.startswith(emu.endpoint):
            targets.add("api-host")
            assert requests.get(location).status_code == 404
        else:
            targets.add("dead-port")
            assert urlsplit(location).port == hostile.dead_port()
            with pytest.raises(requests.ConnectionError):
                requests.get(location, timeout=5)
    assert targets == set(hostile.REDIRECT_TARGETS)
    external = api.get(f"/repo/v1/entity/{ids('ext.csv')}/file", params={"redirect": "false"}).text
    assert requests.get(external, allow_redirects=False).status_code == 302, "the external host redirects too"
    assert hostile.injected()["redirects"] >= before + FILES + 1


# --- bodies ------------------------------------------------------------------------------------------------------
def test_bodies_are_longer_or_shorter_with_and_without_content_length(site):
    emu, api, ids = site
    emu.set_knobs(hostile_rate=1.0, hostile_kinds="bodies", fault_seed=SEED)
    before = hostile.injected()["bodies"]
    forms = set()
    for entity_id in _files(ids) + [ids("ext.csv")]:
        handle = emu.store.file_handle(int(_honest_handle(emu, entity_id)))
        with open(emu.store.blob_path(handle.md5), "rb") as blob:
            honest = blob.read()
        if entity_id == ids("ext.csv"):
            url = api.get(f"/repo/v1/entity/{entity_id}/file", params={"redirect": "false"}).text
        else:
            url = _data_url(api, entity_id, str(handle.id))
        status, headers, body = _raw_get(url)
        plan = hostile.body_plan(emu.knobs, urlsplit(url).path, len(honest))
        assert status.endswith("200 OK") and len(body) == plan.count != len(honest)
        assert headers.get("content-length") == (str(plan.count) if plan.send_length else None)
        if plan.count > len(honest):
            assert body == honest + hostile.tail_bytes(plan.count - len(honest))
        else:
            assert body == honest[: plan.count]
        forms.add(("longer" if plan.count > len(honest) else "shorter", plan.send_length))
    assert len(forms) == 4, forms
    ranged = _data_url(api, _files(ids)[5], _honest_handle(emu, _files(ids)[5]))
    answer = requests.get(ranged, headers={"Range": "bytes=0-9"})
    assert answer.status_code == 206 and len(answer.content) != 10, "a ranged answer is mis-sized too"
    assert hostile.injected()["bodies"] > before


# --- replay ------------------------------------------------------------------------------------------------------
def _mutated_view(emu):
    api = Api(emu)
    project = emu.seed_spec(SPEC)["p"]
    files = [emu.resolve(project, f"d/f{i:02d}.txt") for i in range(FILES)]
    listed = _list(api, emu.resolve(project, "d")).json()
    bundles = [_bundle(api, f).json() for f in files]
    return (
        [(h["id"], h["name"]) for h in listed["page"]],
        listed.get("nextPageToken"),
        [
            (
                b["entity"]["name"],
                b["fileHandles"][0]["id"],
                b["fileHandles"][0]["contentSize"],
                b["fileHandles"][0]["fileName"],
            )
            for b in bundles
        ],
    )


def test_same_seed_same_mutations_in_another_emulator():
    knobs = dict(hostile_rate=0.5, hostile_kinds="names,sizes,handle_ids,paging")
    with Emulator(fault_seed=SEED, **knobs) as one, Emulator(fault_seed=SEED, **knobs) as two:
        first = _mutated_view(one)
        assert first == _mutated_view(two)
    with Emulator(fault_seed=SEED + 5, **knobs) as other:
        assert _mutated_view(other) != first
