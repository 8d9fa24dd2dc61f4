import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from synclient.errors import UnsafePathError
from synclient.sync.local.paths import TargetDirectory, validate_name
from synclient.transfer.partial import SymlinkFreeFolders


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "/etc", "..\\x", "a\x00b", "x" * 256, "\\"])
def test_unsafe_names_are_refused(name):
    with pytest.raises(UnsafePathError):
        validate_name(name)


@pytest.mark.parametrize("name", ["a.txt", "...", "..a", "Straße", "a b", "CON", "x" * 255])
def test_plain_names_pass(name):
    assert validate_name(name) == name


@given(st.text(min_size=1, max_size=80))
def test_any_accepted_name_stays_one_component_inside_the_target(tmp_path_factory, name):
    root = tmp_path_factory.mktemp("t")
    target = TargetDirectory(root)
    try:
        path = target.child(target.root, name)
    except UnsafePathError:
        return
    assert path.parent == target.root
    assert os.path.normpath(path) == str(path)
    assert target.contains(path)


def test_symlinked_folder_leading_out_is_not_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "root"
    root.mkdir()
    (root / "d").symlink_to(outside)
    target = TargetDirectory(root)
    with pytest.raises(UnsafePathError):
        target.make_folder(target.root, "d")
    with pytest.raises(UnsafePathError):
        target.check_file_destination(target.root / "d" / "f.txt")


def test_target_that_is_a_file_is_a_clear_error(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(OSError, match="not a directory"):
        TargetDirectory(tmp_path / "f")


def test_file_destination_check_with_held_folders_refuses_what_realpath_refuses(tmp_path):
    target = TargetDirectory(tmp_path / "t")
    outside = tmp_path / "outside"
    outside.mkdir()
    folders = SymlinkFreeFolders()
    try:
        d = target.make_folder(target.root, "d")
        for _ in range(2):  # the second check reads the held folder's path
            target.check_file_destination(d / "f.txt", folders)
        d.rmdir()
        d.symlink_to(outside)  # swapped for a symlink leading out after it was held
        with pytest.raises(UnsafePathError):
            target.check_file_destination(d / "f.txt", folders)
        with pytest.raises(UnsafePathError):
            target.check_file_destination(outside / "f.txt", folders)  # plain, but not in the target
    finally:
        folders.close()
