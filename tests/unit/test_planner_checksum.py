"""The planner with ``checksum`` (get --checksum): our own untouched copy is hashed, not trusted by its stat; a handle
without an MD5 is compared by size alone."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Optional

import pytest

from synclient.platform.models import FileHandle
from synclient.sync.plan.planner import Action, Collision, Decision, decide
from synclient.sync.records.index import IndexRow


def _ours(root: Path, remote: bytes, local: bytes, *, md5: Optional[str]) -> IndexRow:
    """Our copy of ``remote``, holding ``local`` (same size and mtime as synclient left it)."""
    path = root / "a.bin"
    path.write_bytes(local)
    info = os.lstat(path)
    return IndexRow(
        "a.bin", "a.bin", "syn1", "syn9", 1, "h9", md5, len(remote), "", "syn1", info.st_size, info.st_mtime_ns
    )


def _decide(root: Path, row: IndexRow, handle: FileHandle, *, checksum: bool) -> Decision:
    return decide(
        destination=root / "a.bin",
        handle=handle,
        row=row,
        target_root=root,
        collision=Collision.OVERWRITE_LOCAL,
        checksum=checksum,
    )


@pytest.mark.parametrize(
    ("local", "checksum", "expected", "reason"),
    [
        (b"remote!", False, Action.SKIP, ""),  # the stat alone: trusted
        (b"corrupt", False, Action.SKIP, ""),  # (why --checksum exists)
        (b"remote!", True, Action.SKIP, ""),
        (b"corrupt", True, Action.REPAIR, "local MD5 differed"),
    ],
)
def test_our_copy_with_an_md5(tmp_path, local, checksum, expected, reason):
    remote = b"remote!"
    md5 = hashlib.md5(remote).hexdigest()
    row = _ours(tmp_path, remote, local, md5=md5)
    handle = FileHandle(id="h9", content_size=len(remote), content_md5=md5)
    assert _decide(tmp_path, row, handle, checksum=checksum) == Decision(expected, tmp_path / "a.bin", reason)


def test_a_handle_without_md5_is_compared_by_size_only(tmp_path):
    remote = b"remote!"
    handle = FileHandle(id="h9", content_size=len(remote), content_md5=None)
    same_size = _ours(tmp_path, remote, b"corrupt", md5=None)
    assert _decide(tmp_path, same_size, handle, checksum=True).action is Action.SKIP  # nothing else to compare
    other_size = _ours(tmp_path, remote, b"short", md5=None)
    assert _decide(tmp_path, other_size, handle, checksum=True) == Decision(
        Action.REPAIR, tmp_path / "a.bin", "local size differed"
    )


def test_an_untouched_keep_both_copy_is_hashed_and_repaired_where_it_is(tmp_path):
    remote = b"remote!"
    md5 = hashlib.md5(remote).hexdigest()
    copy = tmp_path / "a(1).bin"
    copy.write_bytes(b"corrupt")
    info = os.lstat(copy)
    row = IndexRow("a.bin", "a(1).bin", "syn1", "syn9", 1, "h9", md5, 7, "", "syn1", info.st_size, info.st_mtime_ns)
    (tmp_path / "a.bin").write_bytes(b"the user's")
    handle = FileHandle(id="h9", content_size=len(remote), content_md5=md5)
    assert _decide(tmp_path, row, handle, checksum=False) == Decision(Action.SKIP, copy)
    assert _decide(tmp_path, row, handle, checksum=True) == Decision(Action.REPAIR, copy, "local MD5 differed")
