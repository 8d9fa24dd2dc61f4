"""Dataclasses for the platform objects synclient uses, parsed from the wire JSON, and the entity id syntax.

An answer that lacks a field the API documents as always present raises :class:`MalformedAnswerError` (never a
bare ``KeyError``); :class:`~synclient.client.Platform` adds which call and endpoint gave it.
"""
from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from synclient.errors import ConfigError, MalformedAnswerError

_MODEL = "org.sagebionetworks.repo.model."

#: ``syn123`` or ``syn123.4``: ASCII digits only (``str.isdigit`` also accepts "²" and "١٢"), at most 19 of them
#: (Synapse ids are 64-bit), ``syn`` in any case.
_ENTITY_ID = re.compile(r"(?i:syn)([0-9]{1,19})(?:\.([0-9]{1,19}))?")


def parse_entity_id(text: str) -> Tuple[str, Optional[int]]:
    """``"syn123"`` -> ("syn123", None); ``"syn123.4"`` -> ("syn123", 4). Surrounding whitespace is ignored; anything
    else that is not ``synNNN`` or ``synNNN.VERSION`` is a :class:`ConfigError`."""
    match = _ENTITY_ID.fullmatch(str(text).strip())
    if match is None:
        shown = str(text) if len(str(text)) <= 40 else str(text)[:40] + "..."
        raise ConfigError(f"not a platform id: {shown!r} (expected synNNN or synNNN.VERSION, ASCII digits)")
    number, version = match.groups()
    return "syn" + number, int(version) if version is not None else None


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


def _optional_int(obj: Mapping[str, Any], key: str, what: str) -> Optional[int]:
    value = wire_object(obj, what).get(key)
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise MalformedAnswerError(f"the {key!r} of {what} is not a whole number") from None


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
    def from_wire(cls, concrete_type: Optional[str]) -> "EntityType":
        for member in cls:
            if member.value and member.value == concrete_type:
                return member
        return cls.OTHER

    @property
    def children_filter(self) -> str:
        """The name used in ``includeTypes`` of a children request."""
        return {EntityType.FOLDER: "folder", EntityType.FILE: "file", EntityType.LINK: "link",
                EntityType.PROJECT: "project"}.get(self, "")

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
        return {EntityType.DATASET_COLLECTION: "dataset collection", EntityType.ENTITY_VIEW: "file view",
                EntityType.OTHER: "other entity"}.get(self, self.name.lower())

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
    def from_wire(cls, obj: Mapping[str, Any]) -> "EntityHeader":
        what = "entity header"
        return cls(id=_required(obj, "id", what), name=_required(obj, "name", what),
                   type=EntityType.from_wire(obj.get("type")), version_number=_optional_int(obj, "versionNumber", what),
                   modified_on=obj.get("modifiedOn"))


@dataclass(frozen=True)
class ChildrenPage:
    headers: List[EntityHeader]
    next_page_token: Optional[str]

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "ChildrenPage":
        rows = wire_object(obj, "a children page").get("page") or []
        if not isinstance(rows, list):
            raise MalformedAnswerError("the 'page' of a children page is not a list")
        return cls(headers=[EntityHeader.from_wire(row) for row in rows], next_page_token=obj.get("nextPageToken"))


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
    def from_wire(cls, obj: Mapping[str, Any]) -> "FileHandle":
        what = "file handle"
        return cls(id=str(_required(obj, "id", what)), content_size=_optional_int(obj, "contentSize", what),
                   content_md5=obj.get("contentMd5"), file_name=obj.get("fileName"),
                   content_type=obj.get("contentType"), concrete_type=obj.get("concreteType"), raw=dict(obj))


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
    def from_wire(cls, obj: Mapping[str, Any]) -> "Entity":
        what = "entity"
        target = wire_object(wire_object(obj, what).get("linksTo") or {}, "the linksTo of an entity")
        handle = obj.get("dataFileHandleId")
        return cls(id=_required(obj, "id", what), name=_required(obj, "name", what),
                   type=EntityType.from_wire(obj.get("concreteType")), parent_id=obj.get("parentId"),
                   version_number=_optional_int(obj, "versionNumber", what),
                   data_file_handle_id=str(handle) if handle is not None else None,
                   link_target_id=target.get("targetId"),
                   link_target_version=_optional_int(target, "targetVersionNumber", "the linksTo of an entity"),
                   items=_entity_refs(obj.get("items"), "the items of an entity"), raw=dict(obj))


def _entity_refs(rows: Any, what: str) -> Tuple[Tuple[str, Optional[int]], ...]:
    """``[{"entityId", "versionNumber"}, ...]`` (EntityRef) as (id, version) pairs."""
    if rows is None:
        return ()
    if not isinstance(rows, list):
        raise MalformedAnswerError(f"{what} is not a list")
    return tuple((str(_required(row, "entityId", "an item (EntityRef)")),
                  _optional_int(row, "versionNumber", "an item (EntityRef)")) for row in rows)


@dataclass(frozen=True)
class FileBundle:
    """What one ``bundle2`` call tells about a file version: the entity and its data file handle."""

    entity: Entity
    file_handle: Optional[FileHandle]
    annotations: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "FileBundle":
        entity = Entity.from_wire(_required(obj, "entity", "bundle"))
        rows = obj.get("fileHandles") or []
        if not isinstance(rows, list):
            raise MalformedAnswerError("the 'fileHandles' of a bundle is not a list")
        handles = [FileHandle.from_wire(row) for row in rows]
        data_handle = next((h for h in handles if h.id == entity.data_file_handle_id), None)
        return cls(entity=entity, file_handle=data_handle, annotations=obj.get("annotations") or {})


def user_profile_from_wire(obj: Mapping[str, Any]) -> Dict[str, Any]:
    """A ``UserProfile`` as a plain dict, once it is known to name its user (``ownerId``)."""
    _required(obj, "ownerId", "user profile")
    return dict(obj)


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

    @classmethod
    def batch_from_wire(cls, obj: Mapping[str, Any]) -> Dict[str, "PresignedUrlAnswer"]:
        """The rows of a ``BatchFileResult``, keyed by file handle id."""
        rows = wire_object(obj, "a file handle batch answer").get("requestedFiles") or []
        if not isinstance(rows, list):
            raise MalformedAnswerError("the 'requestedFiles' of a file handle batch answer is not a list")
        answers = (cls(file_handle_id=str(_required(row, "fileHandleId", "a file handle batch row")),
                       url=row.get("preSignedURL"), failure_code=row.get("failureCode")) for row in rows)
        return {answer.file_handle_id: answer for answer in answers}


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
    def from_bundle(cls, obj: Mapping[str, Any]) -> "QueryPage":
        """The first page, from a QueryResultBundle."""
        return cls.from_result(_required(obj, "queryResult", "query result bundle"))

    @classmethod
    def from_result(cls, obj: Mapping[str, Any]) -> "QueryPage":
        """A page, from a QueryResult (the first page's is inside the bundle; later pages come bare)."""
        row_set = wire_object(_required(obj, "queryResults", "query result"), "a row set")
        headers = row_set.get("headers") or []
        rows = row_set.get("rows") or []
        if not isinstance(headers, list) or not isinstance(rows, list):
            raise MalformedAnswerError("the headers or rows of a row set are not lists")
        columns = tuple(str(_required(header, "name", "select column")) for header in headers)
        parsed = []
        for row in rows:
            values = wire_object(row, "a row").get("values") or []
            if not isinstance(values, list) or len(values) != len(columns):
                raise MalformedAnswerError(f"a row has {len(values) if isinstance(values, list) else 'no'} values "
                                           f"for {len(columns)} columns")
            parsed.append(QueryRow(_optional_int(row, "rowId", "row"), _optional_int(row, "versionNumber", "row"),
                                   tuple(None if value is None else str(value) for value in values)))
        token = obj.get("nextPageToken")
        if token is not None and not isinstance(token, Mapping):
            raise MalformedAnswerError("the nextPageToken of a query result is not an object")
        return cls(columns, tuple(parsed), dict(token) if token else None,
                   tuple(header.get("columnType") for header in headers))
