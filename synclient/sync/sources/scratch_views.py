"""The temporary file views synclient makes in the user's own account (``--view auto``): where they live, how they
are named and marked, and how they go away.

A view lives in a *scratch project*: the one given (``--scratch-project synP``: never deleted), else the user's own
project named :data:`SCRATCH_PROJECT_NAME` (found or created; project names are unique on the platform, so the name
holds the user's id), deleted again once it holds nothing. A view is named with :data:`VIEW_NAME_PREFIX` and
annotated with when and where it was made (:data:`CREATED_ON_KEY`, :data:`HOST_KEY`). A run deletes its view as
soon as it has read its rows; a run killed meanwhile leaves it behind, and the next run of that user removes it once
it is older than :data:`LEFTOVER_GRACE` (a run still building its view is younger). Only a view with the prefix,
the marks and the caller as its creator is ever removed: never one synclient did not make.
"""

from __future__ import annotations

import datetime
import logging
import secrets
import socket
from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from synclient.errors import (
    AccessDeniedError,
    CallCancelledError,
    ConfigError,
    MalformedAnswerError,
    NotFoundError,
    PlatformError,
    SynclientError,
)
from synclient.platform.models import VIEW_TYPE_FILE, Annotations, Entity, EntityType
from synclient.platform.rest import Platform

log = logging.getLogger("synclient.sync.auto_view")

#: the user's own scratch project, by the user's id (``ownerId`` of their profile)
SCRATCH_PROJECT_NAME = "synclient-scratch-{owner_id}"
VIEW_NAME_PREFIX = "synclient-auto-view-"
#: the annotations a view synclient made carries: when (ISO 8601, UTC) and on which host
CREATED_ON_KEY = "synclientCreatedOn"
HOST_KEY = "synclientHost"
#: what a temporary view's description says (set in the call that creates it, before its annotations)
DESCRIPTION = "A temporary file view made by synclient (--view auto) to plan a download; it removes it."
#: what the description of the scratch project synclient made says: only a project so marked is ever removed (one
#: of that name the user made is used, never removed)
PROJECT_DESCRIPTION = "Made by synclient (--view auto) to hold its temporary file views; removed when empty."
#: a leftover view younger than this may still be some run's: it is left alone
LEFTOVER_GRACE = datetime.timedelta(hours=1)


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def _stamp(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _parse_stamp(text: Optional[str]) -> Optional[datetime.datetime]:
    """Synapse's ISO 8601 UTC stamp (``2026-11-27T19:02:03.456Z``), None when it is not one."""
    if not text:
        return None
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=datetime.timezone.utc)


@dataclass(frozen=True)
class ScratchProject:
    id: str
    #: a project synclient made (found by its name and marked, or created): removed when it holds nothing
    ours: bool


#: the column models of the file fields a planned file needs (:mod:`synclient.sync.sources.queries` reads them), as
#: Synapse defines these fields (``ObjectField``: name, type, size, facet): its id and version, its folder, its age,
#: its handle (id, size, MD5) and whether the handle is the platform's storage
FILE_FIELDS: Tuple[Mapping[str, object], ...] = (
    {"name": "id", "columnType": "ENTITYID"},
    {"name": "currentVersion", "columnType": "INTEGER"},
    {"name": "parentId", "columnType": "ENTITYID", "facetType": "enumeration"},
    {"name": "modifiedOn", "columnType": "DATE", "facetType": "range"},
    {"name": "dataFileHandleId", "columnType": "FILEHANDLEID"},
    {"name": "dataFileSizeBytes", "columnType": "INTEGER"},
    {"name": "dataFileMD5Hex", "columnType": "STRING", "maximumSize": 100},
    {"name": "dataFileConcreteType", "columnType": "STRING", "maximumSize": 65, "facetType": "enumeration"},
)


class ScratchViews:
    """Make, find and remove synclient's temporary views of one user (every call through ``platform``)."""

    def __init__(
        self,
        platform: Platform,
        *,
        scratch_project: Optional[str] = None,
        host: Optional[str] = None,
        clock: Callable[[], datetime.datetime] = utc_now,
    ) -> None:
        self._platform = platform
        self._given = scratch_project
        self._host = host or socket.gethostname() or "unknown host"
        self._clock = clock
        self._owner_id: Optional[str] = None

    # -- the scratch project ---------------------------------------------------------------------------------------

    def owner_id(self) -> str:
        if self._owner_id is None:
            self._owner_id = str(self._platform.get_user_profile()["ownerId"])
        return self._owner_id

    def open_project(self) -> ScratchProject:
        """The project the view goes in: the one given (checked to be a container), else synclient's own, found by
        its name or created (raises :class:`AccessDeniedError` when a project of that name is someone else's)."""
        if self._given is not None:
            header = self._platform.get_entity_header(self._given)
            if not header.type.is_container:
                raise ConfigError(f"--scratch-project {self._given} is a {header.type.label}, not a project")
            return ScratchProject(header.id, ours=False)
        name = SCRATCH_PROJECT_NAME.format(owner_id=self.owner_id())
        found = self._platform.find_project(name)
        if found is None:
            try:
                created = self._platform.create_entity(
                    {"concreteType": EntityType.PROJECT.value, "name": name, "description": PROJECT_DESCRIPTION}
                )
                return ScratchProject(created.id, ours=True)
            except PlatformError as exc:
                if exc.status != 409:  # (409: made meanwhile by another run of this user, or by this call's retry)
                    raise
            found = self._platform.find_project(name)
            if found is None:
                raise AccessDeniedError(f"the project {name} exists but cannot be read")
        project = self._platform.get_entity(found)
        if str(project.raw.get("createdBy")) != self.owner_id():
            raise AccessDeniedError(f"a project named {name} exists and is not yours ({found})")
        # (one the user made by that name is theirs: used, never removed)
        return ScratchProject(found, ours=project.raw.get("description") == PROJECT_DESCRIPTION)

    def close_project(self, project: ScratchProject) -> None:
        """Remove the scratch project synclient made when it holds nothing (a view of another run keeps it)."""
        if not project.ours:
            return
        if self._platform.holds_anything(project.id):
            return
        self._platform.delete_entity(project.id)

    # -- views -----------------------------------------------------------------------------------------------------

    def create_view(
        self,
        project: ScratchProject,
        *,
        scope_id: str,
        column_ids: Sequence[str],
        on_created: Callable[[Entity], None] = lambda view: None,
    ) -> str:
        """A file view of every file below ``scope_id`` in ``project``, named and annotated as synclient's: its id.
        ``on_created`` is given the view as soon as it exists (so that a run stopped before it is annotated still
        removes it); a view that cannot be annotated is removed at once."""
        now = self._clock()
        name = f"{VIEW_NAME_PREFIX}{now.strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(4)}"
        view = self._new_view(
            project,
            {
                "concreteType": EntityType.ENTITY_VIEW.value,
                "name": name,
                "parentId": project.id,
                "description": DESCRIPTION,
                "scopeIds": [scope_id],
                "viewTypeMask": VIEW_TYPE_FILE,
                "columnIds": list(column_ids),
            },
        )
        on_created(view)
        try:
            self._mark(
                view,
                {
                    CREATED_ON_KEY: {"type": "STRING", "value": [_stamp(now)]},
                    HOST_KEY: {"type": "STRING", "value": [self._host]},
                },
            )
        except CallCancelledError:
            raise  # (the run stops: its calls are refused; the run's end removes the view)
        except SynclientError:
            self.delete_view(view.id)
            raise
        return view.id

    def _new_view(self, project: ScratchProject, body: Mapping[str, object]) -> Entity:
        """``POST /entity`` of the view, checked to be what was asked (only that is ever deleted). A 409 when the
        platform made the view but its answer was lost (the call was tried again): the view of that name, ours."""
        name = str(body["name"])
        try:
            view = self._platform.create_entity(body)
        except PlatformError as exc:
            found = self._platform.find_child(project.id, name) if exc.status == 409 else None
            if found is None:
                raise
            view = self._platform.get_entity(found)
            if view.raw.get("description") != DESCRIPTION or str(view.raw.get("createdBy")) != self.owner_id():
                raise
        if view.type is not EntityType.ENTITY_VIEW or view.name != name or view.parent_id != project.id:
            raise MalformedAnswerError(f"POST /entity answered {view.id}, not the file view {name} it made")
        return view

    def _mark(self, view: Entity, marks: Dict[str, Dict[str, object]]) -> None:
        """Annotate the view with ``marks``; at a 412 (an etag moved on, or this call's retry after the platform
        applied it), read them again: marked already, or marked at the etag they have now."""
        try:
            self._platform.set_annotations(Annotations(view.id, str(view.raw.get("etag")), marks))
            return
        except PlatformError as exc:
            if exc.status != 412:
                raise
        now = self._platform.get_annotations(view.id)
        if all(now.annotations.get(key) == mark for key, mark in marks.items()):
            return
        self._platform.set_annotations(Annotations(view.id, now.etag, {**now.annotations, **marks}))

    def delete_view(self, view_id: str) -> None:
        try:
            self._platform.delete_entity(view_id)
        except NotFoundError:
            pass  # (gone already: removed with its project by another run)

    def sweep_leftovers(self, project: ScratchProject, *, server_now: Optional[str] = None) -> List[str]:
        """Remove the views earlier runs of this user left in ``project`` (killed before removing theirs) once
        they are older than :data:`LEFTOVER_GRACE`: the ids removed. One children call, and two calls for each view
        named as synclient's (its annotations and its creator). ``server_now``: the platform's time (the
        ``createdOn`` of the view this run just made): a leftover must also be that old by the platform's clock,
        so that a host whose clock runs an hour ahead never takes another host's running view for a leftover."""
        platform_now = _parse_stamp(server_now)
        removed: List[str] = []
        for header in self._platform.iter_children(project.id, include_types=[EntityType.ENTITY_VIEW]):
            if header.type is not EntityType.ENTITY_VIEW or not header.name.startswith(VIEW_NAME_PREFIX):
                continue
            try:
                annotations = self._platform.get_annotations(header.id)
                entity = self._platform.get_entity(header.id)
                made = _parse_stamp(annotations.text(CREATED_ON_KEY))
                if entity.type is not EntityType.ENTITY_VIEW or entity.parent_id != project.id:
                    continue  # (a listing that named something else)
                if entity.raw.get("description") != DESCRIPTION and made is None:
                    continue  # not marked as synclient's
                if str(entity.raw.get("createdBy")) != self.owner_id():
                    continue  # another user's: theirs to remove
                created = _parse_stamp(entity.raw.get("createdOn"))
                made = made or created
                if made is None or self._clock() - made < LEFTOVER_GRACE:
                    continue
                if platform_now is not None and (created is None or platform_now - created < LEFTOVER_GRACE):
                    continue  # (young by the platform's clock: this host's clock is ahead)
                self.delete_view(header.id)
            except CallCancelledError:
                raise
            except NotFoundError:
                continue
            except SynclientError as exc:
                # one leftover this run cannot remove (no DELETE in a shared --scratch-project, an odd answer)
                # must not cost the run its own view
                log.debug("a leftover view %s is left: %s", header.id, exc)
                continue
            removed.append(header.id)
            log.info(
                "removed %s, a temporary file view a run on %s left at %s",
                header.id,
                annotations.text(HOST_KEY) or "an unknown host",
                _stamp(made),
            )
        return removed
