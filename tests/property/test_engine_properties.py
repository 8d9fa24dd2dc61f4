"""Properties of the engine's pure parts: remote names -> paths, the range plan of a multipart download, the MD5 of
parts finishing in any order, and the planner's decision table."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import assume, given
from hypothesis import strategies as st

from synclient.errors import UnsafePathError
from synclient.platform.models import FileHandle
from synclient.sync.local.paths import NAME_MAX_BYTES, TargetDirectory
from synclient.sync.plan.planner import Action, Collision, decide
from synclient.sync.records.index import IndexRow
from synclient.transfer.direct import DirectFile
from synclient.transfer.download import plan_parts
from synclient.transfer.hashing import PrefixHasher

_ROOT = Path(tempfile.mkdtemp(prefix="synclient-prop-"))
_TARGET = TargetDirectory(_ROOT / "t")

_HOSTILE_ALPHABET = st.sampled_from(list("ab./\\\x00 \t\n:*?é") + ["\u0301", "\u20ac", "\U0001f600", ".."])
_NAMES = st.one_of(st.text(max_size=300), st.lists(_HOSTILE_ALPHABET, max_size=90).map("".join))


@given(_NAMES)
def test_a_remote_name_becomes_one_child_of_its_folder_or_is_refused(name):
    parent = _TARGET.root / "d"
    try:
        path = _TARGET.child(parent, name)
    except UnsafePathError:
        return
    assert path.parent == parent and path.name == name  # exactly one component, exactly the remote name
    assert os.path.normpath(path) == str(path)  # no '.', '..', '//' games
    assert "\x00" not in name and "/" not in name and "\\" not in name
    assert len(name.encode("utf-8", "surrogateescape")) <= NAME_MAX_BYTES
    assert not name.endswith(".synclient-partial") and not name.endswith(".synclient-partial.parts")
    assert _TARGET.contains(path)


@given(st.integers(0, 2**45), st.integers(64 * 1024, 2**31))
def test_parts_cover_the_object_exactly_once(size, part_size):
    assume(size // part_size < 200_000)
    parts = plan_parts(size, part_size)
    assert sum(p.length for p in parts) == size
    position = 0
    for part in parts:
        assert part.start == position and 0 < part.length <= part_size and part.total == size
        assert part.header() == f"bytes={part.start}-{part.end - 1}"
        position = part.end
    assert position == size
    assert all(p.length == part_size for p in parts[:-1])


@given(st.binary(min_size=1, max_size=5000), st.integers(1, 700), st.randoms(use_true_random=False))
def test_md5_of_parts_finishing_in_any_order_is_the_md5_of_the_file(data, part_size, rng):
    from synclient.transfer.http import ByteRange

    parts = [ByteRange(s, min(s + part_size, len(data)), len(data)) for s in range(0, len(data), part_size)]
    fd, name = tempfile.mkstemp(dir=_ROOT)
    try:
        os.write(fd, data)
        hasher = PrefixHasher(DirectFile(fd), parts)
        order = list(range(len(parts)))
        rng.shuffle(order)
        for index in order:
            hasher.part_done(index)
        assert hasher.hexdigest() == hashlib.md5(data).hexdigest()
    finally:
        os.close(fd)
        os.unlink(name)


_LOCAL = st.sampled_from(["absent", "same-bytes", "same-bytes-linked", "other-bytes", "folder", "symlink"])
_ROW = st.sampled_from(["none", "ours-untouched", "ours-touched", "elsewhere-untouched"])


@given(_LOCAL, _ROW, st.sampled_from(list(Collision)), st.booleans())
def test_planner_decision_table(local, row_kind, collision, remote_changed):
    work = Path(tempfile.mkdtemp(dir=_ROOT))
    try:
        remote = b"remote bytes v2" if remote_changed else b"remote bytes"
        handle = FileHandle(id="9", content_size=len(remote), content_md5=hashlib.md5(remote).hexdigest())
        destination = work / "f.txt"
        if local == "same-bytes":
            destination.write_bytes(remote)
        elif local == "same-bytes-linked":  # a hard link to another file of the same bytes (another entity's)
            (work / "other.txt").write_bytes(remote)
            os.link(work / "other.txt", destination)
        elif local == "other-bytes":
            destination.write_bytes(b"remote bytes" if remote_changed else b"local edit!!")
        elif local == "folder":
            destination.mkdir()
        elif local == "symlink":
            os.symlink(work / "nowhere", destination)
        row = _row(row_kind, work, destination, local)
        decision = decide(destination=destination, handle=handle, row=row, target_root=work, collision=collision)
        ours = row_kind == "ours-untouched" and local in ("same-bytes", "other-bytes")
        if row_kind == "elsewhere-untouched" and row.md5 == handle.content_md5:
            assert decision.action is Action.SKIP and decision.destination == work / "elsewhere.txt"
        elif local == "absent":
            assert decision == type(decision)(Action.DOWNLOAD, destination)
        elif ours:
            same = row.md5 == handle.content_md5 and row.size == handle.content_size
            assert decision.action is (Action.SKIP if same else Action.DOWNLOAD)
        elif local == "same-bytes":
            assert decision.action is Action.ADOPT
        elif local == "same-bytes-linked":  # never taken as this entity's: a file of its own replaces the name
            assert decision == type(decision)(Action.DOWNLOAD, destination)
        else:  # a local change (or a non-file) in the way: only the collision policy decides
            expected = (
                Action.BLOCKED
                if local == "folder"
                else {
                    Collision.OVERWRITE_LOCAL: Action.OVERWRITE,
                    Collision.KEEP_LOCAL: Action.KEEP_LOCAL,
                    Collision.KEEP_BOTH: Action.KEEP_BOTH,
                }[collision]
            )
            assert decision.action is expected
            if expected is Action.KEEP_BOTH:
                assert decision.destination != destination and not os.path.lexists(decision.destination)
        # never: a fetch that would silently replace somebody's different local file
        if decision.action is Action.DOWNLOAD and os.path.lexists(destination):
            assert ours or local == "same-bytes-linked"
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _row(kind: str, work: Path, destination: Path, local: str):
    if kind == "none":
        return None
    if kind == "elsewhere-untouched":
        other = work / "elsewhere.txt"
        other.write_bytes(b"remote bytes")
        info = os.lstat(other)
        return IndexRow(
            "f.txt",
            "elsewhere.txt",
            "syn1",
            "syn2",
            1,
            "9",
            hashlib.md5(b"remote bytes").hexdigest(),
            info.st_size,
            None,
            None,
            info.st_size,
            info.st_mtime_ns,
        )
    if local in ("same-bytes", "other-bytes"):
        data = destination.read_bytes()
        info = os.lstat(destination)
        size, mtime = info.st_size, info.st_mtime_ns + (0 if kind == "ours-untouched" else 1)
    else:
        data, size, mtime = b"remote bytes", 12, 1
    return IndexRow(
        "f.txt", "f.txt", "syn1", "syn2", 1, "9", hashlib.md5(data).hexdigest(), len(data), None, None, size, mtime
    )
