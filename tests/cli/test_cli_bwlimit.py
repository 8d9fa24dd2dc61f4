"""``get --bwlimit`` (issue 35): bad syntax is one line and exit code 2; the dry run states the limit and the time
the planned bytes take at it; ``--json`` carries the limit; a limited run downloads as any other."""

from __future__ import annotations

import pytest
from cli_support import SMALL_TREE_FILES, isolated_env, run_cli, small_tree_fixtures, small_tree_spec

SPEC = small_tree_spec()
PLANNED = 6 + 6 + 300 * 1024  # the tree's bytes

emu, env, synced = small_tree_fixtures(SPEC)


@pytest.mark.parametrize("rate", ["10X", "08:00,1M 18:00", "25:00,1M", "10M:1M", "Mox-08:00,1M"])
def test_bad_syntax_is_one_line_and_exit_code_2(tmp_path, rate):
    result = run_cli("get", "-r", "syn1", "--path", str(tmp_path / "t"), "--bwlimit", rate, env=isolated_env(tmp_path))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("synclient: error: --bwlimit "), result.stderr
    assert not (tmp_path / "t").exists()  # said before anything else happened


def test_dry_run_states_the_limit_and_the_time_its_bytes_take(tmp_path, emu, env):
    target = str(tmp_path / "copy")
    text = run_cli("get", "-r", emu.project, "--path", target, "--bwlimit", "100k", "--dry-run", env=env)
    assert text.returncode == 0, text.stderr
    assert "bandwidth limit 100.0 KiB/s: the bytes take 3.0 s" in text.stdout
    result = run_cli("--json", "get", "-r", emu.project, "--path", target, "--bwlimit", "100k", "--dry-run", env=env)
    document = result.json()
    assert document["bwlimit"] == "100k"
    plan = document["plan"]
    assert plan["bwlimit"] == "100k" and plan["bwlimit_seconds"] == round(PLANNED / (100 * 1024), 2)
    assert plan["estimate_seconds"] >= plan["bwlimit_seconds"]
    unlimited = run_cli("--json", "get", "-r", emu.project, "--path", target, "--dry-run", env=env).json()
    assert unlimited["bwlimit"] is None and unlimited["plan"]["bwlimit"] is None
    assert unlimited["plan"]["estimate_seconds"] < plan["bwlimit_seconds"]


def test_a_limited_run_downloads_every_file(tmp_path, emu, env):
    target = tmp_path / "copy"
    result = run_cli(
        "--json", "get", "-r", emu.project, "--path", str(target), "--bwlimit", "08:00,10M 18:00,off", env=env
    )
    assert result.returncode == 0, result.stderr
    document = result.json()
    assert document["bwlimit"] == "08:00,10M 18:00,off" and document["report"]["downloaded"] == len(SMALL_TREE_FILES)
    assert emu.stats()["data_bytes"] == PLANNED
