"""An in-process stand-in for the platform's tree (children listings, entities, headers) for unit tests of the sync
core (the walker, the path claims): no HTTP, no emulator. Every children call is counted."""

from __future__ import annotations

import threading
from typing import Dict, Iterator, List, Optional, Sequence, Set, Tuple

from synclient.errors import AccessDeniedError, NotFoundError
from synclient.platform.models import ChildrenPage, Entity, EntityHeader, EntityType

ROOT_ID = "syn1"
ROOT = EntityHeader(ROOT_ID, "project", EntityType.PROJECT)


class FakeTree:
    """A remote tree under :data:`ROOT`, listed ``page_size`` children per page in name order (as the platform's
    ``sortBy NAME``). ``denied``: container ids whose listing is refused (403); ``denied_pages``: (id, page token)
    pairs refused, for a listing that fails midway; ``stuck``: ids whose listing never ends. Thread-safe: the walker
    lists from pool threads."""

    def __init__(self, *, page_size: int = 2) -> None:
        self.page_size = page_size
        self._children: Dict[str, List[EntityHeader]] = {ROOT_ID: []}
        self._entities: Dict[str, Entity] = {ROOT_ID: Entity(ROOT_ID, ROOT.name, ROOT.type)}
        self.denied: Set[str] = set()
        self.denied_pages: Set[Tuple[str, Optional[str]]] = set()
        self.stuck: Set[str] = set()  # container ids whose every page names the same next page (a server bug)
        self.listing_calls: List[Tuple[str, Optional[str]]] = []  # (parent id, page token) of every children call
        self.entity_calls: List[str] = []  # ids of get_entity / get_entity_header calls
        self._lock = threading.Lock()
        self._next = 100

    # -- building the tree -------------------------------------------------------------------------------------

    def _add(
        self,
        parent: str,
        name: str,
        kind: EntityType,
        *,
        entity_id: Optional[str] = None,
        version: Optional[int] = None,
        **entity: object,
    ) -> EntityHeader:
        if entity_id is None:
            self._next += 1
            entity_id = f"syn{self._next}"
        header = EntityHeader(entity_id, name, kind, version_number=version)
        self._children[parent].append(header)
        if kind.is_container:
            self._children[entity_id] = []
        self._entities[entity_id] = Entity(entity_id, name, kind, parent_id=parent, version_number=version, **entity)  # type: ignore[arg-type]
        return header

    def folder(self, parent: str, name: str, *, entity_id: Optional[str] = None) -> EntityHeader:
        return self._add(parent, name, EntityType.FOLDER, entity_id=entity_id)

    def file(self, parent: str, name: str, *, entity_id: Optional[str] = None, version: int = 1) -> EntityHeader:
        return self._add(parent, name, EntityType.FILE, entity_id=entity_id, version=version)

    def link(self, parent: str, name: str, target: str, *, entity_id: Optional[str] = None) -> EntityHeader:
        return self._add(parent, name, EntityType.LINK, entity_id=entity_id, link_target_id=target)

    def pages_of(self, parent: str) -> int:
        """How many children pages ``parent`` has (an empty folder: one, with no rows)."""
        count = len(self._children[parent])
        return max(1, -(-count // self.page_size))

    # -- the platform's calls the sync core makes ----------------------------------------------------------------

    def list_children(
        self,
        parent_id: str,
        *,
        include_types: Sequence[EntityType],
        page_token: Optional[str] = None,
        sum_file_sizes: bool = False,  # (no sizes here: the pages say none)
    ) -> ChildrenPage:
        with self._lock:
            self.listing_calls.append((parent_id, page_token))
        if parent_id in self.denied or (parent_id, page_token) in self.denied_pages:
            raise AccessDeniedError(f"you may not list {parent_id}")
        if parent_id not in self._children:
            raise NotFoundError(f"{parent_id} not found")
        rows = sorted((h for h in self._children[parent_id] if h.type in include_types), key=lambda h: h.name)
        if parent_id in self.stuck:
            return ChildrenPage(rows[: self.page_size], "again")
        start = int(page_token or 0)
        end = start + self.page_size
        return ChildrenPage(rows[start:end], str(end) if end < len(rows) else None)

    def iter_children(self, parent_id: str, *, include_types: Sequence[EntityType]) -> Iterator[EntityHeader]:
        token: Optional[str] = None
        while True:
            page = self.list_children(parent_id, include_types=include_types, page_token=token)
            yield from page.headers
            token = page.next_page_token
            if not token:
                return

    def get_entity(self, entity_id: str, *, version: Optional[int] = None) -> Entity:
        with self._lock:
            self.entity_calls.append(entity_id)
        return self._entities[entity_id]

    def get_entity_header(self, entity_id: str) -> EntityHeader:
        with self._lock:
            self.entity_calls.append(entity_id)
        entity = self._entities[entity_id]
        return EntityHeader(entity.id, entity.name, entity.type, version_number=entity.version_number)
