"""Token, profile and endpoint resolution and the keyring helpers of ``synclient.config`` (in-process)."""
from __future__ import annotations

import keyring
import pytest
from keyring.backends import fail

from fake_keyring import FileKeyring
from synclient import config
from synclient.errors import ConfigError


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch, tmp_path):
    for variable in ("SYNCLIENT_AUTH_TOKEN", "SYNAPSE_AUTH_TOKEN", "SYNCLIENT_ENDPOINT", "SYNCLIENT_PROFILE",
                     "SYNAPSE_PROFILE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("SYNAPSE_CONFIG_FILE", str(tmp_path / "synapseConfig"))
    monkeypatch.setenv("SYNCLIENT_TEST_KEYRING_FILE", str(tmp_path / "keyring.json"))
    previous = keyring.get_keyring()
    keyring.set_keyring(FileKeyring())
    yield tmp_path / "synapseConfig"
    keyring.set_keyring(previous)


def test_order_argument_env_config_keyring(monkeypatch, clean_environment):
    config.store_token("from-keyring")
    assert config.find_token().source is config.TokenSource.KEYRING
    clean_environment.write_text("[authentication]\nauthtoken = from-config\n")
    assert config.resolve_token() == "from-config"
    monkeypatch.setenv("SYNAPSE_AUTH_TOKEN", "from-synapse-env")
    assert config.resolve_token() == "from-synapse-env"
    monkeypatch.setenv("SYNCLIENT_AUTH_TOKEN", "from-synclient-env")
    assert config.resolve_token() == "from-synclient-env"
    assert config.resolve_token("from-argument") == "from-argument"
    assert "from-argument" not in repr(config.find_token("from-argument"))


def test_profiles(monkeypatch, clean_environment):
    clean_environment.write_text("[authentication]\nauthtoken = a\n[profile lab]\nauthtoken = b\n")
    assert config.resolve_token(profile="lab") == "b"
    monkeypatch.setenv("SYNAPSE_PROFILE", "lab")
    assert config.resolve_token() == "b"
    monkeypatch.setenv("SYNCLIENT_PROFILE", "default")
    assert config.resolve_token() == "a"
    with pytest.raises(ConfigError, match="unknown profile 'typo'"):
        config.resolve_token(profile="typo")
    config.store_token("c", "keyring-only")
    assert config.resolve_token(profile="keyring-only") == "c"


def test_no_token_anywhere():
    assert config.find_token() is None


def test_store_and_delete():
    assert config.delete_token() is False
    config.store_token("t")
    assert config.keyring_token() == "t"
    assert config.delete_token() is True
    assert config.keyring_token() is None


def test_no_keyring_backend_message():
    keyring.set_keyring(fail.Keyring())
    assert not config.keyring_available()
    assert config.keyring_token() is None  # resolution just moves on
    with pytest.raises(config.KeyringUnavailableError) as caught:
        config.store_token("t")
    message = str(caught.value)
    assert "no keyring backend" in message and "SYNCLIENT_AUTH_TOKEN" in message and "keyrings.alt" in message
    assert isinstance(caught.value, ConfigError)


def test_endpoints(monkeypatch, clean_environment):
    assert config.resolve_endpoints().repo == config.PRODUCTION_REPO
    clean_environment.write_text("[endpoints]\nrepoEndpoint = http://h:1/repo/v1/\n")
    assert config.resolve_endpoints().repo == "http://h:1/repo/v1"
    monkeypatch.setenv("SYNCLIENT_ENDPOINT", "http://env:2")
    assert config.resolve_endpoints().file == "http://env:2/file/v1"
    assert config.resolve_endpoints("http://arg:3").auth == "http://arg:3/auth/v1"
    with pytest.raises(ConfigError):
        config.resolve_endpoints("ftp://nope")
