"""``--view auto``: a sync planned from a temporary file view synclient makes itself, so that a first sync of N files
costs about N/100 REST calls instead of N bundle calls, for a user who has no view over the data.

The view is made only when it pays: when :data:`WORTH_A_VIEW` of the tree's files have needed their bundle call (a
re-sync that finds few files changed, or a small tree, never makes one; the files before that take their bundles,
as without a view). Then, in the user's scratch project (:mod:`.scratch_views`): the file columns and the scope's
annotation columns are made, the view of the sync's root is made, the views earlier runs left behind are removed
while it builds, it is read once (``SELECT *``: its rows stand in for the bundle calls exactly as a given view's do, see
:class:`~synclient.sync.sources.queries.ViewRows`: the listing stays the truth), and deleted at once. When the view
cannot be made (the account may not create it: Synapse lets only certified users create anything but projects; the
scope holds more containers than a view may), or is not built within :data:`BUILD_BOUND_SECONDS`, the run says so in
one line and every file takes its bundle call: never worse than the walk, but for the calls spent finding out.
:meth:`AutoView.close` removes what is left at the run's end, also after a failure or Ctrl-C.
"""

from __future__ import annotations

import enum
import logging
import threading
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

from synclient.errors import CallCancelledError, Cancelled, JobTimeoutError, NotFoundError, SynclientError
from synclient.platform.models import VIEW_TYPE_FILE, Entity
from synclient.platform.rest import Platform
from synclient.sync.sources.by_id import DescribedFiles, FileVersionFacts
from synclient.sync.sources.queries import DEFAULT_VIEW_COLUMNS, read_view_files
from synclient.sync.sources.scratch_views import FILE_FIELDS, ScratchProject, ScratchViews

#: its lines (made, or why not) are shown by the CLI, as the gate's notes
log = logging.getLogger("synclient.sync.auto_view")

#: files that need their bundle call before a run makes a view: a view costs about 25 calls (the scratch project,
#: the columns, the view, its annotations, the polls of its build and query, its removal) and its build time, so
#: below this the walk's calls are fewer
WORTH_A_VIEW = 50
#: how long a new view may answer "being built" (202) before the run walks instead
BUILD_BOUND_SECONDS = 600.0


@dataclass(frozen=True)
class AutoViewRequest:
    """``view="auto"``: make a temporary view of the sync's root; ``scratch_project``: the project it goes in
    (None: synclient's own, found or created by its documented name)."""

    scratch_project: Optional[str] = None


def auto_view_for(
    platform: Platform, *, scope_id: str, request: AutoViewRequest, dry_run: bool, needs_bundle: bool
) -> Optional[AutoView]:
    """The run's temporary view of ``scope_id`` (made when it pays), or None with the note that says why not: a dry
    run makes nothing in the account; a run that takes every file's bundle anyway (``--provenance``) has no use
    for one."""
    if needs_bundle:
        log.info("--view auto: no view: every file takes its bundle call for what this run asks")
        return None
    if dry_run:
        log.info("--view auto: a dry run makes no view; the real run makes one when it pays")
        return None
    return AutoView(platform, scope_id=scope_id, request=request)


class AutoViewState(enum.Enum):
    WAITING = "waiting"  # not enough files have needed their bundle yet
    READ = "read"  # the view was made, read and removed: its rows stand in for bundles
    WALKING = "walking"  # no view: every file takes its bundle (said once, with why)


class AutoView:
    """The rows of a temporary view of ``scope_id``, made when :data:`WORTH_A_VIEW` files have asked for them
    (:meth:`get`, as :class:`~synclient.sync.sources.queries.ViewRows` is asked); thread-safe."""

    def __init__(self, platform: Platform, *, scope_id: str, request: AutoViewRequest) -> None:
        self._platform = platform
        self._scope_id = scope_id
        self._scratch = ScratchViews(platform, scratch_project=request.scratch_project)
        self._lock = threading.Lock()
        self._demand = 0
        self._rows: DescribedFiles = {}
        self.state = AutoViewState.WAITING
        self.reason: Optional[str] = None  # why the run walks (WALKING)
        self._project: Optional[ScratchProject] = None
        self._view_id: Optional[str] = None  # the view while it exists
        self._created_on: Optional[str] = None  # its createdOn: the platform's time

    def get(self, entity_id: str, version: Optional[int]) -> Optional[FileVersionFacts]:
        with self._lock:  # the others wait for the one view (its build: seconds to minutes, bounded)
            if self.state is AutoViewState.WAITING:
                self._demand += 1
                if self._demand < WORTH_A_VIEW:
                    return None
                self._make_and_read()
        return self._rows.get((entity_id, version))

    def _make_and_read(self) -> None:
        cancelled = False
        try:
            self._rows = self._read_new_view()
            self.state = AutoViewState.READ
            log.info(
                "--view auto: the files of %s planned from a temporary file view (%d rows), now deleted",
                self._scope_id,
                len(self._rows),
            )
        except (CallCancelledError, Cancelled):
            cancelled, self.state = True, AutoViewState.WALKING  # the run stops: close() removes what is left
        except JobTimeoutError:
            self._walk(f"the temporary file view was not built within {BUILD_BOUND_SECONDS:g} s")
        except SynclientError as exc:
            self._walk(f"no temporary file view ({exc})")
        finally:
            if self.state is AutoViewState.WAITING:  # (an unforeseen error, raised: not tried again for each file)
                self.state, self.reason = AutoViewState.WALKING, "the temporary file view failed"
            if not cancelled:
                self._remove()  # at once: the rows are read, the view is of no more use

    def _walk(self, reason: str) -> None:
        self.state, self.reason = AutoViewState.WALKING, reason
        log.warning("--view auto: %s: each file takes its own bundle call, as without a view", reason)

    def _read_new_view(self) -> DescribedFiles:
        scratch = self._scratch
        models = list(FILE_FIELDS) + self._annotation_columns()
        column_ids = self._platform.create_columns(models)
        for last in (False, True):
            self._project = scratch.open_project()
            try:
                view = scratch.create_view(
                    self._project, scope_id=self._scope_id, column_ids=column_ids, on_created=self._created
                )
                # (while the view builds; the platform's clock dates the leftovers)
                scratch.sweep_leftovers(self._project, server_now=self._created_on)
                return read_view_files(self._platform, view, timeout=BUILD_BOUND_SECONDS)
            except NotFoundError:
                if last or not self._project.ours:
                    raise
                # synclient's scratch project was removed meanwhile, maybe with this run's view in it, by another
                # run of this user (it found it empty a moment before): made again, once
                if self._view_id is not None:
                    scratch.delete_view(self._view_id)  # (gone with the project, most likely: no second view)
                    self._view_id = None
                self._project = None
        raise AssertionError("unreachable")  # (the second pass returns or raises)

    def _created(self, view: Entity) -> None:
        self._view_id = view.id  # (from now on removed at the run's end, whatever stops it)
        created_on = view.raw.get("createdOn")
        self._created_on = created_on if isinstance(created_on, str) else None

    def _annotation_columns(self) -> List[Dict[str, object]]:
        """The scope's annotation columns (the manifests and results carry annotations, as the walk's bundles
        give them), but those named as a file field (a view cannot hold two columns of one name)."""
        found = self._platform.view_scope_columns([self._scope_id], view_type_mask=VIEW_TYPE_FILE)
        return [
            {key: value for key, value in model.items() if key != "id"}
            for model in _unique(found)
            if str(model["name"]).lower() not in DEFAULT_VIEW_COLUMNS
        ]

    def _remove(self) -> None:
        """Delete the view and synclient's emptied scratch project; a failure to is said once, never raised (the
        next run that makes a view removes a view left behind, if it may)."""
        scratch = self._scratch
        try:
            if self._view_id is not None:
                scratch.delete_view(self._view_id)
                self._view_id = None
            if self._project is not None:
                scratch.close_project(self._project)
                self._project = None
        except CallCancelledError:
            pass  # the run stops: close() removes what is left at its end
        except SynclientError as exc:
            what = (
                f"the temporary file view {self._view_id}"
                if self._view_id is not None
                else f"synclient's scratch project {self._project.id if self._project else ''}"
            )
            log.warning("--view auto: could not remove %s: %s", what, exc)
            self._view_id = self._project = None  # (said once: not tried again at the run's end)

    def close(self) -> None:
        """The run's end: remove what is left (a run stopped while its view was being built), whatever stopped
        it: the platform's calls are made even after the run was cancelled."""
        with self._lock:  # (a worker making the view stops at its next call: the run was cancelled)
            if self.state is AutoViewState.WAITING:
                log.info(
                    "--view auto: no view was made: %d files needed their bundle call (a view pays from %d)",
                    self._demand,
                    WORTH_A_VIEW,
                )
            if self._view_id is None and self._project is None:
                return
            with self._platform.cancel_on(threading.Event()):
                self._remove()


def _unique(models: Sequence[Dict[str, object]]) -> List[Dict[str, object]]:
    """One column per name (case ignored), the first given."""
    seen: Dict[str, Dict[str, object]] = {}
    for model in models:
        seen.setdefault(str(model["name"]).lower(), model)
    return list(seen.values())
