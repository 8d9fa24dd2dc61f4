"""The opt-in exchange recorder (knob ``record_exchanges``): what it keeps, its bound, and that it is off by default."""

from __future__ import annotations

import requests
from emuhelpers import Api

from synclient.emulator import Emulator


def _seed(emu):
    return emu.seed_spec(
        {"projects": [{"name": "p", "children": [{"type": "file", "name": "a.txt", "content": "A"}]}]}
    )["p"]


def test_off_by_default_records_nothing():
    with Emulator() as emu:
        project = _seed(emu)
        assert Api(emu).get(f"/repo/v1/entity/{project}").status_code == 200
        assert emu.exchanges() == []


def test_records_requests_and_json_answers_in_order():
    with Emulator(record_exchanges=10) as emu:
        project = _seed(emu)
        api = Api(emu)
        api.get(f"/repo/v1/entity/{project}", params={"x": "1"})
        api.post("/repo/v1/entity/children", {"parentId": project, "includeTypes": ["file"]})
        api.get("/repo/v1/entity/syn999999")
        api.session.post(emu.endpoint + "/repo/v1/entity/children", data=b"not json")
        requests.get(emu.endpoint + "/emulator/stats")  # admin routes are not platform exchanges
        first, second, missing, garbled = emu.exchanges()
    assert (first.method, first.path, first.query, first.request, first.status) == (
        "GET",
        f"/repo/v1/entity/{project}",
        {"x": "1"},
        None,
        200,
    )
    assert first.response["id"] == project and first.response["name"] == "p"
    assert second.request == {"parentId": project, "includeTypes": ["file"]}
    assert [page["name"] for page in second.response["page"]] == ["a.txt"]
    assert missing.status == 404 and "reason" in missing.response
    assert garbled.request == "not json" and garbled.status == 400


def test_bounded_to_the_last_n_and_cleared_on_request():
    with Emulator(record_exchanges=3) as emu:
        project = _seed(emu)
        api = Api(emu)
        for query in range(5):
            api.get(f"/repo/v1/entity/{project}", params={"n": str(query)})
        assert [exchange.query["n"] for exchange in emu.exchanges(clear=True)] == ["2", "3", "4"]
        assert emu.exchanges() == []
        emu.set_knobs(record_exchanges=0)
        api.get(f"/repo/v1/entity/{project}")
        assert emu.exchanges() == []


def test_admin_route_lists_them_and_restart_keeps_them():
    with Emulator(record_exchanges=5) as emu:
        project = _seed(emu)
        Api(emu).get(f"/repo/v1/entity/{project}")
        emu.restart()
        listed = requests.get(emu.endpoint + "/emulator/exchanges").json()
    assert [(item["method"], item["path"], item["status"]) for item in listed] == [
        ("GET", f"/repo/v1/entity/{project}", 200)
    ]
