import hashlib
import os
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from synclient import portable
from synclient.transfer.direct import DirectFile
from synclient.transfer.download import plan_parts
from synclient.transfer.hashing import PrefixHasher
from synclient.transfer.partial import (
    FileIdentity,
    JournalHeader,
    LeftoverPartials,
    ResumeJournal,
    SymlinkFreeFolders,
    journal_path,
    realpath,
    temp_path,
)


@given(size=st.integers(1, 5000), part_size=st.integers(1, 700))
def test_parts_cover_the_file_exactly_once(size, part_size):
    parts = plan_parts(size, part_size)
    assert parts[0].start == 0 and parts[-1].end == size
    assert all(a.end == b.start for a, b in zip(parts, parts[1:]))
    assert sum(p.length for p in parts) == size


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6), size=st.integers(1, 20000), part_size=st.integers(100, 3000))
def test_prefix_hasher_matches_md5_whatever_the_completion_order(tmp_path_factory, seed, size, part_size):
    data = random.Random(seed).randbytes(size)
    path = tmp_path_factory.mktemp("h") / "f"
    path.write_bytes(data)
    parts = plan_parts(size, part_size)
    order = list(range(len(parts)))
    random.Random(seed + 1).shuffle(order)
    fd = os.open(path, os.O_RDONLY)
    try:
        hasher = PrefixHasher(DirectFile(fd), parts)
        for index in order:
            hasher.part_done(index)
        assert hasher.hexdigest() == hashlib.md5(data).hexdigest()
    finally:
        os.close(fd)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 10**6), size=st.integers(1, 20000), part_size=st.integers(100, 3000), chunk=st.integers(1, 400)
)
def test_prefix_hasher_chunk_by_chunk_in_any_interleaving(tmp_path_factory, seed, size, part_size, chunk):
    """Writers report progress chunk by chunk, parts interleaved at random: the MD5 is still the file's."""
    data = random.Random(seed).randbytes(size)
    path = tmp_path_factory.mktemp("h") / "f"
    path.write_bytes(data)
    parts = plan_parts(size, part_size)
    progress = {i: part.start for i, part in enumerate(parts)}
    rng = random.Random(seed + 2)
    fd = os.open(path, os.O_RDONLY)
    try:
        hasher = PrefixHasher(DirectFile(fd), parts)
        while progress:
            index = rng.choice(sorted(progress))
            progress[index] = min(progress[index] + chunk, parts[index].end)
            hasher.advance(index, progress[index])
            if progress[index] == parts[index].end:
                del progress[index]
        assert hasher.hexdigest() == hashlib.md5(data).hexdigest()
    finally:
        os.close(fd)


def test_prefix_hasher_follows_the_frontier_inside_a_part(tmp_path):
    """Bytes of the first part are hashed as they are written, not when the part completes, so little is left
    to hash when the last byte arrives; a gap stops the frontier until it is filled."""
    data = os.urandom(1000)
    path = tmp_path / "f"
    path.write_bytes(data)
    parts = plan_parts(1000, 400)
    fd = os.open(path, os.O_RDONLY)
    try:
        hasher = PrefixHasher(DirectFile(fd), parts)
        hasher.advance(0, 150)
        assert hasher.hashed == 150
        hasher.advance(1, 800)  # part 1 complete, but part 0 is not: nothing more can be hashed
        assert hasher.hashed == 150
        hasher.advance(0, 400)  # the gap closes: the frontier runs through part 1 as well
        assert hasher.hashed == 800
        hasher.advance(2, 1000)
        assert hasher.hexdigest() == hashlib.md5(data).hexdigest()
    finally:
        os.close(fd)


def test_journal_round_trip_and_foreign_header_is_ignored(tmp_path):
    temp = temp_path(tmp_path / "big.bin", "77")
    assert temp.parent == tmp_path and temp.name.startswith(".big.bin.77")
    header = JournalHeader(file_handle_id="77", size=100, md5="m", part_size=10)
    journal = ResumeJournal(journal_path(temp), header)
    journal.start(FileIdentity(5, 42), {1: 20})
    for index, end in ((3, 35), (0, 10), (7, 80), (3, 40)):
        journal.mark({index: end})
    journal.close()
    # the last mark of a part wins
    assert ResumeJournal(journal_path(temp), header).load() == (FileIdentity(5, 42), {0: 10, 1: 20, 3: 40, 7: 80})
    other = JournalHeader(file_handle_id="78", size=100, md5="m", part_size=10)
    assert ResumeJournal(journal_path(temp), other).load() is None


def test_a_journal_without_the_partials_identity_vouches_for_nothing(tmp_path):
    """A journal of before the write rule (no device and inode) or a hand-made one: nothing is resumed from it."""
    temp = temp_path(tmp_path / "big.bin", "77")
    header = JournalHeader(file_handle_id="77", size=100, md5="m", part_size=10)
    journal_path(temp).write_text('{"file_handle_id": "77", "size": 100, "md5": "m", "part_size": 10}\n0\n1\n')
    assert ResumeJournal(journal_path(temp), header).load() is None


def test_temp_name_of_a_very_long_name_stays_short(tmp_path):
    temp = temp_path(tmp_path / ("n" * 250), "123456")
    assert len(temp.name) <= 200 and temp.parent == tmp_path


def _plant(path):
    path.write_bytes(b"partial")
    return path.name


def test_leftover_partials_of_other_handles_go_and_the_kept_handle_stays(tmp_path):
    # a name long enough that a long handle id would push its temp name over the limit and a short one not
    a, long_name, b = tmp_path / "a.bin", tmp_path / ("n" * 171 + ".bin"), tmp_path / "a.bin.2"
    old = _plant(temp_path(a, "1"))
    old_journal = _plant(journal_path(temp_path(a, "1")))
    current, current_journal = _plant(temp_path(a, "22")), _plant(journal_path(temp_path(a, "22")))
    other_file = _plant(temp_path(b, "1"))  # ".a.bin.2.1...": a different file, though its name extends a's
    long_old, long_current = _plant(temp_path(long_name, "5")), _plant(temp_path(long_name, "123456789"))
    unrelated = [
        _plant(tmp_path / n)
        for n in (
            "a.bin",
            ".a.bin.notes",
            ".a.bin.x.synclient-partial",
            ".SYNAPSE_METADATA_MANIFEST.tsv.synclient-partial",
        )
    ]
    leftovers = LeftoverPartials()
    leftovers.discard(a, keep_handle="22")
    leftovers.discard(long_name, keep_handle="123456789")
    left = set(os.listdir(tmp_path))
    assert not left & {old, old_journal, long_old}
    assert {current, other_file, long_current, *unrelated} <= left
    assert current_journal in left
    leftovers.discard(a)  # adopted or already right: no partial of it is worth keeping
    left = set(os.listdir(tmp_path))
    assert not left & {current, current_journal} and other_file in left


def test_leftover_partials_lists_a_folder_once_and_ignores_a_missing_one(tmp_path, monkeypatch):
    listed = []
    real_scandir = os.scandir
    monkeypatch.setattr(os, "scandir", lambda path: listed.append(path) or real_scandir(path))
    leftovers = LeftoverPartials()
    for name in ("x", "y", "z"):
        leftovers.discard(tmp_path / name, keep_handle="1")
    leftovers.discard(tmp_path / "absent" / "x", keep_handle="1")
    assert listed == [tmp_path, tmp_path / "absent"]


def test_realpath_is_os_path_realpath(tmp_path):
    """The cheap realpath gives os.path.realpath's answer for plain folders, symlinks on the way (to a folder or
    a file, dangling, looping), missing paths, files and relative paths."""
    root = tmp_path.resolve()
    (root / "a" / "b").mkdir(parents=True)
    (root / "f").write_bytes(b"x")
    (root / "to_a").symlink_to(root / "a")
    (root / "rel").symlink_to("a")
    (root / "to_f").symlink_to(root / "f")
    (root / "dangling").symlink_to(root / "nowhere")
    (root / "loop").symlink_to(root / "loop")
    cases = [
        root,
        root / "a",
        root / "a" / "b",
        root / "to_a",
        root / "to_a" / "b",
        root / "rel" / "b",
        root / "f",
        root / "to_f",
        root / "dangling",
        root / "loop",
        root / "loop" / "x",
        root / "missing",
        root / "missing" / "deeper",
        f"{root}/a/./b",
        f"{root}//a/b/",
        root / "a" / ".." / "a",
        "a",
        ".",
    ]
    for case in cases:
        assert realpath(case) == os.path.realpath(case), case


def test_plain_folders_give_realpaths_verdict_as_folders_change(tmp_path):
    """A held folder that is moved away, replaced by a symlink, deleted, or has a symlink put above it is judged
    again by realpath; a new plain folder at the same path passes. Eviction and close keep the verdicts."""
    root = tmp_path.resolve()
    folders = SymlinkFreeFolders(capacity=2)
    a, d = root / "a", root / "a" / "d"
    d.mkdir(parents=True)

    def same(folder):
        assert folders.plain(folder) == (os.path.realpath(folder) == str(folder)), folder
        return folders.plain(folder)

    try:
        assert same(d) and same(d)  # held now: the second check reads the descriptor's path
        (root / "elsewhere").mkdir()
        d.rename(root / "elsewhere" / "d")
        d.symlink_to(root / "elsewhere" / "d")  # the folder swapped for a symlink to itself, moved
        assert not same(d)
        d.unlink()
        d.mkdir()  # a new plain folder at the path
        assert same(d) and same(d)
        a.rename(root / "a2")
        a.symlink_to(root / "a2")  # a symlink above the folder
        assert not same(d)
        a.unlink()
        (root / "a2").rename(a)
        assert same(d)
        d.rmdir()
        assert same(d)  # a missing folder: realpath's answer
        d.mkdir()
        others = [root / f"o{i}" for i in range(4)]
        for other in others:
            other.mkdir()
            assert same(other)
        assert len(folders._held) == (2 if portable.CAPABILITIES.proc_fd else 0)  # evicted down to capacity
        assert same(d) and all(same(other) for other in others)
    finally:
        folders.close()
    assert folders._held == {} and same(d)  # closed: holds nothing, still answers
    assert folders._held == {}
