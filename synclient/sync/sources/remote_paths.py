"""Remote folder paths for ``--keep-paths``: the folder a file of a list lands in, ``<project name>/<folder path>``
under the target, as a tree sync of its project names it (each component through the name gate's
:class:`~synclient.sync.local.name_gate.RemotePath`).

Synapse's ``EntityHeader`` (``POST /entity/header``) carries no ``parentId``, so header batches cannot climb a
chain. One ``GET /entity/{id}/path`` answers a folder's whole chain instead (Synapse's root, the project, then each
folder down to it), and every container of that chain is then known. The bound: at most one path call per distinct
parent folder of the files, and none for a folder that an earlier answer's chain already named (ask for the deepest
folders first and their ancestors come free).

Synapse names an item of a chain that the caller may not read ``Redacted`` (NodeManagerImpl.getNodePath) and keeps
its id; a folder may also be named so. One ``POST /entity/header`` batch (per 1,000 ids) for every item so named
tells them apart: the platform leaves out what may not be read.

A path call that fails otherwise (a 5xx or a malformed answer, its retries spent) says nothing of the folder: its
files fail with that error (:meth:`FolderPaths.failure`), so the next run places them, rather than land flat.

A folder whose chain cannot be read (the file may be read, its folder may not), has no project at its top, or holds
a name that can be no path component (``..``, ``/``, NUL from a hostile server) or no local name on the target (the
name gate's checks: a backslash, too long, synclient's index folder at the top) has no path: its files fall back to
the flat layout, each with a one-line note (:meth:`FolderPaths.why_flat`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Set

from synclient.errors import AccessDeniedError, NotFoundError, SynclientError
from synclient.platform.models import EntityHeader, EntityType
from synclient.sync.local.name_gate import RemotePath

#: ``GET /entity/{id}/path``: the entity's chain, Synapse's root first, the entity last
PathOf = Callable[[str], Sequence[EntityHeader]]
#: ``POST /entity/header`` (Platform.get_entity_headers): the headers of the ids the caller may read
HeadersOf = Callable[[Sequence[str]], Mapping[str, EntityHeader]]
#: the local path of a remote name in a local folder (None: the target's top), checked by the run's name gate
#: (:meth:`~synclient.sync.local.name_gate.NameGate.path`): UnsafePathError for a name that can be no local name
LocalPathOf = Callable[[Optional[Path], str], Path]
#: the name Synapse gives an item of a path that the caller may not read
REDACTED_NAME = "Redacted"


class FolderPaths:
    """The remote paths of folders (and projects), learnt one path call per folder no earlier chain named."""

    def __init__(self, path_of: PathOf, headers_of: HeadersOf, local_path: Optional[LocalPathOf] = None) -> None:
        self._path_of = path_of
        self._headers_of = headers_of
        self._local_path = local_path
        self._unreadable: Set[str] = set()
        self._paths: Dict[str, RemotePath] = {}
        self._chains: Dict[str, Sequence[EntityHeader]] = {}  # folder id -> its chain, from its project down
        self._flat: Dict[str, str] = {}  # folder id -> why its files land flat
        self._failed: Dict[str, SynclientError] = {}  # folder id -> the error of its path call (its files fail)
        self._gone: Set[str] = set()  # folders whose path call said they do not exist (404)
        self.calls = 0

    def resolve(self, folder_ids: Iterable[str]) -> None:
        """Learn the path of every folder named (in the order given: deepest first saves calls)."""
        chains: List[Sequence[EntityHeader]] = []
        named: Set[str] = set()  # every container some chain already holds
        for folder_id in dict.fromkeys(folder_ids):
            if folder_id in self._paths or folder_id in self._flat or folder_id in named:
                continue
            self.calls += 1
            try:
                chain = self._path_of(folder_id)
            except (AccessDeniedError, NotFoundError) as exc:
                self._flat[folder_id] = f"its folder {folder_id} may not be read ({exc})"
                if isinstance(exc, NotFoundError):
                    self._gone.add(folder_id)
                continue
            except SynclientError as exc:
                self._failed[folder_id] = exc
                continue
            if not chain or chain[-1].id != folder_id:
                self._flat[folder_id] = f"the path of {folder_id} does not end at it"
                continue
            chains.append(chain)
            named.update(item.id for item in chain)
        # Synapse's root (above every project) is always so named: only the project and below count
        redacted = {item.id for chain in chains for item in _from_project(chain) if item.name == REDACTED_NAME}
        if redacted:
            readable = self._headers_of(sorted(redacted))
            self._unreadable.update(entity_id for entity_id in redacted if entity_id not in readable)
        for chain in chains:
            self._learn(chain)

    def path(self, folder_id: str) -> Optional[RemotePath]:
        """``<project name>/<folder path>`` of a resolved folder; None when its files land flat."""
        return self._paths.get(folder_id)

    def chain(self, folder_id: str) -> Sequence[EntityHeader]:
        """The containers of a resolved folder's path, from its project down to it (empty when it has no path)."""
        return self._chains.get(folder_id, ())

    def failure(self, folder_id: str) -> Optional[SynclientError]:
        """The error of a folder's path call that is no refusal to read it (its files fail with it), or None."""
        return self._failed.get(folder_id)

    def gone(self, folder_id: str) -> bool:
        """Whether the folder's path call said it does not exist (a file said to be in it has moved since)."""
        return folder_id in self._gone

    def why_flat(self, folder_id: str) -> str:
        """Why a folder's files land flat (one line), or '' when it has a path."""
        if folder_id in self._paths:
            return ""
        return self._flat.get(folder_id, f"its folder {folder_id} was not resolved")

    def _learn(self, chain: Sequence[EntityHeader]) -> None:
        below_root = _from_project(chain)
        if not below_root:
            self._flat[chain[-1].id] = f"the path of {chain[-1].id} has no project at its top"
            return
        path, local = RemotePath(), None
        for item in below_root:
            if item.id in self._flat:
                reason = self._flat[item.id]
            elif item.id in self._unreadable:
                reason = f"its folder {item.id} may not be read (its path names it {REDACTED_NAME!r})"
            else:
                try:
                    path = path.child(item.name)
                    local = self._local_path(local, item.name) if self._local_path is not None else None
                except SynclientError as exc:  # UnsafePathError: this folder and all below it land flat
                    reason = f"the folder {item.id} has a name that can be no local name ({exc})"
                else:
                    if item.id not in self._paths:
                        self._paths[item.id] = path
                        self._chains[item.id] = below_root[: below_root.index(item) + 1]
                    continue
            for below in below_root[below_root.index(item) :]:
                self._flat.setdefault(below.id, reason)
            return


def _from_project(chain: Sequence[EntityHeader]) -> Sequence[EntityHeader]:
    """The chain from its project down (empty when it has none)."""
    top = next((i for i, item in enumerate(chain) if item.type is EntityType.PROJECT), None)
    return () if top is None else chain[top:]
