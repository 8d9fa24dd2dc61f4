"""Synapse's rule for entity names, applied where the emulator creates or renames an entity.

The facts, from Sage-Bionetworks/Synapse-Repository-Services:

- ``lib/jdomodels/src/main/java/org/sagebionetworks/repo/model/jdo/NameValidation.java`` (``validateName``): the
  name is trimmed (Java's ``String.trim``: every character up to U+0020 at either end) and the trimmed name is what
  is stored; an empty one is refused ("Name cannot be only whitespace or empty string"), so is one longer than 256
  characters ("Name length cannot be longer than 256 characters."), and so is one that does not match
  ``VALID_ENTITY_NAME_REGEX`` ("Invalid Name: '%s'. Names may only contain: letters, numbers, spaces, underscores,
  hyphens, periods, plus signs, apostrophes, and parentheses").
- ``lib/lib-shared-models/src/main/java/org/sagebionetworks/repo/model/util/ModelConstants.java``:
  ``VALID_ENTITY_NAME_REGEX = "^[a-zA-Z0-9,_. \\-+()']+"`` (ASCII letters and digits, space and ``,_.-+()'``;
  ``.`` and ``..`` are valid names).
- ``services/repository-managers/src/main/java/org/sagebionetworks/repo/manager/NodeManagerImpl.java``
  (``validateNode``, on create and on update): every entity name goes through it; the IllegalArgumentException
  is a 400 whose ``reason`` is that message.

A file handle's ``fileName`` is not an entity name: ``POST /externalFileHandle`` stores any (``FileHandleManagerImpl
.createExternalFileHandle``), so unicode and other characters belong there. :attr:`NameRule.UNCHECKED` is the
documented escape for tests of a *hostile* server, one that answers names Synapse would never store.
"""

from __future__ import annotations

import enum
import re

#: NameValidation.MAX_NAME_CHARS
MAX_NAME_CHARS = 256
_ALLOWED = re.compile(r"[a-zA-Z0-9,_. \-+()']+")
#: what Java's String.trim removes at either end
_TRIMMED = "".join(chr(code) for code in range(0x21))


class NameRule(enum.Enum):
    """Which entity names the emulator accepts."""

    SYNAPSE = "synapse"  # Synapse's rule (the default): trimmed, then refused as Synapse refuses it
    UNCHECKED = "unchecked"  # not Synapse: a hostile server that stores any non-empty name as given

    @classmethod
    def parse(cls, value: object) -> NameRule:
        if isinstance(value, cls):
            return value
        for member in cls:
            if member.value == value:
                return member
        raise ValueError(f'names must be "synapse" or "unchecked", got {value!r}')


class InvalidName(ValueError):
    """A name Synapse refuses (its message is Synapse's reason)."""


def synapse_name(name: str) -> str:
    """The name Synapse stores for ``name`` (trimmed), or :class:`InvalidName` with Synapse's reason."""
    trimmed = name.strip(_TRIMMED)
    if trimmed == "":
        raise InvalidName("Name cannot be only whitespace or empty string")
    if len(trimmed.encode("utf-16-le")) // 2 > MAX_NAME_CHARS:  # Java counts UTF-16 code units
        raise InvalidName(f"Name length cannot be longer than {MAX_NAME_CHARS} characters.")
    if not _ALLOWED.fullmatch(trimmed):
        raise InvalidName(
            f"Invalid Name: '{trimmed}'. Names may only contain: letters, numbers, spaces, "
            "underscores, hyphens, periods, plus signs, apostrophes, and parentheses"
        )
    return trimmed


def entity_name(name: str, rule: NameRule = NameRule.SYNAPSE) -> str:
    """The name to store under ``rule``: Synapse's (:func:`synapse_name`), or, unchecked, any non-empty name."""
    if rule is NameRule.UNCHECKED:
        if not isinstance(name, str) or name == "":
            raise InvalidName("a name must be a non-empty string")
        return name
    return synapse_name(name)
