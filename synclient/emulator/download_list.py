"""The download list (the portal's Download Cart): one list per user of ``(file, version or None)`` items, and what
Synapse derives from it (``DownloadListManagerImpl``, ``DownloadListDAOImpl`` of Synapse-Repository-Services):
the available files (resolved to a version, sortable), the actions required for the others, the statistics, and
the manifest CSV. The lists live in memory (a restart forgets them, like the async jobs).
"""

from __future__ import annotations

import io
import threading
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from .store import DenyMode, Entity, EntityKind, HandleStorage, Store
from .tables import epoch_ms

#: DownloadListManagerImpl.MAX_FILES_PER_USER
MAX_FILES_PER_USER = 100 * 1000
#: DownloadListManagerImpl.MAX_FILES_PER_BATCH (add and remove)
MAX_FILES_PER_BATCH = 1000
#: FileConstants.MAX_FILE_SIZE_ELIGIBLE_FOR_PACKAGING (BULK_FILE_DOWNLOAD_MAX_SIZE_BYTES / 10, a 2 GiB bulk limit)
MAX_SIZE_ELIGIBLE_FOR_PACKAGING = 2 * 1024 * 1024 * 1024 // 10

DOWNLOAD_PKG = "org.sagebionetworks.repo.model.download."
MEET_ACCESS_REQUIREMENT = DOWNLOAD_PKG + "MeetAccessRequirement"
REQUEST_DOWNLOAD = DOWNLOAD_PKG + "RequestDownload"

#: ManifestKeys, in order: the manifest's first columns (then the annotation names, sorted)
MANIFEST_KEYS = (
    "ID",
    "name",
    "versionNumber",
    "contentType",
    "dataFileSizeBytes",
    "createdBy",
    "createdOn",
    "modifiedBy",
    "modifiedOn",
    "parentId",
    "synapseURL",
    "dataFileMD5Hex",
)

#: an item's key: (entity id, version number or None: "the current version when asked")
ItemKey = Tuple[int, Optional[int]]


class CartError(ValueError):
    """A request the download list refuses (Synapse's IllegalArgumentException: 400), in Synapse's words."""


@dataclass(frozen=True)
class AvailableFile:
    """One DownloadListItemResult: an item the user may download now, at its resolved version."""

    entity: Entity
    asked_version: Optional[int]
    version: int
    added_on: str
    file_handle_id: int
    size: int
    md5: str
    content_type: str
    storage: HandleStorage
    project_name: str
    created_on: str
    modified_on: str

    @property
    def eligible_for_packaging(self) -> bool:
        return self.storage is HandleStorage.S3 and self.size <= MAX_SIZE_ELIGIBLE_FOR_PACKAGING

    def result_json(self) -> Dict[str, Any]:
        body: Dict[str, Any] = {"fileEntityId": f"syn{self.entity.id}"}
        if self.asked_version is not None:
            body["versionNumber"] = self.asked_version
        body.update(
            fileName=self.entity.name,
            addedOn=self.added_on,
            projectId=f"syn{self.entity.project_id}",
            projectName=self.project_name,
            createdBy=str(self.entity.created_by),
            createdOn=self.entity.created_on,
            fileSizeBytes=self.size,
            isEligibleForPackaging=self.eligible_for_packaging,
            fileHandleId=str(self.file_handle_id),
        )
        return body


class DownloadLists:
    """Every user's download list. Items keep the order they were added in (``addedOn`` then breaks no ties)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lists: Dict[int, Dict[ItemKey, str]] = {}

    def items(self, user_id: int) -> List[Tuple[ItemKey, str]]:
        with self._lock:
            return list(self._lists.get(user_id, {}).items())

    def size(self, user_id: int) -> int:
        with self._lock:
            return len(self._lists.get(user_id, {}))

    def add(self, user_id: int, keys: Sequence[ItemKey], added_on: str, limit: int = MAX_FILES_PER_USER) -> int:
        """Adds the keys not yet listed (INSERT IGNORE); the number added. Refused whole, as Synapse refuses a
        batch, when the batch would take the list over ``limit``."""
        with self._lock:
            listed = self._lists.setdefault(user_id, {})
            if len(keys) + len(listed) > limit:
                raise CartError(
                    f"Adding '{len(keys)}' files to your download list would exceed the maximum number of '{limit}'"
                    f" files.  You currently have '{len(listed)}' files on you download list."
                )
            added = 0
            for key in keys:
                if key not in listed:
                    listed[key] = added_on
                    added += 1
            return added

    def add_up_to(self, user_id: int, keys: Iterable[ItemKey], added_on: str, limit: int = MAX_FILES_PER_USER) -> int:
        """Adds keys (a folder's children, a query's rows) while the list has room: the number added. Refused when
        the list is already full (YOUR_DOWNLOAD_LIST_ALREADY_HAS_THE_MAXIMUM_NUMBER_OF_FILES)."""
        with self._lock:
            listed = self._lists.setdefault(user_id, {})
            if len(listed) >= limit:
                raise CartError(f"Your download list already has the maximum number of '{limit}' files.")
            added = 0
            for key in keys:
                if len(listed) >= limit:
                    break
                if key not in listed:
                    listed[key] = added_on
                    added += 1
            return added

    def remove(self, user_id: int, keys: Sequence[ItemKey]) -> int:
        """Removes the keys exactly as given (a versionless item only by a versionless key): the number removed."""
        with self._lock:
            listed = self._lists.get(user_id, {})
            return sum(1 for key in keys if listed.pop(key, None) is not None)

    def clear(self, user_id: int) -> None:
        with self._lock:
            self._lists.pop(user_id, None)


# --- what the list holds, resolved ---------------------------------------------------------------------------
def resolve(store: Store, key: ItemKey, added_on: str) -> Tuple[Optional[AvailableFile], Optional[Dict[str, Any]]]:
    """(the item as an available file, None) or (None, the Action the user must take first), or (None, None) for an
    item that names no file version any more (Synapse lists it under neither)."""
    entity_id, asked = key
    entity = store.entity(entity_id)
    if entity is None or entity.kind is not EntityKind.FILE:
        return None, None
    deny = store.effective_deny(entity)
    if deny is DenyMode.READ:
        return None, {"concreteType": REQUEST_DOWNLOAD, "benefactorId": store.benefactor_id(entity)}
    if deny is DenyMode.DOWNLOAD:
        # the one access requirement kind the emulator models: ``deny: "download"`` is an unmet access requirement
        # of the entity that carries it (its id is the requirement's)
        return None, {"concreteType": MEET_ACCESS_REQUIREMENT, "accessRequirementId": store.benefactor_id(entity)}
    version = store.version(entity_id, asked if asked is not None else entity.current_version)
    if version is None:
        return None, None
    handle = store.file_handle(version.file_handle_id)
    if handle is None:
        return None, None
    project = store.entity(entity.project_id)
    return (
        AvailableFile(
            entity=entity,
            asked_version=asked,
            version=version.version_number,
            added_on=added_on,
            file_handle_id=handle.id,
            size=handle.size,
            md5=handle.md5,
            content_type=handle.content_type,
            storage=handle.storage,
            project_name=project.name if project is not None else "",
            created_on=entity.created_on,
            modified_on=version.modified_on,
        ),
        None,
    )


def available_files(store: Store, items: Sequence[Tuple[ItemKey, str]]) -> List[AvailableFile]:
    return [file for file, _ in (resolve(store, key, added) for key, added in items) if file is not None]


def actions_required(store: Store, items: Sequence[Tuple[ItemKey, str]]) -> List[Dict[str, Any]]:
    """ActionRequiredCounts: one per distinct action, with the number of items it blocks, in first-seen order."""
    counts: Dict[Tuple[str, int], Dict[str, Any]] = {}
    for key, added in items:
        _, action = resolve(store, key, added)
        if action is None:
            continue
        number = action.get("accessRequirementId", action.get("benefactorId"))
        slot = counts.setdefault((action["concreteType"], int(str(number))), {"action": action, "count": 0})
        slot["count"] += 1
    return list(counts.values())


def statistics(store: Store, items: Sequence[Tuple[ItemKey, str]]) -> Dict[str, Any]:
    """A FilesStatisticsResponse (DownloadListDAOImpl STATS_MAPPER: requiring action = total - available)."""
    files = available_files(store, items)
    return {
        "totalNumberOfFiles": len(items),
        "numberOfFilesAvailableForDownload": len(files),
        "numberOfFilesAvailableForDownloadAndEligibleForPackaging": sum(f.eligible_for_packaging for f in files),
        "numberOfFilesRequiringAction": len(items) - len(files),
        "sumOfFileSizesAvailableForDownload": sum(f.size for f in files),
    }


# --- sorting -------------------------------------------------------------------------------------------------
_SORT_KEYS = {
    "fileName": lambda f: f.entity.name,
    "projectName": lambda f: f.project_name,
    "synId": lambda f: f.entity.id,
    # the item's own version column, where a versionless item is -1 (DownloadListDAOImpl NULL_VERSION_NUMBER)
    "versionNumber": lambda f: -1 if f.asked_version is None else f.asked_version,
    "addedOn": lambda f: f.added_on,
    "createdBy": lambda f: f.entity.created_by,
    "createdOn": lambda f: f.created_on,
    "fileSize": lambda f: f.size,
    "isEligibleForPackaging": lambda f: f.eligible_for_packaging,
}
#: DownloadListManagerImpl.getDefaultSort
DEFAULT_SORT = ({"field": "synId", "direction": "ASC"}, {"field": "versionNumber", "direction": "ASC"})
FILTERS = ("eligibleForPackaging", "ineligibleForPackaging")


def sort_files(files: List[AvailableFile], sort: Sequence[Dict[str, Any]]) -> List[AvailableFile]:
    """``files`` ordered by each Sort in turn (the first the most significant). CartError for an unknown field."""
    ordered = list(files)
    for entry in reversed(list(sort)):
        name = entry.get("field")
        if name not in _SORT_KEYS:
            raise CartError(f"Unknown sort field: {name}")
        direction = entry.get("direction") or "ASC"
        if direction not in ("ASC", "DESC"):
            raise CartError(f"Unknown sort direction: {direction}")
        ordered.sort(key=_SORT_KEYS[name], reverse=direction == "DESC")
    return ordered


def filter_files(files: List[AvailableFile], name: Optional[str]) -> List[AvailableFile]:
    if name is None:
        return files
    if name not in FILTERS:
        raise CartError(f"Unknown filter: {name}")
    wanted = name == "eligibleForPackaging"
    return [f for f in files if f.eligible_for_packaging == wanted]


# --- the manifest --------------------------------------------------------------------------------------------
def _annotation_text(values: Any) -> str:
    if isinstance(values, list):
        return ",".join(str(v) for v in values)
    return str(values)


def manifest_csv(store: Store, files: Sequence[AvailableFile], descriptor: Dict[str, Any]) -> bytes:
    """The manifest of the available files (sorted by name, as createManifest sorts): ManifestKeys (node dates as
    the database's epoch milliseconds), then the files' annotation names sorted; every field quoted as opencsv
    writes (the table CSV's quoting). CartError when no file is available (NO_FILES_AVAILABLE_FOR_DOWNLOAD)."""
    if not files:
        raise CartError("No files available for download.")
    separator = str(descriptor.get("separator") or ",")
    quote = str(descriptor.get("quoteCharacter") or '"')
    escape = str(descriptor.get("escapeCharacter") or "\\")
    line_end = str(descriptor.get("lineEnd") or "\n")

    def field(value: Optional[str]) -> str:
        if value is None:
            return ""
        escaped = value.replace(escape, escape + escape) if escape != quote else value
        return quote + escaped.replace(quote, escape + quote) + quote

    rows: List[Dict[str, str]] = []
    annotation_names = set()
    for f in sort_files(list(files), [{"field": "fileName", "direction": "ASC"}]):
        row = {
            "ID": f"syn{f.entity.id}",
            "name": f.entity.name,
            "versionNumber": str(f.version),
            "contentType": f.content_type,
            "dataFileSizeBytes": str(f.size),
            "createdBy": str(f.entity.created_by),
            "createdOn": str(epoch_ms(f.created_on)),
            "modifiedBy": str(f.entity.modified_by),
            "modifiedOn": str(epoch_ms(f.modified_on)),
            "parentId": f"syn{f.entity.parent_id}",
            "synapseURL": f"https://www.synapse.org/#!Synapse:syn{f.entity.id}.{f.version}",
            "dataFileMD5Hex": f.md5,
        }
        for name, values in store.annotations(f.entity.id).items():
            if name not in MANIFEST_KEYS:
                annotation_names.add(name)
                row[name] = _annotation_text(values)
        rows.append(row)
    columns = list(MANIFEST_KEYS) + sorted(annotation_names)
    out = io.StringIO()
    if descriptor.get("isFirstLineHeader", True) is not False:
        out.write(separator.join(field(name) for name in columns) + line_end)
    for row in rows:
        out.write(separator.join(field(row.get(name)) for name in columns) + line_end)
    return out.getvalue().encode("utf-8")
