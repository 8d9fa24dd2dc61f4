"""``SYNAPSE_METADATA_MANIFEST.tsv``, written the way synapseclient writes it, so existing tooling reads ours.

Columns: ``path, parent, name, id, synapseStore, contentType, used, executed, activityName,
activityDescription``, then one column per annotation key (sorted). Tab-separated, unquoted; a multi-valued
annotation is written ``[a,b]`` (a value with a comma quoted inside the brackets). ``manifest="all"`` writes one
in every folder listing every file at or below it (synapseclient's behaviour), ``"root"`` only in the target,
``"suppress"`` none. A single-file sync writes none (as synapseclient). A folder where the remote has an entity of
the manifest's name gets no manifest (the remote entity wins its path). A manifest that cannot be written is one
:class:`ManifestFailure` for its folder; the other folders' manifests are still written. Paths are written as the
bytes they are on disk (a target path that is not UTF-8 is written byte for byte).
"""
from __future__ import annotations

import csv
import datetime
import errno
import filecmp
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import AbstractSet, Callable, Dict, Iterator, List, Mapping, Optional, Tuple

from synclient.choices import Choice
from synclient.results import annotation_value

MANIFEST_FILENAME = "SYNAPSE_METADATA_MANIFEST.tsv"
BASE_COLUMNS = ["path", "parent", "name", "id", "synapseStore", "contentType", "used", "executed",
                "activityName", "activityDescription"]


class ManifestMode(Choice):
    ALL = "all"
    ROOT = "root"
    SUPPRESS = "suppress"


@dataclass(frozen=True)
class Provenance:
    used: str = ""
    executed: str = ""
    activity_name: str = ""
    activity_description: str = ""


def provenance_from_activity(activity: Optional[Mapping[str, object]]) -> Provenance:
    """An Activity (``generatedBy``) as synapseclient renders it: ``synN.V`` or a URL's name, ';'-joined."""
    if not activity:
        return Provenance()
    used, executed = [], []
    for item in activity.get("used") or []:
        reference = item.get("reference")
        if reference:
            text = str(reference.get("targetId"))
            if reference.get("targetVersionNumber") is not None:
                text += f".{reference['targetVersionNumber']}"
        else:
            text = str(item.get("name") or item.get("url") or "")
        (executed if item.get("wasExecuted") else used).append(text)
    return Provenance(used=";".join(used), executed=";".join(executed),
                      activity_name=str(activity.get("name") or ""),
                      activity_description=str(activity.get("description") or ""))


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
            text += (f".{item.microsecond // 1000:03d}Z" if item.microsecond else "Z")
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
            values = [annotation_value(str(entry.get("type", "STRING")), str(v)) for v in entry.get("value") or []]
        else:
            values = list(entry) if isinstance(entry, (list, tuple)) else [entry]
        cells[key] = _cell(values)
    return cells


def _row_dict(row: ManifestRow) -> Dict[str, str]:
    data = {"path": str(row.path), "parent": row.parent_id or "", "name": row.name, "id": row.entity_id,
            "synapseStore": "True", "contentType": row.content_type or "",
            "used": row.provenance.used, "executed": row.provenance.executed,
            "activityName": row.provenance.activity_name,
            "activityDescription": row.provenance.activity_description}
    data.update(annotation_cells(row.annotations))
    return data


def _one_line(value: object) -> object:
    return value.replace("\t", " ").replace("\r", " ").replace("\n", " ") if isinstance(value, str) else value


class _FolderManifest:
    """One folder's manifest being written: a partial file, replaced into place when complete."""

    def __init__(self, folder: Path, columns: List[str]) -> None:
        self.target = folder / MANIFEST_FILENAME
        self.temp = folder / f".{MANIFEST_FILENAME}.synclient-partial"
        if os.path.realpath(folder) != str(folder):  # a folder swapped for a symlink during the run
            raise OSError(errno.ELOOP, "the folder is reached through a symlink; not written", str(folder))
        try:  # a fresh file, never through a symlink planted at the temp name
            os.unlink(self.temp)
        except FileNotFoundError:
            pass
        fd = os.open(self.temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        # surrogateescape: a target path that is not valid UTF-8 is written as the bytes it is on disk
        self._handle = open(fd, "w", encoding="utf-8", errors="surrogateescape", newline="")
        self._writer = csv.DictWriter(self._handle, columns, restval="", extrasaction="ignore", delimiter="\t",
                                      quotechar=None, quoting=csv.QUOTE_NONE, escapechar=None,
                                      lineterminator="\r\n")  # csv's default, as synapseclient writes it
        self._writer.writeheader()

    def write(self, row: Dict[str, str]) -> None:
        try:
            self._writer.writerow(row)
        except csv.Error:
            # An unquoted TSV cannot hold a tab or line break, and a remote name may contain one: write that row
            # with them as spaces rather than fail the whole sync after every file was downloaded.
            self._writer.writerow({key: _one_line(value) for key, value in row.items()})

    def close(self) -> Path:
        """Move the new manifest into place, unless the one there already has these bytes (a no-op re-sync writes
        nothing: no new mtime for tools that watch the tree)."""
        self._handle.close()
        try:
            if _same_bytes(self.temp, self.target):
                os.unlink(self.temp)
            else:
                os.replace(self.temp, self.target)
        except OSError:
            self.abandon()
            raise
        return self.target

    def abandon(self) -> None:
        """An error midway: leave no partial manifest behind."""
        self._handle.close()
        try:
            os.unlink(self.temp)
        except OSError:
            pass


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
    """A folder whose manifest could not be written, and why (the sync's files are not affected)."""

    folder: Path
    error: OSError


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


def write_manifests(rows: Callable[[], Iterator[ManifestRow]], target_root: Path, mode: ManifestMode, *,
                    skip: AbstractSet[Path] = frozenset()) -> Tuple[List[Path], List[ManifestFailure]]:
    """Write the manifests of ``mode`` from ``rows()``, an iterator factory yielding rows sorted by path; no
    manifest in the folders of ``skip``. Returns the manifests written and the folders that failed.

    Streaming, in two passes, so a million-file tree never sits in memory: the first pass collects each folder's
    annotation columns; the second writes every row into the manifests of its folder chain. Sorted input means a
    folder's rows are contiguous, so only the manifests along the current chain are open at any time.
    """
    if mode is ManifestMode.SUPPRESS:
        return [], []
    chains: Dict[Path, List[Path]] = {}  # folder of a file -> the folders listing it (one entry per folder)

    def folders_listing(row: ManifestRow) -> List[Path]:
        folder = row.path.parent
        chain = chains.get(folder)
        if chain is None:
            chain = chains[folder] = _folders_listing(row, target_root, mode)
        return chain

    columns: Dict[Path, set] = {}
    for row in rows():
        keys = set(row.annotations)
        for folder in folders_listing(row):
            columns.setdefault(folder, set()).update(keys)
    written: List[Path] = []
    failures: Dict[Path, ManifestFailure] = {}
    open_manifests: Dict[Path, _FolderManifest] = {}

    def fail(folder: Path, error: OSError) -> None:
        failures[folder] = ManifestFailure(folder, error)
        manifest = open_manifests.pop(folder, None)
        if manifest is not None:
            manifest.abandon()

    try:
        for row in rows():
            chain = [f for f in folders_listing(row) if f not in skip and f not in failures]
            for folder in [f for f in open_manifests if f not in chain]:
                try:
                    written.append(open_manifests.pop(folder).close())
                except OSError as exc:
                    fail(folder, exc)
            cells = _row_dict(row)
            for folder in chain:
                try:
                    if folder not in open_manifests:
                        open_manifests[folder] = _FolderManifest(folder, BASE_COLUMNS + sorted(columns[folder]))
                    open_manifests[folder].write(cells)
                except OSError as exc:
                    fail(folder, exc)
        for folder in list(open_manifests):
            try:
                written.append(open_manifests.pop(folder).close())
            except OSError as exc:
                fail(folder, exc)
    finally:
        for manifest in open_manifests.values():  # an unexpected error midway: no partial manifest behind
            manifest.abandon()
    return sorted(written), sorted(failures.values(), key=lambda f: str(f.folder))
