"""``synclient get --query SQL`` and ``get -r ID --view V`` (issue 17)."""

from __future__ import annotations

import pytest
from cli_support import isolated_env, run_cli

from synclient.emulator import Emulator

SPEC = {
    "projects": [
        {
            "name": "q",
            "children": [
                {
                    "type": "folder",
                    "name": "x",
                    "children": [
                        {
                            "type": "file",
                            "name": f"{name}.txt",
                            "content": f"{name}\n",
                            "annotations": {"assay": [assay]},
                        }
                        for name, assay in (("a", "rnaSeq"), ("b", "wgs"), ("c", "rnaSeq"))
                    ],
                },
                {"type": "entityview", "name": "v", "scope": ["x"], "columns": ["assay"]},
            ],
        }
    ]
}


@pytest.fixture(scope="module")
def query_emulator():
    with Emulator() as emu:
        project = emu.seed_spec(SPEC)["q"]
        emu.project = project
        emu.view = emu.resolve(project, "v")
        yield emu


@pytest.fixture
def env(tmp_path, query_emulator):
    return isolated_env(tmp_path, SYNCLIENT_ENDPOINT=query_emulator.endpoint, SYNCLIENT_AUTH_TOKEN=query_emulator.token)


def test_get_query_downloads_the_selection_and_reports_the_query(env, query_emulator, tmp_path):
    sql = f"SELECT id, currentVersion FROM {query_emulator.view} WHERE assay = 'rnaSeq'"
    target = tmp_path / "selected"
    result = run_cli("--json", "get", "--query", sql, "--path", str(target), env=env)
    assert result.returncode == 0, result.stderr
    document = result.json()
    assert sorted(p.name for p in target.iterdir() if not p.name.startswith(".")) == ["a.txt", "c.txt"]
    assert (target / "a.txt").read_text() == "a\n"
    assert document["query"] == sql and document["report"]["downloaded"] == 2
    assert document["report"]["query"] == {
        "sql": sql,
        "table": query_emulator.view,
        "rows": 2,
        "entities": 2,
        "rows_without_id": 0,
    }
    plain = run_cli("get", "--query", sql, "--path", str(target), env=env)
    assert "0 downloaded, 2 skipped" in plain.stdout
    assert f"query: 2 rows of {query_emulator.view} named 2 entities" in plain.stderr


@pytest.mark.parametrize(
    "args,message",
    [
        (["SELECT id FROM syn1"], "is a query, not an id: pass it with --query"),
        (["--query", "SELECT id FROM files"], "SELECT id FROM syn123"),
        (["--query", "SELECT id FROM syn1", "syn2"], "give no ids"),
        (["--query", "SELECT id FROM syn1", "--view", "syn3"], "--view is for ids"),
        (["--query", "SELECT id FROM syn1", "--delete"], "never deleted"),
    ],
)
def test_queries_given_wrong_are_usage_errors_before_any_call(env, tmp_path, args, message):
    result = run_cli("get", *args, "--path", str(tmp_path), env=env)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_what_the_platform_refuses_is_one_line_and_exit_2(env, query_emulator, tmp_path):
    view = query_emulator.view
    for sql, message in (
        (f"SELECT name FROM {view}", "selects no 'id' column"),
        (f"SELECT id FROM {view} WHERE", "the platform refused the query"),
        (f"SELECT id FROM {view} WHERE nope = 1", "the platform refused the query"),
    ):
        result = run_cli("get", "--query", sql, "--path", str(tmp_path), env=env)
        assert result.returncode == 2 and message in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
    result = run_cli("get", view, "--path", str(tmp_path), env=env)
    assert result.returncode == 2 and "--query" in result.stderr


def test_get_with_a_view_takes_no_bundle_call(env, query_emulator, tmp_path):
    query_emulator.reset_stats()
    result = run_cli(
        "--json", "get", "-r", query_emulator.project, "--view", query_emulator.view, "--path", str(tmp_path), env=env
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "x" / "b.txt").read_text() == "b\n"
    routes = query_emulator.stats()["api_by_route"]
    assert not any("bundle2" in route for route in routes), routes
    versioned = run_cli(
        "get", "-r", query_emulator.project, "--view", f"{query_emulator.view}.1", "--path", str(tmp_path), env=env
    )
    assert versioned.returncode == 2 and "without a version" in versioned.stderr
