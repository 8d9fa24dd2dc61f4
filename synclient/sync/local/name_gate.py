"""The one way from a remote name to a local path.

Every source of a run (the folder walk, a file root, a list of ids, datasets and collections, a query's or a view's
rows) and so every Dask shard (whose destinations are the driver's decisions) gets its local paths here, and
nothing else in :mod:`synclient.sync` or :mod:`synclient.cluster` joins a remote name into a path
(``tests/unit/test_name_gate.py::test_no_remote_name_is_joined_into_a_path_outside_the_gate`` walks their AST).

- A remote path is a :class:`RemotePath`: a sequence of names, each checked by :func:`check_remote_name` when the
  path is made (not empty, no ``/``, not ``.``/``..``, no NUL, valid Unicode: a name no filesystem rule may map
  into a harmless one). Its ``'/'``-joined text (the index's key, the report's spelling) is one-to-one with it and
  is never split back into a path.
- :class:`NameGate` turns a checked name into a local path under a local folder: the local filesystem's form of
  the name (:meth:`~synclient.sync.local.local_names.FilesystemNames.legal_form`, or the name the walk's listing mapping
  gave it), then that local name checked as one component on this OS (:func:`~synclient.sync.local.paths.validate_name`:
  a backslash, 255 bytes), synclient's own names refused (its index folder, partial downloads:
  :meth:`~synclient.sync.local.paths.TargetDirectory.child`), the filesystem's length limits
  (:meth:`~synclient.sync.local.local_names.FilesystemNames.check_length`), and the path **claimed** in the run's one
  :class:`PathRegistry`.
- The registry holds every local path an entity of the run was given, as the filesystem compares paths (case- or
  Unicode-insensitive where it is), with the entity that has it. A second entity asking for a path another one
  holds is refused (:class:`~synclient.errors.PathConflictError`, that entity fails alone): two entities never share
  a path, in a real run or a dry run. The sources' own rules name twins apart before they ask (a folder's listing:
  :func:`~synclient.sync.local.local_names.local_names`; a list: :mod:`synclient.sync.sources.by_id`), so a refusal
  here means a server answered with two entries of one name. ``keep.both`` copies are claimed in it too
  (:mod:`synclient.sync.claims`). Where the rules say two spellings are one name but the disk holds two files (a
  forced probe, a target moved from another filesystem), the disk is asked and each keeps its own path. It costs one
  key per file of the run (about 0.1 KB), like the run's other per-file state.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Optional, Tuple

from synclient.errors import PathConflictError
from synclient.sync.local.local_names import FilesystemNames, Renaming, with_id
from synclient.sync.local.paths import RESERVED_NAME, TargetDirectory, check_remote_name


@dataclass(frozen=True)
class RemotePath:
    """A path under the sync root as the platform names it: one validated name per component (``()``: the root)."""

    names: Tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in self.names:
            check_remote_name(name)  # UnsafePathError: this entity's name can be no path component

    def child(self, name: str) -> RemotePath:
        return RemotePath(self.names + (name,))

    @property
    def parent(self) -> RemotePath:
        return RemotePath(self.names[:-1])

    @property
    def name(self) -> str:
        return self.names[-1] if self.names else ""

    @property
    def text(self) -> str:
        """The ``'/'``-separated spelling (the index's key, the report's): one-to-one, as no name holds a ``/``."""
        return "/".join(self.names)

    def spelled(self, name: str) -> str:
        """The text of the child ``name`` for filters and reports, whether or not ``name`` can be a path
        component (a refused entity is reported under it); never made into a path."""
        return f"{self.text}/{name}" if self.names else name

    def __str__(self) -> str:
        return self.text


class PathRegistry:
    """The run's local paths and the entity that has each, as the filesystem compares paths. Thread-safe."""

    def __init__(self, names: FilesystemNames = FilesystemNames()) -> None:
        self._names = names
        self._owners: Dict[str, Tuple[str, str]] = {}  # key -> (owner, the path as it spelled it)
        # paths whose twin by the key (as the filesystem's rules say it compares) are two files on this disk: a
        # forced probe's rules, or a target moved from another filesystem (exact path -> owner)
        self._apart: Dict[str, str] = {}
        self._lock = threading.Lock()

    def key(self, path: Path) -> str:
        return self._names.same_name_key(str(path)) if self._names.maps_names else str(path)

    def claim(self, path: Path, owner: str) -> Path:
        """``path`` for ``owner`` (an entity id); :class:`PathConflictError` when another entity has it."""
        exact = str(path)
        with self._lock:
            other, spelled = self._holder(exact, owner)
        if other != owner and spelled != exact and _apart_on_disk(spelled, exact):
            with self._lock:  # (the disk is asked outside the lock: this is rare, the lock is not)
                other = self._apart.setdefault(exact, owner)
        if other != owner:
            raise PathConflictError(
                f"{path} is already the local path of {other} in this run; {owner} is not written there"
            )
        return path

    def _holder(self, exact: str, owner: str) -> Tuple[str, str]:
        """The owner of ``exact`` (it, if none), and how the path it claimed is spelled. Call with the lock held."""
        apart = self._apart.get(exact)
        if apart is not None:
            return apart, exact
        return self._owners.setdefault(self.key(Path(exact)), (owner, exact))

    def release(self, path: Path, owner: str) -> None:
        """``owner`` failed: ``path`` is not its (nothing of it is written there), and an entity that is there
        already, untouched (an earlier run's copy), keeps it in this run."""
        exact = str(path)
        with self._lock:
            if self._apart.get(exact) == owner:
                del self._apart[exact]
                return
            key = self.key(path)
            if self._owners.get(key) == (owner, exact):
                del self._owners[key]

    def owner_of(self, path: Path) -> Optional[str]:
        with self._lock:
            apart = self._apart.get(str(path))
            held = self._owners.get(self.key(path))
        return apart if apart is not None else held[0] if held is not None else None


def _apart_on_disk(path: str, other: str) -> bool:
    """Whether two spellings that the filesystem's rules take for one path are two files on this disk (both there,
    not the same file)."""
    try:
        return not os.path.samefile(path, other)
    except OSError:
        return False


@dataclass(frozen=True)
class Placed:
    """Where the gate put one entity: its local path, and why its local name is not its remote name ("": it is)."""

    path: Path
    renamed: str = ""


class NameGate:
    """Remote names to local paths for one run (see the module docstring). Thread-safe."""

    def __init__(
        self,
        target: TargetDirectory,
        names: FilesystemNames = FilesystemNames(),
        registry: Optional[PathRegistry] = None,
    ) -> None:
        self.target = target
        self.names = names
        self.registry = registry if registry is not None else PathRegistry(names)

    def path(self, folder: Path, name: str, *, local_name: Optional[str] = None) -> Path:
        """The local path of the remote ``name`` in the local ``folder`` (``local_name``: the name a listing's
        mapping gave it; default: the filesystem's form of ``name``), checked, not claimed (for a report, or
        before a call): :class:`~synclient.errors.UnsafePathError` for a name that can be no local name."""
        check_remote_name(name)
        local = local_name if local_name is not None else self.names.legal_form(name)
        return self.names.check_length(self.target.child(folder, local))  # (child: validate_name of the local one)

    def file(self, folder: Path, name: str, owner: str, *, local_name: Optional[str] = None) -> Path:
        """:meth:`path`, claimed for the entity ``owner``."""
        return self.registry.claim(self.path(folder, name, local_name=local_name), owner)

    def folder(self, parent: Path, name: str, owner: str, *, local_name: Optional[str] = None) -> Path:
        """The local folder of the remote folder (or dataset) ``name`` in ``parent``, claimed for ``owner``, made
        (a dry run makes nothing): :meth:`~synclient.sync.local.paths.TargetDirectory.make_folder`'s errors."""
        path = self.registry.claim(self.path(parent, name, local_name=local_name), owner)
        return self.target.make_folder(parent, path.name)

    def folders(self, remote: RemotePath) -> Path:
        """The local folder of ``remote`` (a list's folder: its owner claimed it when it was laid out), each
        component in the filesystem's form, made as needed."""
        folder = self.target.root
        for name in remote.names:
            folder = self.target.make_folder(folder, self.path(folder, name).name)
        return folder

    def claim_folders(self, remote: RemotePath, owner: str) -> Path:
        """Claim the local folder of ``remote`` for ``owner`` (a dataset's or a listed container's) without making
        it (its files make it when they land)."""
        folder = self.target.root
        for name in remote.names:
            folder = self.path(folder, name)
        return self.registry.claim(folder, owner) if remote.names else folder

    def place_file(self, remote: RemotePath, owner: str) -> Placed:
        """The local path of a file named by id (a file root, a list's entry) at ``remote``, claimed, its folders
        made; at the target's top, the twin of synclient's index folder gets the entity's id."""
        folder = self.folders(remote.parent)
        name, reason = self.names.legal_form(remote.name), Renaming.WINDOWS
        if folder == self.target.root and self.names.maps_names and self.names.same_name(name, RESERVED_NAME):
            # the index folder's twin (".SYNCLIENT" on a case-insensitive disk): the index keeps its name
            name, reason = with_id(name, owner, is_folder=False), Renaming.RESERVED
        path = self.file(folder, remote.name, owner, local_name=name)
        local = self.target.relative(path)
        return Placed(path, reason.value if local != remote.text else "")
