"""synclient.portable: the switch that forces fallbacks, positional I/O without os.pwrite/os.preadv, and the target
lock without fcntl (issue 18). Each fallback is exercised here on whatever system runs the tests."""

from __future__ import annotations

import errno
import os
import random
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from synclient import portable
from synclient.errors import ConfigError, SyncLockedError
from synclient.sync.records.index import LocalIndex
from synclient.transfer.direct import DirectFile, pwrite_all
from tests.full_disk import full_disk

ALL = portable.Capabilities.names()
PROJECT = str(Path(portable.__file__).resolve().parent.parent)


@pytest.mark.parametrize(
    "value, disabled",
    [
        ("", set()),
        ("0", set()),
        (" ", set()),
        ("1", ALL),
        ("all", ALL),
        ("ALL", ALL),
        ("flock", {"flock"}),
        ("dir_fd, positional_io", {"dir_fd", "positional_io"}),
    ],
)
def test_the_switch_names_what_it_turns_off(value, disabled):
    assert portable.disabled_by(value) == disabled


def test_a_misspelt_capability_is_an_error_not_a_silent_fast_path():
    with pytest.raises(ConfigError, match="unknown capability flok"):
        portable.disabled_by("flok")


def test_the_switch_is_read_once_at_import_in_a_new_process():
    code = (
        "from synclient import portable; print(sorted(n for n in portable.Capabilities.names() "
        "if getattr(portable.CAPABILITIES, n)))"
    )
    env = dict(os.environ, PYTHONPATH=PROJECT, SYNCLIENT_PORTABLE="all")
    assert (
        subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.strip()
        == "[]"
    )
    env["SYNCLIENT_PORTABLE"] = "flock,dir_fd"
    kept = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert "flock" not in kept and "dir_fd" not in kept


def test_without_the_switch_the_fast_path_is_the_system_call_itself():
    """No wrapper, no lock on the fast path: where the system has them, pwrite and preadv are os's own."""
    if not portable.CAPABILITIES.positional_io:
        pytest.skip("fallbacks in force (SYNCLIENT_PORTABLE) or no os.pwrite here")
    assert portable.pwrite is os.pwrite and portable.preadv is os.preadv


# -- positional I/O ----------------------------------------------------------------------------------------------


def _chunks(total: int, seed: int):
    rng = random.Random(seed)
    offsets, at = [], 0
    while at < total:
        size = min(total - at, rng.randint(1, 9000))
        offsets.append((at, size))
        at += size
    rng.shuffle(offsets)
    return offsets


def test_positional_writes_from_many_threads_give_a_byte_exact_file(tmp_path, portable_fallbacks):
    assert portable.pwrite is not os.pwrite
    data = random.Random(1).randbytes(1_000_000)
    path = tmp_path / "f"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | portable.O_BINARY, 0o644)
    try:
        with ThreadPoolExecutor(8) as pool:
            list(
                pool.map(
                    lambda chunk: pwrite_all(fd, memoryview(data)[chunk[0] : sum(chunk)], chunk[0]),
                    _chunks(len(data), 2),
                )
            )
    finally:
        os.close(fd)
    assert path.read_bytes() == data


def test_positional_reads_and_writes_on_one_descriptor_do_not_move_each_others_offset(tmp_path, portable_fallbacks):
    """Threads write the second half while others read the first half back through the same descriptor (as the
    prefix hasher reads a multipart download while parts arrive): every read sees exactly its own range."""
    rng = random.Random(3)
    first, second = rng.randbytes(400_000), rng.randbytes(400_000)
    path = tmp_path / "f"
    path.write_bytes(first)
    fd = os.open(path, os.O_RDWR | portable.O_BINARY)
    file = DirectFile(fd)

    def read(chunk):
        offset, size = chunk
        got = file.read_into(memoryview(bytearray(size)), offset, offset + size)
        return bytes(got) == first[offset : offset + size]

    def write(chunk):
        offset, size = chunk
        file.write(memoryview(second)[offset : offset + size], len(first) + offset)
        return True

    jobs = [(read, c) for c in _chunks(len(first), 4)] + [(write, c) for c in _chunks(len(second), 5)]
    rng.shuffle(jobs)
    try:
        with ThreadPoolExecutor(8) as pool:
            assert all(pool.map(lambda job: job[0](job[1]), jobs))
    finally:
        file.close()
    assert path.read_bytes() == first + second


def test_a_read_past_the_end_gives_what_is_there(tmp_path, portable_fallbacks):
    path = tmp_path / "f"
    path.write_bytes(b"abc")
    fd = os.open(path, os.O_RDONLY | portable.O_BINARY)
    try:
        buffer = bytearray(10)
        assert portable.preadv(fd, [memoryview(buffer)], 1) == 2 and buffer[:2] == b"bc"
        assert portable.preadv(fd, [memoryview(buffer)], 3) == 0
    finally:
        os.close(fd)


@pytest.mark.skipif(not hasattr(os, "pread"), reason="no os.pread here")
def test_a_read_by_pread_where_preadv_is_missing(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"0123456789")
    fd = os.open(path, os.O_RDONLY | portable.O_BINARY)
    try:
        buffer = bytearray(4)
        assert portable._preadv_by_pread(fd, [memoryview(buffer)], 3) == 4 and buffer == b"3456"
        assert portable._preadv_by_pread(fd, [memoryview(buffer)], 8) == 2 and buffer[:2] == b"89"
    finally:
        os.close(fd)


# -- the target lock ---------------------------------------------------------------------------------------------

HOLDER = """
import sys
from synclient import portable
release = portable.try_lock_file(sys.argv[1])
print("held" if release else "busy", flush=True)
sys.stdin.readline()
"""


@pytest.mark.parametrize("holder_forced, taker_forced", [(True, True), (False, True), (True, False)])
def test_the_lock_excludes_another_process_whichever_way_each_takes_it(
    tmp_path, monkeypatch, holder_forced, taker_forced
):
    """A process with the fallback and one without exclude each other (one machine may run both)."""
    lock = tmp_path / "lock"
    env = dict(os.environ, PYTHONPATH=PROJECT, SYNCLIENT_PORTABLE="all" if holder_forced else "")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock)], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        if taker_forced:
            monkeypatch.setattr(portable, "CAPABILITIES", portable.chosen(ALL))
        assert portable.try_lock_file(lock) is None
    finally:
        holder.stdin.close()
        holder.wait()
    release = portable.try_lock_file(lock)  # the holder is gone, and the kernel dropped its lock
    assert release is not None
    release()


def test_the_lock_excludes_a_second_handle_in_this_process_until_released(tmp_path, portable_fallbacks):
    lock = tmp_path / "lock"
    release = portable.try_lock_file(lock)
    assert release is not None
    assert portable.try_lock_file(lock) is None
    release()
    again = portable.try_lock_file(lock)
    assert again is not None
    again()


def test_a_second_index_on_one_target_is_refused_with_the_fallback_lock(tmp_path, portable_fallbacks):
    with LocalIndex(tmp_path):
        with pytest.raises(SyncLockedError):
            LocalIndex(tmp_path).open()
    with LocalIndex(tmp_path):  # released on close
        pass


# -- ReplacingWriter: a small file replaced whole ---------------------------------------------------------------------


def test_a_replacing_writer_replaces_whole_or_not_at_all(tmp_path):
    target, temp = tmp_path / "f.json", tmp_path / "f.json.tmp"
    target.write_text("old\n")
    with portable.ReplacingWriter(target, temp, mode=0o644) as handle:
        handle.write("new\n")
        assert target.read_text() == "old\n"  # a reader sees the old file until the end of the block
    assert target.read_text() == "new\n" and not temp.exists()
    with pytest.raises(KeyboardInterrupt):
        with portable.ReplacingWriter(target, temp, mode=0o644) as handle:
            handle.write("half")
            raise KeyboardInterrupt  # any exception, an interrupt too
    assert target.read_text() == "new\n" and not temp.exists()


def test_a_streamed_file_the_target_already_holds_leaves_it_alone(tmp_path):
    target, temp = tmp_path / "m.csv", tmp_path / ".m.csv.partial"
    target.write_text("a,b\r\n")
    os.utime(target, ns=(1, 1))
    writer = portable.ReplacingWriter(target, temp, mode=0o644, newline="")
    writer.handle.write("a,b\r\n")
    writer.commit(keep_target_if=lambda new, old: new.read_bytes() == old.read_bytes())
    assert target.stat().st_mtime_ns == 1 and not temp.exists()
    writer = portable.ReplacingWriter(target, temp, mode=0o644, newline="")
    writer.handle.write("c,d\r\n")
    writer.discard()
    assert target.read_bytes() == b"a,b\r\n" and not temp.exists()


@pytest.mark.skipif(not hasattr(os, "symlink") or os.name == "nt", reason="POSIX symbolic links and modes")
@pytest.mark.parametrize("clear_leftover", [True, False])
def test_a_link_at_the_temporary_name_is_never_written_through(tmp_path, clear_leftover):
    outside = tmp_path / "outside.txt"
    outside.write_text("the user's\n")
    target, temp = tmp_path / "s.json", tmp_path / "s.json.tmp"
    temp.symlink_to(outside)
    if clear_leftover:  # removed first, then a fresh file
        with portable.ReplacingWriter(target, temp, mode=0o600) as handle:
            handle.write("{}")
        assert target.read_text() == "{}" and (target.stat().st_mode & 0o777) == 0o600
    else:  # the open fails and the link is removed: the next write succeeds
        with pytest.raises(FileExistsError):
            portable.ReplacingWriter(target, temp, mode=0o600, clear_leftover=False)
        assert not target.exists()
    assert outside.read_text() == "the user's\n" and not os.path.lexists(temp)


@pytest.mark.parametrize("streamed", [False, True])
def test_a_disk_full_midway_leaves_no_temporary_file_and_the_target_alone(tmp_path, monkeypatch, streamed):
    target, temp = tmp_path / "f.json", tmp_path / "f.json.tmp"
    target.write_text("old\n")
    full_disk(monkeypatch)
    with pytest.raises(OSError) as raised:
        writer = portable.ReplacingWriter(target, temp, mode=0o644)
        if streamed:  # a manifest: the writer's error is handled, then the file discarded
            try:
                for _ in range(2000):  # small writes, as json.dump and csv make: the buffer fills, its flush fails
                    writer.handle.write("0123456789\n")
            except OSError:
                writer.discard()
                raise
        else:
            with writer as handle:
                for _ in range(2000):
                    handle.write("0123456789\n")
    assert raised.value.errno == errno.ENOSPC
    assert target.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["f.json"]


@pytest.mark.skipif(os.name == "nt", reason="POSIX modes")
def test_each_writer_keeps_the_mode_it_had_before_the_shared_writer(tmp_path):
    """Under a umask of 002 (a group-shared machine) the three callers differ: the gate's state is the user's alone
    (0600), synapseclient's cache map is what its ``open(..., "w")`` makes (0666 less the umask), a manifest 0644."""
    from synclient import synapse_cache
    from synclient.platform.gate_state import GateRecord, GateStateFile
    from synclient.sync.records.manifest import (
        CSV_MANIFEST_FILENAME,
        ManifestFormat,
        ManifestMode,
        ManifestRow,
        write_manifests,
    )

    def mode(path: Path) -> int:
        return path.stat().st_mode & 0o777

    before = os.umask(0o002)
    try:
        gate = GateStateFile(tmp_path / "gate" / "u.json", default_window=60.0, margin_share=0.1)
        assert gate.merge(GateRecord(window_seconds=60.0)) is not None
        cache_dir = tmp_path / "cache"
        cache_dir.mkdir()
        synapse_cache._replace_map(cache_dir, {})
        tree = tmp_path / "tree"
        tree.mkdir()
        rows = [ManifestRow(tree / "a.txt", "syn1", "a.txt", "syn2", None)]
        write_manifests(lambda: iter(rows), tree, ManifestMode.ALL, formats=[ManifestFormat.CSV])
    finally:
        os.umask(before)
    assert mode(tmp_path / "gate" / "u.json") == 0o600
    assert mode(cache_dir / synapse_cache.CACHE_MAP) == 0o664
    assert mode(tree / CSV_MANIFEST_FILENAME) == 0o644
