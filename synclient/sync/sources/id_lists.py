"""Lists of entity ids as users bring them: on the command line, one per line in a file, or a column of a table.

A file is read as a table when its first line (after ``#`` comments) has a tab or a comma: then the ids are its
``id`` (or ``ID``, ``entityId``) column, as in a sync manifest (``SYNAPSE_METADATA_MANIFEST.tsv``,
``manifest.csv``) or a saved query result. Otherwise it is one id per line; ``#`` starts a comment, blank lines are
skipped. Ids may carry a version (``syn123.4``). A bad id is a :class:`~synclient.errors.ConfigError` naming the
file and line.
"""

from __future__ import annotations

import csv
import io
import sys
from dataclasses import dataclass
from typing import Iterable, List, Optional, TextIO

from synclient.errors import ConfigError, LocalIOError
from synclient.platform.models import parse_entity_id

#: the column names that hold ids, in the order they are looked for
ID_COLUMNS = ("id", "ID", "entityId")
STDIN = "-"


@dataclass(frozen=True)
class EntityRef:
    """An entity id and, when one was named, a version (``syn123.4``)."""

    entity_id: str
    version: Optional[int] = None

    def __post_init__(self) -> None:
        """The id canonical however the ref was made (``EntityRef("SYN007")`` is syn7): the platform's answers name
        it so, and one entity is one ref. An id that is not one is a :class:`ConfigError`."""
        entity_id, version = parse_entity_id(self.entity_id)
        if version is not None:
            raise ConfigError(f"{self.entity_id!r}: give the version apart (EntityRef(id, version))")
        object.__setattr__(self, "entity_id", entity_id)

    @classmethod
    def parse(cls, text: str) -> EntityRef:
        return cls(*parse_entity_id(text))

    def __str__(self) -> str:
        return self.entity_id if self.version is None else f"{self.entity_id}.{self.version}"


def parse_refs(texts: Iterable[str]) -> List[EntityRef]:
    """Each text an id (``syn1``, ``syn2.3``); a bad one is a ConfigError naming it."""
    return [EntityRef.parse(text) for text in texts]


def read_id_file(name: str, *, stdin: Optional[TextIO] = None) -> List[EntityRef]:
    """The ids in file ``name`` (``-``: standard input), as the module docstring describes."""
    where = "standard input" if name == STDIN else name
    try:
        if name == STDIN:
            text = (stdin or sys.stdin).read()
        else:
            with open(name, encoding="utf-8-sig", newline="") as handle:
                text = handle.read()
    except OSError as exc:
        raise LocalIOError.from_exception(f"cannot read the id list {where}", exc) from None
    except UnicodeDecodeError:
        raise ConfigError(f"{where} is not a UTF-8 text file of ids") from None
    refs = ids_from_text(text, where=where)
    if not refs:
        raise ConfigError(f"{where} holds no ids")
    return refs


def ids_from_text(text: str, *, where: str) -> List[EntityRef]:
    lines = text.lstrip("\ufeff").splitlines()
    first = next((number for number, line in enumerate(lines) if _content(line)), None)
    if first is None:
        return []
    head = _content(lines[first])
    if "\t" in head or "," in head or head in ID_COLUMNS:  # a table: a manifest, a query result, an id column
        return _ids_from_table(lines, first, where=where, delimiter="\t" if "\t" in head else ",")
    return [_ref_at(_content(line), where, number) for number, line in enumerate(lines, start=1) if _content(line)]


def _content(line: str) -> str:
    """A line without its comment ('#' to the end) and surrounding blanks."""
    return line.split("#", 1)[0].strip()


def _ids_from_table(lines: List[str], header: int, *, where: str, delimiter: str) -> List[EntityRef]:
    """The id column of the table whose header is ``lines[header]``. Comment lines are blanked, not dropped, so
    the line numbers in messages are the file's.

    A tab-separated file is read unquoted (``csv.QUOTE_NONE``), as synapseutils and synclient write the manifest:
    a ``"`` in an annotation is a character like any other (read as a quote, it swallowed the rows up to the next
    one, and their ids with them). A comma-separated file is quoted CSV, read strictly. A row that cannot be read,
    or that stops before the id column, is a :class:`ConfigError` naming its line: an id is never skipped unsaid."""
    rows = ["" if line.lstrip().startswith("#") else line for line in lines[header:]]
    tsv = delimiter == "\t"
    text = io.StringIO("\n".join(rows))
    reader = (
        csv.reader(text, delimiter=delimiter, quoting=csv.QUOTE_NONE)
        if tsv
        else csv.reader(text, delimiter=delimiter, strict=True)
    )
    refs: List[EntityRef] = []
    try:
        fields = [name.strip() for name in next(reader, [])]
        column = next((name for name in ID_COLUMNS if name in fields), None)
        if column is None:
            raise ConfigError(f"{where}: a table of ids needs an 'id' column (its columns: {', '.join(fields)})")
        index = fields.index(column)
        for row in reader:
            line = header + reader.line_num
            if not any(cell.strip() for cell in row):
                continue  # a blank or comment line
            if len(row) <= index:
                raise ConfigError(
                    f"{where}, line {line}: the row has {len(row)} of the header's {len(fields)} "
                    f"fields, so no {column!r} value"
                )
            value = row[index].strip()
            if value:
                refs.append(_ref_at(value, where, line))
    except csv.Error as exc:
        kind = "tab-separated values" if tsv else "CSV"
        raise ConfigError(f"{where}, line {header + reader.line_num}: cannot be read as {kind} ({exc})") from None
    return refs


def _ref_at(text: str, where: str, line: int) -> EntityRef:
    try:
        return EntityRef.parse(text)
    except ConfigError as exc:
        raise ConfigError(f"{where}, line {line}: {exc}") from None
