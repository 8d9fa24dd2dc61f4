"""The Downloader's own pieces, with fakes for the pool, the URL broker and storage."""
import errno
import hashlib
import os
import threading
from pathlib import Path
from typing import Callable, Dict, List, Optional

import pytest

from synclient.errors import Cancelled, LocalIOError, NotFoundError, SynclientError
from synclient.events import SyncObserver
from synclient.models import FileHandle
from synclient.transfer.config import TransferConfig
from synclient.transfer.download import Downloader, FileJob, reporting_failures
from synclient.transfer.partial import journal_path, temp_path
from synclient.transfer.urls import SignedUrl

DESTINATION = Path("/somewhere/file.bin")
PART = 64 * 1024  # the smallest part size TransferConfig allows


# -- reporting_failures: the one mapping of what fails in a download to what is reported ------------------------

def test_a_synclient_error_is_reported_as_it_is():
    reported = []
    error = NotFoundError("gone", status=404)
    with reporting_failures(reported.append, DESTINATION):
        raise error
    assert reported == [error]


def test_an_os_error_is_reported_as_the_local_error_of_writing_the_destination():
    reported = []
    with reporting_failures(reported.append, DESTINATION):
        raise OSError(errno.ENOSPC, "No space left on device")
    [error] = reported
    assert isinstance(error, LocalIOError) and error.errno == errno.ENOSPC
    assert str(error) == f"cannot write {DESTINATION}: disk full"


def test_a_local_error_already_named_is_not_wrapped_again():
    reported = []
    error = LocalIOError("cannot write x: read-only")
    with reporting_failures(reported.append, DESTINATION):
        raise error
    assert reported == [error]


def test_cancelled_propagates_unreported():
    reported = []
    with pytest.raises(Cancelled):
        with reporting_failures(reported.append, DESTINATION):
            raise Cancelled()
    assert reported == []


def test_anything_else_is_a_bug_and_propagates():
    reported = []
    with pytest.raises(KeyError):
        with reporting_failures(reported.append, DESTINATION):
            raise KeyError("bug")
    assert reported == []


def test_a_block_that_succeeds_reports_nothing():
    reported = []
    with reporting_failures(reported.append, DESTINATION):
        pass
    assert reported == []


# -- fakes of the Downloader's collaborators -------------------------------------------------------------------

class NoWaitEvent(threading.Event):
    """The pool's cancel event; as the retry loop's sleep it returns at once (the tests do not wait out backoff)."""

    def wait(self, timeout: Optional[float] = None) -> bool:
        return self.is_set()


class FakePool:
    """Tasks run one after the other, in the order submitted, when the test drains the pool."""

    def __init__(self) -> None:
        self.cancel_event = NoWaitEvent()
        self.tasks: List[Callable[[], None]] = []

    def submit(self, priority, fn, *args) -> None:
        self.tasks.append(lambda: fn(*args))

    def drain(self) -> None:
        while self.tasks:
            self.tasks.pop(0)()


class FakeBroker:
    """fetch_one answers a fresh URL, or raises the next of ``failures``."""

    def __init__(self, failures: List[SynclientError] = ()) -> None:
        self.failures = list(failures)
        self.calls = 0

    def fetch_one(self, request) -> SignedUrl:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return SignedUrl(f"https://storage.example/object?n={self.calls}")


class FakeResponse:
    def __init__(self, status: int, headers: Dict[str, str], body: bytes) -> None:
        self.status, self.headers, self._body = status, headers, body

    def read(self, amount: int, decode_content: bool = False) -> bytes:
        data, self._body = self._body[:amount], self._body[amount:]
        return data

    def release_conn(self) -> None:
        pass

    def close(self) -> None:
        pass


class FakeStorage:
    """The data client: serves ``data`` (whole, or by Range unless it ignores Range); the first ``fail`` GETs
    answer HTTP 500."""

    def __init__(self, data: bytes, *, fail: int = 0, honours_range: bool = True) -> None:
        self.data, self.fail, self.gets, self.honours_range = data, fail, 0, honours_range

    def get(self, url: str, *, headers: Dict[str, str], connect_timeout: float, read_timeout: float) -> FakeResponse:
        self.gets += 1
        if self.gets <= self.fail:
            return FakeResponse(500, {}, b"")
        if "Range" not in headers or not self.honours_range:
            return FakeResponse(200, {"Content-Length": str(len(self.data))}, self.data)
        start, end = (int(n) for n in headers["Range"][len("bytes="):].split("-"))
        body = self.data[start:end + 1]
        return FakeResponse(206, {"Content-Range": f"bytes {start}-{end}/{len(self.data)}",
                                  "Content-Length": str(len(body))}, body)


class FailingObserver(SyncObserver):
    """Raises ``error`` from the sink of the download (as a full disk would from its write)."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def bytes_transferred(self, file, count: int) -> None:
        raise self.error


class Run:
    def __init__(self, tmp_path: Path, data: bytes, *, broker: FakeBroker = None, storage: FakeStorage = None,
                 observer: SyncObserver = None, url: Optional[SignedUrl] = None, max_attempts: int = 3) -> None:
        self.pool = FakePool()
        self.broker = broker or FakeBroker()
        self.storage = storage or FakeStorage(data)
        self.done: List[Optional[SynclientError]] = []
        config = TransferConfig(multipart_threshold=2 * PART, part_size=PART, streams_per_file=2,
                                chunk_size=16 * 1024, max_attempts=max_attempts, direct_io=False)
        self.downloader = Downloader(pool=self.pool, broker=self.broker, client=self.storage, config=config,
                                     observer=observer or SyncObserver(),
                                     on_done=lambda job, error: self.done.append(error))
        handle = FileHandle(id="fh1", content_size=len(data), content_md5=hashlib.md5(data).hexdigest())
        self.job = FileJob(entity_id="syn1", version=1, handle=handle, destination=tmp_path.resolve() / "file.bin",
                           url=url)

    def start(self) -> None:
        self.downloader.start(self.job)
        self.pool.drain()


@pytest.mark.parametrize("size", [PART, 5 * PART + 123])  # one stream; parts
def test_a_download_that_works_installs_the_file_and_reports_once(tmp_path, size):
    data = os.urandom(size)
    run = Run(tmp_path, data)
    run.start()
    assert run.done == [None]
    assert run.job.destination.read_bytes() == data
    assert not temp_path(run.job.destination, "fh1").exists()
    assert not journal_path(temp_path(run.job.destination, "fh1")).exists()


def test_a_local_error_in_a_part_fails_the_file_once_as_a_local_error(tmp_path):
    data = os.urandom(5 * PART)
    run = Run(tmp_path, data, observer=FailingObserver(OSError(errno.EIO, "Input/output error")))
    run.start()
    [error] = run.done
    assert isinstance(error, LocalIOError) and error.errno == errno.EIO
    assert not run.job.destination.exists()


def test_cancelled_in_a_part_reports_nothing_and_keeps_the_partial_file(tmp_path):
    data = os.urandom(5 * PART)
    run = Run(tmp_path, data, observer=FailingObserver(Cancelled()))
    run.start()
    assert run.done == []
    assert temp_path(run.job.destination, "fh1").exists()


def test_cancelled_while_a_multipart_download_falls_back_to_one_stream_propagates_unreported(tmp_path):
    """Storage ignoring Range turns a multipart download into one stream, started by the part that finishes
    last; a cancel met there stops the task (as anywhere else in a download) instead of failing the file."""
    data = os.urandom(5 * PART)
    run = Run(tmp_path, data, storage=FakeStorage(data, honours_range=False), observer=FailingObserver(Cancelled()))
    with pytest.raises(Cancelled):
        run.start()
    assert run.done == []


def test_storage_ignoring_range_gets_the_file_in_one_stream(tmp_path):
    data = os.urandom(5 * PART)
    run = Run(tmp_path, data, storage=FakeStorage(data, honours_range=False))
    run.start()
    assert run.done == [None]
    assert run.job.destination.read_bytes() == data
