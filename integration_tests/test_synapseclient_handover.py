"""A logged-in official synapseclient handed over to synclient: ``Platform.from_synapseclient(syn)`` and ``syn=``."""

from __future__ import annotations

import logging

import pytest

from synclient import Platform, SyncStatus, sync_from_platform, syncFromPlatform
from synclient.errors import ConfigError

pytestmark = pytest.mark.over_tls  # each test also runs against an emulator serving HTTPS

synapseclient = pytest.importorskip("synapseclient")

SPEC = {
    "projects": [
        {
            "name": "p",
            "children": [
                {"type": "folder", "name": "d", "children": [{"type": "file", "name": "a.txt", "content": "A"}]},
                {"type": "file", "name": "b.txt", "content": "B"},
            ],
        }
    ]
}


def test_from_synapseclient_takes_its_endpoints_and_login(emulator, synapse_login, caplog):
    syn = synapse_login(emulator)
    with caplog.at_level(logging.DEBUG), Platform.from_synapseclient(syn) as platform:
        assert platform.endpoints.repo == syn.repoEndpoint == emulator.endpoint + "/repo/v1"
        assert platform.endpoints.file == syn.fileHandleEndpoint
        assert platform.endpoints.auth == syn.authEndpoint
        assert platform.get_user_profile()["userName"] == syn.credentials.username
        assert emulator.token not in repr(platform) and emulator.token not in str(platform)
    assert emulator.token not in caplog.text


def test_a_synapse_that_is_not_logged_in_is_a_clear_error(emulator, synapse_login, tmp_path):
    syn = synapse_login(emulator)
    syn.logout()
    with pytest.raises(ConfigError, match=r"not logged in: call syn\.login\(\) first"):
        Platform.from_synapseclient(syn)
    with pytest.raises(ConfigError, match="not logged in"):
        sync_from_platform("syn1", tmp_path / "out", syn=syn)
    assert not (tmp_path / "out").exists()


def test_something_else_is_not_taken_for_a_synapse():
    with pytest.raises(ConfigError, match="is not a synapseclient.Synapse"):
        Platform.from_synapseclient(object())


@pytest.mark.parametrize("entry", [sync_from_platform, syncFromPlatform])
def test_syn_shortcut_syncs_with_that_login(emulator, synapse_login, tmp_path, entry):
    project = emulator.seed_spec(SPEC)["p"]
    results = entry(project, tmp_path / "out", syn=synapse_login(emulator))
    assert [r.status for r in results] == [SyncStatus.DOWNLOADED] * 2
    assert (tmp_path / "out" / "d" / "a.txt").read_text() == "A"
    assert (tmp_path / "out" / "b.txt").read_text() == "B"


def test_syn_and_platform_together_are_refused(emulator, synapse_login, tmp_path):
    syn = synapse_login(emulator)
    with (
        Platform(emulator.endpoint, token=emulator.token) as platform,
        pytest.raises(ConfigError, match="either platform= or syn="),
    ):
        sync_from_platform("syn1", tmp_path / "out", platform=platform, syn=syn)
