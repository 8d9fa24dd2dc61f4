from __future__ import annotations

import requests
from emuhelpers import HOSTILE_SPEC, Api

from synclient.emulator import Emulator


def test_restart_keeps_ports_token_and_data(tmp_path):
    with Emulator(data_dir=str(tmp_path / "store")) as emu:
        project = emu.seed_spec(HOSTILE_SPEC)["p"]
        api = Api(emu)
        url = api.url_for(emu.resolve(project, "big.bin"))
        endpoints, token = (emu.endpoint, emu.data_endpoint), emu.token
        emu.add_version(emu.resolve(project, "d/a.txt"), b"second")
        emu.restart()
        assert (emu.endpoint, emu.data_endpoint) == endpoints and emu.token == token
        api = Api(emu)
        assert api.get(f"/repo/v1/entity/{emu.resolve(project, 'd/a.txt')}").json()["versionNumber"] == 2
        assert requests.get(url, headers={"Range": "bytes=0-9"}).status_code == 206  # URLs survive too


def test_new_emulator_on_same_data_dir_sees_everything(tmp_path):
    store = str(tmp_path / "store")
    with Emulator(data_dir=store) as first:
        project = first.seed_spec(HOSTILE_SPEC)["p"]
        token = first.token
        secret = first.resolve(project, "secret")
    with Emulator(data_dir=store) as second:
        assert second.token == token
        assert second.info()["projects"] == {"p": project}
        api = Api(second)
        assert requests.get(api.url_for(second.resolve(project, "d/a.txt"))).content == b"text"
        assert api.get(f"/repo/v1/entity/{secret}").status_code == 403  # permissions persist
        assert second.add_folder(project, "fresh") != secret  # ids keep counting up
    assert (tmp_path / "store").exists()  # a given data dir is never deleted


def test_stop_cuts_open_keep_alive_connections(tmp_path):
    emu = Emulator(data_dir=str(tmp_path / "s")).start()
    session = requests.Session()
    assert session.get(emu.endpoint + "/repo/v1/version").status_code == 200
    emu.restart()
    assert session.get(emu.endpoint + "/repo/v1/version").status_code == 200  # reconnects transparently
    emu.stop()


def test_port_in_use_fails_cleanly():
    import pytest

    with Emulator() as running:
        taken = int(running.endpoint.rsplit(":", 1)[1])
        clash = Emulator(port=taken)
        with pytest.raises(OSError):
            clash.start()
        clash.stop()
