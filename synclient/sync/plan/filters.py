"""Include/exclude glob patterns on the remote relative path, applied before any per-file call.

Patterns use ``fnmatch`` syntax on the '/'-separated path relative to the sync root (``*`` also crosses '/'):
``data/*.csv``, ``*.bam``, ``raw/*``. A pattern without '/' also matches a file's or folder's own name, so
``*.tmp`` or ``scratch`` work at any depth. A file is synced when it matches some include pattern (or there are
none) and no exclude pattern. Folders that an exclude pattern covers entirely, or below which no include pattern
can match anything, are neither listed nor created.

Size and age filters (:class:`SizeAgeFilter`, rclone's ``--min-size``/``--max-size``/``--min-age``/``--max-age``)
judge a file by its size and its entity's ``modifiedOn`` (what rclone calls a file's age is its modification time;
on the platform the file entity's last change), as soon as the run knows them: the listing row (``modifiedOn``), a
view's or the cart's row (size, ``modifiedOn``), else the file's bundle; never after a download started. A file
they leave out is neither downloaded nor deleted (as a file the patterns leave out).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Iterable, Optional, Tuple, Union

from synclient.errors import ConfigError


def _matches(pattern: str, rel_path: str) -> bool:
    if fnmatchcase(rel_path, pattern):
        return True
    return "/" not in pattern and fnmatchcase(rel_path.rsplit("/", 1)[-1], pattern)


def _may_match_below(pattern: str, folder: str) -> bool:
    """Could ``pattern`` match some path below ``folder``? Conservative: only the pattern's literal start (up to its
    first wildcard) is compared, since ``*`` crosses '/' and anything after it may match."""
    if "/" not in pattern:
        return True  # matches a name at any depth
    cut = min((i for i in (pattern.find(c) for c in "*?[") if i >= 0), default=len(pattern))
    literal, prefix = pattern[:cut], folder + "/"
    return prefix.startswith(literal) or literal.startswith(prefix)


@dataclass(frozen=True)
class PathFilter:
    include: Tuple[str, ...] = ()
    exclude: Tuple[str, ...] = ()

    @classmethod
    def build(cls, include: Iterable[str] = (), exclude: Iterable[str] = ()) -> PathFilter:
        as_tuple = lambda p: (p,) if isinstance(p, str) else tuple(p or ())  # noqa: E731
        return cls(include=as_tuple(include), exclude=as_tuple(exclude))

    @property
    def active(self) -> bool:
        return bool(self.include or self.exclude)

    def wants_file(self, rel_path: str) -> bool:
        if self.include and not any(_matches(p, rel_path) for p in self.include):
            return False
        if any(_matches(p, rel_path) for p in self.exclude):
            return False
        parts = rel_path.split("/")[:-1]
        return not any(self.prunes_folder("/".join(parts[:i])) for i in range(1, len(parts) + 1))

    def prunes_folder(self, rel_path: str) -> bool:
        """True when no file below this folder can be wanted (so listing it is pointless): an exclude pattern
        covers all of it, or no include pattern can match anything below it."""
        below = rel_path + "/\x00"  # stands for "anything below": matched only by patterns ending in '*'
        name = rel_path.rsplit("/", 1)[-1]
        if any(("/" not in p and fnmatchcase(name, p)) or fnmatchcase(below, p) for p in self.exclude):
            return True
        return bool(self.include) and not any(_may_match_below(p, rel_path) for p in self.include)


#: rclone's duration units (``M`` a month of 30 days, ``y`` a year of 365 days, as rclone counts them)
_AGE_UNITS = {
    "ms": dt.timedelta(milliseconds=1),
    "s": dt.timedelta(seconds=1),
    "m": dt.timedelta(minutes=1),
    "h": dt.timedelta(hours=1),
    "d": dt.timedelta(days=1),
    "w": dt.timedelta(weeks=1),
    "M": dt.timedelta(days=30),
    "y": dt.timedelta(days=365),
}
_AGE_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|s|m|h|d|w|M|y)")
_BARE_NUMBER = re.compile(r"\d+(?:\.\d*)?|\.\d+")
#: the absolute forms rclone accepts (a date alone is its midnight); without a zone they are local time
_DATE_FORMATS = ("%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S.%f")

Age = Union[str, dt.timedelta, dt.datetime]


def parse_age(value: Age, *, option: str = "age") -> Union[dt.timedelta, dt.datetime]:
    """rclone's age: a duration (``30m``, ``2h``, ``7d``, ``1w``, ``1M``, ``1y``, ``1h30m``; a bare number is
    seconds) as a timedelta, or a moment (``2026-01-01``, ``2026-01-01T10:00:00``, with a zone or not: local time)
    as an aware datetime. A bad one is a one-line :class:`~synclient.errors.ConfigError`."""
    if isinstance(value, dt.datetime):
        return value if value.tzinfo is not None else value.astimezone()
    if isinstance(value, dt.timedelta):
        return value
    text = str(value).strip()
    if _BARE_NUMBER.fullmatch(text):
        return dt.timedelta(seconds=float(text))
    if text and _AGE_PART.sub("", text) == "":
        return sum((float(n) * _AGE_UNITS[u] for n, u in _AGE_PART.findall(text)), dt.timedelta())
    moment = _moment_of(text)
    if moment is None:
        raise ConfigError(
            f"{option}: not an age: {text!r} (a duration: 30m, 2h, 7d, 1w, 1M, 1y; or a date: 2026-01-01, "
            "2026-01-01T10:00:00)"
        )
    return moment


def _moment_of(text: str) -> Optional[dt.datetime]:
    for form in _DATE_FORMATS:
        try:
            return dt.datetime.strptime(text, form).astimezone()  # (naive: local time)
        except ValueError:
            pass
    try:
        moment = dt.datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.astimezone()


def modified_moment(value: object) -> Optional[dt.datetime]:
    """A ``modifiedOn`` as the platform gives one: ISO 8601 (an entity, a listing row, the cart's manifest) or epoch
    milliseconds (a view's DATE cell); None when there is none or it is not one."""
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)) or (isinstance(value, str) and value.strip().isdigit()):
        return dt.datetime.fromtimestamp(int(value) / 1000, tz=dt.timezone.utc)
    return _moment_of(str(value).strip()) if isinstance(value, str) else None


def cutoff(age: Union[dt.timedelta, dt.datetime], now: dt.datetime) -> dt.datetime:
    """The moment an age names: ``now`` less a duration, or the date itself."""
    return now - age if isinstance(age, dt.timedelta) else age


@dataclass(frozen=True)
class SizeAgeFilter:
    """rclone's size and age filters, bounds included (rclone's: ``--min-size 1k`` keeps a file of 1024 bytes,
    ``--max-age 7d`` one modified exactly 7 days before the run started). ``modified_after`` comes from
    ``--max-age`` (newer files only), ``modified_before`` from ``--min-age`` (older files only). A file whose handle
    records no size is left out by ``min_size`` and kept by ``max_size`` (rclone's unknown size, -1); one whose
    ``modifiedOn`` is unknown passes the age filters."""

    min_size: Optional[int] = None
    max_size: Optional[int] = None
    modified_after: Optional[dt.datetime] = None
    modified_before: Optional[dt.datetime] = None

    @property
    def active(self) -> bool:
        return self.judges_size or self.judges_age

    @property
    def judges_size(self) -> bool:
        return self.min_size is not None or self.max_size is not None

    @property
    def judges_age(self) -> bool:
        return self.modified_after is not None or self.modified_before is not None

    def refuses_known(self, *, size: Optional[int] = None, modified_on: object = None) -> bool:
        """True when what is known already leaves the file out (None: not known yet, not judged)."""
        if size is not None and not self._size_fits(size):
            return True
        moment = modified_moment(modified_on)
        return moment is not None and not self._age_fits(moment)

    def wants(self, *, size: Optional[int], modified_on: object) -> bool:
        """The final word, with all the run will know of the file (``size`` None: its handle records none)."""
        if size is None and self.min_size is not None:
            return False
        return not self.refuses_known(size=size, modified_on=modified_on)

    def _size_fits(self, size: int) -> bool:
        return (self.min_size is None or size >= self.min_size) and (self.max_size is None or size <= self.max_size)

    def _age_fits(self, moment: dt.datetime) -> bool:
        return (self.modified_after is None or moment >= self.modified_after) and (
            self.modified_before is None or moment <= self.modified_before
        )
