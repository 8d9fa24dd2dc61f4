"""The Downloader's own pieces, with fakes for the pool, the URL broker and storage."""

import errno
import hashlib
import os
import threading
from pathlib import Path
from typing import Callable, Dict, List, Optional

import pytest

from synclient.errors import (
    Cancelled,
    IntegrityError,
    LocalIOError,
    MalformedAnswerError,
    NotFoundError,
    ServerError,
    SynclientError,
    ThrottledError,
    TransferError,
    UrlRejectedError,
)
from synclient.events import SyncObserver
from synclient.platform.models import FileHandle
from synclient.transfer.config import TransferConfig
from synclient.transfer.download import Downloader, FileJob, reporting_failures
from synclient.transfer.jobs import FetchJob
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
    answer HTTP ``status`` instead."""

    def __init__(self, data: bytes, *, fail: int = 0, status: int = 500, honours_range: bool = True) -> None:
        self.data, self.fail, self.status, self.honours_range = data, fail, status, honours_range
        self.gets = 0
        self.urls: List[str] = []

    def get(self, url: str, *, headers: Dict[str, str], connect_timeout: float, read_timeout: float) -> FakeResponse:
        self.gets += 1
        self.urls.append(url)
        if self.gets <= self.fail:
            return FakeResponse(self.status, {}, b"")
        if "Range" not in headers or not self.honours_range:
            return FakeResponse(200, {"Content-Length": str(len(self.data))}, self.data)
        start, end = (int(n) for n in headers["Range"][len("bytes=") :].split("-"))
        body = self.data[start : end + 1]
        return FakeResponse(
            206, {"Content-Range": f"bytes {start}-{end}/{len(self.data)}", "Content-Length": str(len(body))}, body
        )


class FailingObserver(SyncObserver):
    """Raises ``error`` from the sink of the download (as a full disk would from its write)."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def bytes_transferred(self, file, count: int) -> None:
        raise self.error


class Run:
    def __init__(
        self,
        tmp_path: Path,
        data: bytes,
        *,
        broker: FakeBroker = None,
        storage: FakeStorage = None,
        observer: SyncObserver = None,
        url: Optional[SignedUrl] = None,
        max_attempts: int = 3,
    ) -> None:
        self.pool = FakePool()
        self.broker = broker or FakeBroker()
        self.storage = storage or FakeStorage(data)
        self.done: List[Optional[SynclientError]] = []
        config = TransferConfig(
            multipart_threshold=2 * PART,
            part_size=PART,
            streams_per_file=2,
            chunk_size=16 * 1024,
            max_attempts=max_attempts,
            direct_io=False,
        )
        self.downloader = Downloader(
            pool=self.pool, broker=self.broker, client=self.storage, config=config, observer=observer or SyncObserver()
        )
        handle = FileHandle(id="fh1", content_size=len(data), content_md5=hashlib.md5(data).hexdigest())
        self.job = FileJob(
            FetchJob("syn1", 1, handle, tmp_path.resolve() / "file.bin"), on_done=self.done.append, url=url
        )

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
    assert run.storage.gets == 2  # the refused part is not tried again (RangeNotHonouredError: per file)


# -- what the retry loop of a stream tries again: the error's nature ---------------------------------------------

SMALL, LARGE = PART, 5 * PART  # one stream; parts


@pytest.mark.parametrize("size", [SMALL, LARGE])
@pytest.mark.parametrize(
    "make_error",
    [
        lambda: ServerError("503 from the platform", status=503),
        lambda: ThrottledError("429 from the platform", status=429),
        lambda: MalformedAnswerError("not JSON"),
    ],
    ids=["503", "429", "malformed"],
)
def test_a_retryable_platform_error_of_the_url_refresh_is_not_tried_again_by_the_download(tmp_path, size, make_error):
    """The platform already retried the REST call until its tries ran out and raised the error marked spent (as
    tests/unit/test_error_nature.py shows): the download's own tries must not multiply them (fetch_one is called
    once, and the file fails with that error)."""
    error = make_error()
    assert error.retryable  # by nature; as the platform raises it after its tries, it is spent
    error.spent()
    data = os.urandom(size)
    run = Run(tmp_path, data, broker=FakeBroker([error]))  # no URL yet: the first stream asks for one
    run.start()
    assert run.done == [error]
    assert run.broker.calls == 1 and run.storage.gets == 0
    assert error.retries_spent and not error.retryable


@pytest.mark.parametrize("size", [SMALL, LARGE])
def test_a_transfer_error_is_tried_again_up_to_max_attempts(tmp_path, size):
    data = os.urandom(size)
    run = Run(
        tmp_path, data, storage=FakeStorage(data, fail=2), url=SignedUrl("https://storage.example/o"), max_attempts=3
    )
    run.start()
    assert run.done == [None]
    assert run.job.destination.read_bytes() == data
    assert run.storage.gets == 2 + (1 if size == SMALL else 5)  # two failed tries, then every stream once


def test_transfer_errors_stop_after_max_attempts(tmp_path):
    data = os.urandom(SMALL)
    run = Run(
        tmp_path, data, storage=FakeStorage(data, fail=10), url=SignedUrl("https://storage.example/o"), max_attempts=3
    )
    run.start()
    [error] = run.done
    assert type(error) is TransferError
    assert run.storage.gets == 3


def test_a_rejected_url_is_refreshed_and_tried_again(tmp_path):
    data = os.urandom(SMALL)
    first = SignedUrl("https://storage.example/o?first")
    run = Run(tmp_path, data, storage=FakeStorage(data, fail=1, status=403), url=first, max_attempts=3)
    run.start()
    assert run.done == [None]
    assert run.broker.calls == 1  # the refresh after the 403 (UrlRejectedError, a TransferError)
    assert run.storage.urls == [first.url, "https://storage.example/object?n=1"]
    assert issubclass(UrlRejectedError, TransferError)


def test_bytes_that_do_not_match_are_fetched_again_up_to_max_attempts(tmp_path):
    data = os.urandom(SMALL)
    run = Run(
        tmp_path, data, storage=FakeStorage(b"x" * SMALL), url=SignedUrl("https://storage.example/o"), max_attempts=3
    )
    run.start()
    [error] = run.done
    assert isinstance(error, IntegrityError)
    assert run.storage.gets == 3
