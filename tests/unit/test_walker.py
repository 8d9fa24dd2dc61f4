"""The tree walk (synclient.sync.sources.walker.TreeWalker) on the real TaskPool against an in-process tree: every
children page is listed exactly once, files come out with their local paths, a folder that cannot be listed is
reported and left unvisited while its siblings go on, filters prune before any call, a cancelled pool lists no
more, and names a filesystem cannot hold are mapped over the whole folder."""

from __future__ import annotations

import collections
import threading
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest
from tree_support import ROOT, ROOT_ID, FakeTree

from synclient.errors import AccessDeniedError, FileInTheWayError, MalformedAnswerError, SynclientError, UnsafePathError
from synclient.platform.models import EntityHeader
from synclient.sync.local.local_names import FilesystemNames
from synclient.sync.local.paths import TargetDirectory
from synclient.sync.plan.filters import PathFilter
from synclient.sync.sources.walker import FoundFile, TreeWalker
from synclient.transfer.pool import TaskPool


class Walk:
    """One walk of ``tree`` into ``target``: the files found (each page's batch) and the failures reported."""

    def __init__(self, tree: FakeTree, target: Path, *, workers: int = 1, create: bool = True, **walker_options):
        self.tree = tree
        self.target = TargetDirectory(target, create=create)
        self.pool = TaskPool(workers)
        self.batches: List[List[FoundFile]] = []
        self.failures: List[Tuple[EntityHeader, Optional[Path], SynclientError]] = []
        self._lock = threading.Lock()
        self.walker = TreeWalker(
            platform=tree,
            pool=self.pool,
            target=self.target,
            on_files=self._files,
            on_failure=self._failed,
            **walker_options,
        )

    def _files(self, files: List[FoundFile]) -> None:
        with self._lock:
            self.batches.append(list(files))

    def _failed(self, header: EntityHeader, path: Optional[Path], error: SynclientError) -> None:
        with self._lock:
            self.failures.append((header, path, error))

    def run(self) -> Walk:
        self.walker.walk(ROOT, self.target.root)
        self.pool.run()
        assert not self.pool.unexpected_errors
        return self

    @property
    def found(self) -> Dict[str, FoundFile]:
        """rel path -> file (each found once: a second finding of one path fails the test)."""
        files = [file for batch in self.batches for file in batch]
        paths = [file.rel_path for file in files]
        assert len(paths) == len(set(paths)), f"a file was found twice: {sorted(paths)}"
        return {file.rel_path: file for file in files}

    @property
    def failed(self) -> Dict[str, SynclientError]:
        return {header.name: error for header, _, error in self.failures}


def _calls_per_page(tree: FakeTree) -> collections.Counter:
    return collections.Counter(tree.listing_calls)


def _sample(tree: FakeTree) -> Dict[str, EntityHeader]:
    """project/ a.txt b.txt c.txt data/ (x.csv y.csv z.tmp deep/ (w.csv)) empty/"""
    made = {name: tree.file(ROOT_ID, name) for name in ("a.txt", "b.txt", "c.txt")}
    data = made["data"] = tree.folder(ROOT_ID, "data")
    for name in ("x.csv", "y.csv", "z.tmp"):
        made[f"data/{name}"] = tree.file(data.id, name)
    deep = made["data/deep"] = tree.folder(data.id, "deep")
    made["data/deep/w.csv"] = tree.file(deep.id, "w.csv")
    made["empty"] = tree.folder(ROOT_ID, "empty")
    return made


# -- paging and call counts --------------------------------------------------------------------------------------


@pytest.mark.parametrize("workers", [1, 4])
def test_every_page_of_every_folder_is_listed_exactly_once(tmp_path, workers):
    tree = FakeTree(page_size=2)
    made = _sample(tree)
    walk = Walk(tree, tmp_path / "t", workers=workers).run()

    expected_pages = {
        (ROOT_ID, None),
        (ROOT_ID, "2"),
        (ROOT_ID, "4"),  # 5 children: 3 pages
        (made["data"].id, None),
        (made["data"].id, "2"),  # 4 children: 2 pages
        (made["data/deep"].id, None),
        (made["empty"].id, None),
    }  # 1 page each, one of them empty
    calls = _calls_per_page(tree)
    assert set(calls) == expected_pages
    assert all(count == 1 for count in calls.values()), calls
    assert len(tree.listing_calls) == sum(
        tree.pages_of(folder) for folder in (ROOT_ID, made["data"].id, made["data/deep"].id, made["empty"].id)
    )
    assert not walk.failures
    assert tree.entity_calls == []  # a walk without links asks for nothing but children


def test_files_carry_their_destination_remote_path_and_listing_folder(tmp_path):
    tree = FakeTree(page_size=2)
    made = _sample(tree)
    walk = Walk(tree, tmp_path / "t").run()
    root = walk.target.root

    found = walk.found
    assert sorted(found) == ["a.txt", "b.txt", "c.txt", "data/deep/w.csv", "data/x.csv", "data/y.csv", "data/z.tmp"]
    w = found["data/deep/w.csv"]
    assert w.header == made["data/deep/w.csv"]
    assert w.destination == root / "data" / "deep" / "w.csv"
    assert w.parent_id == made["data/deep"].id
    assert w.renamed == ""
    assert found["a.txt"].parent_id == ROOT_ID
    # the folders are made locally as they are listed; files are the runner's to write
    assert (root / "data" / "deep").is_dir() and (root / "empty").is_dir()
    assert not (root / "a.txt").exists()


def test_a_page_of_files_is_handed_over_together(tmp_path):
    tree = FakeTree(page_size=3)
    for name in ("a", "b", "c", "d"):
        tree.file(ROOT_ID, name)
    walk = Walk(tree, tmp_path / "t").run()
    assert [[file.rel_path for file in batch] for batch in walk.batches] == [["a", "b", "c"], ["d"]]


def test_what_the_walk_records_about_folders(tmp_path):
    tree = FakeTree(page_size=2)
    made = _sample(tree)
    walk = Walk(tree, tmp_path / "t").run()
    root = walk.target.root
    assert walk.walker.listed == {
        "": root,
        "data": root / "data",
        "data/deep": root / "data" / "deep",
        "empty": root / "empty",
    }
    assert walk.walker.folder_ids == {
        "data": made["data"].id,
        "data/deep": made["data/deep"].id,
        "empty": made["empty"].id,
    }
    assert walk.walker.unvisited == set()


# -- failures ----------------------------------------------------------------------------------------------------


def test_a_folder_that_cannot_be_listed_is_reported_and_unvisited_while_its_siblings_go_on(tmp_path):
    tree = FakeTree(page_size=2)
    made = _sample(tree)
    tree.denied.add(made["data"].id)
    walk = Walk(tree, tmp_path / "t", workers=3).run()

    assert sorted(walk.found) == ["a.txt", "b.txt", "c.txt"]
    [(header, path, error)] = walk.failures
    assert header == made["data"] and path == walk.target.root / "data"
    assert isinstance(error, AccessDeniedError)
    assert walk.walker.unvisited == {"data"}  # the deletion pass must not take its files for vanished
    assert "data" not in walk.walker.listed and "empty" in walk.walker.listed
    assert (made["data"].id, "2") not in tree.listing_calls  # no page after a refused one


def test_a_listing_that_fails_midway_keeps_what_came_but_leaves_the_folder_unlisted(tmp_path):
    tree = FakeTree(page_size=2)
    made = _sample(tree)
    tree.denied_pages.add((made["data"].id, "2"))
    walk = Walk(tree, tmp_path / "t").run()

    assert "data/deep" not in walk.found and "data/x.csv" in walk.found and "data/z.tmp" not in walk.found
    assert walk.walker.unvisited == {"data"}
    assert "data" not in walk.walker.listed
    assert [header.id for header, _, _ in walk.failures] == [made["data"].id]


@pytest.mark.parametrize("names", [FilesystemNames(), FilesystemNames(case_insensitive=True)])
def test_a_listing_that_repeats_its_next_page_token_ends_as_a_failure_of_its_folder(tmp_path, names):
    tree = FakeTree(page_size=2)
    made = _sample(tree)
    tree.stuck.add(made["data"].id)
    walk = Walk(tree, tmp_path / "t", names=names).run()

    assert _calls_per_page(tree)[(made["data"].id, None)] == 1
    assert _calls_per_page(tree)[(made["data"].id, "again")] == 1  # the repeat is seen on the 2nd page: no 3rd
    assert isinstance(walk.failed["data"], MalformedAnswerError)
    assert walk.walker.unvisited == {"data"} and "data" not in walk.walker.listed
    assert sorted(walk.found)[:3] == ["a.txt", "b.txt", "c.txt"] and "empty" in walk.walker.listed


def test_a_name_that_can_be_no_local_name_fails_its_entity_only(tmp_path):
    tree = FakeTree(page_size=10)
    tree.file(ROOT_ID, "ok.txt")
    tree.file(ROOT_ID, "..")
    bad_folder = tree.folder(ROOT_ID, ".synclient")  # the index's folder at the target's top
    tree.file(bad_folder.id, "inside.txt")
    walk = Walk(tree, tmp_path / "t").run()

    assert sorted(walk.found) == ["ok.txt"]
    assert set(walk.failed) == {"..", ".synclient"}
    assert all(isinstance(error, UnsafePathError) for error in walk.failed.values())
    assert walk.walker.unvisited == {".synclient"}  # a refused folder: not listed, its files not vanished
    assert (bad_folder.id, None) not in tree.listing_calls


def test_a_file_where_the_remote_has_a_folder_fails_unless_make_room_removes_it(tmp_path):
    tree = FakeTree()
    folder = tree.folder(ROOT_ID, "data")
    tree.file(folder.id, "x.csv")
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "data").write_text("a user's file")
    asked: List[Tuple[str, Path]] = []

    def refuse(rel_path: str, path: Path) -> bool:
        asked.append((rel_path, path))
        return False

    walk = Walk(tree, tmp_path / "t", make_room=refuse).run()
    assert asked == [("data", walk.target.root / "data")]
    assert isinstance(walk.failed["data"], FileInTheWayError)
    assert walk.found == {} and walk.walker.unvisited == {"data"}
    assert (tmp_path / "t" / "data").read_text() == "a user's file"

    def remove(rel_path: str, path: Path) -> bool:
        path.unlink()
        return True

    tree.listing_calls.clear()
    walk = Walk(tree, tmp_path / "t", make_room=remove).run()
    assert sorted(walk.found) == ["data/x.csv"] and not walk.failures
    assert (tmp_path / "t" / "data").is_dir()


def test_a_dry_run_walks_on_below_a_file_it_would_remove(tmp_path):
    tree = FakeTree()
    folder = tree.folder(ROOT_ID, "data")
    tree.file(folder.id, "x.csv")
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "data").write_text("synclient's own")
    walk = Walk(tree, tmp_path / "t", create=False, make_room=lambda rel, path: True).run()
    assert sorted(walk.found) == ["data/x.csv"]
    assert (tmp_path / "t" / "data").read_text() == "synclient's own"  # a dry run creates and removes nothing


# -- filters -----------------------------------------------------------------------------------------------------


def test_an_excluded_file_is_not_handed_over_and_an_excluded_folder_is_not_listed(tmp_path):
    tree = FakeTree(page_size=2)
    made = _sample(tree)
    walk = Walk(tree, tmp_path / "t", path_filter=PathFilter.build(exclude=["*.tmp", "deep"])).run()

    assert sorted(walk.found) == ["a.txt", "b.txt", "c.txt", "data/x.csv", "data/y.csv"]
    assert (made["data/deep"].id, None) not in tree.listing_calls  # pruned: no call at all
    assert walk.walker.folder_ids["data/deep"] == made["data/deep"].id  # found, though not listed
    assert "data/deep" not in walk.walker.listed
    assert not (walk.target.root / "data" / "deep").exists()


def test_an_include_pattern_prunes_the_folders_it_cannot_reach(tmp_path):
    tree = FakeTree(page_size=2)
    made = _sample(tree)
    walk = Walk(tree, tmp_path / "t", path_filter=PathFilter.build(include=["data/*.csv"])).run()

    assert sorted(walk.found) == ["data/deep/w.csv", "data/x.csv", "data/y.csv"]  # '*' crosses '/'
    listed = {parent for parent, _ in tree.listing_calls}
    assert made["empty"].id not in listed and made["data/deep"].id in listed


# -- cancellation --------------------------------------------------------------------------------------------------


def test_a_cancelled_pool_lists_nothing_more(tmp_path):
    tree = FakeTree(page_size=2)
    _sample(tree)
    pool_holder: List[TaskPool] = []

    walk = Walk(tree, tmp_path / "t", workers=1)
    pool_holder.append(walk.pool)
    original = walk._files

    def cancel_after_first_page(files: List[FoundFile]) -> None:
        original(files)
        pool_holder[0].cancel(grace_seconds=0)  # as a fatal error does (AppliedEffects's on_fatal)

    walk.walker._on_files = cancel_after_first_page
    walk.run()
    assert tree.listing_calls == [(ROOT_ID, None)]  # its next page was queued, never listed
    assert [file.rel_path for batch in walk.batches for file in batch] == ["a.txt", "b.txt"]
    assert "" not in walk.walker.listed


# -- links -----------------------------------------------------------------------------------------------------------


def test_a_followed_link_appears_under_its_own_name_and_a_cycle_is_refused(tmp_path):
    tree = FakeTree(page_size=10)
    data = tree.folder(ROOT_ID, "data")
    target_file = tree.file(data.id, "x.csv", version=3)
    tree.link(ROOT_ID, "alias.csv", target_file.id)
    tree.link(data.id, "up", ROOT_ID)  # leads back to a folder above it
    walk = Walk(tree, tmp_path / "t", follow_links=True).run()

    found = walk.found
    assert sorted(found) == ["alias.csv", "data/x.csv"]
    assert found["alias.csv"].header.id == target_file.id and found["alias.csv"].header.version_number == 3
    assert found["alias.csv"].destination == walk.target.root / "alias.csv"
    assert isinstance(walk.failed["up"], UnsafePathError) and "cycle" in str(walk.failed["up"])
    assert "data/up" in walk.walker.unvisited


def test_links_are_not_asked_for_unless_followed(tmp_path):
    tree = FakeTree()
    target_file = tree.file(ROOT_ID, "x.csv")
    tree.link(ROOT_ID, "alias.csv", target_file.id)
    walk = Walk(tree, tmp_path / "t").run()
    assert sorted(walk.found) == ["x.csv"] and tree.entity_calls == []


# -- names a filesystem cannot hold, and manifests ------------------------------------------------------------------


def test_case_twins_on_different_pages_get_distinct_local_names(tmp_path):
    tree = FakeTree(page_size=1)
    tree.file(ROOT_ID, "A.txt", entity_id="syn20")
    tree.file(ROOT_ID, "a.txt", entity_id="syn30")  # the younger twin: named with its id
    walk = Walk(tree, tmp_path / "t", names=FilesystemNames(case_insensitive=True)).run()

    found = walk.found
    root = walk.target.root
    assert found["A.txt"].destination == root / "A.txt" and found["A.txt"].renamed == ""
    assert found["a.txt"].destination == root / "a (syn30).txt" and found["a.txt"].renamed
    assert len(walk.batches) == 1  # the folder's files come together once its last page is in
    assert collections.Counter(tree.listing_calls) == {(ROOT_ID, None): 1, (ROOT_ID, "1"): 1}


def test_a_remote_entity_named_like_a_manifest_takes_its_path(tmp_path):
    tree = FakeTree()
    folder = tree.folder(ROOT_ID, "data")
    tree.file(folder.id, "MANIFEST.CSV")
    tree.file(ROOT_ID, "SYNAPSE_METADATA_MANIFEST.tsv")
    walk = Walk(tree, tmp_path / "t", names=FilesystemNames(case_insensitive=True)).run()
    root = walk.target.root
    assert walk.walker.manifest_taken == {root / "SYNAPSE_METADATA_MANIFEST.tsv", root / "data" / "MANIFEST.CSV"}

    tree.listing_calls.clear()
    walk = Walk(tree, tmp_path / "u").run()  # a case-sensitive disk: "MANIFEST.CSV" is not "manifest.csv"
    assert walk.walker.manifest_taken == {walk.target.root / "SYNAPSE_METADATA_MANIFEST.tsv"}
