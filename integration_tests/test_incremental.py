"""Issue 4 acceptance: the second sync is the one users run every day; it must cost almost nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from synctrees import MANIFEST, Tree, assert_tree_matches, local_tree

from synclient import Platform, SyncStatus, sync_from_platform
from synclient.emulator import Emulator
from synclient.emulator.process import EmulatorProcess, Seed
from synclient.sync.plan.dry_run import SyncPlan
from synclient.sync.records.index import SyncLockedError


def platform_for(emu) -> Platform:
    return Platform(endpoint=emu.endpoint, token=emu.token)


def small_tree() -> Tree:
    tree = Tree()
    docs = tree.folder(tree.children, "docs")
    tree.text_file(docs, "docs/", "a.txt", "alpha\n")
    tree.text_file(docs, "docs/", "b.txt", "bravo\n")
    raw = tree.folder(tree.children, "raw")
    for i in range(5):
        tree.text_file(raw, "raw/", f"r{i}.csv", f"{i},{i * i}\n")
    tree.text_file(tree.children, "", "top.md", "# top\n")
    return tree


@pytest.fixture
def seeded(emulator):
    tree = small_tree()
    emulator.project_id = emulator.seed_spec(tree.spec())["p"]
    return emulator, tree


@pytest.mark.slow  # about 30 s: the slow tier (pytest -m slow, run by CI after the README's command)
def test_resync_of_10000_files_costs_listing_pages_only_then_one_new_version_costs_three_calls(tmp_path):
    with EmulatorProcess(seed=Seed(synthetic="files=10000,depth=1,fanout=100,size=20")) as emu:
        project = next(iter(emu.info()["projects"].values()))
        platform = platform_for(emu)
        first = sync_from_platform(project, tmp_path, platform=platform, max_workers=16, manifest="suppress")
        assert len(first) == 10000
        pages = first.report.rest_calls - 10000 - 100 - 1  # minus bundles, URL batches, root type call

        emu.reset_stats()
        started = time.monotonic()
        again = sync_from_platform(project, tmp_path, platform=platform, manifest="suppress")
        elapsed = time.monotonic() - started
        stats = emu.stats()
        assert {r.status for r in again} == {SyncStatus.SKIPPED} and len(again) == 10000
        assert stats["data_requests"] == 0
        listings = stats["api_by_route"]["POST /repo/v1/entity/children"]
        assert listings == pages == 100 * 2 + 2  # 100 folders of 100 files, the root's 100 folders
        assert stats["api_requests"] <= listings + 2
        print(f"no-op re-sync of 10,000 files: {elapsed:.2f} s, {stats['api_requests']} REST calls")

        some_file = sorted(local_tree(tmp_path))[4321]
        entity = emu.resolve(project, some_file)
        emu.add_version(entity, "a new version\n")
        emu.reset_stats()
        third = sync_from_platform(project, tmp_path, platform=platform, manifest="suppress")
        stats = emu.stats()
        routes = stats["api_by_route"]
        assert routes["POST /repo/v1/entity/children"] == listings
        assert routes["POST /repo/v1/entity/{id}/version/{v}/bundle2"] == 1
        assert routes["POST /file/v1/fileHandle/batch"] == 1
        assert stats["data_requests"] == 1
        assert [r.entity_id for r in third if r.status is SyncStatus.DOWNLOADED] == [entity]
        assert (tmp_path / some_file).read_text() == "a new version\n"


def edit(path: Path, text: str) -> None:
    path.write_text(text)
    later = time.time_ns() + 5_000_000_000  # a different mtime even on coarse-grained filesystems
    os.utime(path, ns=(later, later))


@pytest.mark.parametrize("mode", ["overwrite.local", "keep.local", "keep.both"])
def test_local_edit_under_each_collision_mode(seeded, tmp_path, mode):
    emu, tree = seeded
    platform = platform_for(emu)
    sync_from_platform(emu.project_id, tmp_path, platform=platform)
    a = emu.resolve(emu.project_id, "docs/a.txt")
    emu.add_version(a, b"alpha v2\n")
    edit(tmp_path / "docs" / "a.txt", "my local notes\n")
    results = sync_from_platform(emu.project_id, tmp_path, platform=platform, if_collision=mode)
    by_id = {r.entity_id: r for r in results}
    local = (tmp_path / "docs" / "a.txt").read_text()
    if mode == "overwrite.local":
        assert local == "alpha v2\n" and by_id[a].action == "overwrite"
    elif mode == "keep.local":
        assert local == "my local notes\n" and by_id[a].action == "keep-local"
        assert by_id[a].status is SyncStatus.SKIPPED
    else:
        assert local == "my local notes\n" and by_id[a].action == "keep-both"
        assert (tmp_path / "docs" / "a(1).txt").read_text() == "alpha v2\n"
        emu.reset_stats()  # the copy is indexed: the next run neither re-downloads nor makes a(2).txt
        sync_from_platform(emu.project_id, tmp_path, platform=platform, if_collision=mode)
        assert emu.stats()["data_requests"] == 0
        assert not (tmp_path / "docs" / "a(2).txt").exists()


def test_unmodified_local_copy_of_an_updated_file_is_simply_updated(seeded, tmp_path):
    emu, _ = seeded
    platform = platform_for(emu)
    sync_from_platform(emu.project_id, tmp_path, platform=platform, if_collision="keep.local")
    emu.add_version(emu.resolve(emu.project_id, "top.md"), b"# top v2\n")
    results = sync_from_platform(emu.project_id, tmp_path, platform=platform, if_collision="keep.local")
    assert (tmp_path / "top.md").read_text() == "# top v2\n"
    assert [r.action for r in results if r.status is SyncStatus.DOWNLOADED] == ["download"]


def test_delete_removes_only_files_the_index_owns(seeded, tmp_path):
    emu, tree = seeded
    platform = platform_for(emu)
    sync_from_platform(emu.project_id, tmp_path, platform=platform)
    (tmp_path / "raw" / "mine.txt").write_text("not synclient's")
    edit(tmp_path / "raw" / "r1.csv", "edited locally\n")
    for name in ("r0.csv", "r1.csv", "r2.csv"):
        emu.delete_entity(emu.resolve(emu.project_id, f"raw/{name}"))
    kept_default = sync_from_platform(emu.project_id, tmp_path, platform=platform)
    assert (tmp_path / "raw" / "r0.csv").exists()  # deletions are opt-in
    assert not any(r.status is SyncStatus.DELETED for r in kept_default)
    results = sync_from_platform(emu.project_id, tmp_path, platform=platform, delete=True)
    deleted = sorted(r.path.name for r in results if r.status is SyncStatus.DELETED)
    assert deleted == ["r0.csv", "r2.csv"]
    assert (tmp_path / "raw" / "mine.txt").read_text() == "not synclient's"
    assert (tmp_path / "raw" / "r1.csv").read_text() == "edited locally\n"  # changed since: kept
    assert (tmp_path / "raw" / "r3.csv").exists()


def test_existing_matching_files_are_adopted_without_download(seeded, tmp_path):
    emu, tree = seeded
    for rel in tree.expected:  # an earlier copy made by other means
        source = {"docs/a.txt": "alpha\n", "docs/b.txt": "bravo\n", "top.md": "# top\n"}.get(rel)
        if source is None:
            i = int(rel.split("/r")[1].split(".")[0])
            source = f"{i},{i * i}\n"
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(source)
    emu.reset_stats()
    results = sync_from_platform(emu.project_id, tmp_path, platform=platform_for(emu))
    assert {r.action for r in results} == {"adopt"}
    assert emu.stats()["data_requests"] == 0
    emu.reset_stats()
    sync_from_platform(emu.project_id, tmp_path, platform=platform_for(emu))
    assert "POST /repo/v1/entity/{id}/version/{v}/bundle2" not in emu.stats()["api_by_route"]


def test_filters_apply_before_any_per_file_call(seeded, tmp_path):
    emu, _ = seeded
    emu.reset_stats()
    results = sync_from_platform(
        emu.project_id, tmp_path, platform=platform_for(emu), include=["*.csv", "*.md"], exclude=["raw/r[34].csv"]
    )
    assert sorted(local_tree(tmp_path)) == ["raw/r0.csv", "raw/r1.csv", "raw/r2.csv", "top.md"]
    assert emu.stats()["api_by_route"]["POST /repo/v1/entity/{id}/version/{v}/bundle2"] == len(results) == 4
    emu.reset_stats()
    sync_from_platform(emu.project_id, tmp_path / "other", platform=platform_for(emu), exclude=["raw"])
    listed = emu.stats()["api_by_route"]["POST /repo/v1/entity/children"]
    assert listed == 2  # the root and docs/: the excluded folder is not even listed


def test_dry_run_writes_nothing_and_counts_right(seeded, tmp_path):
    emu, tree = seeded
    target = tmp_path / "t"
    plan = sync_from_platform(emu.project_id, target, platform=platform_for(emu), dry_run=True)
    assert isinstance(plan, SyncPlan) and not target.exists()
    assert len(plan.fetch_entries) == tree.file_count and plan.bytes_to_fetch == sum(
        len(c) for c in ["alpha\n", "bravo\n", "# top\n"] + [f"{i},{i * i}\n" for i in range(5)]
    )
    assert emu.stats()["data_requests"] == 0
    sync_from_platform(emu.project_id, target, platform=platform_for(emu))
    edit(target / "top.md", "changed\n")
    emu.delete_entity(emu.resolve(emu.project_id, "docs/b.txt"))
    before = local_tree(target, metadata=True)
    plan = sync_from_platform(emu.project_id, target, platform=platform_for(emu), dry_run=True, delete=True)
    assert local_tree(target, metadata=True) == before
    actions = {e.rel_path: e.action.value for e in plan.entries}
    assert actions["top.md"] == "overwrite" and actions["docs/b.txt"] == "delete"
    assert actions["docs/a.txt"] == "skip"
    assert "1 to delete" in plan.summary() and plan.to_json()["to_delete"] == 1


def test_dry_run_estimate_uses_the_throughput_stored_by_the_last_run(seeded, tmp_path):
    import sqlite3

    emu, _ = seeded
    target = tmp_path / "t"
    sync_from_platform(emu.project_id, target, platform=platform_for(emu))
    meta_dir = target / ".synclient"
    db = sqlite3.connect(meta_dir / "index.sqlite")
    try:
        stored = dict(db.execute("SELECT key, value FROM meta WHERE key LIKE '%_per_second'"))
    finally:
        db.close()
    assert set(stored) == {"bytes_per_second", "files_per_second"}
    edit(target / "top.md", "changed\n")
    before = local_tree(target, metadata=True), sorted(p.name for p in meta_dir.iterdir())
    plan = sync_from_platform(emu.project_id, target, platform=platform_for(emu), dry_run=True)
    assert (local_tree(target, metadata=True), sorted(p.name for p in meta_dir.iterdir())) == before
    assert plan.bytes_per_second == float(stored["bytes_per_second"])
    assert plan.files_per_second == float(stored["files_per_second"])
    # the larger of the real run's REST calls under the limits and its bytes at the stored rate
    assert len(plan.fetch_entries) == 1 and plan.estimate_seconds == pytest.approx(
        max(plan.limits.seconds_for(plan.rest_calls), plan.bytes_to_fetch / float(stored["bytes_per_second"]))
    )


def test_a_second_sync_into_the_same_folder_fails_fast(seeded, tmp_path):
    emu, _ = seeded
    from synclient.sync.records.index import LocalIndex

    holder = LocalIndex(Path(os.path.realpath(tmp_path))).open()
    try:
        emu.reset_stats()
        with pytest.raises(SyncLockedError, match="another sync"):
            sync_from_platform(emu.project_id, tmp_path, platform=platform_for(emu))
        stats = emu.stats()
        # fast, counted in calls rather than seconds: refused before the walk (the root's type is its one call)
        assert stats["api_requests"] <= 1 and stats["data_requests"] == 0, stats
    finally:
        holder.close()
    sync_from_platform(emu.project_id, tmp_path, platform=platform_for(emu))


def test_links_are_followed_with_cycle_protection_and_versions_pinned(emulator, tmp_path):
    spec = {
        "projects": [
            {
                "name": "p",
                "children": [
                    {
                        "type": "folder",
                        "name": "d",
                        "children": [
                            {"type": "file", "name": "a.txt", "content": "A"},
                            {"type": "link", "name": "up", "target": "d"},
                        ],
                    },
                    {"type": "file", "name": "v.txt", "versions": [{"content": "one"}, {"content": "two"}]},
                    {"type": "link", "name": "a-link.txt", "target": "d/a.txt"},
                    {"type": "link", "name": "d-link", "target": "d"},
                ],
            }
        ]
    }
    project = emulator.seed_spec(spec)["p"]
    platform = platform_for(emulator)
    plain = sync_from_platform(project, tmp_path / "plain", platform=platform)
    assert sorted(local_tree(tmp_path / "plain")) == ["d/a.txt", "v.txt"] and len(plain) == 2
    results = sync_from_platform(project, tmp_path / "links", platform=platform, follow_links=True, on_error="continue")
    assert sorted(local_tree(tmp_path / "links")) == ["a-link.txt", "d-link/a.txt", "d/a.txt", "v.txt"]
    cycles = [r for r in results if r.status is SyncStatus.FAILED]
    assert len(cycles) == 2 and all("cycle" in str(r.error) for r in cycles)  # d/up and d-link/up
    v = emulator.resolve(project, "v.txt")
    sync_from_platform(f"{v}.1", tmp_path / "pinned", platform=platform)
    assert (tmp_path / "pinned" / "v.txt").read_text() == "one"


def test_manifest_lists_files_with_annotations_in_every_folder(emulator, tmp_path):
    spec = {
        "projects": [
            {
                "name": "p",
                "children": [
                    {
                        "type": "folder",
                        "name": "d",
                        "children": [
                            {
                                "type": "file",
                                "name": "a.txt",
                                "content": "A",
                                "annotations": {"tissue": ["brain"], "n": [3]},
                            }
                        ],
                    },
                    {"type": "file", "name": "b.txt", "content": "B", "annotations": {"tags": ["x", "y,z"]}},
                ],
            }
        ]
    }
    project = emulator.seed_spec(spec)["p"]
    sync_from_platform(project, tmp_path, platform=platform_for(emulator))
    root_rows = _read_manifest(tmp_path / MANIFEST)
    assert list(root_rows[0]) == [
        "path",
        "parent",
        "name",
        "id",
        "synapseStore",
        "contentType",
        "used",
        "executed",
        "activityName",
        "activityDescription",
        "n",
        "tags",
        "tissue",
    ]
    by_name = {r["name"]: r for r in root_rows}
    assert by_name["a.txt"]["tissue"] == "brain" and by_name["a.txt"]["n"] == "3"
    assert by_name["b.txt"]["tags"] == '[x,"y,z"]'
    assert by_name["a.txt"]["path"] == str(Path(os.path.realpath(tmp_path)) / "d" / "a.txt")
    assert [r["name"] for r in _read_manifest(tmp_path / "d" / MANIFEST)] == ["a.txt"]
    again = tmp_path / "again"
    sync_from_platform(project, again, platform=platform_for(emulator), manifest="root")
    assert (again / MANIFEST).exists() and not (again / "d" / MANIFEST).exists()
    # the zero-call re-sync still writes the annotations it indexed
    emulator.reset_stats()
    sync_from_platform(project, again, platform=platform_for(emulator), manifest="root")
    assert "POST /repo/v1/entity/{id}/version/{v}/bundle2" not in emulator.stats()["api_by_route"]
    assert {r["name"]: r["tissue"] for r in _read_manifest(again / MANIFEST)}["a.txt"] == "brain"


def _read_manifest(path: Path):
    import csv

    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))


_INTERRUPTED = textwrap.dedent("""
    import sys
    from synclient import Platform, sync_from_platform
    endpoint, token, entity, target = sys.argv[1:5]
    sync_from_platform(entity, target, platform=Platform(endpoint=endpoint, token=token), max_workers=4)
""")


def test_interrupted_first_sync_then_rerun_does_not_download_finished_files_again(tmp_path):
    tree = Tree()
    for f in range(4):
        folder = tree.folder(tree.children, f"d{f}")
        for i in range(50):
            tree.seeded_file(folder, f"d{f}/", f"x{i}.bin", 200_000)
    with Emulator(bandwidth_per_conn=5 * 10**6) as emu:
        project = emu.seed_spec(tree.spec())["p"]
        child = subprocess.Popen([sys.executable, "-c", _INTERRUPTED, emu.endpoint, emu.token, project, str(tmp_path)])
        deadline = time.monotonic() + 60
        while emu.stats()["data_requests"] < 60 and time.monotonic() < deadline:
            time.sleep(0.05)
        child.send_signal(signal.SIGKILL)
        child.wait()
        finished_before = {p for p in local_tree(tmp_path) if not p.endswith(".synclient-partial")}
        assert 0 < len(finished_before) < tree.file_count
        emu.reset_stats()
        emu.set_knobs(bandwidth_per_conn=0)
        results = sync_from_platform(project, tmp_path, platform=platform_for(emu))
        downloaded = {
            r.path.relative_to(Path(os.path.realpath(tmp_path))).as_posix()
            for r in results
            if r.status is SyncStatus.DOWNLOADED
        }
    assert not downloaded & finished_before
    assert_tree_matches(tmp_path, tree.expected)
