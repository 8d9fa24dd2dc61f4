"""Which CAs both planes trust: the order of the sources, and what each plane is handed."""

from __future__ import annotations

import os
import ssl

import pytest

from synclient.errors import ConfigError
from synclient.platform.tls import (
    ARGUMENT_SOURCE,
    CA_BUNDLE_VARIABLES,
    DEFAULT_SOURCE,
    TrustedCAs,
    certificate_problem,
    resolve_trusted_cas,
)


@pytest.fixture
def bundles(tmp_path, monkeypatch):
    for name in CA_BUNDLE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    made = {}
    for name in ("argument", *CA_BUNDLE_VARIABLES, "config"):
        path = tmp_path / f"{name}.pem"
        path.write_text("-----BEGIN CERTIFICATE-----\n", encoding="ascii")
        made[name] = str(path)
    return made


def write_config(text):
    with open(os.environ["SYNAPSE_CONFIG_FILE"], "w", encoding="utf-8") as config:
        config.write(text)


def test_each_source_wins_over_the_ones_after_it(bundles, monkeypatch):
    write_config(f"[synclient]\nca_bundle = {bundles['config']}\n")
    assert resolve_trusted_cas().path == bundles["config"]
    for name in reversed(CA_BUNDLE_VARIABLES):  # CURL_CA_BUNDLE, then SSL_CERT_FILE, then REQUESTS_CA_BUNDLE
        monkeypatch.setenv(name, bundles[name])
        assert resolve_trusted_cas() == TrustedCAs(path=bundles[name], source=name)
    assert resolve_trusted_cas(bundles["argument"]) == TrustedCAs(path=bundles["argument"], source=ARGUMENT_SOURCE)


def test_without_any_source_both_planes_trust_certifi(bundles):
    import certifi

    trusted = resolve_trusted_cas()
    assert trusted == TrustedCAs(path=None, source=DEFAULT_SOURCE)
    context = trusted.ssl_context()
    assert context.verify_mode is ssl.CERT_REQUIRED and context.check_hostname
    expected = ssl.create_default_context(cafile=certifi.where()).cert_store_stats()
    assert context.cert_store_stats() == expected and expected["x509_ca"] > 50


def test_one_context_per_bundle_is_made_once_and_shared(bundles, tmp_path):
    """urllib3 given a bundle path parses the bundle for every new connection; the context is made once."""
    import trustme

    pem = tmp_path / "one-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(pem))
    first = resolve_trusted_cas(str(pem)).ssl_context()
    assert resolve_trusted_cas(str(pem)).ssl_context() is first
    assert first.cert_store_stats()["x509_ca"] == 1


def test_a_hashed_folder_is_a_context_of_that_folder(bundles, tmp_path):
    context = resolve_trusted_cas(str(tmp_path)).ssl_context()
    assert context.verify_mode is ssl.CERT_REQUIRED and context.check_hostname


def test_a_bundle_that_does_not_exist_is_a_config_error_naming_its_source(bundles, monkeypatch, tmp_path):
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "gone.pem"))
    with pytest.raises(ConfigError, match=r"the CA bundle .*gone\.pem \(from SSL_CERT_FILE\) does not exist"):
        resolve_trusted_cas()


def test_a_relative_or_home_path_is_made_absolute(bundles, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert resolve_trusted_cas("argument.pem").path == bundles["argument"]


def test_certificate_problems_are_found_inside_the_wrapping_libraries_add():
    verify = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    verify.verify_message = "self-signed certificate in certificate chain"
    outer = RuntimeError("max retries")
    outer.reason = OSError("wrapped")
    outer.reason.__cause__ = verify
    assert certificate_problem(outer) == "self-signed certificate in certificate chain"
    assert certificate_problem(ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER] wrong version number")) is None
    assert certificate_problem(ConnectionRefusedError()) is None


def test_a_bundle_without_certificates_is_a_config_error_naming_its_source(bundles, monkeypatch, tmp_path):
    garbage = tmp_path / "not-pem.pem"
    garbage.write_text("this is no certificate\n", encoding="ascii")
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(garbage))
    with pytest.raises(ConfigError, match=r"not-pem\.pem \(from REQUESTS_CA_BUNDLE\) cannot be read as PEM"):
        resolve_trusted_cas().ssl_context()
