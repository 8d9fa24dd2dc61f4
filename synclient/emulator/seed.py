"""Filling the store: from a JSON tree spec, from a local directory, or synthetically.

Spec format (other tools rely on it)::

    {"projects": [{"name": "p", "children": [
        {"type": "folder", "name": "d", "children": [...]},
        {"type": "file", "name": "a.txt", "content": "text"},
        {"type": "file", "name": "big.bin", "size": 134217728, "seed": 7},
        {"type": "file", "name": "v.txt", "versions": [{"content": "v1"}, {"content": "v2", "file_name": "v2.txt"}]},
        {"type": "file", "name": "renamed", "file_name": "raw data.csv", "content": "a,b"},
        {"type": "link", "name": "l", "target": "d/a.txt"},
        {"type": "file", "name": "secret", "content": "x", "deny": true},
        {"type": "file", "name": "n", "content": "x", "annotations": {"k": ["v"]}},
        {"type": "file", "name": "x.csv", "external": true, "content": "a,b", "record_md5": false},
        {"type": "file", "name": "y.csv", "external": "sftp://sftp.example.org/data/y.csv"},
        {"type": "dataset", "name": "ds", "items": [{"ref": "d/a.txt", "version": 1}, {"ref": "v.txt"}]},
        {"type": "datasetcollection", "name": "dc", "items": [{"ref": "ds"}]},
        {"type": "entityview", "name": "v", "scope": ["d", ""], "columns": ["k", {"name": "n", "type": "INTEGER"}]},
        {"type": "table", "name": "t", "columns": [{"name": "file", "type": "ENTITYID"}, "note"],
         "rows": [["d/a.txt", "first"], [["d", "a.txt"], null]]}]}]}

Entity names follow Synapse's rule (:mod:`.entity_names`: trimmed, then refused as Synapse refuses them);
``"names": "unchecked"`` at the top level stores any non-empty name as given: not Synapse, a hostile server.
``file_name`` (on a file or one of its ``versions``; default: the entity's name) is the handle's ``fileName``, any
non-empty string, as an external handle's may be on Synapse.
``modifiedOn`` (on a file) dates its entity's last change and its current version's, ISO 8601 in UTC as Synapse
writes it (``"2026-01-01T10:00:00.000Z"``; default: when the seed ran), for tests of ``--min-age``/``--max-age``.
``size`` + ``seed`` means the bytes ``random.Random(seed).randbytes(size)``, generated in chunks.
``target`` is a "/"-separated path inside the same project, or a list of names when a name itself
contains "/".  ``deny`` is ``true``/``"read"`` (unreadable: not listed, 403 on a direct GET, no download) or
``"download"`` (readable and listed, not downloadable). Every file handle is created by the data owner
(``store.DATA_OWNER_ID``), not by the token's user: Synapse lets a handle's creator download it in any case.
``external: true`` makes the file's handles ExternalFileHandles served by the external listener (its content as
for any file; ``record_md5`` / ``record_size``, default true, say whether the handle records contentMd5 /
contentSize). ``external: "<sftp|ftp|http|https URL>"`` is a handle with that URL verbatim and no bytes; it
records an MD5 / size only when ``md5`` / ``size`` are given.  A dataset's items are ``{"ref": path, "version": n}``
(files; ``version`` defaults to the file's current version), a dataset collection's are datasets; refs are
resolved like link targets, after the whole spec is created.

An ``entityview`` is a file view (``viewTypeMask`` 1): its ``scope`` is a list of refs to folders or projects of the
same project (resolved like link targets, after the whole spec; ``""`` is the project itself) and its rows are every
file below those containers, at any depth, as Synapse expands a file view's scope to every container under it. Its
columns are Synapse's 15 default file-view columns (``tables.DEFAULT_FILE_VIEW_COLUMNS``; ``"defaultColumns":
false`` leaves them out) and then ``columns``: annotation columns, each a name (STRING, maximumSize 50) or
``{"name", "type", "maximumSize", "facetType"}``; a file's annotation of that name fills the cell (its first value).
A ``table`` has ``columns`` (the same forms) and ``rows``: lists of cells in column order, ``null`` for none. An
ENTITYID cell is a ref to an entity of the project (a path or a list of names), a FILEHANDLEID cell a ref to a file
(its current handle) or a handle id (an integer); other cells are values of the column's type. Row ids count from 1.
"""

from __future__ import annotations

import datetime
import math
import os
import random
import re
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Sequence, Tuple, Union
from urllib.parse import unquote, urlsplit

from . import tables
from .entity_names import NameRule, entity_name
from .knobs import parse_size
from .store import DenyMode, EntityKind, HandleStorage, ItemRef, Store

#: Chunk size for generated content; a multiple of 4 so that chunked randbytes equals one call
#: (randbytes draws 32-bit words; see tests/emulator/test_seed.py).
GENERATE_CHUNK = 1 << 20
#: URL schemes a foreign external handle may have (what synapseclient knows how to fetch)
FOREIGN_SCHEMES = ("sftp", "ftp", "http", "https")
_MD5_HEX = re.compile(r"^[0-9a-f]{32}$")
#: what each item-list kind may list
ITEM_KINDS = {EntityKind.DATASET: EntityKind.FILE, EntityKind.DATASET_COLLECTION: EntityKind.DATASET}


class SpecError(ValueError):
    """The seed spec is malformed (message names the offending node)."""


def seeded_chunks(size: int, seed: int, chunk_size: int = GENERATE_CHUNK) -> Iterator[bytes]:
    """The bytes of ``random.Random(seed).randbytes(size)``, yielded in chunks of bounded size."""
    if chunk_size % 4:
        raise ValueError("chunk_size must be a multiple of 4 to reproduce randbytes exactly")
    generator = random.Random(seed)
    remaining = size
    while remaining > 0:
        step = min(chunk_size, remaining)
        yield generator.randbytes(step)
        remaining -= step


def seeded_bytes(size: int, seed: int) -> bytes:
    return b"".join(seeded_chunks(size, seed))


PathLike = Union[str, Sequence[str]]


def split_path(path: PathLike) -> List[str]:
    if isinstance(path, str):
        return [part for part in path.split("/") if part != ""]
    return list(path)


def resolve_path(store: Store, project_id: int, path: PathLike) -> int:
    current = project_id
    for name in split_path(path):
        child = store.child_by_name(current, name)
        if child is None:
            raise KeyError(f"no entity at {path!r} in syn{project_id}")
        current = child
    return current


@dataclass
class _PendingLink:
    parent_id: int
    name: str
    project_id: int
    target: PathLike
    deny: DenyMode
    where: str


@dataclass
class _PendingItems:
    """A dataset or collection, created at once (its name is taken), whose items are resolved at the end."""

    entity_id: int
    kind: EntityKind
    project_id: int
    items: List[dict]
    where: str


@dataclass
class _PendingTable:
    """A view or table, created at once (its name is taken), whose scope refs or cells are resolved at the end."""

    entity_id: int
    kind: EntityKind
    project_id: int
    node: dict
    columns: List[dict]
    where: str


class SpecSeeder:
    """Creates the entities of a spec; links, dataset items, view scopes and table cells come last so their targets
    may come later."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.names = NameRule.SYNAPSE  # the spec's "names"
        self._links: List[_PendingLink] = []
        self._item_lists: List[_PendingItems] = []
        self._tables: List[_PendingTable] = []

    def seed(self, spec: dict) -> Dict[str, str]:
        if not isinstance(spec, dict) or not isinstance(spec.get("projects"), list):
            raise SpecError('spec must be an object with a "projects" list')
        try:
            self.names = NameRule.parse(spec.get("names", NameRule.SYNAPSE.value))
        except ValueError as error:
            raise SpecError(str(error)) from None
        created: Dict[str, str] = {}
        with self.store.batch():
            for index, project in enumerate(spec["projects"]):
                where = f"projects[{index}]"
                name = self._name(project, where)
                try:
                    project_id = self.store.create_entity(
                        EntityKind.PROJECT,
                        name,
                        None,
                        deny=self._deny(project, where),
                        annotations=self._annotations(project, where),
                        names=self.names,
                    )
                except ValueError as error:
                    raise SpecError(f"{where}: {error}") from None
                name = self.store.known_entity(project_id).name
                self._children(project, project_id, project_id, where)
                created[name] = f"syn{project_id}"
            for link in self._links:
                try:
                    target = resolve_path(self.store, link.project_id, link.target)
                except KeyError:
                    raise SpecError(f"{link.where}: link target {link.target!r} not found in the project") from None
                try:
                    self.store.create_entity(
                        EntityKind.LINK, link.name, link.parent_id, link_target=target, deny=link.deny, names=self.names
                    )
                except ValueError as error:
                    raise SpecError(f"{link.where}: {error}") from None
            for pending in self._item_lists:
                refs = [self._item_ref(pending, index, item) for index, item in enumerate(pending.items)]
                self.store.set_items(pending.entity_id, refs)
            for pending_table in self._tables:  # tables first: a view's snapshot sees every other entity
                if pending_table.kind is EntityKind.TABLE:
                    self._finish_table(pending_table)
            for pending_table in self._tables:
                if pending_table.kind is EntityKind.ENTITYVIEW:
                    self._finish_view(pending_table)
        return created

    # --- views and tables -----------------------------------------------------------------------
    @staticmethod
    def _columns(node: dict, where: str, defaults: bool) -> List[dict]:
        """The column models (without ids) a view or table node asks for."""
        given = node.get("columns", [])
        if not isinstance(given, list):
            raise SpecError(f"{where}: columns must be a list")
        models = [tables.column_model(*column) for column in tables.DEFAULT_FILE_VIEW_COLUMNS] if defaults else []
        for index, column in enumerate(given):
            column_where = f"{where}.columns[{index}]"
            if isinstance(column, str):
                column = {"name": column}
            if not isinstance(column, dict) or not isinstance(column.get("name"), str) or not column["name"]:
                raise SpecError(f'{column_where}: a column is a name or an object with a "name"')
            size = column.get("maximumSize")
            if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
                raise SpecError(f"{column_where}: maximumSize must be a positive integer")
            facet = column.get("facetType")
            if facet is not None and facet not in ("enumeration", "range"):
                raise SpecError(f'{column_where}: facetType must be "enumeration" or "range"')
            try:
                models.append(tables.column_model(column["name"], column.get("type", "STRING"), size, facet))
            except ValueError as error:
                raise SpecError(f"{column_where}: {error}") from None
        names = [model["name"] for model in models]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise SpecError(f"{where}: column names must be unique, {', '.join(duplicates)} given twice")
        return models

    def _queryable(
        self,
        node: dict,
        kind: EntityKind,
        name: str,
        parent_id: int,
        project_id: int,
        where: str,
        deny: DenyMode,
        annotations,
    ) -> None:
        if kind is EntityKind.ENTITYVIEW:
            scope = node.get("scope")
            if not isinstance(scope, list) or not all(isinstance(ref, (str, list)) for ref in scope):
                raise SpecError(f"{where}: scope must be a list of refs (paths or lists of names)")
            if "rows" in node:
                raise SpecError(f"{where}: a view has no rows of its own (they come from its scope)")
            defaults = node.get("defaultColumns", True)
            if not isinstance(defaults, bool):
                raise SpecError(f"{where}: defaultColumns must be true or false")
            columns = self._columns(node, where, defaults)
        else:
            if not isinstance(node.get("rows", []), list):
                raise SpecError(f"{where}: rows must be a list")
            if "scope" in node:
                raise SpecError(f"{where}: a table has no scope (only an entityview has)")
            columns = self._columns(node, where, False)
        entity_id = self.store.create_entity(
            kind, name, parent_id, deny=deny, annotations=annotations, names=self.names
        )
        self._tables.append(_PendingTable(entity_id, kind, project_id, node, columns, where))

    def _ref(self, pending: _PendingTable, ref, where: str) -> int:
        try:
            return resolve_path(self.store, pending.project_id, ref)
        except KeyError:
            raise SpecError(f"{where}: ref {ref!r} not found in the project") from None

    def _finish_view(self, pending: _PendingTable) -> None:
        scope_ids = []
        for index, ref in enumerate(pending.node["scope"]):
            where = f"{pending.where}.scope[{index}]"
            target_id = self._ref(pending, ref, where)
            target = self.store.known_entity(target_id)
            if target.kind not in (EntityKind.PROJECT, EntityKind.FOLDER):
                raise SpecError(f"{where}: ref {ref!r} is a {target.kind.value}, not a folder or project")
            scope_ids.append(target_id)
        column_ids = [self.store.column_model_id(model) for model in pending.columns]
        self.store.set_table_schema(pending.entity_id, column_ids, scope_ids, tables.VIEW_TYPE_FILE)
        tables.refresh_view(self.store, pending.entity_id)

    def _finish_table(self, pending: _PendingTable) -> None:
        column_ids = [self.store.column_model_id(model) for model in pending.columns]
        self.store.set_table_schema(pending.entity_id, column_ids)
        rows = []
        for row_index, row in enumerate(pending.node.get("rows", [])):
            row_where = f"{pending.where}.rows[{row_index}]"
            if not isinstance(row, list) or len(row) != len(pending.columns):
                raise SpecError(f"{row_where}: a row is a list of {len(pending.columns)} cells")
            rows.append(
                [
                    self._cell(pending, model, cell, f"{row_where}[{index}]")
                    for index, (model, cell) in enumerate(zip(pending.columns, row))
                ]
            )
        self.store.set_table_rows(pending.entity_id, rows)

    def _cell(self, pending: _PendingTable, model: dict, cell, where: str):
        column_type = model["columnType"]
        if cell is None:
            return None
        if column_type == "ENTITYID":
            if not isinstance(cell, (str, list)):
                raise SpecError(f"{where}: an ENTITYID cell is a ref (a path or a list of names)")
            return self._ref(pending, cell, where)
        if column_type == "FILEHANDLEID" and isinstance(cell, (str, list)):
            target = self.store.known_entity(self._ref(pending, cell, where))
            if target.kind is not EntityKind.FILE:
                raise SpecError(f"{where}: ref {cell!r} is a {target.kind.value}, not a file")
            return target.file_handle_id
        try:
            return tables.to_cell(cell, column_type)
        except (TypeError, ValueError) as error:
            raise SpecError(f"{where}: {error}") from None

    def _item_ref(self, pending: _PendingItems, index: int, item: dict) -> ItemRef:
        where = f"{pending.where}.items[{index}]"
        try:
            target_id = resolve_path(self.store, pending.project_id, item["ref"])
        except KeyError:
            raise SpecError(f"{where}: ref {item['ref']!r} not found in the project") from None
        target = self.store.known_entity(target_id)
        wanted = ITEM_KINDS[pending.kind]
        if target.kind is not wanted:
            raise SpecError(f"{where}: ref {item['ref']!r} is a {target.kind.value}, not a {wanted.value}")
        version = item.get("version", target.current_version)
        if version > target.current_version:
            raise SpecError(f"{where}: {item['ref']!r} has no version {version}")
        return ItemRef(target_id, version)

    def _children(self, node: dict, parent_id: int, project_id: int, where: str) -> None:
        children = node.get("children", [])
        if not isinstance(children, list):
            raise SpecError(f"{where}: children must be a list")
        for index, child in enumerate(children):
            self._node(child, parent_id, project_id, f"{where}.children[{index}]")

    def _node(self, node: dict, parent_id: int, project_id: int, where: str) -> None:
        if not isinstance(node, dict):
            raise SpecError(f"{where}: must be an object")
        name = self._name(node, where)
        kind = node.get("type")
        deny = self._deny(node, where)
        annotations = self._annotations(node, where)
        try:
            if kind == "folder":
                folder_id = self.store.create_entity(
                    EntityKind.FOLDER, name, parent_id, deny=deny, annotations=annotations, names=self.names
                )
                self._children(node, folder_id, project_id, where)
            elif kind == "file":
                versions = node.get("versions") or [node]
                if not isinstance(versions, list):
                    raise SpecError(f"{where}: versions must be a list")
                content_type = node.get("contentType", "application/octet-stream")
                external = self._external(node, where)
                # the handle's fileName: the version's "file_name", else the file's, else the entity's name
                file_name = self._file_name(node, where, entity_name(name, self.names))
                if isinstance(external, str):
                    handles = [self._foreign_handle(node, external, file_name, content_type, where)]
                else:
                    handles = [
                        self._file_handle(
                            v,
                            self._file_name(v, f"{where}.versions[{i}]", file_name),
                            content_type,
                            f"{where}.versions[{i}]",
                            self._handle_options(node, v, external, where),
                        )
                        for i, v in enumerate(versions)
                    ]
                file_id = self.store.create_entity(
                    EntityKind.FILE,
                    name,
                    parent_id,
                    file_handle_id=handles[0],
                    deny=deny,
                    annotations=annotations,
                    names=self.names,
                )
                for handle in handles[1:]:
                    self.store.add_version(file_id, handle)
                if "modifiedOn" in node:
                    self.store.set_modified_on(file_id, self._modified_on(node, where))
            elif kind == "link":
                if "target" not in node:
                    raise SpecError(f"{where}: a link needs a target")
                self._links.append(_PendingLink(parent_id, name, project_id, node["target"], deny, where))
            elif kind in ("entityview", "table"):
                self._queryable(node, EntityKind(kind), name, parent_id, project_id, where, deny, annotations)
            elif kind in ("dataset", "datasetcollection"):
                item_kind = EntityKind(kind)
                items = self._items(node, where)
                entity_id = self.store.create_entity(
                    item_kind, name, parent_id, deny=deny, annotations=annotations, names=self.names
                )
                self._item_lists.append(_PendingItems(entity_id, item_kind, project_id, items, where))
            else:
                raise SpecError(
                    f"{where}: type must be folder, file, link, dataset, datasetcollection, "
                    f"entityview or table, got {kind!r}"
                )
        except (ValueError, KeyError) as error:
            if isinstance(error, SpecError):
                raise
            raise SpecError(f"{where}: {error}") from None

    @staticmethod
    def _items(node: dict, where: str) -> List[dict]:
        items = node.get("items", [])
        if not isinstance(items, list):
            raise SpecError(f"{where}: items must be a list")
        for index, item in enumerate(items):
            item_where = f"{where}.items[{index}]"
            if not isinstance(item, dict) or "ref" not in item:
                raise SpecError(f'{item_where}: an item must be an object with a "ref"')
            if not isinstance(item["ref"], (str, list)) or not split_path(item["ref"]):
                raise SpecError(f"{item_where}: ref must be a non-empty path or list of names")
            version = item.get("version")
            if version is not None and (isinstance(version, bool) or not isinstance(version, int) or version < 1):
                raise SpecError(f"{item_where}: version must be a positive integer")
        return items

    @staticmethod
    def _external(node: dict, where: str) -> Union[bool, str]:
        """False, True (served by the external listener) or a foreign URL."""
        external = node.get("external", False)
        if external is False:
            for key in ("record_md5", "record_size"):
                if key in node:
                    raise SpecError(f'{where}: {key} only applies to a file with "external": true')
            return False
        if external is True:
            if "md5" in node:
                raise SpecError(f"{where}: md5 only applies to a file with an external URL (content has its own)")
            return True
        if not isinstance(external, str) or urlsplit(external).scheme.lower() not in FOREIGN_SCHEMES:
            raise SpecError(f"{where}: external must be true or a URL ({', '.join(FOREIGN_SCHEMES)}), got {external!r}")
        for key in ("content", "seed", "versions", "record_md5", "record_size"):
            if key in node:
                raise SpecError(f"{where}: a file with an external URL has no {key} (only md5 and size)")
        return external

    @staticmethod
    def _handle_options(node: dict, version: dict, external: bool, where: str) -> dict:
        """Keyword arguments of create_file_handle for one version (``record_*`` may be set per version)."""
        if not external:
            return {}
        options = {}
        for key in ("record_md5", "record_size"):
            value = version.get(key, node.get(key, True))
            if not isinstance(value, bool):
                raise SpecError(f"{where}: {key} must be true or false")
            options["records_" + key[len("record_") :]] = value
        return dict(options, storage=HandleStorage.EXTERNAL)

    def _foreign_handle(self, node: dict, url: str, name: str, content_type: str, where: str) -> int:
        md5 = node.get("md5")
        if md5 is not None and (not isinstance(md5, str) or not _MD5_HEX.match(md5)):
            raise SpecError(f"{where}: md5 must be 32 lowercase hex digits")
        try:
            size = parse_size(node["size"]) if "size" in node else None
        except (TypeError, ValueError) as error:
            raise SpecError(f"{where}: {error}") from None
        # as synapseclient names such handles, unless the spec gives a "file_name"
        file_name = name if "file_name" in node else unquote(urlsplit(url).path.rsplit("/", 1)[-1]) or name
        return self.store.create_file_handle(
            md5 or "",
            size or 0,
            file_name,
            node.get("contentType", content_type),
            storage=HandleStorage.FOREIGN,
            foreign_url=url,
            records_md5=md5 is not None,
            records_size=size is not None,
        )

    def _file_handle(
        self, node: dict, name: str, content_type: str, where: str, handle_options: Optional[dict] = None
    ) -> int:
        if "content" in node:
            content = node["content"]
            data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
            md5, size = self.store.put_bytes(data)
        elif "size" in node:
            try:
                size = parse_size(node["size"])
                seed = int(node.get("seed", 0))
            except (TypeError, ValueError) as error:
                raise SpecError(f"{where}: {error}") from None
            md5, size = self.store.put_blob(seeded_chunks(size, seed))
        else:
            md5, size = self.store.put_bytes(b"")
        return self.store.create_file_handle(
            md5, size, name, node.get("contentType", content_type), **(handle_options or {})
        )

    @staticmethod
    def _file_name(node: dict, where: str, default: str) -> str:
        """A node's (or version's) ``file_name``: its handle's fileName, any non-empty string (Synapse checks no
        rule on an external handle's fileName), else ``default``."""
        if "file_name" not in node:
            return default
        file_name = node["file_name"]
        if not isinstance(file_name, str) or file_name == "":
            raise SpecError(f"{where}: file_name must be a non-empty string")
        return file_name

    @staticmethod
    def _name(node: dict, where: str) -> str:
        name = node.get("name") if isinstance(node, dict) else None
        if not isinstance(name, str) or name == "":
            raise SpecError(f"{where}: needs a non-empty string name")
        return name

    @staticmethod
    def _modified_on(node: dict, where: str) -> str:
        """A file's ``modifiedOn``: ISO 8601 in UTC, as Synapse writes it (``2026-01-01T10:00:00.000Z``)."""
        stamp = node["modifiedOn"]
        try:
            datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ")
        except (TypeError, ValueError):
            raise SpecError(f'{where}: modifiedOn must be ISO 8601 in UTC, as "2026-01-01T10:00:00.000Z"') from None
        return stamp

    @staticmethod
    def _deny(node: dict, where: str) -> DenyMode:
        deny = node.get("deny", False)
        if deny is True or deny == "read":
            return DenyMode.READ
        if deny == "download":
            return DenyMode.DOWNLOAD
        if deny in (False, None, ""):
            return DenyMode.NONE
        raise SpecError(f'{where}: deny must be true, "read" or "download"')

    @staticmethod
    def _annotations(node: dict, where: str) -> Optional[Dict[str, list]]:
        annotations = node.get("annotations")
        if annotations is None:
            return None
        if not isinstance(annotations, dict):
            raise SpecError(f"{where}: annotations must be an object")
        return {str(k): (list(v) if isinstance(v, (list, tuple)) else [v]) for k, v in annotations.items()}


def seed_spec(store: Store, spec: dict) -> Dict[str, str]:
    return SpecSeeder(store).seed(spec)


def seed_dir(store: Store, path: str, project_name: str, names: NameRule = NameRule.SYNAPSE) -> int:
    """Mirror a local directory tree into a new project (symlinked directories are not followed); every local name
    must be one Synapse takes for an entity (``names=NameRule.UNCHECKED``: a hostile server's, any name)."""
    if not os.path.isdir(path):
        raise NotADirectoryError(f"not a directory: {path}")
    with store.batch():
        project_id = store.create_entity(EntityKind.PROJECT, project_name, None, names=names)
        folder_ids = {os.path.abspath(path): project_id}
        for here, dirs, files in os.walk(path):
            parent_id = folder_ids[os.path.abspath(here)]
            dirs.sort()
            for name in dirs:
                folder_ids[os.path.abspath(os.path.join(here, name))] = store.create_entity(
                    EntityKind.FOLDER, name, parent_id, names=names
                )
            for name in sorted(files):
                full = os.path.join(here, name)
                if not os.path.isfile(full):
                    continue
                md5, size = store.put_blob(_file_chunks(full))
                handle = store.create_file_handle(md5, size, name)
                store.create_entity(EntityKind.FILE, name, parent_id, file_handle_id=handle, names=names)
    return project_id


def _file_chunks(path: str) -> Iterator[bytes]:
    with open(path, "rb") as source:
        while True:
            chunk = source.read(GENERATE_CHUNK)
            if not chunk:
                return
            yield chunk


def parse_size_mix(size: Union[str, int]) -> List[Tuple[int, Optional[int]]]:
    """``"50"`` -> [(50, None)]; ``"4KiB:500,1MiB:200"`` -> [(4096, 500), (1048576, 200)]."""
    if isinstance(size, int):
        return [(size, None)]
    parts = [p.strip() for p in str(size).split(",") if p.strip()]
    if len(parts) == 1 and ":" not in parts[0]:
        return [(parse_size(parts[0]), None)]
    mix: List[Tuple[int, Optional[int]]] = []
    for part in parts:
        size_text, sep, count_text = part.partition(":")
        if not sep:
            raise ValueError(f"size mix entries must be SIZE:COUNT, got {part!r}")
        count = int(count_text)
        if count < 0:
            raise ValueError(f"negative count in size mix: {part!r}")
        mix.append((parse_size(size_text), count))
    return mix


def seed_synthetic(
    store: Store,
    files: int = 400,
    depth: int = 3,
    fanout: int = 10,
    size: Union[str, int] = "50",
    seed: int = 0,
    project_name: Optional[str] = None,
) -> int:
    """A benchmark tree: ``depth`` folder levels, ``fanout`` children per folder, files at the leaves.

    With a size mix (``"4KiB:500,1MiB:200"``) the counts of the mix define the files and
    ``files`` is ignored. File i holds ``random.Random(seed * 1_000_003 + i).randbytes(size_i)``.
    """
    mix = parse_size_mix(size)
    if len(mix) == 1 and mix[0][1] is None:
        sizes = [mix[0][0]] * int(files)
    else:
        sizes = [entry_size for entry_size, count in mix for _ in range(count or 0)]  # (each count given here)
    if depth < 0 or fanout < 1:
        raise ValueError("depth must be >= 0 and fanout >= 1")
    total = len(sizes)
    leaves = fanout**depth
    per_leaf = max(fanout, math.ceil(total / leaves)) if depth else max(total, 1)
    with store.batch():
        name = project_name or f"synthetic-{total}-d{depth}-f{fanout}-s{seed}"
        project_id = store.create_entity(EntityKind.PROJECT, name, None)
        folders: Dict[Tuple[int, ...], int] = {(): project_id}
        for index, file_size in enumerate(sizes):
            leaf = index // per_leaf
            digits = tuple((leaf // fanout**level) % fanout for level in reversed(range(depth)))
            parent_id = _folder_for(store, folders, digits)
            generator_seed = seed * 1_000_003 + index
            if file_size <= GENERATE_CHUNK:
                md5, stored = store.put_bytes(random.Random(generator_seed).randbytes(file_size))
            else:
                md5, stored = store.put_blob(seeded_chunks(file_size, generator_seed))
            file_name = f"file{index:07d}.bin"
            handle = store.create_file_handle(md5, stored, file_name)
            store.create_entity(EntityKind.FILE, file_name, parent_id, file_handle_id=handle, check_name=False)
    return project_id


def _folder_for(store: Store, folders: Dict[Tuple[int, ...], int], digits: Tuple[int, ...]) -> int:
    if digits in folders:
        return folders[digits]
    parent_id = _folder_for(store, folders, digits[:-1])
    folder_id = store.create_entity(EntityKind.FOLDER, f"dir{digits[-1]:03d}", parent_id, check_name=False)
    folders[digits] = folder_id
    return folder_id
