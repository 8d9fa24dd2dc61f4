"""Dataclasses for the platform objects synclient uses, parsed from the wire JSON, and the entity id syntax.

The wire boundary validates: every ``from_wire`` checks what it keeps before anything else sees it: types (a name
is a string, a size a whole number and not a bool), ranges (sizes 0..2**63-1, version numbers from 1) and id shapes
(entity ids ``synNNN``, kept canonical; file handle ids ASCII digits, which name local files; an MD5 32 hex digits).
An answer that breaks one, or lacks a field the API documents as always present, raises
:class:`MalformedAnswerError` naming the field (never a bare ``KeyError``, ``ValueError`` or ``OverflowError`` from
further in); :class:`~synclient.platform.rest.Platform` adds which call and endpoint gave it, and the call's entity
fails alone. :class:`PageTrail` ends a paged listing whose server repeats a page token or sends empty pages that go on.
"""

from __future__ import annotations

import enum
import json
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple, TypeVar

from synclient.errors import ConfigError, MalformedAnswerError

_MODEL = "org.sagebionetworks.repo.model."

#: ``syn123`` or ``syn123.4``: ASCII digits only (``str.isdigit`` also accepts "²" and "١٢"), at most 19 of them
#: (Synapse ids are 64-bit), ``syn`` in any case.
_ENTITY_ID = re.compile(r"(?i:syn)([0-9]{1,19})(?:\.([0-9]{1,19}))?")


def parse_entity_id(text: str) -> Tuple[str, Optional[int]]:
    """``"syn123"`` -> ("syn123", None); ``"syn123.4"`` -> ("syn123", 4). Surrounding whitespace is ignored; anything
    else that is not ``synNNN`` or ``synNNN.VERSION`` is a :class:`ConfigError`. The id is canonical from here on:
    ``SYN0012`` is ``syn12`` (the platform's own spelling, so it matches the ids of its answers)."""
    match = _ENTITY_ID.fullmatch(str(text).strip())
    if match is None:
        shown = str(text) if len(str(text)) <= 40 else str(text)[:40] + "..."
        raise ConfigError(f"not a platform id: {shown!r} (expected synNNN or synNNN.VERSION, ASCII digits)")
    number, version = match.groups()
    return "syn" + str(int(number)), int(version) if version is not None else None


#: the largest size or id on the wire (Synapse's are Java longs)
WIRE_MAX = 2**63 - 1
_WIRE_DIGITS = re.compile(r"[0-9]{1,19}")
_WIRE_ENTITY_ID = re.compile(r"(?i:syn)([0-9]{1,19})")
_WIRE_MD5 = re.compile(r"[0-9a-fA-F]{32}")


def _shown(value: Any) -> str:
    """A value of an answer as a message shows it: its repr, cut short (an answer may hold anything)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


def wire_whole_number(value: Any, key: str, what: str, *, minimum: int = 0, maximum: int = WIRE_MAX) -> int:
    """A JSON number (or a string of ASCII digits) that is a whole number from ``minimum`` to ``maximum``; not a
    bool, not a fraction, not "²"; else :class:`MalformedAnswerError` naming ``key`` of ``what``."""
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and _WIRE_DIGITS.fullmatch(value):
        number = int(value)
    else:
        number = None
    if number is None:
        raise MalformedAnswerError(f"the {key!r} of {what} is not a whole number: {_shown(value)}")
    if not minimum <= number <= maximum:
        raise MalformedAnswerError(f"the {key!r} of {what} is out of range ({minimum} to {maximum}): {_shown(value)}")
    return number


def wire_entity_id(value: Any, key: str, what: str) -> str:
    """An entity id of an answer (``syn123``), canonical (``syn0012`` is ``syn12``)."""
    match = _WIRE_ENTITY_ID.fullmatch(value) if isinstance(value, str) else None
    if match is None or int(match.group(1)) > WIRE_MAX:
        raise MalformedAnswerError(f"the {key!r} of {what} is not an entity id (synNNN): {_shown(value)}")
    return "syn" + str(int(match.group(1)))


def wire_handle_id(value: Any, key: str, what: str) -> str:
    """A file handle id of an answer: ASCII digits (a JSON string or number), canonical. Partial files and the
    synapseclient cache are named by it, so nothing else passes (``../../x`` is refused here)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not _WIRE_DIGITS.fullmatch(str(value)):
        raise MalformedAnswerError(f"the {key!r} of {what} is not a file handle id (digits): {_shown(value)}")
    return str(wire_whole_number(int(value), key, what))


def wire_md5(value: Any, key: str, what: str) -> Optional[str]:
    """An MD5 of an answer: None when absent (or empty), else 32 hex digits."""
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not _WIRE_MD5.fullmatch(value):
        raise MalformedAnswerError(f"the {key!r} of {what} is not an MD5 (32 hex digits): {_shown(value)}")
    return value


def _string(obj: Mapping[str, Any], key: str, what: str) -> str:
    value = _required(obj, key, what)
    if not isinstance(value, str):
        raise MalformedAnswerError(f"the {key!r} of {what} is not a string: {_shown(value)}")
    return value


def _optional_string(obj: Mapping[str, Any], key: str, what: str) -> Optional[str]:
    value = wire_object(obj, what).get(key)
    if value is not None and not isinstance(value, str):
        raise MalformedAnswerError(f"the {key!r} of {what} is not a string: {_shown(value)}")
    return value


def _optional_entity_id(obj: Mapping[str, Any], key: str, what: str) -> Optional[str]:
    value = wire_object(obj, what).get(key)
    return None if value is None else wire_entity_id(value, key, what)


def _optional_version(obj: Mapping[str, Any], key: str, what: str) -> Optional[int]:
    """A version number of an entity: from 1."""
    return _optional_int(obj, key, what, minimum=1)


def wire_object(value: Any, what: str) -> Mapping[str, Any]:
    """``value`` if it is a JSON object, else :class:`MalformedAnswerError` naming ``what`` was expected."""
    if not isinstance(value, Mapping):
        raise MalformedAnswerError(f"expected {what} (a JSON object), got {type(value).__name__}")
    return value


def _required(obj: Mapping[str, Any], key: str, what: str) -> Any:
    value = wire_object(obj, what).get(key)
    if value is None:
        raise MalformedAnswerError(f"{what} lacks its {key!r} field")
    return value


def _optional_int(obj: Mapping[str, Any], key: str, what: str, *, minimum: int = 0) -> Optional[int]:
    value = wire_object(obj, what).get(key)
    return None if value is None else wire_whole_number(value, key, what, minimum=minimum)


class EntityType(enum.Enum):
    """Entity kinds, valued by their ``concreteType`` on the wire."""

    PROJECT = _MODEL + "Project"
    FOLDER = _MODEL + "Folder"
    FILE = _MODEL + "FileEntity"
    LINK = _MODEL + "Link"
    DATASET = _MODEL + "table.Dataset"
    DATASET_COLLECTION = _MODEL + "table.DatasetCollection"
    ENTITY_VIEW = _MODEL + "table.EntityView"
    TABLE = _MODEL + "table.TableEntity"
    OTHER = ""

    @classmethod
    def from_wire(cls, concrete_type: Optional[str]) -> EntityType:
        for member in cls:
            if member.value and member.value == concrete_type:
                return member
        return cls.OTHER

    @property
    def children_filter(self) -> str:
        """The name used in ``includeTypes`` of a children request."""
        return {
            EntityType.FOLDER: "folder",
            EntityType.FILE: "file",
            EntityType.LINK: "link",
            EntityType.PROJECT: "project",
            EntityType.ENTITY_VIEW: "entityview",
            EntityType.TABLE: "table",
            EntityType.DATASET: "dataset",
            EntityType.DATASET_COLLECTION: "datasetcollection",
        }.get(self, "")

    @property
    def is_container(self) -> bool:
        return self in (EntityType.PROJECT, EntityType.FOLDER)

    @property
    def has_items(self) -> bool:
        """A dataset (its items are file versions) or a dataset collection (its items are datasets)."""
        return self in (EntityType.DATASET, EntityType.DATASET_COLLECTION)

    @property
    def label(self) -> str:
        """How messages name the kind: "folder", "dataset collection", "other entity"."""
        return {
            EntityType.DATASET_COLLECTION: "dataset collection",
            EntityType.ENTITY_VIEW: "file view",
            EntityType.OTHER: "other entity",
        }.get(self, self.name.lower())

    @property
    def is_queryable(self) -> bool:
        """A file view or a table: its rows are selected with SQL (``download_query``), not downloaded by id."""
        return self in (EntityType.ENTITY_VIEW, EntityType.TABLE)


@dataclass(frozen=True)
class EntityHeader:
    """One row of a children listing (``EntityHeader``)."""

    id: str
    name: str
    type: EntityType
    version_number: Optional[int] = None
    modified_on: Optional[str] = None

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> EntityHeader:
        what = "entity header"
        return cls(
            id=wire_entity_id(_required(obj, "id", what), "id", what),
            name=_string(obj, "name", what),
            type=EntityType.from_wire(_optional_string(obj, "type", what)),
            version_number=_optional_version(obj, "versionNumber", what),
            modified_on=_optional_string(obj, "modifiedOn", what),
        )


@dataclass(frozen=True)
class ChildrenPage:
    headers: List[EntityHeader]
    next_page_token: Optional[str]
    #: ``sumFileSizesBytes``, when asked (``includeSumFileSizes``): the bytes of the current versions of every child
    #: of the requested types, all pages together (Synapse's ``NodeDAOImpl.getChildrenStats``)
    sum_file_sizes: Optional[int] = None
    #: why a ``sumFileSizesBytes`` the page said was not read (negative, beyond a long, not a number): for a caller
    #: that shows the sum to say so (the page itself stands)
    sum_problem: Optional[str] = None

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> ChildrenPage:
        rows = wire_object(obj, "a children page").get("page") or []
        if not isinstance(rows, list):
            raise MalformedAnswerError("the 'page' of a children page is not a list")
        # one bad child fails the page (its folder is then not visited, so nothing there is deleted as gone)
        headers = []
        for number, row in enumerate(rows, start=1):
            try:
                headers.append(EntityHeader.from_wire(row))
            except MalformedAnswerError as exc:
                child = row.get("id") if isinstance(row, Mapping) else None
                raise MalformedAnswerError(f"child {number} of the page ({_shown(child)}): {exc}") from None
        problem: Optional[str] = None
        try:
            total = _optional_int(obj, "sumFileSizesBytes", "a children page")
        except MalformedAnswerError as exc:  # a count only byte totals read: never worth the page
            total, problem = None, str(exc)
        return cls(
            headers=headers,
            next_page_token=_optional_string(obj, "nextPageToken", "a children page"),
            sum_file_sizes=total,
            sum_problem=problem,
        )


EXTERNAL_FILE_HANDLE = _MODEL + "file.ExternalFileHandle"


@dataclass(frozen=True)
class FileHandle:
    """The stored bytes behind a file entity version."""

    id: str
    content_size: Optional[int]
    content_md5: Optional[str]
    file_name: Optional[str] = None
    content_type: Optional[str] = None
    concrete_type: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def external_url(self) -> Optional[str]:
        """The URL of an ``ExternalFileHandle`` (bytes kept outside the platform's storage), else None."""
        url = self.raw.get("externalURL")
        return str(url) if url and self.concrete_type == EXTERNAL_FILE_HANDLE else None

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> FileHandle:
        what = "file handle"
        handle_id = wire_handle_id(_required(obj, "id", what), "id", what)
        _optional_string(obj, "externalURL", what)
        return cls(
            id=handle_id,
            content_size=_optional_int(obj, "contentSize", what),
            content_md5=wire_md5(obj.get("contentMd5"), "contentMd5", what),
            file_name=_optional_string(obj, "fileName", what),
            content_type=_optional_string(obj, "contentType", what),
            concrete_type=_optional_string(obj, "concreteType", what),
            raw=dict(obj),
        )


@dataclass(frozen=True)
class Entity:
    """An entity as returned by ``GET /entity/{id}`` or inside a bundle."""

    id: str
    name: str
    type: EntityType
    parent_id: Optional[str] = None
    version_number: Optional[int] = None
    data_file_handle_id: Optional[str] = None
    link_target_id: Optional[str] = None
    link_target_version: Optional[int] = None
    #: a dataset's file versions, a dataset collection's datasets: (entity id, version number or None)
    items: Tuple[Tuple[str, Optional[int]], ...] = ()
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> Entity:
        what = "entity"
        entity_id = wire_entity_id(_required(obj, "id", what), "id", what)
        links = "the linksTo of an entity"
        target = wire_object(wire_object(obj, what).get("linksTo") or {}, links)
        handle = obj.get("dataFileHandleId")
        return cls(
            id=entity_id,
            name=_string(obj, "name", what),
            type=EntityType.from_wire(_optional_string(obj, "concreteType", what)),
            parent_id=_optional_entity_id(obj, "parentId", what),
            version_number=_optional_version(obj, "versionNumber", what),
            data_file_handle_id=(wire_handle_id(handle, "dataFileHandleId", what) if handle is not None else None),
            link_target_id=_optional_entity_id(target, "targetId", links),
            link_target_version=_optional_version(target, "targetVersionNumber", links),
            items=_entity_refs(obj.get("items"), "the items of an entity"),
            raw=dict(obj),
        )


def _entity_refs(rows: Any, what: str) -> Tuple[Tuple[str, Optional[int]], ...]:
    """``[{"entityId", "versionNumber"}, ...]`` (EntityRef) as (id, version) pairs."""
    if rows is None:
        return ()
    if not isinstance(rows, list):
        raise MalformedAnswerError(f"{what} is not a list")
    item = "an item (EntityRef)"
    return tuple(
        (
            wire_entity_id(_required(row, "entityId", item), "entityId", item),
            _optional_version(row, "versionNumber", item),
        )
        for row in rows
    )


@dataclass(frozen=True)
class FileBundle:
    """What one ``bundle2`` call tells about a file version: the entity and its data file handle."""

    entity: Entity
    file_handle: Optional[FileHandle]
    annotations: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> FileBundle:
        entity = Entity.from_wire(_required(obj, "entity", "bundle"))
        rows = obj.get("fileHandles") or []
        if not isinstance(rows, list):
            raise MalformedAnswerError("the 'fileHandles' of a bundle is not a list")
        handles = [FileHandle.from_wire(row) for row in rows]
        data_handle = next((h for h in handles if h.id == entity.data_file_handle_id), None)
        annotations = wire_object(obj.get("annotations") or {}, "the annotations of a bundle")
        inner = annotations.get("annotations")
        if inner is not None:
            wire_object(inner, "the annotations of a bundle's annotations")
        return cls(entity=entity, file_handle=data_handle, annotations=dict(annotations))


def user_profile_from_wire(obj: Mapping[str, Any]) -> Dict[str, Any]:
    """A ``UserProfile`` as a plain dict, once it is known to name its user (``ownerId``)."""
    _required(obj, "ownerId", "user profile")
    return dict(obj)


#: every ``includeTypes`` name of a children request Synapse knows (``EntityType``): to learn that a container holds
#: nothing at all, not only nothing synclient downloads
ALL_CHILD_TYPE_NAMES = (
    "project",
    "folder",
    "file",
    "table",
    "link",
    "entityview",
    "dockerrepo",
    "submissionview",
    "dataset",
    "datasetcollection",
    "materializedview",
    "virtualtable",
    "searchindex",
)
LIST_WRAPPER = _MODEL + "ListWrapper"
VIEW_COLUMN_MODEL_REQUEST = _MODEL + "table.ViewColumnModelRequest"
#: a file view's ``viewTypeMask`` bit of files (``ViewTypeMask.File``)
VIEW_TYPE_FILE = 1


@dataclass(frozen=True)
class Annotations:
    """An entity's annotations as Annotations v2 has them: ``{key: {"type": ..., "value": [...]}}``, at an
    etag (a write names the etag it read, else the platform answers 412)."""

    entity_id: str
    etag: str
    annotations: Dict[str, Dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> Annotations:
        what = "annotations"
        found = wire_object(obj, what).get("annotations") or {}
        return cls(
            entity_id=wire_entity_id(_required(obj, "id", what), "id", what),
            etag=_string(obj, "etag", what),
            annotations={str(key): dict(wire_object(value, what)) for key, value in wire_object(found, what).items()},
        )

    def to_wire(self) -> Dict[str, Any]:
        return {"id": self.entity_id, "etag": self.etag, "annotations": self.annotations}

    def text(self, key: str) -> Optional[str]:
        """The first value of the annotation ``key``, as text (None when there is none)."""
        values = (self.annotations.get(key) or {}).get("value")
        first = (values[0] if values else None) if isinstance(values, list) else values  # (a lone value, too)
        return None if first is None else str(first)


@dataclass(frozen=True)
class FileHandleRequest:
    """A file handle and the entity it is reached through (the platform checks access via the entity)."""

    file_handle_id: str
    entity_id: str


@dataclass(frozen=True)
class PresignedUrlAnswer:
    """One row of a ``/fileHandle/batch`` answer: a URL or a failure code."""

    file_handle_id: str
    url: Optional[str] = field(default=None, repr=False)  # signed: never printed
    failure_code: Optional[str] = None
    malformed: Optional[str] = None  # why the row's other fields were refused at the wire boundary

    @classmethod
    def batch_from_wire(cls, obj: Mapping[str, Any]) -> Dict[str, PresignedUrlAnswer]:
        """The rows of a ``BatchFileResult``, keyed by file handle id."""
        rows = wire_object(obj, "a file handle batch answer").get("requestedFiles") or []
        if not isinstance(rows, list):
            raise MalformedAnswerError("the 'requestedFiles' of a file handle batch answer is not a list")
        answers = (cls._row(row) for row in rows)
        return {answer.file_handle_id: answer for answer in answers}

    @classmethod
    def _row(cls, row: Any) -> PresignedUrlAnswer:
        """One row; a row that names its handle but garbles the rest is that handle's failure alone (a row that
        names no handle cannot be told apart: the batch fails)."""
        what = "a file handle batch row"
        handle_id = wire_handle_id(_required(row, "fileHandleId", what), "fileHandleId", what)
        try:
            return cls(
                file_handle_id=handle_id,
                url=_optional_string(row, "preSignedURL", what),
                failure_code=_optional_string(row, "failureCode", what),
            )
        except MalformedAnswerError as exc:
            return cls(file_handle_id=handle_id, malformed=str(exc))


#: a next page token: a string (children pages) or an object (a query's next page)
PageToken = TypeVar("PageToken")


class PageTrail:
    """The page tokens one paged listing (children, query results) has followed, so that a server that repeats a
    token, or sends pages with no rows that still name a next page, ends the listing with a
    :class:`MalformedAnswerError` instead of listing for ever. Every pager calls :meth:`follow` with each page."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.pages = 0
        self._seen: set = set()

    def follow(self, token: Optional[PageToken], *, rows: int) -> Optional[PageToken]:
        """``token`` (the page's next page token, None or empty on the last page) once it is known to lead
        somewhere new; raises when it does not. ``rows``: how many rows the page held."""
        self.pages += 1
        if not token:
            return None
        key = json.dumps(token, sort_keys=True, default=str)
        if key in self._seen:
            raise MalformedAnswerError(
                f"{self.what}: malformed answer: page {self.pages} repeats the next page "
                f"token of an earlier page ({_shown(token)}): it would never end"
            ).spent()
        if rows == 0:
            raise MalformedAnswerError(
                f"{self.what}: malformed answer: page {self.pages} has no rows yet names a "
                "next page: it makes no progress"
            ).spent()
        self._seen.add(key)
        return token


# -- table queries (QueryBundleRequest -> QueryResultBundle, QueryNextPageToken -> QueryResult) --------------------

QUERY_BUNDLE_REQUEST = _MODEL + "table.QueryBundleRequest"
QUERY_RESULTS_PART = 0x1  # the partMask bit of the rows (QueryResultBundle.queryResult)


@dataclass(frozen=True)
class QueryRow:
    """One row of a query's RowSet: ``values`` in the order of the page's columns (strings or None, as sent). For a
    view, ``row_id`` is the entity's number and ``version`` the entity version the row describes."""

    row_id: Optional[int]
    version: Optional[int]
    values: Tuple[Optional[str], ...]


@dataclass(frozen=True)
class QueryPage:
    """One page of a table query's results, and the token of the next page (sent back as is), if any."""

    columns: Tuple[str, ...]
    rows: Tuple[QueryRow, ...]
    next_page_token: Optional[Dict[str, Any]] = None
    column_types: Tuple[Optional[str], ...] = ()  # each column's columnType (STRING, INTEGER, STRING_LIST, ...)

    @classmethod
    def from_bundle(cls, obj: Mapping[str, Any]) -> QueryPage:
        """The first page, from a QueryResultBundle."""
        return cls.from_result(_required(obj, "queryResult", "query result bundle"))

    @classmethod
    def from_result(cls, obj: Mapping[str, Any]) -> QueryPage:
        """A page, from a QueryResult (the first page's is inside the bundle; later pages come bare)."""
        row_set = wire_object(_required(obj, "queryResults", "query result"), "a row set")
        headers = row_set.get("headers") or []
        rows = row_set.get("rows") or []
        if not isinstance(headers, list) or not isinstance(rows, list):
            raise MalformedAnswerError("the headers or rows of a row set are not lists")
        columns = tuple(_string(header, "name", "select column") for header in headers)
        parsed = []
        for row in rows:
            values = wire_object(row, "a row").get("values") or []
            if not isinstance(values, list) or len(values) != len(columns):
                raise MalformedAnswerError(
                    f"a row has {len(values) if isinstance(values, list) else 'no'} values for {len(columns)} columns"
                )
            parsed.append(
                QueryRow(
                    _optional_int(row, "rowId", "row"),
                    _optional_int(row, "versionNumber", "row"),
                    tuple(None if value is None else str(value) for value in values),
                )
            )
        token = obj.get("nextPageToken")
        if token is not None and not isinstance(token, Mapping):
            raise MalformedAnswerError("the nextPageToken of a query result is not an object")
        return cls(
            columns,
            tuple(parsed),
            dict(token) if token else None,
            tuple(_optional_string(header, "columnType", "select column") for header in headers),
        )


# -- the download list (the portal's Download Cart: DownloadListController) ----------------------------------------

DOWNLOAD_PKG = _MODEL + "download."
DOWNLOAD_LIST_QUERY_REQUEST = DOWNLOAD_PKG + "DownloadListQueryRequest"
AVAILABLE_FILES_REQUEST = DOWNLOAD_PKG + "AvailableFilesRequest"
ACTION_REQUIRED_REQUEST = DOWNLOAD_PKG + "ActionRequiredRequest"
FILES_STATISTICS_REQUEST = DOWNLOAD_PKG + "FilesStatisticsRequest"
DOWNLOAD_LIST_MANIFEST_REQUEST = DOWNLOAD_PKG + "DownloadListManifestRequest"


@dataclass(frozen=True)
class DownloadListItem:
    """An item of the cart as the cart keys it: a file and the version it was added at (None: added without one,
    "the current version when downloaded"; only a versionless key removes it)."""

    file_entity_id: str
    version_number: Optional[int] = None

    def to_wire(self) -> Dict[str, Any]:
        body: Dict[str, Any] = {"fileEntityId": self.file_entity_id}
        if self.version_number is not None:
            body["versionNumber"] = self.version_number
        return body


@dataclass(frozen=True)
class DownloadListItemResult:
    """One row of the cart's available files (``DownloadListItemResult``): the item as it was added
    (``version_number`` None: without a version) and what the platform resolved it to now: the file handle of the
    version it means, its size and name, its project."""

    file_entity_id: str
    version_number: Optional[int]
    file_name: str
    file_size_bytes: Optional[int]
    file_handle_id: str
    project_id: Optional[str] = None
    project_name: Optional[str] = None
    added_on: Optional[str] = None
    created_by: Optional[str] = None
    created_on: Optional[str] = None
    is_eligible_for_packaging: Optional[bool] = None

    @property
    def item(self) -> DownloadListItem:
        """The cart's key of this row, as its remove call must name it."""
        return DownloadListItem(self.file_entity_id, self.version_number)

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> DownloadListItemResult:
        what = "a download list item"
        eligible = wire_object(obj, what).get("isEligibleForPackaging")
        return cls(
            file_entity_id=wire_entity_id(_required(obj, "fileEntityId", what), "fileEntityId", what),
            version_number=_optional_version(obj, "versionNumber", what),
            file_name=_string(obj, "fileName", what),
            file_size_bytes=_optional_int(obj, "fileSizeBytes", what),
            file_handle_id=wire_handle_id(_required(obj, "fileHandleId", what), "fileHandleId", what),
            project_id=_optional_entity_id(obj, "projectId", what),
            project_name=_optional_string(obj, "projectName", what),
            added_on=_optional_string(obj, "addedOn", what),
            created_by=_optional_string(obj, "createdBy", what),
            created_on=_optional_string(obj, "createdOn", what),
            is_eligible_for_packaging=eligible if isinstance(eligible, bool) else None,
        )


@dataclass(frozen=True)
class ActionRequired:
    """One ``ActionRequiredCount``: what the user must do on the portal first (``MeetAccessRequirement``: accept
    or request an access requirement, ``RequestDownload``: ask for download access to the benefactor), for how
    many files of the cart."""

    kind: str  # the action's concreteType without its package: MeetAccessRequirement, RequestDownload
    target: str  # the access requirement's id, or the benefactor's (synNNN)
    count: int

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> ActionRequired:
        what = "an action required count"
        action = wire_object(_required(obj, "action", what), "an action")
        kind = _string(action, "concreteType", "an action").rsplit(".", 1)[-1]
        if "accessRequirementId" in action:
            target = str(wire_whole_number(action["accessRequirementId"], "accessRequirementId", "an action"))
        else:
            target = "syn" + str(
                wire_whole_number(_required(action, "benefactorId", "an action"), "benefactorId", what)
            )
        return cls(kind, target, wire_whole_number(_required(obj, "count", what), "count", what))


@dataclass(frozen=True)
class DownloadListPage:
    """One answer of a download list query: a page of available files or of actions required and the next page's
    token, or (statistics) the number of files available."""

    files: Tuple[DownloadListItemResult, ...] = ()
    actions: Tuple[ActionRequired, ...] = ()
    next_page_token: Optional[str] = None
    available: int = 0  # a FilesStatisticsResponse's numberOfFilesAvailableForDownload
    requiring_action: int = 0  # and its numberOfFilesRequiringAction (the cart's items less the available ones)

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> DownloadListPage:
        details = wire_object(_required(obj, "responseDetails", "a download list query answer"), "response details")
        kind = _string(details, "concreteType", "response details").rsplit(".", 1)[-1]
        rows = details.get("page") or []
        if not isinstance(rows, list):
            raise MalformedAnswerError("the 'page' of a download list query answer is not a list")
        token = _optional_string(details, "nextPageToken", "response details")
        if kind == "AvailableFilesResponse":
            return cls(files=tuple(DownloadListItemResult.from_wire(row) for row in rows), next_page_token=token)
        if kind == "ActionRequiredResponse":
            return cls(actions=tuple(ActionRequired.from_wire(row) for row in rows), next_page_token=token)
        if kind == "FilesStatisticsResponse":
            what = "files statistics"
            count = _required(details, "numberOfFilesAvailableForDownload", what)
            blocked = details.get("numberOfFilesRequiringAction") or 0
            return cls(
                available=wire_whole_number(count, "numberOfFilesAvailableForDownload", what),
                requiring_action=wire_whole_number(blocked, "numberOfFilesRequiringAction", what),
            )
        raise MalformedAnswerError(f"a download list query answered {kind!r}, not the kind asked for")


def manifest_handle_id(obj: Mapping[str, Any]) -> str:
    """The ``resultFileHandleId`` of a ``DownloadListManifestResponse``: the cart's manifest CSV."""
    what = "a download list manifest answer"
    return wire_handle_id(_required(obj, "resultFileHandleId", what), "resultFileHandleId", what)
