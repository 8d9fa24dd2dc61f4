"""``synclient check`` (issue 33, part 2): a local copy compared with what ``get`` would put there, end to end
against the emulator, through the command line and ``synclient.check``. It writes nothing."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, Tuple

from cli_support import SMALL_TREE_FILES, run_cli, small_tree_fixtures, small_tree_spec

import synclient
from synclient import CheckStatus, Platform

# a hostile server's name (a "../") beside the ordinary ones
SPEC = small_tree_spec({"type": "file", "name": "../up.txt", "content": "escape\n"}, names="unchecked")
GOOD = SMALL_TREE_FILES


def _synced_layout(target: Path) -> None:
    """The good files and the manifests; the hostile name failed its file alone (the sync exits 1)."""
    files = _snapshot(target)
    assert sorted(p for p, (_, _, folder) in files.items() if not folder and not p.startswith(".synclient/")) == [
        "SYNAPSE_METADATA_MANIFEST.tsv",
        "a.txt",
        "d/SYNAPSE_METADATA_MANIFEST.tsv",
        "d/b.txt",
        "d/c.bin",
        "d/manifest.csv",
        "manifest.csv",
    ]


def _snapshot(root: Path) -> Dict[str, Tuple[int, int, bool]]:
    """Every path under ``root`` (files and folders, ``.synclient/`` included): size, mtime in ns, is a folder."""
    found = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            info = path.lstat()
            found[path.relative_to(root).as_posix()] = (
                0 if path.is_dir() else info.st_size,
                info.st_mtime_ns,
                path.is_dir(),
            )
    return found


emu, env, synced = small_tree_fixtures(SPEC, sync_exit_code=1, after_sync=_synced_layout)


def _lines(stdout: str) -> Dict[str, str]:
    """path -> symbol of each file line (the last line is the summary)."""
    lines = stdout.strip().splitlines()
    assert lines[-1].startswith("check (")
    return {line[2:].split("  (")[0]: line[0] for line in lines[:-1]}


def _check(emu, env, target: Path, *extra: str):
    return run_cli("check", "-r", emu.project, "--path", str(target), *extra, env=env)


def test_a_fresh_copy_is_identical_and_the_check_changes_nothing(emu, env, synced):
    before = _snapshot(synced)
    result = _check(emu, env, synced)
    assert result.returncode == 1  # the hostile name is an error line: the copy cannot hold that file
    lines = _lines(result.stdout)
    assert {path: lines[path] for path in GOOD} == {path: "=" for path in GOOD}
    assert [symbol for path, symbol in lines.items() if path not in GOOD] == ["!"]
    assert "3 same, 0 differ, 0 missing locally, 0 only local, 1 error" in result.stdout
    assert _snapshot(synced) == before  # names, sizes and mtimes of every path, .synclient/ included
    assert not (synced.parent / "up.txt").exists()  # the name gate kept it inside (here: refused it)


def test_changes_are_found_and_nothing_is_touched(emu, env, synced):
    (synced / "a.txt").write_text("ALPHA\n")  # the same size, other bytes
    (synced / "d" / "b.txt").unlink()
    (synced / "d" / "mine.txt").write_text("the user's own\n")
    before = _snapshot(synced)
    lines = _lines(_check(emu, env, synced).stdout)
    assert (lines["a.txt"], lines["d/b.txt"], lines["d/mine.txt"], lines["d/c.bin"]) == ("*", "-", "+", "=")
    sizes = _check(emu, env, synced, "--size-only")
    assert sizes.returncode == 1  # (one file is still missing)
    assert _lines(sizes.stdout)["a.txt"] == "="  # a size alone cannot tell
    assert _snapshot(synced) == before
    assert (synced / "d" / "mine.txt").read_text() == "the user's own\n"


def test_a_new_remote_version_differs(emu, env, synced):
    emu.add_version(emu.resolve(emu.project, "d/b.txt"), "bravo, version two\n")
    lines = _lines(_check(emu, env, synced).stdout)
    assert lines["d/b.txt"] == "*" and lines["a.txt"] == "="


def test_identical_copy_exits_0_and_json_has_files_and_summary(emu, env, tmp_path):
    target = tmp_path / "one"
    folder = emu.resolve(emu.project, "d")
    assert run_cli("-q", "get", "-r", folder, "--path", str(target), env=env).returncode == 0
    plain = run_cli("check", "-r", folder, "--path", str(target), env=env)
    assert plain.returncode == 0, plain.stderr
    assert _lines(plain.stdout) == {"b.txt": "=", "c.bin": "="}
    document = run_cli("--json", "check", "-r", folder, "--path", str(target), env=env).json()
    assert document["exit_code"] == 0 and document["command"] == "check"
    assert document["summary"] == {
        "same": 2,
        "differs": 0,
        "missing": 0,
        "extra": 0,
        "error": 0,
        "identical": True,
        "size_only": False,
    }
    c_bin = next(f for f in document["files"] if f["path"] == "c.bin")
    assert c_bin["status"] == "same" and c_bin["remote_size"] == c_bin["local_size"] == 300 * 1024
    assert c_bin["remote_md5"] == c_bin["local_md5"] and c_bin["entity_id"].startswith("syn")


def test_usage_errors_exit_2(emu, env, tmp_path):
    assert run_cli("check", "--path", str(tmp_path), env=env).returncode == 2
    both = run_cli("check", emu.project, "--query", f"SELECT id FROM {emu.project}", env=env)
    assert both.returncode == 2 and "--query" in both.stderr


def test_the_python_api_returns_each_files_status(emu, synced):
    (synced / "extra.txt").write_text("x")
    with Platform(endpoint=emu.endpoint, token=emu.token) as platform:
        results = synclient.check(emu.project, synced, recursive=True, platform=platform, hash_workers=2)
    statuses = {f.path: f.status for f in results.files if f.status is not CheckStatus.ERROR}
    assert statuses == {
        "a.txt": CheckStatus.SAME,
        "d/b.txt": CheckStatus.SAME,
        "d/c.bin": CheckStatus.SAME,
        "extra.txt": CheckStatus.EXTRA,
    }
    assert not results.identical and results.count(CheckStatus.ERROR) == 1


def test_a_missing_copy_is_all_missing_and_not_created(emu, tmp_path):
    target = tmp_path / "never-synced"
    with Platform(endpoint=emu.endpoint, token=emu.token) as platform:
        results = synclient.check(emu.project, target, recursive=True, platform=platform, size_only=True)
    assert {f.path for f in results.files if f.status is CheckStatus.MISSING} == set(GOOD)
    assert not target.exists()


def test_the_bar_counts_every_byte_hashed(emu, synced, monkeypatch):
    import synclient.sync.check as check_module
    from synclient.progress import ProgressDisplay, ProgressMode

    class Recorder(ProgressDisplay):
        def __init__(self) -> None:
            self.planned = 0
            self.hashed = 0
            self.closed = False

        def file_planned(self, file) -> None:
            self.planned += file.size

        def bytes_transferred(self, file, count: int) -> None:
            self.hashed += count

        def close(self) -> None:
            self.closed = True

    shown = []
    monkeypatch.setattr(check_module, "choose_mode", lambda: ProgressMode.BAR)  # (a terminal)
    monkeypatch.setattr(check_module, "progress_observer", lambda **_: shown.append(Recorder()) or shown[-1])
    with Platform(endpoint=emu.endpoint, token=emu.token) as platform:
        synclient.check(emu.project, synced, recursive=True, platform=platform, progress=True)
    sizes = sum((synced / path).stat().st_size for path in GOOD)
    assert len(shown) == 1 and shown[0].closed
    assert shown[0].planned == shown[0].hashed == sizes
