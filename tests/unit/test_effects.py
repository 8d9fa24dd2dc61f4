"""Where a run's decisions go (synclient.sync.effects): a real run's AppliedEffects carries each out and records one
result per file; a dry run's PlannedEffects writes each into its plan and touches nothing. Driven the same way, the
plan lists what the real run records, action for action."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, List, Optional, Set, Tuple

import pytest

from synclient.errors import AccessDeniedError, AuthenticationError, LocalIOError, SynclientError
from synclient.events import SyncObserver
from synclient.results import FileResult, SyncStatus
from synclient.sync.deletion import Removal
from synclient.sync.effects import AppliedEffects, Effects, PlannedEffects
from synclient.sync.local.paths import TargetDirectory
from synclient.sync.plan.dry_run import PlanEntry
from synclient.sync.plan.planner import Action
from synclient.sync.records.index import IndexRow, LocalIndex


class Observed(SyncObserver):
    def __init__(self) -> None:
        self.finished: List[FileResult] = []

    def file_finished(self, result: FileResult) -> None:
        self.finished.append(result)


def _written(
    root: Path,
    rel_path: str,
    text: str = "synclient wrote this",
    *,
    entity_id: str = "syn9",
    version: int = 1,
    local_path: Optional[str] = None,
) -> IndexRow:
    """A file synclient wrote and its index row (size and mtime as left)."""
    local_path = local_path or rel_path
    path = root / local_path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    info = os.lstat(path)
    return IndexRow(
        rel_path,
        local_path,
        "syn1",
        entity_id,
        version,
        "h" + entity_id,
        None,
        info.st_size,
        "text/plain",
        "syn1",
        info.st_size,
        info.st_mtime_ns,
    )


def _record(
    tmp_path: Path,
    index: LocalIndex,
    *,
    is_fatal: Callable[[SynclientError], bool] = lambda e: False,
    list_in_manifest: bool = True,
) -> Tuple[AppliedEffects, Observed, List[str]]:
    observer, stopped = Observed(), []
    effects = AppliedEffects(
        target=TargetDirectory(tmp_path),
        index=index,
        observer=observer,
        is_fatal=is_fatal,
        on_fatal=lambda: stopped.append("stop"),
        list_in_manifest=list_in_manifest,
    )
    return effects, observer, stopped


def _entry(rel_path: str, entity_id: str, action: Action, destination: Path) -> PlanEntry:
    return PlanEntry(rel_path, entity_id, 1, 20, action, destination)


def test_only_a_real_run_writes():
    assert AppliedEffects.writes is True and PlannedEffects.writes is False


# -- a real run ----------------------------------------------------------------------------------------------------


def test_a_real_run_carries_out_each_decision_and_records_its_result(tmp_path):
    with LocalIndex(tmp_path) as index:
        effects, observer, _ = _record(tmp_path, index)
        carried: List[str] = []
        effects.decided(_entry("a.txt", "syn2", Action.DOWNLOAD, tmp_path / "a.txt"), lambda: carried.append("a"))
        assert carried == ["a"]
        done = FileResult("syn2", 1, tmp_path / "a.txt", 20, None, SyncStatus.DOWNLOADED, action="download")
        effects.finished(done, manifest_path="a.txt")
        assert effects.results == [done] and observer.finished == [done]
        assert effects.report.downloaded == 1 and effects.report.bytes_downloaded == 20
        assert effects.manifest_paths == {"a.txt"}


def test_an_up_to_date_file_is_recorded_skipped_at_its_local_path_and_listed_in_the_manifest(tmp_path):
    with LocalIndex(tmp_path) as index:
        row = _written(tmp_path, "Dir/a.txt", local_path="dir (syn5)/a.txt")
        effects, _, _ = _record(tmp_path, index)
        effects.up_to_date(row, annotations='{"k": {"type": "STRING", "value": ["v"]}}', renamed="case twin")
        [result] = effects.results
        assert (result.entity_id, result.status, result.action) == ("syn9", SyncStatus.SKIPPED, "skip")
        assert result.path == effects.target.root / "dir (syn5)/a.txt" and result.renamed == "case twin"
        assert result.annotations == {"k": ["v"]}
        assert effects.manifest_paths == {"Dir/a.txt"}  # the remote path: the manifest lists it
        assert effects.report.skipped == 1


def test_without_a_manifest_no_paths_are_kept_for_one(tmp_path):
    with LocalIndex(tmp_path) as index:
        effects, _, _ = _record(tmp_path, index, list_in_manifest=False)
        effects.up_to_date(_written(tmp_path, "a.txt"))
        assert effects.manifest_paths == set() and len(effects.results) == 1


def test_a_fatal_error_stops_the_run_once_and_what_fails_after_it_is_not_reported(tmp_path):
    with LocalIndex(tmp_path) as index:
        effects, observer, stopped = _record(
            tmp_path, index, is_fatal=lambda error: isinstance(error, AuthenticationError)
        )
        denied = FileResult("syn2", 1, None, None, None, SyncStatus.FAILED, AccessDeniedError("no"))
        effects.finished(denied)  # an error of its file only
        fatal = AuthenticationError("token expired")
        effects.finished(FileResult("syn3", 1, None, None, None, SyncStatus.FAILED, fatal))
        effects.finished(FileResult("syn4", 1, None, None, None, SyncStatus.FAILED, AuthenticationError("again")))
        effects.finished(FileResult("syn5", 1, None, None, None, SyncStatus.FAILED, AccessDeniedError("after")))
        late = FileResult("syn6", 1, tmp_path / "f", 1, None, SyncStatus.DOWNLOADED)
        effects.finished(late)  # finished before the stop reached it: still the run's
        assert effects.fatal is fatal and stopped == ["stop"]
        assert effects.results == [denied, late] and observer.finished == [denied, late]
        assert effects.report.failed == 1


def test_a_real_run_removes_an_untouched_file_and_forgets_its_row(tmp_path):
    with LocalIndex(tmp_path) as index:
        row = _written(tmp_path, "gone.txt")
        index.record(row)
        index.flush()
        effects, _, _ = _record(tmp_path, index)
        removal = effects.remove_indexed(row)
        assert removal == Removal(row, Action.DELETE)
        assert not (tmp_path / "gone.txt").exists()
        effects.removed(removal)
        [result] = effects.results
        assert (result.status, result.action) == (SyncStatus.DELETED, "delete")
        index.flush()
        assert index.get_many(["gone.txt"]) == {}
        assert effects.report.deleted == 1


def test_a_changed_file_is_kept_and_a_failed_removal_is_a_failure(tmp_path):
    with LocalIndex(tmp_path) as index:
        row = _written(tmp_path, "edited.txt")
        (tmp_path / "edited.txt").write_text("the user's edit, longer than before")
        effects, _, _ = _record(tmp_path, index)
        removal = effects.remove_indexed(row)
        assert (removal.action, removal.error) == (Action.KEEP_LOCAL, None)
        assert (tmp_path / "edited.txt").exists()
        effects.removed(removal)
        error = LocalIOError("cannot delete")
        effects.removed(Removal(row, Action.DELETE, error))
        kept, failed = effects.results
        assert (kept.status, kept.action) == (SyncStatus.SKIPPED, "keep-local")
        assert (failed.status, failed.error) == (SyncStatus.FAILED, error)
        nowhere = IndexRow("n.txt", "n.txt", "syn1", "syn8", 1, "h8", None, 1, None, None, 1, 1)
        assert effects.remove_indexed(nowhere) is None  # gone already: nothing to report


def test_a_real_run_clears_a_folder_of_its_own_leftovers_and_removes_its_own_file(tmp_path):
    with LocalIndex(tmp_path) as index:
        (tmp_path / "blocked" / "sub").mkdir(parents=True)
        (tmp_path / "blocked" / "SYNAPSE_METADATA_MANIFEST.tsv").write_text("path\tparent\r\n")
        effects, _, _ = _record(tmp_path, index)
        assert effects.clear_folder("blocked") is True
        assert not (tmp_path / "blocked").exists()

        (tmp_path / "mine").mkdir()
        (tmp_path / "mine" / "a user's.txt").write_text("x")
        assert effects.clear_folder("mine") is False and (tmp_path / "mine" / "a user's.txt").exists()

        copy = _written(tmp_path, "data", local_path="data(1)", entity_id="syn7")
        index.record(copy)
        index.flush()
        assert effects.remove_own_file("data(1)", tmp_path / "data(1)", copy) is True
        assert not (tmp_path / "data(1)").exists()
        index.flush()
        assert index.get_many(["data"]) == {}
        assert effects.remove_own_file("data(1)", tmp_path / "data(1)", None) is False  # gone: nothing removed


# -- a dry run -----------------------------------------------------------------------------------------------------


def test_a_dry_run_plans_each_decision_and_carries_out_none(tmp_path):
    with LocalIndex(tmp_path, read_only=True) as index:
        effects = PlannedEffects(target=TargetDirectory(tmp_path, create=False), index=index)
        entry = _entry("a.txt", "syn2", Action.DOWNLOAD, tmp_path / "a.txt")
        effects.decided(entry, lambda: pytest.fail("a dry run carried out a decision"))
        effects.finished(FileResult("syn2", 1, tmp_path / "a.txt", 20, None, SyncStatus.DOWNLOADED))  # not planned
        failure = FileResult("syn3", 1, None, None, None, SyncStatus.FAILED, AccessDeniedError("no"))
        effects.finished(failure)
        assert effects.plan.entries == [entry] and effects.plan.failures == [failure]


def test_a_dry_run_removes_nothing(tmp_path):
    with LocalIndex(tmp_path, read_only=True) as index:
        effects = PlannedEffects(target=TargetDirectory(tmp_path, create=False), index=index)
        row = _written(tmp_path, "gone.txt")
        (tmp_path / "blocked").mkdir()
        (tmp_path / "blocked" / "manifest.csv").write_text("x")
        (tmp_path / "copy(1)").write_text("x")
        assert effects.remove_indexed(row) == Removal(row, Action.DELETE)  # would be deleted
        assert effects.clear_folder("blocked") is True
        assert effects.remove_own_file("copy(1)", tmp_path / "copy(1)", None) is True
        assert sorted(p.name for p in tmp_path.iterdir()) == ["blocked", "copy(1)", "gone.txt"]
        assert (tmp_path / "blocked" / "manifest.csv").exists()


# -- one way of deciding, two effects -----------------------------------------------------------------------------


def _scenario(effects: Effects, root: Path, rows: dict) -> None:
    """A run's calls, as the pipeline, the claims and the deletion pass make them, the same in both kinds of run:
    an up-to-date file, two fetched, a file that could not be planned, a vanished file and a changed one."""
    effects.up_to_date(rows["same"])
    for rel_path, entity_id, action in (("new.txt", "syn20", Action.DOWNLOAD), ("both.txt", "syn21", Action.KEEP_BOTH)):
        destination = root / (rel_path if action is not Action.KEEP_BOTH else "both(1).txt")
        entry = PlanEntry(rel_path, entity_id, 1, 5, action, destination)

        def carry_out(entry: PlanEntry = entry) -> None:  # what the fetch ends with
            entry.destination.write_text("fetch")
            effects.finished(
                FileResult(
                    entry.entity_id,
                    entry.version,
                    entry.destination,
                    5,
                    None,
                    SyncStatus.DOWNLOADED,
                    action=entry.action.value,
                ),
                manifest_path=entry.rel_path,
            )

        effects.decided(entry, carry_out)
    effects.finished(
        FileResult("syn30", None, root / "bad", None, None, SyncStatus.FAILED, AccessDeniedError("no bundle"))
    )
    for key in ("gone", "edited"):
        removal = effects.remove_indexed(rows[key])
        if removal is not None:
            effects.removed(removal)


def _target(root: Path) -> dict:
    rows = {
        "same": _written(root, "same.txt", entity_id="syn10"),
        "gone": _written(root, "gone.txt", entity_id="syn11"),
        "edited": _written(root, "edited.txt", entity_id="syn12"),
    }
    (root / "edited.txt").write_text("changed by the user since")
    return rows


def _tree(root: Path) -> Set[Tuple[str, str]]:
    return {
        (str(p.relative_to(root)), p.read_text())
        for p in root.rglob("*")
        if p.is_file() and ".synclient" not in p.parts
    }


def test_the_dry_runs_plan_is_what_the_real_run_records(tmp_path):
    real_root, dry_root = tmp_path / "real", tmp_path / "dry"
    real_root.mkdir()
    dry_root.mkdir()
    with LocalIndex(real_root) as real_index, LocalIndex(dry_root, read_only=True) as dry_index:
        real_rows, dry_rows = _target(real_root), _target(dry_root)
        before = _tree(dry_root)
        record, _, _ = _record(real_root, real_index)
        plan = PlannedEffects(target=TargetDirectory(dry_root, create=False), index=dry_index)
        _scenario(record, record.target.root, real_rows)
        _scenario(plan, plan.target.root, dry_rows)

        recorded = sorted(
            (r.entity_id, r.action, str(r.path.relative_to(record.target.root)))
            for r in record.results
            if r.status is not SyncStatus.FAILED
        )
        planned = sorted(
            (e.entity_id, e.action.value, str(e.destination.relative_to(plan.target.root))) for e in plan.plan.entries
        )
        assert (
            planned
            == recorded
            == [
                ("syn10", "skip", "same.txt"),
                ("syn11", "delete", "gone.txt"),
                ("syn12", "keep-local", "edited.txt"),
                ("syn20", "download", "new.txt"),
                ("syn21", "keep-both", "both(1).txt"),
            ]
        )
        assert (
            [f.entity_id for f in plan.plan.failures]
            == [r.entity_id for r in record.results if r.status is SyncStatus.FAILED]
            == ["syn30"]
        )
        assert _tree(dry_root) == before  # nothing written, nothing removed
        assert not (dry_root / ".synclient").exists()
        assert ("gone.txt", "synclient wrote this") not in _tree(real_root)
        assert ("new.txt", "fetch") in _tree(real_root)


def test_a_removal_that_fails_is_a_failure_in_the_plan_as_in_the_real_run(tmp_path, monkeypatch):
    """A vanished file that cannot even be checked (an unreadable folder: EACCES) fails in a real run; the dry run
    says so too, and does not plan it as deleted."""
    real_root, dry_root = tmp_path / "real", tmp_path / "dry"
    real_root.mkdir()
    dry_root.mkdir()

    def unreadable(rel_path: str):
        raise PermissionError(13, "Permission denied", rel_path)

    with LocalIndex(real_root) as real_index, LocalIndex(dry_root, read_only=True) as dry_index:
        record, _, _ = _record(real_root, real_index)
        plan = PlannedEffects(target=TargetDirectory(dry_root, create=False), index=dry_index)
        for effects, root in ((record, real_root), (plan, dry_root)):
            row = _written(root, "locked/gone.txt", entity_id="syn11")
            monkeypatch.setattr(effects.target, "lstat_inside", unreadable)
            removal = effects.remove_indexed(row)
            assert removal is not None and isinstance(removal.error, LocalIOError)
            effects.removed(removal)
        [failed] = record.results
        assert failed.status is SyncStatus.FAILED
        assert plan.plan.entries == []
        assert [(f.entity_id, f.status, str(f.error)) for f in plan.plan.failures] == [
            (failed.entity_id, SyncStatus.FAILED, str(failed.error))
        ]
