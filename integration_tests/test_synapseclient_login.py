"""The same login as synapseclient: config files written by synapseclient 4.14's own ``synapse config`` code path.

Each profile is written by the real ``synapseclient.__main__.config`` (only its interactive prompt is replaced),
which logs in against an emulator before it writes, so every token in these files is one that emulator accepts.
Two emulators give two distinct tokens, so a test can tell which section a token was read from. For every shape,
synclient must pick the token synapseclient's own reader (``get_config_authentication``) picks.
"""

from __future__ import annotations

import argparse

import pytest

from synclient import Platform
from synclient.errors import ConfigError
from synclient.platform.credentials import TokenSource, find_token

synapseclient = pytest.importorskip("synapseclient")
synapse_main = pytest.importorskip("synapseclient.__main__")
configuration_services = pytest.importorskip("synapseclient.api.configuration_services")


@pytest.fixture
def config_file(tmp_path, monkeypatch):
    path = tmp_path / "synapseConfig"
    monkeypatch.setenv("SYNAPSE_CONFIG_FILE", str(path))
    for variable in (
        "SYNCLIENT_AUTH_TOKEN",
        "SYNAPSE_AUTH_TOKEN",
        "SYNCLIENT_PROFILE",
        "SYNAPSE_PROFILE",
        "SYNCLIENT_ENDPOINT",
    ):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr("synclient.platform.credentials.keyring_token", lambda profile="default": None)
    return path


def synapse_config(emu, path, *, profile, username="", monkeypatch, tmp_path):
    """``synapse config [--profile P]`` as the official CLI runs it, answering its prompt with ``emu``'s token."""
    syn = synapseclient.Synapse(
        repoEndpoint=emu.endpoint + "/repo/v1",
        authEndpoint=emu.endpoint + "/auth/v1",
        fileHandleEndpoint=emu.endpoint + "/file/v1",
        portalEndpoint=emu.endpoint + "/",
        skip_checks=True,
        cache_root_dir=str(tmp_path / "synapse-cache"),
        configPath=str(path),
        silent=True,
    )
    monkeypatch.setattr(
        synapse_main,
        "_prompt_for_credentials",
        lambda user=None, profile=None, password=None: (username, emu.token, profile or "default"),
    )
    synapse_main.config(argparse.Namespace(profile=profile, configPath=str(path)), syn)


def synapseclient_token(path, profile):
    """The token synapseclient 4.14 logs in with for ``profile`` (its own reader and its own profile check)."""
    configuration_services.get_config_file.cache_clear()
    found = configuration_services.get_config_authentication(config_path=str(path), profile=profile)
    if profile != "default" and found.get("section_name") != profile:
        return None
    return found.get("authtoken")


@pytest.fixture
def two_emulators(emulator_factory):
    first, second = emulator_factory(), emulator_factory()
    assert first.token != second.token
    return first, second


def test_default_profile_written_by_synapse_config(config_file, two_emulators, monkeypatch, tmp_path):
    first, _ = two_emulators
    synapse_config(first, config_file, profile=None, monkeypatch=monkeypatch, tmp_path=tmp_path)
    assert "[default]" in config_file.read_text()
    found = find_token()
    assert found.token == first.token == synapseclient_token(config_file, "default")
    assert found.source is TokenSource.CONFIG_FILE and "[default]" in found.detail
    with Platform(first.endpoint) as platform:  # and it is a login the platform accepts
        assert platform.get_user_profile()["userName"]


def test_named_profile_beside_the_default_one(config_file, two_emulators, monkeypatch, tmp_path):
    first, second = two_emulators
    synapse_config(first, config_file, profile=None, monkeypatch=monkeypatch, tmp_path=tmp_path)
    synapse_config(second, config_file, profile="lab", username="", monkeypatch=monkeypatch, tmp_path=tmp_path)
    text = config_file.read_text()
    assert "[default]" in text and "[profile lab]" in text
    assert find_token().token == first.token == synapseclient_token(config_file, "default")
    assert find_token(profile="lab").token == second.token == synapseclient_token(config_file, "lab")
    monkeypatch.setenv("SYNAPSE_PROFILE", "lab")  # synapseclient's variable picks the profile too
    assert find_token().token == second.token


def test_named_profile_only(config_file, two_emulators, monkeypatch, tmp_path):
    """On a new file, synapseclient 4.14 writes ``[profile lab]`` twice, and its own strict parser then refuses the
    file (ValueError). synclient reads the repeated header as one section (a deliberate difference)."""
    _, second = two_emulators
    synapse_config(second, config_file, profile="lab", monkeypatch=monkeypatch, tmp_path=tmp_path)
    assert config_file.read_text().count("[profile lab]") == 2
    with pytest.raises(ValueError, match="Error parsing Synapse config file"):
        synapseclient_token(config_file, "lab")
    assert find_token(profile="lab").token == second.token
    # the template synapseclient writes has no live [default]/[authentication] token: no default login
    assert find_token() is None
    with pytest.raises(ConfigError, match="unknown profile 'other'"):
        find_token(profile="other")
    # once the file holds each header once (any later 'synapse config' run or an edit), both tools agree
    config_file.write_text(config_file.read_text().replace("[profile lab]\n[profile lab]", "[profile lab]"))
    assert find_token(profile="lab").token == second.token == synapseclient_token(config_file, "lab")
    assert synapseclient_token(config_file, "default") is None
    assert synapseclient_token(config_file, "other") is None


def test_default_written_into_a_legacy_authentication_file(config_file, two_emulators, monkeypatch, tmp_path):
    """Files from synapseclient before 4 have ``[authentication]``; ``synapse config`` adds ``[default]`` to such a
    file (keeping a backup) and from then on ``[default]`` wins for both tools."""
    first, second = two_emulators
    config_file.write_text(f"[authentication]\nauthtoken = {second.token}\n\n[endpoints]\n")
    assert find_token().token == second.token == synapseclient_token(config_file, "default")
    synapse_config(first, config_file, profile=None, monkeypatch=monkeypatch, tmp_path=tmp_path)
    assert "[authentication]" in config_file.read_text()
    assert find_token().token == first.token == synapseclient_token(config_file, "default")
    assert (tmp_path / "synapseConfig.backup").exists()


def test_an_empty_default_section_falls_back_to_authentication(config_file, two_emulators):
    first, second = two_emulators
    config_file.write_text(f"[default]\n\n[authentication]\nauthtoken={second.token}\n")
    assert find_token().token == second.token == synapseclient_token(config_file, "default")
    config_file.write_text(f"[default]\nusername=someone\n\n[authentication]\nauthtoken={second.token}\n")
    assert find_token() is None  # a [default] with no token: synapseclient looks no further in the file either
    assert synapseclient_token(config_file, "default") is None


def test_the_environment_still_comes_before_the_file(config_file, two_emulators, monkeypatch, tmp_path):
    first, second = two_emulators
    synapse_config(first, config_file, profile=None, monkeypatch=monkeypatch, tmp_path=tmp_path)
    monkeypatch.setenv("SYNAPSE_AUTH_TOKEN", second.token)
    assert find_token().source is TokenSource.SYNAPSE_ENV
    monkeypatch.setenv("SYNCLIENT_AUTH_TOKEN", first.token)
    assert find_token().source is TokenSource.SYNCLIENT_ENV
    assert find_token(second.token).source is TokenSource.ARGUMENT
