from __future__ import annotations

import base64

import requests
from emuhelpers import Api

from synclient.emulator.stats import route_key


def test_route_key_normalizes_ids():
    assert (
        route_key("POST", "/repo/v1/entity/syn12/version/3/bundle2") == "POST /repo/v1/entity/{id}/version/{v}/bundle2"
    )
    assert route_key("GET", "/file/v1/file/5000001?redirect=false") == "GET /file/v1/file/{id}"


def test_python_mutations(seeded, api):
    emu, project = seeded
    a = emu.resolve(project, "d/a.txt")
    before = api.get(f"/repo/v1/entity/{a}").json()
    assert emu.add_version(a, content=b"new bytes") == 2
    after = api.get(f"/repo/v1/entity/{a}").json()
    assert after["etag"] != before["etag"] and after["dataFileHandleId"] != before["dataFileHandleId"]
    assert requests.get(api.url_for(a)).content == b"new bytes"
    emu.rename_entity(a, "renamed.txt")
    assert emu.resolve(project, "d/renamed.txt") == a
    emu.move_entity(a, project)
    assert emu.resolve(project, "renamed.txt") == a
    folder = emu.add_folder(project, "new")
    added = emu.add_file(folder, "f.txt", content=b"hi")
    assert emu.resolve(project, "new/f.txt") == added
    emu.delete_entity(folder)
    assert api.get(f"/repo/v1/entity/{added}").status_code == 404


def test_admin_routes(seeded):
    emu, project = seeded
    admin = Api(emu, token=False)
    a = emu.resolve(project, "d/a.txt")
    answer = admin.post(f"/emulator/entity/{a}/version", {"content_b64": base64.b64encode(b"v2").decode()})
    assert answer.status_code == 201 and answer.json() == {"versionNumber": 2}
    assert admin.post(f"/emulator/entity/{a}/rename", {"name": "b.txt"}).status_code == 200
    assert admin.get("/emulator/resolve", params={"project": project, "path": "d/b.txt"}).json() == {"id": a}
    assert admin.post(f"/emulator/entity/{a}/rename", {"name": ".."}).status_code == 409  # name taken
    folder = admin.post("/emulator/folder", {"parentId": project, "name": "nf"}).json()["id"]
    file_id = admin.post("/emulator/file", {"parentId": folder, "name": "x", "size": 100, "seed": 3}).json()["id"]
    assert admin.post(f"/emulator/entity/{file_id}/move", {"parentId": project}).status_code == 200
    assert admin.post(f"/emulator/entity/{folder}/delete").status_code == 200
    assert admin.post("/emulator/entity/syn1/delete").status_code == 404
    assert admin.post("/emulator/knobs", {"url_lifetime": 42}).json()["url_lifetime"] == 42
    assert admin.post("/emulator/knobs", {"bogus": 1}).status_code == 400
    seeded_more = admin.post("/emulator/seed", {"projects": [{"name": "q", "children": []}]})
    assert seeded_more.status_code == 201 and "q" in seeded_more.json()["projects"]
    info = admin.get("/emulator/info").json()
    assert info["token"] == emu.token and set(info["projects"]) == {"p", "q"}
    assert emu.stats()["api_requests"] == 0


def test_stats_count_routes_and_reset(seeded, api):
    emu, project = seeded
    emu.reset_stats()
    api.post("/repo/v1/entity/children", {"parentId": project, "includeTypes": ["file"]})
    api.post(f"/repo/v1/entity/{project}/bundle2", {"includeEntity": True})
    stats = Api(emu, token=False).get("/emulator/stats").json()
    assert stats["api_requests"] == 2
    assert stats["api_by_route"] == {"POST /repo/v1/entity/children": 1, "POST /repo/v1/entity/{id}/bundle2": 1}
    assert Api(emu, token=False).post("/emulator/stats/reset").status_code == 200
    assert emu.stats()["api_requests"] == 0
