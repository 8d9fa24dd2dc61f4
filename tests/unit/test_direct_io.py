"""Direct (page-cache-bypassing) I/O of large downloads: same bytes as buffered I/O, whatever the alignment."""

import hashlib
import os
import random
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from synclient.errors import LocalIOError
from synclient.transfer.direct import ALIGN, DirectFile, aligned_buffer, filesystem_type, open_direct
from synclient.transfer.download import plan_parts
from synclient.transfer.hashing import PrefixHasher, hash_file_range, hash_with_read_ahead


def _direct_file(path: Path, size: int) -> DirectFile:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    os.ftruncate(fd, size)
    direct_fd = open_direct(path, fd)
    if direct_fd < 0:
        os.close(fd)
        pytest.skip(f"no O_DIRECT on {filesystem_type(path.parent)} here")
    return DirectFile(fd, direct_fd)


def test_filesystem_type_of_known_mounts(tmp_path):
    assert filesystem_type(Path("/proc/self")) == "proc"
    assert filesystem_type(tmp_path) is not None


def test_no_direct_descriptor_on_memory_or_pseudo_filesystems(tmp_path):
    if not Path("/dev/shm").is_dir() or filesystem_type(Path("/dev/shm")) != "tmpfs":
        pytest.skip("no tmpfs at /dev/shm")
    target = Path("/dev/shm") / f"synclient-direct-{os.getpid()}"
    target.write_bytes(b"x")
    fd = os.open(target, os.O_RDONLY)
    try:
        assert open_direct(target, fd) == -1
    finally:
        os.close(fd)
        target.unlink()


def test_aligned_buffer_is_page_aligned_and_big_enough():
    import ctypes

    buffer = aligned_buffer(10_000)
    assert len(buffer) >= 10_000 and len(buffer) % ALIGN == 0
    assert ctypes.addressof(ctypes.c_char.from_buffer(buffer)) % ALIGN == 0


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    size=st.integers(1, 5 * ALIGN + 777),
    chunk=st.sampled_from([1, 100, ALIGN - 1, ALIGN, 2 * ALIGN + 5, 3 * ALIGN]),
)
def test_writes_in_any_alignment_and_order_give_the_same_file(tmp_path_factory, seed, size, chunk):
    """Chunks land at aligned and unaligned offsets, with aligned and odd lengths, in random order: the aligned
    stretches go direct, the rest buffered, and the file (read back both ways) is exactly the data."""
    data = random.Random(seed).randbytes(size)
    path = tmp_path_factory.mktemp("d") / "f"
    file = _direct_file(path, size)
    try:
        offsets = list(range(0, size, chunk))
        random.Random(seed + 1).shuffle(offsets)
        buffer = aligned_buffer(chunk)
        for offset in offsets:
            piece = data[offset : offset + chunk]
            buffer[: len(piece)] = piece
            file.write(buffer[: len(piece)], offset)
        assert path.read_bytes() == data
        start = random.Random(seed + 2).randrange(size)
        md5 = hashlib.md5()
        hash_file_range(file, start, size, md5, aligned_buffer(2 * ALIGN))
        assert md5.hexdigest() == hashlib.md5(data[start:]).hexdigest()
        assert file.direct, "aligned buffers on this filesystem must not have needed the fallback"
    finally:
        file.close()


def test_an_unaligned_buffer_falls_back_to_buffered_writes(tmp_path):
    """A buffer whose address O_DIRECT refuses turns direct I/O off; the bytes still land."""
    data = os.urandom(4 * ALIGN)
    # one byte past an aligned address: surely unaligned (a bytes object's data may be aligned by chance)
    unaligned = aligned_buffer(5 * ALIGN)[1 : 1 + len(data)]
    unaligned[:] = data
    path = tmp_path / "f"
    file = _direct_file(path, len(data))
    try:
        file.write(unaligned, 0)
        assert not file.direct
        assert path.read_bytes() == data
    finally:
        file.close()


def test_prefix_hasher_reads_a_direct_file_back_exactly(tmp_path):
    size = 10 * ALIGN + 123
    data = os.urandom(size)
    path = tmp_path / "f"
    file = _direct_file(path, size)
    try:
        parts = plan_parts(size, 3 * ALIGN)
        hasher = PrefixHasher(file, parts)
        buffer = aligned_buffer(size)
        buffer[:size] = data
        for index in reversed(range(len(parts))):
            part = parts[index]
            file.write(buffer[part.start : part.end], part.start)
            hasher.part_done(index)
        assert hasher.hexdigest() == hashlib.md5(data).hexdigest()
        assert file.direct
    finally:
        file.close()


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10**6), size=st.integers(3 * ALIGN, 40 * ALIGN), buffers=st.integers(1, 3))
def test_read_ahead_hash_is_the_md5_of_the_range(tmp_path_factory, seed, size, buffers):
    """Reads ahead in a helper thread through small buffers (many refills, unaligned start): same MD5."""
    rng = random.Random(seed)
    data = rng.randbytes(size)
    path = tmp_path_factory.mktemp("r") / "f"
    path.write_bytes(data)
    file = _direct_file(path, size)
    try:
        start, end = rng.randrange(size // 2), rng.randrange(size // 2 + 1, size + 1)
        md5 = hashlib.md5()
        hash_with_read_ahead(file, start, end, md5, [aligned_buffer(2 * ALIGN) for _ in range(buffers)])
        assert md5.hexdigest() == hashlib.md5(data[start:end]).hexdigest()
    finally:
        file.close()


def test_read_ahead_reports_a_file_that_shrank(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(os.urandom(8 * ALIGN))
    file = _direct_file(path, 8 * ALIGN)
    try:
        os.truncate(path, 3 * ALIGN)
        with pytest.raises(LocalIOError, match="shrank"):
            hash_with_read_ahead(file, 0, 8 * ALIGN, hashlib.md5(), [aligned_buffer(ALIGN) for _ in range(3)])
        assert [t for t in threading.enumerate() if t.name == "synclient-hash-read-ahead"] == []
    finally:
        file.close()


def test_filesystem_type_takes_the_longest_mount_point_and_decodes_escapes(tmp_path):
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(
        "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
        "30 22 0:40 / /mnt/my\\040data rw shared:9 - nfs4 server:/export rw\n"
        "31 30 0:41 / /mnt/my\\040data/scratch rw - tmpfs tmpfs rw\n"
        "garbage line\n"
    )
    assert filesystem_type(Path("/mnt/my data/project"), str(mountinfo)) == "nfs4"
    assert filesystem_type(Path("/mnt/my data/scratch/x"), str(mountinfo)) == "tmpfs"
    assert filesystem_type(Path("/mnt/my datab"), str(mountinfo)) == "ext4"  # a prefix of the name is not inside
    assert filesystem_type(Path("/home/u"), str(tmp_path / "missing")) is None
