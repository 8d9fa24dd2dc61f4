from __future__ import annotations

from synclient.emulator.routes import make_page_token, parse_page_token


def test_page_token_format():
    assert make_page_token(50, 100) == "50a100"
    assert parse_page_token("50a100") == (50, 100)
    assert parse_page_token(None) == (50, 0)


def _children(api, parent, **extra):
    body = {"parentId": parent, "includeTypes": ["file", "folder"], **extra}
    return api.post("/repo/v1/entity/children", body)


def test_children_pages_of_50_and_last_page_has_no_token(emulator, api):
    project = emulator.seed_synthetic(files=120, depth=0, fanout=1, size="10", project_name="flat")
    names, token, pages = [], None, 0
    while True:
        answer = _children(api, project, nextPageToken=token, includeTotalChildCount=True, includeSumFileSizes=True)
        assert answer.status_code == 200
        body = answer.json()
        pages += 1
        assert body["totalChildCount"] == 120 and body["sumFileSizesBytes"] == 1200
        names += [h["name"] for h in body["page"]]
        token = body.get("nextPageToken")
        if token is None:
            break
        assert token == f"50a{50 * pages}"
    assert pages == 3 and len(names) == 120 and names == sorted(names)


def test_children_header_shape_sort_and_filter(seeded, api):
    emu, project = seeded
    body = _children(api, project, sortDirection="DESC").json()
    names = [h["name"] for h in body["page"]]
    assert names == sorted(names, reverse=True) and "nextPageToken" not in body
    assert "l" not in names  # links were not requested
    header = body["page"][0]
    assert set(header) >= {
        "name",
        "id",
        "type",
        "versionNumber",
        "versionLabel",
        "benefactorId",
        "createdOn",
        "modifiedOn",
        "createdBy",
        "modifiedBy",
        "isLatestVersion",
    }
    by_name = {h["name"]: h for h in body["page"]}
    assert by_name["v.txt"]["versionNumber"] == 2 and by_name["v.txt"]["versionLabel"] == "2"
    assert by_name["d"]["type"] == "org.sagebionetworks.repo.model.Folder"
    links = _children(api, project, includeTypes=["link"]).json()["page"]
    assert [h["type"] for h in links] == ["org.sagebionetworks.repo.model.Link"] * 2
    created = _children(api, project, sortBy="CREATED_ON").json()["page"]
    assert [h["id"] for h in created] == sorted((h["id"] for h in created), key=lambda i: int(i[3:]))


def test_children_bad_requests(seeded, api):
    emu, project = seeded
    assert _children(api, project, nextPageToken="garbage").status_code == 400
    assert _children(api, project, sortBy="SIZE").status_code == 400
    assert _children(api, "syn999999999").status_code == 404
    answer = _children(api, project, includeTypes=[])
    assert answer.status_code == 400 and answer.json()["concreteType"].endswith("ErrorResponse")
