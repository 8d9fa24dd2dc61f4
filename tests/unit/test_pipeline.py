"""The per-file pipeline (synclient/sync/pipeline.py) without a server: a fake platform answers bundles, a fake
fetcher stands for the fetch stage (synclient/transfer/fetcher.py), and each file goes bundle -> decide -> fetch ->
record on a real pool, index and effects. What the fetcher refuses fails its file; a view row's handle it refuses
gets one more chance from the bundle; a file whose bytes are already there is kept, not fetched."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Tuple

import pytest

from synclient.errors import AccessDeniedError, NotFoundError, SynclientError
from synclient.events import PlannedFile, SyncObserver
from synclient.platform.models import Entity, EntityHeader, EntityType, FileBundle, FileHandle
from synclient.results import FROM_SYNAPSE_CACHE, FileResult, SyncStatus
from synclient.sync.claims import PathClaims
from synclient.sync.effects import AppliedEffects
from synclient.sync.local.paths import TargetDirectory
from synclient.sync.manifest_assembly import ManifestAssembly
from synclient.sync.options import SyncOptions
from synclient.sync.pipeline import FilePipeline
from synclient.sync.records.index import LocalIndex
from synclient.sync.sources.by_id import DescribedFiles, FileVersionFacts
from synclient.sync.sources.walker import FoundFile
from synclient.transfer.fetcher import OnFetched
from synclient.transfer.jobs import FetchJob, FileFetched
from synclient.transfer.partial import SymlinkFreeFolders, partial_key
from synclient.transfer.pool import TaskPool

ROOT = "syn100"
DATA = b"the remote's bytes\n"


def _handle(handle_id: str, data: bytes = DATA) -> FileHandle:
    return FileHandle(handle_id, len(data), hashlib.md5(data).hexdigest())


class FakePlatform:
    """Answers bundle calls from ``bundles`` (entity id -> handle), counting them."""

    def __init__(self, bundles: Dict[str, FileHandle]) -> None:
        self.bundles = bundles
        self.bundle_calls: List[str] = []

    def get_file_bundle(
        self, entity_id: str, *, version: Optional[int] = None, include_annotations: bool = False
    ) -> FileBundle:
        self.bundle_calls.append(entity_id)
        handle = self.bundles[entity_id]
        entity = Entity(
            entity_id, "f.txt", EntityType.FILE, parent_id=ROOT, version_number=version, data_file_handle_id=handle.id
        )
        return FileBundle(entity, handle, {"annotations": {}})


Answer = Callable[[FetchJob, OnFetched], None]


class FakeFetcher:
    """The fetch stage: keeps every job it is given; ``answers`` say what becomes of each, in turn."""

    def __init__(self, *answers: Answer) -> None:
        self.jobs: List[FetchJob] = []
        self._answers = list(answers)

    def fetch(self, job: FetchJob, on_fetched: OnFetched) -> None:
        self.jobs.append(job)
        self._answers.pop(0)(job, on_fetched)


def installs(job: FetchJob, on_fetched: OnFetched) -> None:
    """The file arrives, verified."""
    job.destination.write_bytes(DATA)
    on_fetched(FileFetched.of(job))


def copies_from_cache(job: FetchJob, on_fetched: OnFetched) -> None:
    job.destination.write_bytes(DATA)
    on_fetched(FileFetched.of(job, from_cache=True))


def refuses(error: SynclientError) -> Answer:
    return lambda job, on_fetched: on_fetched(FileFetched.of(job, error))


class Planned(SyncObserver):
    def __init__(self) -> None:
        self.planned: List[PlannedFile] = []

    def file_planned(self, file: PlannedFile) -> None:
        self.planned.append(file)


class Run:
    """One pipeline wired as a run wires it (sync/runner.py), around a fake platform and fetcher."""

    def __init__(
        self,
        root: Path,
        index: LocalIndex,
        platform: FakePlatform,
        fetcher: FakeFetcher,
        described: Optional[DescribedFiles] = None,
    ) -> None:
        self.target = TargetDirectory(root)
        self.index = index
        self.platform = platform
        self.fetcher = fetcher
        self.observer = Planned()
        self.pool = TaskPool(2)
        self.folders = SymlinkFreeFolders()
        options = SyncOptions()
        self.effects = AppliedEffects(
            target=self.target,
            index=index,
            observer=self.observer,
            is_fatal=lambda error: False,
            on_fatal=lambda: None,
            list_in_manifest=False,
        )
        claims = PathClaims(
            platform=platform,
            target=self.target,
            index=index,
            options=options,  # type: ignore[arg-type]
            effects=self.effects,
        )
        self.pipeline = FilePipeline(
            platform=platform,
            pool=self.pool,
            fetcher=fetcher,  # type: ignore[arg-type]
            target=self.target,
            index=index,
            root_id=ROOT,
            options=options,
            effects=self.effects,
            claims=claims,
            manifests=ManifestAssembly(target=self.target, index=index, root_id=ROOT),
            folders=self.folders,
            observer=self.observer,
            described=described,
        )

    def sync(self, entity_id: str = "syn1", name: str = "f.txt") -> FileResult:
        header = EntityHeader(entity_id, name, EntityType.FILE, version_number=1)
        self.pipeline.files_found([FoundFile(header, self.target.root / name, name, ROOT)])
        try:
            self.pool.run()
        finally:
            self.folders.close()
        (result,) = self.effects.results
        return result

    def indexed(self, rel_path: str = "f.txt") -> Tuple[Optional[str], Optional[str]]:
        """(handle id, local path) of the file's index row, or (None, None)."""
        self.index.flush()
        row = self.index.get_many([rel_path]).get(rel_path)
        return (row.file_handle_id, row.local_path) if row is not None else (None, None)


@pytest.fixture
def index(tmp_path: Path) -> Iterator[LocalIndex]:
    root = tmp_path / "target"
    root.mkdir()
    with LocalIndex(root) as opened:
        yield opened


def _run(
    index: LocalIndex, platform: FakePlatform, fetcher: FakeFetcher, described: Optional[DescribedFiles] = None
) -> Run:
    return Run(index.target_root, index, platform, fetcher, described)


def test_a_new_file_is_decided_fetched_and_recorded(index):
    platform, fetcher = FakePlatform({"syn1": _handle("7")}), FakeFetcher(installs)
    run = _run(index, platform, fetcher)
    result = run.sync()
    assert result.status is SyncStatus.DOWNLOADED and result.error is None and result.action == "download"
    assert platform.bundle_calls == ["syn1"]
    (job,) = fetcher.jobs
    assert (job.entity_id, job.version, job.handle.id) == ("syn1", 1, "7")
    assert job.destination == run.target.root / "f.txt"
    assert run.observer.planned == [job.planned]  # observers follow the fetch the fetcher was given
    assert run.indexed() == ("7", "f.txt")
    assert result.size == len(DATA) and result.verification is not None


def test_what_the_fetcher_refuses_fails_its_file_and_is_not_indexed(index):
    denied = AccessDeniedError("syn1: no download permission", status=403)
    run = _run(index, FakePlatform({"syn1": _handle("7")}), FakeFetcher(refuses(denied)))
    result = run.sync()
    assert result.status is SyncStatus.FAILED and result.error is denied
    assert run.indexed() == (None, None)
    assert partial_key(run.target.root / "f.txt") in run.pipeline.partials_to_keep()  # the next run resumes it


def test_a_copy_from_synapseclients_cache_is_reported_as_such(index):
    run = _run(index, FakePlatform({"syn1": _handle("7")}), FakeFetcher(copies_from_cache))
    result = run.sync()
    assert result.status is SyncStatus.DOWNLOADED and result.action == FROM_SYNAPSE_CACHE
    assert run.indexed() == ("7", "f.txt")


def _from_view_row(handle: FileHandle) -> DescribedFiles:
    """The run knows syn1's handle from a file view's row: no bundle call for it unless the fetch refuses it."""
    return {("syn1", 1): FileVersionFacts(handle, 1, ROOT, {}, None, from_row=True)}


def test_a_view_rows_handle_the_fetch_refuses_is_fetched_again_from_the_bundle(index):
    """The view lags behind a handle replaced in place (the same bytes): the bundle's handle is fetched instead,
    once, and observers still see one fetch."""
    platform = FakePlatform({"syn1": _handle("8")})
    fetcher = FakeFetcher(refuses(NotFoundError("file handle 7 is gone")), installs)
    run = _run(index, platform, fetcher, described=_from_view_row(_handle("7")))
    result = run.sync()
    assert result.status is SyncStatus.DOWNLOADED
    assert platform.bundle_calls == ["syn1"]  # the retry's, not a decision's
    assert [job.handle.id for job in fetcher.jobs] == ["7", "8"]
    assert fetcher.jobs[0].planned is fetcher.jobs[1].planned and run.observer.planned == [fetcher.jobs[0].planned]
    assert run.indexed() == ("8", "f.txt")


def test_a_refusal_stands_when_the_bundle_holds_other_bytes(index):
    refused = AccessDeniedError("file handle 7: access denied", status=403)
    platform = FakePlatform({"syn1": _handle("8", b"other bytes")})
    fetcher = FakeFetcher(refuses(refused))
    run = _run(index, platform, fetcher, described=_from_view_row(_handle("7")))
    result = run.sync()
    assert result.status is SyncStatus.FAILED and result.error is refused
    assert [job.handle.id for job in fetcher.jobs] == ["7"] and platform.bundle_calls == ["syn1"]


def test_a_bundles_refusal_is_final(index):
    """A handle from a bundle that the fetch refuses fails the file: no second bundle, no second fetch."""
    platform = FakePlatform({"syn1": _handle("7")})
    fetcher = FakeFetcher(refuses(NotFoundError("gone")))
    run = _run(index, platform, fetcher)
    assert run.sync().status is SyncStatus.FAILED
    assert len(fetcher.jobs) == 1 and platform.bundle_calls == ["syn1"]


def test_a_file_already_holding_the_remote_bytes_is_kept_not_fetched(index):
    (index.target_root / "f.txt").write_bytes(DATA)
    fetcher = FakeFetcher()  # any fetch would fail the test: no answer for it
    run = _run(index, FakePlatform({"syn1": _handle("7")}), fetcher)
    result = run.sync()
    assert result.status is SyncStatus.SKIPPED and result.action == "adopt" and fetcher.jobs == []
    assert run.indexed() == ("7", "f.txt") and run.observer.planned == []
