"""Include/exclude glob patterns on the remote relative path, applied before any per-file call.

Patterns use ``fnmatch`` syntax on the '/'-separated path relative to the sync root (``*`` also crosses '/'):
``data/*.csv``, ``*.bam``, ``raw/*``. A pattern without '/' also matches a file's or folder's own name, so
``*.tmp`` or ``scratch`` work at any depth. A file is synced when it matches some include pattern (or there are
none) and no exclude pattern. Folders that an exclude pattern covers entirely, or below which no include pattern
can match anything, are neither listed nor created.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Iterable, Tuple


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
