"""Changing the platform while it serves: the operations behind ``Emulator.add_version`` & co.
and the ``POST /emulator/...`` admin routes."""

from __future__ import annotations

import base64
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

from .entity_names import NameRule, entity_name
from .knobs import parse_size
from .seed import resolve_path, seeded_chunks
from .store import EntityKind, EntityRef, HandleStorage, Store, parse_syn_id
from .tables import epoch_ms, refresh_view
from .view_builds import take_replica

__all__ = ["Admin", "EntityRef", "content_from_json", "parse_syn_id"]


def content_from_json(body: dict) -> Optional[Iterable[bytes]]:
    """Admin route bodies give content as "content" (text), "content_b64", or "size"+"seed"."""
    if "content" in body:
        return [str(body["content"]).encode("utf-8")]
    if "content_b64" in body:
        return [base64.b64decode(body["content_b64"])]
    if "size" in body:
        return seeded_chunks(parse_size(body["size"]), int(body.get("seed", 0)))
    return None


def _file_name(file_name: Optional[str], default: str) -> str:
    """A handle's fileName: ``file_name`` (any non-empty string: Synapse checks none on an external handle's),
    else ``default``."""
    if file_name is None:
        return default
    if not isinstance(file_name, str) or file_name == "":
        raise ValueError("file_name must be a non-empty string")
    return file_name


class Admin:
    def __init__(self, store: Store) -> None:
        self.store = store

    def _store_content(self, content: Union[bytes, str, Iterable[bytes]], file_name: str, **handle_options) -> int:
        if isinstance(content, str):
            content = content.encode("utf-8")
        if isinstance(content, (bytes, bytearray, memoryview)):
            md5, size = self.store.put_bytes(bytes(content))
        else:
            md5, size = self.store.put_blob(content)
        return self.store.create_file_handle(md5, size, file_name, **handle_options)

    def add_version(
        self, entity_ref: EntityRef, content: Union[bytes, str, Iterable[bytes]], *, file_name: Optional[str] = None
    ) -> int:
        """A new version of a file; its handle's fileName is ``file_name`` (default: the entity's name)."""
        entity_id = parse_syn_id(entity_ref)
        entity = self.store.entity(entity_id)
        if entity is None:
            raise KeyError(f"no entity syn{entity_id}")
        handle = self._store_content(content, _file_name(file_name, entity.name))
        return self.store.add_version(entity_id, handle)

    def replace_file_handle(self, entity_ref: EntityRef, version: Optional[int] = None) -> int:
        """A new handle of the same bytes for a file version (its current one by default), in place; its id."""
        entity_id = parse_syn_id(entity_ref)
        entity = self.store.entity(entity_id)
        if entity is None:
            raise KeyError(f"no entity syn{entity_id}")
        number = version if version is not None else entity.current_version
        current = self.store.version(entity_id, number)
        old = self.store.file_handle(current.file_handle_id) if current is not None else None
        if old is None:
            raise KeyError(f"no version {number} of syn{entity_id}")
        handle = self.store.create_file_handle(old.md5, old.size, old.file_name, old.content_type)
        self.store.replace_version_handle(entity_id, number, handle)
        return handle

    def add_file(
        self,
        parent_ref: EntityRef,
        name: str,
        content: Union[bytes, str, Iterable[bytes]] = b"",
        *,
        file_name: Optional[str] = None,
        names: Union[NameRule, str] = NameRule.SYNAPSE,
    ) -> str:
        """A new file; ``file_name``: its handle's fileName (default: its name); ``names="unchecked"``: a name
        Synapse would refuse (a hostile server's)."""
        rule = NameRule.parse(names)
        handle = self._store_content(content, _file_name(file_name, entity_name(name, rule)))
        entity_id = self.store.create_entity(
            EntityKind.FILE, name, parse_syn_id(parent_ref), file_handle_id=handle, names=rule
        )
        return f"syn{entity_id}"

    def add_external_file(
        self,
        parent_ref: EntityRef,
        name: str,
        content: Union[bytes, str, Iterable[bytes]] = b"",
        *,
        record_md5: bool = True,
        record_size: bool = True,
        file_name: Optional[str] = None,
        names: Union[NameRule, str] = NameRule.SYNAPSE,
    ) -> str:
        rule = NameRule.parse(names)
        handle = self._store_content(
            content,
            _file_name(file_name, entity_name(name, rule)),
            storage=HandleStorage.EXTERNAL,
            records_md5=record_md5,
            records_size=record_size,
        )
        entity_id = self.store.create_entity(
            EntityKind.FILE, name, parse_syn_id(parent_ref), file_handle_id=handle, names=rule
        )
        return f"syn{entity_id}"

    def add_folder(self, parent_ref: EntityRef, name: str, *, names: Union[NameRule, str] = NameRule.SYNAPSE) -> str:
        entity_id = self.store.create_entity(
            EntityKind.FOLDER, name, parse_syn_id(parent_ref), names=NameRule.parse(names)
        )
        return f"syn{entity_id}"

    def add_link(
        self, parent_ref: EntityRef, name: str, target_ref: EntityRef, *, names: Union[NameRule, str] = NameRule.SYNAPSE
    ) -> str:
        entity_id = self.store.create_entity(
            EntityKind.LINK,
            name,
            parse_syn_id(parent_ref),
            link_target=parse_syn_id(target_ref),
            names=NameRule.parse(names),
        )
        return f"syn{entity_id}"

    def delete_entity(self, entity_ref: EntityRef) -> None:
        self.store.delete(parse_syn_id(entity_ref))

    def rename_entity(
        self, entity_ref: EntityRef, new_name: str, *, names: Union[NameRule, str] = NameRule.SYNAPSE
    ) -> None:
        if not new_name:
            raise ValueError("a name must not be empty")
        self.store.rename(parse_syn_id(entity_ref), new_name, NameRule.parse(names))

    def move_entity(self, entity_ref: EntityRef, new_parent_ref: EntityRef) -> None:
        self.store.move(parse_syn_id(entity_ref), parse_syn_id(new_parent_ref))

    def refresh_views(self, view_ref: Optional[EntityRef] = None) -> List[str]:
        """Take a new snapshot of one view, or of every view: what a view answers while ``view_lag`` is on. Of every
        view, it also copies the files into the replication a view created while ``view_lag`` is on is built from
        (view_builds.py)."""
        if view_ref is None:
            take_replica(self.store)
            view_ids = self.store.queryable_ids(EntityKind.ENTITYVIEW)
        else:
            view_id = parse_syn_id(view_ref)
            entity = self.store.entity(view_id)
            if entity is None:
                raise KeyError(f"no entity syn{view_id}")
            if entity.kind is not EntityKind.ENTITYVIEW:
                raise ValueError(f"syn{view_id} is a {entity.kind.value}, not an entityview")
            view_ids = [view_id]
        for view_id in view_ids:
            refresh_view(self.store, view_id)
        return [f"syn{view_id}" for view_id in view_ids]

    def trash(self) -> List[Dict[str, Any]]:
        """What the trash can holds (``DELETE /entity/{id}`` without ``skipTrashCan``): id, old name and parent."""
        return self.store.trash()

    def project_entities(self, project_ref: EntityRef) -> List[Dict[str, Any]]:
        """Every entity of a project, the project first, those in the trash can too (``inTrash``): what a test reads
        to say nothing was left behind. Each: id, name (the old one for the trash), kind, parentId, createdOn,
        inTrash, annotations (as stored: lists of str, int, float, bool)."""
        project_id = parse_syn_id(project_ref)
        if self.store.entity(project_id) is None:
            raise KeyError(f"no entity syn{project_id}")
        trashed = {item["id"]: item for item in self.store.trash()}
        found = self.store.entities(self.store.project_entity_ids(project_id))
        listed = []
        for entity_id in sorted(found):
            entity = found[entity_id]
            old = trashed.get(f"syn{entity_id}")
            parent = entity.parent_id if old is None else old["parentId"]
            listed.append(
                {
                    "id": f"syn{entity_id}",
                    "name": entity.name if old is None else old["name"],
                    "kind": entity.kind.value,
                    "parentId": parent if parent is None or isinstance(parent, str) else f"syn{parent}",
                    "createdOn": entity.created_on,
                    "inTrash": self.store.in_trash(entity_id),
                    "annotations": self.store.annotations(entity_id),
                }
            )
        return listed

    def set_annotation(self, entity_ref: EntityRef, key: str, values: Optional[Sequence[Any]]) -> None:
        """Set one annotation of an entity (values: str, int, float, bool; None or [] removes it); a new etag."""
        entity_id = parse_syn_id(entity_ref)
        if not key:
            raise ValueError("an annotation key must not be empty")
        annotations = self.store.annotations(entity_id)
        if values:
            annotations[key] = list(values)
        else:
            annotations.pop(key, None)
        self.store.set_annotations(entity_id, annotations)

    def set_created_on(self, entity_ref: EntityRef, stamp: str) -> None:
        """Date an entity's creation (ISO 8601 UTC, ``2024-01-02T03:04:05.000Z``): a test ages a leftover."""
        epoch_ms(stamp)  # ValueError for another format
        self.store.set_created_on(parse_syn_id(entity_ref), stamp)

    def resolve(self, project_ref: EntityRef, path) -> str:
        return f"syn{resolve_path(self.store, parse_syn_id(project_ref), path)}"
