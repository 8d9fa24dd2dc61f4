"""A dry run's bytes from the listing (synclient/sync/plan/folder_bytes.py): a folder's sum less what its other files
hold, and the folders that cannot tell. The sums are a server's word: one that lies never makes a size negative."""

from __future__ import annotations

from synclient.sync.plan.dry_run import SyncPlan
from synclient.sync.plan.folder_bytes import FolderBytes, UnsizedFile, folder_of


def _listed(sizes: FolderBytes, rel_dir: str, total, known=(), unsized=()) -> None:
    sizes.page_listed(rel_dir, total)
    sizes.listed(rel_dir)
    for size in known:
        sizes.known(rel_dir, size)
    for name in unsized:
        sizes.unsized(rel_dir, UnsizedFile(f"{rel_dir}/{name}" if rel_dir else name, "syn1", 1))


def test_one_file_gets_its_folders_rest_and_several_share_it():
    sizes = FolderBytes()
    _listed(sizes, "a", 100, known=[30, None], unsized=["new.txt"])
    _listed(sizes, "b", 50, known=[10], unsized=["x", "y"])
    settled = sizes.settle()
    assert settled.sizes == {"a/new.txt": 70} and settled.bytes_of_several == 40 and settled.to_size == []
    assert not sizes.pending() and sizes.settle().sizes == {}  # each folder once


def test_a_sum_smaller_than_the_known_files_is_no_negative_size():
    sizes = FolderBytes()
    _listed(sizes, "", 5, known=[100], unsized=["one"])
    _listed(sizes, "d", 0, known=[7], unsized=["x", "y"])
    settled = sizes.settle()
    assert settled.sizes == {"one": 0} and settled.bytes_of_several == 0


def test_folders_that_cannot_tell_size_their_files_one_by_one():
    sizes = FolderBytes()
    _listed(sizes, "no-sum", None, unsized=["a"])  # the server did not say it
    _listed(sizes, "filtered", 10, unsized=["b"])
    sizes.left_out("filtered")  # a file the sum holds and no one sizes
    sizes.page_listed("broken", 10)  # a page failed: never listed to its end
    sizes.unsized("broken", UnsizedFile("broken/c", "syn3", 1))
    settled = sizes.settle()
    assert sorted(file.rel_path for file in settled.to_size) == ["broken/c", "filtered/b", "no-sum/a"]
    assert settled.sizes == {} and settled.bytes_of_several == 0


def test_the_largest_sum_a_server_may_state_is_shown_not_a_crash():
    plan = SyncPlan(listed_bytes=2**63 - 1)
    assert "8.0 EiB" in plan.summary() and "estimated" in plan.summary() and "8.0 EiB" in repr(plan)


def test_folder_of():
    assert (folder_of("a/b/c.txt"), folder_of("c.txt")) == ("a/b", "")
