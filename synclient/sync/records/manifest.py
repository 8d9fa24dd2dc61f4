"""The manifests, written the way synapseclient 4.14's ``syncFromSynapse`` writes them, so existing tooling reads
ours: ``SYNAPSE_METADATA_MANIFEST.tsv`` (synapseutils) and ``manifest.csv`` (the models API's
``sync_from_synapse``, the format of the Synapse UI download cart and of ``sync_to_synapse``).

- TSV columns: ``path, parent, name, id, synapseStore, contentType, used, executed, activityName,
  activityDescription``, then one column per annotation key (sorted). Tab-separated, unquoted.
- CSV columns: the same with ``parentId`` and ``ID`` for ``parent`` and ``id``. Comma-separated, quoted where a
  cell needs it (``csv.QUOTE_MINIMAL``). Unlike the TSV, it is written in every folder the sync covers, one with no
  file below it included (a header line only), as synapseclient's ``generate_manifest_csv`` does.

Both end lines with CRLF (csv's default, as synapseclient writes them) and write a multi-valued annotation
``[a,b]`` (a value with a comma quoted inside the brackets). synapseclient leaves two orders to chance: its
annotation columns come in set order and its rows in the order its downloads finished. Ours are sorted (columns by
key, rows by path), so two runs over one tree write the same bytes.

``manifest="all"`` writes them in every folder listing every file at or below it (synapseclient's behaviour),
``"root"`` only in the target, ``"suppress"`` none, for both formats alike (synapseclient 4.14's
``syncFromSynapse`` applies its ``manifest`` argument to the TSV only and writes the CSV in every folder whatever
it says; its models API's ``sync_from_synapse(manifest=...)`` places the CSV as we do). A single-file sync writes
none (as synapseclient). A folder where the remote has an entity of a manifest's name gets no manifest of that name
(the remote entity wins its path). A manifest that cannot be written is one :class:`ManifestFailure` for its file;
the others are still written. Paths are written as the bytes they are on disk (a target path that is not UTF-8 is
written byte for byte); a lone surrogate the server's JSON carried (in an annotation) as U+FFFD.
"""

from __future__ import annotations

import codecs
import csv
import datetime
import errno
import filecmp
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import (
    AbstractSet,
    Any,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Literal,
    Mapping,
    Optional,
    Set,
    Tuple,
    Union,
)

from synclient.choices import Choice
from synclient.portable import ReplacingWriter
from synclient.results import annotation_values

MANIFEST_FILENAME = "SYNAPSE_METADATA_MANIFEST.tsv"
CSV_MANIFEST_FILENAME = "manifest.csv"
MANIFEST_FILENAMES = (MANIFEST_FILENAME, CSV_MANIFEST_FILENAME)
BASE_COLUMNS = [
    "path",
    "parent",
    "name",
    "id",
    "synapseStore",
    "contentType",
    "used",
    "executed",
    "activityName",
    "activityDescription",
]
CSV_BASE_COLUMNS = [
    "path",
    "parentId",
    "name",
    "ID",
    "synapseStore",
    "contentType",
    "used",
    "executed",
    "activityName",
    "activityDescription",
]


class ManifestMode(Choice):
    ALL = "all"
    ROOT = "root"
    SUPPRESS = "suppress"


class ManifestFormat(Choice):
    """A manifest file a sync can write (synapseclient 4.14's ``syncFromSynapse`` writes both)."""

    TSV = "tsv"  # SYNAPSE_METADATA_MANIFEST.tsv
    CSV = "csv"  # manifest.csv

    @property
    def filename(self) -> str:
        return _LAYOUTS[self].filename

    @classmethod
    def parse_set(
        cls, value: Union[str, ManifestFormat, Iterable[Union[str, ManifestFormat]]], *, option: str
    ) -> frozenset[ManifestFormat]:
        """One format (member or value) or several, as a frozenset."""
        values = [value] if isinstance(value, (str, ManifestFormat)) else list(value)
        return frozenset(cls.parse(item, option=option) for item in values)

    @classmethod
    def in_order(cls, formats: AbstractSet[ManifestFormat]) -> List[ManifestFormat]:
        """``formats`` in declaration order (a set's order would make runs differ)."""
        return [member for member in cls if member in formats]


@dataclass(frozen=True)
class _Layout:
    """How one format's file looks."""

    filename: str
    base_columns: List[str]
    parent_column: str
    id_column: str
    delimiter: str
    quoting: Literal[0, 1, 2, 3]  # csv.QUOTE_*: the values csv's writers take
    writes_header_only: bool  # in a folder with no file below it (synapseclient's CSV does, its TSV does not)
    name_is_ours: bool  # no one else names a file so: one there that no remote entity put there is a stale manifest


_LAYOUTS = {
    ManifestFormat.TSV: _Layout(
        filename=MANIFEST_FILENAME,
        base_columns=BASE_COLUMNS,
        parent_column="parent",
        id_column="id",
        delimiter="\t",
        quoting=csv.QUOTE_NONE,
        writes_header_only=False,
        name_is_ours=True,
    ),
    # "manifest.csv" is a common name: a user's file of that name is removed as stale only where synclient
    # recorded writing one
    ManifestFormat.CSV: _Layout(
        filename=CSV_MANIFEST_FILENAME,
        base_columns=CSV_BASE_COLUMNS,
        parent_column="parentId",
        id_column="ID",
        delimiter=",",
        quoting=csv.QUOTE_MINIMAL,
        writes_header_only=True,
        name_is_ours=False,
    ),
}


def manifest_name_is_ours(filename: str) -> bool:
    """Whether a file of this name that no remote entity put there is synclient's (stale) manifest by its name."""
    return any(layout.name_is_ours for layout in _LAYOUTS.values() if layout.filename == filename)


@dataclass(frozen=True)
class Provenance:
    used: str = ""
    executed: str = ""
    activity_name: str = ""
    activity_description: str = ""


def provenance_from_activity(activity: Optional[Mapping[str, Any]]) -> Provenance:
    """An Activity (``generatedBy``) as synapseclient renders it: ``synN.V`` or a URL's name, ';'-joined."""
    if not activity:
        return Provenance()
    used: List[str] = []
    executed: List[str] = []
    for item in activity.get("used") or []:
        reference = item.get("reference")
        if reference:
            text = str(reference.get("targetId"))
            if reference.get("targetVersionNumber") is not None:
                text += f".{reference['targetVersionNumber']}"
        else:
            text = str(item.get("name") or item.get("url") or "")
        (executed if item.get("wasExecuted") else used).append(text)
    return Provenance(
        used=";".join(used),
        executed=";".join(executed),
        activity_name=str(activity.get("name") or ""),
        activity_description=str(activity.get("description") or ""),
    )


@dataclass(frozen=True)
class ManifestRow:
    path: Path
    parent_id: Optional[str]
    name: str
    entity_id: str
    content_type: Optional[str]
    annotations: Mapping[str, object] = field(default_factory=dict)  # Annotations v2 {"key": {type, value}}
    provenance: Provenance = Provenance()


def _cell(values: List[object]) -> str:
    """synapseclient's rendering of an annotation's value list."""
    items = []
    for item in values:
        if isinstance(item, datetime.datetime):
            text = item.strftime("%Y-%m-%dT%H:%M:%S")
            text += f".{item.microsecond // 1000:03d}Z" if item.microsecond else "Z"
            items.append(text)
        elif isinstance(item, str):
            items.append(f'"{item}"' if len(values) > 1 and "," in item else item)
        else:
            items.append(repr(item))
    if len(items) > 1:
        return f"[{','.join(items)}]"
    return items[0] if items else ""


def annotation_cells(annotations: Mapping[str, object]) -> Dict[str, str]:
    cells = {}
    for key, entry in annotations.items():
        if isinstance(entry, Mapping):
            values = annotation_values(entry)
        else:
            values = list(entry) if isinstance(entry, (list, tuple)) else [entry]
        cells[key] = _cell(values)
    return cells


def _row_dict(row: ManifestRow, layout: _Layout) -> Dict[str, str]:
    """One row's cells, filled in synapseclient's order: the entity's fields, its annotations, then its provenance
    when it has one (an annotation named like a column takes that column's cell, a provenance column again)."""
    data = {
        "path": str(row.path),
        layout.parent_column: row.parent_id or "",
        "name": row.name,
        layout.id_column: row.entity_id,
        "synapseStore": "True",
        "contentType": row.content_type or "",
    }
    data.update(annotation_cells(row.annotations))
    if row.provenance != Provenance():
        data.update(
            {
                "used": row.provenance.used,
                "executed": row.provenance.executed,
                "activityName": row.provenance.activity_name,
                "activityDescription": row.provenance.activity_description,
            }
        )
    return data


def _one_line(value: object) -> object:
    return value.replace("\t", " ").replace("\r", " ").replace("\n", " ") if isinstance(value, str) else value


def _bytes_or_replacement(error: UnicodeError) -> Tuple[bytes, int]:
    """The manifests' encoding errors: a path's undecodable bytes (U+DC80..U+DCFF, as ``surrogateescape``) are
    written as those bytes; any other lone surrogate (JSON can carry one in an annotation, UTF-8 cannot) as U+FFFD,
    so that one odd value never fails a manifest."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    out = b"".join(
        bytes([ord(char) - 0xDC00]) if 0xDC80 <= ord(char) <= 0xDCFF else "\ufffd".encode("utf-8")
        for char in error.object[error.start : error.end]
    )
    return out, error.end


_ENCODING_ERRORS = "synclient.manifest"
codecs.register_error(_ENCODING_ERRORS, _bytes_or_replacement)


class _FolderManifest:
    """One folder's manifest being written: a partial file, replaced into place when complete."""

    def __init__(self, folder: Path, columns: List[str], layout: _Layout) -> None:
        self.target = folder / layout.filename
        self.temp = folder / f".{layout.filename}.synclient-partial"
        if os.path.realpath(folder) != str(folder):  # a folder swapped for a symlink during the run
            raise OSError(errno.ELOOP, "the folder is reached through a symlink; not written", str(folder))
        # a fresh file, never through a symlink planted at the temp name; a target path that is not valid UTF-8 is
        # written as the bytes it is on disk
        self._file = ReplacingWriter(self.target, self.temp, mode=0o644, errors=_ENCODING_ERRORS, newline="")
        self._handle = self._file.handle
        quotechar = '"' if layout.quoting != csv.QUOTE_NONE else None
        self._writer = csv.DictWriter(
            self._handle,
            columns,
            restval="",
            extrasaction="ignore",
            delimiter=layout.delimiter,
            quotechar=quotechar,
            quoting=layout.quoting,
            escapechar=None,
            lineterminator="\r\n",
        )  # csv's default, as synapseclient's
        try:
            self._writer.writeheader()
        except BaseException:  # no partial file (or open descriptor) left for a manifest never handed out
            self._file.discard()
            raise

    def write(self, row: Dict[str, str]) -> None:
        try:
            self._writer.writerow(row)
        except csv.Error:
            # An unquoted TSV cannot hold a tab or line break, and a remote name may contain one: write that row
            # with them as spaces rather than fail the whole sync after every file was downloaded. (The quoted CSV
            # holds them.)
            self._writer.writerow({key: _one_line(value) for key, value in row.items()})

    def close(self) -> Path:
        """Move the new manifest into place, unless the one there already has these bytes (a no-op re-sync writes
        nothing: no new mtime for tools that watch the tree)."""
        self._file.commit(keep_target_if=_same_bytes)
        return self.target

    def abandon(self) -> None:
        """An error midway: leave no partial manifest behind."""
        self._file.discard()


def _same_bytes(new: Path, old: Path) -> bool:
    try:
        info = os.lstat(old)
        if not stat.S_ISREG(info.st_mode) or info.st_size != os.stat(new).st_size:
            return False
        return filecmp.cmp(new, old, shallow=False)
    except OSError:
        return False


@dataclass(frozen=True)
class ManifestFailure:
    """A manifest that could not be written, and why (the sync's files are not affected)."""

    path: Path
    error: OSError

    @property
    def folder(self) -> Path:
        return self.path.parent


def _folders_listing(row: ManifestRow, target_root: Path, mode: ManifestMode) -> List[Path]:
    """The folders whose manifest lists this file: its own and every one above it up to the target ("all")."""
    if mode is ManifestMode.ROOT:
        return [target_root]
    chain, folder = [], row.path.parent
    while True:
        chain.append(folder)
        if folder == target_root or target_root not in folder.parents:
            return chain[::-1]
        folder = folder.parent


def write_manifests(
    rows: Callable[[], Iterator[ManifestRow]],
    target_root: Path,
    mode: ManifestMode,
    *,
    formats: Iterable[ManifestFormat] = (ManifestFormat.TSV,),
    skip: Optional[Mapping[ManifestFormat, AbstractSet[Path]]] = None,
    covered: AbstractSet[Path] = frozenset(),
) -> Tuple[List[Path], List[ManifestFailure]]:
    """Write the manifests of ``mode`` in each of ``formats`` from ``rows()``, an iterator factory yielding rows
    sorted by path; none of a format in its folders of ``skip``. ``covered``: the folders the sync listed, where a
    format that writes a header-only manifest writes one when no file lies below. Returns the manifests written and
    those that failed (:class:`ManifestWriter` does the work)."""
    if mode is ManifestMode.SUPPRESS:
        return [], []
    return ManifestWriter(target_root, mode, formats=formats, skip=skip).write(rows, covered=covered)


_Key = Tuple[Path, ManifestFormat]  # one manifest: its folder and its format


class ManifestWriter:
    """One writing of a tree's manifests (use once).

    Streaming, in two passes, so a million-file tree never sits in memory: the first pass
    (:meth:`_collect_columns`) gathers each folder's annotation columns; the second (:meth:`_write_rows`) writes
    every row into the manifests of its folder chain. Sorted input means a folder's rows are contiguous, so only the
    manifests along the current chain are open at any time. A manifest that fails is one :class:`ManifestFailure`
    and is not tried again; the others go on.
    """

    def __init__(
        self,
        target_root: Path,
        mode: ManifestMode,
        *,
        formats: Iterable[ManifestFormat] = (ManifestFormat.TSV,),
        skip: Optional[Mapping[ManifestFormat, AbstractSet[Path]]] = None,
    ) -> None:
        self._root = target_root
        self._mode = mode
        self._formats = ManifestFormat.in_order(set(formats))
        self._skip: Mapping[ManifestFormat, AbstractSet[Path]] = skip or {}
        self._chains: Dict[Path, List[Path]] = {}  # folder of a file -> the folders listing it (one per folder)
        self._columns: Dict[Path, Set[str]] = {}  # folder -> the annotation keys of the files it lists
        self._written: List[Path] = []
        self._failures: Dict[_Key, ManifestFailure] = {}
        self._open: Dict[_Key, _FolderManifest] = {}

    def write(
        self, rows: Callable[[], Iterator[ManifestRow]], *, covered: AbstractSet[Path] = frozenset()
    ) -> Tuple[List[Path], List[ManifestFailure]]:
        """Both passes over ``rows()``, then the header-only manifests of ``covered`` folders with no file below.
        Returns the manifests written and those that failed, each sorted by path."""
        if self._mode is ManifestMode.SUPPRESS:
            return [], []
        self._collect_columns(rows())
        try:
            self._write_rows(rows())
            self._write_header_only(covered)
        finally:
            for manifest in self._open.values():  # an unexpected error midway: no partial manifest behind
                manifest.abandon()
        return sorted(self._written), sorted(self._failures.values(), key=lambda f: str(f.path))

    # -- the passes ----------------------------------------------------------------------------------------------

    def _collect_columns(self, rows: Iterator[ManifestRow]) -> None:
        for row in rows:
            keys = set(row.annotations)
            for folder in self._folders_listing(row):
                self._columns.setdefault(folder, set()).update(keys)

    def _write_rows(self, rows: Iterator[ManifestRow]) -> None:
        for row in rows:
            chain = [key for folder in self._folders_listing(row) for key in self._wanted(folder)]
            for key in [k for k in self._open if k not in chain]:  # the rows of those folders are done
                self._close(key)
            cells = {fmt: _row_dict(row, _LAYOUTS[fmt]) for fmt in self._formats}
            for key in chain:
                manifest = self._open.get(key) or self._open_manifest(key)
                if manifest is None:
                    continue
                try:
                    manifest.write(cells[key[1]])
                except OSError as exc:
                    self._fail(key, exc)
        for key in list(self._open):
            self._close(key)

    def _write_header_only(self, covered: AbstractSet[Path]) -> None:
        """Folders with no file below them: a header line only, in the formats that write one (synapseclient's
        CSV)."""
        empty = sorted(
            folder
            for folder in covered
            if folder not in self._columns and (self._mode is ManifestMode.ALL or folder == self._root)
        )
        for folder in empty:
            for key in self._wanted(folder):
                if _LAYOUTS[key[1]].writes_header_only and self._open_manifest(key) is not None:
                    self._close(key)

    # -- one manifest --------------------------------------------------------------------------------------------

    def _folders_listing(self, row: ManifestRow) -> List[Path]:
        folder = row.path.parent
        chain = self._chains.get(folder)
        if chain is None:
            chain = self._chains[folder] = _folders_listing(row, self._root, self._mode)
        return chain

    def _wanted(self, folder: Path) -> List[_Key]:
        """The manifests ``folder`` gets: its formats not skipped there and not failed already."""
        return [
            (folder, fmt)
            for fmt in self._formats
            if folder not in self._skip.get(fmt, ()) and (folder, fmt) not in self._failures
        ]

    def _open_manifest(self, key: _Key) -> Optional[_FolderManifest]:
        layout = _LAYOUTS[key[1]]
        try:
            manifest = self._open[key] = _FolderManifest(
                key[0], layout.base_columns + sorted(self._columns.get(key[0], ())), layout
            )
        except OSError as exc:
            self._fail(key, exc)
            return None
        return manifest

    def _close(self, key: _Key) -> None:
        try:
            self._written.append(self._open.pop(key).close())
        except OSError as exc:
            self._fail(key, exc)

    def _fail(self, key: _Key, error: OSError) -> None:
        self._failures[key] = ManifestFailure(key[0] / key[1].filename, error)
        manifest = self._open.pop(key, None)
        if manifest is not None:
            manifest.abandon()
