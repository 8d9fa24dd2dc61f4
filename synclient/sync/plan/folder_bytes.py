"""A dry run's bytes from the listing: each folder's ``sumFileSizesBytes`` less what its files are known to hold.

A dry run plans a file that is absent locally from its listing row alone (no bundle call: nothing on disk needs its
MD5), so that file's own size is unknown. Its folder's listing says the sum of the current sizes of all its files
(``includeSumFileSizes``; Synapse's ``NodeDAOImpl.getChildrenStats``, the same on every page). What the other files
of the folder hold is known one by one (an up-to-date index row, a bundle, a view's row), so the files planned from
the listing hold the rest: the exact size of one such file, the total of several.

That holds only where every listed file is accounted for. A folder where a file was filtered out, refused a local
name or failed (its size is in the sum, not here), or whose listing broke off, has its listing-planned files sized
one by one by bundle calls (:meth:`FolderBytes.settle` says which): calls that only the byte count needs.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Dict, List, NamedTuple, Optional


class UnsizedFile(NamedTuple):
    """A download planned from the listing alone: its size is its folder's to tell."""

    rel_path: str
    entity_id: str
    version: Optional[int]


@dataclass
class _Folder:
    total: Optional[int] = None  # the listing's sum for the whole folder (None: not said, or not listed)
    known: int = 0  # bytes of its files whose sizes are known one by one
    unsized: List[UnsizedFile] = field(default_factory=list)
    exact: bool = True  # every listed file is known or unsized
    complete: bool = False  # every page of it was listed
    settled: bool = False


@dataclass(frozen=True)
class Settled:
    """What :meth:`FolderBytes.settle` found: sizes of single files, bytes of several, files still to size."""

    sizes: Dict[str, int]  # rel path -> exact size (the one listing-planned file of its folder)
    bytes_of_several: int  # the listing-planned files of folders with several, together
    to_size: List[UnsizedFile]  # files whose folders cannot tell: their bundles must


class FolderBytes:
    """Per listed folder (by its remote path): the listing's sum and what its files are known to hold.
    Thread-safe; fed by the walker (pages, files left out) and the pipeline (each file's fate)."""

    def __init__(self) -> None:
        self._folders: Dict[str, _Folder] = {}
        self._lock = threading.Lock()

    def _folder(self, rel_dir: str) -> _Folder:
        folder = self._folders.get(rel_dir)
        if folder is None:
            folder = self._folders[rel_dir] = _Folder()
        return folder

    # -- the walker -------------------------------------------------------------------------------------------------

    def page_listed(self, rel_dir: str, total: Optional[int]) -> None:
        """A page of ``rel_dir`` came with the folder's sum (None: the server did not say it)."""
        with self._lock:
            folder = self._folder(rel_dir)
            if total is None:
                folder.exact = False
            elif folder.total is None:
                folder.total = total

    def listed(self, rel_dir: str) -> None:
        """Every page of ``rel_dir`` was listed."""
        with self._lock:
            self._folder(rel_dir).complete = True

    def left_out(self, rel_dir: str) -> None:
        """A listed file of ``rel_dir`` that no one sizes (filtered out, its name refused, failed)."""
        with self._lock:
            self._folder(rel_dir).exact = False

    # -- the pipeline -----------------------------------------------------------------------------------------------

    def known(self, rel_dir: str, size: Optional[int]) -> None:
        """A listed file of ``rel_dir`` whose size is known (None: the platform records none; it sums nothing)."""
        with self._lock:
            self._folder(rel_dir).known += size or 0

    def unsized(self, rel_dir: str, file: UnsizedFile) -> None:
        with self._lock:
            self._folder(rel_dir).unsized.append(file)

    # -- the end ----------------------------------------------------------------------------------------------------

    def settle(self) -> Settled:
        """Once every page was listed and every file placed: the folders' remainders, and the files whose folders
        cannot tell (each folder once)."""
        sizes: Dict[str, int] = {}
        several = 0
        to_size: List[UnsizedFile] = []
        with self._lock:
            for folder in self._folders.values():
                if folder.settled or not folder.unsized:
                    continue
                folder.settled = True
                if not (folder.exact and folder.complete and folder.total is not None):
                    to_size.extend(folder.unsized)
                    continue
                rest = max(0, folder.total - folder.known)
                if len(folder.unsized) == 1:
                    sizes[folder.unsized[0].rel_path] = rest
                else:
                    several += rest
        return Settled(sizes, several, to_size)

    def pending(self) -> bool:
        """Some folder still has files planned from the listing that :meth:`settle` has not looked at."""
        with self._lock:
            return any(folder.unsized and not folder.settled for folder in self._folders.values())


def folder_of(rel_path: str) -> str:
    """The remote path of the folder a listed file is in: ``"a/b"`` for ``"a/b/c.txt"``, ``""`` at the root (no
    remote name holds a ``/``)."""
    return rel_path.rpartition("/")[0]
