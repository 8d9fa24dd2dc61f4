"""Token, profile and endpoint resolution and the keyring helpers of ``synclient.platform.credentials`` (in-process)."""

from __future__ import annotations

import keyring
import pytest
from fake_keyring import FileKeyring
from keyring.backends import fail

from synclient.errors import ConfigError
from synclient.platform import credentials as config


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch, tmp_path):
    for variable in (
        "SYNCLIENT_AUTH_TOKEN",
        "SYNAPSE_AUTH_TOKEN",
        "SYNCLIENT_ENDPOINT",
        "SYNCLIENT_PROFILE",
        "SYNAPSE_PROFILE",
    ):
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


# -- tokens with whitespace or control characters (CRLF env files, secrets mounted with a newline) -----------------

SECRET = "tok-0123456789abcdef"


def _token_in_every_source(monkeypatch, config_file, raw):
    """Yield (source, find) per token source, each holding ``raw``, with the earlier sources cleared."""
    keyring.get_keyring().set_password(config.KEYRING_SERVICE, config.DEFAULT_PROFILE, raw)  # as another tool would
    yield config.TokenSource.KEYRING, lambda: config.find_token()
    with open(config_file, "w", newline="") as file:  # Path.write_text has no newline= before Python 3.10
        file.write(f"[authentication]\nauthtoken = {raw}\n")
    yield config.TokenSource.CONFIG_FILE, lambda: config.find_token()
    for variable, source in (
        ("SYNAPSE_AUTH_TOKEN", config.TokenSource.SYNAPSE_ENV),
        ("SYNCLIENT_AUTH_TOKEN", config.TokenSource.SYNCLIENT_ENV),
    ):
        monkeypatch.setenv(variable, raw)
        yield source, lambda: config.find_token()
    yield config.TokenSource.ARGUMENT, lambda: config.find_token(raw)


@pytest.mark.parametrize("raw", [SECRET + "\r", SECRET + "\n", SECRET + "\r\n", f"  {SECRET}\t\r\n"])
def test_whitespace_around_a_token_is_dropped_from_every_source(monkeypatch, clean_environment, raw):
    for source, find in _token_in_every_source(monkeypatch, clean_environment, raw):
        found = find()
        assert (found.source, found.token) == (source, SECRET)


@pytest.mark.parametrize("raw", ["tok 0123456789", "tok-0123\t456789", "tok-0123\u00e9456789", "tok-0123\x7f456789"])
def test_a_token_with_a_bad_character_inside_is_refused_without_showing_it(monkeypatch, clean_environment, raw):
    for source, find in _token_in_every_source(monkeypatch, clean_environment, raw):
        with pytest.raises(ConfigError) as info:
            find()
        message = str(info.value)
        assert source.value in message and "not shown" in message and "\n" not in message
        assert "0123" not in message and "456789" not in message


@pytest.mark.parametrize("raw", ["tok-0123\r456789", "tok-0123\n456789\n"])
def test_a_line_break_inside_a_token_is_refused_from_the_environment_and_the_argument(monkeypatch, raw):
    monkeypatch.setenv("SYNCLIENT_AUTH_TOKEN", raw)
    for find in (config.find_token, lambda: config.find_token(raw), lambda: config.find_token("tok-01234\x00567")):
        with pytest.raises(ConfigError, match="not shown") as info:
            find()
        assert "0123" not in str(info.value) and "\n" not in str(info.value)


def test_a_whitespace_only_source_is_skipped(monkeypatch, clean_environment):
    monkeypatch.setenv("SYNCLIENT_AUTH_TOKEN", "\r\n")
    monkeypatch.setenv("SYNAPSE_AUTH_TOKEN", SECRET + "\n")
    assert config.find_token().source is config.TokenSource.SYNAPSE_ENV


def test_store_token_stores_the_clean_token():
    config.store_token(f" {SECRET}\r\n")
    assert config.keyring_token() == SECRET


def test_endpoint_source_names_where_the_endpoint_comes_from(monkeypatch, clean_environment):
    assert "production" in config.endpoint_source()
    clean_environment.write_text("[endpoints]\nrepoEndpoint = http://h:1/repo/v1\n")
    assert config.endpoint_source() == f"the [endpoints] section of {clean_environment}"
    monkeypatch.setenv("SYNCLIENT_ENDPOINT", "http://env:2")
    assert config.endpoint_source() == "the SYNCLIENT_ENDPOINT environment variable"
    assert config.endpoint_source("http://arg:3").startswith("the --endpoint option")
