"""Wrong or unreachable endpoints: within seconds, one error line that names the endpoint and what is wrong, exit 2.

Each case runs the real entry point against a tiny HTTP server on 127.0.0.1 (stub_http.py) or a port nothing
listens on. Retries of an endpoint that never answered well are announced, one warning line each.
"""

from __future__ import annotations

import re

import pytest
from cli_support import isolated_env, run_cli
from stub_http import EMPTY_OBJECT, HTML_200, HTML_404, Answer, refused_root, stub_server

from synclient.platform.rest import FIRST_CONTACT_MAX_BACKOFF

REDIRECT = Answer(301, b"", "text/html", {"Location": "https://127.0.0.1/repo/v1/entity/syn1/type"})
ANNOUNCED_WAIT = re.compile(r"trying again in (\d+\.\d) s")


def _run(*args, env):
    return run_cli(*args, env=env, timeout=120)


def _check_one_error_line(result, *, root, phrase, warnings):
    lines = result.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("synclient: error: ")]
    retries = [line for line in lines if line.startswith("synclient: warning: ")]
    assert result.returncode == 2, result.stderr
    assert len(errors) == 1 and len(lines) == 1 + len(retries), result.stderr
    assert f"endpoint {root}/repo/v1 " in errors[0] and phrase in errors[0], errors[0]
    assert len(retries) == warnings, result.stderr
    assert all(root in line and "trying again" in line for line in retries)
    # "within seconds" by policy, not by a clock (a loaded machine starts Python slowly): one try, or a few tries
    # with the short waits of a first contact between them
    waits = [float(ANNOUNCED_WAIT.search(line).group(1)) for line in retries]
    assert all(0 <= wait <= FIRST_CONTACT_MAX_BACKOFF for wait in waits), retries
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr


@pytest.mark.parametrize(
    "answer,phrase,warnings",
    [
        (HTML_404, "is not a Synapse API: GET /entity/{id}/type answered HTTP 404 with a text/html body", 0),
        (REDIRECT, "redirects to another scheme (https://127.0.0.1, HTTP 301)", 0),
        (EMPTY_OBJECT, "gave a malformed answer to GET /entity/{id}/type (entity header lacks its 'id' field)", 0),
        (
            HTML_200,
            "gave a malformed answer (a text/html body, not JSON), so it is probably not a Synapse API; gave up "
            "after 3 tries of GET /entity/{id}/type",
            2,
        ),
    ],
    ids=["plain-web-server-404", "redirect-to-https", "empty-object", "html-200"],
)
def test_an_endpoint_that_is_not_synapse(tmp_path, answer, phrase, warnings):
    with stub_server(answer) as stub:
        env = isolated_env(tmp_path, SYNCLIENT_ENDPOINT=stub.root, SYNCLIENT_AUTH_TOKEN="tok-0123456789")
        result = _run("ls", "syn1", env=env)
    _check_one_error_line(result, root=stub.root, phrase=phrase, warnings=warnings)
    assert "(the endpoint comes from the SYNCLIENT_ENDPOINT environment variable)" in result.stderr
    assert len(stub.paths) == 1 + warnings  # the redirect was not followed


def test_connection_refused(tmp_path):
    root = refused_root()
    env = isolated_env(tmp_path, SYNCLIENT_AUTH_TOKEN="tok-0123456789")
    result = _run("--endpoint", root, "get", "-r", "syn1", "--path", str(tmp_path / "o"), env=env)
    _check_one_error_line(result, root=root, phrase="refused the connection", warnings=2)
    assert "(the endpoint comes from the --endpoint option" in result.stderr


def test_quiet_keeps_the_error_line_only(tmp_path):
    root = refused_root()
    result = _run("-q", "ls", "syn1", env=isolated_env(tmp_path, SYNCLIENT_ENDPOINT=root))
    _check_one_error_line(result, root=root, phrase="refused the connection", warnings=0)


def test_tls_to_a_plain_http_server(tmp_path):
    with stub_server(HTML_404) as stub:
        root = stub.root.replace("http://", "https://")
        result = _run("ls", "syn1", env=isolated_env(tmp_path, SYNCLIENT_ENDPOINT=root))
    _check_one_error_line(result, root=root, phrase="failed the TLS handshake", warnings=0)


def test_json_mode_carries_the_same_one_line_message(tmp_path):
    with stub_server(HTML_404) as stub:
        result = _run("--json", "ls", "syn1", env=isolated_env(tmp_path, SYNCLIENT_ENDPOINT=stub.root))
    document = result.json()
    assert document["exit_code"] == 2 and document["error"]["type"] == "EndpointError"
    assert f"endpoint {stub.root}/repo/v1 is not a Synapse API" in document["error"]["message"]


# -- the endpoint as whoami prints it (issue 32, 4.1) ---------------------------------------------------------------

ROOT = "http://127.0.0.1:8080"


@pytest.mark.parametrize(
    "given",
    [ROOT, ROOT + "/", ROOT + "/repo/v1", ROOT + "/repo/v1/", ROOT + "/file/v1", ROOT + "/auth/v1/", " " + ROOT + "\n"],
)
def test_every_spelling_of_the_root_names_the_same_three_services(given, monkeypatch):
    from synclient.platform.credentials import Endpoints, resolve_endpoints
    from synclient.platform.rest import Platform

    expected = Endpoints(repo=ROOT + "/repo/v1", file=ROOT + "/file/v1", auth=ROOT + "/auth/v1")
    assert Endpoints.from_root(given) == expected
    assert resolve_endpoints(given) == expected  # --endpoint and the Python API's endpoint=
    monkeypatch.setenv("SYNCLIENT_ENDPOINT", given)
    assert resolve_endpoints() == expected
    with Platform(endpoint=given, token="tok-0123456789") as platform:
        assert platform.endpoints == expected


def test_a_path_under_the_root_is_kept():
    from synclient.platform.credentials import Endpoints

    # a platform served under a prefix keeps it; only the service's own path is dropped
    assert Endpoints.from_root("https://host/synapse/repo/v1").repo == "https://host/synapse/repo/v1"
    assert Endpoints.from_root("https://host/synapse").file == "https://host/synapse/file/v1"
    assert Endpoints.from_root("https://host/repo/v2").repo == "https://host/repo/v2/repo/v1"  # not a service path


def test_the_scheme_is_read_in_any_case():
    from synclient.platform.credentials import Endpoints

    assert Endpoints.from_root("HTTPS://host/REPO/V1/").repo == "https://host/repo/v1"


@pytest.mark.parametrize("tail", ["?sig=hidden-q-value", "/repo/v1?sig=hidden-q-value", "/repo/v1#hidden-q-value"])
def test_an_endpoint_with_a_query_or_a_fragment_is_one_line_that_never_shows_it(tmp_path, tail):
    """The service paths would go after the query (every call to a wrong URL), and a query is never shown."""
    from synclient.errors import ConfigError
    from synclient.platform.credentials import Endpoints

    with pytest.raises(ConfigError, match="query string or a fragment") as raised:
        Endpoints.from_root("https://user:hidden-pw@host" + tail)
    assert "hidden" not in str(raised.value) and "https://host" in str(raised.value)
    env = isolated_env(tmp_path, SYNCLIENT_AUTH_TOKEN="tok-0123456789")
    result = _run("--endpoint", ROOT + tail, "ls", "syn1", env=env)
    assert result.returncode == 2 and "hidden" not in result.stderr + result.stdout, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("synclient: error: the endpoint http://127.0.0.1:8080") and "query string" in line


def test_the_endpoint_whoami_prints_works_as_endpoint(tmp_path, tree_emulator):
    env = isolated_env(tmp_path, SYNCLIENT_AUTH_TOKEN=tree_emulator.token)
    whoami = _run("--json", "--endpoint", tree_emulator.endpoint, "whoami", env=env)
    printed = whoami.json()["endpoint"]
    assert printed == tree_emulator.endpoint + "/repo/v1"
    for endpoint_env, args in (
        ({}, ("--endpoint", printed + "/")),
        ({"SYNCLIENT_ENDPOINT": printed}, ()),
    ):
        listed = _run(*args, "ls", tree_emulator.ids["cli-project"], env={**env, **endpoint_env})
        assert listed.returncode == 0, listed.stderr
        assert "readme.txt" in listed.stdout


# -- a dead proxy is named, not the endpoint (issue 32, 4.11) -------------------------------------------------------


def _proxied_env(tmp_path, **proxies):
    env = isolated_env(tmp_path, SYNCLIENT_AUTH_TOKEN="tok-0123456789")
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        env.pop(name, None)
        env.pop(name.upper(), None)
    env.update(proxies)
    return env


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "http_proxy", "ALL_PROXY"])
def test_a_dead_proxy_is_named_without_its_credentials(tmp_path, variable):
    root, proxy = refused_root(), refused_root()
    proxy_port = proxy.rsplit(":", 1)[1]
    with_credentials = f"http://alice:pr0xy-pa55word@127.0.0.1:{proxy_port}"
    result = _run("-q", "--endpoint", root, "ls", "syn1", env=_proxied_env(tmp_path, **{variable: with_credentials}))
    (line,) = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert line.startswith(f"synclient: error: the proxy http://127.0.0.1:{proxy_port} from {variable} "), line
    assert f"(on the way to endpoint {root}/repo/v1) refused the connection (is the proxy running" in line
    assert "add 127.0.0.1 to NO_PROXY" in line
    assert "alice" not in result.stderr and "pr0xy-pa55word" not in result.stderr
    assert f"endpoint {root}/repo/v1 refused" not in line


def test_a_proxy_that_no_proxy_bypasses_is_not_named(tmp_path):
    root, proxy = refused_root(), refused_root()
    env = _proxied_env(tmp_path, HTTP_PROXY=proxy, NO_PROXY="127.0.0.1")
    result = _run("-q", "--endpoint", root, "ls", "syn1", env=env)
    _check_one_error_line(result, root=root, phrase="refused the connection (is the service running", warnings=0)
    assert "proxy" not in result.stderr
