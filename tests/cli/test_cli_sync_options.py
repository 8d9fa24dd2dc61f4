"""CLI flags that map to the incremental-sync keywords of ``sync_from_platform`` (issue 4).

Until the sync engine has a keyword, the CLI refuses the flag with a clear one-line message (exit 2); these tests
describe the behaviour once the keywords exist.
"""
from __future__ import annotations

import inspect

import pytest

from cli_support import run_cli
from synclient.sync.runner import sync_from_platform

ENGINE_KEYWORDS = set(inspect.signature(sync_from_platform).parameters)
needs_issue_4 = pytest.mark.xfail(strict=False, reason="needs issue 4")


def _project(emulator):
    return emulator.ids["cli-project"]


@pytest.mark.skipif("dry_run" in ENGINE_KEYWORDS, reason="the engine supports the keyword")
def test_flag_the_engine_lacks_is_a_clear_usage_error(env, tree_emulator, tmp_path):
    result = run_cli("get", "-r", _project(tree_emulator), "--dry-run", "--path", str(tmp_path), env=env)
    assert result.returncode == 2
    assert "--dry-run not supported" in result.stderr


@needs_issue_4
def test_dry_run_json_plan_writes_nothing(env, tree_emulator, tmp_path):
    out = tmp_path / "out"
    result = run_cli("--json", "get", "-r", _project(tree_emulator), "--dry-run", "--path", str(out), env=env)
    assert result.returncode == 0, result.stderr
    document = result.json()
    assert document["dry_run"] is True and isinstance(document["plan"], dict)
    assert not (out / "readme.txt").exists()
    text = run_cli("get", "-r", _project(tree_emulator), "--dry-run", "--path", str(out), env=env)
    assert text.returncode == 0 and text.stdout.strip()


@needs_issue_4
def test_include_exclude(env, tree_emulator, tmp_path):
    result = run_cli("--json", "get", "-r", _project(tree_emulator), "--path", str(tmp_path), "--include", "data/*",
                     "--include", "data/**", "--exclude", "*.bin", env=env)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "data" / "a.csv").exists()
    assert not (tmp_path / "readme.txt").exists() and not (tmp_path / "data" / "raw" / "b.bin").exists()


@needs_issue_4
@pytest.mark.parametrize("mode, expected", [("keep.local", "edited"), ("overwrite.local", "x,y\n1,2\n")])
def test_if_collision(env, tree_emulator, tmp_path, mode, expected):
    project = _project(tree_emulator)
    assert run_cli("get", "-r", project, "--path", str(tmp_path), env=env).returncode == 0
    (tmp_path / "data" / "a.csv").write_text("edited")
    result = run_cli("get", "-r", project, "--path", str(tmp_path), "--if-collision", mode, env=env)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "data" / "a.csv").read_text() == expected


@needs_issue_4
def test_manifest_delete_follow_links_accepted(env, tree_emulator, tmp_path):
    result = run_cli("get", "-r", _project(tree_emulator), "--path", str(tmp_path), "--manifest", "root",
                     "--delete", "--follow-links", env=env)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "SYNAPSE_METADATA_MANIFEST.tsv").exists()
    assert not (tmp_path / "data" / "SYNAPSE_METADATA_MANIFEST.tsv").exists()


def test_versioned_file_id(env, tree_emulator, tmp_path):
    file_id = tree_emulator.resolve(_project(tree_emulator), "readme.txt")
    result = run_cli("get", f"{file_id}.1", "--path", str(tmp_path), env=env)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "readme.txt").read_text() == "hello from the emulator\n"
