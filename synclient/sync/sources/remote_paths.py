"""Remote folder paths for ``--keep-paths``: the folder a file of a list lands in, ``<project name>/<folder path>``
under the target, as a tree sync of its project names it (each component through the name gate's
:class:`~synclient.sync.local.name_gate.RemotePath`).

Synapse's ``EntityHeader`` (``POST /entity/header``) carries no ``parentId``, so header batches cannot climb a
chain. One ``GET /entity/{id}/path`` answers a folder's whole chain instead (Synapse's root, the project, then each
folder down to it), and every container of that chain is then known. The bound: at most one path call per distinct
parent folder of the files, and none for a folder that an earlier answer's chain already named (ask for the deepest
folders first and their ancestors come free).

A folder whose chain cannot be read (the file may be read, its folder may not), has no project at its top, or holds
a name that can be no path component (``..``, ``/``, NUL from a hostile server) has no path: its files fall back to
the flat layout, each with a one-line note (:meth:`FolderPaths.why_flat`).
"""

from __future__ import annotations

from typing import Callable, Dict, Iterable, Optional, Sequence

from synclient.errors import SynclientError
from synclient.platform.models import EntityHeader, EntityType
from synclient.sync.local.name_gate import RemotePath

#: ``GET /entity/{id}/path``: the entity's chain, Synapse's root first, the entity last
PathOf = Callable[[str], Sequence[EntityHeader]]


class FolderPaths:
    """The remote paths of folders (and projects), learnt one path call per folder no earlier chain named."""

    def __init__(self, path_of: PathOf) -> None:
        self._path_of = path_of
        self._paths: Dict[str, RemotePath] = {}
        self._flat: Dict[str, str] = {}  # folder id -> why its files land flat
        self.calls = 0

    def resolve(self, folder_ids: Iterable[str]) -> None:
        """Learn the path of every folder named (in the order given: deepest first saves calls)."""
        for folder_id in dict.fromkeys(folder_ids):
            if folder_id in self._paths or folder_id in self._flat:
                continue
            self.calls += 1
            try:
                chain = self._path_of(folder_id)
            except SynclientError as exc:
                self._flat[folder_id] = f"its folder {folder_id} may not be read ({exc})"
                continue
            self._learn(folder_id, chain)

    def path(self, folder_id: str) -> Optional[RemotePath]:
        """``<project name>/<folder path>`` of a resolved folder; None when its files land flat."""
        return self._paths.get(folder_id)

    def why_flat(self, folder_id: str) -> str:
        """Why a folder's files land flat (one line), or '' when it has a path."""
        if folder_id in self._paths:
            return ""
        return self._flat.get(folder_id, f"its folder {folder_id} was not resolved")

    def _learn(self, folder_id: str, chain: Sequence[EntityHeader]) -> None:
        top = next((i for i, item in enumerate(chain) if item.type is EntityType.PROJECT), None)
        if top is None or chain[-1].id != folder_id:
            self._flat[folder_id] = f"the path of {folder_id} has no project at its top"
            return
        path = RemotePath()
        for item in chain[top:]:
            if item.id in self._flat:
                reason = self._flat[item.id]
            else:
                try:
                    path = path.child(item.name)
                except SynclientError as exc:  # UnsafePathError: this folder and all below it land flat
                    reason = f"the folder {item.id} has a name that can be no local name ({exc})"
                else:
                    self._paths.setdefault(item.id, path)
                    continue
            for below in chain[chain.index(item) :]:
                self._flat.setdefault(below.id, reason)
            return
