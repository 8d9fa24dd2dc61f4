"""A file's bytes from a local copy (synapseclient's cache): reflink, hard link or copy, verified and installed as a
download is (``Downloader.copy_local``), and nothing left behind when the copy is not the file."""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import os

import pytest
from test_download import Run

from synclient import portable
from synclient.errors import Cancelled, IntegrityError, LocalIOError
from synclient.events import SyncObserver
from synclient.transfer import local_copy
from synclient.transfer.local_copy import CopyMethod, fill_temp
from synclient.transfer.partial import journal_path, temp_path

DATA = bytes(range(256)) * 300 + b"tail"


class CountingObserver(SyncObserver):
    def __init__(self) -> None:
        self.bytes = 0

    def bytes_transferred(self, file, count: int) -> None:
        self.bytes += count


def _source(tmp_path, data: bytes = DATA):
    (tmp_path / "cache").mkdir(exist_ok=True)
    path = tmp_path / "cache" / "cached.bin"
    path.write_bytes(data)
    return path


def _no_reflink(monkeypatch):
    def refuse(fd, request, arg):
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")

    if portable.CAPABILITIES.reflink:  # else no reflink is tried at all
        monkeypatch.setattr("fcntl.ioctl", refuse)


def _leftovers(run):
    temp = temp_path(run.job.destination, run.job.handle.id)
    return [path for path in (temp, journal_path(temp)) if path.exists()]


def test_a_copy_is_verified_installed_and_counted_as_arrived(tmp_path, monkeypatch):
    _no_reflink(monkeypatch)
    observer = CountingObserver()
    run = Run(tmp_path, DATA, observer=observer)
    assert run.downloader.copy_local(run.job, _source(tmp_path)) is CopyMethod.COPY
    assert run.job.destination.read_bytes() == DATA
    assert observer.bytes == len(DATA) and run.done == [] and run.storage.gets == 0
    assert not _leftovers(run)


def test_a_reflink_where_the_filesystem_clones_and_its_bytes_are_hashed(tmp_path, monkeypatch):
    def clone(fd, request, source_fd):  # what FICLONE leaves: the target holds the source's bytes
        assert request == local_copy.FICLONE
        os.write(fd, os.pread(source_fd, len(DATA) + 1, 0))

    pytest.importorskip("fcntl")
    monkeypatch.setattr(portable, "CAPABILITIES", dataclasses.replace(portable.CAPABILITIES, reflink=True))
    monkeypatch.setattr("fcntl.ioctl", clone)
    run = Run(tmp_path, DATA)
    assert run.downloader.copy_local(run.job, _source(tmp_path)) is CopyMethod.REFLINK
    assert run.job.destination.read_bytes() == DATA


def test_the_filesystem_decides_between_reflink_and_copy_silently(tmp_path):
    run = Run(tmp_path, DATA)
    assert run.downloader.copy_local(run.job, _source(tmp_path)) in (CopyMethod.REFLINK, CopyMethod.COPY)
    assert run.job.destination.read_bytes() == DATA


def test_a_hard_link_shares_the_cached_file(tmp_path):
    source = _source(tmp_path)
    run = Run(tmp_path, DATA)
    assert run.downloader.copy_local(run.job, source, link=True) is CopyMethod.HARD_LINK
    assert os.stat(run.job.destination).st_ino == os.stat(source).st_ino
    assert os.stat(source).st_nlink == 2 and not _leftovers(run)


def test_no_hard_link_across_filesystems_means_a_copy(tmp_path, monkeypatch):
    def cross_device(source, target, *, follow_symlinks=True):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(local_copy.os, "link", cross_device)
    _no_reflink(monkeypatch)
    run = Run(tmp_path, DATA)
    assert run.downloader.copy_local(run.job, _source(tmp_path), link=True) is CopyMethod.COPY
    assert run.job.destination.read_bytes() == DATA


def test_a_system_that_cannot_link_without_following_symlinks_copies(tmp_path, monkeypatch):
    def unsupported(source, target, *, follow_symlinks=True):
        raise NotImplementedError("link: follow_symlinks unavailable on this platform")

    monkeypatch.setattr(local_copy.os, "link", unsupported)
    _no_reflink(monkeypatch)
    run = Run(tmp_path, DATA)
    assert run.downloader.copy_local(run.job, _source(tmp_path), link=True) is CopyMethod.COPY
    assert run.job.destination.read_bytes() == DATA


@pytest.mark.parametrize("link", [False, True])
def test_other_bytes_are_refused_and_leave_nothing(tmp_path, link):
    tampered = bytearray(DATA)
    tampered[1000] ^= 1
    source = _source(tmp_path, bytes(tampered))
    run = Run(tmp_path, DATA)
    with pytest.raises(IntegrityError, match="MD5 mismatch"):
        run.downloader.copy_local(run.job, source, link=link)
    assert not run.job.destination.exists() and not _leftovers(run)
    assert source.read_bytes() == bytes(tampered) and os.stat(source).st_nlink == 1


def test_a_copy_of_another_size_is_refused(tmp_path):
    run = Run(tmp_path, DATA)
    with pytest.raises(IntegrityError, match="size mismatch"):
        run.downloader.copy_local(run.job, _source(tmp_path, DATA + b"!"))
    assert not run.job.destination.exists() and not _leftovers(run)


def test_an_earlier_partial_and_journal_of_the_file_go_once_it_is_copied(tmp_path):
    run = Run(tmp_path, DATA)
    temp = temp_path(run.job.destination, run.job.handle.id)
    temp.write_bytes(b"half of it")
    journal_path(temp).write_text('{"file_handle_id": "fh1"}\n0\n')
    run.job.destination.write_bytes(b"an older version")
    run.downloader.copy_local(run.job, _source(tmp_path))
    assert run.job.destination.read_bytes() == DATA and not _leftovers(run)


def test_a_source_that_is_gone_is_a_local_error(tmp_path):
    run = Run(tmp_path, DATA)
    with pytest.raises(LocalIOError):
        run.downloader.copy_local(run.job, tmp_path / "nothing-here")
    assert not run.job.destination.exists() and not _leftovers(run)


def test_a_cancelled_run_stops_the_copy_and_keeps_nothing(tmp_path, monkeypatch):
    _no_reflink(monkeypatch)
    run = Run(tmp_path, DATA)
    run.pool.cancel_event.set()
    with pytest.raises(Cancelled):
        run.downloader.copy_local(run.job, _source(tmp_path))
    assert not run.job.destination.exists() and not _leftovers(run)


def test_fill_temp_never_follows_a_symlink_at_the_source(tmp_path):
    real = _source(tmp_path)
    link = tmp_path / "cache" / "link.bin"
    os.symlink(real, link)
    with pytest.raises(OSError) as caught:
        fill_temp(link, tmp_path / ".temp")
    assert caught.value.errno == errno.ELOOP


def test_fill_temp_hashes_what_it_wrote(tmp_path, monkeypatch):
    _no_reflink(monkeypatch)
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    filled = fill_temp(empty, tmp_path / ".temp")
    assert filled == (hashlib.md5(b"").hexdigest(), 0, CopyMethod.COPY)
    big = tmp_path / "big"
    with open(big, "wb") as handle:  # more than one read of the copy loop
        for _ in range(5):
            handle.write(DATA * 60)
    filled = fill_temp(big, tmp_path / ".temp2")
    assert filled.md5 == hashlib.md5(big.read_bytes()).hexdigest() and filled.size == big.stat().st_size
    assert os.path.getsize(tmp_path / ".temp2") == filled.size
