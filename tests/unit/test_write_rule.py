"""The write rule (issue 29, defect 1): data goes only to a file this run created with ``O_EXCL``, or to a partial
whose journal names its device and inode, found with one link; anything else under a partial's name is discarded,
never written through (``partial.open_for_write``). Also: bytes that failed a check are never accepted later
(defect 5), and a file the disk has no room for fails alone (defect 6)."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Dict, List

import pytest
from test_download import PART, FailingObserver, FakeResponse, FakeStorage, Run

from synclient.errors import Cancelled, ErrorNature, IntegrityError, LocalIOError, NoRoomForFileError, UnsafePathError
from synclient.platform.models import FileHandle
from synclient.transfer import download, local_copy
from synclient.transfer.direct import open_direct
from synclient.transfer.local_copy import CopyMethod
from synclient.transfer.partial import (
    FileIdentity,
    JournalHeader,
    ResumeJournal,
    copy_temp_path,
    journal_path,
    open_for_write,
    temp_path,
)
from synclient.transfer.urls import SignedUrl

OUTSIDE = b"precious bytes of a file outside the target\n" * 100


def _identity(path: Path) -> FileIdentity:
    return FileIdentity.of(os.lstat(path))


@pytest.fixture
def outside(tmp_path):
    """A file in another folder (another target, synapseclient's cache): never to be written."""
    folder = tmp_path / "cA"
    folder.mkdir()
    path = folder / "big2.bin"
    path.write_bytes(OUTSIDE)
    return path


@pytest.fixture
def target(tmp_path):
    folder = (tmp_path / "cB").resolve()
    folder.mkdir()
    return folder


# -- the opener -------------------------------------------------------------------------------------------------------


def test_a_fresh_file_is_created_by_this_call(target):
    path = target / ".f.1.synclient-partial"
    opened = open_for_write(path)
    try:
        assert not opened.resumed and opened.size == 0 and opened.identity == _identity(path)
        assert os.fstat(opened.fd).st_nlink == 1
    finally:
        os.close(opened.fd)


def test_the_journaled_partial_with_one_link_is_continued(target):
    path = target / ".f.1.synclient-partial"
    path.write_bytes(b"12345")
    opened = open_for_write(path, resume=_identity(path))
    try:
        assert opened.resumed and opened.size == 5 and opened.identity == _identity(path)
    finally:
        os.close(opened.fd)
    assert path.read_bytes() == b"12345"


def test_a_partial_with_a_second_link_is_discarded_and_the_other_link_keeps_its_bytes(outside, target):
    path = target / ".big2.bin.7.synclient-partial"
    os.link(outside, path)
    opened = open_for_write(path, resume=_identity(outside))  # even a journal naming that very inode
    try:
        assert not opened.resumed and opened.size == 0
        os.write(opened.fd, b"new bytes")
    finally:
        os.close(opened.fd)
    assert outside.read_bytes() == OUTSIDE and os.stat(outside).st_nlink == 1
    assert path.read_bytes() == b"new bytes" and _identity(path) != _identity(outside)


def test_a_partial_of_another_inode_than_the_journal_is_discarded(target):
    path = target / ".f.1.synclient-partial"
    path.write_bytes(b"someone else's")
    recorded = _identity(path)
    path.unlink()
    path.write_bytes(b"another file now")  # the name stands for another inode than the journal recorded
    if _identity(path) == recorded:  # the filesystem gave the inode number back: make it another one
        keep = target / "keep"
        os.rename(path, keep)
        path.write_bytes(b"another file now")
    opened = open_for_write(path, resume=recorded)
    os.close(opened.fd)
    assert not opened.resumed and path.read_bytes() == b""


def test_a_symlink_partial_is_never_followed(outside, target):
    path = target / ".big2.bin.7.synclient-partial"
    path.symlink_to(outside)
    for resume in (_identity(outside), FileIdentity.of(os.stat(path)), None):
        opened = open_for_write(path, resume=resume)
        os.write(opened.fd, b"new")
        os.close(opened.fd)
        assert not opened.resumed and not path.is_symlink()
        assert outside.read_bytes() == OUTSIDE
        path.unlink()
        path.symlink_to(outside)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_under_a_partial_name_is_discarded_unopened(target):
    path = target / ".f.1.synclient-partial"
    os.mkfifo(path)
    opened = open_for_write(path, resume=_identity(path))  # would block for ever if it were opened for writing
    os.close(opened.fd)
    assert not opened.resumed and path.is_file()


def test_a_folder_reached_through_a_symlink_is_refused(tmp_path, target):
    (tmp_path / "via").symlink_to(target)
    with pytest.raises(UnsafePathError):
        open_for_write(tmp_path / "via" / ".f.1.synclient-partial")
    assert os.listdir(target) == []


def test_the_direct_descriptor_is_of_the_file_opened_or_none(target):
    path = target / "f"
    opened = open_for_write(path)
    try:
        os.rename(path, target / "moved")
        path.write_bytes(b"x" * 8192)  # the name now stands for another file
        assert open_direct(path, opened.fd) == -1
    finally:
        os.close(opened.fd)


def test_a_journal_is_a_fresh_file_too(outside, target):
    journal_file = target / ".big2.bin.7.synclient-partial.parts"
    os.link(outside, journal_file)
    journal = ResumeJournal(journal_file, JournalHeader("7", 10, "", 0))
    journal.start(FileIdentity(1, 2), {0: 4})
    journal.mark({0: 10})
    journal.close()
    assert outside.read_bytes() == OUTSIDE
    assert journal.load() == (FileIdentity(1, 2), {0: 10})


# -- downloads through it ---------------------------------------------------------------------------------------------

SINGLE = PART  # one stream (Run: multipart from 2 * PART)
MULTI = 5 * PART + 123  # parts


def _journal_for(run: Run, part_size: int, partial_file: Path, parts=()) -> None:
    """The journal a resume would trust: this file's header, naming ``partial_file``'s inode."""
    job = run.job
    journal = ResumeJournal(
        journal_path(temp_path(job.destination, job.handle.id)),
        JournalHeader(job.handle.id, job.handle.content_size, job.handle.content_md5, part_size),
    )
    header = journal.header
    journal.start(_identity(partial_file), {i: header.part_bounds(i)[1] for i in parts if header.part_bounds(i)})
    journal.close()


@pytest.mark.parametrize("size", [SINGLE, MULTI], ids=["single", "multipart"])
@pytest.mark.parametrize("journal", [False, True], ids=["no-journal", "journal-naming-the-inode"])
def test_a_partial_hard_linked_to_a_file_elsewhere_is_never_written(monkeypatch, tmp_path, outside, size, journal):
    """Defect 1: a partial under the target that is a hard link to a file outside it (as a killed
    ``--synapse-cache-link`` run left it): the download starts afresh, the other file keeps its bytes."""
    monkeypatch.setattr(download, "SINGLE_RESUME_MIN", 1)  # the single stream keeps a journal too
    data = os.urandom(size)
    run = Run(tmp_path / "cB", data)
    run.job.destination.parent.mkdir(parents=True, exist_ok=True)
    temp = temp_path(run.job.destination, run.job.handle.id)
    os.link(outside, temp)
    if journal:
        _journal_for(run, PART if size == MULTI else 0, temp, parts=[0, 1])
    run.start()
    assert run.done == [None] and run.job.destination.read_bytes() == data
    assert outside.read_bytes() == OUTSIDE and os.stat(outside).st_nlink == 1
    assert not temp.exists() and not journal_path(temp).exists()


def test_a_multipart_download_resumes_only_its_journaled_partial(tmp_path):
    data = os.urandom(MULTI)
    first = Run(tmp_path, data, observer=FailingObserver(Cancelled()))
    first.start()
    temp = temp_path(first.job.destination, "fh1")
    assert first.done == [] and temp.exists()
    state = ResumeJournal(journal_path(temp), JournalHeader("fh1", MULTI, first.job.handle.content_md5, PART)).load()
    assert state is not None and state.partial == _identity(temp)
    temp.write_bytes(temp.read_bytes())  # same name and bytes... (the journal line may list a part: not trusted)
    os.rename(temp, tmp_path / "elsewhere")
    os.link(tmp_path / "elsewhere", temp)  # ...but now with two links
    second = Run(tmp_path, data)
    second.start()
    assert second.done == [None] and second.job.destination.read_bytes() == data
    assert second.storage.gets == 6  # every part again


class RangeRecordingStorage(FakeStorage):
    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.ranges: List[str] = []

    def get(self, url, *, headers: Dict[str, str], connect_timeout, read_timeout):
        self.ranges.append(headers.get("Range", "whole"))
        return super().get(url, headers=headers, connect_timeout=connect_timeout, read_timeout=read_timeout)


def test_a_single_stream_resumes_its_journaled_partial_across_runs(monkeypatch, tmp_path):
    monkeypatch.setattr(download, "SINGLE_RESUME_MIN", 1)
    data = os.urandom(SINGLE)
    first = Run(tmp_path, data, observer=FailingObserver(Cancelled()))
    with pytest.raises(Cancelled):
        first.start()
    temp = temp_path(first.job.destination, "fh1")
    have = temp.stat().st_size
    assert 0 < have < SINGLE and journal_path(temp).exists()
    storage = RangeRecordingStorage(data)
    second = Run(tmp_path, data, storage=storage)
    second.start()
    assert second.done == [None] and second.job.destination.read_bytes() == data
    assert storage.ranges == [f"bytes={have}-{SINGLE - 1}"]
    assert not temp.exists() and not journal_path(temp).exists()


def test_a_small_single_stream_partial_without_a_journal_is_fetched_again(tmp_path):
    data = os.urandom(SINGLE)
    run = Run(tmp_path, data, storage=RangeRecordingStorage(data))
    temp_path(run.job.destination, "fh1").write_bytes(data[:100])
    run.start()
    assert run.done == [None] and run.storage.ranges == ["whole"]


# -- a copy from synapseclient's cache ------------------------------------------------------------------------------


def _source(tmp_path, data: bytes) -> Path:
    (tmp_path / "cache").mkdir(exist_ok=True)
    path = tmp_path / "cache" / "cached.bin"
    path.write_bytes(data)
    return path


def test_a_hard_link_is_made_under_a_name_no_download_resumes_from(tmp_path, monkeypatch):
    data = os.urandom(SINGLE)
    source = _source(tmp_path, data)
    run = Run(tmp_path / "cB", data)
    run.job.destination.parent.mkdir(parents=True)
    seen = []
    hash_fd = local_copy._hash_fd

    def watching(fd, *args):
        seen.append(sorted(os.listdir(run.job.destination.parent)))
        return hash_fd(fd, *args)

    monkeypatch.setattr(local_copy, "_hash_fd", watching)
    assert run.downloader.copy_local(run.job, source, link=True) is CopyMethod.HARD_LINK
    assert seen == [[copy_temp_path(run.job.destination, "fh1").name]]
    assert os.stat(run.job.destination).st_ino == os.stat(source).st_ino


@pytest.mark.parametrize("link", [True, False], ids=["hard-link", "copy"])
def test_cancelled_while_hashing_a_linked_copy_leaves_no_link_behind(tmp_path, monkeypatch, link):
    """A Ctrl-C during the hash of a linked multi-GB file: nothing in the target shares the source's inode, and
    nothing is left under a partial's name."""
    monkeypatch.setattr(local_copy, "HASH_READ", 4096)
    data = os.urandom(SINGLE)
    source = _source(tmp_path, data)
    run = Run(tmp_path / "cB", data)
    folder = run.job.destination.parent
    folder.mkdir(parents=True)
    reads = []

    def cancel_after_two_reads():
        reads.append(1)
        return len(reads) > 2

    monkeypatch.setattr(run.pool.cancel_event, "is_set", cancel_after_two_reads)
    with pytest.raises(Cancelled):
        run.downloader.copy_local(run.job, source, link=link)
    assert os.listdir(folder) == [] and os.stat(source).st_nlink == 1 and source.read_bytes() == data


def test_an_earlier_linked_copy_left_by_a_killed_run_is_replaced_not_written(tmp_path, outside):
    """A run killed after linking (SIGKILL: nothing removed) leaves the link under the copy's own name; the next
    copy unlinks it and writes a fresh file."""
    run = Run(tmp_path / "cB", OUTSIDE)
    run.job.destination.parent.mkdir(parents=True)
    os.link(outside, copy_temp_path(run.job.destination, "fh1"))
    other = _source(tmp_path, OUTSIDE)
    assert run.downloader.copy_local(run.job, other) in (CopyMethod.COPY, CopyMethod.REFLINK)
    assert outside.read_bytes() == OUTSIDE and os.stat(outside).st_nlink == 1


# -- defect 5: bytes that failed a check are never accepted later ------------------------------------------------------


class LongerBodyStorage(FakeStorage):
    """An external server that sends 5 bytes more than the recorded size, without Content-Length."""

    def get(self, url, *, headers, connect_timeout, read_timeout):
        self.gets += 1
        return FakeResponse(200, {}, self.data + b"extra")


def test_a_size_only_file_whose_body_overran_is_never_installed(tmp_path):
    data = os.urandom(1024)
    run = Run(tmp_path, data, storage=LongerBodyStorage(data), url=SignedUrl("https://ext.example/f"), max_attempts=3)
    run.job.fetch = run.job.fetch.replaced(
        handle=FileHandle(id="fh1", content_size=1024, content_md5=None)
    )  # size only
    run.start()
    [error] = run.done
    assert isinstance(error, IntegrityError) and "goes on past byte 1024" in str(error)
    assert run.storage.gets == 3  # every try fetched the body again; none accepted the first try's bytes
    assert not run.job.destination.exists()
    temp = temp_path(run.job.destination, "fh1")
    assert not temp.exists() and not journal_path(temp).exists()


@pytest.mark.parametrize("size", [SINGLE, MULTI], ids=["single", "multipart"])
def test_a_partial_that_failed_verification_is_dropped_with_its_journal(monkeypatch, tmp_path, size):
    monkeypatch.setattr(download, "SINGLE_RESUME_MIN", 1)
    data = os.urandom(size)
    run = Run(tmp_path, data, storage=FakeStorage(b"x" * size), max_attempts=1)
    run.start()
    [error] = run.done
    assert isinstance(error, IntegrityError)
    temp = temp_path(run.job.destination, "fh1")
    assert not temp.exists() and not journal_path(temp).exists()


def test_an_exactly_full_partial_without_an_md5_is_fetched_again(monkeypatch, tmp_path):
    """A run killed after the last byte of a size-only file but before it was checked (the body may go on):
    nothing says those bytes are right, so they are not installed without a fetch."""
    monkeypatch.setattr(download, "SINGLE_RESUME_MIN", 1)
    data = os.urandom(SINGLE)
    run = Run(tmp_path, data, storage=RangeRecordingStorage(data))
    run.job.fetch = run.job.fetch.replaced(handle=FileHandle(id="fh1", content_size=SINGLE, content_md5=None))
    temp = temp_path(run.job.destination, "fh1")
    temp.write_bytes(b"y" * SINGLE)
    journal = ResumeJournal(journal_path(temp), JournalHeader("fh1", SINGLE, "", 0))
    journal.start(_identity(temp))
    journal.close()
    run.start()
    assert run.done == [None] and run.job.destination.read_bytes() == data and run.storage.ranges == ["whole"]


# -- defect 6: a file larger than the free space fails alone -----------------------------------------------------------


def test_a_refused_preallocation_fails_that_file_alone(monkeypatch, tmp_path):
    def no_space(fd, offset, length):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", no_space, raising=False)
    data = os.urandom(MULTI)
    run = Run(tmp_path, data)
    run.start()
    [error] = run.done
    assert isinstance(error, NoRoomForFileError) and error.nature is ErrorNature.PER_FILE
    assert isinstance(error, LocalIOError) and error.errno == errno.ENOSPC
    assert f"no room for its {MULTI} bytes" in str(error)
    temp = temp_path(run.job.destination, "fh1")
    assert not temp.exists() and not journal_path(temp).exists()  # its space goes back to the other files


def test_a_single_stream_larger_than_the_free_space_fails_alone(monkeypatch, tmp_path):
    class Little:
        f_blocks, f_bavail, f_bfree, f_frsize = 1000, 10, 10, 4096

    monkeypatch.setattr(download, "SINGLE_RESUME_MIN", 1)
    monkeypatch.setattr(os, "statvfs", lambda path: Little(), raising=False)
    data = os.urandom(SINGLE)
    run = Run(tmp_path, data)
    run.start()
    [error] = run.done
    assert isinstance(error, NoRoomForFileError) and "(40960 bytes free)" in str(error)
    assert run.storage.gets == 0 and os.listdir(tmp_path) == []


def test_a_write_that_finds_no_space_is_still_fatal():
    error = LocalIOError.from_exception("cannot write x", OSError(errno.ENOSPC, "No space left on device"))
    assert error.nature is ErrorNature.FATAL and str(error) == "cannot write x: disk full"


def test_a_no_room_error_travels_whole(tmp_path):
    import pickle

    error = NoRoomForFileError.of(tmp_path / "f", 10, OSError(errno.ENOSPC, "full"), free=3)
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is NoRoomForFileError and again.errno == errno.ENOSPC and str(again) == str(error)
    assert again.nature is ErrorNature.PER_FILE


# -- by construction: no other way to open a file for writing ---------------------------------------------------------

#: every ``os.open`` in the package (the emulator aside) that may write, with why it is not a download's bytes or
#: goes through the write rule; a new one must be added here, with its reason, or go through open_for_write
WRITE_OPENS = {
    ("transfer/partial.py", "open_for_write"): "the write rule itself: O_CREAT | O_EXCL",
    ("transfer/partial.py", "_reopen"): "the write rule's resume: the journaled inode, one link, fstat-checked",
    ("transfer/direct.py", "open_direct"): "a second (O_DIRECT) descriptor of open_for_write's file, fstat-checked",
    ("portable.py", "try_lock_file"): "the target's lock file: locked, never written",
    (
        "portable.py",
        "__init__",
    ): "ReplacingWriter: a small file's O_CREAT | O_EXCL | O_NOFOLLOW temp file, then renamed "
    "(a manifest, synapseclient's cache map, the gate's state in the user's folder)",
    ("cli.py", "main"): "/dev/null as stdout",
}
_READ_ONLY = ("READ_FLAGS", "O_RDONLY", "O_PATH")
_WRITING = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND")


def _os_opens(package: Path):
    """(module, enclosing function, flags source) of every ``os.open`` call in the package but the emulator."""
    import ast

    for path in sorted(package.rglob("*.py")):
        module = path.relative_to(package).as_posix()
        if module.startswith("emulator/"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]:
            for call in ast.walk(function):
                if (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Attribute)
                    and call.func.attr == "open"
                    and isinstance(call.func.value, ast.Name)
                    and call.func.value.id == "os"
                ):
                    yield module, function.name, ast.unparse(call.args[1]) if len(call.args) > 1 else ""


def test_every_open_for_writing_is_the_write_rule_or_stated():
    import synclient

    found = set()
    for module, function, flags in _os_opens(Path(synclient.__file__).parent):
        # (flags named only by a constant count as writing unless the constant says it reads)
        read_only = any(name in flags for name in _READ_ONLY) and not any(name in flags for name in _WRITING)
        if not read_only:
            found.add((module, function))
    assert found <= set(WRITE_OPENS), f"opens a file for writing outside the write rule: {found - set(WRITE_OPENS)}"
