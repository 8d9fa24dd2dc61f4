"""The download cart's manifest CSV garbled on its way from storage (found by the sources model's cart source, seed
11 in hostile mode: a UnicodeDecodeError out of ``download_list``): its body, which no MD5 vouches for, is fetched
again (a corrupting hop garbles one answer, not every one), and a body that stays garbled is one clear error; the
cart keeps every item."""

from __future__ import annotations

import pytest
import requests

from synclient import Platform, download_list
from synclient.emulator import Emulator
from synclient.errors import MalformedAnswerError
from synclient.sync.sources import cart as cart_source

SPEC = {"projects": [{"name": "p", "children": [{"type": "file", "name": "a.txt", "content": "a\n"}]}]}


@pytest.fixture
def emu(tmp_path):
    with Emulator(data_dir=str(tmp_path / "emu"), query_pending_polls=0) as emulator:
        project = emulator.seed_spec(SPEC)["p"]
        file_id = emulator.resolve(project, "a.txt")
        answer = requests.post(
            emulator.endpoint + "/repo/v1/download/list/add",
            json={"batchToAdd": [{"fileEntityId": file_id}]},
            headers={"Authorization": f"Bearer {emulator.token}"},
            timeout=60,
        )
        assert answer.status_code == 200, answer.text
        yield emulator


def test_a_garbled_manifest_is_tried_again_then_one_clear_error_and_the_cart_keeps_its_items(emu, tmp_path):
    emu.set_knobs(fault_data_corrupt_rate=1.0, fault_seed=1)  # every data body has one byte flipped (^ 0xFF)
    emu.reset_stats()
    with Platform(emu.endpoint, token=emu.token) as platform:
        with pytest.raises(MalformedAnswerError, match="manifest is no UTF-8 text"):
            download_list(tmp_path / "t", platform=platform)
        assert emu.stats()["data_requests"] == cart_source.MANIFEST_TRIES  # (each try a fresh body)
        emu.set_knobs(fault_data_corrupt_rate=0.0)
        assert [row.file_entity_id for row in platform.download_list_available()] != []
        results = download_list(tmp_path / "t", platform=platform)
    assert not results.failures and (tmp_path / "t" / "a.txt").read_bytes() == b"a\n"


def test_a_manifest_that_is_no_csv_is_a_malformed_answer():
    with pytest.raises(MalformedAnswerError):
        cart_source._parse_manifest(b"\xff\xfe not text")
