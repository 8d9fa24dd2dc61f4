"""Error paths of the CLI: tokens never reach output, bad ids, a held lock and a file as --path are usage errors (2)."""

from __future__ import annotations

import json

import pytest
import requests
from cli_support import isolated_env, run_cli
from stub_http import Answer, stub_server

from synclient.cli import REDACTED, ExitCode, _explain, redact
from synclient.errors import (
    AccessDeniedError,
    AuthenticationError,
    CallCancelledError,
    ConfigError,
    EndpointError,
    LocalIOError,
    MalformedAnswerError,
    NotFoundError,
    ServerError,
    TargetError,
    UnsafePathError,
)
from synclient.sync.records.index import LocalIndex, SyncLockedError

SECRET = "tok-s3cr3t-0123456789abcdef"


def _project(emulator, name="cli-project"):
    return emulator.ids[name]


def _one_line(result):
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


# -- redaction --------------------------------------------------------------------------------------------------------


def _invalid_header_message(token: str) -> str:
    with pytest.raises(requests.exceptions.InvalidHeader) as info:
        requests.Request("GET", "http://h/", headers={"Authorization": f"Bearer {token}"}).prepare()
    return str(info.value)


def test_redact_removes_the_token_bearer_values_and_authorization_headers():
    message = _invalid_header_message(SECRET + "\r")
    assert SECRET in message  # what requests says, and why output must be redacted
    assert SECRET not in redact(message) and SECRET not in redact(message, secrets=[SECRET + "\r"])
    assert redact(f"x {SECRET}\\r y", secrets=[SECRET + "\r"]) == f"x {REDACTED} y"
    assert redact(f"plain {SECRET} text", secrets=[SECRET]) == f"plain {REDACTED} text"
    assert redact("header Authorization: Basic dXNlcjpwYXNz, next") == f"header Authorization: {REDACTED}, next"
    assert redact("{'Authorization': 'Bearer abc.def'}") == f"{{'Authorization': '{REDACTED}'}}"
    assert redact("sent bearer%20abc.def-ghi to the proxy") == f"sent bearer {REDACTED} to the proxy"
    assert redact("nothing secret here", secrets=[None, "", "abc"]) == "nothing secret here"


def test_an_error_that_quotes_the_token_is_redacted_in_every_output(tmp_path):
    echo = Answer(
        400, json.dumps({"reason": f"rejected header Authorization: Bearer {SECRET}; token {SECRET}"}).encode()
    )
    with stub_server(echo) as stub:
        env = isolated_env(tmp_path, SYNCLIENT_ENDPOINT=stub.root, SYNCLIENT_AUTH_TOKEN=SECRET)
        plain = run_cli("ls", "syn1", env=env)
        as_json = run_cli("--json", "ls", "syn1", env=env)
        verbose = run_cli("-v", "ls", "syn1", env=env)
    assert plain.returncode == as_json.returncode == verbose.returncode == 1  # a refused request, as before
    assert _one_line(plain).startswith("synclient: error: GET /entity/{id}/type: HTTP 400: rejected header")
    assert REDACTED in plain.stderr and REDACTED in as_json.json()["error"]["message"]
    assert "Traceback" in verbose.stderr  # -v shows it, redacted too
    for result in (plain, as_json, verbose):
        assert SECRET not in result.stdout + result.stderr
        assert SECRET[4:12] not in result.stdout + result.stderr


# -- tokens with whitespace or control characters --------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["\r", "\n", "\r\n"])
def test_a_token_with_a_trailing_line_break_works(tmp_path, tree_emulator, suffix):
    env = isolated_env(
        tmp_path, SYNCLIENT_ENDPOINT=tree_emulator.endpoint, SYNAPSE_AUTH_TOKEN=tree_emulator.token + suffix
    )
    assert run_cli("whoami", env=env).returncode == 0
    result = run_cli("ls", _project(tree_emulator), "--token", tree_emulator.token + suffix, env=env)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("where", ["env", "option"])
def test_a_token_with_a_control_character_inside_is_refused_without_showing_it(tmp_path, tree_emulator, where):
    token = tree_emulator.token
    broken = token[:6] + "\r" + token[6:]
    env = isolated_env(
        tmp_path,
        SYNCLIENT_ENDPOINT=tree_emulator.endpoint,
        **({"SYNCLIENT_AUTH_TOKEN": broken} if where == "env" else {}),
    )
    extra = ["--token", broken] if where == "option" else []
    for args in (["whoami"], ["--json", "ls", _project(tree_emulator)]):
        result = run_cli(*args, *extra, env=env)
        assert result.returncode == 2, result.stderr
        line = _one_line(result)
        assert "has a space, control or non-ASCII character inside it" in line and "not shown" in line
        assert token[6:] not in result.stdout + result.stderr  # the random part, after "emu-" and two characters


def test_login_stores_the_token_without_its_line_break(tmp_path, tree_emulator):
    env = isolated_env(
        tmp_path,
        SYNCLIENT_ENDPOINT=tree_emulator.endpoint,
        PYTHON_KEYRING_BACKEND="fake_keyring.FileKeyring",
        SYNCLIENT_TEST_KEYRING_FILE=str(tmp_path / "keyring.json"),
    )
    login = run_cli("login", "--token", tree_emulator.token + "\r\n", env=env)
    assert login.returncode == 0, login.stderr
    assert json.loads((tmp_path / "keyring.json").read_text()) == {"synclient/default": tree_emulator.token}
    assert run_cli("whoami", env=env).returncode == 0


# -- ids, lock, target -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("entity", ["syn1.\u00b2", "syn\u0661\u0662", "syn12.x", "syn"])
@pytest.mark.parametrize("command", ["get", "ls"])
def test_a_bad_id_is_one_line_and_exit_2(env, tmp_path, command, entity):
    result = run_cli(command, entity, *(["--path", str(tmp_path)] if command == "get" else []), env=env)
    assert result.returncode == 2
    assert "not a platform id" in _one_line(result) and "internal error" not in result.stderr


def test_another_sync_holding_the_lock_is_exit_2(env, tree_emulator, tmp_path):
    target = tmp_path / "mirror"
    target.mkdir()
    with LocalIndex(target):
        result = run_cli("get", "-r", _project(tree_emulator), "--path", str(target), env=env)
    assert result.returncode == 2
    assert "another sync is running into" in _one_line(result)


@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]])
def test_a_path_that_is_a_file_is_exit_2(env, tree_emulator, tmp_path, dry_run):
    target = tmp_path / "a-file.txt"
    target.write_text("mine")
    result = run_cli("get", "-r", _project(tree_emulator), "--path", str(target), *dry_run, env=env)
    assert result.returncode == 2
    assert _one_line(result) == (
        f"synclient: error: the target path cannot be used: {target} exists as a file; "
        f"give --path a directory (it is created when missing)"
    )
    assert target.read_text() == "mine"


# -- the mapping of errors to exit codes -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "error,code",
    [
        (ConfigError("bad option"), ExitCode.USAGE),
        (
            EndpointError("endpoint http://h/repo/v1 refused the connection", endpoint="http://h/repo/v1"),
            ExitCode.USAGE,
        ),
        (TargetError("the target path cannot be used: /t exists as a file"), ExitCode.USAGE),
        (SyncLockedError("another sync is running into /t"), ExitCode.USAGE),
        (UnsafePathError("name '..' is a directory reference"), ExitCode.USAGE),
        (AuthenticationError("GET /userProfile: HTTP 401"), ExitCode.USAGE),
        (AccessDeniedError("GET /entity/{id}/type: HTTP 403"), ExitCode.USAGE),
        (NotFoundError("GET /entity/{id}/type: HTTP 404"), ExitCode.USAGE),
        (ServerError("GET /entity/{id}/type: HTTP 503"), ExitCode.FILES_FAILED),
        (MalformedAnswerError("POST /entity/{id}/bundle2: malformed answer"), ExitCode.FILES_FAILED),
        (CallCancelledError("GET /userProfile: cancelled"), ExitCode.FILES_FAILED),
        (LocalIOError("cannot write /t/a: disk full"), ExitCode.FILES_FAILED),
        (KeyError("id"), ExitCode.FILES_FAILED),
    ],
)
def test_exit_code_of_each_error(error, code):
    assert _explain(error, None).code is code


def test_not_found_names_the_method_once():
    message = str(_explain(NotFoundError("GET /entity/{id}/type: HTTP 404", status=404), None))
    assert message == (
        "not found: GET /entity/{id}/type: HTTP 404 (check the id; it may not exist or may have been deleted)"
    )
