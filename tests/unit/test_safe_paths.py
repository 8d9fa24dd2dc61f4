"""Paths used to delete are reached without following symlinks; filters prune what cannot match (issue 12)."""

from __future__ import annotations

import dataclasses
import os

import pytest

from synclient import portable
from synclient.errors import FileInTheWayError, UnsafePathError
from synclient.sync.deletion import is_under_any
from synclient.sync.local.paths import TargetDirectory, validate_name
from synclient.sync.plan.filters import PathFilter


@pytest.fixture(params=["dir_fd", "checked path"])
def target(request, tmp_path, monkeypatch):
    """Each test twice: folders reached by descriptor (``dir_fd``, where the system has it) and by checked path
    (the fallback of systems without ``dir_fd``, as on Windows)."""
    by_descriptor = request.param == "dir_fd"
    if by_descriptor and not portable.offered().dir_fd:
        pytest.skip("no dir_fd on this system")
    monkeypatch.setattr(portable, "CAPABILITIES", dataclasses.replace(portable.CAPABILITIES, dir_fd=by_descriptor))
    (tmp_path / "t" / "d").mkdir(parents=True)
    (tmp_path / "t" / "d" / "f.txt").write_text("ours")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "f.txt").write_text("not ours")
    return TargetDirectory(tmp_path / "t")


def test_unlink_inside_removes_the_file_it_was_shown(target):
    info = target.lstat_inside("d/f.txt")
    assert info is not None and target.unlink_inside("d/f.txt", expected=info)
    assert not (target.root / "d" / "f.txt").exists()
    assert target.lstat_inside("d/f.txt") is None


def test_unlink_inside_refuses_a_file_that_changed_since_it_was_checked(target):
    info = target.lstat_inside("d/f.txt")
    (target.root / "d" / "f.txt").unlink()
    (target.root / "d" / "f.txt").write_text("a new file by the user")
    assert not target.unlink_inside("d/f.txt", expected=info)
    assert (target.root / "d" / "f.txt").read_text() == "a new file by the user"


def test_a_symlinked_folder_on_the_way_is_never_followed(target, tmp_path):
    info = target.lstat_inside("d/f.txt")
    os.rename(target.root / "d", tmp_path / "moved")
    os.symlink(tmp_path / "outside", target.root / "d")  # swapped in after the check
    with pytest.raises(UnsafePathError, match="symlink"):
        target.unlink_inside("d/f.txt", expected=info)
    with pytest.raises(UnsafePathError):
        target.lstat_inside("d/f.txt")
    assert (tmp_path / "outside" / "f.txt").read_text() == "not ours"


def test_a_final_symlink_is_not_followed(target, tmp_path):
    os.symlink(tmp_path / "outside" / "f.txt", target.root / "link.txt")
    info = target.lstat_inside("link.txt")
    assert info is not None and os.path.islink(target.root / "link.txt")
    assert not target.unlink_inside("link.txt", expected=info)  # not a regular file: not ours to remove
    assert (tmp_path / "outside" / "f.txt").read_text() == "not ours"


def test_a_file_where_a_folder_was_reads_as_absent(target):
    (target.root / "d" / "f.txt").unlink()
    (target.root / "d").rmdir()
    (target.root / "d").write_text("a file now")
    assert target.lstat_inside("d/f.txt") is None


def test_make_folder_refuses_symlinks_inside_and_outside_and_names_a_file_in_the_way(target, tmp_path):
    os.symlink(target.root / "d", target.root / "inside")
    os.symlink(tmp_path / "outside", target.root / "out")
    (target.root / "file").write_text("x")
    with pytest.raises(UnsafePathError, match="inside the target"):
        target.make_folder(target.root, "inside")
    with pytest.raises(UnsafePathError, match="outside the target"):
        target.make_folder(target.root, "out")
    with pytest.raises(FileInTheWayError):
        target.make_folder(target.root, "file")


def test_remove_empty_folders_stops_at_a_folder_with_content(target):
    (target.root / "d" / "e" / "g").mkdir(parents=True)
    target.remove_empty_folders("d/e/g")
    assert not (target.root / "d" / "e").exists() and (target.root / "d" / "f.txt").exists()


def test_names_that_are_not_valid_unicode_are_refused():
    with pytest.raises(UnsafePathError, match="Unicode"):
        validate_name("bad\ud800name")


@pytest.mark.parametrize(
    "rel, folders, expected",
    [
        ("a/b/c.txt", {"a"}, True),
        ("a/b/c.txt", {"a/b"}, True),
        ("a/b/c.txt", {"a/b/c.txt"}, False),
        ("a/b/c.txt", {"b"}, False),
        ("ab/c.txt", {"a"}, False),
        ("x.txt", {""}, True),
        ("x.txt", set(), False),
    ],
)
def test_is_under_any(rel, folders, expected):
    assert is_under_any(rel, folders) is expected


@pytest.mark.parametrize(
    "include, folder, pruned",
    [
        (["a/*"], "a", False),
        (["a/*"], "b", True),
        (["a/*"], "ab", True),
        (["a/*"], "a/x", False),
        (["data/raw/*.csv"], "data", False),
        (["data/raw/*.csv"], "data/raw/deeper", False),
        (["data/raw/*.csv"], "data/other", True),
        (["*.csv"], "anything", False),
        (["d*/x"], "other", True),
        (["d*/x"], "dz", False),
        ([], "anything", False),
    ],
)
def test_include_patterns_prune_only_folders_they_cannot_match_below(include, folder, pruned):
    assert PathFilter.build(include).prunes_folder(folder) is pruned
