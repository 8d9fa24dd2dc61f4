"""``get``/``check`` with ``--min-size``/``--max-size``/``--min-age``/``--max-age`` and ``get --order-by`` (issue 35):
bad values are one line and exit code 2; the dry run and ``--json`` carry the filters; ``check`` leaves out what
they leave out."""

from __future__ import annotations

import pytest
from cli_support import run_cli, small_tree_fixtures, small_tree_spec

SPEC = small_tree_spec()  # a.txt, d/b.txt (6 B each), d/c.bin (300 KiB)

emu, env, synced = small_tree_fixtures(SPEC)


@pytest.mark.parametrize(
    "flag, value, says",
    [
        ("--min-size", "big", "min_size: not a size: 'big'"),
        ("--max-size", "-1k", "max_size: not a size: '-1k'"),
        ("--max-age", "yesterday", "max_age: not an age: 'yesterday'"),
        ("--min-age", "7x", "min_age: not an age: '7x'"),
        ("--order-by", "colour", "order_by: not an order: 'colour'"),
        ("--order-by", "size,mixed", "order_by: not an order: 'size,mixed'"),
    ],
)
def test_a_bad_value_is_one_line_and_exit_code_2(emu, env, tmp_path, flag, value, says):
    run = run_cli("get", "-r", emu.project, "--path", str(tmp_path / "t"), f"{flag}={value}", env=env)
    assert run.returncode == 2
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and says in lines[0], run.stderr
    assert not (tmp_path / "t" / "a.txt").exists()


def test_the_dry_run_lists_with_the_filters_and_json_carries_them(emu, env, tmp_path):
    run = run_cli(
        "--json",
        "get",
        "-r",
        emu.project,
        "--path",
        str(tmp_path / "t"),
        "--dry-run",
        "--max-size",
        "100k",
        "--order-by",
        "size,desc",
        env=env,
    )
    assert run.returncode == 0, run.stderr
    plan = run.json()["plan"]
    assert sorted(e["path"] for e in plan["entries"]) == ["a.txt", "d/b.txt"]
    assert plan["filtered"] == 1 and plan["filters"] == {"max_size": 100 * 1024, "order_by": "size,descending"}
    human = run_cli("get", "-r", emu.project, "--path", str(tmp_path / "t"), "--dry-run", "--min-size", "1k", env=env)
    assert human.returncode == 0 and "2 files left out by the filters" in human.stdout + human.stderr


def test_get_then_check_with_the_same_filters(emu, env, tmp_path):
    target = tmp_path / "t"
    run = run_cli("--json", "get", "-r", emu.project, "--path", str(target), "--min-size", "1k", env=env)
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in target.rglob("*") if p.is_file() and p.suffix in (".txt", ".bin")) == ["c.bin"]
    report = run.json()["report"]
    assert report["filtered"] == 2 and report["filters"] == {"min_size": 1024}
    # check with the same filters: the left-out files are not missing; without them they are
    same = run_cli("--json", "check", "-r", emu.project, "--path", str(target), "--min-size", "1k", env=env)
    assert same.returncode == 0, same.stdout + same.stderr
    assert [f["status"] for f in same.json()["files"] if f["status"] != "extra"] == ["same"]
    plain = run_cli("check", "-r", emu.project, "--path", str(target), env=env)
    assert plain.returncode == 1
