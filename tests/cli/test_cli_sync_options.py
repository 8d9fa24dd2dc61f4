"""CLI flags that map to the incremental-sync keywords of ``sync_from_platform`` (issue 4).

If the installed sync engine lacks a keyword, the CLI refuses that flag with a clear one-line message (exit 2).
"""
from __future__ import annotations

import pytest

from cli_support import run_cli


def _project(emulator):
    return emulator.ids["cli-project"]


def test_flag_the_engine_lacks_is_a_clear_usage_error(monkeypatch):
    """An older engine without a keyword: the CLI refuses the flag instead of silently ignoring it."""
    from synclient import cli
    from synclient.sync import runner

    def old_engine(entity, path=".", *, platform=None, max_workers=None, config=None, on_error="raise",
                   observer=None):
        raise AssertionError("must not be called")

    monkeypatch.setattr(runner, "sync_from_platform", old_engine)
    args = cli.build_parser().parse_args(["get", "-r", "syn1", "--dry-run", "--include", "*.csv"])
    with pytest.raises(cli.CliError, match="--include, --dry-run not supported"):
        cli._sync_options(args)
    assert cli._sync_options(cli.build_parser().parse_args(["get", "syn1"])) == {}


def test_dry_run_json_plan_writes_nothing(env, tree_emulator, tmp_path):
    out = tmp_path / "out"
    result = run_cli("--json", "get", "-r", _project(tree_emulator), "--dry-run", "--path", str(out), env=env)
    assert result.returncode == 0, result.stderr
    document = result.json()
    assert document["dry_run"] is True and isinstance(document["plan"], dict)
    assert not (out / "readme.txt").exists()
    text = run_cli("get", "-r", _project(tree_emulator), "--dry-run", "--path", str(out), env=env)
    assert text.returncode == 0 and text.stdout.strip()


def test_include_exclude(env, tree_emulator, tmp_path):
    result = run_cli("--json", "get", "-r", _project(tree_emulator), "--path", str(tmp_path), "--include", "data/*",
                     "--include", "data/**", "--exclude", "*.bin", env=env)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "data" / "a.csv").exists()
    assert not (tmp_path / "readme.txt").exists() and not (tmp_path / "data" / "raw" / "b.bin").exists()


@pytest.mark.parametrize("mode, expected", [("keep.local", "edited"), ("overwrite.local", "x,y\n1,2\n")])
def test_if_collision(env, tree_emulator, tmp_path, mode, expected):
    project = _project(tree_emulator)
    assert run_cli("get", "-r", project, "--path", str(tmp_path), env=env).returncode == 0
    (tmp_path / "data" / "a.csv").write_text("edited")
    result = run_cli("get", "-r", project, "--path", str(tmp_path), "--if-collision", mode, env=env)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "data" / "a.csv").read_text() == expected


def test_manifest_delete_follow_links_accepted(env, tree_emulator, tmp_path):
    result = run_cli("get", "-r", _project(tree_emulator), "--path", str(tmp_path), "--manifest", "root",
                     "--delete", "--follow-links", env=env)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "SYNAPSE_METADATA_MANIFEST.tsv").exists()
    assert not (tmp_path / "data" / "SYNAPSE_METADATA_MANIFEST.tsv").exists()
    provenance = run_cli("--json", "get", "-r", _project(tree_emulator), "--path", str(tmp_path), "--provenance",
                         env=env)
    assert provenance.returncode == 0, provenance.stderr


def test_versioned_file_id(env, tree_emulator, tmp_path):
    file_id = tree_emulator.resolve(_project(tree_emulator), "readme.txt")
    result = run_cli("get", f"{file_id}.1", "--path", str(tmp_path), env=env)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "readme.txt").read_text() == "hello from the emulator\n"
