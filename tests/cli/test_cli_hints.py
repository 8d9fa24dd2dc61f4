"""What a newcomer types and what the CLI answers (issue 32, part 4): synapseclient's spellings of ``synapse get``
options, the demo's own options, counts said in the right number."""

from __future__ import annotations

import pytest
from cli_support import isolated_env, run_cli

from synclient.cli import CONNECTION_OPTIONS, SYNAPSECLIENT_OPTIONS, build_parser
from synclient.results import SyncReport, WorkerCounts, counted


def _one_error_line(result) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and lines[0].startswith("synclient: error: "), result.stderr
    assert "usage:" not in result.stderr and "Traceback" not in result.stderr
    return lines[0]


# -- synapseclient's `synapse get` options (4.10) -------------------------------------------------------------------


@pytest.mark.parametrize(
    "args,says",
    [
        (
            ["get", "syn1", "--downloadLocation", "data"],
            "--downloadLocation is synapseclient's ('synapse get'); here the directory is --path DIR",
        ),
        (["get", "--downloadLocation=data", "syn1"], "use --path"),
        (
            ["get", "-r", "syn1", "--followLink"],
            "--followLink is synapseclient's ('synapse get'); here it is --follow-links",
        ),
        (["get", "syn1", "--limitSearch", "syn2"], "takes ids (syn123), never a local path"),
        (["get", "syn1", "--multiThreaded"], "always downloads in parallel"),
        (
            ["get", "-v", "3", "syn1"],
            "'3' is not an id: -v means verbose here; synapseclient's 'synapse get -v N' is --version N (or syn123.N)",
        ),
        (
            ["get", "syn1", "-v", "3"],
            "'3' is not an id: -v means verbose here; synapseclient's 'synapse get -v N' is --version N (or syn123.N)",
        ),
    ],
    ids=["downloadLocation", "downloadLocation=", "followLink", "limitSearch", "multiThreaded", "-v N", "id -v N"],
)
def test_synapseclient_spellings_get_one_line_that_says_what_to_type(tmp_path, args, says):
    env = isolated_env(tmp_path, SYNCLIENT_ENDPOINT="http://127.0.0.1:9")  # never reached
    result = run_cli(*args, env=env)
    if "-v" in args:  # -v shows tracebacks: the line is the last one
        assert result.returncode == 2 and result.stderr.strip().splitlines()[-1].endswith(says), result.stderr
        return
    line = _one_error_line(result)
    if says == "use --path":
        assert "--path DIR" in line
    else:
        assert says in line, line


def test_every_synapseclient_option_with_a_hint_is_unknown_to_synclient():
    # a hint must never shadow a real option (argparse would then accept it, and the hint would be dead code)
    known = {option for action in build_parser()._actions for option in action.option_strings}
    for parser in [a for a in build_parser()._actions if a.dest == "command"][0].choices.values():
        known |= {option for action in parser._actions for option in action.option_strings}
    assert not known & set(SYNAPSECLIENT_OPTIONS)


def test_an_unknown_option_keeps_argparse_s_answer(tmp_path):
    result = run_cli("get", "syn1", "--bogus", env=isolated_env(tmp_path))
    assert result.returncode == 2
    assert "usage: synclient" in result.stderr and "unrecognized arguments: --bogus" in result.stderr


def test_json_mode_carries_the_hint(tmp_path):
    result = run_cli("--json", "get", "syn1", "--downloadLocation", "d", env=isolated_env(tmp_path))
    document = result.json()
    assert document["exit_code"] == 2 and "--path DIR" in document["error"]["message"]


# -- the demo takes only what it uses (4.9) -------------------------------------------------------------------------


def _demo_parser():
    return [a for a in build_parser()._actions if a.dest == "command"][0].choices["demo"]


def test_demo_help_lists_no_connection_option(tmp_path):
    options = {option for action in _demo_parser()._actions for option in action.option_strings}
    assert options == {
        "-h",
        "--help",
        "-q",
        "--quiet",
        "-v",
        "--verbose",
        "--json",
        "--path",
        "--small",
        "--max-workers",
        "--no-progress",
    }
    helped = run_cli("demo", "--help", env=isolated_env(tmp_path))
    usage = helped.stdout.split("\n\n")[0]
    assert helped.returncode == 0 and not any(option in usage for option in CONNECTION_OPTIONS), usage
    assert "global options:" in helped.stdout and "--endpoint URL" not in helped.stdout


@pytest.mark.parametrize("option", CONNECTION_OPTIONS)
def test_demo_refuses_a_connection_option_in_one_line(tmp_path, option):
    line = _one_error_line(run_cli("demo", option, "x", env=isolated_env(tmp_path)))
    assert f"demo runs its own emulator (its own endpoint and token), so {option} does not apply to it" in line


def test_the_other_commands_keep_the_connection_options():
    commands = [a for a in build_parser()._actions if a.dest == "command"][0].choices
    for name, parser in commands.items():
        if name != "demo":
            options = {option for action in parser._actions for option in action.option_strings}
            assert set(CONNECTION_OPTIONS) <= options, name


# -- counts in the right number (4.10) ------------------------------------------------------------------------------


def test_counted():
    assert [counted(n, "retry", "retries") for n in (0, 1, 2)] == ["0 retries", "1 retry", "2 retries"]
    assert [counted(n, "file") for n in (0, 1, 2)] == ["0 files", "1 file", "2 files"]


def test_the_summary_says_1_retry_and_1_rest_call():
    one = SyncReport(rest_calls=1, retries=1, manifest_errors=["d: no"], workers=[WorkerCounts("w")]).summary()
    assert "1 REST call, 1 retry," in one and "1 manifest not written" in one and "on 1 Dask worker" in one
    two = SyncReport(rest_calls=2, retries=2, manifest_errors=["a", "b"]).summary()
    assert "2 REST calls, 2 retries," in two and "2 manifests not written" in two
