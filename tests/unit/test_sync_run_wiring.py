"""SyncRun is built from one typed source: what the source knows reaches the pipeline at construction (no
attribute of a piece is set afterwards). A fake platform that answers no call: building a run makes none."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from synclient.events import SyncObserver
from synclient.platform.models import EntityHeader, EntityType, FileHandle
from synclient.platform.tls import TrustedCAs
from synclient.sync.local.name_gate import RemotePath
from synclient.sync.local.paths import TargetDirectory
from synclient.sync.options import SyncOptions
from synclient.sync.records.index import LocalIndex
from synclient.sync.runner import SyncRun, run_pool
from synclient.sync.sources.by_id import Entry, EntryKind, FileVersionFacts, SourcePlan
from synclient.sync.sources.resolve import FileSource, GivenFiles, ListSource, TreeSource
from synclient.transfer.config import TransferConfig

F, D = EntityType.FILE, EntityType.FOLDER


class NoCalls:
    """A platform a run's construction may hold but never call."""

    trusted_cas = TrustedCAs(None, "certifi")
    gate = SimpleNamespace(limit=4)

    def __getattr__(self, name):
        raise AssertionError(f"building a run called platform.{name}")


@pytest.fixture
def build(tmp_path):
    runs = []

    def build_run(source, **extra):
        target = TargetDirectory(tmp_path / "target")
        index = LocalIndex(target.root).__enter__()
        platform = NoCalls()
        config = TransferConfig(max_workers=2)
        run = SyncRun(
            platform=platform,
            config=config,
            target=target,
            index=index,
            source=source,
            options=SyncOptions(progress=False),
            observer=SyncObserver(),
            pool=run_pool(platform, config),
            **extra,
        )
        runs.append((run, index))
        return run

    yield build_run
    for run, index in runs:
        run.data_plane.close()
        index.__exit__(None, None, None)


def _file(entity_id, name, version=1):
    return EntityHeader(entity_id, name, F, version)


def test_a_tree_names_no_file_one_by_one(build):
    run = build(TreeSource(EntityHeader("syn4", "raw", D, 1)))
    assert run.root_id == "syn4" and run.pipeline._individual_files == frozenset()
    assert run.layout.files == [] and run.renamed == []


def test_a_file_root_is_named_one_by_one_at_construction(build):
    run = build(FileSource(_file("syn1", "a.csv", 3)))
    assert run.root_id == "syn1" and run.pipeline._individual_files == {"a.csv"}


def test_a_lists_files_are_laid_out_and_named_at_construction_and_its_rows_facts_reach_the_pipeline(build):
    facts = FileVersionFacts(FileHandle(id="11", content_size=5, content_md5="0" * 32), 1, "syn4", from_row=True)
    plan = SourcePlan(
        entries=[Entry(_file("syn1", "a.csv"), EntryKind.FILE), Entry(_file("syn2", "a.csv"), EntryKind.FILE)]
    )
    run = build(ListSource(plan, root_id="ids", description="query", described={("syn2", 1): facts}))
    assert run.pipeline._individual_files == {"a.csv", "a (syn2).csv"}  # the second one renamed: its id in it
    assert run.listed_files == {"a.csv", "a (syn2).csv"} and [str(r) for r in run.renamed] == [
        "syn2.1: a.csv -> a (syn2).csv (the name was taken)"
    ]
    assert run.pipeline._described_file(_file("syn2", "a (syn2).csv"), None) == facts
    assert run.pipeline._described_file(_file("syn1", "a.csv"), None) is None


def test_given_files_and_a_fetcher_are_given_at_construction(build):
    fetcher = SimpleNamespace(fetch=lambda job, on_fetched: None)
    run = build(GivenFiles(((_file("syn1", "a.csv"), RemotePath(("x", "a.csv"))),), root_id="syn9"), remote=fetcher)
    assert run.root_id == "syn9" and run.pipeline._individual_files == {"x/a.csv"}
    assert run.pipeline._fetcher is fetcher  # (no synapseclient cache on this machine: nothing in front of it)


def test_the_walker_and_the_claims_share_the_names_kept_in_place(build):
    run = build(TreeSource(EntityHeader("syn4", "raw", D, 1)))
    assert run.claims._kept_names is run.walker.kept_names
