"""``SYNAPSE_METADATA_MANIFEST.tsv``, written the way synapseclient writes it, so existing tooling reads ours.

Columns: ``path, parent, name, id, synapseStore, contentType, used, executed, activityName,
activityDescription``, then one column per annotation key (sorted). Tab-separated, unquoted; a multi-valued
annotation is written ``[a,b]`` (a value with a comma quoted inside the brackets). ``manifest="all"`` writes one
in every folder listing every file at or below it (synapseclient's behaviour), ``"root"`` only in the target,
``"suppress"`` none. A single-file sync writes none (as synapseclient).
"""
from __future__ import annotations

import csv
import datetime
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Optional

from synclient.choices import Choice

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


def _typed(kind: str, value: str) -> object:
    if kind == "LONG":
        return int(value)
    if kind == "DOUBLE":
        return float(value)
    if kind == "BOOLEAN":
        return value.lower() == "true"
    if kind == "TIMESTAMP_MS":
        return datetime.datetime.fromtimestamp(int(value) / 1000, tz=datetime.timezone.utc)
    return value


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
            values = [_typed(str(entry.get("type", "STRING")), str(v)) for v in entry.get("value") or []]
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


def write_manifest(folder: Path, rows: Iterable[ManifestRow]) -> Path:
    """Write one manifest into ``folder`` (atomically: temp file, then replace)."""
    dicts = sorted((_row_dict(r) for r in rows), key=lambda d: d["path"])
    extra = sorted({k for d in dicts for k in d} - set(BASE_COLUMNS))
    target = folder / MANIFEST_FILENAME
    temp = folder / f".{MANIFEST_FILENAME}.synclient-partial"
    with open(temp, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, BASE_COLUMNS + extra, restval="", extrasaction="ignore",
                                delimiter="\t", quotechar=None, quoting=csv.QUOTE_NONE, escapechar=None,
                                lineterminator="\r\n")  # csv's default, as synapseclient writes it
        writer.writeheader()
        writer.writerows(dicts)
    os.replace(temp, target)
    return target


def write_manifests(rows: List[ManifestRow], target_root: Path, mode: ManifestMode) -> List[Path]:
    if mode is ManifestMode.SUPPRESS or not rows:
        return []
    if mode is ManifestMode.ROOT:
        return [write_manifest(target_root, rows)]
    by_folder: Dict[Path, List[ManifestRow]] = {}
    for row in rows:
        folder = row.path.parent
        while True:  # every folder from the file's own up to the target lists it
            by_folder.setdefault(folder, []).append(row)
            if folder == target_root or target_root not in folder.parents:
                break
            folder = folder.parent
    return [write_manifest(folder, folder_rows) for folder, folder_rows in sorted(by_folder.items())]
