"""Dataclasses for the platform objects synclient uses, parsed from the wire JSON."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional

_MODEL = "org.sagebionetworks.repo.model."


class EntityType(enum.Enum):
    """Entity kinds, valued by their ``concreteType`` on the wire."""

    PROJECT = _MODEL + "Project"
    FOLDER = _MODEL + "Folder"
    FILE = _MODEL + "FileEntity"
    LINK = _MODEL + "Link"
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
        version = obj.get("versionNumber")
        return cls(id=obj["id"], name=obj["name"], type=EntityType.from_wire(obj.get("type")),
                   version_number=int(version) if version is not None else None,
                   modified_on=obj.get("modifiedOn"))


@dataclass(frozen=True)
class ChildrenPage:
    headers: List[EntityHeader]
    next_page_token: Optional[str]


@dataclass(frozen=True)
class FileHandle:
    """The stored bytes behind a file entity version."""

    id: str
    content_size: Optional[int]
    content_md5: Optional[str]
    file_name: Optional[str] = None
    content_type: Optional[str] = None
    concrete_type: Optional[str] = None

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "FileHandle":
        size = obj.get("contentSize")
        return cls(id=str(obj["id"]), content_size=int(size) if size is not None else None,
                   content_md5=obj.get("contentMd5"), file_name=obj.get("fileName"),
                   content_type=obj.get("contentType"), concrete_type=obj.get("concreteType"))


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
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> "Entity":
        target = obj.get("linksTo") or {}
        version = obj.get("versionNumber")
        target_version = target.get("targetVersionNumber")
        handle = obj.get("dataFileHandleId")
        return cls(id=obj["id"], name=obj["name"], type=EntityType.from_wire(obj.get("concreteType")),
                   parent_id=obj.get("parentId"),
                   version_number=int(version) if version is not None else None,
                   data_file_handle_id=str(handle) if handle is not None else None,
                   link_target_id=target.get("targetId"),
                   link_target_version=int(target_version) if target_version is not None else None,
                   raw=dict(obj))


@dataclass(frozen=True)
class FileBundle:
    """What one ``bundle2`` call tells about a file version: the entity and its data file handle."""

    entity: Entity
    file_handle: Optional[FileHandle]
    annotations: Dict[str, Any] = field(default_factory=dict, repr=False)


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
