"""synapseclient's download cache as synclient reads and writes it, checked against synapseclient 4.14 itself."""

from __future__ import annotations

import hashlib
import json
import os
import threading

import pytest

from synclient.errors import CacheLockTimeoutError, ConfigError, SynclientError
from synclient.synapse_cache import (
    CACHE_MAP,
    LOCK_MAX_AGE_SECONDS,
    LOCK_RETRY_SECONDS,
    LOCK_TIMEOUT_SECONDS,
    CacheLock,
    SynapseCache,
    cache_root,
    epoch_to_iso,
    normalize_path,
    read_cache_map,
    same_modified_time,
)

sc_cache = pytest.importorskip("synapseclient.core.cache")
sc_lock = pytest.importorskip("synapseclient.core.lock")
sc_utils = pytest.importorskip("synapseclient.core.utils")

HANDLE = "123456"


def _file(folder, name: str, data: bytes, mtime: float = 1_700_000_000.25):
    path = folder / name
    path.write_bytes(data)
    os.utime(path, (mtime, mtime))
    return path


def _md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


class FakeClock:
    """Wall-clock seconds that move only when the code under test sleeps; ``on_sleep`` runs at each sleep."""

    def __init__(self, now: float = 1_800_000_000.0, on_sleep=None) -> None:
        self.now = now
        self.sleeps = 0
        self.on_sleep = on_sleep

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        self.now += seconds
        if self.on_sleep is not None:
            self.on_sleep(self)


# -- the format: times, keys, root --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "seconds",
    [
        0,
        1,
        1.0005,
        1.4994,
        59.9994,
        59.9995,
        1_700_000_000.9996,
        1_700_000_000.5,
        1_700_000_000.123456,
        951_782_400.0625,
        4_102_444_799.9999,
    ],
)
def test_times_are_written_as_synapseclient_writes_them(seconds):
    assert epoch_to_iso(seconds) == sc_cache.epoch_time_to_iso(seconds)


@pytest.mark.parametrize(
    "recorded", ["2023-11-14T22:13:20.000Z", "2023-11-14T22:13:20.250Z", "2023-11-14T22:13:21.000Z", None]
)
@pytest.mark.parametrize("mtime", [1_700_000_000.0, 1_700_000_000.25, 1_700_000_000.9])
def test_modified_times_compare_as_in_synapseclient(mtime, recorded):
    assert same_modified_time(mtime, recorded) == sc_cache.compare_timestamps(mtime, recorded)


def test_keys_are_synapseclients(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for path in ["a.txt", "sub/../b.txt", str(tmp_path / "c d" / "e.txt")]:
        assert normalize_path(path) == sc_utils.normalize_path(path)


def test_root_is_home_cache_unless_the_config_file_says_otherwise(tmp_path, monkeypatch):
    config = tmp_path / "synapseConfig"
    monkeypatch.setenv("SYNAPSE_CONFIG_FILE", str(config))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_root() == tmp_path / "home" / ".synapseCache"
    monkeypatch.setenv("CACHES", str(tmp_path / "caches"))
    config.write_text("[authentication]\nauthtoken = x\n[cache]\nlocation = $CACHES/synapse\n")
    assert cache_root() == tmp_path / "caches" / "synapse"
    config.write_text("[cache]\nlocation = ~/elsewhere\n")
    assert cache_root() == tmp_path / "home" / "elsewhere"
    config.write_text("[cache\nlocation\n")
    with pytest.raises(ConfigError):
        cache_root()


def test_a_cache_is_used_only_where_it_exists_and_never_made(tmp_path, monkeypatch):
    monkeypatch.setenv("SYNAPSE_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("HOME", str(tmp_path))
    assert SynapseCache.if_present() is None
    assert not (tmp_path / ".synapseCache").exists()
    (tmp_path / ".synapseCache").mkdir()
    assert SynapseCache.if_present().root == tmp_path / ".synapseCache"


# -- reading maps ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", '{"/a": {"modified_time": "2023', "[1, 2]", "not json", "\xff\xfe"])
def test_a_corrupt_or_partial_map_reads_as_empty(tmp_path, text):
    (tmp_path / CACHE_MAP).write_bytes(text.encode("latin-1"))
    assert read_cache_map(tmp_path) == {}
    assert read_cache_map(tmp_path / "absent") == {}


# -- interop with synapseclient's Cache ---------------------------------------------------------------------------


def test_a_record_is_byte_for_byte_what_synapseclients_add_writes(tmp_path):
    data = b"some bytes\n"
    first = _file(tmp_path, "one.txt", data)
    second = _file(tmp_path, "two.txt", data, mtime=1_700_000_100.75)
    ours, theirs = SynapseCache(tmp_path / "ours"), sc_cache.Cache(str(tmp_path / "theirs"))
    for path in (first, second, first):  # a repeated record keeps its place in the map
        ours.record(HANDLE, path, _md5(data))
        theirs.add(HANDLE, str(path), md5=_md5(data))
    written = (ours.cache_dir(HANDLE) / CACHE_MAP).read_bytes()
    assert written == (tmp_path / "theirs" / "456" / HANDLE / CACHE_MAP).read_bytes()
    assert written.endswith(b"}\n")
    assert list(json.loads(written)) == [str(first), str(second)]
    assert not [name for name in os.listdir(ours.cache_dir(HANDLE)) if name != CACHE_MAP]  # no temp, no lock left


def test_synapseclient_finds_what_we_record(tmp_path):
    data = b"x" * 1000
    (tmp_path / "data").mkdir()
    path = _file(tmp_path / "data", "f.bin", data)
    root = tmp_path / "cache"
    SynapseCache(root).record(HANDLE, path, _md5(data))
    theirs = sc_cache.Cache(str(root))
    assert theirs.get(HANDLE) == str(path)
    assert theirs.get(HANDLE, str(path.parent)) == str(path)  # the lookup syn.get(downloadLocation=...) makes
    assert theirs.contains(HANDLE, str(path))


def test_we_find_what_synapseclient_adds(tmp_path):
    data = b"payload"
    path = _file(tmp_path, "p.txt", data)
    root = tmp_path / "cache"
    sc_cache.Cache(str(root)).add(HANDLE, str(path))  # synapseclient hashes the file itself
    assert SynapseCache(root).lookup(HANDLE, md5=_md5(data).upper(), size=len(data)) == path


def test_lookup_takes_only_an_unchanged_regular_file_with_the_platforms_md5_and_size(tmp_path):
    data = b"0123456789"
    root = tmp_path / "cache"
    cache = SynapseCache(root)
    path = _file(tmp_path, "f.txt", data)
    cache.record(HANDLE, path, _md5(data))
    assert cache.lookup(HANDLE, md5=_md5(data), size=len(data)) == path
    assert cache.lookup(HANDLE, md5=_md5(b"other"), size=len(data)) is None  # the platform has other bytes
    assert cache.lookup(HANDLE, md5=_md5(data), size=len(data) + 1) is None
    assert cache.lookup(HANDLE, md5=None, size=len(data)) is None  # nothing to check a copy against
    assert cache.lookup(HANDLE, md5=_md5(data), size=len(data), not_at=path) is None
    assert cache.lookup("999", md5=_md5(data), size=len(data)) is None  # no folder for that handle
    os.utime(path, (1_700_000_005.0, 1_700_000_005.0))  # touched since it was recorded
    assert cache.lookup(HANDLE, md5=_md5(data), size=len(data)) is None
    os.utime(path, (1_700_000_000.5, 1_700_000_000.5))  # the same second as recorded: synapseclient takes it too
    assert cache.lookup(HANDLE, md5=_md5(data), size=len(data)) == path
    path.unlink()
    os.symlink(tmp_path / "elsewhere", path)
    assert cache.lookup(HANDLE, md5=_md5(data), size=len(data)) is None


def test_lookup_prefers_the_latest_usable_copy_and_takes_an_entry_without_md5(tmp_path):
    data = b"abc"
    root = tmp_path / "cache"
    older, newer, changed = (
        _file(tmp_path, name, data, mtime=1_700_000_000 + 10 * i)
        for i, name in enumerate(["older", "newer", "changed"])
    )
    cache = SynapseCache(root)
    for path in (older, newer, changed):
        cache.record(HANDLE, path, _md5(data))
    changed.write_bytes(b"xyz")
    assert cache.lookup(HANDLE, md5=_md5(data), size=3) == newer
    folder = cache.cache_dir(HANDLE)
    old_style = {str(older): sc_cache.epoch_time_to_iso(1_700_000_000)}  # the oldest format: a time, no MD5
    (folder / CACHE_MAP).write_text(json.dumps(old_style))
    assert cache.lookup(HANDLE, md5=_md5(data), size=3) == older


# -- the lock -------------------------------------------------------------------------------------------------------


def test_a_held_lock_is_waited_for_in_steps_of_half_a_second(tmp_path):
    lock_dir = tmp_path / f"{CACHE_MAP}.lock"

    def release_after_three(clock):
        if clock.sleeps == 3:
            os.rmdir(lock_dir)

    clock = FakeClock(on_sleep=release_after_three)
    theirs = sc_lock.Lock(CACHE_MAP, dir=str(tmp_path))
    assert theirs.acquire()
    os.utime(lock_dir, (0, clock.now))  # held just now, by the fake clock
    lock = CacheLock(tmp_path, clock=clock, sleep=clock.sleep)
    lock.blocking_acquire()
    assert lock.held and clock.sleeps == 3 and clock.now == 1_800_000_000.0 + 3 * LOCK_RETRY_SECONDS
    assert not sc_lock.Lock(CACHE_MAP, dir=str(tmp_path)).acquire(break_old_locks=False)  # synapseclient waits too
    lock.release()
    assert not lock_dir.exists()


def test_an_abandoned_lock_is_broken_and_then_ours(tmp_path):
    clock = FakeClock()
    lock_dir = tmp_path / "sub" / f"{CACHE_MAP}.lock"
    lock_dir.mkdir(parents=True)
    os.utime(lock_dir, (0, clock.now - LOCK_MAX_AGE_SECONDS - 1))
    lock = CacheLock(tmp_path / "sub", clock=clock, sleep=clock.sleep)
    assert lock.acquire() and clock.sleeps == 0
    assert os.path.getmtime(lock_dir) == clock.now  # renewed: nobody breaks it in turn
    assert not CacheLock(tmp_path / "sub", clock=clock, sleep=clock.sleep).acquire()


def test_a_lock_held_all_along_is_waited_for_until_the_lock_would_be_old(tmp_path):
    """A holder that keeps its lock fresh (renews it at each of our tries) is waited for 70 s, then given up."""
    lock_dir = tmp_path / f"{CACHE_MAP}.lock"
    lock_dir.mkdir()

    def renew(clock):
        os.utime(lock_dir, (0, clock.now))

    clock = FakeClock(on_sleep=renew)
    renew(clock)
    with pytest.raises(CacheLockTimeoutError) as caught:
        with CacheLock(tmp_path, clock=clock, sleep=clock.sleep):
            pass
    assert isinstance(caught.value, SynclientError)
    assert clock.sleeps == LOCK_TIMEOUT_SECONDS / LOCK_RETRY_SECONDS
    assert lock_dir.exists()  # not ours: left alone


def test_a_silent_holder_is_broken_after_ten_seconds(tmp_path):
    lock_dir = tmp_path / f"{CACHE_MAP}.lock"
    clock = FakeClock()
    lock_dir.mkdir()
    os.utime(lock_dir, (0, clock.now))
    with CacheLock(tmp_path, clock=clock, sleep=clock.sleep) as lock:
        assert lock.held
        assert clock.sleeps == LOCK_MAX_AGE_SECONDS / LOCK_RETRY_SECONDS + 1  # the first try past 10 s breaks it
    assert not lock_dir.exists()


# -- both writers at once -------------------------------------------------------------------------------------------


def test_synapseclient_and_synclient_recording_at_once_lose_nothing(tmp_path, monkeypatch):
    """Threads of synapseclient's ``Cache.add`` and of our ``record`` on one handle's map: at the end it is valid
    JSON with every entry, in synapseclient's format. (Their lock's 0.5 s wait is shortened to a yield so the
    test is quick; the interleaving does not change what must hold.)"""
    monkeypatch.setattr(sc_lock, "doze", lambda seconds: os.sched_yield())
    root = tmp_path / "cache"
    threads_per_side, files_per_thread = 4, 25
    data = b"same bytes"
    files = {
        side: [
            [_file(tmp_path, f"{side}-{t}-{i}", data) for i in range(files_per_thread)] for t in range(threads_per_side)
        ]
        for side in ("ours", "theirs")
    }
    ours, theirs = SynapseCache(root, sleep=lambda seconds: os.sched_yield()), sc_cache.Cache(str(root))
    start = threading.Barrier(2 * threads_per_side)
    failures = []

    def work(add, paths):
        try:
            start.wait()
            for path in paths:
                add(path)
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)

    threads = [
        threading.Thread(target=work, args=(lambda p: ours.record(HANDLE, p, _md5(data)), paths))
        for paths in files["ours"]
    ] + [
        threading.Thread(target=work, args=(lambda p: theirs.add(HANDLE, str(p), md5=_md5(data)), paths))
        for paths in files["theirs"]
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    written = json.loads((ours.cache_dir(HANDLE) / CACHE_MAP).read_text())
    expected = {str(path) for side in files.values() for paths in side for path in paths}
    assert set(written) == expected
    assert all(
        entry == {"modified_time": "2023-11-14T22:13:20.000Z", "content_md5": _md5(data)} for entry in written.values()
    )
    assert sorted(os.listdir(ours.cache_dir(HANDLE))) == [CACHE_MAP]


def test_a_reader_never_sees_half_of_a_map_we_write(tmp_path):
    """Our writes replace the map whole: a reader that takes no lock reads the old map or the new one."""
    root = tmp_path / "cache"
    cache = SynapseCache(root, sleep=lambda seconds: os.sched_yield())
    paths = [_file(tmp_path, f"f{i}", b"b") for i in range(60)]
    cache.record(HANDLE, paths[0], _md5(b"b"))
    map_file = cache.cache_dir(HANDLE) / CACHE_MAP
    done = threading.Event()
    sizes, failures = [], []

    def read():
        try:
            while not done.is_set() or not sizes:
                sizes.append(len(json.loads(map_file.read_text())))  # raises on a partial map
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for path in paths[1:]:
            cache.record(HANDLE, path, _md5(b"b"))
    finally:
        done.set()
        reader.join()
    assert not failures
    assert sizes == sorted(sizes) and 1 <= sizes[0] and sizes[-1] <= len(paths)
    assert len(json.loads(map_file.read_text())) == len(paths)


def test_the_cache_map_is_never_written_through_a_leftover_hard_link(tmp_path):
    """A killed writer's temp map of the same name, hard-linked to a file elsewhere: the next writer removes it and
    writes a fresh file (O_EXCL); the other file keeps its bytes."""
    import os
    import threading

    from synclient import synapse_cache

    cache_dir = tmp_path / "cache" / "123" / "123"
    cache_dir.mkdir(parents=True)
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"precious")
    temp = cache_dir / f"{synapse_cache.CACHE_MAP}.{os.getpid()}.{threading.get_ident()}.tmp"
    os.link(outside, temp)
    synapse_cache._replace_map(cache_dir, {"/some/file": "2024-01-01T00:00:00.000Z"})
    assert outside.read_bytes() == b"precious"
    assert (cache_dir / synapse_cache.CACHE_MAP).read_text().startswith('{"/some/file"')
    assert not temp.exists()


def test_a_disk_full_while_writing_the_map_leaves_no_temporary_file(tmp_path, monkeypatch):
    """A map bigger than a buffer on a full disk: the write fails, the old map stays, and no temp map is left in
    synapseclient's cache folder (one per process and thread: nothing would ever remove it)."""
    from synclient import synapse_cache
    from tests.full_disk import full_disk

    cache_dir = tmp_path / "cache" / "123" / "123"
    cache_dir.mkdir(parents=True)
    (cache_dir / synapse_cache.CACHE_MAP).write_text("{}\n")
    full_disk(monkeypatch)
    big = {f"/data/file-{n:05}.bin": "2024-01-01T00:00:00.000Z" for n in range(1000)}  # json.dump: small writes
    with pytest.raises(OSError):
        synapse_cache._replace_map(cache_dir, big)
    assert sorted(p.name for p in cache_dir.iterdir()) == [synapse_cache.CACHE_MAP]
    assert (cache_dir / synapse_cache.CACHE_MAP).read_text() == "{}\n"
