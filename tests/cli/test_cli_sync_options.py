"""CLI flags that map to the incremental-sync options of ``sync_from_platform`` (issue 4)."""

from __future__ import annotations

import pytest
from cli_support import run_cli


def _project(emulator):
    return emulator.ids["cli-project"]


def test_flags_become_one_sync_options_and_choices_come_from_the_enums():
    """The CLI builds the engine's own options object (the engine ships with it: no signature checks), and its
    choices are the enums' values, so a new mode appears in the CLI without a second list to update."""
    from synclient import cli
    from synclient.sync.options import OnError, SyncOptions
    from synclient.sync.plan.planner import Collision
    from synclient.sync.records.manifest import ManifestMode

    assert cli.COLLISION_MODES == tuple(m.value for m in Collision)
    assert cli.MANIFEST_MODES == tuple(m.value for m in ManifestMode)
    args = cli.build_parser().parse_args(
        [
            "get",
            "-r",
            "syn1",
            "--dry-run",
            "--include",
            "*.csv",
            "--include",
            "*.tsv",
            "--if-collision",
            "keep.both",
            "--manifest",
            "root",
        ]
    )
    options = cli._sync_options(args)
    assert options == SyncOptions(
        dry_run=True,
        include=("*.csv", "*.tsv"),
        if_collision=Collision.KEEP_BOTH,
        manifest=ManifestMode.ROOT,
        on_error=OnError.CONTINUE,
        progress=False,
    )
    assert cli._sync_options(cli.build_parser().parse_args(["get", "syn1"])) == SyncOptions(
        on_error=OnError.CONTINUE, progress=False
    )
    # the CLI draws a real run's bar itself; a dry run's progress line is the library's (where stderr is a terminal)
    assert cli._sync_options(args, plan_progress=True).progress is True
    assert cli._sync_options(cli.build_parser().parse_args(["get", "syn1"]), plan_progress=True).progress is False
    cache_flags = cli.build_parser().parse_args(["get", "syn1", "--no-synapse-cache", "--synapse-cache-link"])
    assert cli._sync_options(cache_flags) == SyncOptions(
        on_error=OnError.CONTINUE, progress=False, synapse_cache=False, synapse_cache_link=True
    )


def test_manifest_format_flag():
    """--manifest-format tsv|csv|both: one format, or both (the default, as synapseclient 4.14 writes)."""
    from synclient import cli
    from synclient.sync.records.manifest import ManifestFormat

    assert cli.MANIFEST_FORMATS == tuple(f.value for f in ManifestFormat) + ("both",)

    def formats(*flags):
        return cli._sync_options(cli.build_parser().parse_args(["get", "syn1", *flags])).manifest_formats

    assert formats("--manifest-format", "csv") == {ManifestFormat.CSV}
    assert formats("--manifest-format", "tsv") == {ManifestFormat.TSV}
    assert formats("--manifest-format", "both") == formats() == {ManifestFormat.TSV, ManifestFormat.CSV}


def test_manifest_format_csv_writes_only_manifest_csv(env, tree_emulator, tmp_path):
    result = run_cli("get", "-r", _project(tree_emulator), "--path", str(tmp_path), "--manifest-format", "csv", env=env)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "manifest.csv").read_text().startswith("path,parentId,name,ID,")
    assert not list(tmp_path.rglob("SYNAPSE_METADATA_MANIFEST.tsv"))


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
    result = run_cli(
        "--json",
        "get",
        "-r",
        _project(tree_emulator),
        "--path",
        str(tmp_path),
        "--include",
        "data/*",
        "--include",
        "data/**",
        "--exclude",
        "*.bin",
        env=env,
    )
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
    result = run_cli(
        "get",
        "-r",
        _project(tree_emulator),
        "--path",
        str(tmp_path),
        "--manifest",
        "root",
        "--delete",
        "--follow-links",
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "SYNAPSE_METADATA_MANIFEST.tsv").exists()
    assert not (tmp_path / "data" / "SYNAPSE_METADATA_MANIFEST.tsv").exists()
    provenance = run_cli(
        "--json", "get", "-r", _project(tree_emulator), "--path", str(tmp_path), "--provenance", env=env
    )
    assert provenance.returncode == 0, provenance.stderr


def test_versioned_file_id(env, tree_emulator, tmp_path):
    file_id = tree_emulator.resolve(_project(tree_emulator), "readme.txt")
    result = run_cli("get", f"{file_id}.1", "--path", str(tmp_path), env=env)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "readme.txt").read_text() == "hello from the emulator\n"


@pytest.mark.parametrize("what", ["project", "file"])
def test_get_asks_for_its_roots_header_once_and_reports_that_call(env, tree_emulator, tmp_path, what):
    """The CLI checks the root against its flags and hands the resolved source to the run: one header call per
    get, which the run's report counts as its own (every call of the run is in it)."""
    import json

    project = _project(tree_emulator)
    root = project if what == "project" else tree_emulator.resolve(project, "readme.txt")
    tree_emulator.reset_stats()
    result = run_cli("--json", "get", "-r", root, "--path", str(tmp_path), env=env)
    assert result.returncode == 0, result.stderr
    stats = tree_emulator.stats()
    assert stats["api_by_route"]["GET /repo/v1/entity/{id}/type"] == 1, stats["api_by_route"]
    assert json.loads(result.stdout)["report"]["rest_calls"] == stats["api_requests"]
