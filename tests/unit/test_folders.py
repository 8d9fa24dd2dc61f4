"""The checked-path folders of systems without ``dir_fd`` (issue 18): a symlink on the way is refused, a folder
swapped after it was opened is not touched, and deletion never reaches outside the target. Run on every system."""

from __future__ import annotations

import dataclasses
import os
import stat
from types import SimpleNamespace

import pytest

from synclient import portable
from synclient.errors import UnsafePathError
from synclient.sync.deletion import clear_folder
from synclient.sync.local.folders import CheckedPathFolder, is_link
from synclient.sync.local.paths import TargetDirectory


@pytest.fixture
def target(tmp_path, monkeypatch):
    monkeypatch.setattr(portable, "CAPABILITIES", dataclasses.replace(portable.CAPABILITIES, dir_fd=False))
    (tmp_path / "t" / "d" / "e").mkdir(parents=True)
    (tmp_path / "t" / "d" / "e" / "f.txt").write_text("ours")
    (tmp_path / "outside" / "e").mkdir(parents=True)
    (tmp_path / "outside" / "e" / "f.txt").write_text("not ours")
    (tmp_path / "outside" / "f.txt").write_text("not ours")
    return TargetDirectory(tmp_path / "t")


def _outside_intact(tmp_path):
    return (tmp_path / "outside" / "f.txt").read_text() == "not ours" and (
        tmp_path / "outside" / "e" / "f.txt"
    ).read_text() == "not ours"


def test_open_folder_gives_the_checked_path_fallback(target):
    with target.open_folder("d/e") as held:
        assert isinstance(held, CheckedPathFolder)
        assert held.listdir() == ["f.txt"] and stat.S_ISREG(held.lstat("f.txt").st_mode)


def test_a_symlink_on_the_way_is_refused_at_every_depth(target, tmp_path):
    os.rename(target.root / "d", tmp_path / "moved")
    os.symlink(tmp_path / "outside", target.root / "d")
    for rel in ("d", "d/e"):
        with pytest.raises(UnsafePathError, match="symlink"):
            target.open_folder(rel)
    assert target.lstat_inside("x") is None  # the root itself is fine
    with pytest.raises(UnsafePathError):
        target.lstat_inside("d/e/f.txt")
    assert _outside_intact(tmp_path)


def test_missing_folders_and_files_in_their_place_are_not_found(target):
    with pytest.raises(FileNotFoundError):
        target.open_folder("nope/deeper")
    with pytest.raises(FileNotFoundError):
        target.open_folder("d/e/f.txt")  # a file where a folder was
    with pytest.raises(FileNotFoundError):
        target.open_folder("d/e/f.txt/below")


def test_a_folder_swapped_for_a_symlink_after_it_was_opened_is_not_touched(target, tmp_path):
    held = target.open_folder("d/e")
    os.rename(target.root / "d", tmp_path / "moved")
    os.symlink(tmp_path / "outside", target.root / "d")  # the same names now lead outside
    for call in (held.listdir, lambda: held.lstat("f.txt"), lambda: held.unlink("f.txt"), lambda: held.rmdir("f.txt")):
        with pytest.raises(UnsafePathError):
            call()
    assert _outside_intact(tmp_path)


def test_a_folder_replaced_by_another_plain_folder_after_it_was_opened_is_not_touched(target, tmp_path):
    held = target.open_folder("d/e")
    os.rename(target.root / "d" / "e", tmp_path / "moved")
    (target.root / "d" / "e").mkdir()
    (target.root / "d" / "e" / "f.txt").write_text("someone else's")
    with pytest.raises(UnsafePathError, match="replaced"):
        held.unlink("f.txt")
    assert (target.root / "d" / "e" / "f.txt").read_text() == "someone else's"


def test_unlink_inside_removes_the_file_and_never_one_outside(target, tmp_path):
    info = target.lstat_inside("d/e/f.txt")
    assert info is not None and target.unlink_inside("d/e/f.txt", expected=info)
    assert not (target.root / "d" / "e" / "f.txt").exists()
    (target.root / "d" / "e" / "f.txt").write_text("ours again")
    info = target.lstat_inside("d/e/f.txt")
    os.rename(target.root / "d", tmp_path / "moved")
    os.symlink(tmp_path / "outside", target.root / "d")
    with pytest.raises(UnsafePathError):
        target.unlink_inside("d/e/f.txt", expected=info)
    assert _outside_intact(tmp_path)


def test_clearing_a_folder_stops_at_a_symlink_and_removes_nothing_outside(target, tmp_path):
    os.symlink(tmp_path / "outside", target.root / "d" / "e" / "link")
    (target.root / "d" / "e" / "f.txt").unlink()
    assert not clear_folder(target, "d")  # the symlink is not ours: the folder stays
    assert os.path.islink(target.root / "d" / "e" / "link") and _outside_intact(tmp_path)
    (target.root / "d" / "e" / "link").unlink()
    assert clear_folder(target, "d") and not (target.root / "d").exists()


def test_remove_empty_folders_goes_up_to_the_first_folder_with_content(target):
    (target.root / "d" / "e" / "g" / "h").mkdir(parents=True)
    target.remove_empty_folders("d/e/g/h")
    assert not (target.root / "d" / "e" / "g").exists() and (target.root / "d" / "e" / "f.txt").exists()


def test_a_windows_reparse_point_counts_as_a_link():
    junction = SimpleNamespace(st_mode=stat.S_IFDIR | 0o755, st_file_attributes=stat.FILE_ATTRIBUTE_REPARSE_POINT)
    plain = SimpleNamespace(st_mode=stat.S_IFDIR | 0o755, st_file_attributes=stat.FILE_ATTRIBUTE_DIRECTORY)
    assert is_link(junction) and not is_link(plain)
    assert is_link(SimpleNamespace(st_mode=stat.S_IFLNK | 0o777))
