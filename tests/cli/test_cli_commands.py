"""The real ``synclient`` entry point in a subprocess against the emulator: exit codes, output, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import isolated_env, run_cli


def _project(emulator, name="cli-project"):
    return emulator.ids[name]


# -- basics and usage errors (exit 2) -------------------------------------------------------------------------


def test_version_and_help(env):
    assert run_cli("--version", env=env).stdout.startswith("synclient ")
    helped = run_cli("--help", env=env)
    assert helped.returncode == 0
    for command in ("get", "ls", "login", "logout", "whoami", "demo"):
        assert command in helped.stdout


@pytest.mark.parametrize(
    "args",
    [["get"], ["frobnicate"], ["get", "syn1", "--max-workers", "0"], ["get", "syn1", "--if-collision", "explode"], []],
)
def test_usage_errors_exit_2(env, args):
    result = run_cli(*args, env=env)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr


def test_malformed_id_is_a_usage_error(env):
    result = run_cli("get", "-r", "not-an-id", env=env)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "not a platform id" in result.stderr


def test_container_needs_recursive_flag(env, tree_emulator, tmp_path):
    result = run_cli("get", _project(tree_emulator), "--path", str(tmp_path / "out"), env=env)
    assert result.returncode == 2
    assert "pass -r" in result.stderr
    assert not (tmp_path / "out").exists()


# -- get: success, JSON, re-sync, failures ---------------------------------------------------------------------


def test_get_json_is_one_object_with_report_and_files(env, tree_emulator, tmp_path):
    out = tmp_path / "out"
    result = run_cli("--json", "get", "-r", _project(tree_emulator), "--path", str(out), env=env)
    assert result.returncode == 0, result.stderr
    document = result.json()
    assert document["exit_code"] == 0
    assert document["report"]["downloaded"] == 3 and document["report"]["failed"] == 0
    assert document["report"]["rest_calls"] > 0 and "mb_per_second" in document["report"]
    statuses = {Path(f["path"]).relative_to(out).as_posix(): f["status"] for f in document["files"]}
    assert statuses == {"readme.txt": "downloaded", "data/a.csv": "downloaded", "data/raw/b.bin": "downloaded"}
    assert (out / "readme.txt").read_text() == "hello from the emulator\n"
    assert (out / "data" / "raw" / "b.bin").stat().st_size == 3 * 1024 * 1024

    again = run_cli("get", "-r", _project(tree_emulator), "--path", str(out), "--json", env=env)
    assert again.returncode == 0
    assert again.json()["report"]["downloaded"] == 0
    assert again.json()["report"]["skipped"] == 3


def test_get_prints_summary_line(env, tree_emulator, tmp_path):
    result = run_cli("get", "-r", _project(tree_emulator), "--path", str(tmp_path / "o"), env=env)
    assert result.returncode == 0
    assert "3 downloaded, 0 skipped, 0 failed" in result.stdout
    assert "REST calls" in result.stdout


def test_single_file_get(env, tree_emulator, tmp_path):
    file_id = tree_emulator.resolve(_project(tree_emulator), "data/a.csv")
    result = run_cli("get", file_id, "--path", str(tmp_path), "--json", env=env)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "a.csv").read_text() == "x,y\n1,2\n"


def test_some_files_failed_exit_1(env, tree_emulator, tmp_path):
    result = run_cli("--json", "get", "-r", _project(tree_emulator, "with-denied"), "--path", str(tmp_path), env=env)
    assert result.returncode == 1
    document = result.json()
    assert document["exit_code"] == 1
    assert document["report"]["downloaded"] == 1 and document["report"]["failed"] == 1
    failed = [f for f in document["files"] if f["status"] == "failed"]
    assert failed[0]["path"].endswith("secret.txt") and failed[0]["error"]
    assert "secret.txt" in result.stderr and "Traceback" not in result.stderr
    assert (tmp_path / "ok.txt").read_text() == "fine"


# -- auth and ids ------------------------------------------------------------------------------------------------


def test_bad_token_exit_2_one_line_no_traceback(tmp_path, tree_emulator):
    token = "definitely-not-a-valid-token-123"
    env = isolated_env(tmp_path, SYNCLIENT_ENDPOINT=tree_emulator.endpoint, SYNCLIENT_AUTH_TOKEN=token)
    result = run_cli("get", "-r", _project(tree_emulator), "--path", str(tmp_path / "o"), env=env)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "invalid or expired" in lines[0] and "synclient login" in lines[0]
    assert "SYNCLIENT_AUTH_TOKEN" in lines[0]
    assert token not in result.stderr + result.stdout


def test_bad_token_with_verbose_shows_traceback(tmp_path, tree_emulator):
    env = isolated_env(tmp_path, SYNCLIENT_ENDPOINT=tree_emulator.endpoint, SYNCLIENT_AUTH_TOKEN="bad")
    result = run_cli("-v", "whoami", env=env)
    assert result.returncode == 2
    assert "Traceback" in result.stderr


def test_bad_token_json_error_object(tmp_path, tree_emulator):
    env = isolated_env(tmp_path, SYNCLIENT_ENDPOINT=tree_emulator.endpoint)
    result = run_cli("ls", _project(tree_emulator), "--json", "--token", "bad", env=env)
    assert result.returncode == 2
    assert result.json()["error"]["type"] == "AuthenticationError"
    assert result.json()["exit_code"] == 2


@pytest.mark.parametrize("command", ["get", "ls"])
def test_no_token_tells_the_user_to_log_in(tmp_path, tree_emulator, command):
    """Synapse answers a request without a token as its anonymous user (403 on private data, not 401): the one line
    still says to log in."""
    env = isolated_env(tmp_path, SYNCLIENT_ENDPOINT=tree_emulator.endpoint)
    args = (
        ["get", "-r", _project(tree_emulator), "--path", str(tmp_path / "o")]
        if command == "get"
        else ["ls", _project(tree_emulator)]
    )
    result = run_cli(*args, env=env)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "access denied" in lines[0] and "anonymous" in lines[0] and "synclient login" in lines[0]


def test_unknown_id_clear_message(env, tmp_path):
    result = run_cli("get", "-r", "syn987654321", "--path", str(tmp_path), env=env)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "not found" in result.stderr and "syn987654321" in result.stderr


def test_whoami(env, tree_emulator):
    result = run_cli("whoami", env=env)
    assert result.returncode == 0
    assert "emulator-user" in result.stdout
    assert "SYNCLIENT_AUTH_TOKEN" in result.stderr  # where the token came from
    document = run_cli("whoami", "--json", env=env).json()
    assert document["user_name"] == "emulator-user" and document["token_source"] == "synclient_env"
    assert tree_emulator.token not in json.dumps(document)


def test_whoami_without_token(anonymous_env):
    result = run_cli("whoami", env=anonymous_env)
    assert result.returncode == 2
    assert "not logged in" in result.stderr and "synclient login" in result.stderr


def test_token_from_config_file_profile(tmp_path, tree_emulator):
    env = isolated_env(tmp_path, SYNCLIENT_ENDPOINT=tree_emulator.endpoint)
    Path(env["SYNAPSE_CONFIG_FILE"]).write_text(
        f"[authentication]\nauthtoken = wrong\n\n[profile lab]\nauthtoken = {tree_emulator.token}\n"
    )
    assert run_cli("whoami", env=env).returncode == 2  # the default section's token is rejected
    result = run_cli("whoami", "--profile", "lab", env=env)
    assert result.returncode == 0, result.stderr
    assert "[profile lab]" in result.stderr
    unknown = run_cli("--profile", "nope", "whoami", env=env)
    assert unknown.returncode == 2 and "unknown profile 'nope'" in unknown.stderr


def test_endpoint_from_config_file(tmp_path, tree_emulator):
    env = isolated_env(tmp_path, SYNCLIENT_AUTH_TOKEN=tree_emulator.token)
    root = tree_emulator.endpoint
    Path(env["SYNAPSE_CONFIG_FILE"]).write_text(
        f"[endpoints]\nrepoEndpoint = {root}/repo/v1\nfileHandleEndpoint = {root}/file/v1\n"
        f"authEndpoint = {root}/auth/v1\n"
    )
    assert run_cli("whoami", env=env).returncode == 0


# -- ls ------------------------------------------------------------------------------------------------------------


def test_ls_recursive_long_tree_with_sizes(env, tree_emulator):
    result = run_cli("ls", "-r", "-l", _project(tree_emulator), env=env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    names = [line[32:] for line in lines]  # after the id, version and size columns
    assert [n.strip() for n in names] == ["cli-project/", "data/", "a.csv", "raw/", "b.bin", "readme.txt"]
    assert "3.0 MiB" in lines[4]  # b.bin
    assert "3.0 MiB" in lines[3]  # raw/ total
    assert lines[2].split()[2:4] == ["8", "B"]  # a.csv is 8 bytes
    indents = [len(n) - len(n.lstrip()) for n in names]
    assert indents == [0, 2, 4, 4, 6, 2]


def test_ls_json_and_flat(env, tree_emulator):
    flat = run_cli("ls", _project(tree_emulator), env=env)
    assert flat.returncode == 0
    assert "raw" not in flat.stdout and "data/" in flat.stdout
    document = run_cli("--json", "ls", "-r", _project(tree_emulator), env=env).json()
    assert {e["path"] for e in document["entries"]} >= {"data/raw/b.bin", "readme.txt"}


# -- login / logout with a test keyring backend ---------------------------------------------------------------------


def _keyring_env(tmp_path, tree_emulator):
    return isolated_env(
        tmp_path,
        SYNCLIENT_ENDPOINT=tree_emulator.endpoint,
        PYTHON_KEYRING_BACKEND="fake_keyring.FileKeyring",
        SYNCLIENT_TEST_KEYRING_FILE=str(tmp_path / "keyring.json"),
    )


def test_login_whoami_logout_with_keyring(tmp_path, tree_emulator):
    env = _keyring_env(tmp_path, tree_emulator)
    token = tree_emulator.token
    login = run_cli("login", env=env, input=token + "\n")
    assert login.returncode == 0, login.stderr
    assert "emulator-user" in login.stdout
    assert token not in login.stdout + login.stderr
    stored = json.loads((tmp_path / "keyring.json").read_text())
    assert stored == {"synclient/default": token}

    whoami = run_cli("whoami", "--json", env=env)
    assert whoami.returncode == 0 and whoami.json()["token_source"] == "keyring"
    assert token not in whoami.stdout + whoami.stderr

    logout = run_cli("logout", env=env)
    assert logout.returncode == 0 and "removed" in logout.stdout
    assert json.loads((tmp_path / "keyring.json").read_text()) == {}
    assert run_cli("whoami", env=env).returncode == 2
    assert "no token stored" in run_cli("logout", env=env).stdout


def test_login_with_profile(tmp_path, tree_emulator):
    env = _keyring_env(tmp_path, tree_emulator)
    assert run_cli("login", "--profile", "lab", env=env, input=tree_emulator.token + "\n").returncode == 0
    assert "synclient/lab" in json.loads((tmp_path / "keyring.json").read_text())
    assert run_cli("whoami", "--profile", "lab", env=env).returncode == 0


def test_login_rejects_bad_token_and_stores_nothing(tmp_path, tree_emulator):
    env = _keyring_env(tmp_path, tree_emulator)
    result = run_cli("login", env=env, input="not-a-token\n")
    assert result.returncode == 2
    assert "rejected" in result.stderr and "not-a-token" not in result.stderr + result.stdout
    assert not (tmp_path / "keyring.json").exists()


def test_login_without_keyring_backend_explains_alternatives(tmp_path, tree_emulator):
    env = isolated_env(tmp_path, SYNCLIENT_ENDPOINT=tree_emulator.endpoint)  # null backend
    result = run_cli("login", env=env, input=tree_emulator.token + "\n")
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert "no keyring backend" in result.stderr
    assert "SYNCLIENT_AUTH_TOKEN" in result.stderr and ".synapseConfig" in result.stderr


def test_login_empty_input(tmp_path, tree_emulator):
    result = run_cli("login", env=_keyring_env(tmp_path, tree_emulator), input="\n")
    assert result.returncode == 2 and "no token given" in result.stderr


# -- demo ----------------------------------------------------------------------------------------------------------


def test_demo_small_second_sync_downloads_nothing(tmp_path):
    env = isolated_env(tmp_path)
    result = run_cli("demo", "--small", "--path", str(tmp_path / "demo"), "--json", env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    document = result.json()
    assert document["first"]["downloaded"] == 32 and document["first"]["failed"] == 0
    assert document["second"]["downloaded"] == 0 and document["second"]["skipped"] == 32
    assert (tmp_path / "demo" / "raw" / "scan-a.bin").stat().st_size == 2 * 1024 * 1024
    assert not (tmp_path / "home" / ".synapseConfig").exists()


def test_demo_text_output(tmp_path):
    result = run_cli(
        "demo", "--small", "--no-progress", "--path", "d", env=isolated_env(tmp_path), cwd=tmp_path, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "first sync:" in result.stdout and "second sync:" in result.stdout
    assert "downloaded nothing" in result.stdout
    assert "emulator" in result.stderr
    assert (tmp_path / "d" / "raw").is_dir()
