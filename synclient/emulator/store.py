"""Persistent state of the emulated platform: SQLite for metadata, a content-addressed blob dir.

Everything survives a restart: entities, versions, file handles, annotations, read permissions,
the user's token and the URL-signing secret. Blobs live under ``blobs/<md5[:2]>/<md5>`` and are
stored once however many file handles point at them.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime
import enum
import hashlib
import json
import os
import re
import secrets
import sqlite3
import tempfile
import threading
import uuid
from dataclasses import dataclass
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union
from urllib.parse import quote, unquote_plus

from .entity_names import NameRule, entity_name

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS users (
    id INTEGER PRIMARY KEY, user_name TEXT NOT NULL, token TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS entities (
    id INTEGER PRIMARY KEY,
    parent_id INTEGER,            -- NULL for projects
    project_id INTEGER NOT NULL,  -- the project at the root of the tree (itself for projects)
    name TEXT NOT NULL,
    kind TEXT NOT NULL,           -- EntityKind value
    created_on TEXT NOT NULL,
    modified_on TEXT NOT NULL,
    created_by INTEGER NOT NULL,
    modified_by INTEGER NOT NULL,
    etag TEXT NOT NULL,
    current_version INTEGER NOT NULL DEFAULT 1,
    link_target INTEGER,
    link_target_version INTEGER,
    deny TEXT NOT NULL DEFAULT ''  -- DenyMode value
);
CREATE INDEX IF NOT EXISTS entities_by_parent_name ON entities (parent_id, name);
CREATE TABLE IF NOT EXISTS versions (
    entity_id INTEGER NOT NULL,
    version_number INTEGER NOT NULL,
    file_handle_id INTEGER NOT NULL,
    created_on TEXT NOT NULL,
    modified_on TEXT NOT NULL,
    etag TEXT NOT NULL,
    PRIMARY KEY (entity_id, version_number)
);
CREATE TABLE IF NOT EXISTS file_handles (
    id INTEGER PRIMARY KEY,
    md5 TEXT NOT NULL,
    size INTEGER NOT NULL,
    file_name TEXT NOT NULL,
    content_type TEXT NOT NULL,
    created_on TEXT NOT NULL,
    created_by INTEGER NOT NULL,
    etag TEXT NOT NULL,
    storage TEXT NOT NULL DEFAULT 's3',   -- HandleStorage value
    external_url TEXT,                    -- a path on the external listener, or a foreign URL verbatim
    records_md5 INTEGER NOT NULL DEFAULT 1,
    records_size INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE IF NOT EXISTS annotations (entity_id INTEGER PRIMARY KEY, json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS dataset_items (
    entity_id INTEGER NOT NULL,   -- the dataset or dataset collection
    position INTEGER NOT NULL,
    item_id INTEGER NOT NULL,
    item_version INTEGER NOT NULL,
    PRIMARY KEY (entity_id, position)
);
-- ColumnModels, shared by every table and view that uses one (Synapse reuses the id of an identical model)
CREATE TABLE IF NOT EXISTS column_models (id INTEGER PRIMARY KEY, json TEXT NOT NULL UNIQUE);
-- a table's or view's schema: column ids (JSON list), a view's scope (JSON list of ids) and viewTypeMask
CREATE TABLE IF NOT EXISTS table_schemas (
    entity_id INTEGER PRIMARY KEY, column_ids TEXT NOT NULL, scope_ids TEXT, view_type_mask INTEGER);
-- a table's rows: one JSON list of cells per row, in column order
CREATE TABLE IF NOT EXISTS table_rows (
    entity_id INTEGER NOT NULL, row_id INTEGER NOT NULL, version INTEGER NOT NULL, json TEXT NOT NULL,
    PRIMARY KEY (entity_id, row_id));
-- what a lagging view shows: its rows as of its last refresh (tables.py)
CREATE TABLE IF NOT EXISTS view_snapshots (entity_id INTEGER PRIMARY KEY, json TEXT NOT NULL);
-- file handles a query made (CSV downloads), downloadable through their table with the TableEntity association
CREATE TABLE IF NOT EXISTS result_handles (handle_id INTEGER PRIMARY KEY, entity_id INTEGER NOT NULL);
-- entities in the trash can (moved there by DELETE /entity/{id}): their parent and name before (TrashManagerImpl)
CREATE TABLE IF NOT EXISTS trash (
    entity_id INTEGER PRIMARY KEY, old_parent_id INTEGER, old_name TEXT NOT NULL, deleted_on TEXT NOT NULL);
-- the fields of an entity made through POST /entity that the entities table has no column for (description, ...)
CREATE TABLE IF NOT EXISTS entity_fields (entity_id INTEGER PRIMARY KEY, json TEXT NOT NULL);
-- the entity replication a lagging view is built from: the files as of the last refresh_views() (view_builds.py)
CREATE TABLE IF NOT EXISTS replica (entity_id INTEGER PRIMARY KEY, json TEXT NOT NULL);
"""

#: Columns added to tables of older stores, so a data dir written before them still opens: (table, column, DDL).
ADDED_COLUMNS = (
    ("file_handles", "storage", "storage TEXT NOT NULL DEFAULT 's3'"),
    ("file_handles", "external_url", "external_url TEXT"),
    ("file_handles", "records_md5", "records_md5 INTEGER NOT NULL DEFAULT 1"),
    ("file_handles", "records_size", "records_size INTEGER NOT NULL DEFAULT 1"),
)

FIRST_ENTITY_ID = 1000001
FIRST_FILE_HANDLE_ID = 5000001
FIRST_USER_ID = 3400001
FIRST_COLUMN_ID = 70001
#: Synapse's trash can folder: the parent of every entity in the trash (TrashConstants.TRASH_FOLDER_ID, the stack's
#: ``org.sagebionetworks.trash.folder.entity.id``)
TRASH_FOLDER_ID = 1681355

#: what Synapse's ``KeyFactory.stringToKey`` accepts once it has URL-decoded, trimmed, lower-cased the id and taken
#: off one leading ``syn`` (lib/models/.../repo/model/jdo/KeyFactory.java): a Java long, so ``SYN123`` is syn123
_SYN_ID = re.compile(r"^[+-]?[0-9]+$")
_LONG_RANGE = range(-(2**63), 2**63)

EntityRef = Union[str, int]


def parse_syn_id(ref: EntityRef) -> int:
    """``"syn123"``, ``"SYN123"``, ``" syn%31%32%33 "``, ``"123"`` or ``123`` -> 123, as Synapse reads ids."""
    if isinstance(ref, int) and not isinstance(ref, bool):
        return ref
    text = unquote_plus(str(ref)).strip().lower()
    if text.startswith("syn"):
        text = text[3:]
    if not _SYN_ID.match(text) or int(text) not in _LONG_RANGE:
        raise ValueError(f"not a Synapse id: {ref!r}")
    return int(text)


class EntityKind(enum.Enum):
    PROJECT = "project"
    FOLDER = "folder"
    FILE = "file"
    LINK = "link"
    #: values are Synapse's EntityType names (bundle2's ``entityType``, children's ``includeTypes``)
    DATASET = "dataset"
    DATASET_COLLECTION = "datasetcollection"
    ENTITYVIEW = "entityview"
    TABLE = "table"

    @property
    def concrete_type(self) -> str:
        return {
            EntityKind.PROJECT: "org.sagebionetworks.repo.model.Project",
            EntityKind.FOLDER: "org.sagebionetworks.repo.model.Folder",
            EntityKind.FILE: "org.sagebionetworks.repo.model.FileEntity",
            EntityKind.LINK: "org.sagebionetworks.repo.model.Link",
            EntityKind.DATASET: "org.sagebionetworks.repo.model.table.Dataset",
            EntityKind.DATASET_COLLECTION: "org.sagebionetworks.repo.model.table.DatasetCollection",
            EntityKind.ENTITYVIEW: "org.sagebionetworks.repo.model.table.EntityView",
            EntityKind.TABLE: "org.sagebionetworks.repo.model.table.TableEntity",
        }[self]

    @property
    def is_item_list(self) -> bool:
        """Datasets and dataset collections: views defined by a flat list of entity references."""
        return self in (EntityKind.DATASET, EntityKind.DATASET_COLLECTION)

    @property
    def is_queryable(self) -> bool:
        """Entity views and tables: a schema of columns, rows, the table query service."""
        return self in (EntityKind.ENTITYVIEW, EntityKind.TABLE)

    @property
    def is_table_type(self) -> bool:
        """Synapse's table types (``Table`` in its model): they have columns and an "in progress" version."""
        return self.is_item_list or self.is_queryable


class HandleStorage(enum.Enum):
    """Where a file handle's bytes live."""

    #: the data listener, behind pre-signed URLs (an S3FileHandle)
    S3 = "s3"
    #: the external listener; the handle stores its URL path, rendered against the listener at wire time
    EXTERNAL = "external"
    #: a foreign URL (sftp://, ftp://, http(s)://) stored and shown verbatim; the emulator serves no bytes for it
    FOREIGN = "foreign"

    @property
    def is_external(self) -> bool:
        return self is not HandleStorage.S3


class DenyMode(enum.Enum):
    """What the seeded user may not do with an entity (its whole subtree inherits it)."""

    NONE = ""
    #: no read: GET entity / bundle2 answer 403, no download, left out of children listings (as Synapse does)
    READ = "read"
    #: metadata readable, download refused (fileHandle/batch failureCode UNAUTHORIZED)
    DOWNLOAD = "download"


@dataclass(frozen=True)
class User:
    id: int
    user_name: str
    token: str

    @property
    def is_anonymous(self) -> bool:
        return self.id == ANONYMOUS_USER_ID


#: Synapse's anonymous principal (``AuthorizationConstants.BOOTSTRAP_PRINCIPAL.ANONYMOUS_USER``): a request without
#: an access token is answered for it. The emulator has no public data, so it may read nothing.
ANONYMOUS_USER_ID = 273950
ANONYMOUS = User(ANONYMOUS_USER_ID, "anonymous", "")
#: The principal that created every seeded file handle: not the caller, since Synapse always lets a handle's creator
#: download it (``AuthorizationManagerImpl.canDownloadFile``), which would void every seeded download denial.
DATA_OWNER_ID = 3300001

#: The user the request being answered is for: api.py sets it around each platform route (as Synapse's
#: AuthenticationFilter keeps the caller's id on a thread local). None outside a request (seeding, admin routes,
#: tests calling the store): the seeded user.
CALLER: contextvars.ContextVar[Optional[User]] = contextvars.ContextVar("emulator_caller", default=None)


def caller_is_anonymous() -> bool:
    caller = CALLER.get()
    return caller is not None and caller.is_anonymous


@dataclass(frozen=True)
class FileHandle:
    id: int
    md5: str
    size: int
    file_name: str
    content_type: str
    created_on: str
    created_by: int
    etag: str
    storage: HandleStorage = HandleStorage.S3
    #: EXTERNAL: the URL path on the external listener; FOREIGN: the URL itself; S3: None
    external_url: Optional[str] = None
    #: whether the handle records contentMd5 / contentSize (external handles may not)
    records_md5: bool = True
    records_size: bool = True


_HANDLE_COLUMNS = (
    "id, md5, size, file_name, content_type, created_on, created_by, etag, storage, external_url, "
    "records_md5, records_size"
)


def _handle_from_row(row: Sequence) -> FileHandle:
    return FileHandle(
        row[0],
        row[1],
        row[2],
        row[3],
        row[4],
        row[5],
        row[6],
        row[7],
        HandleStorage(row[8]),
        row[9],
        bool(row[10]),
        bool(row[11]),
    )


#: URL path prefix of the external listener's files: ``/ext/<handle id>/<quoted file name>``
EXTERNAL_PATH_PREFIX = "/ext/"


def external_path(handle_id: int, file_name: str) -> str:
    return f"{EXTERNAL_PATH_PREFIX}{handle_id}/{quote(file_name, safe='')}"


@dataclass(frozen=True)
class ItemRef:
    """One item of a dataset or dataset collection (Synapse's EntityRef)."""

    entity_id: int
    version_number: int


@dataclass(frozen=True)
class Version:
    entity_id: int
    version_number: int
    file_handle_id: int
    created_on: str
    modified_on: str
    etag: str


@dataclass(frozen=True)
class Entity:
    id: int
    parent_id: Optional[int]
    project_id: int
    name: str
    kind: EntityKind
    created_on: str
    modified_on: str
    created_by: int
    modified_by: int
    etag: str
    current_version: int
    link_target: Optional[int]
    link_target_version: Optional[int]
    deny: DenyMode
    #: current version's file handle and size (files only; filled by listing queries)
    file_handle_id: Optional[int] = None
    size: Optional[int] = None


_ENTITY_COLUMNS = (
    "e.id, e.parent_id, e.project_id, e.name, e.kind, e.created_on, e.modified_on, "
    "e.created_by, e.modified_by, e.etag, e.current_version, e.link_target, "
    "e.link_target_version, e.deny, v.file_handle_id, fh.size"
)
_ENTITY_FROM = (
    "entities e LEFT JOIN versions v ON v.entity_id = e.id AND v.version_number = e.current_version "
    "LEFT JOIN file_handles fh ON fh.id = v.file_handle_id"
)


def _entity_from_row(row: Sequence) -> Entity:
    return Entity(
        row[0],
        row[1],
        row[2],
        row[3],
        EntityKind(row[4]),
        row[5],
        row[6],
        row[7],
        row[8],
        row[9],
        row[10],
        row[11],
        row[12],
        DenyMode(row[13]),
        row[14],
        row[15],
    )


class SortBy(enum.Enum):
    NAME = "name"
    CREATED_ON = "created_on"
    MODIFIED_ON = "modified_on"


def now_iso() -> str:
    """Synapse's timestamp format: ISO 8601, milliseconds, UTC 'Z'."""
    now = datetime.datetime.now(datetime.timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def new_etag() -> str:
    return str(uuid.uuid4())


class NameConflict(ValueError):
    """An entity with the same name already exists in that parent (Synapse answers 409)."""


class Store:
    """Thread-safe access to the SQLite database and the blob directory of one data dir."""

    def __init__(self, data_dir: str) -> None:
        self.data_dir = data_dir
        self.blob_dir = os.path.join(data_dir, "blobs")
        os.makedirs(os.path.join(self.blob_dir, "tmp"), exist_ok=True)
        # One connection shared by all handler threads, serialized by a lock: statements are
        # tiny, and it keeps batch seeding inside one transaction trivially.
        self._db = sqlite3.connect(
            os.path.join(data_dir, "emulator.sqlite3"), check_same_thread=False, isolation_level=None
        )
        self._lock = threading.RLock()
        self._batch_depth = 0
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(SCHEMA)
            self._add_missing_columns()
            self._next_entity_id = self._next_id("entities", FIRST_ENTITY_ID)
            self._next_file_handle_id = self._next_id("file_handles", FIRST_FILE_HANDLE_ID)
            self.secret = self._meta_value("signing_secret", lambda: secrets.token_hex(32))
            self.user = self._ensure_user()
            self._give_seeded_handles_to_the_data_owner()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # --- transactions -------------------------------------------------------------------------
    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Group many writes into one transaction (seeding 100k files in seconds)."""
        with self._lock:
            outer = self._batch_depth == 0
            if outer:
                self._db.execute("BEGIN")
            self._batch_depth += 1
            try:
                yield
            except BaseException:
                self._batch_depth -= 1
                if outer:
                    self._db.execute("ROLLBACK")
                raise
            self._batch_depth -= 1
            if outer:
                self._db.execute("COMMIT")

    def _add_missing_columns(self) -> None:
        """A data dir written by an older emulator lacks the newer columns; their defaults describe its rows."""
        for table, column, ddl in ADDED_COLUMNS:
            present = {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}
            if column not in present:
                self._db.execute(f"ALTER TABLE {table} ADD COLUMN {ddl}")

    def _give_seeded_handles_to_the_data_owner(self) -> None:
        """A data dir written before handles had a data owner has the user's id on every handle: once, those a query
        did not make pass to the data owner (the caller, as creator, could download every one of them)."""
        if self._db.execute("SELECT 1 FROM meta WHERE key = 'handles_owner'").fetchone():
            return
        self._db.execute(
            "UPDATE file_handles SET created_by = ? WHERE created_by = ? AND id NOT IN"
            " (SELECT handle_id FROM result_handles)",
            (DATA_OWNER_ID, self.user.id),
        )
        self._db.execute("INSERT INTO meta (key, value) VALUES ('handles_owner', ?)", (str(DATA_OWNER_ID),))

    def _next_id(self, table: str, first: int) -> int:
        (highest,) = self._db.execute(f"SELECT max(id) FROM {table}").fetchone()
        return first if highest is None else highest + 1

    def _meta_value(self, key: str, make) -> str:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        if row:
            return row[0]
        value = make()
        self._db.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (key, value))
        return value

    def _ensure_user(self) -> User:
        row = self._db.execute("SELECT id, user_name, token FROM users ORDER BY id LIMIT 1").fetchone()
        if row is None:
            row = (FIRST_USER_ID, "emulator-user", "emu-" + secrets.token_urlsafe(32))
            self._db.execute("INSERT INTO users (id, user_name, token) VALUES (?, ?, ?)", row)
        return User(*row)

    def user_for_token(self, token: str) -> Optional[User]:
        with self._lock:
            row = self._db.execute("SELECT id, user_name, token FROM users WHERE token = ?", (token,)).fetchone()
        return User(*row) if row else None

    # --- blobs --------------------------------------------------------------------------------
    def blob_path(self, md5: str) -> str:
        return os.path.join(self.blob_dir, md5[:2], md5)

    def put_blob(self, chunks: Iterable[bytes]) -> Tuple[str, int]:
        """Store bytes given as chunks; returns (md5 hex, size). Identical content is kept once."""
        digest = hashlib.md5()
        size = 0
        fd, tmp_path = tempfile.mkstemp(dir=os.path.join(self.blob_dir, "tmp"))
        try:
            with os.fdopen(fd, "wb") as out:
                for chunk in chunks:
                    digest.update(chunk)
                    size += len(chunk)
                    out.write(chunk)
            md5 = digest.hexdigest()
            final = self.blob_path(md5)
            if os.path.exists(final):
                os.unlink(tmp_path)
            else:
                os.makedirs(os.path.dirname(final), exist_ok=True)
                os.replace(tmp_path, final)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp_path)
            raise
        return md5, size

    def put_bytes(self, data: bytes) -> Tuple[str, int]:
        md5 = hashlib.md5(data).hexdigest()
        final = self.blob_path(md5)
        if not os.path.exists(final):
            return self.put_blob([data])
        return md5, len(data)

    # --- writes -------------------------------------------------------------------------------
    def create_file_handle(
        self,
        md5: str,
        size: int,
        file_name: str,
        content_type: str = "application/octet-stream",
        *,
        storage: HandleStorage = HandleStorage.S3,
        foreign_url: Optional[str] = None,
        records_md5: bool = True,
        records_size: bool = True,
        created_by: int = DATA_OWNER_ID,
    ) -> int:
        """A new handle. EXTERNAL handles get their path on the external listener; FOREIGN ones need
        ``foreign_url`` (their ``md5``/``size`` only mean something where ``records_*`` says so). Created by the
        data owner unless ``created_by`` says otherwise (a handle the caller made: ``self.user.id``)."""
        if (storage is HandleStorage.FOREIGN) != (foreign_url is not None):
            raise ValueError("a foreign URL goes with, and only with, FOREIGN storage")
        with self._lock:
            handle_id = self._next_file_handle_id
            self._next_file_handle_id += 1
            url = external_path(handle_id, file_name) if storage is HandleStorage.EXTERNAL else foreign_url
            self._db.execute(
                "INSERT INTO file_handles (id, md5, size, file_name, content_type, created_on, created_by, etag,"
                " storage, external_url, records_md5, records_size) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    handle_id,
                    md5,
                    size,
                    file_name,
                    content_type,
                    now_iso(),
                    created_by,
                    new_etag(),
                    storage.value,
                    url,
                    int(records_md5),
                    int(records_size),
                ),
            )
            return handle_id

    def set_items(self, entity_id: int, items: Sequence[ItemRef]) -> None:
        """Replace the item list of a dataset or dataset collection."""
        with self._lock:
            entity = self._require(entity_id)
            if not entity.kind.is_item_list:
                raise ValueError(f"syn{entity_id} is a {entity.kind.value}; only datasets and collections have items")
            with self.batch():
                self._db.execute("DELETE FROM dataset_items WHERE entity_id = ?", (entity_id,))
                self._db.executemany(
                    "INSERT INTO dataset_items (entity_id, position, item_id, item_version) VALUES (?, ?, ?, ?)",
                    [(entity_id, position, item.entity_id, item.version_number) for position, item in enumerate(items)],
                )

    def create_entity(
        self,
        kind: EntityKind,
        name: str,
        parent_id: Optional[int],
        *,
        file_handle_id: Optional[int] = None,
        link_target: Optional[int] = None,
        link_target_version: Optional[int] = None,
        deny: DenyMode = DenyMode.NONE,
        annotations: Optional[Dict[str, Any]] = None,
        check_name: bool = True,
        names: NameRule = NameRule.SYNAPSE,
    ) -> int:
        """A new entity; its name as Synapse stores it (trimmed; :class:`InvalidName` for one Synapse refuses,
        unless ``names`` is :attr:`NameRule.UNCHECKED`: a hostile server's)."""
        name = entity_name(name, names)
        if kind is EntityKind.PROJECT:
            if parent_id is not None:
                raise ValueError("projects have no parent")
        elif parent_id is None:
            raise ValueError(f"a {kind.value} needs a parent")
        if kind is EntityKind.FILE and file_handle_id is None:
            raise ValueError("a file needs a file handle")
        if kind is EntityKind.LINK and link_target is None:
            raise ValueError("a link needs a target")
        with self._lock:
            if parent_id is not None:
                parent = self._db.execute("SELECT project_id, kind FROM entities WHERE id = ?", (parent_id,)).fetchone()
                if parent is None:
                    raise KeyError(f"no parent syn{parent_id}")
                if parent[1] not in (EntityKind.PROJECT.value, EntityKind.FOLDER.value):
                    raise ValueError(f"syn{parent_id} is a {parent[1]}, not a container")
                project_id = parent[0]
            if check_name:
                self._check_free_name(parent_id, name)
            entity_id = self._next_entity_id
            self._next_entity_id += 1
            if kind is EntityKind.PROJECT:
                project_id = entity_id
            stamp = now_iso()
            self._db.execute(
                "INSERT INTO entities (id, parent_id, project_id, name, kind, created_on, modified_on, created_by,"
                " modified_by, etag, current_version, link_target, link_target_version, deny)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)",
                (
                    entity_id,
                    parent_id,
                    project_id,
                    name,
                    kind.value,
                    stamp,
                    stamp,
                    self.user.id,
                    self.user.id,
                    new_etag(),
                    link_target,
                    link_target_version,
                    deny.value,
                ),
            )
            if kind is EntityKind.FILE:
                self._db.execute(
                    "INSERT INTO versions (entity_id, version_number, file_handle_id, created_on, modified_on, etag)"
                    " VALUES (?, 1, ?, ?, ?, ?)",
                    (entity_id, file_handle_id, stamp, stamp, new_etag()),
                )
            if annotations:
                self._db.execute(
                    "INSERT INTO annotations (entity_id, json) VALUES (?, ?)", (entity_id, json.dumps(annotations))
                )
            return entity_id

    def _check_free_name(self, parent_id: Optional[int], name: str) -> None:
        if parent_id is None:
            row = self._db.execute("SELECT id FROM entities WHERE parent_id IS NULL AND name = ?", (name,)).fetchone()
        else:
            row = self._db.execute(
                "SELECT id FROM entities WHERE parent_id = ? AND name = ?", (parent_id, name)
            ).fetchone()
        if row:
            raise NameConflict(f"an entity named {name!r} already exists in that parent (syn{row[0]})")

    def add_version(self, entity_id: int, file_handle_id: int) -> int:
        with self._lock:
            entity = self.entity(entity_id)
            if entity is None:
                raise KeyError(f"no entity syn{entity_id}")
            if entity.kind is not EntityKind.FILE:
                raise ValueError(f"syn{entity_id} is a {entity.kind.value}; only files have versions")
            version = entity.current_version + 1
            stamp = now_iso()
            with self.batch():
                self._db.execute(
                    "INSERT INTO versions (entity_id, version_number, file_handle_id, created_on, modified_on, etag)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    (entity_id, version, file_handle_id, stamp, stamp, new_etag()),
                )
                self._db.execute(
                    "UPDATE entities SET current_version = ?, modified_on = ?, etag = ? WHERE id = ?",
                    (version, stamp, new_etag(), entity_id),
                )
            return version

    def replace_version_handle(self, entity_id: int, version_number: int, file_handle_id: int) -> None:
        """Point a file version at another handle of the same bytes, in place (Synapse's
        ``PUT /entity/{id}/version/{v}/filehandle``, which refuses other MD5s): no new version."""
        with self._lock:
            version = self.version(entity_id, version_number)
            new, old = self.file_handle(file_handle_id), None
            if version is not None:
                old = self.file_handle(version.file_handle_id)
            if version is None or new is None or old is None:
                raise KeyError(f"no version {version_number} of syn{entity_id}, or no handle {file_handle_id}")
            if (new.md5, new.size) != (old.md5, old.size):
                raise ValueError("a version's handle can only be replaced by one of the same MD5 and size")
            with self.batch():
                self._db.execute(
                    "UPDATE versions SET file_handle_id = ?, etag = ? WHERE entity_id = ? AND version_number = ?",
                    (file_handle_id, new_etag(), entity_id, version_number),
                )

    def rename(self, entity_id: int, new_name: str, names: NameRule = NameRule.SYNAPSE) -> None:
        new_name = entity_name(new_name, names)
        with self._lock:
            entity = self._require(entity_id)
            self._check_free_name(entity.parent_id, new_name)
            self._touch(entity_id, "name = ?", (new_name,))

    def move(self, entity_id: int, new_parent_id: int) -> None:
        with self._lock:
            entity = self._require(entity_id)
            parent = self._require(new_parent_id)
            if entity.kind is EntityKind.PROJECT:
                raise ValueError("projects cannot be moved")
            if parent.kind not in (EntityKind.PROJECT, EntityKind.FOLDER):
                raise ValueError(f"syn{new_parent_id} is not a container")
            if entity_id in self.ancestor_ids(new_parent_id) or entity_id == new_parent_id:
                raise ValueError("cannot move an entity into its own subtree")
            self._check_free_name(new_parent_id, entity.name)
            with self.batch():
                self._touch(entity_id, "parent_id = ?", (new_parent_id,))
                if parent.project_id != entity.project_id:
                    ids = self.subtree_ids(entity_id)
                    self._db.executemany(
                        "UPDATE entities SET project_id = ? WHERE id = ?", [(parent.project_id, i) for i in ids]
                    )

    def delete(self, entity_id: int) -> None:
        """Remove an entity and its whole subtree (file handles and blobs stay, as in Synapse)."""
        with self._lock:
            self._require(entity_id)
            ids = [(i,) for i in self.subtree_ids(entity_id)]
            with self.batch():
                self._db.executemany("DELETE FROM versions WHERE entity_id = ?", ids)
                self._db.executemany("DELETE FROM annotations WHERE entity_id = ?", ids)
                self._db.executemany("DELETE FROM dataset_items WHERE entity_id = ?", ids)
                for table in ("table_schemas", "table_rows", "view_snapshots", "trash", "entity_fields"):
                    self._db.executemany(f"DELETE FROM {table} WHERE entity_id = ?", ids)
                self._db.executemany("DELETE FROM entities WHERE id = ?", ids)

    def move_to_trash(self, entity_id: int) -> None:
        """Synapse's ``TrashManagerImpl.moveToTrash``: the entity (its subtree with it) goes under the trash can
        folder, named by its id (names in the trash are unique), its old parent and name kept in the trash table."""
        with self._lock:
            entity = self._require(entity_id)
            with self.batch():
                self._db.execute(
                    "INSERT OR REPLACE INTO trash (entity_id, old_parent_id, old_name, deleted_on) VALUES (?, ?, ?, ?)",
                    (entity_id, entity.parent_id, entity.name, now_iso()),
                )
                self._touch(entity_id, "parent_id = ?, name = ?", (TRASH_FOLDER_ID, str(entity_id)))

    def touch(self, entity_id: int) -> None:
        """A new etag and modifiedOn for an entity whose fields changed."""
        with self._lock:
            self._require(entity_id)
            self._db.execute(
                "UPDATE entities SET modified_on = ?, etag = ? WHERE id = ?", (now_iso(), new_etag(), entity_id)
            )

    def in_trash(self, entity_id: int) -> bool:
        """The entity or one of its ancestors is in the trash can (no walk up while the trash is empty)."""
        with self._lock:
            if self._db.execute("SELECT 1 FROM trash LIMIT 1").fetchone() is None:
                return False
        return TRASH_FOLDER_ID in self.ancestor_ids(entity_id)

    def trash(self) -> List[Dict[str, Any]]:
        """What the trash can holds: ``{"id", "name", "parentId", "kind", "deletedOn"}`` (its old name and parent)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT t.entity_id, t.old_name, t.old_parent_id, e.kind, t.deleted_on FROM trash t"
                " JOIN entities e ON e.id = t.entity_id ORDER BY t.entity_id"
            ).fetchall()
        return [
            {
                "id": f"syn{entity_id}",
                "name": name,
                "parentId": None if parent is None else f"syn{parent}",
                "kind": kind,
                "deletedOn": stamp,
            }
            for entity_id, name, parent, kind, stamp in rows
        ]

    def project_entity_ids(self, project_id: int) -> List[int]:
        """Every entity of a project, the project first and the ones in the trash can too, by id."""
        with self._lock:
            rows = self._db.execute(
                "SELECT id FROM entities WHERE project_id = ? ORDER BY id", (project_id,)
            ).fetchall()
        return [row[0] for row in rows]

    def set_annotations(self, entity_id: int, annotations: Dict[str, List[Any]]) -> None:
        """Replace an entity's annotations (values as stored: str, int, float, bool); a new etag, as Synapse's
        ``NodeManagerImpl.updateUserAnnotations`` gives the entity."""
        with self._lock:
            self._require(entity_id)
            with self.batch():
                self._db.execute("DELETE FROM annotations WHERE entity_id = ?", (entity_id,))
                if annotations:
                    self._db.execute(
                        "INSERT INTO annotations (entity_id, json) VALUES (?, ?)", (entity_id, json.dumps(annotations))
                    )
                self._db.execute("UPDATE entities SET etag = ? WHERE id = ?", (new_etag(), entity_id))

    def set_entity_fields(self, entity_id: int, fields: Dict[str, Any]) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO entity_fields (entity_id, json) VALUES (?, ?)", (entity_id, json.dumps(fields))
            )

    def entity_fields(self, entity_id: int) -> Dict[str, Any]:
        """The fields POST /entity gave that have no column of their own (``description``, ``isSearchEnabled``)."""
        with self._lock:
            row = self._db.execute("SELECT json FROM entity_fields WHERE entity_id = ?", (entity_id,)).fetchone()
        return json.loads(row[0]) if row else {}

    def set_created_on(self, entity_id: int, stamp: str) -> None:
        """Date an entity's creation at ``stamp`` (Synapse's ISO 8601 format): tests age a leftover entity."""
        with self._lock:
            self._require(entity_id)
            self._db.execute("UPDATE entities SET created_on = ? WHERE id = ?", (stamp, entity_id))

    def container_ids_below(self, scope_ids: Sequence[int], limit: int) -> List[int]:
        """The projects and folders among ``scope_ids`` and every folder below them, at most ``limit`` of them
        (Synapse's ``NodeDAOImpl.getAllContainerIds``, which a view's scope is counted with)."""
        if not scope_ids:
            return []
        marks = ",".join("?" * len(scope_ids))
        with self._lock:
            rows = self._db.execute(
                f"WITH RECURSIVE scope(id) AS (SELECT id FROM entities WHERE id IN ({marks}) AND kind IN (?, ?)"
                " UNION SELECT e.id FROM entities e JOIN scope ON e.parent_id = scope.id WHERE e.kind = ?)"
                " SELECT id FROM scope LIMIT ?",
                list(scope_ids)
                + [EntityKind.PROJECT.value, EntityKind.FOLDER.value, EntityKind.FOLDER.value, max(0, limit)],
            ).fetchall()
        return [row[0] for row in rows]

    def set_replica(self, rows: Dict[int, Any]) -> None:
        """Replace the entity replication (entity id -> JSON-able record) a lagging view is built from."""
        with self._lock, self.batch():
            self._db.execute("DELETE FROM replica")
            self._db.executemany(
                "INSERT INTO replica (entity_id, json) VALUES (?, ?)",
                [(entity_id, json.dumps(record)) for entity_id, record in rows.items()],
            )

    def replica(self) -> Optional[Dict[int, Any]]:
        """The entity replication, or None when no refresh_views() took one."""
        with self._lock:
            taken = self._db.execute("SELECT value FROM meta WHERE key = 'replica_taken'").fetchone()
            if taken is None:
                return None
            rows = self._db.execute("SELECT entity_id, json FROM replica").fetchall()
        return {entity_id: json.loads(text) for entity_id, text in rows}

    def mark_replica_taken(self, stamp: str) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('replica_taken', ?)", (stamp,))

    def set_deny(self, entity_id: int, deny: DenyMode) -> None:
        with self._lock:
            self._require(entity_id)
            self._db.execute("UPDATE entities SET deny = ? WHERE id = ?", (deny.value, entity_id))

    def set_modified_on(self, entity_id: int, stamp: str) -> None:
        """Date an entity's last change (and its current version's) at ``stamp``, Synapse's ISO 8601 format: a seed's
        ``modifiedOn``, for tests of the size and age filters."""
        with self._lock:
            entity = self._require(entity_id)
            with self.batch():
                self._db.execute("UPDATE entities SET modified_on = ? WHERE id = ?", (stamp, entity_id))
                self._db.execute(
                    "UPDATE versions SET modified_on = ? WHERE entity_id = ? AND version_number = ?",
                    (stamp, entity_id, entity.current_version),
                )

    def _touch(self, entity_id: int, assignment: str, values: tuple) -> None:
        self._db.execute(
            f"UPDATE entities SET {assignment}, modified_on = ?, etag = ? WHERE id = ?",
            values + (now_iso(), new_etag(), entity_id),
        )

    def _require(self, entity_id: int) -> Entity:
        entity = self.entity(entity_id)
        if entity is None:
            raise KeyError(f"no entity syn{entity_id}")
        return entity

    # --- reads --------------------------------------------------------------------------------
    def entity(self, entity_id: int) -> Optional[Entity]:
        with self._lock:
            row = self._db.execute(
                f"SELECT {_ENTITY_COLUMNS} FROM {_ENTITY_FROM} WHERE e.id = ?", (entity_id,)
            ).fetchone()
        return _entity_from_row(row) if row else None

    def entities(self, entity_ids: Sequence[int]) -> Dict[int, Entity]:
        found: Dict[int, Entity] = {}
        with self._lock:
            for start in range(0, len(entity_ids), 500):
                chunk = list(entity_ids[start : start + 500])
                marks = ",".join("?" * len(chunk))
                for row in self._db.execute(
                    f"SELECT {_ENTITY_COLUMNS} FROM {_ENTITY_FROM} WHERE e.id IN ({marks})", chunk
                ):
                    found[row[0]] = _entity_from_row(row)
        return found

    def known_entity(self, entity_id: int) -> Entity:
        """An entity the caller knows is there (just created, or resolved from a path or reference)."""
        entity = self.entity(entity_id)
        if entity is None:
            raise KeyError(f"syn{entity_id} is not in the store")
        return entity

    def version(self, entity_id: int, version_number: int) -> Optional[Version]:
        with self._lock:
            row = self._db.execute(
                "SELECT entity_id, version_number, file_handle_id, created_on, modified_on, etag FROM versions"
                " WHERE entity_id = ? AND version_number = ?",
                (entity_id, version_number),
            ).fetchone()
        return Version(*row) if row else None

    def versions(self, entity_id: int) -> List[Version]:
        with self._lock:
            rows = self._db.execute(
                "SELECT entity_id, version_number, file_handle_id, created_on, modified_on, etag FROM versions"
                " WHERE entity_id = ? ORDER BY version_number DESC",
                (entity_id,),
            ).fetchall()
        return [Version(*row) for row in rows]

    def file_handle(self, handle_id: int) -> Optional[FileHandle]:
        with self._lock:
            row = self._db.execute(f"SELECT {_HANDLE_COLUMNS} FROM file_handles WHERE id = ?", (handle_id,)).fetchone()
        return _handle_from_row(row) if row else None

    def items(self, entity_id: int) -> List[ItemRef]:
        """The items of a dataset or dataset collection, in their order."""
        with self._lock:
            rows = self._db.execute(
                "SELECT item_id, item_version FROM dataset_items WHERE entity_id = ? ORDER BY position", (entity_id,)
            ).fetchall()
        return [ItemRef(*row) for row in rows]

    def annotations(self, entity_id: int) -> Dict[str, Any]:
        with self._lock:
            row = self._db.execute("SELECT json FROM annotations WHERE entity_id = ?", (entity_id,)).fetchone()
        return json.loads(row[0]) if row else {}

    def handle_is_used_by(self, handle_id: int, entity_id: int) -> bool:
        with self._lock:
            row = self._db.execute(
                "SELECT 1 FROM versions WHERE entity_id = ? AND file_handle_id = ? LIMIT 1", (entity_id, handle_id)
            ).fetchone()
        return row is not None

    def children(
        self,
        parent_id: Optional[int],
        kinds: Sequence[EntityKind],
        sort_by: SortBy,
        ascending: bool,
        limit: int,
        offset: int,
    ) -> List[Entity]:
        """A page of the children the caller may read (Synapse leaves the others out of the listing)."""
        where, args = self._children_filter(parent_id, kinds, readable_only=True)
        direction = "ASC" if ascending else "DESC"
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_ENTITY_COLUMNS} FROM {_ENTITY_FROM} WHERE {where}"
                f" ORDER BY e.{sort_by.value} {direction}, e.id {direction} LIMIT ? OFFSET ?",
                args + [limit, offset],
            ).fetchall()
        return [_entity_from_row(row) for row in rows]

    def count_children(
        self, parent_id: Optional[int], kinds: Sequence[EntityKind], *, readable_only: bool = False
    ) -> Tuple[int, int]:
        """(number of children, sum of current file sizes) for the given kinds; with ``readable_only`` only the
        children the caller may read, as Synapse's ``NodeDAOImpl.getChildrenStats`` excludes the non-visible ones.
        The sum counts recorded sizes only (Synapse sums the handles' CONTENT_SIZE, NULL when not recorded)."""
        where, args = self._children_filter(parent_id, kinds, readable_only=readable_only)
        with self._lock:
            count, total = self._db.execute(
                f"SELECT count(*), coalesce(sum(CASE WHEN fh.records_size THEN fh.size END), 0)"
                f" FROM {_ENTITY_FROM} WHERE {where}",
                args,
            ).fetchone()
        return count, total

    @staticmethod
    def _children_filter(
        parent_id: Optional[int], kinds: Sequence[EntityKind], *, readable_only: bool = False
    ) -> Tuple[str, list]:
        marks = ",".join("?" * len(kinds)) or "NULL"
        args: list = [k.value for k in kinds]
        if parent_id is None:
            where = f"e.parent_id IS NULL AND e.kind IN ({marks})"
        else:
            where, args = f"e.parent_id = ? AND e.kind IN ({marks})", [parent_id] + args
        if readable_only:
            # the parent is readable (checked by the route), so a child is unreadable only by a deny of its own;
            # the anonymous caller reads nothing (the emulator has no public data)
            where += " AND 0" if caller_is_anonymous() else f" AND e.deny != '{DenyMode.READ.value}'"
        return where, args

    def ancestor_ids(self, entity_id: int) -> List[int]:
        """Parent, grandparent, ... up to the project."""
        ids = []
        with self._lock:
            current: Optional[int] = entity_id
            while current is not None:
                row = self._db.execute("SELECT parent_id FROM entities WHERE id = ?", (current,)).fetchone()
                current = row[0] if row else None
                if current is not None:
                    ids.append(current)
        return ids

    def effective_deny(self, entity: Entity) -> DenyMode:
        """The strongest deny on the entity or any ancestor (permissions are inherited); READ for the anonymous
        caller."""
        if caller_is_anonymous():
            return DenyMode.READ
        modes = {entity.deny}
        with self._lock:
            for ancestor in self.ancestor_ids(entity.id):
                row = self._db.execute("SELECT deny FROM entities WHERE id = ?", (ancestor,)).fetchone()
                modes.add(DenyMode(row[0]))
        if DenyMode.READ in modes:
            return DenyMode.READ
        return DenyMode.DOWNLOAD if DenyMode.DOWNLOAD in modes else DenyMode.NONE

    def benefactor_id(self, entity: Entity) -> int:
        """Entities with their own deny carry their own ACL; everything else inherits the project's."""
        if entity.deny is not DenyMode.NONE:
            return entity.id
        for ancestor in self.ancestor_ids(entity.id):
            ancestor_entity = self.entity(ancestor)
            if ancestor_entity is not None and ancestor_entity.deny is not DenyMode.NONE:
                return ancestor
        return entity.project_id

    def subtree_ids(self, entity_id: int) -> List[int]:
        with self._lock:
            rows = self._db.execute(
                "WITH RECURSIVE sub(id) AS "
                "(SELECT ? UNION ALL SELECT e.id FROM entities e JOIN sub ON e.parent_id = sub.id)"
                " SELECT id FROM sub",
                (entity_id,),
            ).fetchall()
        return [row[0] for row in rows]

    def child_by_name(self, parent_id: Optional[int], name: str) -> Optional[int]:
        with self._lock:
            if parent_id is None:
                row = self._db.execute(
                    "SELECT id FROM entities WHERE parent_id IS NULL AND name = ?", (name,)
                ).fetchone()
            else:
                row = self._db.execute(
                    "SELECT id FROM entities WHERE parent_id = ? AND name = ?", (parent_id, name)
                ).fetchone()
        return row[0] if row else None

    def projects(self) -> Dict[str, int]:
        with self._lock:
            rows = self._db.execute("SELECT name, id FROM entities WHERE parent_id IS NULL ORDER BY id").fetchall()
        return dict(rows)

    # --- tables and views -----------------------------------------------------------------------
    def column_model_id(self, model: Dict[str, Any]) -> int:
        """The id of a ColumnModel (without ``id``); an identical model already stored keeps its id."""
        text = json.dumps(model, sort_keys=True)
        with self._lock:
            row = self._db.execute("SELECT id FROM column_models WHERE json = ?", (text,)).fetchone()
            if row:
                return row[0]
            (highest,) = self._db.execute("SELECT max(id) FROM column_models").fetchone()
            column_id = FIRST_COLUMN_ID if highest is None else highest + 1
            self._db.execute("INSERT INTO column_models (id, json) VALUES (?, ?)", (column_id, text))
            return column_id

    def column_model(self, column_id: int) -> Optional[Dict[str, Any]]:
        with self._lock:
            row = self._db.execute("SELECT json FROM column_models WHERE id = ?", (column_id,)).fetchone()
        return dict(json.loads(row[0]), id=str(column_id)) if row else None

    def set_table_schema(
        self,
        entity_id: int,
        column_ids: Sequence[int],
        scope_ids: Optional[Sequence[int]] = None,
        view_type_mask: Optional[int] = None,
    ) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO table_schemas (entity_id, column_ids, scope_ids, view_type_mask)"
                " VALUES (?, ?, ?, ?)",
                (
                    entity_id,
                    json.dumps(list(column_ids)),
                    None if scope_ids is None else json.dumps(list(scope_ids)),
                    view_type_mask,
                ),
            )

    def table_schema(self, entity_id: int) -> Tuple[List[int], Optional[List[int]], Optional[int]]:
        """(column ids, scope ids or None, viewTypeMask or None); no columns for an entity without a schema."""
        with self._lock:
            row = self._db.execute(
                "SELECT column_ids, scope_ids, view_type_mask FROM table_schemas WHERE entity_id = ?", (entity_id,)
            ).fetchone()
        if row is None:
            return [], None, None
        return json.loads(row[0]), (None if row[1] is None else json.loads(row[1])), row[2]

    def set_table_rows(self, entity_id: int, rows: Sequence[Sequence[object]]) -> None:
        """Replace a table's rows; row ids count from 1, every row at version 1 (one change set)."""
        with self._lock, self.batch():
            self._db.execute("DELETE FROM table_rows WHERE entity_id = ?", (entity_id,))
            self._db.executemany(
                "INSERT INTO table_rows (entity_id, row_id, version, json) VALUES (?, ?, 1, ?)",
                [(entity_id, index + 1, json.dumps(list(cells))) for index, cells in enumerate(rows)],
            )

    def table_rows(self, entity_id: int) -> List[Tuple[int, int, List[object]]]:
        """(row id, row version, cells) of a table, by row id."""
        with self._lock:
            rows = self._db.execute(
                "SELECT row_id, version, json FROM table_rows WHERE entity_id = ? ORDER BY row_id", (entity_id,)
            ).fetchall()
        return [(row_id, version, json.loads(text)) for row_id, version, text in rows]

    def set_view_snapshot(self, entity_id: int, rows: object) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO view_snapshots (entity_id, json) VALUES (?, ?)", (entity_id, json.dumps(rows))
            )

    def view_snapshot(self, entity_id: int) -> Optional[Dict[str, Any]]:
        with self._lock:
            row = self._db.execute("SELECT json FROM view_snapshots WHERE entity_id = ?", (entity_id,)).fetchone()
        return json.loads(row[0]) if row else None

    def queryable_ids(self, kind: EntityKind) -> List[int]:
        with self._lock:
            rows = self._db.execute("SELECT id FROM entities WHERE kind = ? ORDER BY id", (kind.value,)).fetchall()
        return [row[0] for row in rows]

    def add_result_handle(self, handle_id: int, entity_id: int) -> None:
        with self._lock:
            self._db.execute("INSERT INTO result_handles (handle_id, entity_id) VALUES (?, ?)", (handle_id, entity_id))

    def result_handle_table(self, handle_id: int) -> Optional[int]:
        """The table or view whose query made this handle (a CSV download), else None."""
        with self._lock:
            row = self._db.execute("SELECT entity_id FROM result_handles WHERE handle_id = ?", (handle_id,)).fetchone()
        return row[0] if row else None

    def files_below(self, container_ids: Sequence[int]) -> List[Entity]:
        """Every file whose parent chain reaches one of the containers (a file view's scope), by id."""
        if not container_ids:
            return []
        marks = ",".join("?" * len(container_ids))
        with self._lock:
            rows = self._db.execute(
                f"WITH RECURSIVE scope(id) AS (SELECT id FROM entities WHERE id IN ({marks}) AND kind IN (?, ?)"
                " UNION SELECT e.id FROM entities e JOIN scope ON e.parent_id = scope.id WHERE e.kind = ?)"
                f" SELECT {_ENTITY_COLUMNS} FROM {_ENTITY_FROM} WHERE e.kind = ? AND e.parent_id IN"
                " (SELECT id FROM scope) ORDER BY e.id",
                list(container_ids)
                + [EntityKind.PROJECT.value, EntityKind.FOLDER.value, EntityKind.FOLDER.value, EntityKind.FILE.value],
            ).fetchall()
        return [_entity_from_row(row) for row in rows]
