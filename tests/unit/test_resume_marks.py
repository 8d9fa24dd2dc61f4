"""Byte-level resume (issue 32 part 1): the journal's marks (torn, foreign and lying lines), the durability order
(data synced before the mark that vouches for it), the 4 MiB bound, and downloads resuming each stream from its
mark with the kept bytes hashed from the disk."""

from __future__ import annotations

import errno
import hashlib
import os
from pathlib import Path
from typing import List, Tuple

import pytest
from test_download import PART, FakeStorage, Run

from synclient.errors import LocalIOError
from synclient.events import SyncObserver
from synclient.results import FileResult, SyncReport, SyncStatus
from synclient.transfer import download, partial
from synclient.transfer.partial import (
    DurableMarks,
    FileIdentity,
    JournalHeader,
    ResumeJournal,
    journal_path,
    temp_path,
)

HEADER = JournalHeader(file_handle_id="77", size=100, md5="m", part_size=10)
_HEADER_LINE = '{"file_handle_id": "77", "size": 100, "md5": "m", "part_size": 10, "device": 5, "inode": 42}\n'


def _load(tmp_path: Path, body: bytes, header: JournalHeader = HEADER):
    path = tmp_path / "j.parts"
    path.write_bytes(_HEADER_LINE.encode() + body)
    return ResumeJournal(path, header).load()


def test_a_torn_last_line_is_ignored(tmp_path):
    # "1 1" is what a crash can leave of "1 15\n": read as a mark it would vouch for 1 byte it never synced... or
    # for a whole part ("1" alone once meant finished)
    assert _load(tmp_path, b"0 10\n1 1") == (FileIdentity(5, 42), {0: 10})
    assert _load(tmp_path, b"0 10\n1") == (FileIdentity(5, 42), {0: 10})


def test_the_last_mark_of_a_part_wins_and_a_bare_index_is_a_finished_part(tmp_path):
    assert _load(tmp_path, b"1 12\n2\n1 17\n") == (FileIdentity(5, 42), {1: 17, 2: 30})
    assert _load(tmp_path, b"1 17\n1 10\n").marks == {1: 10}  # a part started again says so


@pytest.mark.parametrize(
    "line",
    [
        b"1 21",  # beyond its part
        b"1 5",  # before its part
        b"10 100",  # a part the file has not
        b"1 \xd9\xa3",  # not ASCII digits
        b"\x00\x00\x00",  # what a crash can leave in a file's appended blocks
        b"1  15",
        b"-1 5",
        b"1 15 16",
        b"1 " + b"1" * 5000,  # more digits than int() takes (Python 3.11: 4300): a ValueError would end the run
        b"1" * 5000 + b" 15",
    ],
)
def test_a_line_that_is_no_mark_of_the_file_is_ignored(tmp_path, line):
    assert _load(tmp_path, b"1 15\n" + line + b"\n").marks == {1: 15}


def test_a_single_streams_one_part_is_the_whole_file(tmp_path):
    header = JournalHeader(file_handle_id="77", size=100, md5="m", part_size=0)
    line = '{"file_handle_id": "77", "size": 100, "md5": "m", "part_size": 0, "device": 5, "inode": 42}\n'
    path = tmp_path / "j.parts"
    path.write_bytes(line.encode() + b"0 40\n0 101\n1 5\n")
    assert ResumeJournal(path, header).load().marks == {0: 40}


class _Recorder:
    """What happened, in order: syncs of the data and marks written to the journal."""

    def __init__(self, monkeypatch, journal: ResumeJournal) -> None:
        self.events: List[Tuple[str, object]] = []
        monkeypatch.setattr(partial, "make_durable", lambda fd: self.events.append(("sync", None)) or True)
        mark = journal.mark
        monkeypatch.setattr(journal, "mark", lambda marks: (self.events.append(("mark", dict(marks))), mark(marks)))


def test_data_is_synced_before_the_mark_that_vouches_for_it_and_the_gap_stays_within_the_bound(tmp_path, monkeypatch):
    chunk = 1024 * 1024
    journal = ResumeJournal(tmp_path / "j.parts", JournalHeader("1", 64 * chunk, "", 32 * chunk))
    journal.start(FileIdentity(1, 2))
    recorder = _Recorder(monkeypatch, journal)
    marks = DurableMarks(journal, -1, marked={0: 0, 1: 32 * chunk}, chunk_size=chunk)
    ends = {0: 0, 1: 32 * chunk}
    synced = dict(ends)  # what the last sync covered
    for step in range(40):
        index = step % 2
        ends[index] += chunk if index == 0 else chunk // 2
        before = len(recorder.events)
        marks.advance(index, ends[index])
        for kind, value in recorder.events[before:]:
            if kind == "sync":
                synced = dict(ends)
            else:
                assert all(end <= synced[i] for i, end in value.items()), "a mark over bytes not synced"
        # what is on disk but unmarked never exceeds the bound, whichever stream wrote last
        marked = journal.load().marks
        for i in (0, 1):
            assert ends[i] - marked.get(i, 32 * chunk * i) <= partial.JOURNAL_EVERY
    ends[0] += 100
    marks.advance(0, ends[0], final=True)
    # one sync of the data marks both streams; then the journal is synced (a power cut keeps the marks)
    assert recorder.events[-3:] == [("sync", None), ("mark", {0: ends[0], 1: ends[1]}), ("sync", None)]


def test_a_reset_mark_is_written_at_once_without_a_sync(tmp_path, monkeypatch):
    journal = ResumeJournal(tmp_path / "j.parts", HEADER)
    journal.start(FileIdentity(1, 2), {1: 18})
    recorder = _Recorder(monkeypatch, journal)
    marks = DurableMarks(journal, -1, marked={1: 18}, chunk_size=4096)
    marks.reset(1, 10)
    assert recorder.events == [("mark", {1: 10})]
    assert journal.load().marks == {1: 10}


# -- downloads -------------------------------------------------------------------------------------------------------

SIZE = 5 * PART + 123  # parts of Run's config (multipart from 2 * PART, 16 KiB chunks, 2 streams)


class Killed(BaseException):
    """A SIGKILL in the middle of a stream: nothing after it runs (no cancel handling, no final mark)."""


class KillAfter(SyncObserver):
    def __init__(self, chunks: int, error: BaseException) -> None:
        self.left, self.error = chunks, error

    def bytes_transferred(self, file, count: int) -> None:
        self.left -= 1
        if self.left == 0:
            raise self.error


class RangeLog(FakeStorage):
    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.ranges: List[str] = []
        self.served = 0

    def get(self, url, *, headers, connect_timeout, read_timeout):
        self.ranges.append(headers.get("Range", "whole"))
        response = super().get(url, headers=headers, connect_timeout=connect_timeout, read_timeout=read_timeout)
        self.served += len(response._body)
        return response


@pytest.fixture
def small_marks(monkeypatch):
    """Marks every 32 KiB (the chunk is 16 KiB): a part of Run's 64 KiB is marked halfway and at its end."""
    monkeypatch.setattr(partial, "JOURNAL_EVERY", 32 * 1024)


def _killed_run(tmp_path: Path, data: bytes, chunks: int) -> Run:
    first = Run(tmp_path, data, observer=KillAfter(chunks, Killed()))
    with pytest.raises(Killed):
        first.start()
    return first


def test_a_killed_multipart_download_resumes_each_part_from_its_mark(tmp_path, small_marks):
    data = os.urandom(SIZE)
    _killed_run(tmp_path, data, chunks=7)  # part 0 done (4 chunks); part 1: 3 chunks written, 2 of them marked
    storage = RangeLog(data)
    second = Run(tmp_path, data, storage=storage)
    second.start()
    assert second.done == [None] and second.job.destination.read_bytes() == data
    assert storage.ranges[0] == f"bytes={PART + 32 * 1024}-{2 * PART - 1}"  # part 1 from its mark, part 0 not at all
    assert second.job.reused == PART + 32 * 1024 == SIZE - storage.served


def test_a_cancelled_multipart_download_marks_every_byte_it_wrote(tmp_path, small_marks):
    from synclient.errors import Cancelled

    data = os.urandom(SIZE)
    first = Run(tmp_path, data, observer=KillAfter(7, Cancelled()))
    first.start()
    assert first.done == []  # cancelled: no outcome, the partial kept
    storage = RangeLog(data)
    second = Run(tmp_path, data, storage=storage)
    second.start()
    assert second.job.destination.read_bytes() == data
    assert storage.ranges[0] == f"bytes={PART + 3 * 16 * 1024}-{2 * PART - 1}"  # Ctrl-C loses nothing written


def test_a_lying_mark_is_caught_by_the_md5_of_the_disk_and_the_file_starts_over(tmp_path, small_marks):
    data = os.urandom(SIZE)
    _killed_run(tmp_path, data, chunks=7)
    temp = temp_path(tmp_path.resolve() / "file.bin", "fh1")
    with open(temp, "r+b") as file:  # bytes under a mark that are not the file's (a disk that lied about a sync)
        file.seek(100)
        file.write(b"\x00" * 10)
    storage = RangeLog(data)
    second = Run(tmp_path, data, storage=storage)
    second.start()
    assert second.done == [None] and second.job.destination.read_bytes() == data
    assert storage.served > SIZE - PART  # the resumed parts failed verification: the whole file came again


def _single_partial(tmp_path: Path, data: bytes, have: bytes, mark: int) -> Path:
    """What a killed single stream leaves: ``have`` in its partial, a journal marking ``mark`` bytes durable."""
    destination = tmp_path.resolve() / "file.bin"
    temp = temp_path(destination, "fh1")
    temp.write_bytes(have)
    journal = ResumeJournal(journal_path(temp), JournalHeader("fh1", len(data), hashlib.md5(data).hexdigest(), 0))
    journal.start(FileIdentity.of(os.lstat(temp)), {0: mark} if mark else {})
    journal.close()
    return temp


@pytest.fixture
def single_journal(monkeypatch):
    monkeypatch.setattr(download, "SINGLE_RESUME_MIN", 1)


def test_a_single_stream_resumes_from_its_mark_not_from_the_partials_length(tmp_path, single_journal):
    data = os.urandom(PART)
    # bytes past the mark may be what a power cut left (zeros, or nothing): never vouched for, never kept
    _single_partial(tmp_path, data, data[:40_000] + b"\x00" * 8_000, mark=40_000)
    storage = RangeLog(data)
    run = Run(tmp_path, data, storage=storage)
    run.start()
    assert run.done == [None] and run.job.destination.read_bytes() == data
    assert storage.ranges == [f"bytes=40000-{PART - 1}"] and run.job.reused == 40_000


@pytest.mark.parametrize("mark", [0, PART // 2 + 1], ids=["no-mark", "mark-beyond-the-file"])
def test_a_single_stream_without_a_mark_it_can_keep_starts_over(tmp_path, single_journal, mark):
    data = os.urandom(PART)
    _single_partial(tmp_path, data, data[: PART // 2], mark=mark)
    storage = RangeLog(data)
    run = Run(tmp_path, data, storage=storage)
    run.start()
    assert run.done == [None] and run.job.destination.read_bytes() == data
    assert storage.ranges == ["whole"] and run.job.reused == 0


def test_a_single_streams_lying_mark_fails_the_md5_of_the_disk_and_is_fetched_again(tmp_path, single_journal):
    data = os.urandom(PART)
    _single_partial(tmp_path, data, b"\x01" * 30_000, mark=30_000)
    storage = RangeLog(data)
    run = Run(tmp_path, data, storage=storage)
    run.start()
    assert run.done == [None] and run.job.destination.read_bytes() == data
    assert storage.ranges == [f"bytes=30000-{PART - 1}", "whole"] and run.job.reused == 0


def test_the_report_counts_transferred_and_reused_bytes_apart():
    report = SyncReport(wall_seconds=1.0)
    result = FileResult("syn1", 1, Path("/t/f"), 50_000_000, "m", SyncStatus.DOWNLOADED)
    report.count(result, reused=20_000_000)
    report.count(FileResult("syn2", 1, Path("/t/g"), 5_000_000, "m", SyncStatus.DOWNLOADED))
    assert (report.bytes_downloaded, report.bytes_reused) == (35_000_000, 20_000_000)
    assert "33.4 MiB transferred in 1.0 s (33.4 MiB/s), 19.1 MiB reused from partial downloads;" in report.summary()
    assert report.to_json()["bytes_reused"] == 20_000_000
    assert "reused" not in SyncReport(bytes_downloaded=5).summary()


# -- a filesystem that cannot sync a file ------------------------------------------------------------------------------


def _no_sync(monkeypatch, errno_: int) -> List[int]:
    """Every fdatasync/fsync fails with ``errno_`` (some FUSE and network filesystems answer EINVAL)."""
    tried: List[int] = []

    def refuse(fd: int) -> None:
        tried.append(fd)
        raise OSError(errno_, os.strerror(errno_))

    monkeypatch.setattr(os, "fdatasync", refuse, raising=False)
    monkeypatch.setattr(os, "fsync", refuse)
    return tried


@pytest.mark.parametrize("code", [errno.EINVAL, errno.EOPNOTSUPP, errno.ENOSYS])
def test_a_filesystem_that_cannot_sync_does_not_fail_the_download_and_still_resumes(
    tmp_path, monkeypatch, small_marks, code
):
    tried = _no_sync(monkeypatch, code)
    data = os.urandom(SIZE)
    _killed_run(tmp_path, data, chunks=7)
    assert tried, "no sync was tried"
    storage = RangeLog(data)
    second = Run(tmp_path, data, storage=storage)
    second.start()
    assert second.done == [None] and second.job.destination.read_bytes() == data
    # the marks were still written (a killed process loses nothing the OS has): the MD5 vouches for the rest
    assert storage.ranges[0] == f"bytes={PART + 32 * 1024}-{2 * PART - 1}"


def test_a_filesystem_that_cannot_sync_keeps_no_marks_for_a_file_without_an_md5(tmp_path, monkeypatch, small_marks):
    _no_sync(monkeypatch, errno.EINVAL)
    journal = ResumeJournal(tmp_path / "j.parts", JournalHeader("1", 64 * 1024, "", 0))
    journal.start(FileIdentity(1, 2))
    marks = DurableMarks(journal, -1, marked={0: 0}, chunk_size=16 * 1024)
    marks.advance(0, 48 * 1024)
    marks.advance(0, 64 * 1024, final=True)
    # nothing synced and nothing to check the bytes by: a mark would vouch for what a power cut may have lost
    assert journal.load().marks == {}


def test_a_sync_that_fails_for_real_fails_the_download(tmp_path, monkeypatch, small_marks):
    _no_sync(monkeypatch, errno.EIO)  # the disk lost written bytes: not a filesystem's missing feature
    data = os.urandom(SIZE)
    run = Run(tmp_path, data)
    run.start()
    [error] = run.done
    assert isinstance(error, LocalIOError) and error.errno == errno.EIO


# -- progress on resume ----------------------------------------------------------------------------------------------


class Progress(SyncObserver):
    """What a display is told: bytes transferred and bytes reused, in order."""

    def __init__(self) -> None:
        self.events: List[Tuple[str, int]] = []

    def bytes_transferred(self, file, count: int) -> None:
        self.events.append(("transferred", count))

    def bytes_reused(self, file, count: int) -> None:
        self.events.append(("reused", count))

    def total(self, kind: str) -> int:
        return sum(count for what, count in self.events if what == kind)


def test_a_resumed_multipart_download_tells_its_kept_bytes_apart_first(tmp_path, small_marks):
    data = os.urandom(SIZE)
    _killed_run(tmp_path, data, chunks=7)
    observed = Progress()
    second = Run(tmp_path, data, observer=observed)
    second.start()
    assert second.done == [None]
    # the display reaches the file's size: the kept bytes as reused (first), the rest as transferred
    assert observed.events[0] == ("reused", PART + 32 * 1024) == ("reused", second.job.reused)
    assert observed.total("transferred") == SIZE - second.job.reused


def test_a_resumed_single_stream_tells_its_kept_bytes_apart_first(tmp_path, single_journal):
    data = os.urandom(PART)
    _single_partial(tmp_path, data, data[:40_000], mark=40_000)
    observed = Progress()
    run = Run(tmp_path, data, observer=observed)
    run.start()
    assert run.done == [None]
    assert observed.events[0] == ("reused", 40_000) and observed.total("transferred") == PART - 40_000


def test_the_bar_starts_at_the_kept_bytes_and_its_rate_counts_only_transferred_ones(monkeypatch):
    import io

    import tqdm.std

    from synclient import progress
    from synclient.events import PlannedFile

    now = [1000.0]
    monkeypatch.setattr(tqdm.std, "time", lambda: now[0])
    stream = io.StringIO()
    bar = progress.ProgressBar(stream=stream, ticking=False)
    file = PlannedFile("syn1", 1, Path("x"), 100 * 1024 * 1024)
    bar.file_planned(file)
    bar.bytes_reused(file, 60 * 1024 * 1024)
    now[0] += 2.0
    bar.bytes_transferred(file, 40 * 1024 * 1024)
    assert (bar._bar.n, bar._bar.total) == (100 * 1024 * 1024, 100 * 1024 * 1024)
    bar.close()
    last = stream.getvalue().rsplit("\r", 1)[-1]
    assert "100%" in last and "100.0 MiB/100.0 MiB" in last and "20.0 MiB/s" in last, last


def test_the_log_lines_count_kept_bytes_as_done_not_in_the_rate():
    from synclient import progress
    from synclient.events import PlannedFile

    lines = progress.ProgressLines(interval=0.0)
    file = PlannedFile("syn1", 1, Path("x"), 100 * 1024 * 1024)
    lines.file_planned(file)
    lines.bytes_reused(file, 60 * 1024 * 1024)
    lines.bytes_transferred(file, 40 * 1024 * 1024)
    assert "100.0 MiB of 100.0 MiB" in lines._line()


def test_a_journal_with_a_number_int_refuses_does_not_stop_the_download(tmp_path, small_marks):
    data = os.urandom(SIZE)
    _killed_run(tmp_path, data, chunks=7)
    journal = journal_path(temp_path(tmp_path.resolve() / "file.bin", "fh1"))
    with open(journal, "ab") as file:
        file.write(b"1 " + b"9" * 5000 + b"\n")
    storage = RangeLog(data)
    second = Run(tmp_path, data, storage=storage)
    second.start()
    assert second.done == [None] and second.job.destination.read_bytes() == data
    assert storage.ranges[0] == f"bytes={PART + 32 * 1024}-{2 * PART - 1}"  # the line ignored, the marks kept


# -- a stream that fails for good ------------------------------------------------------------------------------------


def test_a_part_that_fails_for_good_marks_what_it_wrote_for_the_next_run(tmp_path, small_marks):
    from synclient.errors import TransferError

    data = os.urandom(SIZE)
    first = Run(tmp_path, data, observer=KillAfter(7, TransferError("connection cut")), max_attempts=1)
    first.start()
    [error] = first.done
    assert isinstance(error, TransferError)  # failed (its partial kept): part 1 wrote 3 chunks, 2 of them marked
    storage = RangeLog(data)
    second = Run(tmp_path, data, storage=storage)
    second.start()
    assert second.done == [None] and second.job.destination.read_bytes() == data
    assert storage.ranges[0] == f"bytes={PART + 3 * 16 * 1024}-{2 * PART - 1}"  # every written byte kept


def test_a_single_stream_that_fails_for_good_marks_what_it_wrote_for_the_next_run(tmp_path, single_journal):
    from synclient.errors import TransferError

    data = os.urandom(PART)  # one stream of 4 chunks: the marks (every 4 MiB) would keep none of them
    first = Run(tmp_path, data, observer=KillAfter(3, TransferError("connection cut")), max_attempts=1)
    first.start()
    [error] = first.done
    assert isinstance(error, TransferError)
    storage = RangeLog(data)
    second = Run(tmp_path, data, storage=storage)
    second.start()
    assert second.done == [None] and second.job.destination.read_bytes() == data
    assert storage.ranges == [f"bytes={3 * 16 * 1024}-{PART - 1}"] and second.job.reused == 3 * 16 * 1024


# -- storage that will not resume ------------------------------------------------------------------------------------


class WrongRange(RangeLog):
    """Answers a range from past the file's start with another one than asked (206, a Content-Range that starts
    one byte further on)."""

    def get(self, url, *, headers, connect_timeout, read_timeout):
        if "Range" in headers:
            start, end = (int(n) for n in headers["Range"][len("bytes=") :].split("-"))
            if start:
                headers = dict(headers, Range=f"bytes={start + 1}-{end}")
        return super().get(url, headers=headers, connect_timeout=connect_timeout, read_timeout=read_timeout)


@pytest.mark.parametrize("storage_of", [lambda data: RangeLog(data), lambda data: WrongRange(data)])
def test_a_single_stream_whose_storage_will_not_resume_takes_the_whole_body(tmp_path, single_journal, storage_of):
    data = os.urandom(PART)
    _single_partial(tmp_path, data, data[:40_000], mark=40_000)
    storage = storage_of(data)
    storage.honours_range = isinstance(storage, WrongRange)  # RangeLog: a 200 with the whole body
    run = Run(tmp_path, data, storage=storage)
    run.start()
    assert run.done == [None] and run.job.destination.read_bytes() == data
    assert run.job.reused == 0 and storage.ranges[-1] == "whole"


def test_a_multipart_download_whose_storage_ignores_range_on_resume_is_fetched_whole(tmp_path, small_marks):
    data = os.urandom(SIZE)
    _killed_run(tmp_path, data, chunks=7)
    storage = RangeLog(data)
    storage.honours_range = False
    second = Run(tmp_path, data, storage=storage)
    second.start()
    assert second.done == [None] and second.job.destination.read_bytes() == data
    assert second.job.reused == 0 and storage.ranges[-1] == "whole"
