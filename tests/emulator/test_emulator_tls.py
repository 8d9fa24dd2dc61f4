"""The emulator over HTTPS (``--tls`` / ``Emulator(tls=True)``): a CA of its own, its PEM file announced, every
listener on TLS, handshakes counted per listener, the same CA across restarts."""

from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import subprocess
import sys

import pytest
import requests

from synclient.emulator import Emulator


def get(url, token, **kwargs):
    return requests.get(url, headers={"Authorization": f"Bearer {token}"}, timeout=10, **kwargs)


def test_serve_tls_announces_https_endpoints_and_the_ca_bundle(tmp_path):
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "synclient.emulator",
            "serve",
            "--tls",
            "--synthetic",
            "files=3,depth=1,fanout=3,size=10",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ready = json.loads(server.stdout.readline())
        assert set(ready) == {"endpoint", "data_endpoint", "external_endpoint", "token", "projects", "ca_bundle"}
        assert all(ready[key].startswith("https://") for key in ("endpoint", "data_endpoint", "external_endpoint"))
        profile = get(f"{ready['endpoint']}/repo/v1/userProfile", ready["token"], verify=ready["ca_bundle"])
        assert profile.status_code == 200
        with pytest.raises(requests.exceptions.SSLError):
            get(f"{ready['endpoint']}/repo/v1/userProfile", ready["token"], verify=True)  # certifi: not our CA
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=20) == 0
    assert not os.path.exists(ready["ca_bundle"])  # the throwaway CA goes with the emulator


def test_every_listener_serves_tls_and_counts_its_handshakes(tmp_path):
    with Emulator(tls=True) as emu:
        project = emu.seed_spec(
            {"projects": [{"name": "p", "children": [{"type": "file", "name": "a.txt", "content": "bytes"}]}]}
        )["p"]
        file_id = emu.resolve(project, "a.txt")
        with requests.Session() as session:
            session.trust_env = False  # else requests lets REQUESTS_CA_BUNDLE override session.verify
            session.verify = emu.ca_bundle
            session.headers["Authorization"] = f"Bearer {emu.token}"
            handle_id = session.get(f"{emu.endpoint}/repo/v1/entity/{file_id}", timeout=10).json()["dataFileHandleId"]
            url = session.get(
                f"{emu.endpoint}/file/v1/file/{handle_id}",
                timeout=10,
                params={"fileAssociateType": "FileEntity", "fileAssociateId": file_id, "redirect": "false"},
            ).text
        assert url.startswith(emu.data_endpoint)
        with requests.Session() as storage:  # no token goes to storage
            storage.trust_env = False
            storage.verify = emu.ca_bundle
            for _ in range(3):
                assert storage.get(url, timeout=10).content == b"bytes"
        stats = emu.stats()
        assert stats["tls_handshakes"] == {"api": 1, "data": 1}  # one connection per host, kept alive
        assert stats["connections"] == stats["tls_handshakes"]


def test_a_client_that_does_not_trust_the_ca_gets_no_answer_and_the_server_keeps_serving():
    with Emulator(tls=True) as emu:
        context = ssl.create_default_context()  # the machine's CAs, not the emulator's
        with pytest.raises(ssl.SSLCertVerificationError):
            with socket.create_connection(("127.0.0.1", int(emu.endpoint.rsplit(":", 1)[1])), timeout=10) as raw:
                context.wrap_socket(raw, server_hostname="127.0.0.1")
        assert emu.stats()["api_requests"] == 0
        assert get(f"{emu.endpoint}/repo/v1/userProfile", emu.token, verify=emu.ca_bundle).status_code == 200


def test_a_restart_keeps_the_ports_and_the_ca():
    with Emulator(tls=True) as emu:
        endpoint, bundle = emu.endpoint, emu.ca_bundle
        emu.restart()
        assert (emu.endpoint, emu.ca_bundle) == (endpoint, bundle)
        assert get(f"{emu.endpoint}/repo/v1/userProfile", emu.token, verify=bundle).status_code == 200
