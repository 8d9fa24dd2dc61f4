"""``get --checksum`` (issue 33, part 2): a re-sync that hashes synclient's own copies instead of trusting their size
and mtime, downloads again the one whose bytes differ (action ``repair``) and leaves the others alone, end to end
against the emulator."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict

import pytest
from cli_support import SMALL_TREE_FILES, run_cli, small_tree_fixtures, small_tree_spec

import synclient
from synclient import Platform

SPEC = small_tree_spec()
FILES = SMALL_TREE_FILES


emu, env, synced = small_tree_fixtures(SPEC)


def _corrupt(path: Path) -> bytes:
    """Flip the file's first byte, keeping its size and mtime (what the index's fast path trusts); the old bytes."""
    before = path.read_bytes()
    info = path.stat()
    path.write_bytes(bytes([before[0] ^ 0xFF]) + before[1:])
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    return before


def _mtimes(root: Path) -> Dict[str, int]:
    return {name: (root / name).stat().st_mtime_ns for name in FILES}


def _actions(document: dict, root: Path) -> Dict[str, str]:
    return {Path(f["path"]).relative_to(root).as_posix(): f["action"] for f in document["files"]}


def test_plain_resync_trusts_the_stat_checksum_repairs_the_one_that_differs(synced, emu, env):
    original = _corrupt(synced / "d/b.txt")
    plain = run_cli("--json", "get", "-r", emu.project, "--path", str(synced), env=env)
    assert plain.returncode == 0, plain.stderr
    assert plain.json()["report"]["skipped"] == 3  # size and mtime unchanged: why --checksum exists
    assert (synced / "d/b.txt").read_bytes() != original

    untouched = {name: t for name, t in _mtimes(synced).items() if name != "d/b.txt"}
    emu.reset_stats()
    fixed = run_cli("--json", "get", "-r", emu.project, "--path", str(synced), "--checksum", env=env)
    assert fixed.returncode == 0, fixed.stderr
    document = fixed.json()
    assert (synced / "d/b.txt").read_bytes() == original
    assert _actions(document, synced) == {"a.txt": "skip", "d/b.txt": "repair", "d/c.bin": "skip"}
    assert document["report"]["repaired"] == 1 and document["report"]["downloaded"] == 1
    assert emu.stats()["data_bytes"] == len(original)  # nothing fetched for the others
    assert {name: t for name, t in _mtimes(synced).items() if name != "d/b.txt"} == untouched

    summary = run_cli("get", "-r", emu.project, "--path", str(synced), "--checksum", env=env)
    assert summary.returncode == 0 and "0 downloaded, 3 skipped" in summary.stdout  # repaired for good


def test_summary_line_counts_repairs(synced, emu, env):
    _corrupt(synced / "a.txt")
    result = run_cli("get", "-r", emu.project, "--path", str(synced), "--checksum", env=env)
    assert result.returncode == 0, result.stderr
    assert "1 downloaded (1 repaired: local bytes differed), 2 skipped" in result.stdout
    assert f"repaired: {synced / 'a.txt'}: local MD5 differed" in result.stderr  # which and why


def test_dry_run_with_checksum_lists_the_repair_and_writes_nothing(synced, emu, env):
    _corrupt(synced / "d/c.bin")
    corrupted = (synced / "d/c.bin").read_bytes()
    result = run_cli("--json", "get", "-r", emu.project, "--path", str(synced), "--checksum", "--dry-run", env=env)
    assert result.returncode == 0, result.stderr
    plan = result.json()["plan"]
    entries = {e["path"]: e["action"] for e in plan["entries"]}
    assert entries == {"a.txt": "skip", "d/b.txt": "skip", "d/c.bin": "repair"}
    assert plan["to_download"] == 1 and plan["to_repair"] == 1
    assert plan["bytes_hashed"] == 6 + 6 + 300 * 1024  # every copy of ours read whole: its cost said
    text = run_cli("get", "-r", emu.project, "--path", str(synced), "--checksum", "--dry-run", env=env)
    assert "1 file to download (300.0 KiB), 1 to repair (local bytes differ)" in text.stdout
    assert "+ hashing 300.0 KiB of local copies (checksum)" in text.stdout
    assert (synced / "d/c.bin").read_bytes() == corrupted


@pytest.mark.parametrize(
    ("mode", "kept"),
    [("keep.local", True), ("overwrite.local", False)],
)
def test_a_file_synclient_does_not_own_follows_if_collision(synced, emu, env, mode, kept):
    """A user's file where synclient's was (never indexed: another inode, another mtime) is hashed anyway and follows
    --if-collision, --checksum or not."""
    path = synced / "a.txt"
    path.unlink()
    path.write_bytes(b"user!\n")  # the same size as "alpha\n", not synclient's
    result = run_cli(
        "--json", "get", "-r", emu.project, "--path", str(synced), "--checksum", "--if-collision", mode, env=env
    )
    assert result.returncode == 0, result.stderr
    actions = _actions(result.json(), synced)
    assert actions["a.txt"] == ("keep-local" if kept else "overwrite")
    assert path.read_bytes() == (b"user!\n" if kept else b"alpha\n")


def test_python_api_checksum_keyword(synced, emu):
    original = _corrupt(synced / "d/b.txt")
    with Platform(endpoint=emu.endpoint, token=emu.token) as platform:
        results = synclient.sync_from_platform(
            emu.project, synced, platform=platform, checksum=True, progress=False, synapse_cache=False
        )
    assert results.report.repaired == 1
    assert {r.action for r in results if r.path.name == "b.txt"} == {"repair"}
    assert (synced / "d/b.txt").read_bytes() == original


def test_a_keep_both_copy_of_ours_is_repaired_where_it_is(synced, emu, env):
    user = synced / "a.txt"
    user.unlink()
    user.write_bytes(b"the user's own\n")
    first = run_cli("-q", "get", "-r", emu.project, "--path", str(synced), "--if-collision", "keep.both", env=env)
    assert first.returncode == 0, first.stderr
    copy = synced / "a(1).txt"
    original = _corrupt(copy)
    assert original == b"alpha\n"
    args = ("--json", "get", "-r", emu.project, "--path", str(synced), "--if-collision", "keep.both", "--checksum")
    result = run_cli(*args, env=env)
    assert result.returncode == 0, result.stderr
    actions = {Path(f["path"]).name: f["action"] for f in result.json()["files"]}
    assert actions == {"a(1).txt": "repair", "b.txt": "skip", "c.bin": "skip"}
    assert copy.read_bytes() == original and user.read_bytes() == b"the user's own\n"
