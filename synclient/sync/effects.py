"""Where a run's decisions go: one interface, two implementations (rclone's march separates deciding from doing).

The pipeline, the path claims and the deletion pass decide the same way in a real run and in a dry run; they never
ask which one they are in. They hand every decision to the run's :class:`Effects`:

- :class:`AppliedEffects` (a real run) carries it out and records one :class:`~synclient.results.FileResult` per
  file (report, observer, the manifest's list of files, the fatal error that stops the run);
- :class:`PlannedEffects` (``dry_run=True``) writes it into a :class:`~synclient.sync.plan.dry_run.SyncPlan` and touches
  nothing on disk.
"""

from __future__ import annotations

import abc
import logging
import threading
from pathlib import Path
from typing import Callable, List, Optional, Set

from synclient.errors import LocalIOError, SynclientError
from synclient.events import SyncObserver
from synclient.results import FileResult, SyncReport, SyncStatus
from synclient.sync.deletion import Removal, clear_folder, remove_indexed_file
from synclient.sync.local.paths import TargetDirectory
from synclient.sync.plan.dry_run import PlanEntry, SyncPlan
from synclient.sync.plan.planner import Action
from synclient.sync.records.index import IndexRow, LocalIndex

log = logging.getLogger("synclient.sync")


class Effects(abc.ABC):
    """What becomes of each decision. Methods are called from pool threads, concurrently."""

    #: False for a dry run: nothing may be created, written or removed (the target, the index, files)
    writes: bool

    def __init__(self, *, target: TargetDirectory, index: LocalIndex) -> None:
        self.target = target
        self.index = index

    # -- per file ----------------------------------------------------------------------------------------------

    @abc.abstractmethod
    def up_to_date(self, row: IndexRow, *, annotations: Optional[str] = None, renamed: str = "") -> None:
        """An indexed file found untouched at the remote's version: nothing to do (``annotations``: the JSON text
        the index keeps of them; ``renamed``: why its local name is not its remote one, if it is not)."""

    @abc.abstractmethod
    def decided(self, entry: PlanEntry, carry_out: Callable[[], None]) -> None:
        """The planner's decision for one remote file; ``carry_out`` does it (fetch, adopt, keep)."""

    @abc.abstractmethod
    def finished(self, result: FileResult, *, manifest_path: Optional[str] = None, reused: int = 0) -> None:
        """A file's final state (``manifest_path``: its indexed path, listed in the manifest; ``reused``: of a
        downloaded file's bytes, those kept from an earlier run's partial download)."""

    # -- removals ----------------------------------------------------------------------------------------------

    @abc.abstractmethod
    def remove_indexed(self, row: IndexRow) -> Optional[Removal]:
        """Remove a file synclient wrote, if it is still untouched (None: already gone)."""

    @abc.abstractmethod
    def clear_folder(self, rel_dir: str) -> bool:
        """Remove a folder that holds only synclient's own leftovers; False when it could not be emptied."""

    @abc.abstractmethod
    def remove_own_file(self, rel_path: str, path: Path, copy: Optional[IndexRow]) -> bool:
        """Remove synclient's own file (a keep.both ``copy`` or a manifest) where the remote now has a folder."""

    @abc.abstractmethod
    def removed(self, removal: Removal) -> None:
        """One vanished (or displaced) file's removal: deleted, kept because it changed, or failed."""

    def _result_of(self, removal: Removal, status: SyncStatus) -> FileResult:
        """The result of a removal: its row's file, with ``status`` (and the error that stopped it, if one did)."""
        row = removal.row
        return FileResult(
            row.entity_id,
            row.version,
            self.target.root / row.local_path,
            row.size,
            row.md5,
            status,
            removal.error,
            action=removal.action.value,
        )


class AppliedEffects(Effects):
    """A real run: decisions are carried out, every file's result recorded."""

    writes = True

    def __init__(
        self,
        *,
        target: TargetDirectory,
        index: LocalIndex,
        observer: SyncObserver,
        is_fatal: Callable[[SynclientError], bool],
        on_fatal: Callable[[], None],
        list_in_manifest: bool,
    ) -> None:
        super().__init__(target=target, index=index)
        self.report = SyncReport()
        self.fatal: Optional[SynclientError] = None  # the error that stopped the run
        self.manifest_paths: Set[str] = set()  # indexed paths of this run's files: the manifest lists them
        self._observer = observer
        self._is_fatal = is_fatal
        self._on_fatal = on_fatal
        self._list_in_manifest = list_in_manifest
        self._results: List[FileResult] = []
        self._lock = threading.Lock()

    @property
    def results(self) -> List[FileResult]:
        with self._lock:
            return list(self._results)

    def up_to_date(self, row: IndexRow, *, annotations: Optional[str] = None, renamed: str = "") -> None:
        self.finished(
            FileResult(
                row.entity_id,
                row.version,
                self.target.root / row.local_path,
                row.size,
                row.md5,
                SyncStatus.SKIPPED,
                action=Action.SKIP.value,
                annotations=annotations,
                renamed=renamed or None,
            ),
            manifest_path=row.rel_path,
        )

    def decided(self, entry: PlanEntry, carry_out: Callable[[], None]) -> None:
        carry_out()

    def finished(self, result: FileResult, *, manifest_path: Optional[str] = None, reused: int = 0) -> None:
        """Keep a file's effects. A fatal error stops the run: it is reported once, and what fails after it
        (cancelled calls) is not that file's fault."""
        with self._lock:
            if result.status is SyncStatus.FAILED:
                if self.fatal is not None:
                    return
                error = result.error  # a SynclientError: the pipeline wraps what a file meets
                if isinstance(error, SynclientError) and self._is_fatal(error):
                    self.fatal = error
                    log.error("stopping: %s", result.error)
                    self._on_fatal()
                    return
            self._results.append(result)
            if manifest_path is not None and self._list_in_manifest:
                self.manifest_paths.add(manifest_path)
        self.report.count(result, reused=reused)
        self._observer.file_finished(result)
        if result.status is SyncStatus.FAILED:
            log.warning("failed: %s (%s): %s", result.entity_id, result.path, result.error)

    def remove_indexed(self, row: IndexRow) -> Optional[Removal]:
        return remove_indexed_file(self.target, row, dry_run=False)

    def clear_folder(self, rel_dir: str) -> bool:
        return clear_folder(self.target, rel_dir)

    def remove_own_file(self, rel_path: str, path: Path, copy: Optional[IndexRow]) -> bool:
        try:
            info = self.target.lstat_inside(rel_path)
            if info is None or not self.target.unlink_inside(rel_path, expected=info):
                return False
        except OSError as exc:
            raise LocalIOError.from_exception(f"cannot remove {path} to make room for a folder", exc) from None
        if copy is not None:
            self.index.forget(copy.rel_path, only_at=copy.local_path)
        return True

    def removed(self, removal: Removal) -> None:
        if removal.error is not None:
            self.finished(self._result_of(removal, SyncStatus.FAILED))
        elif removal.action is Action.DELETE:
            self.index.forget(removal.row.rel_path)
            self.finished(self._result_of(removal, SyncStatus.DELETED))
        else:
            log.info("%s is gone remotely but %s; kept", self.target.root / removal.row.local_path, removal.reason)
            self.finished(self._result_of(removal, SyncStatus.SKIPPED))


class PlannedEffects(Effects):
    """A dry run: decisions become plan entries; nothing is written or removed."""

    writes = False

    def __init__(self, *, target: TargetDirectory, index: LocalIndex, plan: Optional[SyncPlan] = None) -> None:
        super().__init__(target=target, index=index)
        self.plan = plan if plan is not None else SyncPlan()

    def up_to_date(self, row: IndexRow, *, annotations: Optional[str] = None, renamed: str = "") -> None:
        self.plan.add(
            PlanEntry(
                row.rel_path, row.entity_id, row.version, row.size, Action.SKIP, self.target.root / row.local_path
            )
        )

    def decided(self, entry: PlanEntry, carry_out: Callable[[], None]) -> None:
        self.plan.add(entry)

    def finished(self, result: FileResult, *, manifest_path: Optional[str] = None, reused: int = 0) -> None:
        if result.status is SyncStatus.FAILED:  # only failures reach a plan this way: entities not even planned
            self.plan.add_failure(result)

    def remove_indexed(self, row: IndexRow) -> Optional[Removal]:
        return remove_indexed_file(self.target, row, dry_run=True)

    def clear_folder(self, rel_dir: str) -> bool:
        return True

    def remove_own_file(self, rel_path: str, path: Path, copy: Optional[IndexRow]) -> bool:
        return True

    def removed(self, removal: Removal) -> None:
        if removal.error is not None:  # (it could not even be checked) the real run fails it: so does the plan
            self.plan.add_failure(self._result_of(removal, SyncStatus.FAILED))
            return
        row = removal.row
        self.plan.add(
            PlanEntry(
                row.rel_path, row.entity_id, row.version, row.size, removal.action, self.target.root / row.local_path
            )
        )
