"""A model-based random walk of synclient against the emulator: random remote changes and local interference, each
step followed by a sync with random options, and invariants checked after every sync.

The walk is a seeded ``random.Random``: the same seed gives the same sequence of rules (the syncs themselves run
threads, and a SIGKILL lands wherever the child is, so their outcomes can differ in detail; the rules do not depend
on them except through the local tree they leave). See ``docs/reliability.md`` ("Model test") for how to run it.

What the model knows:

- ``Remote``: every remote file (path -> entity id, version, bytes) and folder, changed only through the emulator's
  admin calls made by the rules, so it is exact.
- ``Local``: what the *user* (the test) did in the target: files it wrote or edited (``user_files``, path -> bytes),
  folders and symlinks it planted (``planted``), and the paths synclient reported as written (``owned``).
- a sentinel tree beside the target (and every symlink destination the test plants points into it), checksummed.

Invariants (names as printed on failure):

- ``outside-unchanged``: nothing beside the target changed (sentinel tree, incl. symlink destinations and dangling
  symlink destinations, and the work folder's listing).
- ``synced-not-byte-exact`` / ``synced-stale-version`` / ``synced-not-regular-file`` / ``synced-unexpected-path``:
  every file reported downloaded / skipped / adopted is a regular file holding exactly the remote bytes of the
  current version of that entity, at the entity's path (or a ``name(n).ext`` copy beside it after keep.both).
- ``shared-path`` / ``shared-real-path``: no two entities share a path in one run's results (as reported, and after
  resolving symlinks).
- ``duplicate-results`` / ``missing-result`` / ``filter-violated``: one result per wanted remote file (unless an
  ancestor folder failed), none for a file the include/exclude patterns leave out.
- ``dry-run-wrote`` / ``dry-run-mismatch``: a dry run writes nothing and predicts exactly the actions (per entity
  and path) of the real run that follows it; ``dry-run-bytes``: its byte count is what the files it would fetch
  hold (sized one by one, or by their folders' listing sums less what their other files hold).
- ``second-run-not-noop``: an identical second run fetches no data, downloads and deletes nothing and changes no
  local file (path, size, mtime_ns; manifests by content) outside ``.synclient/``.
- ``partial-leaked``: no partial download outlives a completed run, except beside a file the run did not settle
  (failed, kept by keep.local/keep.both, filtered out, or under a folder that failed).
- ``user-file-lost`` / ``user-file-taken-as-own`` / ``deleted-user-file``: files the user wrote or changed are never
  deleted, and replaced only by an ``overwrite`` under ``overwrite.local``; ``deleted-still-exists`` for deletions.
- ``no-convergence``: after a run with ``overwrite.local`` and no filters, every remote file not blocked by the
  user's own things is byte-exact locally (remote names synclient may legitimately refuse: refused or synced; a
  file <-> folder type change of synclient's own copies is required to converge only with ``delete``).
- ``stale-not-deleted``: after such a run with ``delete``, no file synclient wrote is left for a path gone remotely.
- ``manifest-stale``: after a run with ``manifest=all``, ``delete`` and no filters, no manifest in the target lists a
  file that is not there or an entity that no longer exists.
- ``kill-damaged``: after a SIGKILL, a user file holds either the user's bytes or (overwrite.local) the remote's.
- ``sync-raised``: ``sync_from_platform(on_error="continue")`` raised.

Issue 35's controls, drawn for some syncs from a generator of their own (``{seed}:controls``: the other draws of a
seed stay what they were): ``order_by`` and a high ``bwlimit`` (also on the SIGKILLed CLI syncs) change no outcome;
``min_size``/``max_size`` and the trivial ``min_age``/``max_age`` ("3650d": every file of the walk is younger) filter
like include/exclude (``SyncOptions.wants``: no result, nothing downloaded or deleted, no convergence expected); a
``max_transfer`` cap (any cutoff mode; never over Dask, which refuses it) may leave files, reported SKIPPED "cap" and
treated like failed-and-kept ones (no byte check, partials allowed beside them, no convergence or manifest check, no
dry-run comparison), and the second run goes on without the cap: it must settle them and act on nothing else.

A file view covers the project (it is no file or folder: listings leave it out); some syncs are planned from it
(``view=``), and a rule makes the view lag behind the edits (or catch up), as real views do: every invariant holds
with and without it.

Issue 34's ``view="auto"``, drawn from a generator of its own (``{seed}:autoview``): a quarter of the steps sync (dry
run, sync and second run) with a temporary view the sync makes itself, ``WORTH_A_VIEW`` patched to 1-5 (the model's
trees are small); about a third of those with stale rows (``view_lag`` on and the replica taken before the step's
edits), four in nine with a fallback knob on (``uncertified_user``, ``deny_create``, a ``max_containers_per_view`` of
1-4, or a build that never ends with ``BUILD_BOUND_SECONDS`` patched small); 30% of the SIGKILLed CLI syncs run with
``--view auto`` (half of them building their view for ever, killed while it builds). Every invariant above holds for
them (a second run's manifests are compared without their contentType: which files take their bundle before the view
is made varies from run to run, and a view row has none), and:

- ``auto-view-notes``: a run says at most once how it planned (view made and read, or why it walks); a dry run or a
  sync without ``view="auto"`` makes none.
- ``auto-view-fallback``: once it needs its view, a run makes it exactly when no knob keeps it from it (with one on,
  or more containers than the limit, it walks).
- ``account-not-clean``: after every run, no project but the seeded ones and an empty trash can, but for what
  SIGKILLed runs left (their views, aged past the grace period at once, in the scratch project), and that too is
  gone after a run that made its view (the sweep runs while the new view builds).
- ``kill-left-too-much``: a SIGKILLed ``--view auto`` run leaves at most one view more, nothing else but the scratch
  project, and nothing in the trash can.

Over Dask (``ModelWalk(dask_client=...)``): a seeded-random three quarters of the syncs (first runs, dry runs and
second runs each drawn on their own) fetch on the client's cluster (``dask=DaskSettings(client, shard_sizes=...)``,
shards of 1, 2, 5 or 500 files), the others run locally, so a sharded run follows a local one on the same target
and the reverse; every invariant above holds for both. Half the SIGKILLed CLI syncs run with ``--dask <the
scheduler's address>``: the driver dies while its shards run, and ``orphan-shards-ran-on`` checks that the shards
stop (no worker still runs one) within :data:`ORPHAN_STOP_SECONDS` of the kill, before the next sync starts. The
Dask draws come from a random generator of their own, so a seed's rules are the same with and without Dask (a
violation over Dask can be replayed locally).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import datetime
import hashlib
import logging
import os
import random
import shutil
import stat
import subprocess
import sys
import textwrap
import time
from collections import Counter
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Set, Tuple

from synclient import Platform, SyncStatus, TransferConfig, sync_from_platform
from synclient.emulator import Emulator
from synclient.sync.plan.dry_run import SyncPlan
from synclient.sync.sources import auto_view
from synclient.sync.sources.scratch_views import CREATED_ON_KEY, LEFTOVER_GRACE, SCRATCH_PROJECT_NAME
from synclient.transfer.partial import PARTIAL_SUFFIXES

KiB = 1024
MANIFEST = "SYNAPSE_METADATA_MANIFEST.tsv"
CSV_MANIFEST = "manifest.csv"
MANIFESTS = (MANIFEST, CSV_MANIFEST)
META_DIR = ".synclient"
PART = 64 * KiB  # TransferConfig's smallest part: files of a few hundred KiB take the multipart path
CONFIG = TransferConfig(max_workers=4, multipart_threshold=PART, part_size=PART, streams_per_file=4, stall_timeout=10.0)
COLLISIONS = ("overwrite.local", "keep.local", "keep.both")
#: include / exclude pattern pairs a sync may use (documented semantics in synclient/sync/plan/filters.py)
FILTERS: Tuple[Tuple[Tuple[str, ...], Tuple[str, ...]], ...] = (
    ((), ("*.bin",)),
    (("*.txt",), ()),
    ((), ("d",)),
    ((), ("d/*",)),
    (("d/*", "*.csv"), ()),
    ((), ("*(1)*",)),
    ((), ("e*",)),
    (("x*", "*.txt"), ("a*",)),
)
#: a hostile alphabet: keep.both copy names, the manifest's name, NFC/NFD twins, case twins, hidden names
COMMON_NAMES = (
    "a.txt",
    "a(1).txt",
    "a(2).txt",
    "b.txt",
    "b(1).txt",
    "x",
    "x(1)",
    "d",
    "e",
    "A.txt",
    "\u00e9.txt",
    "e\u0301.txt",
    "y z.csv",
    ".hidden",
    "data.bin",
)
RARE_NAMES = (MANIFEST, META_DIR, ".a.txt.7.synclient-partial")
MAX_DEPTH = 3
VIEW_NAME = "view of the model"  # a name no rule gives (the pools above)
#: the shard sizes (files) a sync over Dask draws from: one file per shard up to one shard for the whole run
DASK_SHARD_FILES = (1, 2, 5, 500)
#: after the SIGKILL of a CLI sync over Dask, its shards must have stopped on every worker within this long
ORPHAN_STOP_SECONDS = 30.0
#: bytes/s per data connection meanwhile: a file or part still to fetch then takes longer than that
ORPHAN_CRAWL = 4096
#: issue 34's view="auto": the share of steps whose sync (dry run and second run alike) makes its view itself, and the
#: share of SIGKILLed CLI syncs run with --view auto
AUTO_VIEW_SHARE = 0.25
AUTO_VIEW_KILL_SHARE = 0.3
#: WORTH_A_VIEW while an auto sync runs (the model's trees are small: at 50 no view would ever be made)
AUTO_VIEW_WORTH = (1, 2, 3, 4, 5)
#: what may keep an auto sync from its view (emulator knobs), "none" most often; each makes the run walk
AUTO_VIEW_FALLBACKS = ("none", "uncertified_user", "deny_create", "max_containers", "never_built")
AUTO_VIEW_FALLBACK_WEIGHTS = (10, 2, 2, 2, 2)
#: "never_built": a build time no test outlives, and BUILD_BOUND_SECONDS patched to this (the run then walks)
NEVER_BUILT_SECONDS_PER_1000 = 1e9
NEVER_BUILT_BOUND = 0.1
AUTO_VIEW_LOGGER = "synclient.sync.auto_view"  # (its notes say whether a run made its view, or why not)
KILL_CHILD = textwrap.dedent(
    """
    import dataclasses, os, sys
    from synclient.transfer.config import TransferConfig
    # the CLI with the model's small parts (it has no flag for them): a kill lands in multipart downloads too
    small = dict(max_workers=4, multipart_threshold=%d, part_size=%d, streams_per_file=4)
    TransferConfig.__init__.__defaults__ = tuple(small.get(f.name, f.default)
                                                 for f in dataclasses.fields(TransferConfig))
    if os.environ.get("MODEL_WORTH_A_VIEW"):  # --view auto on the model's small trees
        from synclient.sync.sources import auto_view
        auto_view.WORTH_A_VIEW = int(os.environ["MODEL_WORTH_A_VIEW"])
    from synclient.cli import main
    sys.exit(main(sys.argv[1:]))
"""
    % (PART, PART)
)


class ModelViolation(AssertionError):
    """An invariant broke; the message says which, where and how to replay."""


def parent_of(rel: str) -> str:
    return rel.rsplit("/", 1)[0] if "/" in rel else ""


def name_of(rel: str) -> str:
    return rel.rsplit("/", 1)[-1]


def join(parent: str, name: str) -> str:
    return f"{parent}/{name}" if parent else name


def ancestors_of(rel: str) -> List[str]:
    """The folders above ``rel``, nearest first (not the root)."""
    parts = rel.split("/")
    return ["/".join(parts[:i]) for i in range(len(parts) - 1, 0, -1)]


def under(rel: str, folder: str) -> bool:
    """``rel`` is ``folder`` itself or inside it."""
    return rel == folder or rel.startswith(folder + "/")


def is_copy_name(candidate: str, original: str) -> bool:
    """``d/a(3).txt`` is a keep.both copy name of ``d/a.txt``."""
    if parent_of(candidate) != parent_of(original):
        return False
    stem, suffix = os.path.splitext(name_of(original))
    name = name_of(candidate)
    if not (name.startswith(stem + "(") and name.endswith(")" + suffix)):
        return False
    number = name[len(stem) + 1 : len(name) - len(suffix) - 1]
    return number.isdigit()


def refusable(rel: str) -> bool:
    """Remote paths synclient may legitimately refuse (reserved names); refused or synced are both fine."""
    parts = rel.split("/")
    return (
        parts[0] == META_DIR or any(p.endswith(PARTIAL_SUFFIXES) for p in parts) or any(p in MANIFESTS for p in parts)
    )


def _pattern_matches(pattern: str, rel: str) -> bool:
    return fnmatchcase(rel, pattern) or ("/" not in pattern and fnmatchcase(name_of(rel), pattern))


def wanted(rel: str, include: Iterable[str], exclude: Iterable[str]) -> bool:
    """The documented filter semantics: a file is synced when it matches some include (or there is none) and no
    exclude; an exclude without '/' also matches any folder's name above it (the folder is not even listed)."""
    include, exclude = tuple(include), tuple(exclude)
    if include and not any(_pattern_matches(p, rel) for p in include):
        return False
    if any(_pattern_matches(p, rel) for p in exclude):
        return False
    folders = rel.split("/")[:-1]
    return not any("/" not in p and fnmatchcase(folder, p) for p in exclude for folder in folders)


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def file_md5(path: Path) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def manifest_digest(path: Path) -> str:
    """A manifest's rows but their contentType (a file known from a view row has none, see ``view="auto"``)."""
    tsv = path.name == MANIFEST
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE) if tsv else csv.reader(handle)
            rows = list(reader)
    except (UnicodeDecodeError, csv.Error):
        return file_md5(path)
    column = rows[0].index("contentType") if rows and "contentType" in rows[0] else None
    if column is not None:
        rows = [row[:column] + row[column + 1 :] for row in rows]
    return md5(repr(rows).encode())


def tree_snapshot(
    root: Path,
    *,
    skip_meta: bool,
    manifests_by_content: bool = False,
    hash_files: bool = False,
    manifests_without_content_type: bool = False,
) -> Dict[str, tuple]:
    """rel path -> (kind, ...) of everything under ``root`` without following symlinks."""
    found: Dict[str, tuple] = {}
    for folder, dirs, files in os.walk(root):
        base = Path(folder)
        if skip_meta and base == root:
            dirs[:] = [d for d in dirs if d != META_DIR]
        for name in sorted(dirs + files):
            path = base / name
            rel = path.relative_to(root).as_posix()
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                found[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                found[rel] = ("dir",)
            elif manifests_by_content and name in MANIFESTS and manifests_without_content_type:
                found[rel] = ("manifest", manifest_digest(path))
            elif manifests_by_content and name in MANIFESTS:
                found[rel] = ("file", info.st_size, file_md5(path))
            elif hash_files:
                found[rel] = ("file", info.st_size, info.st_mtime_ns, file_md5(path))
            else:
                found[rel] = ("file", info.st_size, info.st_mtime_ns)
    return found


def diff_snapshots(before: Dict[str, tuple], after: Dict[str, tuple], limit: int = 8) -> str:
    gone = sorted(set(before) - set(after))
    new = sorted(set(after) - set(before))
    changed = sorted(p for p in set(before) & set(after) if before[p] != after[p])
    parts = []
    if gone:
        parts.append(f"gone {gone[:limit]}")
    if new:
        parts.append(f"new {new[:limit]}")
    if changed:
        parts.append("changed " + ", ".join(f"{p}: {before[p]} -> {after[p]}" for p in changed[:limit]))
    return "; ".join(parts)


# -- the remote model ------------------------------------------------------------------------------------------------


@dataclass
class RemoteFile:
    entity_id: str
    version: int
    content: bytes


class Remote:
    """The remote tree as the rules made it, changed only together with the emulator."""

    def __init__(self, emu: Emulator, root_id: str) -> None:
        self.emu = emu
        self.root_id = root_id
        self.folders: Dict[str, str] = {"": root_id}  # rel path -> entity id ("" is the root)
        self.files: Dict[str, RemoteFile] = {}

    def names_in(self, folder: str) -> Set[str]:
        return {name_of(p) for p in list(self.files) + list(self.folders) if p and parent_of(p) == folder}

    def depth(self, rel: str) -> int:
        return rel.count("/") + 1 if rel else 0

    def by_id(self) -> Dict[str, str]:
        return {f.entity_id: rel for rel, f in self.files.items()}

    def entity_id(self, rel: str) -> str:
        return self.files[rel].entity_id if rel in self.files else self.folders[rel]

    def add_file(self, folder: str, name: str, content: bytes) -> str:
        # the model's names are a hostile server's (unicode twins): "unchecked" (Synapse refuses them)
        entity = self.emu.add_file(self.folders[folder], name, content, names="unchecked")
        self.files[join(folder, name)] = RemoteFile(entity, 1, content)
        return entity

    def add_folder(self, folder: str, name: str) -> str:
        entity = self.emu.add_folder(self.folders[folder], name, names="unchecked")
        self.folders[join(folder, name)] = entity
        return entity

    def new_version(self, rel: str, content: bytes) -> None:
        remote = self.files[rel]
        version = self.emu.add_version(remote.entity_id, content)
        self.files[rel] = RemoteFile(remote.entity_id, version, content)

    def delete(self, rel: str) -> None:
        self.emu.delete_entity(self.entity_id(rel))
        self.files = {p: f for p, f in self.files.items() if not under(p, rel)}
        self.folders = {p: i for p, i in self.folders.items() if not p or not under(p, rel)}

    def relocate(self, rel: str, new_rel: str) -> None:
        """Rename and/or move ``rel`` to ``new_rel`` (same entity)."""
        entity = self.entity_id(rel)
        if name_of(new_rel) != name_of(rel):
            self.emu.rename_entity(entity, name_of(new_rel), names="unchecked")
        if parent_of(new_rel) != parent_of(rel):
            self.emu.move_entity(entity, self.folders[parent_of(new_rel)])

        def moved(p: str) -> str:
            return new_rel + p[len(rel) :] if p and under(p, rel) else p

        self.files = {moved(p): f for p, f in self.files.items()}
        self.folders = {moved(p): i for p, i in self.folders.items()}


# -- the local model -------------------------------------------------------------------------------------------------


@dataclass
class Local:
    """What the user did in the target, and what synclient said it wrote there (rel paths)."""

    user_files: Dict[str, bytes] = field(default_factory=dict)
    planted: Dict[str, str] = field(default_factory=dict)  # rel -> "dir" | "symlink:<kind>"
    owned: Set[str] = field(default_factory=set)
    #: planted folders a remote folder of the same path was synced into: synclient cannot tell them from its own
    shared_dirs: Set[str] = field(default_factory=set)
    #: files a SIGKILLed run (or a shard of it that ran on) put in place but never indexed: synclient cannot tell
    #: them from the user's files, so they may stand in a remote folder's way as the user's do
    unindexed: Set[str] = field(default_factory=set)
    copies: Dict[str, str] = field(default_factory=dict)  # keep.both copy path -> the remote path it is a copy of

    def forget_under(self, rel: str) -> None:
        self.user_files = {p: c for p, c in self.user_files.items() if not under(p, rel)}
        self.planted = {p: k for p, k in self.planted.items() if not under(p, rel)}
        self.owned = {p for p in self.owned if not under(p, rel)}
        self.shared_dirs = {p for p in self.shared_dirs if not under(p, rel)}
        self.unindexed = {p for p in self.unindexed if not under(p, rel)}

    def user_things(self) -> List[Tuple[str, str]]:
        return [(p, "file") for p in self.user_files] + list(self.planted.items())

    def blocks(self, rel: str, *, exact_file_blocks: bool = False) -> Optional[str]:
        """A user thing that legitimately keeps ``rel`` (a remote file path) from converging, if any: one above it
        (where a folder must be), one below it (``rel`` is a folder locally), or a planted folder at it."""
        for path, kind in self.user_things() + [(p, "file") for p in sorted(self.unindexed)]:
            if under(rel, path) and rel != path:
                return path
            if under(path, rel) and rel != path:
                return path
            if path == rel and (kind == "dir" or exact_file_blocks):
                return path
        return None


@dataclass(frozen=True)
class AutoViewDraw:
    """How a ``view="auto"`` sync meets its view (drawn from the walk's ``{seed}:autoview`` generator)."""

    worth: int  # WORTH_A_VIEW meanwhile: the view is made once this many files needed their bundle call
    lag: bool  # view_lag on and the replica taken before the step's edits: a view made now has stale rows
    #: "none", or what keeps the view from being made or read: the knobs uncertified_user, deny_create,
    #: max_containers_per_view (``max_containers``), a build that never ends (``never_built``, the bound small)
    fallback: str = "none"
    max_containers: int = 1

    def knobs(self) -> dict:
        return {
            "uncertified_user": self.fallback == "uncertified_user",
            "deny_create": self.fallback == "deny_create",
            "max_containers_per_view": self.max_containers if self.fallback == "max_containers" else 35_000,
            "view_build_seconds_per_1000_files": NEVER_BUILT_SECONDS_PER_1000 if self.fallback == "never_built" else 0,
        }

    def __str__(self) -> str:
        text = f"worth {self.worth}" + (", stale rows" if self.lag else "")
        if self.fallback == "max_containers":
            return text + f", at most {self.max_containers} containers a view"
        return text + ("" if self.fallback == "none" else f", {self.fallback}")


@dataclass
class SyncOptions:
    delete: bool = False
    if_collision: str = "overwrite.local"
    include: Tuple[str, ...] = ()
    exclude: Tuple[str, ...] = ()
    manifest: str = "all"
    dry_run_first: bool = False
    view: Optional[str] = None  # a file view whose rows stand in for bundle calls; "auto": one the sync makes
    auto: Optional[AutoViewDraw] = None  # with view="auto": how it meets its view
    checksum: bool = False  # hash our own copies (get --checksum): the same outcome, as no rule corrupts in place
    # issue 35's controls (drawn from their own generator, see ModelWalk.random_controls)
    order_by: Optional[str] = None  # the order downloads start: no outcome changes
    bwlimit: Optional[str] = None  # only high limits: no outcome changes, runs not slowed
    min_size: Optional[int] = None  # bytes; a file outside the bounds is filtered like an excluded one
    max_size: Optional[int] = None
    #: only the trivial forms: the model's files are all created during the test, so "3650d" as min_age leaves out
    #: every file and as max_age keeps every one
    min_age: Optional[str] = None
    max_age: Optional[str] = None
    max_transfer: Optional[int] = None  # bytes; files left at the cap are reported SKIPPED "cap", partials kept
    cutoff_mode: str = "hard"

    @property
    def filtered(self) -> bool:
        return bool(self.include or self.exclude) or self.size_age_filtered

    @property
    def size_age_filtered(self) -> bool:
        return any(v is not None for v in (self.min_size, self.max_size, self.min_age, self.max_age))

    def wants(self, rel: str, size: Optional[int]) -> bool:
        """The include/exclude patterns and (for a remote file of ``size`` bytes) the size and age filters."""
        if not wanted(rel, self.include, self.exclude):
            return False
        if size is None:
            return True
        if self.min_age is not None:
            return False  # every file of the model is younger than the min_age drawn (see above)
        if self.min_size is not None and size < self.min_size:
            return False
        return self.max_size is None or size <= self.max_size

    def kwargs(self) -> dict:
        return dict(
            delete=self.delete,
            if_collision=self.if_collision,
            include=list(self.include),
            exclude=list(self.exclude),
            manifest=self.manifest,
            view=self.view,
            checksum=self.checksum,
            **{
                name: getattr(self, name)
                for name in ("order_by", "min_size", "max_size", "min_age", "max_age", "max_transfer")
                if getattr(self, name) is not None
            },
            **({"cutoff_mode": self.cutoff_mode} if self.max_transfer is not None else {}),
        )

    def cli_args(self) -> List[str]:
        args = ["--if-collision", self.if_collision, "--manifest", self.manifest]
        if self.delete:
            args.append("--delete")
        if self.checksum:
            args.append("--checksum")
        if self.view:
            args += ["--view", self.view]
        for pattern in self.include:
            args += ["--include", pattern]
        for pattern in self.exclude:
            args += ["--exclude", pattern]
        if self.order_by:
            args += ["--order-by", self.order_by]
        if self.bwlimit:
            args += ["--bwlimit", self.bwlimit]
        for flag, value in (("--min-size", self.min_size), ("--max-size", self.max_size)):
            if value is not None:
                args += [flag, f"{value}B"]
        for flag, value in (("--min-age", self.min_age), ("--max-age", self.max_age)):
            if value is not None:
                args += [flag, value]
        if self.max_transfer is not None:
            args += ["--max-transfer", f"{self.max_transfer}B", "--cutoff-mode", self.cutoff_mode]
        return args

    def __str__(self) -> str:
        text = f"delete={self.delete} {self.if_collision} manifest={self.manifest}"
        if self.include:
            text += f" include={list(self.include)}"
        if self.exclude:
            text += f" exclude={list(self.exclude)}"
        text += f" view={self.view}" if self.view else ""
        text += f" ({self.auto})" if self.auto else ""
        text += " checksum" if self.checksum else ""
        for name in ("order_by", "bwlimit", "min_size", "max_size", "min_age", "max_age", "max_transfer"):
            if getattr(self, name) is not None:
                text += f" {name}={getattr(self, name)}"
        text += f" cutoff={self.cutoff_mode}" if self.max_transfer is not None else ""
        return text + (" (dry run first)" if self.dry_run_first else "")


class _AutoViewNotes(logging.Handler):
    """The notes of ``synclient.sync.auto_view`` during one sync: whether it made its view, or why not."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: List[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


# -- the walk --------------------------------------------------------------------------------------------------------


class ModelWalk:
    """One seeded walk: ``run()`` raises :class:`ModelViolation` at the first broken invariant (or, with
    ``keep_going``, collects one violation per invariant name and raises them all at the end)."""

    def __init__(
        self,
        *,
        seed: int,
        steps: int,
        workdir: Path,
        emu: Emulator,
        keep_going: bool = False,
        log_path: Optional[Path] = None,
        dask_client=None,
    ) -> None:
        self.seed = seed
        self.steps = steps
        self.rng = random.Random(seed)
        # the checksum option's own draws: the walks of the other draws stay what each seed walked before it
        self.checksum_rng = random.Random(f"{seed}:checksum")
        # issue 35's controls: a generator of their own too, for the same reason
        self.controls_rng = random.Random(f"{seed}:controls")
        # issue 34's view="auto": its own generator too
        self.autoview_rng = random.Random(f"{seed}:autoview")
        self.view_lag = False  # the knob as the rules left it (an auto sync's stale rows turn it on for its step)
        #: views SIGKILLed CLI syncs left in the scratch project (aged at once: the next auto sync that makes or
        #: tries to make its view must remove them), and whether that project is left (maybe empty)
        self.leftover_views: Set[str] = set()
        self.scratch_left = False
        self.auto_notes = _AutoViewNotes()
        self.dask_client = dask_client  # a distributed.Client: some syncs fetch on its cluster (module docstring)
        self.dask_rng = random.Random(f"dask-{seed}")  # its own draws: the rules stay those of the seed
        self.emu = emu
        self.keep_going = keep_going
        self.verbose = os.environ.get("SYNCLIENT_MODEL_VERBOSE") == "1"  # every result of every sync in the log
        self.work = workdir / "w"  # holds only the target and the sentinel: anything else appearing is a leak
        self.target = self.work / "target"
        self.sentinel = self.work / "sentinel"
        self.home = workdir / "home"  # the CLI child's HOME (no config, no keyring)
        for folder in (self.target, self.sentinel, self.home):
            folder.mkdir(parents=True)
        self.root = Path(os.path.realpath(self.target))
        self.log_path = log_path or workdir / "model-walk.log"
        self.log: List[str] = []
        self.step = 0
        self.violations: Dict[str, str] = {}
        self.stats = Counter()
        self.counter = 0  # for unique local names
        self.local = Local()
        self._make_sentinel()
        root_id = emu.seed_spec(
            {
                "projects": [
                    {"name": f"model-{seed}", "children": [{"type": "entityview", "name": VIEW_NAME, "scope": [""]}]}
                ]
            }
        )[f"model-{seed}"]
        self.view_id = emu.resolve(root_id, VIEW_NAME)
        self.seeded_projects = set(emu.info()["projects"])
        self.remote = Remote(emu, root_id)
        self.platform = Platform(endpoint=emu.endpoint, token=emu.token)

    # -- bookkeeping -----------------------------------------------------------------------------------------------

    def note(self, text: str) -> None:
        self.log.append(f"step {self.step}: {text}")

    def violation(self, invariant: str, detail: str) -> None:
        self.stats["violations"] += 1
        message = f"model test: invariant {invariant!r} broke at step {self.step} of seed {self.seed}\n{detail}\n"
        if self.keep_going:
            self.violations.setdefault(invariant, message)
            self.note(f"VIOLATION {invariant}: {detail.splitlines()[0][:300]}")
            return
        raise ModelViolation(self._with_replay(message))

    def _with_replay(self, message: str) -> str:
        self.log_path.write_text("\n".join(self.log) + "\n", encoding="utf-8")
        shown = self.log if len(self.log) <= 150 else ["..."] + self.log[-150:]
        over_dask = " SYNCLIENT_MODEL_DASK=1" if self.dask_client is not None else ""
        return (
            message + f"replay: SYNCLIENT_MODEL_SEED={self.seed} SYNCLIENT_MODEL_STEPS={self.step}{over_dask} "
            f"python -m pytest integration_tests/model -x\n"
            f"rules and syncs so far ({len(self.log)} lines; all in {self.log_path}):\n  " + "\n  ".join(shown)
        )

    def close(self) -> None:
        self.platform.close()

    # -- the loop ----------------------------------------------------------------------------------------------------

    def run(self) -> Counter:
        try:
            for step in range(1, self.steps + 1):
                self.step = step
                auto = self.random_auto()  # before the rules: a lagging one's replica predates the step's edits
                rules = self.rng.choice((1, 1, 1, 2, 2, 3))
                killed = False
                for _ in range(rules):
                    if self.rng.random() < 0.035:
                        killed = True
                        break  # a kill is always the last rule of its step: the step's sync follows it
                    self.apply_random_rule()
                if killed:
                    kill_options = self.random_options(dry_allowed=False, filters_allowed=False)
                    self.kill_mid_sync(self.auto_for_kill(kill_options))
                options = self.random_options()
                if killed and self.rng.random() < 0.6:
                    options = dataclasses.replace(options, dry_run_first=True)
                if auto is not None:
                    options = dataclasses.replace(options, view="auto", auto=auto)
                self.sync_and_check(options)
        finally:
            self.log_path.write_text("\n".join(self.log) + "\n", encoding="utf-8")
        if self.violations:
            raise ModelViolation(
                self._with_replay(
                    f"{len(self.violations)} distinct invariants broke (keep-going mode):\n\n"
                    + "\n".join(self.violations.values())
                )
            )
        return self.stats

    def random_options(self, *, dry_allowed: bool = True, filters_allowed: bool = True) -> SyncOptions:
        rng = self.rng
        include, exclude = rng.choice(FILTERS) if filters_allowed and rng.random() < 0.15 else ((), ())
        return SyncOptions(
            delete=rng.random() < 0.45,
            if_collision=rng.choices(COLLISIONS, weights=(5, 2, 2))[0],
            include=include,
            exclude=exclude,
            manifest=rng.choices(("all", "root", "suppress"), weights=(7, 1, 1))[0],
            dry_run_first=dry_allowed and rng.random() < 0.4,
            view=self.view_id if rng.random() < 0.4 else None,
            checksum=self.checksum_rng.random() < 0.2,
            **self.random_controls(filters_allowed=filters_allowed),
        )

    def random_controls(self, *, filters_allowed: bool) -> dict:
        """Issue 35's controls for some syncs: the download order and a high bandwidth limit (no outcome changes),
        size and age filters (a file left out is treated as an excluded one) and a transfer cap (files left at it
        are treated as failed-and-kept ones; the second run goes on without the cap)."""
        rng = self.controls_rng
        controls: dict = {}
        if rng.random() < 0.3:
            key = rng.choice(("size", "name", "modtime"))
            controls["order_by"] = rng.choice((key, f"{key},ascending", f"{key},descending", f"{key},desc"))
        if rng.random() < 0.2:
            controls["bwlimit"] = rng.choice(("512M", "1G", "00:00,512M 12:00,1G"))
        if rng.random() < 0.15 and filters_allowed:
            kind = rng.choice(("min_size", "max_size", "both", "min_age", "max_age"))
            if kind in ("min_size", "both"):
                controls["min_size"] = rng.choice((1, 64, 1000, PART))
            if kind in ("max_size", "both"):
                controls["max_size"] = rng.choice((0, 64, 2000, PART + 1, 3 * PART))
            if kind in ("min_age", "max_age"):
                controls[kind] = "3650d"
        if rng.random() < 0.12 and filters_allowed:
            controls["max_transfer"] = rng.choice((1, 3000, PART, 3 * PART))
            controls["cutoff_mode"] = rng.choice(("hard", "soft", "cautious"))
        return controls

    def random_auto(self) -> Optional[AutoViewDraw]:
        """Issue 34: whether this step's sync uses view="auto", and how it meets its view; with stale rows, the
        view lag is turned on and the replica a created view is built from is taken now, before the step's edits."""
        rng = self.autoview_rng
        if rng.random() >= AUTO_VIEW_SHARE:
            return None
        draw = AutoViewDraw(
            worth=rng.choice(AUTO_VIEW_WORTH),
            lag=rng.random() < 0.35,
            fallback=rng.choices(AUTO_VIEW_FALLBACKS, weights=AUTO_VIEW_FALLBACK_WEIGHTS)[0],
            max_containers=rng.randint(1, 4),
        )
        if draw.lag:
            self.emu.set_knobs(view_lag=True)
            self.emu.refresh_views()
            self.note("remote: views lag from here to this step's sync (a view it makes has the rows of now)")
        return draw

    def auto_for_kill(self, options: SyncOptions) -> SyncOptions:
        """Some SIGKILLed CLI syncs run with --view auto; half of those build their view for ever, and are killed
        while it builds (or once their bytes are served, whichever comes first): they leave their view."""
        rng = self.autoview_rng
        if rng.random() >= AUTO_VIEW_KILL_SHARE:
            return options
        # (a kill's sync has few files to fetch: the view is made mostly from the first one on, and a view that
        # builds for ever always: that kill leaves it)
        fallback = "never_built" if rng.random() < 0.5 else "none"
        auto = AutoViewDraw(
            worth=1 if fallback == "never_built" else rng.choice((1, 2, 3)), lag=False, fallback=fallback
        )
        return dataclasses.replace(options, view="auto", auto=auto)

    def apply_random_rule(self) -> None:
        many = len(self.remote.files) > 24
        rules = [
            (self.r_add_file, 2 if many else 8),
            (self.r_add_big_file, 0.6),
            (self.r_add_folder, 1 if many else 3),
            (self.r_delete, 5 if many else 2),
            (self.r_rename, 3),
            (self.r_move, 3),
            (self.r_new_version, 5),
            (self.r_file_to_folder, 1.2),
            (self.r_folder_to_file, 1.2),
            (self.l_edit, 3),
            (self.l_touch_back, 1.5),
            (self.l_delete, 2),
            (self.l_plant_file, 1.5),
            (self.l_replace_by_folder, 1),
            (self.l_replace_by_symlink, 2),
            (self.l_cleanup, 2.5),
            (self.r_view_lags, 1.5),
        ]
        rule = self.rng.choices([r for r, _ in rules], weights=[w for _, w in rules])[0]
        rule()

    # -- content -----------------------------------------------------------------------------------------------------

    def content(self) -> bytes:
        size = self.rng.choice((0, self.rng.randint(1, 64), self.rng.randint(100, 3000)))
        return self.rng.randbytes(size)

    def big_content(self) -> bytes:
        return self.rng.randbytes(self.rng.randint(PART + 1, 4 * PART + 999))

    def pick_name(self, folder: str) -> Optional[str]:
        taken = self.remote.names_in(folder)
        pool = RARE_NAMES if self.rng.random() < 0.08 else COMMON_NAMES
        free = [n for n in pool if n not in taken]
        if not free:
            free = [n for n in COMMON_NAMES + RARE_NAMES if n not in taken]
        return self.rng.choice(free) if free else None

    def pick_folder(self, *, max_depth: int = MAX_DEPTH - 1) -> str:
        return self.rng.choice(sorted(p for p in self.remote.folders if self.remote.depth(p) <= max_depth))

    # -- remote rules ------------------------------------------------------------------------------------------------

    def r_add_file(self, big: bool = False) -> None:
        folder = self.pick_folder()
        name = self.pick_name(folder)
        if name is None:
            return
        data = self.big_content() if big else self.content()
        entity = self.remote.add_file(folder, name, data)
        self.note(f"remote: add file {join(folder, name)!r} ({len(data)} bytes, {entity})")

    def r_add_big_file(self) -> None:
        self.r_add_file(big=True)

    def r_add_folder(self) -> None:
        folder = self.pick_folder(max_depth=MAX_DEPTH - 2)
        name = self.pick_name(folder)
        if name is None:
            return
        self.remote.add_folder(folder, name)
        self.note(f"remote: add folder {join(folder, name)!r}")
        if self.rng.random() < 0.7:
            child = self.pick_name(join(folder, name))
            data = self.content()
            self.remote.add_file(join(folder, name), child, data)
            self.note(f"remote: add file {join(join(folder, name), child)!r} ({len(data)} bytes)")

    def _any_entity(self) -> Optional[str]:
        paths = sorted(list(self.remote.files) + [p for p in self.remote.folders if p])
        return self.rng.choice(paths) if paths else None

    def r_delete(self) -> None:
        rel = self._any_entity()
        if rel is not None:
            self.remote.delete(rel)
            self.note(f"remote: delete {rel!r}")

    def r_rename(self) -> None:
        rel = self._any_entity()
        if rel is None:
            return
        name = self.pick_name(parent_of(rel))
        if name is None:
            return
        self.remote.relocate(rel, join(parent_of(rel), name))
        self.note(f"remote: rename {rel!r} -> {name!r}")

    def r_move(self) -> None:
        rel = self._any_entity()
        if rel is None:
            return
        height = max(
            self.remote.depth(p) - self.remote.depth(rel)
            for p in list(self.remote.files) + list(self.remote.folders)
            if under(p, rel)
        )
        targets = sorted(
            p
            for p in self.remote.folders
            if p != parent_of(rel)
            and not under(p, rel)
            and self.remote.depth(p) + 1 + height <= MAX_DEPTH
            and name_of(rel) not in self.remote.names_in(p)
        )
        if not targets:
            return
        folder = self.rng.choice(targets)
        self.remote.relocate(rel, join(folder, name_of(rel)))
        self.note(f"remote: move {rel!r} into {folder or '<root>'!r}")

    def r_new_version(self) -> None:
        if not self.remote.files:
            return
        rel = self.rng.choice(sorted(self.remote.files))
        old = self.remote.files[rel].content
        kind = self.rng.choices(("new", "same-size", "same-bytes", "big"), weights=(6, 2, 1, 1))[0]
        data = {
            "new": self.content,
            "big": self.big_content,
            "same-bytes": lambda: old,
            "same-size": lambda: self.rng.randbytes(len(old)) if old else b"z",
        }[kind]()
        self.remote.new_version(rel, data)
        self.note(f"remote: new version of {rel!r} ({kind}, {len(data)} bytes) -> v{self.remote.files[rel].version}")

    def r_view_lags(self) -> None:
        """The file view reads its rows from a snapshot taken now (later edits are not in it), or live again."""
        lag = self.rng.random() < 0.7
        self.stats["view lags from here"] += lag
        self.view_lag = lag
        self.emu.set_knobs(view_lag=lag)
        self.emu.refresh_views()
        self.note(f"remote: the view {'lags from now on' if lag else 'is live'}")

    def r_file_to_folder(self) -> None:
        files = sorted(p for p in self.remote.files if self.remote.depth(p) < MAX_DEPTH)
        if not files:
            return
        rel = self.rng.choice(files)
        self.remote.delete(rel)
        self.remote.add_folder(parent_of(rel), name_of(rel))
        child = self.pick_name(rel)
        data = self.content()
        self.remote.add_file(rel, child, data)
        self.note(f"remote: file {rel!r} becomes a folder holding {child!r} ({len(data)} bytes)")

    def r_folder_to_file(self) -> None:
        folders = sorted(p for p in self.remote.folders if p)
        if not folders:
            return
        rel = self.rng.choice(folders)
        self.remote.delete(rel)
        data = self.content()
        self.remote.add_file(parent_of(rel), name_of(rel), data)
        self.note(f"remote: folder {rel!r} becomes a file ({len(data)} bytes)")

    # -- local rules -------------------------------------------------------------------------------------------------

    def local_entries(self) -> Tuple[List[str], List[str], List[str]]:
        """(regular files, real folders, symlinks) in the target, without following symlinks; synclient's
        metadata (``.synclient``, manifests, partials) left out."""
        files, dirs, links = [], [], []
        for rel, entry in tree_snapshot(self.root, skip_meta=True).items():
            name = name_of(rel)
            if name in MANIFESTS or name.endswith(PARTIAL_SUFFIXES):
                continue
            {"file": files, "dir": dirs, "link": links}[entry[0]].append(rel)
        return sorted(files), sorted(dirs), sorted(links)

    def _unique(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def l_edit(self) -> None:
        files, _, _ = self.local_entries()
        if not files:
            return
        rel = self.rng.choice(files)
        path = self.root / rel
        remote = self.remote.files.get(rel)
        if remote is not None and self.rng.random() < 0.2:
            data, how = remote.content, "to the remote's bytes"
        else:
            data, how = self.rng.randbytes(self.rng.randint(0, 500)), "to new bytes"
        before = os.lstat(path).st_mtime_ns
        path.write_bytes(data)
        later = before + self.rng.randint(2, 50) * 1_000_000_000 + self.rng.randint(1, 999)
        os.utime(path, ns=(later, later))  # a different mtime even if the write landed in the same tick
        self.local.user_files[rel] = data
        self.local.owned.discard(rel)
        self.note(f"local: edit {rel!r} {how} ({len(data)} bytes)")

    def l_touch_back(self) -> None:
        files, _, _ = self.local_entries()
        if not files:
            return
        rel = self.rng.choice(files)
        path = self.root / rel
        info = os.lstat(path)
        data = self.rng.randbytes(info.st_size + self.rng.randint(1, 40))  # another size: detectable by stat
        path.write_bytes(data)
        os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
        self.local.user_files[rel] = data
        self.local.owned.discard(rel)
        self.note(f"local: edit {rel!r} ({info.st_size} -> {len(data)} bytes) and touch its mtime back")

    def _remove(self, rel: str) -> None:
        path = self.root / rel
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
        self.local.forget_under(rel)

    def l_delete(self) -> None:
        files, dirs, links = self.local_entries()
        choices = files + dirs + links
        if not choices:
            return
        rel = self.rng.choice(choices)
        self._remove(rel)
        self.note(f"local: delete {rel!r}")

    def l_plant_file(self) -> None:
        _, dirs, _ = self.local_entries()
        folder = self.rng.choice([""] + dirs)
        taken = set(os.listdir(self.root / folder)) if folder else set(os.listdir(self.root))
        pool = [n for n in COMMON_NAMES if n not in taken]
        if not pool:
            return
        rel = join(folder, self.rng.choice(pool))
        data = self.rng.randbytes(self.rng.randint(0, 300))
        (self.root / rel).write_bytes(data)
        self.local.user_files[rel] = data
        self.note(f"local: new file of the user's {rel!r} ({len(data)} bytes)")

    def l_replace_by_folder(self) -> None:
        files, _, links = self.local_entries()
        if not files + links:
            return
        rel = self.rng.choice(files + links)
        self._remove(rel)
        (self.root / rel).mkdir()
        inner = join(rel, "mine.txt")
        data = self.rng.randbytes(self.rng.randint(1, 100))
        (self.root / inner).write_bytes(data)
        self.local.planted[rel] = "dir"
        self.local.user_files[inner] = data
        self.note(f"local: replace {rel!r} by a folder holding the user's {inner!r}")

    def l_replace_by_symlink(self) -> None:
        files, dirs, links = self.local_entries()
        if not files + dirs + links:
            return
        rel = self.rng.choice(files + dirs + links)
        path = self.root / rel
        is_dir = rel in dirs
        kinds = ["out-file", "out-dir", "out-dangling", "in-file", "in-own-dir"] + (["in-alias-dir"] if dirs else [])
        if is_dir:
            kinds.append("move-out")
            kinds.append("move-out")
        kind = self.rng.choice(kinds)
        if kind == "move-out":  # the user moved the folder out of the target and left a symlink to it
            moved = self.sentinel / self._unique("moved-")
            os.rename(path, moved)
            self.local.forget_under(rel)
            destination = str(moved)
            self.sentinel_state = self._sentinel_snapshot()
        else:
            self._remove(rel)
            if kind == "out-file":
                destination = str(self.sentinel / "dir" / "a.txt")
            elif kind == "out-dir":
                destination = str(self.sentinel / "dir")
            elif kind == "out-dangling":
                destination = str(self.sentinel / self._unique("ghost-"))
            elif kind == "in-file":
                others, _, _ = self.local_entries()
                if not others:
                    return
                destination = os.path.relpath(self.root / self.rng.choice(others), path.parent)
            elif kind == "in-own-dir":
                own = self._unique("_mine-")
                (self.root / own).mkdir()
                (self.root / own / "note.txt").write_bytes(b"the user's folder\n")
                self.local.planted[own] = "dir"
                self.local.user_files[join(own, "note.txt")] = b"the user's folder\n"
                destination = str(self.root / own)
            else:  # in-alias-dir: another folder synclient made, so two remote folders land in one
                _, now_dirs, _ = self.local_entries()
                candidates = [d for d in now_dirs if not under(d, rel) and not under(rel, d)]
                if not candidates:
                    return
                destination = os.path.relpath(self.root / self.rng.choice(candidates), path.parent)
        os.symlink(destination, path)
        self.local.planted[rel] = f"symlink:{kind}"
        self.note(f"local: replace {rel!r} ({'folder' if is_dir else 'file'}) by a symlink ({kind}) -> {destination!r}")

    def l_cleanup(self) -> None:
        """The user tidies up: every file and folder of theirs goes (what synclient wrote stays)."""
        if not self.local.user_things():
            return
        for rel in sorted(self.local.planted, key=lambda p: -p.count("/")):
            if os.path.lexists(self.root / rel):
                self._remove(rel)
        for rel in sorted(self.local.user_files):
            if os.path.lexists(self.root / rel):
                os.unlink(self.root / rel)
        self.local.user_files.clear()
        self.local.planted.clear()
        self.note("local: the user removes all their own files, folders and symlinks")

    # -- the sentinel ------------------------------------------------------------------------------------------------

    def _make_sentinel(self) -> None:
        (self.sentinel / "dir" / "d").mkdir(parents=True)
        for rel in ("f.txt", "a.txt", "dir/a.txt", "dir/b.txt", "dir/x", f"dir/{MANIFEST}", "dir/d/a.txt"):
            (self.sentinel / rel).write_bytes(f"sentinel {rel}\n".encode())
        self.sentinel_state = self._sentinel_snapshot()

    def _sentinel_snapshot(self) -> Tuple[Dict[str, tuple], List[str]]:
        return tree_snapshot(self.sentinel, skip_meta=False, hash_files=True), sorted(os.listdir(self.work))

    def check_outside(self, when: str) -> None:
        now = self._sentinel_snapshot()
        if now != self.sentinel_state:
            detail = diff_snapshots(self.sentinel_state[0], now[0])
            if now[1] != self.sentinel_state[1]:
                detail += f"; beside the target: {self.sentinel_state[1]} -> {now[1]}"
            self.sentinel_state = now  # report each change once
            self.violation("outside-unchanged", f"{when} changed files outside the target: {detail}")

    # -- syncing -----------------------------------------------------------------------------------------------------

    def run_sync(self, options: SyncOptions, *, dry_run: bool = False):
        dask = self._dask_for_sync()
        if options.max_transfer is not None:
            dask = None  # the cap counts one process's downloads: refused over Dask (drawn anyway: same draws)
        if dask is not None:
            self.stats["syncs over dask"] += 1
            self.note(f"  ({'dry run' if dry_run else 'sync'} over Dask, shards of {dask.shard_sizes.files} files)")
        self.auto_notes.messages.clear()
        try:
            results = sync_from_platform(
                self.remote.root_id,
                self.target,
                platform=self.platform,
                config=dataclasses.replace(CONFIG, bwlimit=options.bwlimit) if options.bwlimit else CONFIG,
                on_error="continue",
                progress=False,
                dry_run=dry_run,
                dask=dask,
                **options.kwargs(),
            )
        except Exception as exc:  # noqa: BLE001 - any exception is the finding
            self.violation(
                "sync-raised", f"{'dry run' if dry_run else 'sync'} with {options} raised {type(exc).__name__}: {exc}"
            )
            results = None
        self.check_auto_view(options, dry_run=dry_run)  # (also after a run that raised, in keep-going mode)
        return results

    def _dask_for_sync(self):
        """Over Dask: this sync's settings (three syncs in four), or None (a local sync)."""
        if self.dask_client is None or self.dask_rng.random() >= 0.75:
            return None
        from synclient.cluster.driver import DaskSettings
        from synclient.cluster.shards import ShardSizes

        return DaskSettings(self.dask_client, shard_sizes=ShardSizes(files=self.dask_rng.choice(DASK_SHARD_FILES)))

    def sync_and_check(self, options: SyncOptions) -> None:
        with self.auto_view_setting(options.auto):
            self._sync_and_check(options)

    @contextlib.contextmanager
    def auto_view_setting(self, auto: Optional[AutoViewDraw]) -> Iterator[None]:
        """While a view="auto" sync runs (its dry run and second run too): WORTH_A_VIEW patched low (the model's
        trees are small), the knobs of its fallback, its notes recorded; then every knob as the rules left it."""
        if auto is None:
            yield
            return
        logger = logging.getLogger(AUTO_VIEW_LOGGER)
        saved = (auto_view.WORTH_A_VIEW, auto_view.BUILD_BOUND_SECONDS, logger.level, logger.propagate)
        auto_view.WORTH_A_VIEW = auto.worth
        if auto.fallback == "never_built":
            auto_view.BUILD_BOUND_SECONDS = NEVER_BUILT_BOUND
        logger.setLevel(logging.INFO)
        logger.propagate = False  # (the test shows only errors of synclient's)
        logger.addHandler(self.auto_notes)
        self.emu.set_knobs(**auto.knobs())
        try:
            yield
        finally:
            logger.removeHandler(self.auto_notes)
            auto_view.WORTH_A_VIEW, auto_view.BUILD_BOUND_SECONDS, level, logger.propagate = saved
            logger.setLevel(level)
            self.emu.set_knobs(view_lag=self.view_lag, **AutoViewDraw(worth=1, lag=False).knobs())

    def check_auto_view(self, options: SyncOptions, *, dry_run: bool) -> None:
        """After every sync: one note at most on the temporary view; the view made exactly when nothing keeps it
        from being made; nothing left in the account (no project but the seeded ones, an empty trash can), but
        what a SIGKILLed run left, and that too once a run made its view."""
        made = [m for m in self.auto_notes.messages if "planned from a temporary file view" in m]
        walked = [m for m in self.auto_notes.messages if "each file takes its own bundle call" in m]
        self.auto_notes.messages.clear()
        if made or walked:
            self.note(f"  ({(made + walked)[0]})")
        auto = options.auto
        if auto is not None and not dry_run:
            self.stats["auto runs (first and second)"] += 1
            self.stats["auto views made and read"] += bool(made)
            self.stats["auto views made with stale rows"] += bool(made) and auto.lag
            self.stats["auto syncs walked instead"] += bool(walked)
            if len(made) + len(walked) > 1:
                self.violation(
                    "auto-view-notes",
                    f"a sync with {options} said {len(made) + len(walked)} times how it planned: {made + walked}",
                )
            blocked = auto.fallback in ("uncertified_user", "deny_create", "never_built") or (
                auto.fallback == "max_containers" and len(self.remote.folders) > auto.max_containers
            )
            if made and blocked:
                self.violation("auto-view-fallback", f"a sync with {options} made its view: {made[0]}")
            if walked and not blocked:
                self.violation(
                    "auto-view-fallback",
                    f"a sync with {options} walked instead of making its view "
                    f"({len(self.remote.folders)} containers): {walked[0]}",
                )
        elif made or walked:
            self.violation(
                "auto-view-notes", f"a {'dry run' if dry_run else 'sync'} ({options}) made a view: {(made + walked)[0]}"
            )
        # a run that made its view swept the scratch project while it built (one refused its view sweeps nothing:
        # the sweep dates leftovers by the platform's clock, the new view's createdOn): what killed runs left is gone
        if made or (walked and auto is not None and auto.fallback == "never_built"):
            self.stats["leftover views removed"] += len(self.leftover_views)
            self.leftover_views, self.scratch_left = set(), False
        self.check_account(f"after a {'dry run' if dry_run else 'sync'} with {options}")

    def check_account(self, when: str) -> None:
        projects = self.emu.info()["projects"]
        extra = sorted(set(projects) - self.seeded_projects)
        problems = []
        trash = self.emu.trash()
        if trash:
            problems.append(f"the trash can holds {[(t['id'], t['name'], t['kind']) for t in trash][:6]}")
        if self.scratch_left and len(extra) == 1 and extra[0].startswith(SCRATCH_PROJECT_NAME.split("{")[0]):
            scratch = projects[extra[0]]
            held = {e["id"]: e for e in self.emu.project_entities(scratch) if e["id"] != scratch}
            if set(held) != self.leftover_views:
                problems.append(
                    f"the scratch project {scratch} holds {sorted((i, e['name'], e['kind']) for i, e in held.items())}"
                    f", not just the views killed runs left: {sorted(self.leftover_views)}"
                )
        elif extra or self.scratch_left:
            problems.append(
                f"projects {extra} beside the seeded ones"
                + (f" (the views killed runs left: {sorted(self.leftover_views)})" if self.scratch_left else "")
            )
        if problems:
            self.violation("account-not-clean", f"{when}: " + "; ".join(problems))

    def _sync_and_check(self, options: SyncOptions) -> None:
        self.stats["syncs"] += 1
        self.stats["syncs planned from the view"] += bool(options.view) and options.auto is None
        self.stats["syncs with view=auto"] += options.auto is not None
        self.note(f"sync: {options}")
        plan = None
        if options.dry_run_first:
            before = tree_snapshot(self.root, skip_meta=False)
            plan = self.run_sync(options, dry_run=True)
            after = tree_snapshot(self.root, skip_meta=False)
            if before != after:
                self.violation(
                    "dry-run-wrote", f"the dry run with {options} changed the target: {diff_snapshots(before, after)}"
                )
            self.check_outside("the dry run")
        # a planted folder at the path of a remote folder this sync lists is the remote folder's local folder
        self.local.shared_dirs |= {
            rel
            for rel, kind in self.local.planted.items()
            if kind == "dir" and rel in self.remote.folders and wanted(join(rel, "f"), options.include, options.exclude)
        }
        results = self.run_sync(options)
        if results is None:
            return
        self.stats["files"] += len(results)
        for name in ("order_by", "bwlimit", "min_size", "max_size", "min_age", "max_age", "max_transfer"):
            self.stats[f"syncs with {name}"] += getattr(options, name) is not None
        self.stats["files left at the cap"] += sum(r.action == "cap" for r in results)
        self.note("  -> " + results.report.summary().split(";")[0] + self._failure_note(results))
        if self.verbose:
            self._note_results(results)
        self.check_results(options, results, "the sync")
        if isinstance(plan, SyncPlan) and options.max_transfer is None:  # a hard cap cuts where the bytes fall
            self.check_plan(options, plan, results)
        self.check_convergence(options, results)
        self.check_manifests(options, results)
        self.second_run(options, results)

    def _note_results(self, results) -> None:
        by_id = self.remote.by_id()
        for r in sorted(results, key=lambda r: str(r.path)):
            error = f" {type(r.error).__name__}: {r.error}" if r.error else ""
            self.note(
                f"     {self._rel(r.path)!r} {r.entity_id} v{r.version} ({by_id.get(r.entity_id)!r}) "
                f"{r.status.value} {r.action}{error}"
            )

    def _failure_note(self, results) -> str:
        failures = [r for r in results if r.status is SyncStatus.FAILED]
        if not failures:
            return ""
        shown = "; ".join(
            f"{self._rel(r.path) if r.path else r.entity_id}: {type(r.error).__name__}" for r in failures[:4]
        )
        return f" (failed: {shown}{' ...' if len(failures) > 4 else ''})"

    def _rel(self, path) -> Optional[str]:
        if path is None:
            return None
        rel = os.path.relpath(os.path.normpath(str(path)), self.root)
        return None if rel.startswith("..") else Path(rel).as_posix()

    def _manifest_texts(self) -> Dict[str, str]:
        texts = {}
        for folder, dirs, files in os.walk(self.root):
            if Path(folder) == self.root and META_DIR in dirs:
                dirs.remove(META_DIR)
            for name in set(files) & set(MANIFESTS):
                path = Path(folder) / name
                texts[path.relative_to(self.root).as_posix()] = path.read_text(encoding="utf-8", errors="replace")
        return texts

    def _manifest_changes(self, before: Dict[str, str], limit: int = 3) -> List[str]:
        """How the manifests changed (the first lines that differ), for a violation's message."""
        changes = []
        for rel, text in sorted(self._manifest_texts().items()):
            old = before.get(rel)
            if old is None or old == text:
                continue
            gone = [line for line in old.splitlines() if line not in text.splitlines()]
            new = [line for line in text.splitlines() if line not in old.splitlines()]
            changes.append(f"{rel}: lines {gone[:limit]} -> {new[:limit]}")
        return changes[:limit]

    def second_run(self, options: SyncOptions, first) -> None:
        # after a capped run the second goes on without the cap: it must finish the files left and leave the others
        options = dataclasses.replace(options, max_transfer=None)
        # a view="auto" run plans the files before its view from their bundles, the others from its rows (no
        # contentType): which ones varies from run to run, so the second run's manifests may differ in contentType
        loose = options.auto is not None
        before = tree_snapshot(
            self.root, skip_meta=True, manifests_by_content=True, manifests_without_content_type=loose
        )
        manifests_before = self._manifest_texts()
        self.emu.reset_stats()
        again = self.run_sync(options)
        if again is None:
            return
        data_requests = self.emu.stats()["data_requests"]
        paths = {**{i: p for p, i in self.remote.folders.items()}, **self.remote.by_id()}
        # a refused reserved name fails every run without fetching anything: it does not make the run unclean (a
        # file left at the cap does, wherever it is: under a folder named like a manifest too)
        failed_first = {
            r.entity_id
            for r in first
            if r.action == "cap"
            or (r.status is SyncStatus.FAILED and not (r.entity_id in paths and refusable(paths[r.entity_id])))
        }
        ok_first = {r.entity_id for r in first if r.status is not SyncStatus.FAILED and r.action != "cap"}
        after = tree_snapshot(
            self.root, skip_meta=True, manifests_by_content=True, manifests_without_content_type=loose
        )
        self.check_results(options, again, "the second identical sync")
        acted = [r for r in again if r.status in (SyncStatus.DOWNLOADED, SyncStatus.DELETED)]
        if not failed_first:
            problems = []
            if data_requests:
                problems.append(f"{data_requests} data requests")
            if acted:
                problems.append("acted on " + ", ".join(f"{self._rel(r.path)} ({r.action})" for r in acted[:6]))
            if before != after:
                problems.append(f"local changes: {diff_snapshots(before, after)}")
                problems += self._manifest_changes(manifests_before)
            if problems:
                self.violation(
                    "second-run-not-noop",
                    f"a second identical sync ({options}) after a clean one was not a no-op: " + "; ".join(problems),
                )
            return
        acted = [r for r in acted if r.entity_id in ok_first and r.entity_id not in failed_first]
        if acted:
            self.violation(
                "second-run-not-noop",
                f"a second identical sync ({options}) acted again on files the "
                "first one had settled: " + ", ".join(f"{self._rel(r.path)} ({r.action})" for r in acted[:6]),
            )

    # -- invariants on one run ---------------------------------------------------------------------------------------

    def check_results(self, options: SyncOptions, results, when: str) -> None:
        self.check_outside(when)
        by_id = self.remote.by_id()
        paths: Dict[str, Set[str]] = {}
        real_paths: Dict[str, Set[str]] = {}
        per_entity: Counter = Counter()
        failed_ids = {r.entity_id for r in results if r.status is SyncStatus.FAILED}
        settled_fetch: Dict[str, str] = {}  # rel -> action of fetching results (download/overwrite/keep-both)
        for result in results:
            rel = self._rel(result.path)
            if result.path is not None and rel is None:
                self.violation("outside-unchanged", f"{when}: a result's path is outside the target: {result!r}")
                continue
            if result.status is SyncStatus.FAILED:
                continue
            paths.setdefault(os.path.normpath(str(result.path)), set()).add(result.entity_id)
            if result.status is not SyncStatus.DELETED and result.action != "keep-local":
                real_paths.setdefault(os.path.realpath(result.path), set()).add(result.entity_id)
            remote_rel = by_id.get(result.entity_id)
            vanished = result.action == "delete" or (
                result.action == "keep-local" and (remote_rel is None or (rel != remote_rel))
            )
            if vanished:
                self._check_vanished(options, result, rel, remote_rel, when)
                continue
            per_entity[result.entity_id] += 1
            if remote_rel is None:
                self.violation(
                    "synced-stale-version",
                    f"{when}: a result for {result.entity_id}, which does not exist remotely: {result!r}",
                )
                continue
            if options.filtered and not options.wants(remote_rel, len(self.remote.files[remote_rel].content)):
                self.violation(
                    "filter-violated",
                    f"{when}: {remote_rel!r} is left out by the filters of {options} but has a result: {result!r}",
                )
            if result.action == "cap":
                if options.max_transfer is None or result.status is not SyncStatus.SKIPPED:
                    self.violation("synced-unexpected-path", f"{when}: a cap result without a cap: {result!r}")
                continue  # left by the cap: kept like a failed file (partials checked below)
            if result.action == "keep-local":
                continue
            if result.action in ("download", "overwrite", "keep-both"):
                settled_fetch[rel] = result.action
            self._check_synced(result, rel, remote_rel, when)
        for path, entities in paths.items():
            if len(entities) > 1:
                self.violation("shared-path", f"{when}: entities {sorted(entities)} share the path {self._rel(path)!r}")
        for path, entities in real_paths.items():
            if len(entities) > 1:
                self.violation(
                    "shared-real-path",
                    f"{when}: entities {sorted(entities)} resolve to one file "
                    f"{path!r} (through a symlink in the target)",
                )
        for entity, count in per_entity.items():
            if count > 1:
                self.violation(
                    "duplicate-results",
                    f"{when}: {count} results for {entity} "
                    f"({by_id.get(entity)!r}): " + ", ".join(repr(r) for r in results if r.entity_id == entity),
                )
        self._check_missing(options, results, failed_ids, when)
        self._check_user_things(options, results, settled_fetch, when)
        self._check_partials(options, results, when)
        self._track(results)

    def _check_vanished(self, options: SyncOptions, result, rel: str, remote_rel: Optional[str], when: str) -> None:
        if not options.delete:
            self.violation("deleted-user-file", f"{when}: a deletion result without delete=True: {result!r}")
        source = self.local.copies.get(rel, rel)  # filters apply to remote paths: a copy's is its file's
        if options.filtered and not wanted(source, options.include, options.exclude) and rel not in self.remote.folders:
            # (a file of synclient's where a listed remote folder now is may go to make room for it)
            self.violation("filter-violated", f"{when}: deletion of {rel!r}, left out by the filters: {result!r}")
        if result.action == "delete":
            type_changed = os.path.isdir(result.path) and not os.path.islink(result.path) and rel in self.remote.folders
            if os.path.lexists(result.path) and not self._is_manifest(result.path) and not type_changed:
                self.violation("deleted-still-exists", f"{when}: {rel!r} reported deleted but still there")
            if rel in self.local.user_files:
                self.violation("deleted-user-file", f"{when}: deleted the user's file {rel!r}")
            if remote_rel == rel:
                self.violation("deleted-user-file", f"{when}: deleted {rel!r}, which still exists remotely")

    @staticmethod
    def _is_manifest(path) -> bool:
        """A file named like a manifest that synclient wrote as its manifest (after deleting a remote file of that
        name, the path legitimately holds the new manifest)."""
        name = name_of(str(path))
        if name not in MANIFESTS or not os.path.isfile(path):
            return False
        with open(path, "rb") as handle:
            return handle.read(5) == (b"path\t" if name == MANIFEST else b"path,")

    def _check_synced(self, result, rel: str, remote_rel: str, when: str) -> None:
        remote = self.remote.files[remote_rel]
        if result.version != remote.version:
            self.violation(
                "synced-stale-version",
                f"{when}: {remote_rel!r} synced at version {result.version}, "
                f"remote is at v{remote.version}: {result!r}",
            )
        if rel != remote_rel and not is_copy_name(rel, remote_rel):
            self.violation(
                "synced-unexpected-path", f"{when}: {remote_rel!r} ({result.entity_id}) reported at {rel!r}: {result!r}"
            )
        try:
            info = os.lstat(result.path)
        except FileNotFoundError:
            self.violation("synced-not-byte-exact", f"{when}: {rel!r} reported {result.action} but is absent")
            return
        if not stat.S_ISREG(info.st_mode):
            self.violation(
                "synced-not-regular-file",
                f"{when}: {rel!r} reported {result.action} but is not a regular file (mode {oct(info.st_mode)})",
            )
            return
        data = Path(result.path).read_bytes()
        if data != remote.content:
            self.violation(
                "synced-not-byte-exact",
                f"{when}: {rel!r} reported {result.action} ({result.status.value})"
                f" for {remote_rel!r} v{remote.version} but holds "
                f"{len(data)} bytes md5 {md5(data)}, remote has "
                f"{len(remote.content)} bytes md5 {md5(remote.content)}",
            )

    def _check_missing(self, options: SyncOptions, results, failed_ids: Set[str], when: str) -> None:
        seen = {r.entity_id for r in results}
        for rel, remote in sorted(self.remote.files.items()):
            if remote.entity_id in seen or not options.wants(rel, len(remote.content)) or refusable(rel):
                continue
            ancestors = [p for p in self.remote.folders if p and under(rel, p) and p != rel]
            if any(self.remote.folders[p] in failed_ids for p in ancestors):
                continue
            self.violation(
                "missing-result", f"{when}: no result at all for the remote file {rel!r} ({remote.entity_id})"
            )

    def _check_user_things(self, options: SyncOptions, results, settled_fetch: Dict[str, str], when: str) -> None:
        for rel, data in sorted(self.local.user_files.items()):
            path = self.root / rel
            action = settled_fetch.get(rel)
            try:
                info = os.lstat(path)
                current = path.read_bytes() if stat.S_ISREG(info.st_mode) else None
            except FileNotFoundError:
                current = None
            if current == data:
                if action == "download":
                    self.violation(
                        "user-file-taken-as-own",
                        f"{when}: the user's {rel!r} was 'download'ed over (a conflict taken for synclient's own copy)",
                    )
                continue
            if action == "overwrite" and options.if_collision == "overwrite.local":
                continue  # replaced as asked; checked byte-exact above
            what = "deleted" if current is None else "changed"
            self.violation(
                "user-file-lost",
                f"{when}: the user's file {rel!r} was {what} (action at that path: {action}, {options})",
            )
        for rel, kind in sorted(self.local.planted.items()):
            path = self.root / rel
            still = (
                os.path.islink(path)
                if kind.startswith("symlink")
                else (os.path.isdir(path) and not os.path.islink(path))
            )
            if still:
                continue
            if (
                kind.startswith("symlink")
                and settled_fetch.get(rel) == "overwrite"
                and options.if_collision == "overwrite.local"
            ):
                continue
            replaced_by = next((p for p in (rel, *ancestors_of(rel)) if settled_fetch.get(p) is not None), None)
            shared = any(p in self.local.shared_dirs for p in (rel, *ancestors_of(rel)))
            if (
                kind == "dir"
                and options.delete
                and (replaced_by is not None or shared)
                and not any(f.startswith(rel + "/") for f in self.local.user_files)
            ):
                # an empty folder holds nothing of the user's: with delete, a remote file may replace it, or a
                # folder of synclient's it lies in; and one a remote folder of the same path synced into is
                # synclient's folder too, removed when that remote folder goes
                del self.local.planted[rel]
                continue
            self.violation(
                "user-file-lost",
                f"{when}: the user's {kind} at {rel!r} is gone (action there: {settled_fetch.get(rel)})",
            )

    def _check_partials(self, options: SyncOptions, results, when: str) -> None:
        failed_ids = {r.entity_id for r in results if r.status is SyncStatus.FAILED}
        unsettled: Set[Optional[str]] = set()
        for r in results:
            if r.path is not None and (r.status is SyncStatus.FAILED or r.action in ("keep-local", "keep-both", "cap")):
                real = os.path.join(os.path.realpath(os.path.dirname(r.path)), os.path.basename(r.path))
                unsettled |= {self._rel(r.path), self._rel(real)}
        by_id = self.remote.by_id()
        unsettled |= {by_id[r.entity_id] for r in results if r.action == "keep-both" and r.entity_id in by_id}
        for folder, _, files in os.walk(self.root):
            for name in files:
                if not name.endswith(PARTIAL_SUFFIXES):
                    continue
                rel = (Path(folder) / name).relative_to(self.root).as_posix()
                if rel.startswith(META_DIR + "/"):
                    continue
                destination = self._partial_destination(rel)
                remote_file = self.remote.files.get(destination)
                size = None if remote_file is None else len(remote_file.content)
                if destination in unsettled or not options.wants(destination, size):
                    continue  # not settled by this run, or outside its filters (an excluded folder is not listed)
                if destination in self.remote.files and any(
                    self.remote.folders.get(p) in failed_ids for p in self.remote.folders if p and under(destination, p)
                ):
                    continue  # under a folder that failed
                self.violation(
                    "partial-leaked",
                    f"{when}: the partial file {rel!r} (of {destination!r}) outlived a completed sync ({options})",
                )

    @staticmethod
    def _partial_destination(rel: str) -> str:
        name = name_of(rel)
        for suffix in sorted(PARTIAL_SUFFIXES, key=len, reverse=True):
            if name.endswith(suffix):
                name = name[: -len(suffix)]
                break
        stem, _, handle = name.rpartition(".")
        if not handle.isdigit():  # a manifest's partial: ".SYNAPSE_METADATA_MANIFEST.tsv.synclient-partial"
            stem = name
        return join(parent_of(rel), stem[1:] if stem.startswith(".") else stem)

    def _track(self, results) -> None:
        """After a run: what synclient wrote is its own; a user file it overwrote (as asked) is no longer theirs."""
        for result in results:
            rel = self._rel(result.path)
            if rel is None or result.status is SyncStatus.FAILED:
                continue
            self.local.unindexed.discard(rel)  # a sync settled what is at that path: it is indexed (or gone) now
            if result.status is SyncStatus.DELETED:
                self.local.owned.discard(rel)
            elif result.action in ("download", "overwrite", "keep-both", "skip", "adopt"):
                self.local.owned.add(rel)
                remote_rel = self.remote.by_id().get(result.entity_id)
                if remote_rel is not None and remote_rel != rel:
                    self.local.copies[rel] = remote_rel
                # a skip at a user's path means its bytes are the remote's (synclient could not tell an identical
                # rewrite from its own copy): from now on the file is synclient's, as after an adopt
                if result.action in ("overwrite", "download", "adopt", "skip"):
                    self.local.user_files.pop(rel, None)
                    if self.local.planted.get(rel, "").startswith("symlink") and not os.path.islink(result.path):
                        del self.local.planted[rel]

    # -- dry run vs real run -----------------------------------------------------------------------------------------

    def check_plan(self, options: SyncOptions, plan: SyncPlan, results) -> None:
        predicted = Counter((e.entity_id, self._rel(e.destination), e.action.value) for e in plan.entries)
        predicted += Counter((f.entity_id, self._rel(f.path), f.action) for f in plan.failures)
        happened = Counter((r.entity_id, self._rel(r.path), r.action) for r in results)
        if predicted != happened:
            only_plan = sorted((predicted - happened).elements(), key=str)
            only_real = sorted((happened - predicted).elements(), key=str)
            self.violation(
                "dry-run-mismatch",
                f"the dry run ({options}) predicted {only_plan[:8]} but the real run "
                f"did {only_real[:8]} (entity, path, action)",
            )
        # its bytes: what the files it would fetch hold (sized one by one, or by their folders' listing sums)
        by_id = self.remote.by_id()
        fetched = [e for e in plan.fetch_entries if e.entity_id in by_id]
        held = sum(len(self.remote.files[by_id[e.entity_id]].content) for e in fetched)
        wrong = [
            e.rel_path
            for e in fetched
            if e.size is not None and e.size != len(self.remote.files[by_id[e.entity_id]].content)
        ]
        if plan.bytes_to_fetch != held or wrong:
            self.violation(
                "dry-run-bytes",
                f"the dry run ({options}) counted {plan.bytes_to_fetch} bytes to fetch, its files hold {held}"
                + (f"; sized wrong: {wrong[:8]}" if wrong else ""),
            )

    # -- convergence -------------------------------------------------------------------------------------------------

    def check_convergence(self, options: SyncOptions, results) -> None:
        if options.if_collision != "overwrite.local" or options.filtered or options.max_transfer is not None:
            return
        self.stats["convergence checks"] += 1
        good: Dict[str, str] = {}
        for r in results:
            if r.status is not SyncStatus.FAILED and r.action not in ("keep-local", "delete"):
                good[r.entity_id] = self._rel(r.path)
        for rel, remote in sorted(self.remote.files.items()):
            if remote.entity_id in good or refusable(rel):
                continue
            blocker = self.local.blocks(rel)
            if blocker is not None:
                continue
            if not options.delete and self._type_changed_locally(rel):
                continue  # synclient's own file or folder where the remote now has the other type: only with delete
            why = next(
                (
                    f"{r.action} {r.status.value}: {type(r.error).__name__}: {r.error}"
                    if r.error
                    else f"{r.action} {r.status.value}"
                    for r in results
                    if r.entity_id == remote.entity_id
                ),
                "no result",
            )
            failed_above = [
                p
                for p in self.remote.folders
                if p
                and under(rel, p)
                and p != rel
                and any(r.entity_id == self.remote.folders[p] and r.status is SyncStatus.FAILED for r in results)
            ]
            if failed_above:
                error = next(r.error for r in results if r.entity_id == self.remote.folders[failed_above[0]])
                why = f"folder {failed_above[0]!r} failed: {type(error).__name__}: {error}"
            self.violation(
                "no-convergence",
                f"after a sync with {options} and nothing of the user's in the way, "
                f"{rel!r} ({remote.entity_id} v{remote.version}) is not in place: {why}",
            )
        if not options.delete:
            return
        written = set(good.values())
        for rel in sorted(self.local.owned):
            path = self.root / rel
            if rel in written or rel in self.local.user_files or not os.path.isfile(path) or os.path.islink(path):
                continue
            if (
                self._is_manifest(path)
                or rel in self.remote.files
                or any(is_copy_name(rel, r) for r in self.remote.files)
            ):
                continue  # still remote (maybe under a folder that failed), or a keep.both copy of a remote file
            if self.local.blocks(rel, exact_file_blocks=True) is not None:
                continue
            if any(under(rel, p) for p in self.local.planted):
                continue
            self.violation(
                "stale-not-deleted",
                f"after a sync with {options}, {rel!r} (written by synclient, unchanged, gone remotely) is still there",
            )

    def _type_changed_locally(self, rel: str) -> bool:
        """Locally a folder where the remote file ``rel`` is, or a file where one of its folders is."""
        local = self.root / rel
        if os.path.isdir(local) and not os.path.islink(local):
            return True
        parts = rel.split("/")[:-1]
        return any(os.path.isfile(self.root.joinpath(*parts[:i])) for i in range(1, len(parts) + 1))

    # -- manifests ---------------------------------------------------------------------------------------------------

    def check_manifests(self, options: SyncOptions, results) -> None:
        if options.manifest != "all" or options.filtered or not options.delete or options.max_transfer is not None:
            return  # without delete, files (and manifests) of things gone remotely stay, as documented
        ids = {f.entity_id for f in self.remote.files.values()}
        for folder, dirs, files in os.walk(self.root):
            if Path(folder) == self.root and META_DIR in dirs:
                dirs.remove(META_DIR)
            for name in MANIFESTS:
                if name in files:
                    self._check_manifest(options, Path(folder) / name, ids)

    def _check_manifest(self, options: SyncOptions, manifest: Path, ids: Set[str]) -> None:
        rel = manifest.relative_to(self.root).as_posix()
        if rel in self.remote.files or rel in self.local.owned or rel in self.local.user_files:
            return  # a remote file of that name: checked as a file
        tsv = manifest.name == MANIFEST
        try:
            with open(manifest, newline="", encoding="utf-8") as handle:
                rows = list(
                    csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE) if tsv else csv.DictReader(handle)
                )
        except (UnicodeDecodeError, csv.Error) as exc:
            self.violation("manifest-stale", f"the manifest {rel!r} cannot be read: {exc}")
            return
        for row in rows:
            path, entity = row.get("path") or "", row.get("id" if tsv else "ID") or ""
            if not os.path.lexists(path):
                self.violation(
                    "manifest-stale",
                    f"after a sync with {options}, the manifest {rel!r} lists "
                    f"{self._rel(path) or path!r} ({entity}), which is not there",
                )
                break
            if entity not in ids:
                self.violation(
                    "manifest-stale",
                    f"after a sync with {options}, the manifest {rel!r} lists "
                    f"{entity} ({self._rel(path)!r}), which no longer exists "
                    "remotely",
                )
                break

    # -- SIGKILL mid-sync --------------------------------------------------------------------------------------------

    def check_kill_leftovers(self, options: SyncOptions) -> None:
        """After a SIGKILLed CLI sync: with --view auto, at most one view more than killed runs left before in the
        scratch project (and nothing else), which the next auto sync that makes or tries to make its view must
        remove: each is aged past the grace period now (a younger one may be a live run's, and stays); without
        it, the account as it was."""
        if options.auto is None:
            self.check_account("after a SIGKILLed CLI sync")
            return
        projects = self.emu.info()["projects"]
        extra = sorted(set(projects) - self.seeded_projects)
        trash = self.emu.trash()
        problems = [f"the trash can holds {[(t['id'], t['name'], t['kind']) for t in trash][:6]}"] if trash else []
        views: Set[str] = set()
        if len(extra) > 1 or (extra and not extra[0].startswith(SCRATCH_PROJECT_NAME.split("{")[0])):
            problems.append(f"projects {extra} beside the seeded ones")
        elif extra:
            scratch = projects[extra[0]]
            held = [e for e in self.emu.project_entities(scratch) if e["id"] != scratch]
            views = {e["id"] for e in held if e["kind"] == "entityview"}
            others = [(e["id"], e["name"], e["kind"]) for e in held if e["kind"] != "entityview"]
            new = views - self.leftover_views
            if others or len(new) > 1:
                problems.append(f"the scratch project {scratch} holds {sorted(new)} new views and {others}")
        if problems:
            self.violation("kill-left-too-much", f"after a SIGKILLed CLI sync ({options}): " + "; ".join(problems))
        long_ago = datetime.datetime.now(datetime.timezone.utc) - LEFTOVER_GRACE - datetime.timedelta(minutes=5)
        for view in sorted(views - self.leftover_views):
            # aged by its mark and by the platform's clock (the sweep wants both an hour old)
            stamp = long_ago.strftime("%Y-%m-%dT%H:%M:%S.000Z")
            self.emu.set_annotation(view, CREATED_ON_KEY, [stamp])
            self.emu.set_created_on(view, stamp)
            self.stats["views left by killed syncs"] += 1
            self.note(f"  -> the killed sync left its view {view}: aged past the grace period")
        self.leftover_views, self.scratch_left = views, bool(extra)

    def _await_shards_stopped(self) -> None:
        """After the SIGKILL of a driver: every shard of its run stops on the workers (Dask cancels the tasks of a
        client that is gone, and a running shard must notice), at most :data:`ORPHAN_STOP_SECONDS` later; until then
        the next sync does not start, so what a shard still did is in the checks of this step."""

        def running_shards(dask_worker) -> List[str]:
            tasks = dask_worker.state.executing | dask_worker.state.long_running  # cancelled ones still running too
            return sorted(str(task.key) for task in tasks if str(task.key).startswith("synclient-shard-"))

        deadline = time.monotonic() + ORPHAN_STOP_SECONDS
        while True:
            running = [key for keys in self.dask_client.run(running_shards).values() for key in keys]
            if not running:
                return
            if time.monotonic() > deadline:
                self.violation(
                    "orphan-shards-ran-on",
                    f"{len(running)} shards of the killed driver still run "
                    f"{ORPHAN_STOP_SECONDS:.0f} s after its SIGKILL: {running}",
                )
                return
            time.sleep(0.05)  # polling the workers' state, not waiting for time to pass

    def kill_mid_sync(self, options: SyncOptions) -> None:
        """Something big to fetch, a slow data plane, the CLI in a child, SIGKILL once N bytes were served."""
        bigs = sorted(p for p, f in self.remote.files.items() if len(f.content) > PART and wanted(p, (), ()))
        data = self.big_content()
        if bigs and self.rng.random() < 0.6:
            rel = self.rng.choice(bigs)
            self.remote.new_version(rel, data)
        else:
            name = self.pick_name("")
            if name is None:
                return
            rel = name
            self.remote.add_file("", name, data)
        threshold = self.rng.randint(1, len(data) - 1)
        bandwidth = self.rng.choice((150_000, 400_000))
        over_dask = self.dask_client is not None and self.dask_rng.random() < 0.5
        dask_args = ["--dask", self.dask_client.scheduler.address] if over_dask else []
        self.note(
            f"kill: new bytes for {rel!r} ({len(data)} bytes); CLI sync ({options}"
            f"{', over Dask' if over_dask else ''}) at {bandwidth} B/s per connection, SIGKILL after "
            f"{threshold} data bytes"
        )
        self.stats["kills"] += 1
        if over_dask:
            self.stats["kills over dask"] += 1
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SYNCLIENT_", "SYNAPSE_"))}
        env.update(
            HOME=str(self.home), SYNCLIENT_DISABLE_PROGRESS="1", PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring"
        )
        # --view auto: a view of the model's small tree; one that builds for ever is killed while it builds
        watch_builds = options.auto is not None and options.auto.fallback == "never_built"
        if options.auto is not None:
            self.stats["kills with --view auto"] += 1
            env["MODEL_WORTH_A_VIEW"] = str(options.auto.worth)
            self.emu.set_knobs(**options.auto.knobs())
        building_before = set(self.emu.building_views()) if watch_builds else set()
        user_before = dict(self.local.user_files)
        tree_before = tree_snapshot(self.root, skip_meta=True)
        self.emu.set_knobs(bandwidth_per_conn=bandwidth)
        self.emu.reset_stats()
        child = subprocess.Popen(
            [
                sys.executable,
                "-c",
                KILL_CHILD,
                "--endpoint",
                self.emu.endpoint,
                "--token",
                self.emu.token,
                "--json",
                "-q",
                "get",
                "-r",
                self.remote.root_id,
                "--path",
                str(self.target),
                "--no-progress",
                *options.cli_args(),
                *dask_args,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
            cwd=str(self.home),
        )
        try:
            deadline = time.monotonic() + 60
            while (
                child.poll() is None
                and self.emu.stats()["data_bytes"] < threshold
                and not (watch_builds and set(self.emu.building_views()) - building_before)
                and time.monotonic() < deadline
            ):
                time.sleep(0.002)  # polling the server's byte counter, not waiting for time to pass
            killed = child.poll() is None
            if killed:
                child.kill()
            _, stderr = child.communicate(timeout=60)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
            if over_dask:  # at a crawl from now on: a shard that went on would not finish in time
                self.emu.set_knobs(bandwidth_per_conn=ORPHAN_CRAWL)
                self._await_shards_stopped()
            self.emu.set_knobs(bandwidth_per_conn=0)
            if options.auto is not None:
                self.emu.finish_view_builds()  # (a view left building would answer the next kill's watch)
                self.emu.set_knobs(**AutoViewDraw(worth=1, lag=False).knobs())
        served = self.emu.stats()["data_bytes"]
        if killed:
            self.note(f"  -> killed after {served} data bytes")
        else:
            self.note(f"  -> the child finished first (exit {child.returncode}, {served} data bytes)")
            if child.returncode not in (0, 1):
                raise RuntimeError(
                    f"the CLI child failed to run: exit {child.returncode}: {stderr.decode(errors='replace')[-2000:]}"
                )
        self.check_outside("the killed sync")
        self.check_kill_leftovers(options)
        # what the killed run put in place may not be in its index (rows are committed by a writer thread; a shard
        # that ran on after its driver died indexes nothing): files synclient may take for the user's
        for krel, entry in tree_snapshot(self.root, skip_meta=True).items():
            if (
                entry[0] == "file"
                and tree_before.get(krel) != entry
                and krel not in self.local.user_files
                and name_of(krel) not in MANIFESTS
                and not name_of(krel).endswith(PARTIAL_SUFFIXES)
            ):
                self.local.unindexed.add(krel)
        for urel, udata in sorted(user_before.items()):
            path = self.root / urel
            current = path.read_bytes() if path.is_file() and not path.is_symlink() else None
            remote = self.remote.files.get(urel)
            if current == udata:
                continue
            if remote is not None and current == remote.content and options.if_collision == "overwrite.local":
                self.local.user_files.pop(urel)
                self.local.owned.add(urel)
                continue
            self.violation(
                "kill-damaged",
                f"after a SIGKILL of a sync ({options}), the user's {urel!r} holds "
                f"{'nothing' if current is None else f'{len(current)} other bytes'}",
            )
        for prel, kind in sorted(self.local.planted.items()):
            path = self.root / prel
            if kind.startswith("symlink") and not os.path.islink(path):
                if options.if_collision == "overwrite.local" and prel in self.remote.files:
                    del self.local.planted[prel]
                    continue
                self.violation("kill-damaged", f"after a SIGKILL, the user's {kind} at {prel!r} is gone")
