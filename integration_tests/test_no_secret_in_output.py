"""Issue 29, one redactor: a secret planted in any input a user or a server controls never reaches an output.

Planted: the token (``--token``, ``SYNCLIENT_AUTH_TOKEN``, the config file's ``authtoken``), a token shaped like a
Synapse personal access token (a JWT) that the platform refuses, the endpoint's ``user:password@`` (argument,
environment, config file), external file URLs with ``user:password@`` on an HTTPS host whose certificate is not
trusted (defect 3) and on a plain one, with a signed query, a proxy URL with credentials (``HTTPS_PROXY``,
``HTTP_PROXY``), a CA bundle path with a token-shaped folder name. Then ``synclient get`` and ``whoami`` run,
plain, with ``--json`` and with ``-vv``; stdout, stderr, the ``--json`` document and (for the library) the
captured logs are searched for every secret. Under Dask (``--dask local:2`` and a library run whose worker logs
are read back) too, where ``distributed`` is installed.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

import certifi
import pytest
import requests

from synclient import Platform, SyncStatus, sync_from_platform
from synclient.emulator import Emulator

REPO_ROOT = Path(__file__).resolve().parents[1]
EXTERNAL_PASSWORD = "pw-SECRET-ext"
PLAIN_EXTERNAL_PASSWORD = "pw2-SECRET-plain"
QUERY_SECRET = "QSECRET0123456789"
ENDPOINT_PASSWORD = "EPSECRET-bob"
PROXY_PASSWORD = "PROXYSECRET-u"


def _b64(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


#: shaped like a Synapse personal access token (a JWT); the platform knows no such token
FAKE_PAT = ".".join(
    [
        _b64({"typ": "JWT", "kid": "WZMAP", "alg": "RS256"}),
        _b64({"access": {"scope": ["view", "download"]}, "sub": "3456789", "iss": "x"}),
        "c2lnbmF0dXJlLW9mLWEtZmFrZS10b2tlbi0wMTIzNDU2Nzg5",
    ]
)
#: a folder name of the CA bundle's path, shaped like a token
CA_FOLDER = _b64({"kid": "folder-named-like-a-token"}) + ".ZmFrZQ.c2ln"


@dataclass
class World:
    emu: Emulator
    elsewhere: Emulator
    project: str
    root: Path
    ca_bundle: Path

    @property
    def secrets(self) -> List[str]:
        return [
            self.emu.token,
            FAKE_PAT,
            CA_FOLDER,
            EXTERNAL_PASSWORD,
            PLAIN_EXTERNAL_PASSWORD,
            QUERY_SECRET,
            ENDPOINT_PASSWORD,
            PROXY_PASSWORD,
        ]

    def endpoint_with_password(self) -> str:
        return self.emu.endpoint.replace("://", f"://bob:{ENDPOINT_PASSWORD}@", 1)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A plain-HTTP platform whose project holds a file of its own and two external files: one on an HTTPS host
    whose CA nobody trusts, one on a plain host; both URLs carry ``user:password@`` and a signed query."""
    root = tmp_path_factory.mktemp("secrets")
    ca_bundle = root / CA_FOLDER / "ca.pem"
    ca_bundle.parent.mkdir()
    shutil.copy(certifi.where(), ca_bundle)  # trusts what the default trusts: not the HTTPS host's own CA
    with Emulator() as emu, Emulator(tls=True) as elsewhere:
        far = _external_handle(elsewhere, "far.csv")
        plain = _external_handle(emu, "plain.csv")  # served by the platform's own external listener
        tls_host = elsewhere.external_endpoint.split("://", 1)[1]
        plain_host = emu.external_endpoint.split("://", 1)[1]
        query = f"?X-Amz-Signature={QUERY_SECRET}&X-Amz-Expires=30"
        project = emu.seed_spec(
            {
                "projects": [
                    {
                        "name": "p",
                        "children": [
                            {"type": "file", "name": "near.txt", "content": "near"},
                            {
                                "type": "file",
                                "name": "far.csv",
                                "external": f"https://alice:{EXTERNAL_PASSWORD}@{tls_host}/ext/{far}/far.csv{query}",
                            },
                            {
                                "type": "file",
                                "name": "plain.csv",
                                "external": f"http://carol:{PLAIN_EXTERNAL_PASSWORD}@{plain_host}/ext/{plain}/plain.csv{query}",
                            },
                        ],
                    }
                ]
            }
        )["p"]
        yield World(emu, elsewhere, project, root, ca_bundle)


def _external_handle(emu: Emulator, name: str) -> int:
    """The handle id of a file ``name`` whose bytes ``emu``'s external listener serves (in a project of its own)."""
    project = emu.seed_spec(
        {
            "projects": [
                {
                    "name": f"src-{name}",
                    "children": [{"type": "file", "name": name, "content": "a,b\n", "external": True}],
                }
            ]
        }
    )[f"src-{name}"]
    with requests.Session() as session:
        session.trust_env = False
        return session.get(
            f"{emu.endpoint}/repo/v1/entity/{emu.resolve(project, name)}",
            verify=emu.ca_bundle if emu.endpoint.startswith("https") else True,
            headers={"Authorization": f"Bearer {emu.token}"},
            timeout=30,
        ).json()["dataFileHandleId"]


def _env(world: World, home: Path, **extra: str) -> Dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SYNCLIENT_", "SYNAPSE_", "PYTHON_KEYRING", "TQDM_"))
        and k.upper()
        not in (
            "HTTPS_PROXY",
            "HTTP_PROXY",
            "ALL_PROXY",
            "NO_PROXY",
            "REQUESTS_CA_BUNDLE",
            "SSL_CERT_FILE",
            "CURL_CA_BUNDLE",
        )
    }
    home.mkdir(parents=True, exist_ok=True)
    env.update(
        {
            "HOME": str(home),
            "SYNAPSE_CONFIG_FILE": str(home / ".synapseConfig"),
            "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
            "PYTHONPATH": str(REPO_ROOT),
            "PYTHONUNBUFFERED": "1",
            "REQUESTS_CA_BUNDLE": str(world.ca_bundle),
        }
    )
    env.update(extra)
    return env


def _run(env: Dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "synclient", *args], env=env, text=True, capture_output=True, timeout=timeout
    )


def _assert_clean(world: World, done: subprocess.CompletedProcess, what: str) -> None:
    leaked = [secret for secret in world.secrets if secret in done.stdout or secret in done.stderr]
    assert not leaked, f"{what}: {leaked} in\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


ALL_FLAGS = ([], ["--json"], ["-vv"])


def _runs(env: Dict[str, str], target: Optional[Path], *command: str, variants=ALL_FLAGS):
    """The command plain, with --json and with -vv (a fresh target each)."""
    for flags in variants:
        extra = ["--path", str(target / ("t" + "".join(flags)))] if target is not None else []
        done = _run(env, *flags, *command, *extra)
        if "--json" in flags:
            json.loads(done.stdout)  # one JSON document, still
        yield flags, done


def test_a_password_in_an_untrusted_external_url_is_never_shown(world, tmp_path):
    """Defect 3: the storage host of a certificate that is not trusted was named with its ``user:password@``."""
    env = _env(world, tmp_path / "home", SYNCLIENT_ENDPOINT=world.emu.endpoint, SYNCLIENT_AUTH_TOKEN=world.emu.token)
    for flags, done in _runs(env, tmp_path, "get", "-r", world.project):
        assert done.returncode == 1, done.stderr  # far.csv fails, near.txt and plain.csv come down
        _assert_clean(world, done, f"get {flags}")
        assert "the TLS certificate of the storage host" in done.stderr
        if flags == ["--json"]:
            files = {Path(f["path"]).name: f for f in json.loads(done.stdout)["files"]}
            assert files["far.csv"]["status"] == "failed"
            assert files["near.txt"]["status"] == files["plain.csv"]["status"] == "downloaded"


@pytest.mark.parametrize("source", ["argument", "environment", "config file"])
def test_the_token_from_every_source_is_never_shown(world, tmp_path, source):
    token = world.emu.token
    env = _env(world, tmp_path / "home", SYNCLIENT_ENDPOINT=world.emu.endpoint)
    given: List[str] = []
    if source == "argument":
        given = ["--token", token]
    elif source == "environment":
        env["SYNCLIENT_AUTH_TOKEN"] = token
    else:
        Path(env["SYNAPSE_CONFIG_FILE"]).write_text(f"[default]\nauthtoken = {token}\n")
    for flags, done in _runs(env, None, *given, "whoami"):
        assert done.returncode == 0, done.stderr
        _assert_clean(world, done, f"whoami {source} {flags}")
    for flags, done in _runs(env, tmp_path, "get", *given, "-r", world.project):
        assert done.returncode == 1, done.stderr
        _assert_clean(world, done, f"get {source} {flags}")


def test_a_token_shaped_like_a_personal_access_token_is_never_shown(world, tmp_path):
    """Refused by the platform (401): the error names the source, never the token."""
    env = _env(world, tmp_path / "home", SYNCLIENT_ENDPOINT=world.emu.endpoint, SYNCLIENT_AUTH_TOKEN=FAKE_PAT)
    for flags, done in _runs(env, None, "whoami"):
        assert done.returncode == 2 and "rejected" in done.stderr, done.stderr
        _assert_clean(world, done, f"whoami {flags}")


@pytest.mark.parametrize("source", ["argument", "environment", "config file"])
def test_an_endpoint_with_a_password_is_refused_without_showing_it(world, tmp_path, source):
    """Defect 12: ``--endpoint http://bob:EPSECRET@host`` printed the password in warnings and errors (and sent
    it as Basic auth in place of the token: every call was refused as if the token were wrong)."""
    endpoint = world.endpoint_with_password()
    env = _env(world, tmp_path / "home", SYNCLIENT_AUTH_TOKEN=world.emu.token)
    given: List[str] = []
    if source == "argument":
        given = ["--endpoint", endpoint]
    elif source == "environment":
        env["SYNCLIENT_ENDPOINT"] = endpoint
    else:
        Path(env["SYNAPSE_CONFIG_FILE"]).write_text(
            "[endpoints]\n"
            + "".join(
                f"{key} = {endpoint}/{path}/v1\n"
                for key, path in (("repoEndpoint", "repo"), ("fileHandleEndpoint", "file"), ("authEndpoint", "auth"))
            )
        )
    for command, target in ((["whoami"], None), (["get", "-r", world.project], tmp_path)):
        for flags, done in _runs(env, target, *given, *command):
            assert done.returncode == 2, done.stderr
            assert "has a user name or password in it" in done.stderr
            _assert_clean(world, done, f"{command} {source} {flags}")


def test_an_unreachable_endpoint_with_a_password_is_refused_before_any_warning(world, tmp_path):
    """Before: each retry's warning and the final error named ``http://bob:EPSECRET@127.0.0.1:1/repo/v1``."""
    env = _env(
        world,
        tmp_path / "home",
        SYNCLIENT_AUTH_TOKEN=world.emu.token,
        SYNCLIENT_ENDPOINT=f"http://bob:{ENDPOINT_PASSWORD}@127.0.0.1:1",
    )
    for flags, done in _runs(env, None, "whoami"):
        assert done.returncode == 2 and "has a user name or password in it" in done.stderr, done.stderr
        assert "trying again" not in done.stderr
        _assert_clean(world, done, f"whoami {flags}")


@pytest.mark.slow  # about 13 s: the slow tier (pytest -m slow, run by CI after the README's command)
def test_proxy_credentials_are_never_shown(world, tmp_path):
    """The data plane's HTTPS proxy (its URL with ``user:password@``) is closed: the HTTPS external file fails
    through it; then the REST plane's HTTP proxy too: the endpoint cannot be reached, retried with warnings."""
    proxy = f"http://u:{PROXY_PASSWORD}@127.0.0.1:1"
    env = _env(
        world,
        tmp_path / "home",
        SYNCLIENT_ENDPOINT=world.emu.endpoint,
        SYNCLIENT_AUTH_TOKEN=world.emu.token,
        HTTPS_PROXY=proxy,
    )
    for flags, done in _runs(env, tmp_path, "get", "-r", world.project, variants=(["--json"], ["-vv"])):
        assert done.returncode == 1, done.stderr  # (the external file is tried a few times: --json and -vv only)
        _assert_clean(world, done, f"get through the HTTPS proxy {flags}")
    env["HTTP_PROXY"] = proxy
    for flags, done in _runs(env, None, "whoami"):
        assert done.returncode == 2, done.stderr
        _assert_clean(world, done, f"whoami through the HTTP proxy {flags}")


def test_a_library_sync_logs_and_reports_no_secret(world, tmp_path, caplog, monkeypatch):
    """What a library user's own log handlers receive (every level, urllib3's request lines included), the
    results, their reprs and JSON: no secret."""
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(world.ca_bundle))
    caplog.set_level(logging.DEBUG)
    with Platform(world.emu.endpoint, token=world.emu.token) as platform:
        results = sync_from_platform(
            world.project, tmp_path / "out", platform=platform, progress=False, on_error="continue"
        )
    statuses = {r.path.name: r.status for r in results}
    assert statuses["near.txt"] is SyncStatus.DOWNLOADED and statuses["far.csv"] is SyncStatus.FAILED
    client_log = "\n".join(
        caplog.text.splitlines()
        + [r.getMessage() for r in caplog.records if not r.name.startswith("synclient.emulator")]
    )
    text = "\n".join(
        [
            client_log,
            repr(results),
            repr(list(results)),  # every FileResult's repr (the results' own repr is one line of counts)
            results._repr_html_(),
            repr(results.report),
            str([str(r.error) for r in results]),
            json.dumps([r.to_json() for r in results]),
            json.dumps(results.report.to_json()),
        ]
    )
    leaked = [secret for secret in world.secrets if secret in text]
    assert not leaked, leaked
    assert any("?<redacted>" in r.getMessage() for r in caplog.records if r.name.startswith("urllib3"))


def test_a_sync_on_a_local_dask_cluster_shows_no_secret_nor_logs_one_on_its_workers(world, tmp_path, monkeypatch):
    """``--dask local:2`` (the workers' output goes to the CLI's stderr) and a library run whose workers' logs are
    read back: the external file on the untrusted host fails on a worker, its error travels back to the driver,
    redacted."""
    pytest.importorskip("distributed")
    from synclient.cluster.connect import dask_client
    from synclient.cluster.driver import DaskSettings

    env = _env(world, tmp_path / "home", SYNCLIENT_ENDPOINT=world.emu.endpoint, SYNCLIENT_AUTH_TOKEN=world.emu.token)
    done = _run(
        env,
        "--json",
        "-v",
        "get",
        "-r",
        world.project,
        "--path",
        str(tmp_path / "cli"),
        "--dask",
        "local:2",
        timeout=300,
    )
    assert done.returncode == 1, done.stderr[-3000:]
    _assert_clean(world, done, "get --dask local:2")
    assert json.loads(done.stdout)["report"]["workers"]

    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(world.ca_bundle))
    with dask_client("local:2") as client:
        with Platform(world.emu.endpoint, token=world.emu.token) as platform:
            results = sync_from_platform(
                world.project,
                tmp_path / "lib",
                platform=platform,
                progress=False,
                on_error="continue",
                dask=DaskSettings(client),
            )
        logs = [message for worker in client.get_worker_logs().values() for _, message in worker]
        logs += [message for _, message in client.get_scheduler_logs()]
    by_name = {r.path.name: r for r in results}
    assert by_name["far.csv"].status is SyncStatus.FAILED and by_name["plain.csv"].status is SyncStatus.DOWNLOADED
    assert "the TLS certificate of the storage host" in str(by_name["far.csv"].error)
    assert results.report.workers  # fetched on the cluster
    text = "\n".join(
        logs
        + [repr(results), repr(list(results)), results._repr_html_(), json.dumps([r.to_json() for r in results])]
        + [f"{r.error!r} {r.error} {getattr(r.error, 'host', '')}" for r in results]
    )
    leaked = [secret for secret in world.secrets if secret in text]
    assert not leaked, leaked
