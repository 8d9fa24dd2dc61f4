"""Issue 12: a sync touches nothing that is not its own and always converges. One test per reproduced defect."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from synctrees import MANIFEST, MiB, local_tree, seeded_md5, sigkill_sync_after

from synclient import Platform, SyncStatus, TransferConfig, sync_from_platform
from synclient.errors import (
    AccessDeniedError,
    AuthenticationError,
    ConfigError,
    EndpointError,
    NotFoundError,
    PathConflictError,
    PermanentServerError,
    SyncError,
)
from synclient.sync.plan.dry_run import SyncPlan
from synclient.sync.records.index import LocalIndex

pytestmark = pytest.mark.over_tls  # each test also runs against an emulator serving HTTPS

PARTIAL = ".synclient-partial"


def platform_for(emu) -> Platform:
    return Platform(endpoint=emu.endpoint, token=emu.token)


def sync(emu, project, target, **options):
    options.setdefault("on_error", "continue")
    options.setdefault("progress", False)
    return sync_from_platform(project, target, platform=platform_for(emu), **options)


def seed(emu, children) -> str:
    return emu.seed_spec({"projects": [{"name": "p", "children": children}]})["p"]


def text(name, content):
    return {"type": "file", "name": name, "content": content}


def folder(name, *children):
    return {"type": "folder", "name": name, "children": list(children)}


def by_path(results):
    return {str(r.path): r for r in results}


def partials(root: Path):
    return [p for p in local_tree(root, metadata=True) if PARTIAL in p]


def manifest_paths(folder_path: Path):
    lines = (folder_path / MANIFEST).read_text(encoding="utf-8", errors="surrogateescape").splitlines()[1:]
    return sorted(line.split("\t")[0] for line in lines)


# -- 1: nothing outside the target is ever deleted ----------------------------------------------------------------


def test_delete_never_follows_a_symlinked_folder_out_of_the_target(emulator, tmp_path):
    project = seed(emulator, [folder("d", text("f.txt", "remote f")), text("top.txt", "top")])
    target, elsewhere = tmp_path / "t", tmp_path / "elsewhere"
    sync(emulator, project, target)
    os.rename(target / "d", elsewhere)  # the user moves the folder away and leaves a symlink to it
    os.symlink(elsewhere, target / "d")
    results = sync(emulator, project, target, delete=True)
    assert (elsewhere / "f.txt").read_text() == "remote f", "a file outside the target was deleted"
    assert not [r for r in results if r.status is SyncStatus.DELETED]
    failed = [r for r in results if r.status is SyncStatus.FAILED]
    assert len(failed) == 1 and "symlink" in str(failed[0].error) and failed[0].path == target / "d"


def test_a_folder_that_could_not_be_listed_contributes_nothing_to_delete(emulator, tmp_path):
    """Its listing is refused after its parent listed it (Synapse hides a folder the user may not read, so a 403 on
    a listed folder is a permission revoked in between)."""
    project = seed(emulator, [folder("d", text("f.txt", "f")), text("gone.txt", "gone")])
    sync(emulator, project, tmp_path)
    emulator.delete_entity(emulator.resolve(project, "gone.txt"))
    platform, folder_id = platform_for(emulator), emulator.resolve(project, "d")
    real_list = platform.list_children

    def list_children(parent_id, **kwargs):
        if parent_id == folder_id:
            raise AccessDeniedError("POST /entity/children: HTTP 403: You lack READ access", status=403)
        return real_list(parent_id, **kwargs)

    platform.list_children = list_children
    results = sync_from_platform(project, tmp_path, platform=platform, delete=True, on_error="continue", progress=False)
    assert (tmp_path / "d" / "f.txt").read_text() == "f"
    assert [r.path.name for r in results if r.status is SyncStatus.DELETED] == ["gone.txt"]


def test_delete_resolves_the_path_when_unlinking_not_when_listing(emulator, tmp_path):
    """A folder that vanished remotely and is a symlink locally: its indexed files are not reached through it."""
    project = seed(emulator, [folder("d", text("f.txt", "f"))])
    target, elsewhere = tmp_path / "t", tmp_path / "elsewhere"
    sync(emulator, project, target)
    emulator.delete_entity(emulator.resolve(project, "d"))
    os.rename(target / "d", elsewhere)
    os.symlink(elsewhere, target / "d")
    plan = sync(emulator, project, target, delete=True, dry_run=True)
    results = sync(emulator, project, target, delete=True)
    assert (elsewhere / "f.txt").read_text() == "f"
    assert not plan.entries and not list(results)  # not synclient's any more: its row is dropped, nothing removed
    assert os.path.islink(target / "d")


# -- 3: a remote entity named like the manifest wins its path -----------------------------------------------------


@pytest.mark.parametrize("kind", ["file", "folder"])
def test_a_remote_entity_named_like_the_manifest_wins_and_resync_is_a_noop(emulator, tmp_path, kind):
    entity = text(MANIFEST, "remote bytes") if kind == "file" else folder(MANIFEST, text("in.txt", "inside"))
    project = seed(emulator, [entity, folder("sub", text("s.txt", "s"))])
    first = sync(emulator, project, tmp_path)
    assert not first.failures, [str(r.error) for r in first.failures]
    if kind == "file":
        assert (tmp_path / MANIFEST).read_text() == "remote bytes"
    else:
        assert (tmp_path / MANIFEST / "in.txt").read_text() == "inside"
        assert not (tmp_path / MANIFEST / MANIFEST).exists() or (tmp_path / MANIFEST / MANIFEST).is_file()
    assert manifest_paths(tmp_path / "sub") == [str(tmp_path / "sub" / "s.txt")]
    emulator.reset_stats()
    again = sync(emulator, project, tmp_path)
    assert not again.failures and {r.status for r in again} == {SyncStatus.SKIPPED}
    assert emulator.stats()["data_requests"] == 0
    assert not partials(tmp_path)


# -- 4: keep.both never takes a remote sibling's name --------------------------------------------------------------


def test_keep_both_copy_name_avoids_remote_siblings(emulator, tmp_path):
    project = seed(emulator, [text("a.txt", "remote a"), text("a(1).txt", "remote a(1)")])
    (tmp_path / "a.txt").write_text("local edit")
    results = sync(emulator, project, tmp_path, if_collision="keep.both")
    assert not results.failures
    assert (tmp_path / "a.txt").read_text() == "local edit"
    assert (tmp_path / "a(1).txt").read_text() == "remote a(1)"
    assert (tmp_path / "a(2).txt").read_text() == "remote a"
    paths = [r.path for r in results]
    assert len(paths) == len(set(paths)) == 2
    emulator.reset_stats()
    again = sync(emulator, project, tmp_path, if_collision="keep.both")
    assert {r.status for r in again} == {SyncStatus.SKIPPED} and emulator.stats()["data_requests"] == 0


# -- 5: a dry run sees what the real run will see -------------------------------------------------------------------

_KILLED_WRITER = textwrap.dedent("""
    import os, sys
    from pathlib import Path
    from synclient.sync.records.index import IndexRow, LocalIndex
    target, rel = Path(sys.argv[1]), sys.argv[2]
    info = os.lstat(target / rel)
    index = LocalIndex(target).open()
    index.record(IndexRow(rel, rel, sys.argv[3], "syn999999", 1, "1", None, info.st_size, None, None, info.st_size,
                          info.st_mtime_ns))
    index.flush()
    os._exit(0)  # as killed: the row is only in the write-ahead log
""")


def test_dry_run_reads_rows_a_killed_run_left_in_the_write_ahead_log(emulator, tmp_path):
    project = seed(emulator, [text("a.txt", "a")])
    sync(emulator, project, tmp_path)
    (tmp_path / "gone.txt").write_text("ours, from the killed run")
    subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(tmp_path), "gone.txt", project], check=True, timeout=60)
    assert (tmp_path / ".synclient" / "index.sqlite-wal").stat().st_size > 0
    before = sorted(os.listdir(tmp_path / ".synclient"))
    plan = sync(emulator, project, tmp_path, delete=True, dry_run=True)
    assert isinstance(plan, SyncPlan)
    assert [(e.rel_path, e.action.value) for e in plan.entries if e.action.value == "delete"] == [
        ("gone.txt", "delete")
    ]
    assert sorted(os.listdir(tmp_path / ".synclient")) == before  # wrote nothing
    results = sync(emulator, project, tmp_path, delete=True)
    assert [r.path.name for r in results if r.status is SyncStatus.DELETED] == ["gone.txt"]


# -- 6: a folder becoming a file and back converges in one run ------------------------------------------------------


def test_remote_folder_replaced_by_a_file_converges_in_one_run_with_delete(emulator, tmp_path):
    project = seed(emulator, [folder("x", text("f.txt", "f"), folder("deeper", text("g.txt", "g")))])
    sync(emulator, project, tmp_path)
    emulator.delete_entity(emulator.resolve(project, "x"))
    emulator.add_file(project, "x", b"now a file")
    without = sync(emulator, project, tmp_path)
    failed = [r for r in without if r.status is SyncStatus.FAILED]
    assert len(failed) == 1 and failed[0].path == tmp_path / "x" and isinstance(failed[0].error, PathConflictError)
    assert not partials(tmp_path) and (tmp_path / "x" / "f.txt").read_text() == "f"
    results = sync(emulator, project, tmp_path, delete=True)
    assert not results.failures, [str(r.error) for r in results.failures]
    assert (tmp_path / "x").read_bytes() == b"now a file"
    assert sorted(r.status.value for r in results) == ["deleted", "deleted", "downloaded"]
    emulator.reset_stats()
    again = sync(emulator, project, tmp_path, delete=True)
    assert {r.status for r in again} == {SyncStatus.SKIPPED} and emulator.stats()["data_requests"] == 0


def test_a_folder_with_files_synclient_did_not_write_is_never_replaced(emulator, tmp_path):
    project = seed(emulator, [folder("x", text("f.txt", "f"))])
    sync(emulator, project, tmp_path)
    (tmp_path / "x" / "mine.txt").write_text("the user's own file")
    emulator.delete_entity(emulator.resolve(project, "x"))
    emulator.add_file(project, "x", b"now a file")
    results = sync(emulator, project, tmp_path, delete=True)
    assert (tmp_path / "x" / "mine.txt").read_text() == "the user's own file"
    failed = [r for r in results if r.status is SyncStatus.FAILED]
    assert len(failed) == 1 and failed[0].path == tmp_path / "x" and isinstance(failed[0].error, PathConflictError)
    assert not partials(tmp_path)


def test_remote_file_replaced_by_a_folder_converges_in_one_run_with_delete(emulator, tmp_path):
    project = seed(emulator, [text("x", "a file")])
    sync(emulator, project, tmp_path)
    emulator.delete_entity(emulator.resolve(project, "x"))
    emulator.add_file(emulator.add_folder(project, "x"), "g.txt", b"inside")
    without = sync(emulator, project, tmp_path)
    failed = [r for r in without if r.status is SyncStatus.FAILED]
    assert len(failed) == 1 and failed[0].path == tmp_path / "x", [(r.path, str(r.error)) for r in without]
    plan = sync(emulator, project, tmp_path, delete=True, dry_run=True)
    assert sorted((e.rel_path, e.action.value) for e in plan.entries) == [("x", "delete"), ("x/g.txt", "download")]
    assert not plan.failures
    results = sync(emulator, project, tmp_path, delete=True)
    assert not results.failures, [str(r.error) for r in results.failures]
    assert (tmp_path / "x" / "g.txt").read_text() == "inside"
    assert sorted(r.status.value for r in results) == ["deleted", "downloaded"]


# -- 7: manifests describe what is there at the end ------------------------------------------------------------------


def test_manifests_never_list_deleted_files(emulator, tmp_path):
    project = seed(emulator, [folder("d", text("f.txt", "f")), folder("e", text("g.txt", "g")), text("t.txt", "t")])
    sync(emulator, project, tmp_path)
    emulator.delete_entity(emulator.resolve(project, "d/f.txt"))
    emulator.delete_entity(emulator.resolve(project, "e"))
    sync(emulator, project, tmp_path, delete=True)
    assert not (tmp_path / "d" / MANIFEST).exists()
    assert not (tmp_path / "e").exists(), "a folder the remote no longer has, emptied by delete, goes"
    assert manifest_paths(tmp_path) == [str(tmp_path / "t.txt")]


# -- 8: a single-file get into a synced tree keeps the tree's ownership ---------------------------------------------


def _assert_the_tree_owns(emulator, project, file_id, target):
    """t.txt is listed in the tree's manifest and goes with the tree's delete."""
    sync(emulator, project, target)
    assert manifest_paths(target) == [str(target / "t.txt"), str(target / "u.txt")]
    emulator.delete_entity(file_id)
    results = sync(emulator, project, target, delete=True)
    assert [r.path.name for r in results if r.status is SyncStatus.DELETED] == ["t.txt"]


def test_single_file_get_into_a_synced_tree_keeps_the_row_owned_by_the_tree(emulator, tmp_path):
    project = seed(emulator, [text("t.txt", "t"), text("u.txt", "u")])
    sync(emulator, project, tmp_path)
    file_id = emulator.resolve(project, "t.txt")
    emulator.add_version(file_id, b"t version 2")
    sync(emulator, file_id, tmp_path)
    assert (tmp_path / "t.txt").read_bytes() == b"t version 2"
    with LocalIndex(tmp_path, read_only=True) as index:
        assert index.get_many(["t.txt"])["t.txt"].root_id == project
    _assert_the_tree_owns(emulator, project, file_id, tmp_path)


def test_a_tree_sync_after_a_single_file_get_owns_the_file(emulator, tmp_path):
    project = seed(emulator, [text("t.txt", "t"), text("u.txt", "u")])
    file_id = emulator.resolve(project, "t.txt")
    sync(emulator, file_id, tmp_path)
    sync(emulator, project, tmp_path)
    _assert_the_tree_owns(emulator, project, file_id, tmp_path)


# -- 9: a manifest that cannot be written is one entry of a complete report ------------------------------------------


def test_one_unwritable_manifest_leaves_the_report_complete(emulator, tmp_path):
    project = seed(emulator, [folder("d", text("f.txt", "f")), folder("e", text("g.txt", "g"))])
    (tmp_path / "d" / MANIFEST).mkdir(parents=True)  # cannot be replaced by a file
    (tmp_path / "d" / MANIFEST / "keep").write_text("x")
    results = sync(emulator, project, tmp_path)
    assert sorted(r.status.value for r in results) == ["downloaded", "downloaded"]
    assert len(results.report.manifest_errors) == 1 and str(tmp_path / "d") in results.report.manifest_errors[0]
    assert manifest_paths(tmp_path / "e") == [str(tmp_path / "e" / "g.txt")]
    assert "1 manifest not written" in results.report.summary()
    with pytest.raises(SyncError) as info:
        sync(emulator, project, tmp_path, on_error="raise")
    assert info.value.problems and not info.value.failures and len(info.value.results) == 2


# -- 10: a target path that is not UTF-8 ----------------------------------------------------------------------------


def test_a_target_path_that_is_not_utf8_works(emulator, tmp_path):
    project = seed(emulator, [folder("d", text("f.txt", "f"))])
    target = Path(os.fsdecode(os.fsencode(str(tmp_path)) + b"/T_\xe9"))
    results = sync(emulator, project, target)
    assert not results.failures and (target / "d" / "f.txt").read_text() == "f"
    raw = (target / MANIFEST).read_bytes()
    assert b"T_\xe9/d/f.txt" in raw


# -- 12: versions ----------------------------------------------------------------------------------------------------


def test_a_version_on_a_container_or_a_missing_version_is_a_usage_error(emulator, tmp_path):
    project = seed(emulator, [text("a.txt", "a")])
    with pytest.raises(ConfigError, match="no versions"):
        sync(emulator, project + ".1", tmp_path / "one")
    file_id = emulator.resolve(project, "a.txt")
    with pytest.raises(NotFoundError):
        sync(emulator, file_id + ".99", tmp_path / "two")
    assert not (tmp_path / "two").exists() or not os.listdir(tmp_path / "two")


# -- 14: partials of a renamed file ----------------------------------------------------------------------------------


def test_a_file_renamed_after_an_interrupted_download_resumes_under_its_new_name(emulator_factory, tmp_path):
    size = 32 * MiB
    emu = emulator_factory(bandwidth_per_conn=8 * 10**6)
    project = emu.emulator_project = seed(emu, [{"type": "file", "name": "big.bin", "size": size, "seed": 5}])
    served = sigkill_sync_after(emu, project, tmp_path, size // 2, workers=2, part_size=4 * MiB)
    assert size // 2 <= served < size and partials(tmp_path), "the kill must land mid-file"
    emu.rename_entity(emu.resolve(project, "big.bin"), "renamed.bin")
    emu.set_knobs(bandwidth_per_conn=0)
    emu.reset_stats()
    results = sync(
        emu, project, tmp_path, delete=True, config=TransferConfig(multipart_threshold=4 * MiB, part_size=4 * MiB)
    )
    assert [r.status for r in results] == [SyncStatus.DOWNLOADED]
    assert emu.stats()["data_bytes"] < size, "the renamed file started again from zero"
    assert hashlib.md5((tmp_path / "renamed.bin").read_bytes()).hexdigest() == seeded_md5(size, 5)
    assert sorted(local_tree(tmp_path)) == ["renamed.bin"]


def test_partials_of_files_gone_remotely_do_not_outlive_a_completed_run(emulator, tmp_path):
    project = seed(emulator, [text("a.txt", "a"), text("b.txt", "b")])
    sync(emulator, project, tmp_path)
    stray = tmp_path / f".gone.bin.12345{PARTIAL}"
    stray.write_bytes(b"half of a file that was deleted remotely")
    (tmp_path / f".gone.bin.12345{PARTIAL}.parts").write_text("{}\n")
    sync(emulator, project, tmp_path)
    assert not partials(tmp_path)


# -- fatal errors and filters ---------------------------------------------------------------------------------------


def test_a_token_that_turns_invalid_mid_run_stops_the_run_once(emulator, tmp_path):
    project = seed(emulator, [text(f"f{i:03d}.txt", f"file {i}") for i in range(150)])
    platform = platform_for(emulator)

    class RevokeAfterFirstFile:
        def file_planned(self, file):
            pass

        def bytes_transferred(self, file, count):
            pass

        def file_finished(self, result):
            platform._token = "revoked-token"

    with pytest.raises(AuthenticationError):
        sync_from_platform(
            project,
            tmp_path,
            platform=platform,
            observer=RevokeAfterFirstFile(),
            max_workers=2,
            progress=False,
            on_error="continue",
        )
    calls = emulator.stats()["api_requests"]
    assert calls < 150, f"{calls} calls: the run kept going file by file after the token was refused"
    results = sync(emulator, project, tmp_path)  # the same command with a good token finishes the job
    assert not results.failures and len(local_tree(tmp_path)) == 150


@pytest.mark.parametrize(
    "refusal",
    [
        EndpointError("endpoint redirects to another host (HTTP 307)", endpoint="http://x"),  # a per-file refusal
        PermanentServerError("POST /entity/{id}/bundle2: HTTP 501", status=501),
    ],
)
def test_a_refusal_of_one_files_call_fails_that_file_only(emulator, tmp_path, refusal):
    """Only errors every file would meet stop a run (their nature is FATAL); a redirect or a 501 on one bundle call
    fails that file and the others are synced."""
    project = seed(emulator, [text(f"f{i}.txt", f"file {i}") for i in range(5)])
    platform = platform_for(emulator)
    real_bundle, refused = platform.get_file_bundle, []

    def bundle(entity_id, **kwargs):
        if not refused:
            refused.append(entity_id)
            raise refusal
        return real_bundle(entity_id, **kwargs)

    platform.get_file_bundle = bundle
    results = sync_from_platform(
        project, tmp_path, platform=platform, max_workers=1, progress=False, on_error="continue"
    )
    assert [r.entity_id for r in results.failures] == refused and results.failures[0].error is refusal
    assert len(local_tree(tmp_path)) == 4


def test_include_filters_prune_folders_that_cannot_match(emulator, tmp_path):
    project = seed(
        emulator, [folder("a", text("x.txt", "x")), folder("b", folder("c", text("y.txt", "y")), text("z.txt", "z"))]
    )
    emulator.reset_stats()
    results = sync(emulator, project, tmp_path, include=["a/*"])
    assert [r.path.name for r in results] == ["x.txt"]
    assert not (tmp_path / "b").exists()
    listings = emulator.stats()["api_by_route"]["POST /repo/v1/entity/children"]
    assert listings == 2, "only the root and a/ need listing"


def test_a_noop_resync_rewrites_no_manifest(emulator, tmp_path):
    project = seed(emulator, [folder("d", text("f.txt", "f")), text("t.txt", "t")])
    sync(emulator, project, tmp_path)
    before = {p: os.stat(tmp_path / p).st_mtime_ns for p in (MANIFEST, f"d/{MANIFEST}")}
    os.utime(tmp_path / MANIFEST, ns=(1, 1))  # an old mtime: a rewrite could not go unnoticed
    before[MANIFEST] = 1
    sync(emulator, project, tmp_path)
    assert {p: os.stat(tmp_path / p).st_mtime_ns for p in before} == before
    assert not [name for name in os.listdir(tmp_path) if PARTIAL in name]


# -- found by the model test (integration_tests/model) ---------------------------------------------------------------


def test_keep_local_with_delete_replaces_a_folder_of_synclients_own_files(emulator, tmp_path):
    project = seed(emulator, [folder("x", text("f.txt", "f"))])
    sync(emulator, project, tmp_path)
    emulator.delete_entity(emulator.resolve(project, "x"))
    emulator.add_file(project, "x", b"now a file")
    results = sync(emulator, project, tmp_path, delete=True, if_collision="keep.local")
    assert (tmp_path / "x").read_bytes() == b"now a file"
    assert sorted(r.status.value for r in results) == ["deleted", "downloaded"]
    assert manifest_paths(tmp_path) == [str(tmp_path / "x")]


def test_a_remote_entity_that_takes_a_keep_both_copys_name_wins_the_path(emulator, tmp_path):
    project = seed(emulator, [text("a.txt", "remote a")])
    (tmp_path / "a.txt").write_text("local edit")
    sync(emulator, project, tmp_path, if_collision="keep.both")
    assert (tmp_path / "a(1).txt").read_text() == "remote a"
    emulator.add_file(project, "a(1).txt", b"a new remote file")
    results = sync(emulator, project, tmp_path, if_collision="keep.both")
    assert not results.failures
    assert (tmp_path / "a(1).txt").read_bytes() == b"a new remote file"
    assert (tmp_path / "a(2).txt").read_text() == "remote a"
    assert (tmp_path / "a.txt").read_text() == "local edit"
    assert len({r.path for r in results}) == 2
    emulator.reset_stats()
    again = sync(emulator, project, tmp_path, if_collision="keep.both")
    assert {r.status for r in again} == {SyncStatus.SKIPPED} and emulator.stats()["data_requests"] == 0


def test_a_keep_both_copy_goes_once_its_file_is_at_its_own_path_again(emulator, tmp_path):
    project = seed(emulator, [text("a.txt", "remote a")])
    (tmp_path / "a.txt").write_text("local edit")
    sync(emulator, project, tmp_path, if_collision="keep.both")
    (tmp_path / "a.txt").unlink()  # the user gives up their version
    emulator.add_version(emulator.resolve(project, "a.txt"), b"remote a, version 2")
    results = sync(emulator, project, tmp_path)
    assert [(r.path.name, r.status.value) for r in results] == [("a.txt", "downloaded")]
    assert sorted(local_tree(tmp_path)) == ["a.txt"], "the superseded copy a(1).txt was left behind, unindexed"


def test_a_stale_manifest_gives_way_to_a_remote_folder_of_its_name(emulator, tmp_path):
    project = seed(emulator, [text("t.txt", "t")])
    sync(emulator, project, tmp_path)
    assert (tmp_path / MANIFEST).is_file()
    emulator.add_file(emulator.add_folder(project, MANIFEST), "in.txt", b"inside")
    results = sync(emulator, project, tmp_path)
    assert not results.failures, [str(r.error) for r in results.failures]
    assert (tmp_path / MANIFEST / "in.txt").read_bytes() == b"inside"
    assert not partials(tmp_path)
    emulator.reset_stats()
    again = sync(emulator, project, tmp_path)
    assert {r.status for r in again} == {SyncStatus.SKIPPED} and emulator.stats()["data_requests"] == 0


def test_a_vanished_folder_kept_for_a_changed_file_loses_its_stale_manifest(emulator, tmp_path):
    project = seed(emulator, [folder("d", text("f.txt", "f"), text("g.txt", "g")), text("t.txt", "t")])
    sync(emulator, project, tmp_path)
    (tmp_path / "d" / "f.txt").write_text("changed by the user")
    emulator.delete_entity(emulator.resolve(project, "d"))
    results = sync(emulator, project, tmp_path, delete=True)
    assert sorted((r.path.name, r.action) for r in results if r.path.parent.name == "d") == [
        ("f.txt", "keep-local"),
        ("g.txt", "delete"),
    ]
    assert sorted(os.listdir(tmp_path / "d")) == ["f.txt"]


# -- found by review ---------------------------------------------------------------------------------------------


def test_dry_run_below_a_file_that_becomes_a_folder_plans_like_the_real_run(emulator, tmp_path):
    project = seed(emulator, [text("x", "a file")])
    sync(emulator, project, tmp_path)
    emulator.delete_entity(emulator.resolve(project, "x"))
    emulator.add_file(emulator.add_folder(emulator.add_folder(project, "x"), "sub"), "f.txt", b"deep")
    plan = sync(emulator, project, tmp_path, delete=True, dry_run=True)
    results = sync(emulator, project, tmp_path, delete=True)
    assert sorted((e.rel_path, e.action.value) for e in plan.entries) == [("x", "delete"), ("x/sub/f.txt", "download")]
    assert sorted(r.status.value for r in results) == ["deleted", "downloaded"]


def test_a_copy_the_user_edited_is_never_replaced_by_a_remote_file_of_its_name(emulator, tmp_path):
    project = seed(emulator, [text("a", "remote a")])
    (tmp_path / "a").write_text("local edit")
    sync(emulator, project, tmp_path, if_collision="keep.both")
    (tmp_path / "a(1)").write_text("the user edited the copy")
    emulator.add_file(project, "a(1)", b"a new remote file")
    results = sync(emulator, project, tmp_path, if_collision="keep.local")
    assert (tmp_path / "a(1)").read_text() == "the user edited the copy"
    assert (tmp_path / "a").read_text() == "local edit"
    assert not [r for r in results if r.status is SyncStatus.DOWNLOADED and r.path.name == "a(1)"]


def test_a_resync_with_keep_both_copies_costs_listing_calls_only(emulator, tmp_path):
    project = seed(emulator, [text(f"f{i}.txt", f"remote {i}") for i in range(10)])
    for i in range(10):
        (tmp_path / f"f{i}.txt").write_text(f"local {i}")
    sync(emulator, project, tmp_path, if_collision="keep.both")
    assert len(local_tree(tmp_path)) == 20
    emulator.reset_stats()
    again = sync(emulator, project, tmp_path, if_collision="keep.both")
    assert {r.status for r in again} == {SyncStatus.SKIPPED} and len(again) == 10
    assert emulator.stats()["api_by_route"] == {"GET /repo/v1/entity/{id}/type": 1, "POST /repo/v1/entity/children": 1}


def test_the_manifest_temp_name_never_writes_through_a_planted_symlink(emulator, tmp_path):
    project = seed(emulator, [text("t.txt", "t")])
    target = tmp_path / "t"
    target.mkdir()
    (tmp_path / "precious.txt").write_text("precious")
    os.symlink(tmp_path / "precious.txt", target / f".{MANIFEST}.synclient-partial")
    sync(emulator, project, target)
    assert (tmp_path / "precious.txt").read_text() == "precious"
    assert (target / MANIFEST).is_file() and not (target / MANIFEST).is_symlink()


def test_a_partial_of_a_file_whose_metadata_call_failed_stays_for_the_next_run(emulator, tmp_path):
    project = seed(emulator, [text("a.txt", "a"), text("b.txt", "b")])
    partial = tmp_path / f".a.txt.99{PARTIAL}"
    tmp_path.mkdir(exist_ok=True)
    partial.write_bytes(b"half")
    emulator.set_deny(emulator.resolve(project, "a.txt"), "download")  # its bundle withholds the handle
    results = sync(emulator, project, tmp_path)
    assert [r.status for r in results if r.path.name == "a.txt"] == [SyncStatus.FAILED]
    assert partial.exists()


def test_manifest_root_removes_the_subfolder_manifests_of_an_earlier_all_run(emulator, tmp_path):
    project = seed(emulator, [folder("d", text("f.txt", "f")), text("t.txt", "t")])
    sync(emulator, project, tmp_path)
    assert (tmp_path / "d" / MANIFEST).exists()
    sync(emulator, project, tmp_path, manifest="root")
    assert not (tmp_path / "d" / MANIFEST).exists()
    assert manifest_paths(tmp_path) == [str(tmp_path / "d" / "f.txt"), str(tmp_path / "t.txt")]


def test_a_manifest_left_in_a_folder_the_remote_dropped_goes_with_the_next_manifest_run(emulator, tmp_path):
    project = seed(emulator, [folder("d", folder("e", text("f.txt", "f"))), text("t.txt", "t")])
    sync(emulator, project, tmp_path)
    emulator.move_entity(emulator.resolve(project, "d/e/f.txt"), project)
    sync(emulator, project, tmp_path, delete=True, manifest="suppress")  # manifests left as they were
    emulator.delete_entity(emulator.resolve(project, "d"))
    sync(emulator, project, tmp_path, delete=True)
    assert not (tmp_path / "d" / "e" / MANIFEST).exists() and not (tmp_path / "d" / MANIFEST).exists()
    assert manifest_paths(tmp_path) == [str(tmp_path / "f.txt"), str(tmp_path / "t.txt")]


@pytest.mark.parametrize("size", [1000, 5 * MiB], ids=["single-stream", "multipart"])
def test_a_folder_swapped_for_a_symlink_after_planning_is_not_written_through(emulator, tmp_path, size):
    """The swap lands between a file's plan and its download (from the observer's file_planned hook, in the same
    task): the download refuses the folder instead of writing through it."""
    project = seed(emulator, [folder("d", {"type": "file", "name": "f.bin", "size": size, "seed": 3})])
    target, elsewhere = tmp_path / "t", tmp_path / "elsewhere"
    elsewhere.mkdir()

    class SwapOnPlan:
        def file_planned(self, file):
            os.rename(target / "d", tmp_path / "moved")
            os.symlink(elsewhere, target / "d")

        def bytes_transferred(self, file, count):
            pass

        def file_finished(self, result):
            pass

    results = sync_from_platform(
        project,
        target,
        platform=platform_for(emulator),
        observer=SwapOnPlan(),
        progress=False,
        on_error="continue",
        config=TransferConfig(multipart_threshold=4 * MiB, part_size=4 * MiB),
    )
    assert os.listdir(elsewhere) == [], "bytes were written through the symlink"
    assert [(r.status, type(r.error).__name__) for r in results] == [(SyncStatus.FAILED, "UnsafePathError")]


def test_a_filtered_run_sweeps_orphan_partials_it_may_judge_and_spares_the_rest(emulator, tmp_path):
    project = seed(emulator, [text("a.txt", "a"), text("b.bin", "b")])
    sync(emulator, project, tmp_path)
    orphan = tmp_path / f".gone.txt.12345{PARTIAL}"  # a file the filters want, gone remotely
    spared = tmp_path / f".big.bin.12345{PARTIAL}"  # a file the filters leave out: may resume another day
    orphan.write_bytes(b"half")
    spared.write_bytes(b"half")
    sync(emulator, project, tmp_path, include=["*.txt"])
    assert not orphan.exists() and spared.exists()


def test_partials_in_a_folder_the_remote_dropped_do_not_outlive_a_completed_run(emulator, tmp_path):
    project = seed(emulator, [folder("d", text("f.txt", "f")), text("t.txt", "t")])
    sync(emulator, project, tmp_path)
    stray = tmp_path / "d" / f".f.txt.12345{PARTIAL}"  # an interrupted new version of f.txt
    stray.write_bytes(b"half")
    emulator.delete_entity(emulator.resolve(project, "d"))
    sync(emulator, project, tmp_path)  # without delete: d/f.txt stays, its partial cannot resume anywhere
    assert (tmp_path / "d" / "f.txt").exists() and not stray.exists()


def test_options_object_and_keyword_overrides(emulator, tmp_path):
    """``options=`` carries every choice; a keyword of the same name overrides its field (here: the dry run of
    the options object is turned off, and the include filter stays)."""
    from synclient import SyncOptions

    project = seed(emulator, [text("a.csv", "a"), text("b.txt", "b")])
    options = SyncOptions(dry_run=True, include=["*.csv"], progress=False)
    plan = sync_from_platform(project, tmp_path, platform=platform_for(emulator), options=options)
    assert isinstance(plan, SyncPlan) and [e.rel_path for e in plan.fetch_entries] == ["a.csv"]
    assert not (tmp_path / "a.csv").exists()
    results = sync_from_platform(project, tmp_path, platform=platform_for(emulator), options=options, dry_run=False)
    assert [r.path.name for r in results] == ["a.csv"] and (tmp_path / "a.csv").read_text() == "a"
