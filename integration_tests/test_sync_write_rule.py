"""Issue 29, against the emulator: writes only to what we made (defect 1), bytes that failed a check are never
accepted later (defect 5), a file larger than the free space fails alone (defect 6)."""

from __future__ import annotations

import errno
import hashlib
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from synctrees import MiB, local_tree, seeded_md5

from synclient import Platform, SyncStatus, TransferConfig, sync_from_platform
from synclient.errors import IntegrityError, NoRoomForFileError
from synclient.transfer import local_copy
from synclient.transfer.partial import PARTIAL_SUFFIXES, temp_path

PARTS = TransferConfig(multipart_threshold=1 * MiB, part_size=1 * MiB, max_workers=4)
BIG = 3 * MiB + 17


def _sync(emu, project, target, **options):
    options.setdefault("progress", False)
    options.setdefault("on_error", "continue")
    with Platform(endpoint=emu.endpoint, token=emu.token) as platform:
        return sync_from_platform(project, target, platform=platform, **options)


def _fingerprint(folder: Path):
    """Every file's bytes, inode and link count: what must not change outside the target."""
    return {
        path.name: (hashlib.md5(path.read_bytes()).hexdigest(), os.stat(path).st_ino, os.stat(path).st_nlink)
        for path in folder.iterdir()
        if path.is_file()
    }


@pytest.fixture
def cache_root(tmp_path):
    root = tmp_path / "synapse-cache"
    root.mkdir()
    Path(os.environ["SYNAPSE_CONFIG_FILE"]).write_text(f"[cache]\nlocation = {root}\n")
    return root


@pytest.fixture
def project(emulator):
    return emulator.seed_spec(
        {
            "projects": [
                {
                    "name": "p",
                    "children": [
                        {"type": "file", "name": "big2.bin", "size": BIG, "seed": 2},
                        {"type": "file", "name": "small.bin", "size": 3000, "seed": 3},
                    ],
                }
            ]
        }
    )["p"]


EXPECTED = {"big2.bin": seeded_md5(BIG, 2), "small.bin": seeded_md5(3000, 3)}


# -- defect 1 -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cache", [True, False], ids=["synapse-cache", "no-synapse-cache"])
def test_a_partial_hard_linked_to_another_targets_file_never_empties_it(emulator, project, cache_root, tmp_path, cache):
    """The state a ``--synapse-cache-link`` run killed mid-hash left (before the write rule): the target's partial
    of big2.bin is a hard link to the same file in another target. A default run must not write through it."""
    ca, cb = tmp_path / "cA", tmp_path / "cB"
    _sync(emulator, project, ca, config=PARTS)
    assert local_tree(ca) == EXPECTED
    before = _fingerprint(ca)
    cb.mkdir()
    with Platform(endpoint=emulator.endpoint, token=emulator.token) as platform:
        for name in EXPECTED:
            handle = platform.get_file_bundle(emulator.resolve(project, name)).file_handle
            os.link(ca / name, temp_path(cb / name, handle.id))
    results = _sync(emulator, project, cb, config=PARTS, synapse_cache=cache)
    assert {r.status for r in results} == {SyncStatus.DOWNLOADED}
    assert local_tree(cb) == EXPECTED
    assert _fingerprint(ca) == before, "a file outside the target was written"


def test_a_linked_copy_never_stands_under_a_partials_name(emulator, project, cache_root, tmp_path, monkeypatch):
    """``--synapse-cache-link``: while a linked file is hashed (a Ctrl-C or SIGKILL could land there), no name a
    download resumes from is a link to it."""
    ca, cb = tmp_path / "cA", tmp_path / "cB"
    _sync(emulator, project, ca, config=PARTS)
    hash_fd, seen = local_copy._hash_fd, []

    def watching(fd, *args):
        inode = os.fstat(fd).st_ino
        seen.append(
            [
                name
                for name in os.listdir(cb)
                if name.endswith(PARTIAL_SUFFIXES[:2]) and os.stat(cb / name).st_ino == inode
            ]
        )
        return hash_fd(fd, *args)

    monkeypatch.setattr(local_copy, "_hash_fd", watching)
    results = _sync(emulator, project, cb, config=PARTS, synapse_cache_link=True)
    assert results.report.from_cache == 2 and seen == [[], []]
    assert all(os.stat(cb / name).st_ino == os.stat(ca / name).st_ino for name in EXPECTED)
    assert not [name for name in os.listdir(cb) if name.endswith(PARTIAL_SUFFIXES)]


# -- defect 5 -----------------------------------------------------------------------------------------------------


class _Overrun(BaseHTTPRequestHandler):
    """1029 bytes for a file recorded as 1024, without Content-Length (the body ends when the connection closes)."""

    protocol_version = "HTTP/1.0"
    gets = 0

    def do_GET(self):  # noqa: N802 (http.server's name)
        type(self).gets += 1
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"a" * 1029)

    def log_message(self, *args):
        pass


def test_a_size_only_external_file_whose_body_overran_is_never_installed(emulator, tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Overrun)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/ext.bin"
        project = emulator.seed_spec(
            {
                "projects": [
                    {"name": "x", "children": [{"type": "file", "name": "ext.bin", "external": url, "size": 1024}]}
                ]
            }
        )["x"]
        for _ in range(2):  # a second run does not accept what the first left either
            results = _sync(emulator, project, tmp_path, config=TransferConfig(max_attempts=3))
            [failed] = results.failures
            assert isinstance(failed.error, IntegrityError) and "goes on past byte 1024" in str(failed.error)
            assert local_tree(tmp_path) == {}
    finally:
        server.shutdown()
        server.server_close()
    assert _Overrun.gets == 6


# -- defect 6 -----------------------------------------------------------------------------------------------------


def _big_and_small(emulator, big: int):
    return emulator.seed_spec(
        {
            "projects": [
                {
                    "name": "d",
                    "children": [{"type": "file", "name": "huge.bin", "size": big, "seed": 60}]
                    + [{"type": "file", "name": f"s{i}.bin", "size": 1000 + i, "seed": i} for i in range(3)],
                }
            ]
        }
    )["d"]


def test_a_file_refused_its_preallocation_fails_alone(emulator, tmp_path, monkeypatch):
    real = os.posix_fallocate

    def fallocate(fd, offset, length):
        if length == BIG:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, offset, length)

    monkeypatch.setattr(os, "posix_fallocate", fallocate)
    project = _big_and_small(emulator, BIG)
    results = _sync(emulator, project, tmp_path, config=PARTS)
    status = {r.path.name: r.status for r in results}
    assert status == {"huge.bin": SyncStatus.FAILED, **{f"s{i}.bin": SyncStatus.DOWNLOADED for i in range(3)}}
    [failed] = results.failures
    assert isinstance(failed.error, NoRoomForFileError)
    assert sorted(local_tree(tmp_path)) == ["s0.bin", "s1.bin", "s2.bin"]  # and no partial of huge.bin


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 40 MiB tmpfs (root only; skipped where it cannot be mounted)."""
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=40m", "tmpfs", str(mount)], capture_output=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        pytest.skip("cannot run mount here")
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (not root, or no permission)")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True, timeout=30)


def test_a_file_larger_than_a_real_tmpfs_fails_alone(emulator, small_tmpfs):
    project = _big_and_small(emulator, 60 * MiB)
    config = TransferConfig(multipart_threshold=8 * MiB, part_size=8 * MiB, max_workers=4)
    for _ in range(2):
        results = _sync(emulator, project, small_tmpfs / "t", config=config)
        assert [r.path.name for r in results.failures] == ["huge.bin"]
        assert isinstance(results.failures[0].error, NoRoomForFileError)
        assert sorted(local_tree(small_tmpfs / "t")) == ["s0.bin", "s1.bin", "s2.bin"]
