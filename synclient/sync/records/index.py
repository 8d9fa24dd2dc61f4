"""The local index: what synclient wrote into a target directory, so a re-sync costs one listing per folder page.

It lives in ``<target>/.synclient/index.sqlite`` (SQLite, WAL). One row per remote file path: the entity id,
version, file handle id, MD5 and size of what was fetched, where the bytes are locally (usually the same relative
path; another one after ``keep.both``), and the local file's size and ``mtime_ns`` right after synclient wrote it.
A listing header with the same id and version plus an unchanged local stat means "up to date" — no API call, no
hashing. Rows are written by one writer thread (pool tasks only enqueue, never wait on disk or a lock held across
I/O) and committed as soon as they arrive, so an interrupted sync keeps what it finished. Rows are read on demand,
one query per listing page (the rows of that page's files) on one shared read connection: the index is never held
in memory, so a re-sync of a million-file tree needs no more memory than one of a thousand files.

``<target>/.synclient/lock`` is held for the whole sync (:func:`synclient.portable.try_lock_file`: ``flock``, or
``filelock``): a second sync into the same folder fails fast.
"""

from __future__ import annotations

import json
import operator
import os
import queue
import shutil
import sqlite3
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Literal, Optional, Set, Tuple, Union, overload

from synclient import portable
from synclient.errors import LocalIOError, SyncLockedError

META_DIR = ".synclient"
INDEX_FILE = "index.sqlite"
LOCK_FILE = "lock"
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    rel_path      TEXT PRIMARY KEY,   -- remote path relative to the sync root, '/'-separated
    local_path    TEXT NOT NULL,      -- where the bytes are, relative to the target
    root_id       TEXT NOT NULL,      -- the entity the sync started from (deletions stay within it)
    entity_id     TEXT NOT NULL,
    version       INTEGER,
    file_handle_id TEXT NOT NULL,
    md5           TEXT,
    size          INTEGER NOT NULL,
    content_type  TEXT,
    parent_id     TEXT,
    annotations   TEXT,               -- JSON of the entity's annotations when fetched (for the manifest)
    local_size    INTEGER NOT NULL,
    mtime_ns      INTEGER NOT NULL,
    synced_at     REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS manifests (folder TEXT PRIMARY KEY);  -- where the last run wrote manifests (relative)
-- each manifest file the last run wrote (relative): a manifest.csv, a common name, is only removed if listed here
CREATE TABLE IF NOT EXISTS manifest_files (rel_path TEXT PRIMARY KEY);
-- keep.both copies (their bytes are not at their remote path): found by where they are
CREATE INDEX IF NOT EXISTS files_copies ON files (local_path) WHERE local_path != rel_path;
"""


@dataclass(frozen=True)
class IndexRow:
    """One indexed file, as read for one lookup. Without annotations (those stay in SQLite until a manifest is
    written)."""

    __slots__ = (
        "rel_path",
        "local_path",
        "root_id",
        "entity_id",
        "version",
        "file_handle_id",
        "md5",
        "size",
        "content_type",
        "parent_id",
        "local_size",
        "mtime_ns",
    )
    rel_path: str
    local_path: str
    root_id: str
    entity_id: str
    version: Optional[int]
    file_handle_id: str
    md5: Optional[str]
    size: int
    content_type: Optional[str]
    parent_id: Optional[str]
    local_size: int
    mtime_ns: int

    def local_stat_matches(self, target_root: Path) -> bool:
        """True when the local copy still has the size and mtime synclient left it with."""
        try:
            info = os.lstat(target_root / self.local_path)
        except OSError:
            return False
        return info.st_size == self.local_size and info.st_mtime_ns == self.mtime_ns


_ROW_COLUMNS = IndexRow.__slots__
_COLUMNS = _ROW_COLUMNS + ("annotations", "synced_at")
_SELECT = f"SELECT {', '.join(_ROW_COLUMNS)} FROM files"
_MAX_KEYS_PER_QUERY = 500  # well below SQLite's bound on query parameters (999 in older builds)


@dataclass
class LocalNamesHeld:
    """What :meth:`LocalIndex.local_names_in` found: remote name -> (entity id, version, local name) of files, remote
    name -> local name of folders."""

    files: Dict[str, Tuple[str, Optional[int], str]] = field(default_factory=dict)
    folders: Dict[str, str] = field(default_factory=dict)


def _below(folder: str) -> Tuple[str, str]:
    """The bounds [low, high) of every '/'-separated path below ``folder``: those that start with ``folder/``."""
    low = folder.rstrip("/") + "/"
    return low, low[:-1] + chr(ord("/") + 1)


def _row_from_db(values: Tuple[Any, ...]) -> IndexRow:  # a row of _ROW_COLUMNS, as sqlite3 gives it
    rel_path, local_path, root_id, parent_id, content_type = (values[0], values[1], values[2], values[9], values[8])
    return IndexRow(
        rel_path,
        rel_path if local_path == rel_path else local_path,  # one string when equal
        sys.intern(root_id),
        values[3],
        values[4],
        values[5],
        values[6],
        values[7],
        sys.intern(content_type) if content_type else None,
        sys.intern(parent_id) if parent_id else None,
        values[10],
        values[11],
    )


class LocalIndex:
    """Read side (lookups on demand, one shared read connection) and write side (a writer thread) of the index."""

    def __init__(self, target_root: Path, *, read_only: bool = False) -> None:
        self.target_root = target_root
        self.meta_dir = target_root / META_DIR
        self.read_only = read_only
        self._read_uri = ""
        self._reader: Optional[sqlite3.Connection] = None  # None: no index to read (none yet)
        self._reader_lock = threading.Lock()  # held for one query, never across network I/O
        self._meta: Dict[str, str] = {}  # read-only mode: the meta table, read at open (there is no connection)
        self._unlock: Optional[Callable[[], None]] = None  # releases the target lock while it is held
        self._db: Optional[sqlite3.Connection] = None
        self._queue: queue.Queue[Optional[tuple]] = queue.Queue()
        self._writer: Optional[threading.Thread] = None
        self._writer_error: Optional[BaseException] = None
        self._snapshot_dir: Optional[str] = None  # read-only mode: a private copy of the index with its WAL

    # -- lifecycle ------------------------------------------------------------------------------------------------

    def open(self) -> LocalIndex:
        path = self.meta_dir / INDEX_FILE
        if self.read_only:
            if path.is_file():
                self._open_snapshot(path)
                self._load_meta()
            return self
        try:
            self.meta_dir.mkdir(exist_ok=True)
        except OSError as exc:
            raise LocalIOError.from_exception(f"cannot create {self.meta_dir}", exc) from None
        self._take_lock()
        try:
            self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            self._db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        except sqlite3.Error as exc:
            self._release_lock()
            raise LocalIOError.from_exception(f"cannot open the index {path}", exc) from None
        self._open_reader(path.as_uri() + "?mode=ro")
        self._writer = threading.Thread(target=self._write_loop, name="synclient-index", daemon=True)
        self._writer.start()
        return self

    def _open_snapshot(self, path: Path) -> None:
        """Read-only mode (a dry run): read a private copy of the index and its write-ahead log, so the dry run
        sees exactly what the next real run will see (rows a killed run committed only to the WAL included) while
        writing nothing in the target, not even SQLite's side files."""
        self._snapshot_dir = tempfile.mkdtemp(prefix="synclient-dry-run-")
        copy = Path(self._snapshot_dir) / INDEX_FILE
        try:
            shutil.copyfile(path, copy)
            wal = path.with_name(path.name + "-wal")
            if wal.is_file():
                shutil.copyfile(wal, copy.with_name(copy.name + "-wal"))
            db = sqlite3.connect(str(copy))  # replays the WAL into the copy; a table never committed is created
            try:  # empty, as the real run's open would
                db.executescript(_SCHEMA)
            finally:
                db.close()
        except (OSError, sqlite3.Error) as exc:  # a dry run that cannot see the index would plan a different run
            raise LocalIOError.from_exception(f"cannot read the index {path} for a dry run", exc) from None
        self._open_reader(copy.as_uri())  # a private copy: no need for read-only mode

    def close(self) -> None:
        if self._writer is not None:
            self._queue.put(None)
            self._writer.join()
            self._writer = None
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self._db is not None:
            self._db.close()
            self._db = None
        self._release_lock()
        if self._snapshot_dir is not None:
            shutil.rmtree(self._snapshot_dir, ignore_errors=True)
            self._snapshot_dir = None
        if self._writer_error is not None:
            error, self._writer_error = self._writer_error, None
            raise LocalIOError.from_exception(f"cannot write the index in {self.meta_dir}", error)

    def __enter__(self) -> LocalIndex:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _take_lock(self) -> None:
        self._unlock = portable.try_lock_file(self.meta_dir / LOCK_FILE)
        if self._unlock is None:
            raise SyncLockedError(
                f"another sync is running into {self.target_root} (lock "
                f"{self.meta_dir / LOCK_FILE}); wait for it to finish"
            )

    def _release_lock(self) -> None:
        unlock, self._unlock = self._unlock, None
        if unlock is not None:
            unlock()

    def _open_reader(self, uri: str) -> None:
        self._read_uri = uri
        try:
            self._reader = sqlite3.connect(uri, uri=True, check_same_thread=False)  # queries take _reader_lock
        except sqlite3.Error:
            self._reader = None  # an unreadable index only costs hashing; it is rebuilt as files are written

    def _load_meta(self) -> None:
        """Read-only mode: the meta table (schema version, measured throughput), kept for :meth:`meta`."""
        if self._reader is None:
            return
        try:
            with self._reader_lock:
                self._meta = {key: value for key, value in self._reader.execute("SELECT key, value FROM meta")}
        except sqlite3.Error:
            self._meta = {}

    # -- reads -----------------------------------------------------------------------------------------------

    @overload
    def get_many(self, rel_paths: List[str]) -> Dict[str, IndexRow]: ...

    @overload
    def get_many(
        self, rel_paths: List[str], *, with_annotations: Literal[True]
    ) -> Dict[str, Tuple[IndexRow, Optional[str]]]: ...

    def get_many(
        self, rel_paths: List[str], *, with_annotations: bool = False
    ) -> Union[Dict[str, IndexRow], Dict[str, Tuple[IndexRow, Optional[str]]]]:
        """The committed rows of these paths (one query per listing page, not one per file); an unreadable index
        reads as no rows, which only costs hashing. ``with_annotations``: each row with its annotations' JSON text
        (left undecoded: most results never have them read)."""
        found: Dict[str, IndexRow] = {}
        annotated: Dict[str, Tuple[IndexRow, Optional[str]]] = {}
        if self._reader is None or not rel_paths:
            return found
        select = f"SELECT {', '.join(_ROW_COLUMNS)}, annotations FROM files" if with_annotations else _SELECT
        try:
            with self._reader_lock:
                for start in range(0, len(rel_paths), _MAX_KEYS_PER_QUERY):
                    keys = rel_paths[start : start + _MAX_KEYS_PER_QUERY]
                    query = f"{select} WHERE rel_path IN ({', '.join('?' * len(keys))})"
                    for values in self._reader.execute(query, keys):
                        row = _row_from_db(values)
                        if with_annotations:
                            annotated[row.rel_path] = (row, values[-1])
                        else:
                            found[row.rel_path] = row
        except sqlite3.Error:
            return {}
        return annotated if with_annotations else found

    def iter_rows(self, root_id: str) -> Iterator[IndexRow]:
        """Committed rows of one sync root, streamed (a read snapshot: rows forgotten meanwhile may still appear)."""
        for values in self._stream(f"{_SELECT} WHERE root_id = ?", (root_id,)):
            yield _row_from_db(values)

    def _stream(self, query: str, params: Tuple[object, ...]) -> Iterator[tuple]:
        """The rows of one query over the whole index, streamed from disk (never a list of them) on a read
        connection of their own: the shared reader serves lookups meanwhile, however long the caller takes between
        rows. The same database the lookups read (the private copy in read-only mode); nothing when there is no
        index to read. An index that fails midway raises :class:`LocalIOError` (a scan that stopped early would
        look like a complete one)."""
        if self._reader is None:
            return
        db: Optional[sqlite3.Connection] = None
        try:
            db = sqlite3.connect(self._read_uri, uri=True)
            yield from db.execute(query, params)
        except sqlite3.Error as exc:
            raise LocalIOError.from_exception(f"cannot read the index in {self.meta_dir}", exc) from None
        finally:
            if db is not None:
                db.close()

    def has_copies(self) -> bool:
        """Whether any row is a keep.both copy (so lookups by local path can find something)."""
        if self._reader is None:
            return False
        try:
            with self._reader_lock:
                return (
                    self._reader.execute("SELECT 1 FROM files WHERE local_path != rel_path LIMIT 1").fetchone()
                    is not None
                )
        except sqlite3.Error:
            return False

    def copy_at(self, local_path: str) -> Optional[IndexRow]:
        """The row of a ``keep.both`` copy that lies at ``local_path`` (another entity's bytes), if any."""
        found = self._rows("local_path = ? AND local_path != rel_path", (local_path,))
        return found[0] if found else None

    def local_paths_named(self, name: str, *, same: Callable[[str, str], bool] = operator.eq) -> List[str]:
        """Local paths (any root) of indexed files called ``name``, in any folder (one scan of the index); ``same``:
        whether two names are one (the filesystem's comparison; the scan finds names differing in ASCII case)."""
        if self._reader is None:
            return []
        pattern = "%/" + name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        try:
            with self._reader_lock:
                found = [
                    value
                    for (value,) in self._reader.execute(
                        "SELECT local_path FROM files WHERE local_path = ? OR local_path LIKE ? ESCAPE '\\'",
                        (name, pattern),
                    )
                ]
        except sqlite3.Error:
            return []
        return [path for path in found if same(path.rpartition("/")[2], name)]  # LIKE ignores ASCII case

    def rows_under(self, local_dir: str) -> List[IndexRow]:
        """Committed rows (any root) whose local file is below the local folder ``local_dir``."""
        return self._rows("local_path >= ? AND local_path < ?", _below(local_dir))

    def local_names_in(self, rel_dir: str, local_dir: str) -> LocalNamesHeld:
        """The local names that the entries of the remote folder ``rel_dir`` (local folder ``local_dir``; '' for the
        target itself) have in the index, where they are not their remote names: a file's (by its remote name: its
        entity id, version and local name) and a folder's (the local folder where most of its files are). One
        grouped query; rows whose local path is their remote path are not read."""
        held = LocalNamesHeld()
        if self._reader is None:
            return held
        rel_prefix, local_prefix = (f"{rel_dir}/" if rel_dir else ""), (f"{local_dir}/" if local_dir else "")
        where = ["local_path != rel_path"]
        params: List[object] = [len(rel_prefix) + 1, len(local_prefix) + 1]
        for column, folder in (("rel_path", rel_dir), ("local_path", local_dir)):
            if folder:
                where.append(f"{column} >= ? AND {column} < ?")
                params.extend(_below(folder))
        query = (
            "WITH r AS (SELECT substr(rel_path, ?) AS rr, substr(local_path, ?) AS lr, entity_id, version FROM files "
            f"WHERE {' AND '.join(where)}) "
            "SELECT CASE WHEN instr(rr, '/') THEN substr(rr, 1, instr(rr, '/') - 1) ELSE rr END, "
            "CASE WHEN instr(lr, '/') THEN substr(lr, 1, instr(lr, '/') - 1) ELSE lr END, "
            "instr(rr, '/') = 0 AND instr(lr, '/') = 0, "
            "CASE WHEN instr(rr, '/') = 0 THEN entity_id END, CASE WHEN instr(rr, '/') = 0 THEN version END, "
            "count(*) FROM r WHERE (instr(rr, '/') = 0) = (instr(lr, '/') = 0) GROUP BY 1, 2, 3, 4, 5"
        )
        try:
            with self._reader_lock:
                found = self._reader.execute(query, params).fetchall()
        except sqlite3.Error:
            return held
        for remote, local, is_file, entity_id, version, _count in sorted(found, key=lambda f: (-f[5], f[1])):
            if is_file:
                held.files[remote] = (entity_id, version, local)
            else:
                held.folders.setdefault(remote, local)  # the local folder where most of its files are
        return held

    def rows_in(self, folder: str) -> List[IndexRow]:
        """Committed rows (any root) whose remote path or local file is directly in the '/'-separated ``folder``
        ('' for the target itself): the names a list of ids must not take from another file."""
        if folder:
            rows = self._rows(
                "(rel_path >= ? AND rel_path < ?) OR (local_path >= ? AND local_path < ?)", _below(folder) * 2
            )
        else:
            rows = self._rows("instr(rel_path, '/') = 0 OR instr(local_path, '/') = 0", ())
        depth = folder.count("/") + 1 if folder else 0
        return [row for row in rows if row.rel_path.count("/") == depth or row.local_path.count("/") == depth]

    def _rows(self, where: str, params: Tuple[object, ...]) -> List[IndexRow]:
        """Committed rows matching ``where``; none when the index cannot be read (no file yet, a broken one)."""
        if self._reader is None:
            return []
        try:
            with self._reader_lock:
                return [_row_from_db(values) for values in self._reader.execute(f"{_SELECT} WHERE {where}", params)]
        except sqlite3.Error:
            return []

    def meta(self, key: str) -> Optional[str]:
        if self.read_only:
            return self._meta.get(key)
        if self._db is None:
            return None
        found = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return found[0] if found else None

    # -- writes (queued; the writer thread commits) ----------------------------------------------------------

    def record(self, row: IndexRow, *, annotations: Optional[Dict[str, object]] = None) -> None:
        """Queue a row for the writer. It is not kept in memory: nothing in this run reads a path twice."""
        if not self.read_only:
            self._queue.put(("upsert", (row, annotations or {})))

    def forget(self, rel_path: str, *, only_at: Optional[str] = None) -> None:
        """Drop a row; with ``only_at``, only while it still says its bytes are at that local path (a copy whose
        path another file took, while its own file may be writing a new row for itself)."""
        if not self.read_only:
            self._queue.put(("delete", (rel_path, only_at)))

    def manifest_folders(self) -> List[str]:
        """Folders (relative to the target, "" for the target) where the last run wrote a manifest."""
        if self._reader is None:
            return []
        try:
            with self._reader_lock:
                return [folder for (folder,) in self._reader.execute("SELECT folder FROM manifests")]
        except sqlite3.Error:
            return []

    def set_manifest_folders(self, folders: List[str]) -> None:
        if not self.read_only:
            self._queue.put(("manifests", list(folders)))

    def manifest_files(self) -> Set[str]:
        """The manifest files (relative to the target) the last run wrote; empty for an index of a synclient that
        did not record them (it wrote only TSVs, which are known by their name)."""
        if self._reader is None:
            return set()
        try:
            with self._reader_lock:
                return {path for (path,) in self._reader.execute("SELECT rel_path FROM manifest_files")}
        except sqlite3.Error:
            return set()

    def set_manifest_files(self, rel_paths: List[str]) -> None:
        if not self.read_only:
            self._queue.put(("manifest_files", list(rel_paths)))

    def set_owner(self, rel_path: str, root_id: str) -> None:
        """Hand a row to another sync root (a single-file get's row, once a sync of its tree sees the file)."""
        if not self.read_only:
            self._queue.put(("owner", (root_id, rel_path)))

    def flush(self) -> None:
        """Wait until every queued write is committed."""
        if self._writer is not None:
            self._queue.join()

    def iter_sorted(self, root_id: str) -> Iterator[Tuple[IndexRow, Dict[str, object]]]:
        """Committed rows of one sync root with their annotations, ordered by local path (streamed from disk)."""
        query = f"SELECT {', '.join(_ROW_COLUMNS)}, annotations FROM files WHERE root_id = ? ORDER BY local_path"
        for values in self._stream(query, (root_id,)):
            yield _row_from_db(values), json.loads(values[-1] or "{}")

    def set_meta(self, key: str, value: str) -> None:
        if not self.read_only:
            self._queue.put(("meta", (key, value)))

    def _write_loop(self) -> None:
        assert self._db is not None
        while True:
            item = self._queue.get()
            batch = [item]
            while item is not None:  # drain what is already waiting: one transaction for a burst
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                batch.append(item)
            try:
                self._apply([b for b in batch if b is not None])
            except (sqlite3.Error, OSError) as exc:
                self._writer_error = exc
            finally:
                for _ in batch:
                    self._queue.task_done()
            if batch[-1] is None:
                return

    def _apply(self, batch: List[tuple]) -> None:
        if not batch or self._writer_error is not None:
            return
        db = self._db
        assert db is not None  # the writer thread runs between open() and close()
        db.execute("BEGIN")
        for kind, payload in batch:
            if kind == "upsert":
                row, annotations = payload
                db.execute(
                    f"INSERT OR REPLACE INTO files ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})",
                    tuple(getattr(row, c) for c in _ROW_COLUMNS) + (json.dumps(annotations), time.time()),
                )
            elif kind == "delete":
                rel_path, only_at = payload
                if only_at is None:
                    db.execute("DELETE FROM files WHERE rel_path = ?", (rel_path,))
                else:
                    db.execute("DELETE FROM files WHERE rel_path = ? AND local_path = ?", (rel_path, only_at))
            elif kind == "manifests":
                db.execute("DELETE FROM manifests")
                db.executemany("INSERT OR IGNORE INTO manifests VALUES (?)", [(f,) for f in payload])
            elif kind == "manifest_files":
                db.execute("DELETE FROM manifest_files")
                db.executemany("INSERT OR IGNORE INTO manifest_files VALUES (?)", [(f,) for f in payload])
            elif kind == "owner":
                db.execute("UPDATE files SET root_id = ? WHERE rel_path = ?", payload)
            elif kind == "meta":
                db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", payload)
        db.execute("COMMIT")
