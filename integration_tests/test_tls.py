"""Issue 18: HTTPS end to end. The emulator serves every listener over TLS with a CA of its own; synclient verifies
certificates on the REST and the data plane alike, trusts what ``ca_bundle=`` / the environment say on both, goes
through an ``HTTPS_PROXY`` on both (a CONNECT proxy counts the tunnels), reuses connections, so TLS handshakes,
across files, and stops with one line naming the host when a certificate is not trusted."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest
import requests
from connect_proxy import ConnectProxy
from synctrees import local_tree

from synclient import Platform, SyncStatus, TransferConfig, sync_from_platform
from synclient.emulator import Emulator
from synclient.errors import CertificateError
from synclient.platform.tls import CA_BUNDLE_VARIABLES, TrustedCAs
from synclient.transfer import fetcher

PROXY_VARIABLES = (
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
)


@pytest.fixture
def clean_network_env(monkeypatch):
    """No CA bundle and no proxy from the machine: each test says what it trusts and where it goes through."""
    for name in CA_BUNDLE_VARIABLES + PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def tls_emulator(clean_network_env):
    with Emulator(tls=True) as emu:
        yield emu


def seed_small(emu, count, *, size=10):
    children = [{"type": "file", "name": f"f{i:04d}.txt", "content": f"{i:0{size}d}"} for i in range(count)]
    return emu.seed_spec({"projects": [{"name": "p", "children": children}]})["p"], children


def md5s(root):
    return local_tree(root)


def expected_md5s(children):
    return {c["name"]: hashlib.md5(c["content"].encode()).hexdigest() for c in children}


def test_the_emulator_announces_https_endpoints_and_its_ca(tls_emulator):
    info = tls_emulator.info()
    assert all(info[key].startswith("https://127.0.0.1:") for key in ("endpoint", "data_endpoint", "external_endpoint"))
    with open(info["ca_bundle"], encoding="ascii") as pem:
        assert pem.read().startswith("-----BEGIN CERTIFICATE-----")


def test_ca_bundle_is_trusted_on_both_planes_and_handshakes_are_reused(tls_emulator, tmp_path):
    """400 tiny files over HTTPS: byte-exact, and each plane shakes hands at most once per connection the pool may
    hold (never once per file)."""
    project, children = seed_small(tls_emulator, 400)
    workers = 8
    platform = Platform(
        tls_emulator.endpoint, token=tls_emulator.token, ca_bundle=tls_emulator.ca_bundle, max_connections=workers
    )
    results = sync_from_platform(
        project, tmp_path / "out", platform=platform, progress=False, config=TransferConfig(max_workers=workers)
    )
    assert {r.status for r in results} == {SyncStatus.DOWNLOADED}
    assert md5s(tmp_path / "out") == expected_md5s(children)
    stats = tls_emulator.stats()
    assert stats["data_requests"] == 400
    assert 1 <= stats["tls_handshakes"]["data"] <= workers
    assert 1 <= stats["tls_handshakes"]["api"] <= workers + 1  # the pool's threads and the caller's own first call
    assert stats["tls_handshakes"] == stats["connections"]  # every connection was TLS


def test_an_untrusted_rest_host_is_one_line_naming_it_and_trusted_by_flag_or_config(tls_emulator, tmp_path):
    project, _ = seed_small(tls_emulator, 3)
    env = {
        "SYNCLIENT_ENDPOINT": tls_emulator.endpoint,
        "SYNCLIENT_AUTH_TOKEN": tls_emulator.token,
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
    }
    run = subprocess.run(
        [sys.executable, "-m", "synclient", "get", "-r", project, "--path", str(tmp_path / "o")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith(f"synclient: error: the TLS certificate of endpoint {tls_emulator.endpoint}")
    assert "--ca-bundle" in lines[0] and "REQUESTS_CA_BUNDLE" in lines[0]
    assert tls_emulator.stats()["api_requests"] == 0  # refused at the handshake: not a single request got through
    ok = subprocess.run(
        [
            sys.executable,
            "-m",
            "synclient",
            "get",
            "-r",
            project,
            "--path",
            str(tmp_path / "o"),
            "--ca-bundle",
            tls_emulator.ca_bundle,
            "-q",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stderr
    assert len(local_tree(tmp_path / "o")) == 3
    config = tmp_path / "synapseConfig"
    config.write_text(f"[synclient]\nca_bundle = {tls_emulator.ca_bundle}\n", encoding="utf-8")
    from_config = subprocess.run(
        [sys.executable, "-m", "synclient", "get", "-r", project, "--path", str(tmp_path / "c"), "-q"],
        env={**env, "SYNAPSE_CONFIG_FILE": str(config)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert from_config.returncode == 0, from_config.stderr
    assert len(local_tree(tmp_path / "c")) == 3


def test_an_untrusted_storage_host_stops_the_run_once_and_writes_nothing(tls_emulator, tmp_path, monkeypatch):
    """REST trusts the CA, the data plane does not (as behind a proxy that re-signs only the storage host): the run
    stops at the first file with one error naming the storage host, instead of failing every file."""
    project, _ = seed_small(tls_emulator, 50)
    platform = Platform(tls_emulator.endpoint, token=tls_emulator.token, ca_bundle=tls_emulator.ca_bundle)
    data_client = fetcher.DataClient
    monkeypatch.setattr(
        fetcher,
        "DataClient",
        lambda pool_size, **_: data_client(  # the runs' data plane only
            pool_size, trusted_cas=TrustedCAs(path=None, source="a test's certifi default")
        ),
    )
    with pytest.raises(CertificateError) as raised:
        sync_from_platform(project, tmp_path / "out", platform=platform, progress=False, on_error="continue")
    host = tls_emulator.data_endpoint.split("://")[1]
    assert str(raised.value).startswith(f"the TLS certificate of the storage host {host} is not trusted")
    assert [rel for rel in local_tree(tmp_path / "out") if not rel.startswith(".")] == []  # (partials may wait)
    assert tls_emulator.stats()["data_requests"] == 0


def test_https_proxy_carries_both_planes_and_no_proxy_bypasses_it(tls_emulator, tmp_path, monkeypatch):
    project, children = seed_small(tls_emulator, 20)
    api_host = tls_emulator.endpoint.split("://")[1]
    data_host = tls_emulator.data_endpoint.split("://")[1]
    with ConnectProxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        platform = Platform(tls_emulator.endpoint, token=tls_emulator.token, ca_bundle=tls_emulator.ca_bundle)
        sync_from_platform(project, tmp_path / "via", platform=platform, progress=False)
        assert md5s(tmp_path / "via") == expected_md5s(children)
        assert proxy.tunnels[api_host] >= 1 and proxy.tunnels[data_host] >= 1
        assert set(proxy.tunnels) == {api_host, data_host}

        proxy.tunnels.clear()
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        platform = Platform(tls_emulator.endpoint, token=tls_emulator.token, ca_bundle=tls_emulator.ca_bundle)
        sync_from_platform(project, tmp_path / "direct", platform=platform, progress=False)
        assert md5s(tmp_path / "direct") == expected_md5s(children)
        assert not proxy.tunnels


def test_the_environment_bundle_reaches_the_data_plane_too(tls_emulator, tmp_path, monkeypatch):
    """Before issue 18 only REST read ``REQUESTS_CA_BUNDLE``; ``SSL_CERT_FILE`` alone now serves both planes."""
    project, children = seed_small(tls_emulator, 5)
    monkeypatch.setenv("SSL_CERT_FILE", tls_emulator.ca_bundle)
    platform = Platform(tls_emulator.endpoint, token=tls_emulator.token)
    assert platform.trusted_cas.source == "SSL_CERT_FILE"
    sync_from_platform(project, tmp_path / "out", platform=platform, progress=False)
    assert md5s(tmp_path / "out") == expected_md5s(children)


def test_an_untrusted_external_host_fails_its_file_only(tls_emulator, tmp_path):
    """An external-URL file lives on a host of its own choosing: a certificate the bundle does not trust there fails
    that file (with the one-line reason), and the platform's own files still come down."""
    with Emulator(tls=True) as elsewhere:  # another HTTPS host, signed by a CA nobody gave us
        remote = elsewhere.seed_spec(
            {
                "projects": [
                    {
                        "name": "q",
                        "children": [{"type": "file", "name": "far.csv", "content": "a,b\n", "external": True}],
                    }
                ]
            }
        )["q"]
        far_id = elsewhere.resolve(remote, "far.csv")
        with requests.Session() as session:
            session.trust_env = False
            handle_id = session.get(
                f"{elsewhere.endpoint}/repo/v1/entity/{far_id}",
                verify=elsewhere.ca_bundle,
                headers={"Authorization": f"Bearer {elsewhere.token}"},
                timeout=30,
            ).json()["dataFileHandleId"]
        url = f"{elsewhere.external_endpoint}/ext/{handle_id}/far.csv"
        project = tls_emulator.seed_spec(
            {
                "projects": [
                    {
                        "name": "p",
                        "children": [
                            {"type": "file", "name": "near.txt", "content": "near"},
                            {"type": "file", "name": "far.csv", "external": url},
                        ],
                    }
                ]
            }
        )["p"]
        platform = Platform(tls_emulator.endpoint, token=tls_emulator.token, ca_bundle=tls_emulator.ca_bundle)
        results = sync_from_platform(project, tmp_path / "out", platform=platform, progress=False, on_error="continue")
        by_name = {r.path.name: r for r in results}
        assert by_name["near.txt"].status is SyncStatus.DOWNLOADED
        assert by_name["far.csv"].status is SyncStatus.FAILED
        host = elsewhere.external_endpoint.split("://")[1]
        assert f"the TLS certificate of the storage host {host} is not trusted" in str(by_name["far.csv"].error)
        assert sorted(local_tree(tmp_path / "out")) == ["near.txt"]
        assert elsewhere.stats()["external_requests"] == 0
