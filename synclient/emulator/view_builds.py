"""How long a view created through the API takes to build, and what a lagging one is built from.

Synapse builds a view from its entity replication in a worker; until the build is done, a query of it fails with
``TableUnavailableException`` and its query job stays PROCESSING (the worker retries), so ``.../async/get`` answers
202. The emulator models the build as a time: ``view_build_seconds_per_1000_files`` seconds per 1,000 files in the
view's scope when it is created, counted on a clock the tests can drive (``ViewBuilds.clock``, monotonic by default)
and ended at once by :meth:`ViewBuilds.finish_all` (``Emulator.finish_view_builds``). Builds are kept in memory: a
restarted emulator has every view built.

With ``view_lag`` on, Synapse's replication lags the entities; the emulator's replication is the files (and the
containers above them) as :func:`take_replica` copies them at each ``refresh_views()`` of every view. A view created
while ``view_lag`` is on is built from that copy, restricted to its scope (:func:`replica_view_rows`): a test can
refresh, edit files, create a view, and see the stale rows. Without a copy (no refresh yet) it is built from the
live store.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Dict, List, Optional, Set

from .store import DenyMode, Entity, EntityKind, Store, now_iso
from .tables import TableRow, _file_cells, columns_of, live_view_rows

#: a file view's viewTypeMask bit (ViewTypeMask.File)
_FILE_BIT = 1


class ViewBuilds:
    """The views still building: view id -> the clock reading at which its build is done."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._ready_at: Dict[int, float] = {}

    def start(self, view_id: int, files: int, seconds_per_1000_files: float) -> float:
        """A view's build starts now; the seconds it takes (0: built at once)."""
        seconds = seconds_per_1000_files * files / 1000.0
        with self._lock:
            if seconds > 0:
                self._ready_at[view_id] = self.clock() + seconds
            else:
                self._ready_at.pop(view_id, None)
        return seconds

    def building(self, view_id: int) -> bool:
        with self._lock:
            ready_at = self._ready_at.get(view_id)
            if ready_at is None:
                return False
            if self.clock() >= ready_at:
                del self._ready_at[view_id]
                return False
            return True

    def pending(self) -> List[str]:
        """The views still building (``syn`` ids), without ending any."""
        now = self.clock()
        with self._lock:
            return [f"syn{view_id}" for view_id, ready_at in sorted(self._ready_at.items()) if now < ready_at]

    def finish_all(self) -> List[str]:
        """End every build at once; the views that were building."""
        with self._lock:
            ended = sorted(self._ready_at)
            self._ready_at.clear()
        return [f"syn{view_id}" for view_id in ended]


# --- the replication a lagging view is built from -------------------------------------------------
def _entity_record(store: Store, entity: Entity) -> Dict[str, Any]:
    record: Dict[str, Any] = {"parent": entity.parent_id, "kind": entity.kind.value}
    if entity.kind is EntityKind.FILE:
        record.update(
            project=entity.project_id,
            name=entity.name,
            createdOn=entity.created_on,
            modifiedOn=entity.modified_on,
            createdBy=entity.created_by,
            modifiedBy=entity.modified_by,
            etag=entity.etag,
            version=entity.current_version,
            handle=entity.file_handle_id,
            size=entity.size,
            deny=entity.deny.value,
            annotations=store.annotations(entity.id),
        )
    return record


def take_replica(store: Store) -> int:
    """Copy the containers and files as they are now into the replication; how many entities it holds."""
    records: Dict[int, Any] = {}
    for project_id in store.projects().values():
        ids = store.project_entity_ids(project_id)
        for entity in store.entities(ids).values():
            if entity.kind in (EntityKind.PROJECT, EntityKind.FOLDER, EntityKind.FILE):
                records[entity.id] = _entity_record(store, entity)
    store.set_replica(records)
    store.mark_replica_taken(now_iso())
    return len(records)


def _replica_entity(entity_id: int, record: Dict[str, Any]) -> Entity:
    return Entity(
        entity_id,
        record["parent"],
        record["project"],
        record["name"],
        EntityKind.FILE,
        record["createdOn"],
        record["modifiedOn"],
        record["createdBy"],
        record["modifiedBy"],
        record["etag"],
        record["version"],
        None,
        None,
        DenyMode(record["deny"]),
        record["handle"],
        record["size"],
    )


def replica_view_rows(store: Store, view_id: int, replica: Dict[int, Any]) -> List[TableRow]:
    """A view's rows from the replication: every file the copy has below the view's scope, by id."""
    _columns, scope_ids, mask = store.table_schema(view_id)
    if mask is not None and not mask & _FILE_BIT:
        return []
    columns = columns_of(store, view_id)
    containers: Set[int] = {
        i
        for i in scope_ids or []
        if replica.get(i, {}).get("kind") in (EntityKind.PROJECT.value, EntityKind.FOLDER.value)
    }
    children: Dict[Optional[int], List[int]] = {}
    for entity_id, record in replica.items():
        children.setdefault(record["parent"], []).append(entity_id)
    frontier = list(containers)
    while frontier:
        for child in children.get(frontier.pop(), []):
            if replica[child]["kind"] == EntityKind.FOLDER.value and child not in containers:
                containers.add(child)
                frontier.append(child)
    rows = []
    for entity_id in sorted(replica):
        record = replica[entity_id]
        if record["kind"] != EntityKind.FILE.value or record["parent"] not in containers:
            continue
        entity = _replica_entity(entity_id, record)
        if record["deny"] == DenyMode.READ.value:
            continue
        cells, size = _file_cells(store, entity, columns, record["annotations"])
        rows.append(TableRow(entity.id, entity.current_version, entity.etag, cells, size))
    return rows


def build_snapshot(store: Store, view_id: int, *, lag: bool) -> int:
    """Take a created view's snapshot (what it answers while ``view_lag`` is on): from the replication when lagging
    and one was taken, else from the live store. The number of rows."""
    replica = store.replica() if lag else None
    rows = replica_view_rows(store, view_id, replica) if replica is not None else live_view_rows(store, view_id)
    store.set_view_snapshot(
        view_id,
        {"takenOn": now_iso(), "rows": [[r.row_id, r.version, r.etag, list(r.cells), r.file_size] for r in rows]},
    )
    return len(rows)
