"""The fetch stage (synclient/transfer/fetcher.py) without a server: the local fetcher asks the URL batch and
either refuses the file (the batch's error, a URL synclient does not fetch) or starts its download; synapseclient's
cache stands in front of any fetcher (a copy instead of a fetch, the fetch when the copy is not the file), and
every file installed is recorded there; the job and its outcome pickle (they travel to Dask workers)."""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path
from typing import List, Optional, Tuple

import pytest

from synclient.errors import IntegrityError, NotFoundError, SynclientError, UnsupportedError
from synclient.events import SyncObserver
from synclient.platform.models import FileHandle, FileHandleRequest
from synclient.synapse_cache import SynapseCache
from synclient.transfer.config import TransferConfig
from synclient.transfer.download import Downloader, FileJob
from synclient.transfer.fetcher import LocalFetcher, OnFetched, SynapseCacheFirst
from synclient.transfer.jobs import FetchJob, FileFetched, LocalState
from synclient.transfer.partial import SymlinkFreeFolders
from synclient.transfer.pool import TaskPool
from synclient.transfer.urls import SignedUrl

DATA = b"the remote's bytes\n" * 3


def _job(tmp_path: Path, data: bytes = DATA, handle_id: str = "1234") -> FetchJob:
    return FetchJob("syn1", 2, FileHandle(handle_id, len(data), hashlib.md5(data).hexdigest()), tmp_path / "f.txt")


class FakeBroker:
    """Answers every URL request at once with ``url`` or ``error``."""

    def __init__(self, url: Optional[str] = None, error: Optional[SynclientError] = None) -> None:
        self.answer = (SignedUrl(url) if url else None, error)
        self.requests: List[FileHandleRequest] = []

    def request(self, request: FileHandleRequest, on_ready) -> None:
        self.requests.append(request)
        on_ready(*self.answer)


class FakeDownloader:
    """Installs ``DATA`` for every job it starts; a copy from the cache raises ``copy_error`` if given."""

    def __init__(self, copy_error: Optional[SynclientError] = None) -> None:
        self.started: List[FileJob] = []
        self.copy_error = copy_error

    def start(self, job: FileJob) -> None:
        self.started.append(job)
        job.destination.write_bytes(DATA)
        job.on_done(None)

    def copy_local(self, job: FileJob, source: Path, *, link: bool = False) -> None:
        raise self.copy_error or AssertionError("not expected")


def _local(broker: FakeBroker, downloader: FakeDownloader) -> Tuple[LocalFetcher, TaskPool]:
    pool = TaskPool(1)
    return LocalFetcher(pool=pool, broker=broker, downloader=downloader), pool  # type: ignore[arg-type]


def _fetch(fetcher, pool: TaskPool, job: FetchJob) -> List[FileFetched]:
    got: List[FileFetched] = []
    fetcher.fetch(job, got.append)
    pool.run()
    return got


def test_a_url_starts_the_download_of_the_very_fetch_observers_were_told_of(tmp_path):
    broker, downloader = FakeBroker(url="https://storage.example/f?X-Amz-Signature=s"), FakeDownloader()
    fetcher, pool = _local(broker, downloader)
    job = _job(tmp_path)
    (fetched,) = _fetch(fetcher, pool, job)
    assert fetched == FileFetched("syn1", job.destination, None, len(DATA))
    assert [request.file_handle_id for request in broker.requests] == ["1234"]
    (started,) = downloader.started
    assert started.url is not None and started.planned is job.planned


@pytest.mark.parametrize(
    "answer, refusal",
    [
        (dict(error=NotFoundError("file handle 1234 is gone")), NotFoundError),
        (dict(url="ftp://elsewhere.example/f.txt"), UnsupportedError),
    ],
)
def test_a_refused_url_fails_the_file_without_a_download(tmp_path, answer, refusal):
    downloader = FakeDownloader()
    fetcher, pool = _local(FakeBroker(**answer), downloader)
    (fetched,) = _fetch(fetcher, pool, _job(tmp_path))
    assert isinstance(fetched.error, refusal) and fetched.received is None and downloader.started == []


class Inner:
    """The fetcher behind the cache: installs (or fails with ``error``), counting its jobs."""

    def __init__(self, error: Optional[SynclientError] = None) -> None:
        self.jobs: List[FetchJob] = []
        self.error = error

    def fetch(self, job: FetchJob, on_fetched: OnFetched) -> None:
        self.jobs.append(job)
        if self.error is None:
            job.destination.write_bytes(DATA)
        on_fetched(FileFetched.of(job, self.error))


def _cache_first(tmp_path: Path, inner: Inner, downloader=None) -> Tuple[SynapseCacheFirst, TaskPool, SynapseCache]:
    (tmp_path / "cache").mkdir(exist_ok=True)
    cache = SynapseCache(tmp_path / "cache")
    pool = TaskPool(1)
    folders = SymlinkFreeFolders()
    downloader = downloader or Downloader(
        pool=pool,
        broker=None,
        client=None,  # type: ignore[arg-type]
        config=TransferConfig(),
        observer=SyncObserver(),
        folders=folders,
    )
    return SynapseCacheFirst(inner, cache=cache, pool=pool, downloader=downloader), pool, cache


def _cached(tmp_path: Path, cache: SynapseCache, job: FetchJob) -> Path:
    copy = tmp_path / "elsewhere.txt"
    copy.write_bytes(DATA)
    cache.record(job.handle.id, copy, job.handle.content_md5 or "")
    return copy


def _recorded(cache: SynapseCache, job: FetchJob, *, not_at: Path) -> Optional[Path]:
    return cache.lookup(job.handle.id, md5=job.handle.content_md5, size=job.size, not_at=not_at)


def test_a_copy_in_synapseclients_cache_stands_in_for_the_fetch(tmp_path):
    (tmp_path / "t").mkdir()
    inner = Inner()
    fetcher, pool, cache = _cache_first(tmp_path, inner)
    job = _job(tmp_path / "t")
    copy = _cached(tmp_path, cache, job)
    (fetched,) = _fetch(fetcher, pool, job)
    assert fetched.error is None and fetched.from_cache and inner.jobs == []
    assert job.destination.read_bytes() == DATA
    assert _recorded(cache, job, not_at=copy) == job.destination  # recorded for synapseclient in turn


def test_without_a_copy_the_fetcher_behind_fetches_and_the_file_is_recorded(tmp_path):
    inner = Inner()
    fetcher, pool, cache = _cache_first(tmp_path, inner)
    job = _job(tmp_path)
    (fetched,) = _fetch(fetcher, pool, job)
    assert fetched.error is None and not fetched.from_cache and inner.jobs == [job]
    assert _recorded(cache, job, not_at=tmp_path / "nowhere") == job.destination


def test_a_copy_that_is_not_the_file_falls_back_to_the_fetch(tmp_path):
    inner = Inner()
    fetcher, pool, cache = _cache_first(tmp_path, inner, FakeDownloader(copy_error=IntegrityError("MD5 mismatch")))
    job = _job(tmp_path)
    _cached(tmp_path, cache, job)
    (fetched,) = _fetch(fetcher, pool, job)
    assert fetched.error is None and not fetched.from_cache and inner.jobs == [job]


def test_a_file_that_failed_is_not_recorded(tmp_path):
    fetcher, pool, cache = _cache_first(tmp_path, Inner(error=NotFoundError("gone")))
    job = _job(tmp_path)
    (fetched,) = _fetch(fetcher, pool, job)
    assert isinstance(fetched.error, NotFoundError)
    assert not cache.cache_dir(job.handle.id).exists()


def test_a_job_and_its_outcome_travel_by_pickle_and_keep_their_meaning(tmp_path):
    job = _job(tmp_path).replaced(before=LocalState(1, 2, 3))
    back = pickle.loads(pickle.dumps(job))
    assert back == job and back.before == LocalState(1, 2, 3) and back.planned.path == job.destination
    fetched = FileFetched.of(job, NotFoundError("gone"))
    assert pickle.loads(pickle.dumps(fetched)).destination == job.destination and fetched.received is None
    assert FileFetched.of(job).received == len(DATA)


def test_another_handle_is_the_same_fetch_to_observers(tmp_path):
    job = _job(tmp_path)
    other = job.replaced(handle=FileHandle("99", len(DATA), job.handle.content_md5))
    assert other.handle.id == "99" and other.planned is job.planned and other.destination == job.destination
