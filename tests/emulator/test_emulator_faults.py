from __future__ import annotations

import time

import pytest
import requests
from emuhelpers import Api


def test_5xx_per_route_class(seeded):
    emu, project = seeded
    emu.set_knobs(fault_api_5xx_rate={"children": 1.0}, fault_api_5xx_statuses=(502,))
    api = Api(emu)
    answer = api.post("/repo/v1/entity/children", {"parentId": project, "includeTypes": ["file"]})
    assert answer.status_code == 502 and "reason" in answer.json()
    assert api.get(f"/repo/v1/entity/{project}").status_code == 200  # other classes untouched
    assert emu.stats()["api_5xx_injected"] == 1


def test_fault_decisions_are_reproducible(emulator_factory):
    def run():
        emu = emulator_factory(fault_api_5xx_rate=0.5, fault_seed=99)
        api = Api(emu)
        return [api.get("/repo/v1/userProfile").status_code for _ in range(30)]

    first, second = run(), run()
    assert first == second and 200 in first and any(s >= 500 for s in first)


def test_random_429(seeded):
    emu, project = seeded
    emu.set_knobs(fault_api_429_rate=1.0)
    answer = Api(emu).get("/repo/v1/userProfile")
    assert answer.status_code == 429 and "concurrent" in answer.json()["reason"]


def test_cut_body_is_short(seeded):
    emu, project = seeded
    api = Api(emu)
    url = api.url_for(emu.resolve(project, "big.bin"))
    emu.set_knobs(fault_data_cut_rate=1.0)
    with pytest.raises(requests.exceptions.RequestException):
        requests.get(url).content  # noqa: B018 - reading the body is the point
    assert emu.stats()["data_cuts_injected"] == 1


def test_stalled_body_goes_silent_then_closes(seeded):
    emu, project = seeded
    api = Api(emu)
    url = api.url_for(emu.resolve(project, "d/a.txt"))
    emu.set_knobs(fault_data_stall_rate=1.0, stall_seconds=0.5)
    started = time.monotonic()
    answer = requests.get(url, stream=True, timeout=30)
    assert answer.status_code == 200  # headers arrive
    with pytest.raises(requests.exceptions.RequestException):
        answer.content  # noqa: B018
    assert time.monotonic() - started >= 0.4
    assert emu.stats()["data_stalls_injected"] == 1


def test_maintenance_window(emulator_factory):
    emu = emulator_factory(maintenance_window=(0, 3600))
    answer = Api(emu).get("/repo/v1/userProfile")
    assert answer.status_code == 503 and answer.json()["reason"] == "Synapse is down for maintenance."
    emu.set_knobs(maintenance_window=None)
    assert Api(emu).get("/repo/v1/userProfile").status_code == 200


def test_bandwidth_cap_paces_the_body(seeded):
    emu, project = seeded
    url = Api(emu).url_for(emu.resolve(project, "big.bin"))
    emu.set_knobs(bandwidth_per_conn="4MB")
    started = time.monotonic()
    body = requests.get(url, headers={"Range": "bytes=0-1999999"}).content
    elapsed = time.monotonic() - started
    assert len(body) == 2_000_000 and elapsed >= 0.4  # 2 MB at 4 MB/s: ~0.5 s (generous bound)
