"""Lists of entity ids as users bring them: on the command line, one per line in a file, or a column of a table.

A file is read as a table when its first line (after ``#`` comments) has a tab or a comma: then the ids are its
``id`` (or ``ID``, ``entityId``) column, as in a sync manifest (``SYNAPSE_METADATA_MANIFEST.tsv``,
``manifest.csv``), the download cart's manifest or a saved query result. Otherwise it is one id per line; ``#``
starts a comment, blank lines are skipped. Ids may carry a version (``syn123.4``). A bad id is a
:class:`~synclient.errors.ConfigError` naming the file and line.

A table replays at its versions: a version column (:data:`VERSION_COLUMNS`) pins its row's version (a dotted id
that names another version is a ConfigError naming the line), and an MD5 or size column (:data:`MD5_COLUMNS`,
:data:`SIZE_COLUMNS`) is what the row expects of the file: :meth:`ListedContent.mismatch` fails that file alone
(:class:`ListMismatchError`) when the platform's file handle at that version says otherwise, before its download.
Column names are matched exactly (case included); the first of each tuple that the header has is read. In a sync
manifest (it has a ``synapseStore`` column) the other columns are annotations, so there only ``versionNumber``,
``dataFileMD5Hex`` and ``dataFileSizeBytes`` are read: an annotation ``version`` or ``size`` is the user's.
"""

from __future__ import annotations

import csv
import io
import sys
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, TextIO, Tuple

from synclient.errors import ConfigError, LocalIOError, SynclientError
from synclient.platform.models import FileHandle, parse_entity_id

#: the column names that hold ids, in the order they are looked for
ID_COLUMNS = ("id", "ID", "entityId")
#: the columns that pin a row's version (a cart manifest's ``versionNumber``; a view query's ``currentVersion``)
VERSION_COLUMNS = ("versionNumber", "version", "currentVersion")
#: the columns that hold the MD5 a row expects of its file's content (the cart manifest's, a view's: ``dataFileMD5Hex``)
MD5_COLUMNS = ("dataFileMD5Hex", "md5")
#: the columns that hold the size in bytes a row expects of its file's content
SIZE_COLUMNS = ("dataFileSizeBytes", "size", "contentSize")
#: a column only a sync manifest (synapseutils' TSV, synclient's CSV) has: there only the first name of each tuple
#: above is read, the others being annotation keys
SYNC_MANIFEST_COLUMN = "synapseStore"
STDIN = "-"


class ListMismatchError(SynclientError):
    """The platform's file at the version a list names is not the content the list recorded (its MD5 or size):
    that file fails, the others go on."""


@dataclass(frozen=True)
class ListedContent:
    """What a list's row expects of its file's content, and the columns that said so (for the message)."""

    md5: Optional[str] = None
    size: Optional[int] = None
    md5_column: str = "md5"
    size_column: str = "size"

    def mismatch(self, ref: str, handle: FileHandle) -> Optional[ListMismatchError]:
        """Why the platform's handle is not what the row expects (``ref``: the file, ``syn123.4``), or None. A
        value the platform does not state is not held against it."""
        if self.md5 is not None and handle.content_md5 and handle.content_md5.lower() != self.md5:
            return ListMismatchError(
                f"{ref}: the list expects {self.md5_column} {self.md5} but the platform has {handle.content_md5}"
            )
        if self.size is not None and handle.content_size is not None and handle.content_size != self.size:
            return ListMismatchError(
                f"{ref}: the list expects {self.size_column} {self.size} but the platform has {handle.content_size}"
            )
        return None


#: what a list's rows expect of their files: (entity id, the version the row names or None) -> the content
ExpectedContent = Dict[Tuple[str, Optional[int]], ListedContent]


@dataclass(frozen=True)
class EntityRef:
    """An entity id and, when one was named, a version (``syn123.4``)."""

    entity_id: str
    version: Optional[int] = None
    #: what a list's row expects of the file's content (not part of the ref's identity)
    expected: Optional[ListedContent] = field(default=None, compare=False, repr=False)

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
        columns = _RowColumns.of(fields)
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
                refs.append(columns.pinned(_ref_at(value, where, line), row, where=f"{where}, line {line}"))
    except csv.Error as exc:
        kind = "tab-separated values" if tsv else "CSV"
        raise ConfigError(f"{where}, line {header + reader.line_num}: cannot be read as {kind} ({exc})") from None
    return refs


def _ref_at(text: str, where: str, line: int) -> EntityRef:
    try:
        return EntityRef.parse(text)
    except ConfigError as exc:
        raise ConfigError(f"{where}, line {line}: {exc}") from None


@dataclass(frozen=True)
class _RowColumns:
    """Where a table's version, MD5 and size columns are (each the first of its names the header has), if any."""

    version: Optional[str]
    md5: Optional[str]
    size: Optional[str]
    fields: Sequence[str]

    @classmethod
    def of(cls, fields: Sequence[str]) -> _RowColumns:
        # a sync manifest's other columns are annotations: there a plain 'version' or 'size' is the user's key
        manifest = SYNC_MANIFEST_COLUMN in fields

        def first(names: Sequence[str]) -> Optional[str]:
            return next((name for name in names[: 1 if manifest else None] if name in fields), None)

        return cls(first(VERSION_COLUMNS), first(MD5_COLUMNS), first(SIZE_COLUMNS), fields)

    def _cell(self, row: Sequence[str], column: Optional[str]) -> str:
        if column is None:
            return ""
        index = self.fields.index(column)
        return row[index].strip() if index < len(row) else ""

    def pinned(self, ref: EntityRef, row: Sequence[str], *, where: str) -> EntityRef:
        """``ref`` at the row's version, with what the row expects of its content. A cell that is no version, MD5
        or size, or a version that disagrees with the dotted id's, is a ConfigError at ``where``."""
        version = ref.version
        text = self._cell(row, self.version)
        if text:
            number = _whole(text, self.version, where)
            if number < 1:
                raise ConfigError(f"{where}: {self.version} {text!r} is not a version (they start at 1)")
            if version is not None and version != number:
                raise ConfigError(f"{where}: the id names version {version} but {self.version} says {number}")
            version = number
        md5 = self._cell(row, self.md5).lower() or None
        if md5 is not None and (len(md5) != 32 or any(char not in "0123456789abcdef" for char in md5)):
            raise ConfigError(f"{where}: {self.md5} {md5!r} is not an MD5 (32 hexadecimal digits)")
        size_text = self._cell(row, self.size)
        size = _whole(size_text, self.size, where) if size_text else None
        expected = (
            ListedContent(md5, size, md5_column=self.md5 or "md5", size_column=self.size or "size")
            if md5 is not None or size is not None
            else None
        )
        return EntityRef(ref.entity_id, version, expected)


def _whole(text: str, column: Optional[str], where: str) -> int:
    if not text.isdigit() or not text.isascii():
        raise ConfigError(f"{where}: {column} {text!r} is not a whole number")
    return int(text)
