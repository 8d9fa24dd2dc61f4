"""``synclient check``: is a local copy what a ``get`` into it would produce? Nothing is written.

The remote side is a dry run of the same sources as ``get`` (a tree, ids, a query), planned by the sync's own
machinery read-only (a read-only index snapshot, no target lock, no folder made): each planned file comes with its
local path as the one name gate gives it, and with its file handle (``entity_details``: the bundle per file, so the
MD5 and size compared are the handle's, not the index's). The local side is then read: each planned path's size,
and by default its MD5, hashed on threads bounded by the machine's cores; files under the target that no planned
path names are listed as only local (never touched), except synclient's own ``.synclient/`` folder and the
manifests it wrote.

Statuses, in rclone ``check --combined``'s symbols: ``=`` same, ``*`` differs, ``-`` missing locally, ``+`` only
local, ``!`` error.
"""

from __future__ import annotations

import enum
import os
import stat
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Set, Union

from synclient.errors import ConfigError
from synclient.events import PlannedFile
from synclient.platform.rest import Platform
from synclient.progress import ProgressDisplay, ProgressMode, choose_mode, progress_observer
from synclient.results import counted
from synclient.sync.local.paths import RESERVED_NAME
from synclient.sync.plan.dry_run import PlanEntry, SyncPlan
from synclient.sync.plan.filters import Age
from synclient.sync.plan.planner import Action
from synclient.sync.records.index import LocalIndex
from synclient.sync.records.manifest import MANIFEST_FILENAME
from synclient.sync.runner import download_many, download_query
from synclient.sync.sources.id_lists import EntityRef
from synclient.transfer.hashing import file_md5

__all__ = ["CheckStatus", "CheckedFile", "CheckResults", "check"]


class CheckStatus(enum.Enum):
    SAME = "same"
    DIFFERS = "differs"
    MISSING = "missing"  # the remote has it, the local copy does not
    EXTRA = "extra"  # only local: a file synclient does not own (listed, never touched)
    ERROR = "error"

    @property
    def symbol(self) -> str:
        return _SYMBOLS[self]


_SYMBOLS = {
    CheckStatus.SAME: "=",
    CheckStatus.DIFFERS: "*",
    CheckStatus.MISSING: "-",
    CheckStatus.EXTRA: "+",
    CheckStatus.ERROR: "!",
}


@dataclass(frozen=True)
class CheckedFile:
    """One file's verdict. ``path``: relative to the target, '/'-separated (where a ``get`` puts it);
    ``reason``: why it differs or failed."""

    path: str
    status: CheckStatus
    entity_id: Optional[str] = None
    version: Optional[int] = None
    remote_size: Optional[int] = None
    local_size: Optional[int] = None
    remote_md5: Optional[str] = None
    local_md5: Optional[str] = None
    reason: str = ""

    @property
    def line(self) -> str:
        """rclone's combined line: ``= path``, with the reason after a tab-free `` (...)`` where there is one."""
        return f"{self.status.symbol} {self.path}" + (f"  ({self.reason})" if self.reason else "")

    def to_json(self) -> Dict[str, Any]:
        return {
            "path": self.path,
            "status": self.status.value,
            "entity_id": self.entity_id,
            "version": self.version,
            "remote_size": self.remote_size,
            "local_size": self.local_size,
            "remote_md5": self.remote_md5,
            "local_md5": self.local_md5,
            "reason": self.reason or None,
        }


@dataclass
class CheckResults:
    """Every file's verdict, in path order; ``identical``: nothing differs, is missing or failed (files only local
    are listed but do not make a copy differ from the remote)."""

    files: List[CheckedFile] = field(default_factory=list)
    size_only: bool = False

    def count(self, status: CheckStatus) -> int:
        return sum(1 for f in self.files if f.status is status)

    @property
    def identical(self) -> bool:
        return not any(f.status in (CheckStatus.DIFFERS, CheckStatus.MISSING, CheckStatus.ERROR) for f in self.files)

    def counts(self) -> Dict[str, int]:
        return {status.value: self.count(status) for status in CheckStatus}

    def summary(self) -> str:
        how = "sizes" if self.size_only else "MD5 and sizes"
        return (
            f"check ({how}): {self.count(CheckStatus.SAME)} same, {self.count(CheckStatus.DIFFERS)} differ, "
            f"{self.count(CheckStatus.MISSING)} missing locally, {self.count(CheckStatus.EXTRA)} only local, "
            f"{counted(self.count(CheckStatus.ERROR), 'error')}"
        )

    def to_json(self) -> Dict[str, Any]:
        return {
            "files": [f.to_json() for f in self.files],
            "summary": dict(self.counts(), identical=self.identical, size_only=self.size_only),
        }

    def __repr__(self) -> str:
        return f"<CheckResults {self.summary()}>"


def check(
    ids: Union[str, EntityRef, Iterable[Union[str, EntityRef]], None] = None,
    path: Union[str, Path] = ".",
    *,
    query: Optional[str] = None,
    recursive: bool = False,
    size_only: bool = False,
    platform: Optional[Platform] = None,
    syn: Optional[object] = None,
    include: Optional[Iterable[str]] = None,
    exclude: Optional[Iterable[str]] = None,
    min_size: Union[int, str, None] = None,
    max_size: Union[int, str, None] = None,
    min_age: Optional[Age] = None,
    max_age: Optional[Age] = None,
    follow_links: Optional[bool] = None,
    max_workers: Optional[int] = None,
    progress: bool = False,
    hash_workers: Optional[int] = None,
) -> CheckResults:
    """Compare the local copy at ``path`` with what ``get`` of ``ids`` (or of ``query``'s files) would put there.

    ``ids``, ``recursive``, ``query``, ``include``, ``exclude``, the size and age filters (``min_size``,
    ``max_size``, ``min_age``, ``max_age``) and ``follow_links`` mean what they mean for
    :func:`~synclient.sync.runner.download_many` and :func:`~synclient.sync.runner.download_query` (a project or
    folder needs ``recursive=True``). By default every planned local file is hashed (MD5) and compared, with its
    size, to its remote file handle's; ``size_only=True`` compares sizes alone. ``progress``: a bar of the bytes
    hashed, on a terminal or in a notebook only. ``hash_workers``: threads that hash (default: the machine's
    cores). Writes nothing. Returns :class:`CheckResults`."""
    if (ids is None) == (query is None):
        raise ConfigError("check needs ids or a query (not both)")
    keywords: Dict[str, Any] = dict(
        platform=platform,
        syn=syn,
        include=include,
        exclude=exclude,
        min_size=min_size,
        max_size=max_size,
        min_age=min_age,
        max_age=max_age,
        follow_links=follow_links,
        max_workers=max_workers,
        dry_run=True,  # the sync's planning, read-only: no index update, no lock, no folder made
        entity_details=True,  # each file's handle: its MD5 and size are what the copy is compared with
        if_collision="overwrite.local",  # every planned file at its own path (keep.both would name a copy)
        on_error="continue",
        progress=False,
        synapse_cache=False,
    )
    target = Path(path)
    if query is not None:
        plan = download_query(query, target, recursive=recursive, **keywords)
    else:
        assert ids is not None
        refs = [ids] if isinstance(ids, (str, EntityRef)) else list(ids)  # one id given bare: a list of one
        plan = download_many(refs, target, recursive=recursive, **keywords)
    assert isinstance(plan, SyncPlan)
    root = Path(os.path.realpath(target))  # as the run's TargetDirectory names it: the plan's paths are under it
    return _verify(plan, root, size_only=size_only, progress=progress, hash_workers=hash_workers)


def _verify(
    plan: SyncPlan, root: Path, *, size_only: bool, progress: bool, hash_workers: Optional[int]
) -> CheckResults:
    """The plan's files read locally (hashed unless ``size_only``), then what else the target holds."""
    checked: List[CheckedFile] = []
    expected: Set[str] = set()
    to_hash = []
    for failure in plan.failures:
        where = str(failure.path) if failure.path is not None else failure.entity_id
        if os.path.isabs(where):
            where = _relative(Path(where), root)
        checked.append(CheckedFile(where, CheckStatus.ERROR, failure.entity_id, reason=str(failure.error or "")))
    for entry in plan.entries:
        if entry.action is Action.DELETE or entry.destination is None:
            continue
        rel = _relative(entry.destination, root)
        expected.add(rel)
        verdict = _stat_verdict(entry, rel, size_only=size_only)
        if verdict is not None:
            checked.append(verdict)
        else:
            to_hash.append((entry, rel))
    if to_hash:
        checked.extend(_hash_all(to_hash, progress=progress, workers=hash_workers))
    checked.extend(_only_local(root, expected))
    checked.sort(key=lambda f: f.path)
    return CheckResults(checked, size_only=size_only)


def _remote_facts(entry: PlanEntry) -> tuple:
    handle = entry.file_handle or {}
    md5 = handle.get("contentMd5")
    size = handle.get("contentSize", entry.size)
    return (md5.lower() if isinstance(md5, str) and md5 else None), (int(size) if size is not None else None)


def _stat_verdict(entry: PlanEntry, rel: str, *, size_only: bool) -> Optional[CheckedFile]:
    """What the local file's stat alone says; None: its bytes must be hashed to tell."""
    assert entry.destination is not None
    md5, size = _remote_facts(entry)
    facts = dict(entity_id=entry.entity_id, version=entry.version, remote_size=size, remote_md5=md5)
    try:
        info = os.lstat(entry.destination)
    except (FileNotFoundError, NotADirectoryError):
        return CheckedFile(rel, CheckStatus.MISSING, **facts)
    except OSError as exc:
        return CheckedFile(rel, CheckStatus.ERROR, **facts, reason=f"cannot read: {exc.strerror or exc}")
    if not stat.S_ISREG(info.st_mode):
        kind = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        return CheckedFile(rel, CheckStatus.DIFFERS, **facts, reason=f"local path is {kind}")
    if size is not None and info.st_size != size:
        return CheckedFile(
            rel, CheckStatus.DIFFERS, **facts, local_size=info.st_size, reason=f"size {info.st_size} != {size}"
        )
    if size_only:
        if size is None:
            return CheckedFile(rel, CheckStatus.ERROR, **facts, local_size=info.st_size, reason="remote size unknown")
        return CheckedFile(rel, CheckStatus.SAME, **facts, local_size=info.st_size)
    if md5 is None:
        return CheckedFile(rel, CheckStatus.ERROR, **facts, local_size=info.st_size, reason="the remote records no MD5")
    return None


def _hash_all(files: List[tuple], *, progress: bool, workers: Optional[int]) -> List[CheckedFile]:
    """Each file hashed and compared, on threads bounded by the cores (hashing is CPU- and disk-bound; MD5 and
    reads release the GIL), with a bar of the bytes hashed."""
    display: Optional[ProgressDisplay] = None
    if progress and choose_mode() is ProgressMode.BAR:
        display = progress_observer(description="check")
    planned = {}
    for entry, rel in files:
        planned[rel] = PlannedFile(entry.entity_id, entry.version, entry.destination, entry.size or 0)
        if display is not None:
            display.file_planned(planned[rel])

    def one(item: tuple) -> CheckedFile:
        entry, rel = item
        md5, size = _remote_facts(entry)
        facts = dict(entity_id=entry.entity_id, version=entry.version, remote_size=size, remote_md5=md5)
        read = [0]

        def hashed(count: int) -> None:
            read[0] += count
            if display is not None:
                display.bytes_transferred(planned[rel], count)

        try:
            local_md5 = file_md5(entry.destination, on_read=hashed)
        except OSError as exc:
            return CheckedFile(rel, CheckStatus.ERROR, **facts, reason=f"cannot read: {exc.strerror or exc}")
        local_size = read[0]
        verdict = dict(facts, local_md5=local_md5, local_size=local_size)
        if local_md5 == md5 and (size is None or local_size == size):
            return CheckedFile(rel, CheckStatus.SAME, **verdict)
        return CheckedFile(rel, CheckStatus.DIFFERS, **verdict, reason="MD5 differs")

    count = max(1, min(workers or os.cpu_count() or 1, len(files)))
    try:
        with ThreadPoolExecutor(max_workers=count, thread_name_prefix="synclient-check") as hashing:
            return list(hashing.map(one, files))
    finally:
        if display is not None:
            display.close()


def _only_local(root: Path, expected: Set[str]) -> List[CheckedFile]:
    """Files under the target that no planned path names (a symlink is one, never followed), except synclient's
    own index folder and the manifests it wrote."""
    if not root.is_dir():
        return []
    ours = _manifests_written(root)
    extra = []
    for folder, dirs, files in os.walk(root):
        rel_folder = _relative(Path(folder), root)
        if not rel_folder:
            dirs[:] = [d for d in dirs if d != RESERVED_NAME]
        links = [d for d in dirs if os.path.islink(os.path.join(folder, d))]
        dirs[:] = sorted(d for d in dirs if d not in links)
        for local_name in sorted(files + links):
            rel = f"{rel_folder}/{local_name}" if rel_folder else local_name
            if rel in expected or rel in ours or local_name == MANIFEST_FILENAME:
                continue
            extra.append(CheckedFile(rel, CheckStatus.EXTRA))
    return extra


def _manifests_written(root: Path) -> Set[str]:
    """The manifest files the last sync into ``root`` recorded writing (read from a private snapshot)."""
    with LocalIndex(root, read_only=True) as index:
        return set(index.manifest_files())


def _relative(path: Path, root: Path) -> str:
    """``path`` (under the target's real path, as the name gate gives it; never resolved: it may be a symlink) as
    the index spells it."""
    return "" if path == root else Path(os.path.relpath(path, root)).as_posix()
