"""Enums whose members users name by string (``if_collision="keep.both"``, ``manifest="root"``)."""

from __future__ import annotations

import enum
from typing import Type, TypeVar

from synclient.errors import ConfigError

C = TypeVar("C", bound="Choice")


class Choice(enum.Enum):
    """An enum parsed from its member or its value, with a one-line error naming the valid values."""

    @classmethod
    def parse(cls: Type[C], value: object, *, option: str) -> C:
        if isinstance(value, cls):
            return value
        for member in cls:
            if member.value == value:
                return member
        raise ConfigError(f"{option} must be one of {', '.join(str(m.value) for m in cls)}, not {value!r}")
