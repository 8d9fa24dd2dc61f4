"""The model walk over every source and mode (issue 29): a seeded random walk of remote changes (files, versions,
folders, names with a separator, datasets, dataset collections) with a little local interference, each step
followed by one sync through a randomly drawn *source* into the target kept for that source kind, and invariants
checked after every sync. It reuses the pieces of ``model_support.py`` (the remote model, snapshots, md5) and leaves
its folder walk (local interference in depth, keep.both, filters, manifests) to ``test_model_sync.py``.

Sources (each into its own target under ``w/targets/``):

- ``ids``: ``download_many`` of 1-5 ids drawn from files (current, deleted, or with a name holding ``/``), versions
  (``syn1.2``), duplicates (the same ref twice, the same file with and without a version), projects and folders
  (then ``recursive=True``), datasets and collections;
- ``dataset``: ``sync_from_platform(dataset_id)`` or ``sync_from_platform(collection_id)`` (one id fills the target),
  or ``download_many`` of several datasets and collections, whose items are pinned at versions;
- ``query``: ``download_query("SELECT ... FROM <file view> [WHERE ...]")``;
- ``walk`` / ``view-walk``: ``sync_from_platform(project)`` (``view=`` the file view for ``view-walk``) into one of
  two targets, ``walk-a`` and ``walk-b``, that sync the same tree through one synapseclient cache;
- ``cart`` (issue 33): after about one step in ten (:data:`CART_SHARE`; long walks one in five), drawn by the
  cart's own generator so that the steps of the other sources stay what each seed walked before: the user adds a few
  files to the download cart through the emulator's HTTP API (current ones without a version, earlier versions,
  names holding ``/``, a file whose external URL has a password: it fails), edits or deletes a file the cart put in
  its target, now and then empties the cart; then ``download_list(target)`` (or ``get --download-list``), sometimes
  ``keep_cart=True`` (``--keep-cart``), sometimes ``keep_paths``, sometimes a dry run first, sometimes killed first
  as the others.

``keep_paths`` (``--keep-paths``): about a third of the ``ids``, ``dataset`` (then ``download_many`` of the one
dataset too) and ``query`` syncs, drawn by a generator of its own (``"{seed}:keep_paths"``) so that the other draws
of each seed stay as they were.

Modes, drawn per sync: the shared synapseclient cache (``<HOME>/.synapseCache``, where a rule also plants files as
synapseclient would download them) on, on with ``synapse_cache_link`` (``--synapse-cache-link``) or off
(``--no-synapse-cache``); a forced filesystem probe (``SYNCLIENT_FS_PROBE`` / ``filesystem_names``: ``case``,
``windows``, both, or the real probe) that changes between runs; ``if_collision``; ``delete`` (walks); a dry run
first; about one sync in five a CLI subprocess (``python -m synclient --json get ...``, the token given by
``--token``, ``SYNCLIENT_AUTH_TOKEN`` or the config file, sometimes ``-v``), and a share of those SIGKILLed at a
random moment first (once N data bytes were served, once a partial file exists in the target, or once a partial that
is a hard link exists); and, with ``hostile=True``, a seeded share of syncs against the emulator's hostile-server
mode (``hostile_rate`` when the emulator has it, else its older lying knobs).

Invariants (names as printed on failure):

- ``outside-unchanged``: a sync (or a killed CLI sync, or a dry run) into one target changes no file of the other
  targets, of the cache (every file but its ``.cacheMap`` maps) or of a sentinel folder beside them (kind, size,
  mtime, bytes); ``hard-link-without-link-mode``: without ``synapse_cache_link`` no such file gains a link;
- ``partial-hard-linked``: after any run, killed ones included, no partial file in any target has a link count
  above 1 (a byte written through it would land in another file);
- ``shared-path``: no two entities (or two versions of one) on one path in one run's results or one dry run's plan;
  ``shared-inode``: no two entities' reported files are one inode (but in a target a ``synapse_cache_link`` sync
  ran into, where a file is the cache's file by design, and two entities of the same bytes may share it);
- ``report-not-disk``: every file reported downloaded or skipped is a regular file inside the target holding exactly
  the bytes of the version it is reported at; ``result-outside-target`` for a result path outside it;
- ``id-not-canonical``: every result names its entity by its canonical id (``syn0012`` is ``syn12``);
- ``wrong-version`` / ``unexpected-entity``: that version is one the source asks for (an id's ``.N``, a dataset
  item's pinned version, else the current one), of an entity the source names; ``synced-gone-entity``: not of an
  entity deleted remotely; ``missing-result``: every file named in an id list has a result;
- ``separator-name-synced``: a remote name holding ``/`` is never synced as nested folders (nor is a dataset's);
- ``rename-not-on-disk``: each renaming the report prints (``report.renamed``, ``--json``) is on disk;
- ``dry-run-wrote``: a dry run changes nothing (target, cache maps included); ``second-run-not-noop``: an
  identical second run after a clean one fetches no data and downloads or deletes nothing;
- ``secret-leaked``: the token appears in no output: stdout, stderr and ``--json`` of CLI runs, any log record of the
  ``synclient`` loggers at DEBUG, the errors and report of API runs;
- ``cli-internal-error``: a CLI run says "internal error" or ends with a traceback; ``sync-raised``: an API sync
  with ``on_error="continue"`` raised (under the hostile mode, a ``SynclientError`` that ends the run is allowed:
  a hostile root listing or query may fail the run as one clear error); ``run-hung``: a sync did not end within
  :data:`SYNC_TIMEOUT` seconds;
- ``cache-map-invalid``: every ``.cacheMap`` is valid JSON;
- ``hostile-name-synced``: under the hostile-server mode, a file whose answered name (or, in a walk, a folder above
  it) holds ``/`` or NUL or is ``.``/``..`` is never reported synced (the emulator's ``hostile.answered_name`` replays
  the server's decision; not for the cart, whose rows and manifest the hostile mode leaves alone);
- ``kept-path-wrong``: with ``keep_paths``, a file reported synced that no ``renamed`` line names (nor a folder above
  it: a file that lands flat, a name taken or mapped) is at ``<project name>/<folder path>/<name>`` in a folder it
  lives or lived in (a file the index holds unchanged keeps its row's folder, documented), each component as it is,
  in its Windows form or with an entity id (sticky names of local_names.py), the file's as a keep.both copy in a
  target a keep.both sync ran into;
- ``keep-paths-usage``: with ``keep_paths``, a list that is one project or folder alone is a usage error
  (``ConfigError``, CLI exit 2) and no other list is;
- ``cart-removed-unfinished``: after a cart run, every item no longer in the cart had its file (at the item's version,
  the current one for an item without one) complete and byte-exact at its reported path; never an item of a
  deleted file or of a file without bytes; after a killed run, or a run that ended in one error, each removed item's
  bytes are in a complete file of the target; a dry run changes nothing in the cart (``dry-run-wrote``);
- ``cart-kept``: with ``keep_cart`` nothing leaves the cart, and no run adds to it; ``missing-result``: every item
  the cart makes available has a result at its version.

A hung run stops the walk even in keep-going mode (its thread still runs: nothing after it could be trusted).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import random
import re
import stat
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Callable, Dict, List, Optional, Set, Tuple

import requests
from model_support import (
    COMMON_NAMES,
    CONFIG,
    PART,
    ModelViolation,
    Remote,
    diff_snapshots,
    file_md5,
    join,
    md5,
    name_of,
    parent_of,
    under,
)

from synclient import Platform, SyncStatus, download_list, download_many, download_query, sync_from_platform
from synclient.emulator import Emulator
from synclient.emulator import hostile as emulator_hostile
from synclient.emulator.entity_names import NameRule
from synclient.emulator.knobs import Knobs
from synclient.emulator.store import EntityKind, ItemRef
from synclient.errors import ConfigError, SynclientError
from synclient.synapse_cache import SynapseCache
from synclient.sync.local.local_names import windows_form, with_id
from synclient.sync.plan.dry_run import SyncPlan
from synclient.sync.sources.cart import CART_MANIFEST
from synclient.transfer.partial import PARTIAL_SUFFIXES, TEMP_SUFFIX

KiB = 1024
MiB = 1024 * KiB
#: tries per file: 2 (not 6) so that a file nothing serves fails in a second, not after a minute of back-off
ATTEMPTS = 2
SYNC_CONFIG = dataclasses.replace(CONFIG, max_attempts=ATTEMPTS)
#: the CLI in a child with the walk's transfer settings (it has no flags for them): small parts (a kill lands in
#: multipart downloads too) and few tries
CLI_CHILD = textwrap.dedent(
    """
    import dataclasses, sys
    from synclient.transfer.config import TransferConfig
    small = dict(max_workers=4, multipart_threshold=%d, part_size=%d, streams_per_file=4, max_attempts=%d)
    TransferConfig.__init__.__defaults__ = tuple(small.get(f.name, f.default)
                                                 for f in dataclasses.fields(TransferConfig))
    from synclient.cli import main
    sys.exit(main(sys.argv[1:]))
"""
    % (PART, PART, ATTEMPTS)
)
#: a sync (API or CLI) that has not ended after this long is a violation (``run-hung``), not a hang of the suite
SYNC_TIMEOUT = 120.0
SOURCES = ("ids", "dataset", "query", "walk", "view-walk")
SOURCE_WEIGHTS = (5, 4, 3, 4, 2)
TARGETS = ("ids", "dataset", "query", "walk-a", "walk-b", "cart")
#: the sources that take ``keep_paths`` (a list's files at their remote paths), and the share of their syncs that
#: do (drawn by a generator of its own: the other draws of a seed stay what they were)
KEEP_PATHS_SOURCES = ("ids", "dataset", "query")
KEEP_PATHS_SHARE = 0.35
#: the share of steps followed by a cart step (items added to the user's download cart, then ``download_list``),
#: drawn by the cart's own generator: the walk of the other sources stays what each seed walked before it (the
#: default walks: about 5 cart syncs each; long walks take ``cart_share=LONG_CART_SHARE``)
CART_SHARE = 0.1
LONG_CART_SHARE = 0.2
#: the emulator's download list routes (the cart is filled through the HTTP API, as the portal does)
CART_API = "/repo/v1/download/list"
#: the file names of the remote rules: the folder walk's hostile alphabet, a Windows-only-invalid name, case twins
NAMES = COMMON_NAMES + ("a:b", "Case.txt", "case.txt", "con.txt")
#: names holding the separator; their parts ("evil", "ev") are no name of any other rule, so a path component named
#: so in a result is a name split into folders
SEPARATOR_NAMES = ("evil/x.txt", "evil/a.txt", "ev/sub/y.bin")
SEPARATOR_PARTS = ("evil", "ev")
DATASET_NAMES = ("ds1", "ds2", "ds3", "ev/ds", "a.txt", "ds (1)")
COLLECTION_NAMES = ("dc1", "dc2", "evil/dc")
FS_PROBES = (None, None, "case", "windows", "case,windows")
CACHE_MODES = ("on", "link", "off")
CACHE_WEIGHTS = (4, 4, 2)
MAX_DEPTH = 3
#: what hostile mode sets: the emulator's hostile-server mode when it has it (issue 29), else its older lying knobs
HOSTILE_RATE = 0.3
#: the secret every output is searched for: the emulator's token (set by each walk)
TOKEN = ""
#: a password in the userinfo of external URLs (files a rule moves into the project, ids a list names): searched for
#: in every output as the token is
URL_PASSWORD = "pw-SECRET-model"
CREDENTIAL_URLS = (
    "https://alice:{password}@{untrusted}/data/cred.csv",  # a host whose certificate is not trusted
    "https://dave:{password}@127.0.0.1:9/data/cred1.csv",
    "http://bob:{password}@127.0.0.1:9/data/cred2.csv?X-Amz-Signature=abc",
    "sftp://carol:{password}@127.0.0.1:9/data/cred3.csv",
)
LEGACY_HOSTILE = dict(fault_api_malformed_rate=0.04, fault_data_corrupt_rate=0.15, hostile_handle_rate=0.2)


#: a line of ``report.renamed``: "syn1: a:b -> a：b (reason)" or "syn1.2: d/a.txt -> d/a (syn1.2).txt (...)"
RENAMED_LINE = re.compile(r"^(syn\d+(?:\.\d+)?): (.*) -> (.*) \(([^()]*)\)$")


#: what each invariant found on the code before issue 29's fixes (00ffcb5): the defect of the issue it is
KNOWN_BEFORE_FIXES = {
    "partial-hard-linked": "defect 1, a partial hard-linked to a file outside the target (link mode, SIGKILL)",
    "outside-unchanged": "defect 1, another target's file written through such a partial by the next copying run",
    "separator-name-synced": "defect 2, a name with '/' from a list, dataset, collection or query became folders",
    "shared-path": "defect 2, two entities on one path",
    "rename-not-on-disk": "defect 7, renames reported after a filesystem-probe change that never happen",
    "id-not-canonical": "defect 11, ids with leading zeros not canonical",
    "missing-result": "defect 11, an id with leading zeros reported under its spelling, not its id",
    "run-hung": "defect 10, a repeated nextPageToken (hostile paging) loops for ever",
    "secret-leaked": "defects 3 and 12, URL credentials printed",
    "cli-internal-error": "defects 8 and 9, 'internal error' on a hostile answer",
}


def has_hostile_mode() -> bool:
    """Whether this emulator has the hostile-server mode of issue 29 (the ``hostile_rate`` knob)."""
    return "hostile_rate" in {f.name for f in dataclasses.fields(Knobs)}


@dataclass
class Dataset:
    name: str
    items: List[Tuple[str, int]]  # (entity id, pinned version)
    collection: bool = False  # then items are (dataset id, 0)


@dataclass
class Sync:
    """One sync the walk makes: a source, its target, its options, and what the model expects of its results."""

    source: str
    target: str
    refs: List[str] = field(default_factory=list)
    recursive: bool = False
    sql: Optional[str] = None
    view: Optional[str] = None
    cache: str = "on"
    fs: Optional[str] = None
    if_collision: str = "overwrite.local"
    delete: bool = False
    dry_run_first: bool = False
    cli: bool = False
    token_via: str = "--token"
    verbose: bool = False
    hostile: bool = False
    keep_paths: bool = False
    keep_cart: bool = False
    wanted: Dict[str, Set[int]] = field(default_factory=dict)  # entity id -> versions the source asks for
    named: Set[str] = field(default_factory=set)  # file ids named in a list: each must have a result
    #: the cart source: each item in the cart when the sync starts -> the version it resolves to (None: the item
    #: names no file version any more, its file deleted, so it is no available file)
    cart: Dict[Tuple[str, Optional[int]], Optional[int]] = field(default_factory=dict)

    def __str__(self) -> str:
        what = {
            "ids": f"ids {self.refs}{' -r' if self.recursive else ''}",
            "dataset": f"datasets {self.refs}",
            "query": f"query {self.sql!r}",
            "cart": f"cart {sorted(self.cart, key=lambda k: (k[0], k[1] or 0))}",
        }.get(self.source, self.source)
        flags = [f"cache={self.cache}", self.if_collision]
        flags += ["keep_paths"] if self.keep_paths else []
        flags += ["keep_cart"] if self.keep_cart else []
        flags += ["delete"] if self.delete else []
        flags += [f"fs={self.fs}"] if self.fs else []
        flags += ["dry run first"] if self.dry_run_first else []
        flags += [f"CLI ({self.token_via}{', -v' if self.verbose else ''})"] if self.cli else []
        flags += ["HOSTILE"] if self.hostile else []
        return f"{what} -> {self.target} ({', '.join(flags)})"


#: the password the emulator's hostile-server mode puts in external URLs (``url_credentials``), when it has one
HOSTILE_SECRET = getattr(emulator_hostile, "URL_SECRET", None)


def leaked(text) -> Optional[str]:
    """The secret ``text`` holds (the token, a URL password), if any."""
    text = text if isinstance(text, str) else text.decode("utf-8", "replace")
    return next((secret for secret in (TOKEN, URL_PASSWORD, HOSTILE_SECRET) if secret and secret in text), None)


def unsafe_name(name: str) -> bool:
    return "/" in name or "\0" in name or name in (".", "..")


def around(text: str, secret: str) -> str:
    at = text.find(secret)
    return "..." + text[max(0, at - 200) : at + len(secret) + 60] + "..."


class SecretWatch(logging.Handler):
    """Every record of the synclient loggers, at DEBUG, searched for the secrets as it is emitted."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.found: List[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:  # noqa: BLE001 - a record that does not format is not a leak
            return
        if record.exc_info and record.exc_info[1] is not None:
            text += " " + str(record.exc_info[1])
        if leaked(text) and not record.name.startswith("synclient.emulator"):
            self.found.append(f"{record.name} {record.levelname}: {text[:300]}")


class VersionedRemote(Remote):
    """The remote tree with every version's bytes (``history``) and the files whose names hold ``/``."""

    def __init__(self, emu: Emulator, root_id: str) -> None:
        super().__init__(emu, root_id)
        self.history: Dict[Tuple[str, int], bytes] = {}
        self.current: Dict[str, int] = {}  # every file that exists (separator-named ones too) -> current version
        self.odd: Dict[str, Tuple[str, str]] = {}  # entity id -> (folder, name) of files whose name holds "/"

    def add_file(self, folder: str, name: str, content: bytes) -> str:
        entity = super().add_file(folder, name, content)
        self.history[(entity, 1)] = content
        self.current[entity] = 1
        return entity

    def add_odd_file(self, folder: str, name: str, content: bytes) -> str:
        entity = self.emu.add_file(self.folders[folder], name, content, names="unchecked")
        self.history[(entity, 1)] = content
        self.current[entity] = 1
        self.odd[entity] = (folder, name)
        return entity

    def new_version(self, rel: str, content: bytes) -> None:
        super().new_version(rel, content)
        remote = self.files[rel]
        self.history[(remote.entity_id, remote.version)] = content
        self.current[remote.entity_id] = remote.version

    def delete(self, rel: str) -> None:
        gone = {f.entity_id for p, f in self.files.items() if under(p, rel)}
        gone |= {e for e, (folder, _) in self.odd.items() if under(folder, rel)}
        super().delete(rel)
        for entity in gone:
            self.current.pop(entity, None)
            self.odd.pop(entity, None)

    def relocate(self, rel: str, new_rel: str) -> None:
        super().relocate(rel, new_rel)
        self.odd = {
            e: ((new_rel + folder[len(rel) :]) if folder and under(folder, rel) else folder, name)
            for e, (folder, name) in self.odd.items()
        }

    def files_under(self, folder: str) -> Dict[str, int]:
        found = {f.entity_id: f.version for p, f in self.files.items() if not folder or under(p, folder)}
        found.update({e: self.current[e] for e, (f, _) in self.odd.items() if not folder or under(f, folder)})
        return found


def _run_in_thread(call: Callable[[], object], timeout: float):
    """(finished, value, exception): the call in a daemon thread, given up on (and reported) after ``timeout``."""
    box: Dict[str, object] = {}

    def target() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - every exception is the finding
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True, name="model-sync")
    thread.start()
    thread.join(timeout)
    return (not thread.is_alive()), box.get("value"), box.get("error")


class SourcesWalk:
    """One seeded walk; ``run()`` raises :class:`ModelViolation` at the first broken invariant (or, with
    ``keep_going``, records the first violation of each invariant and raises them all at the end)."""

    def __init__(
        self,
        *,
        seed: int,
        steps: int,
        workdir: Path,
        emu: Emulator,
        keep_going: bool = False,
        hostile: bool = False,
        cli_share: float = 0.12,
        kill_share: float = 0.1,
        cart_share: float = CART_SHARE,
        dask_client=None,
    ) -> None:
        self.seed = seed
        self.steps = steps
        self.rng = random.Random(seed)
        self.moment_rng = random.Random(f"moment-{seed}")  # kill moments: drawn apart, the rules stay the seed's
        self.hostile = hostile
        self.hostile_rng = random.Random(f"hostile-{seed}")
        self.cli_share = cli_share
        self.dask_client = dask_client  # a distributed.Client: half the API syncs fetch on its cluster
        self.dask_rng = random.Random(f"dask-{seed}")
        self.keep_paths_rng = random.Random(f"{seed}:keep_paths")
        self.cart_rng = random.Random(f"{seed}:cart")
        self.kill_share = kill_share
        self.cart_share = cart_share
        self.emu = emu
        self.keep_going = keep_going
        self.work = workdir / "w"
        self.home = workdir / "home"  # the CLI children's HOME; the cache is <HOME>/.synapseCache for all syncs
        self.cache_root = self.home / ".synapseCache"
        self.config_file = self.home / ".synapseConfig"
        self.sentinel = self.work / "sentinel"
        self.targets = {name: self.work / "targets" / name for name in TARGETS}
        for folder in (self.sentinel, self.cache_root, *self.targets.values()):
            folder.mkdir(parents=True)
        for rel in ("f.txt", "dir/a.txt", "dir/evil/x.txt", "dir/.a.txt.5000001.synclient-partial"):
            (self.sentinel / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.sentinel / rel).write_bytes(f"sentinel {rel}\n".encode())
        self.log_path = workdir / "sources-walk.log"
        self.log: List[str] = []
        self.started = time.monotonic()
        self.step = 0
        self.violations: Dict[str, str] = {}
        self.stats: Counter = Counter()
        emu.set_knobs(fault_seed=seed)
        root_id = emu.seed_spec(
            {
                "projects": [
                    {"name": f"sources-{seed}", "children": [{"type": "entityview", "name": "the view", "scope": [""]}]}
                ]
            }
        )[f"sources-{seed}"]
        self.view_id = emu.resolve(root_id, "the view")
        global TOKEN
        TOKEN = emu.token  # the secret every output is searched for
        self.config_file.write_text(f"[authentication]\nauthtoken = {TOKEN}\n", encoding="utf-8")
        # an HTTPS server whose certificate nothing trusts (another emulator's TLS listener)
        self.untrusted = Emulator(tls=True).start()
        untrusted = self.untrusted.endpoint.split("://", 1)[1].rstrip("/")
        side = emu.seed_spec(
            {
                "projects": [
                    {
                        "name": f"credentials-{seed}",
                        "children": [
                            {
                                "type": "file",
                                "name": f"cred{i}.csv",
                                "external": url.format(password=URL_PASSWORD, untrusted=untrusted),
                            }
                            for i, url in enumerate(CREDENTIAL_URLS)
                        ],
                    }
                ]
            }
        )
        #: files whose handle is an external URL with a password (nothing serves it): they fail, and say so safely
        self.credential_files = {
            emu.resolve(side[f"credentials-{seed}"], f"cred{i}.csv"): f"cred{i}.csv"
            for i in range(len(CREDENTIAL_URLS))
        }
        self.remote = VersionedRemote(emu, root_id)
        self.linked_targets: Set[str] = set()  # targets a --synapse-cache-link sync ran into (see shared-inode)
        self.keep_both_targets: Set[str] = set()  # targets a keep.both sync ran into (see kept-path-wrong)
        self.datasets: Dict[str, Dataset] = {}
        self.planted_cache: Set[Tuple[str, int]] = set()
        self.deleted_ids: List[str] = []
        self.renamed_lines: List[str] = []  # the last run's report.renamed
        self.usage_error: Optional[str] = None  # the last run's usage error (ConfigError, CLI exit 2), if any
        #: every folder (by id) each file has lived in: with keep_paths a file unchanged since a run placed it is
        #: placed by its index row's folder (documented: a file moved at the same version stays where it was)
        self.homes: Dict[str, Set[str]] = {}
        self.last_hostile_knobs = None  # the emulator's knobs of the last hostile sync (to replay its decisions)
        self.platform = Platform(endpoint=emu.endpoint, token=TOKEN)
        self.secrets = SecretWatch()
        # every client-side record at DEBUG goes through the watch (the emulator's own stay at WARNING)
        self._levels = {name: logging.getLogger(name).level for name in ("synclient", "synclient.emulator")}
        logging.getLogger("synclient").addHandler(self.secrets)
        logging.getLogger("synclient").setLevel(logging.DEBUG)
        # the DEBUG records stop at the watch: pytest's capture would keep every one of a long walk in memory
        self._propagate = logging.getLogger("synclient").propagate
        logging.getLogger("synclient").propagate = False
        logging.getLogger("synclient.emulator").setLevel(logging.WARNING)

    # -- bookkeeping -----------------------------------------------------------------------------------------------

    def note(self, text: str) -> None:
        line = f"step {self.step} [{time.monotonic() - self.started:6.1f} s]: {text}"
        self.log.append(line)
        with open(self.log_path, "a", encoding="utf-8") as handle:  # as it happens: a long walk can be followed
            handle.write(line + "\n")

    def violation(self, invariant: str, detail: str) -> None:
        self.stats["violations"] += 1
        message = f"sources walk: invariant {invariant!r} broke at step {self.step} of seed {self.seed}\n{detail}\n"
        if invariant in KNOWN_BEFORE_FIXES:
            message += f"(found on the code before issue 29's fixes: {KNOWN_BEFORE_FIXES[invariant]})\n"
        self.note(f"VIOLATION {invariant}: {detail.splitlines()[0][:400]}")
        if invariant == "run-hung" and self.keep_going:  # the run goes on in its thread: nothing after is sound
            self.violations.setdefault(invariant, message)
            raise ModelViolation(
                self._with_replay(
                    f"{len(self.violations)} distinct invariants broke (keep-going mode; the walk stops at a hung "
                    "run):\n\n" + "\n".join(self.violations.values())
                )
            )
        if self.keep_going:
            self.violations.setdefault(invariant, message)
            return
        raise ModelViolation(self._with_replay(message))

    def _with_replay(self, message: str) -> str:
        shown = self.log if len(self.log) <= 120 else ["..."] + self.log[-120:]
        hostile = " SYNCLIENT_MODEL_SOURCES_HOSTILE=1" if self.hostile else ""
        return (
            message + f"replay: SYNCLIENT_MODEL_SOURCES_SEED={self.seed} SYNCLIENT_MODEL_SOURCES_STEPS={self.step}"
            f"{hostile} python -m pytest integration_tests/model/test_model_sources.py -x\n"
            f"rules and syncs so far ({len(self.log)} lines; all in {self.log_path}):\n  " + "\n  ".join(shown)
        )

    def close(self) -> None:
        logging.getLogger("synclient").removeHandler(self.secrets)
        logging.getLogger("synclient").propagate = self._propagate
        for name, level in self._levels.items():
            logging.getLogger(name).setLevel(level)
        self.platform.close()
        self.untrusted.stop()

    # -- the loop ----------------------------------------------------------------------------------------------------

    def run(self) -> Counter:
        self.log_path.write_text("", encoding="utf-8")
        for step in range(1, self.steps + 1):
            self.step = step
            for _ in range(self.rng.choice((1, 1, 2, 3))):
                self.apply_random_rule()
            sync = self.random_sync()
            if self.rng.random() < self.kill_share:
                # the same source and target, through the CLI, in a cache mode of its own (a killed linked run
                # followed by a copying one is what defect 1 of issue 29 needs)
                cache = self.rng.choices(CACHE_MODES, weights=(1, 3, 1))[0]
                self.kill_mid_sync(dataclasses.replace(sync, dry_run_first=False, cli=True, cache=cache))
            self.sync_and_check(sync)
            if self.cart_rng.random() < self.cart_share:
                self.cart_step()
        if self.violations:
            raise ModelViolation(
                self._with_replay(
                    f"{len(self.violations)} distinct invariants broke (keep-going mode):\n\n"
                    + "\n".join(self.violations.values())
                )
            )
        return self.stats

    def apply_random_rule(self) -> None:
        many = len(self.remote.current) > 30
        rules = [
            (self.r_add_file, 2 if many else 8),
            (self.r_add_big_file, 0.5),
            (self.r_add_huge_file, 0.4),
            (self.r_add_folder, 1 if many else 3),
            (self.r_add_odd_file, 0.8),
            (self.r_delete, 4 if many else 1.5),
            (self.r_rename, 2),
            (self.r_move, 2),
            (self.r_new_version, 5),
            (self.r_add_dataset, 2),
            (self.r_change_dataset, 1.5),
            (self.r_add_collection, 1),
            (self.c_synapseclient_download, 1.5),
            (self.l_edit, 1.5),
            (self.l_delete, 1),
            (self.r_credential_file_in, 0.3),
        ]
        rule = self.rng.choices([r for r, _ in rules], weights=[w for _, w in rules])[0]
        rule()

    # -- remote rules ------------------------------------------------------------------------------------------------

    def content(self) -> bytes:
        return self.rng.randbytes(self.rng.choice((0, self.rng.randint(1, 64), self.rng.randint(100, 3000))))

    def pick_folder(self, max_depth: int = MAX_DEPTH - 1) -> str:
        return self.rng.choice(sorted(p for p in self.remote.folders if self.remote.depth(p) <= max_depth))

    def free_name(self, folder: str, pool=NAMES) -> Optional[str]:
        taken = self.remote.names_in(folder) | {n for e, (f, n) in self.remote.odd.items() if f == folder}
        if folder == "":
            taken |= {d.name for d in self.datasets.values()} | {"the view"}
        free = [n for n in pool if n not in taken]
        return self.rng.choice(free) if free else None

    def r_add_file(self, data: Optional[bytes] = None, what: str = "") -> None:
        folder = self.pick_folder()
        name = self.free_name(folder)
        if name is None:
            return
        data = self.content() if data is None else data
        entity = self.remote.add_file(folder, name, data)
        self.note(f"remote: add {what}file {join(folder, name)!r} ({len(data)} bytes, {entity})")

    def r_add_big_file(self) -> None:
        self.r_add_file(self.rng.randbytes(self.rng.randint(PART + 1, 4 * PART + 999)), "big ")

    def r_add_huge_file(self) -> None:
        """A few MiB: a copy or hash from the cache takes long enough for a kill to land in it."""
        if sum(len(self.remote.history.get((e, v), b"")) >= MiB for e, v in self.remote.current.items()) >= 3:
            return
        self.r_add_file(self.rng.randbytes(self.rng.randint(3 * MiB, 6 * MiB)), "huge ")

    def r_add_odd_file(self) -> None:
        folder = self.pick_folder()
        name = self.free_name(folder, SEPARATOR_NAMES)
        if name is None:
            return
        data = self.content()
        entity = self.remote.add_odd_file(folder, name, data)
        self.note(f"remote: add file named {name!r} in {folder or '<root>'!r} ({len(data)} bytes, {entity})")

    def r_add_folder(self) -> None:
        folder = self.pick_folder(MAX_DEPTH - 2)
        name = self.free_name(folder)
        if name is None:
            return
        self.remote.add_folder(folder, name)
        self.note(f"remote: add folder {join(folder, name)!r}")
        for _ in range(self.rng.choice((0, 1, 2))):
            child = self.free_name(join(folder, name))
            if child is not None:
                self.remote.add_file(join(folder, name), child, self.content())
                self.note(f"remote: add file {join(join(folder, name), child)!r}")

    def _any_entity(self) -> Optional[str]:
        paths = sorted(list(self.remote.files) + [p for p in self.remote.folders if p])
        return self.rng.choice(paths) if paths else None

    def r_delete(self) -> None:
        if self.datasets and self.rng.random() < 0.15:
            entity = self.rng.choice(sorted(self.datasets))
            self.emu.delete_entity(entity)
            del self.datasets[entity]
            self.deleted_ids.append(entity)
            self.note(f"remote: delete dataset/collection {entity}")
            return
        rel = self._any_entity()
        if rel is None:
            return
        gone = set(self.remote.files_under(rel)) if rel in self.remote.folders else {self.remote.files[rel].entity_id}
        self.remote.delete(rel)
        self.deleted_ids.extend(sorted(gone))
        self.note(f"remote: delete {rel!r} ({len(gone)} files)")

    def r_rename(self) -> None:
        rel = self._any_entity()
        if rel is None:
            return
        name = self.free_name(parent_of(rel))
        if name is not None:
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
        taken = lambda folder: name_of(rel) in self.free_names_taken(folder)  # noqa: E731
        targets = sorted(
            p
            for p in self.remote.folders
            if p != parent_of(rel)
            and not under(p, rel)
            and self.remote.depth(p) + 1 + height <= MAX_DEPTH
            and not taken(p)
        )
        if targets:
            folder = self.rng.choice(targets)
            self.remote.relocate(rel, join(folder, name_of(rel)))
            self.note(f"remote: move {rel!r} into {folder or '<root>'!r}")

    def free_names_taken(self, folder: str) -> Set[str]:
        taken = self.remote.names_in(folder) | {n for e, (f, n) in self.remote.odd.items() if f == folder}
        return taken | ({d.name for d in self.datasets.values()} | {"the view"} if folder == "" else set())

    def r_new_version(self) -> None:
        if not self.remote.files:
            return
        rel = self.rng.choice(sorted(self.remote.files))
        old = self.remote.files[rel].content
        kind = self.rng.choices(("new", "same-size", "same-bytes", "big"), weights=(6, 2, 1, 1))[0]
        data = {
            "new": self.content,
            "big": lambda: self.rng.randbytes(self.rng.randint(PART + 1, 3 * PART)),
            "same-bytes": lambda: old,
            "same-size": lambda: self.rng.randbytes(len(old)) if old else b"z",
        }[kind]()
        self.remote.new_version(rel, data)
        self.note(f"remote: new version of {rel!r} ({kind}, {len(data)} bytes) -> v{self.remote.files[rel].version}")

    def r_credential_file_in(self) -> None:
        """A file whose external URL carries a password comes into the project (walks and queries meet it)."""
        outside = sorted(e for e in self.credential_files if e not in self.remote.current and e not in self.deleted_ids)
        if not outside:
            return
        entity = self.rng.choice(outside)
        folder = self.pick_folder()
        name = self.credential_files[entity]
        if name in self.free_names_taken(folder):
            return
        self.emu.move_entity(entity, self.remote.folders[folder])
        self.remote.current[entity] = 1
        self.remote.odd[entity] = (folder, name)  # known by id only: the model has no bytes for it
        self.note(f"remote: {entity} (an external URL with a password) moves into {folder or '<root>'!r}")

    def _random_items(self) -> List[Tuple[str, int]]:
        pool = sorted(self.remote.current)
        if not pool:
            return []
        items: List[Tuple[str, int]] = []
        for _ in range(self.rng.randint(1, 5)):
            entity = self.rng.choice(pool)
            version = self.rng.randint(1, self.remote.current[entity])
            if (entity, version) not in items:
                items.append((entity, version))
        return items

    def _set_items(self, entity: str, items: List[Tuple[str, int]]) -> None:
        self.emu.store.set_items(int(entity[3:]), [ItemRef(int(e[3:]), v) for e, v in items])

    def r_add_dataset(self) -> None:
        name = self.free_name("", DATASET_NAMES)
        items = self._random_items()
        if name is None or not items:
            return
        # (the model's names are a hostile server's: "ev/ds" is no name Synapse stores)
        entity_id = self.emu.store.create_entity(
            EntityKind.DATASET, name, int(self.remote.root_id[3:]), names=NameRule.UNCHECKED
        )
        entity = f"syn{entity_id}"
        self._set_items(entity, items)
        self.datasets[entity] = Dataset(name, items)
        self.note(f"remote: add dataset {name!r} ({entity}) of {items}")

    def r_change_dataset(self) -> None:
        plain = sorted(e for e, d in self.datasets.items() if not d.collection)
        if not plain:
            return
        entity = self.rng.choice(plain)
        items = self._random_items()
        self._set_items(entity, items)
        self.datasets[entity].items = items
        self.note(f"remote: dataset {entity} now pins {items}")

    def r_add_collection(self) -> None:
        plain = sorted(e for e, d in self.datasets.items() if not d.collection)
        name = self.free_name("", COLLECTION_NAMES)
        if not plain or name is None:
            return
        members = self.rng.sample(plain, self.rng.randint(1, min(3, len(plain))))
        entity_id = self.emu.store.create_entity(
            EntityKind.DATASET_COLLECTION, name, int(self.remote.root_id[3:]), names=NameRule.UNCHECKED
        )
        entity = f"syn{entity_id}"
        self.emu.store.set_items(int(entity[3:]), [ItemRef(int(m[3:]), 1) for m in members])
        self.datasets[entity] = Dataset(name, [(m, 0) for m in members], collection=True)
        self.note(f"remote: add collection {name!r} ({entity}) of {members}")

    # -- the cache and local rules -----------------------------------------------------------------------------------

    def c_synapseclient_download(self) -> None:
        """synapseclient downloads a file version into its cache (as ``syn.get`` does) and records it there."""
        if not self.remote.current:
            return
        entity = self.rng.choice(sorted(self.remote.current))
        version = self.rng.randint(1, self.remote.current[entity])
        row = self.emu.store.version(int(entity[3:]), version)
        if row is None or (entity, version) in self.planted_cache or (entity, version) not in self.remote.history:
            return  # (a file of an external URL has no bytes to download)
        handle = row.file_handle_id
        cache = SynapseCache(self.cache_root)
        path = cache.cache_dir(handle) / "downloaded.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        data = self.remote.history[(entity, version)]
        path.write_bytes(data)
        cache.record(handle, path, md5(data))
        self.planted_cache.add((entity, version))
        self.note(f"cache: synapseclient downloads {entity}.{version} (handle {handle}, {len(data)} bytes)")

    def _target_files(self, targets: Tuple[str, ...] = TARGETS[:-1]) -> List[Tuple[str, str]]:
        """The synced files of ``targets`` (the main walk's local rules leave the cart's target to the cart's rules:
        the draws of each seed's walk stay what they were)."""
        found = []
        for target in targets:
            root = self.targets[target]
            for rel, entry in self._tree(root, meta=False).items():
                if entry[0] == "file" and not name_of(rel).endswith(PARTIAL_SUFFIXES) and rel != CART_MANIFEST:
                    found.append((target, rel))
        return sorted(found)

    def l_edit(self) -> None:
        """The user edits a synced file in place (through every hard link to it: documented for link mode)."""
        files = self._target_files()
        if not files:
            return
        target, rel = self.rng.choice(files)
        path = self.targets[target] / rel
        data = self.rng.randbytes(self.rng.randint(0, 400))
        info = os.lstat(path)
        with open(path, "r+b") as handle:
            handle.write(data)
            handle.truncate()
        later = info.st_mtime_ns + self.rng.randint(2, 50) * 1_000_000_000
        os.utime(path, ns=(later, later))
        self.note(f"local: edit {target}/{rel!r} in place ({len(data)} bytes; {info.st_nlink} links)")

    def l_delete(self) -> None:
        files = self._target_files()
        if files:
            target, rel = self.rng.choice(files)
            os.unlink(self.targets[target] / rel)
            self.note(f"local: delete {target}/{rel!r}")

    # -- the download cart ---------------------------------------------------------------------------------------------

    def _cart(self) -> Set[Tuple[str, Optional[int]]]:
        """The user's download cart as the emulator holds it: every item, available or not (the model's truth; the
        walk fills it through the HTTP API)."""
        lists = self.emu._open_store().download_lists
        return {(f"syn{entity}", version) for (entity, version), _ in lists.items(self.emu.store.user.id)}

    def _cart_call(self, method: str, path: str, body: Optional[dict] = None) -> None:
        answer = requests.request(
            method,
            self.emu.endpoint + CART_API + path,
            json=body,
            headers={"Authorization": f"Bearer {TOKEN}"},
            timeout=60,
        )
        if answer.status_code != 200:
            raise AssertionError(f"the emulator refused {method} {CART_API}{path}: {answer.status_code} {answer.text}")

    def k_cart_add(self) -> None:
        """The user adds a few files to the cart: current ones (without a version), versions (with one), names
        holding '/', a file whose external URL has a password (it fails: it stays in the cart)."""
        rng = self.cart_rng
        items: List[Tuple[str, Optional[int]]] = []
        for _ in range(rng.randint(1, 4)):
            kind = rng.choices(("file", "odd", "credential"), weights=(8, 1.5, 0.4))[0]
            pool = sorted(self.remote.odd if kind == "odd" else self.remote.current)
            if kind == "credential":
                pool = sorted(e for e in self.credential_files if e not in self.deleted_ids)
            if not pool:
                continue
            entity = rng.choice(pool)
            version = None if rng.random() < 0.45 else rng.randint(1, self.remote.current.get(entity, 1))
            if (entity, version) not in items:
                items.append((entity, version))
        if items:
            batch = [{"fileEntityId": e, **({} if v is None else {"versionNumber": v})} for e, v in items]
            self._cart_call("POST", "/add", {"batchToAdd": batch})
            self.note(f"cart: the user adds {[e if v is None else f'{e}.{v}' for e, v in items]}")

    def k_cart_clear(self) -> None:
        self._cart_call("DELETE", "")
        self.note("cart: the user empties the cart")

    def k_cart_local(self) -> None:
        """The user edits or deletes a file the cart put in its target (a later run must not take the edited one
        for the remote's: such an item stays in the cart under keep.local)."""
        files = self._target_files(("cart",))
        if not files:
            return
        _, rel = self.cart_rng.choice(files)
        path = self.targets["cart"] / rel
        if self.cart_rng.random() < 0.4:
            os.unlink(path)
            self.note(f"local: delete cart/{rel!r}")
            return
        data = self.cart_rng.randbytes(self.cart_rng.randint(0, 300))
        info = os.lstat(path)
        with open(path, "r+b") as handle:
            handle.write(data)
            handle.truncate()
        later = info.st_mtime_ns + self.cart_rng.randint(2, 50) * 1_000_000_000
        os.utime(path, ns=(later, later))
        self.note(f"local: edit cart/{rel!r} in place ({len(data)} bytes; {info.st_nlink} links)")

    def cart_step(self) -> None:
        """A few cart rules, then one cart sync (drawn as the others are, from the cart's own generator): sometimes
        through the CLI, sometimes killed first."""
        rng = self.cart_rng
        if not self._cart():
            self.k_cart_add()
        for _ in range(rng.choice((0, 1, 1, 2))):
            full = len(self._cart()) >= 20  # (keep_cart runs and failures keep items: the cart is emptied now and then)
            rules = ((self.k_cart_add, 6), (self.k_cart_local, 1.5), (self.k_cart_clear, 5 if full else 0.3))
            rng.choices([r for r, _ in rules], weights=[w for _, w in rules])[0]()
        sync = Sync(
            source="cart",
            target="cart",
            cache=rng.choices(CACHE_MODES, weights=CACHE_WEIGHTS)[0],
            fs=rng.choice(FS_PROBES),
            if_collision=rng.choices(("overwrite.local", "keep.local", "keep.both"), weights=(6, 2, 1))[0],
            dry_run_first=rng.random() < 0.2,
            cli=rng.random() < self.cli_share,
            token_via=rng.choice(("--token", "env", "config")),
            verbose=rng.random() < 0.5,
            keep_cart=rng.random() < 0.3,
            keep_paths=rng.random() < KEEP_PATHS_SHARE,
            hostile=self.hostile and rng.random() < 0.4,
        )
        if rng.random() < self.kill_share:
            cache = rng.choices(CACHE_MODES, weights=(1, 3, 1))[0]
            self.kill_mid_sync(dataclasses.replace(sync, dry_run_first=False, cli=True, cache=cache), rng=rng)
        self.sync_and_check(sync)

    def _expect_cart(self, sync: Sync) -> Set[Tuple[str, Optional[int]]]:
        """The cart now, and what a cart sync of it must do (``sync.cart``, ``sync.wanted``): each item at the
        version it was added at, the current one for an item without one; an item of a deleted file is none."""
        cart = self._cart()
        sync.cart, sync.wanted = {}, {}
        for entity, version in sorted(cart, key=lambda k: (k[0], k[1] or 0)):
            exists = entity in self.remote.current or (
                entity in self.credential_files and entity not in self.deleted_ids
            )
            current = self.remote.current.get(entity, 1)
            resolved = (current if version is None else version) if exists else None
            sync.cart[(entity, version)] = resolved
            if resolved is not None:
                self._want(sync, entity, resolved)
        return cart

    def _bytes_in_target(self, sync: Sync) -> Set[str]:
        """The MD5 of every complete regular file in the target (partials and the index aside)."""
        found = set()
        root = self.targets[sync.target]
        for rel, entry in self._tree(root, meta=False, hashes=True).items():
            if entry[0] == "file" and not name_of(rel).endswith(PARTIAL_SUFFIXES):
                found.add(entry[3])
        return found

    def check_cart(self, sync: Sync, before: Set[Tuple[str, Optional[int]]], results, when: str) -> None:
        """``cart-kept``, ``cart-removed-unfinished``, ``missing-result`` of a cart run (``results`` None: a run
        without a report, killed or failed as a whole: each removed item's bytes must be complete somewhere in the
        target)."""
        after = self._cart()
        removed = sorted(before - after, key=lambda k: (k[0], k[1] or 0))
        if after - before:
            self.violation("cart-kept", f"{when} ({sync}) added {sorted(after - before)} to the cart")
        if removed and sync.keep_cart:
            self.violation("cart-kept", f"{when} ({sync}) with keep_cart removed {removed} from the cart")
        anywhere = self._bytes_in_target(sync) if removed and not results else set()
        for entity, version in removed:
            resolved = sync.cart.get((entity, version))
            expected = self.remote.history.get((entity, resolved)) if resolved is not None else None
            if expected is None:
                self.violation(
                    "cart-removed-unfinished",
                    f"{when} ({sync}) removed {entity} v{version} from the cart, an item whose file "
                    f"{'is deleted' if resolved is None else 'has no bytes to download'}",
                )
                continue
            if not results:
                if md5(expected) not in anywhere:
                    self.violation(
                        "cart-removed-unfinished",
                        f"{when} ({sync}) removed {entity} v{version} from the cart, and no file in the "
                        f"target holds its version {resolved}'s bytes",
                    )
                continue
            complete = [
                r
                for r in results
                if r.entity_id == entity
                and r.version == resolved
                and r.status is not SyncStatus.FAILED
                and r.path is not None
                and os.path.isfile(r.path)
                and Path(r.path).read_bytes() == expected
            ]
            if not complete:
                self.violation(
                    "cart-removed-unfinished",
                    f"{when} ({sync}) removed {entity} v{version} from the cart, but its file (v{resolved}) is "
                    "not complete at its reported path: "
                    + "; ".join(repr(r) for r in results if r.entity_id == entity)[:600],
                )
        if not results or sync.hostile:
            return
        for (entity, version), resolved in sorted(sync.cart.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)):
            if resolved is not None and not any(
                r.entity_id == entity and (r.version == resolved or r.status is SyncStatus.FAILED) for r in results
            ):
                self.violation(
                    "missing-result",
                    f"{when} ({sync}): no result for the cart's item {entity} v{version} (its version {resolved})",
                )

    # -- drawing a sync ----------------------------------------------------------------------------------------------

    def random_sync(self) -> Sync:
        rng = self.rng
        source = rng.choices(SOURCES, weights=SOURCE_WEIGHTS)[0]
        if source == "dataset" and not self.datasets:
            source = "ids"
        sync = Sync(
            source=source,
            target=source,
            cache=rng.choices(CACHE_MODES, weights=CACHE_WEIGHTS)[0],
            fs=rng.choice(FS_PROBES),
            if_collision=rng.choices(("overwrite.local", "keep.local", "keep.both"), weights=(6, 2, 1))[0],
            dry_run_first=rng.random() < 0.3,
            cli=rng.random() < self.cli_share,
            token_via=rng.choice(("--token", "env", "config")),
            verbose=rng.random() < 0.5,
        )
        if source in ("walk", "view-walk"):
            sync.target = rng.choice(("walk-a", "walk-b"))
            sync.delete = rng.random() < 0.4
            sync.view = self.view_id if source == "view-walk" else None
            sync.wanted = {e: {v} for e, v in self.remote.files_under("").items()}
        elif source == "ids":
            self._draw_ids(sync)
        elif source == "dataset":
            count = 1 if rng.random() < 0.6 else rng.randint(2, 3)
            sync.refs = rng.sample(sorted(self.datasets), min(count, len(self.datasets)))
            for ref in sync.refs:
                self._want_dataset(sync, ref)
        else:
            self._draw_query(sync)
        if source in KEEP_PATHS_SOURCES and self.keep_paths_rng.random() < KEEP_PATHS_SHARE:
            sync.keep_paths = True
        if self.hostile and self.hostile_rng.random() < 0.4:
            sync.hostile = True
        return sync

    def _want(self, sync: Sync, entity: str, version: int) -> None:
        sync.wanted.setdefault(entity, set()).add(version)

    def _want_dataset(self, sync: Sync, entity: str) -> None:
        dataset = self.datasets.get(entity)
        if dataset is None:
            return
        for item, version in dataset.items:
            if dataset.collection:
                self._want_dataset(sync, item)
            else:
                self._want(sync, item, version)

    def _draw_ids(self, sync: Sync) -> None:
        rng = self.rng
        refs: List[str] = []
        files = sorted(self.remote.current)
        for _ in range(rng.randint(1, 5)):
            kind = rng.choices(
                ("file", "version", "container", "dataset", "deleted", "again", "zeros", "credential"),
                weights=(6, 3, 1.5, 1.5, 0.7, 1, 0.5, 0.3),
            )[0]
            if kind in ("file", "version") and files:
                entity = rng.choice(files)
                if kind == "version":
                    version = rng.randint(1, self.remote.current[entity])
                    refs.append(f"{entity}.{version}")
                    self._want(sync, entity, version)
                else:
                    refs.append(entity)
                    self._want(sync, entity, self.remote.current[entity])
                sync.named.add(entity)
            elif kind == "container":
                folder = rng.choice(sorted(self.remote.folders))
                refs.append(self.remote.folders[folder])
                sync.recursive = True
                for entity, version in self.remote.files_under(folder).items():
                    self._want(sync, entity, version)
            elif kind == "dataset" and self.datasets:
                entity = rng.choice(sorted(self.datasets))
                refs.append(entity)
                self._want_dataset(sync, entity)
            elif kind == "deleted" and self.deleted_ids:
                refs.append(rng.choice(self.deleted_ids))
            elif kind == "again" and refs:
                refs.append(rng.choice(refs))
            elif kind == "zeros" and files:  # syn0001000006: the same id
                entity = rng.choice(files)
                refs.append("syn" + "0" * rng.randint(1, 3) + entity[3:])
                self._want(sync, entity, self.remote.current[entity])
                sync.named.add(entity)
            elif kind == "credential":
                entity = rng.choice(sorted(self.credential_files))
                refs.append(entity)
                if entity not in self.deleted_ids:  # (one a rule moved in, deleted with its folder, is gone)
                    self._want(sync, entity, 1)
                    sync.named.add(entity)
        if not refs:
            refs.append(self.remote.root_id)
            sync.recursive = True
            for entity, version in self.remote.files_under("").items():
                self._want(sync, entity, version)
        if not sync.recursive and rng.random() < 0.2:
            sync.recursive = True
        sync.refs = refs

    def _draw_query(self, sync: Sync) -> None:
        columns = self.rng.choice(("*", "id", "id, currentVersion", "id, name"))
        where = self.rng.choice(
            (
                "",
                " WHERE name LIKE '%.txt'",
                " WHERE dataFileSizeBytes > 100",
                " WHERE name IN ('a.txt', 'b.txt', 'evil/x.txt', 'A.txt')",
                " WHERE dataFileSizeBytes <= 64 OR name LIKE 'e%'",
            )
        )
        sync.sql = f"SELECT {columns} FROM {self.view_id}{where}"
        sync.wanted = {e: {v} for e, v in self.remote.files_under("").items()}  # the view is live

    # -- running a sync ----------------------------------------------------------------------------------------------

    def _api_call(self, sync: Sync, dry_run: bool) -> Callable[[], object]:
        target = self.targets[sync.target]
        if sync.cache == "link":
            self.linked_targets.add(sync.target)
        common = dict(
            platform=self.platform,
            config=SYNC_CONFIG,
            on_error="continue",
            progress=False,
            dry_run=dry_run,
            if_collision=sync.if_collision,
            synapse_cache=self.cache_root if sync.cache != "off" else False,
            synapse_cache_link=sync.cache == "link",
            filesystem_names=sync.fs,
        )
        if self.dask_client is not None and self.dask_rng.random() < 0.5:
            from synclient.cluster.driver import DaskSettings
            from synclient.cluster.shards import ShardSizes

            common["dask"] = DaskSettings(
                self.dask_client, shard_sizes=ShardSizes(files=self.dask_rng.choice((1, 2, 5, 500)))
            )
            self.stats["syncs over dask"] += 1
            self.note(
                f"  ({'dry run' if dry_run else 'sync'} over Dask, shards of {common['dask'].shard_sizes.files} files)"
            )
        if sync.source in ("walk", "view-walk"):
            return lambda: sync_from_platform(self.remote.root_id, target, delete=sync.delete, view=sync.view, **common)
        if sync.keep_paths:
            common["keep_paths"] = True
        if sync.source == "cart":
            return lambda: download_list(target, keep_cart=sync.keep_cart, **common)
        if sync.source == "query":
            return lambda: download_query(sync.sql, target, **common)
        if sync.source == "dataset" and len(sync.refs) == 1 and not sync.keep_paths:  # (a list of one, then)
            return lambda: sync_from_platform(sync.refs[0], target, **common)
        return lambda: download_many(list(sync.refs), target, recursive=sync.recursive, **common)

    def _cli(self, sync: Sync, dry_run: bool) -> Tuple[List[str], Dict[str, str]]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SYNCLIENT_", "SYNAPSE_"))}
        env.update(
            HOME=str(self.home), SYNCLIENT_DISABLE_PROGRESS="1", PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring"
        )
        if sync.fs:
            env["SYNCLIENT_FS_PROBE"] = sync.fs
        head = ["--endpoint", self.emu.endpoint, "--json"] + (["-v"] if sync.verbose else [])
        if sync.token_via == "--token":
            head += ["--token", TOKEN]
        elif sync.token_via == "env":
            env["SYNCLIENT_AUTH_TOKEN"] = TOKEN
        # else: the token of the config file in HOME (written once, at the start)
        get = ["get", "--path", str(self.targets[sync.target]), "--no-progress", "--if-collision", sync.if_collision]
        get += ["--dry-run"] if dry_run else []
        get += {"off": ["--no-synapse-cache"], "link": ["--synapse-cache-link"]}.get(sync.cache, [])
        if sync.cache == "link":
            self.linked_targets.add(sync.target)
        if sync.source in ("walk", "view-walk"):
            get += ["-r", self.remote.root_id] + (["--delete"] if sync.delete else [])
            get += ["--view", sync.view] if sync.view else []
        elif sync.source == "query":
            get += ["--query", sync.sql]
        elif sync.source == "cart":
            get += ["--download-list"] + (["--keep-cart"] if sync.keep_cart else [])
        else:
            get += (["-r"] if sync.recursive else []) + list(sync.refs)
        get += ["--keep-paths"] if sync.keep_paths else []
        return [sys.executable, "-c", CLI_CHILD, *head, *get], env

    def _cli_results(self, sync: Sync, stdout: str, stderr: str, code: int):
        for channel, text in (("stdout/--json", stdout), ("stderr", stderr)):
            secret = leaked(text)
            if secret:
                self.violation(
                    "secret-leaked", f"{secret!r} is in the CLI's {channel} ({sync}): {around(text, secret)}"
                )
        if "internal error" in stderr or ("Traceback (most recent call last)" in stderr and not sync.verbose):
            self.violation("cli-internal-error", f"the CLI ({sync}) exit {code}: {stderr[-1500:]}")
        try:
            document = json.loads(stdout)
        except ValueError:
            self.violation(
                "cli-internal-error",
                f"the CLI ({sync}) exit {code} wrote no JSON document: {stdout[-500:]!r} / {stderr[-800:]}",
            )
            return None
        if code not in (0, 1):
            if code == 2:  # a usage error (an id the list cannot take as given): one line, no results
                self.note(f"  -> CLI exit 2: {document.get('error')}")
                self.usage_error = str(document.get("error"))
                return []
            self.violation("cli-internal-error", f"the CLI ({sync}) exit {code}: {stderr[-800:]}")
            return None
        self.renamed_lines = list(document.get("report", {}).get("renamed") or [])
        results = [
            SimpleNamespace(
                entity_id=f["entity_id"],
                version=f["version"],
                path=Path(f["path"]) if f["path"] else None,
                status=SyncStatus(f["status"]),
                action=f["action"],
                error=f["error"],
                renamed=f.get("renamed"),
            )
            for f in document.get("files", [])
        ]
        self.note(
            "  -> CLI: "
            + json.dumps(document.get("report", {}).get("downloaded"))
            + " downloaded, "
            + str(sum(r.status is SyncStatus.FAILED for r in results))
            + " failed"
        )
        return results

    def run_sync(self, sync: Sync, *, dry_run: bool = False):
        """The results (a list of objects with entity_id, version, path, status, action, error), a SyncPlan for an
        API dry run, [] for a CLI dry run, or None when the run broke an invariant and yields nothing to check."""
        self._set_hostile(sync.hostile)
        self.usage_error = None
        try:
            if sync.cli:
                argv, env = self._cli(sync, dry_run)
                try:
                    done = subprocess.run(
                        argv, capture_output=True, text=True, env=env, cwd=str(self.home), timeout=SYNC_TIMEOUT
                    )
                except subprocess.TimeoutExpired:
                    self.violation("run-hung", f"the CLI sync ({sync}) did not end in {SYNC_TIMEOUT:.0f} s")
                    return None
                results = self._cli_results(sync, done.stdout, done.stderr, done.returncode)
                return [] if dry_run and results is not None else results
            finished, value, error = _run_in_thread(self._api_call(sync, dry_run), SYNC_TIMEOUT)
            if not finished:
                self.violation("run-hung", f"the sync ({sync}) did not end in {SYNC_TIMEOUT:.0f} s")
                return None
            if error is not None:
                text = f"{type(error).__name__}: {error}"
                if leaked(text):
                    self.violation("secret-leaked", f"a secret is in the exception the sync raised: {text[:500]}")
                if isinstance(error, ConfigError) and sync.source == "ids":
                    self.note(f"  -> usage error: {text}")  # a list the API refuses as a whole: one clear error
                    self.usage_error = str(error)
                    return []
                if isinstance(error, SynclientError) and sync.hostile:
                    self.note(f"  -> the run failed on a hostile answer: {text}")  # one clear error, no crash
                    return []
                self.violation("sync-raised", f"the sync ({sync}) raised {text}")
                return None
            self.renamed_lines = list(getattr(getattr(value, "report", None), "renamed", None) or [])
            if not dry_run and value is not None and hasattr(value, "report"):
                text = json.dumps(value.report.to_json(), default=str)
                if leaked(text):
                    self.violation(
                        "secret-leaked", f"a secret is in the report of the sync ({sync}): {around(text, leaked(text))}"
                    )
            return value
        finally:
            self._set_hostile(False)
            if self.secrets.found:
                found, self.secrets.found = self.secrets.found, []
                self.violation("secret-leaked", f"a secret is in {len(found)} log records ({sync}): {found[0]}")

    def _set_hostile(self, on: bool) -> None:
        if has_hostile_mode():
            self.emu.set_knobs(**{k: (v if on else 0.0) for k, v in LEGACY_HOSTILE.items()})
            kinds = os.environ.get("SYNCLIENT_MODEL_SOURCES_HOSTILE_KINDS", "").strip() or "all"
            knobs = self.emu.set_knobs(hostile_rate=HOSTILE_RATE if on else 0.0, hostile_kinds=kinds)
            if on:
                self.last_hostile_knobs = knobs
        else:
            self.emu.set_knobs(**{k: (v if on else 0.0) for k, v in LEGACY_HOSTILE.items()})

    # -- snapshots ---------------------------------------------------------------------------------------------------

    _md5_memo: Dict[tuple, str] = {}

    @classmethod
    def _md5(cls, path: Path, info: os.stat_result) -> str:
        """A file's MD5, remembered by (path, device, inode, size, mtime, ctime): any write changes the ctime, which
        nobody can set back, so an unchanged key is unchanged bytes (the 6 MiB files are not hashed on every check)."""
        key = (str(path), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        if key not in cls._md5_memo:
            if len(cls._md5_memo) > 100_000:
                cls._md5_memo.clear()
            cls._md5_memo[key] = file_md5(path)
        return cls._md5_memo[key]

    @classmethod
    def _tree(cls, root: Path, *, meta: bool = True, hashes: bool = False) -> Dict[str, tuple]:
        """rel -> (kind, size, mtime_ns[, md5]) without following symlinks; ``meta=False`` leaves .synclient out."""
        found: Dict[str, tuple] = {}
        for folder, dirs, files in os.walk(root):
            if not meta and Path(folder) == root and ".synclient" in dirs:
                dirs.remove(".synclient")
            for name in sorted(dirs + files):
                path = Path(folder) / name
                rel = path.relative_to(root).as_posix()
                try:
                    info = os.lstat(path)
                except FileNotFoundError:
                    continue
                if stat.S_ISLNK(info.st_mode):
                    found[rel] = ("link", os.readlink(path))
                elif stat.S_ISDIR(info.st_mode):
                    found[rel] = ("dir",)
                else:
                    found[rel] = ("file", info.st_size, info.st_mtime_ns) + ((cls._md5(path, info),) if hashes else ())
        return found

    def protected(self, but: Optional[str]) -> Dict[str, Tuple[tuple, int]]:
        """What a sync into target ``but`` must leave alone: every file of the other targets, of the cache (its maps
        aside) and of the sentinel: key -> ((kind, size, mtime, md5), link count)."""
        roots = {f"targets/{n}": p for n, p in self.targets.items() if n != but}
        roots.update({"cache": self.cache_root, "sentinel": self.sentinel})
        found: Dict[str, Tuple[tuple, int]] = {}
        for label, root in roots.items():
            for rel, entry in self._tree(root, hashes=True).items():
                if label == "cache" and (name_of(rel).startswith(".cacheMap") or entry[0] == "dir"):
                    continue  # its maps and their folders are the cache's to change
                links = os.lstat(root / rel).st_nlink if entry[0] == "file" else 1
                found[f"{label}/{rel}"] = (entry, links)
        # HOME's .cache is allowed only synclient's own folder (the request gate's state between commands)
        home = tuple(sorted(name for name in os.listdir(self.home) if name != ".cache"))
        found["<work listing>"] = (tuple(sorted(os.listdir(self.work))) + home, 1)
        user_cache = self.home / ".cache"
        others = sorted(rel for rel in self._tree(user_cache) if rel.split("/")[0] != "synclient")
        found["<user cache other than synclient's>"] = (tuple(others), 1)
        return found

    def check_outside(self, before: Dict[str, Tuple[tuple, int]], sync: Sync, when: str) -> None:
        now = self.protected(sync.target)
        old = {k: v[0] for k, v in before.items()}
        new = {k: v[0] for k, v in now.items()}
        if old != new:
            self.violation(
                "outside-unchanged",
                f"{when} ({sync}) changed files outside its target: "
                f"{diff_snapshots(old, new)}" + self._inode_note(before, now),
            )
        if sync.cache != "link":
            gained = sorted(k for k in set(before) & set(now) if now[k][1] > before[k][1])
            if gained:
                self.violation(
                    "hard-link-without-link-mode",
                    f"{when} ({sync}) without synapse_cache_link gave "
                    f"files outside its target more links: {gained[:6]}",
                )

    @staticmethod
    def _inode_note(before, now) -> str:
        shared = [k for k, v in now.items() if v[1] > 1 and before.get(k, (None, 0))[0] != v[0]]
        return f" (changed files with several links: {shared[:6]})" if shared else ""

    def check_partials(self, when: str) -> None:
        for target, root in self.targets.items():
            for folder, _, files in os.walk(root):
                for name in files:
                    if name.endswith(TEMP_SUFFIX):
                        info = os.lstat(Path(folder) / name)
                        if info.st_nlink > 1:
                            rel = (Path(folder) / name).relative_to(root).as_posix()
                            self.violation(
                                "partial-hard-linked",
                                f"after {when}, the partial {target}/{rel!r} has "
                                f"{info.st_nlink} links (inode {info.st_ino})",
                            )

    def check_cache_maps(self) -> None:
        for path in self.cache_root.glob("*/*/.cacheMap"):
            try:
                json.loads(path.read_text(encoding="utf-8"))
            except ValueError as exc:
                self.violation("cache-map-invalid", f"{path.relative_to(self.cache_root)}: {exc}")

    # -- the checks of one sync --------------------------------------------------------------------------------------

    def sync_and_check(self, sync: Sync) -> None:
        self.stats["syncs"] += 1
        self.stats[f"source {sync.source}"] += 1
        self.stats[f"cache {sync.cache}"] += 1
        self.stats["cli syncs"] += sync.cli
        self.stats["hostile syncs"] += sync.hostile
        self.stats["keep_paths syncs"] += sync.keep_paths
        if sync.if_collision == "keep.both":
            self.keep_both_targets.add(sync.target)
        self._note_homes()
        cart = self._expect_cart(sync) if sync.source == "cart" else set()
        self.note(f"sync: {sync}")
        target = self.targets[sync.target]
        if sync.dry_run_first:
            before_target = self._tree(target)
            before = self.protected(sync.target)
            maps = self._cache_maps()
            plan = self.run_sync(dataclasses.replace(sync, cli=False), dry_run=True)  # a CLI sync's: by the API
            after_target = self._tree(target)
            if sync.source == "cart" and self._cart() != cart:
                self.violation("dry-run-wrote", f"the dry run ({sync}) changed the cart: {sorted(cart ^ self._cart())}")
            if before_target != after_target:
                self.violation(
                    "dry-run-wrote",
                    f"the dry run ({sync}) changed the target: {diff_snapshots(before_target, after_target)}",
                )
            if maps != self._cache_maps():
                self.violation("dry-run-wrote", f"the dry run ({sync}) changed the cache's maps")
            self.check_outside(before, sync, "the dry run")
            if isinstance(plan, SyncPlan):
                self.check_plan(sync, plan)
        before = self.protected(sync.target)
        self.emu.reset_stats()
        results = self.run_sync(sync)
        self.check_outside(before, sync, "the sync")
        self.check_partials("the sync")
        self.check_cache_maps()
        if sync.source == "cart":
            self.check_cart(sync, cart, results, "the sync")
        if sync.keep_paths and sync.source == "ids" and not sync.hostile and results is not None:
            self._check_keep_paths_usage(sync)
        if results is None:
            return
        self.stats["results"] += len(results)
        failed = [r for r in results if r.status is SyncStatus.FAILED]
        self.note(
            f"  -> {len(results)} results, {len(failed)} failed"
            + (": " + "; ".join(f"{r.entity_id}: {str(r.error)[:80]}" for r in failed[:3]) if failed else "")
        )
        self.check_results(sync, results, "the sync")
        if failed or sync.hostile or not results:
            return
        before = self.protected(sync.target)
        tree = self._tree(target, meta=False)
        cart = self._cart() if sync.source == "cart" else set()
        self.emu.reset_stats()
        again = self.run_sync(dataclasses.replace(sync, dry_run_first=False, cli=False))  # (the same options)
        self.check_outside(before, sync, "the second run")
        if sync.source == "cart":
            self.check_cart(sync, cart, again, "the second run")
        if again is None:
            return
        self.note(f"  -> second run: {len(again)} results")
        self.check_results(sync, again, "the second identical run")
        acted = [r for r in again if r.status in (SyncStatus.DOWNLOADED, SyncStatus.DELETED)]
        data_requests = self.emu.stats()["data_requests"]
        if sync.source == "cart" and any(sync.cart.get(item) is not None for item in cart):
            data_requests -= 1  # (every cart run with an available file reads the cart's manifest CSV from storage)
        now = self._tree(target, meta=False)
        if sync.source == "cart":  # (each cart run writes its manifest.csv anew)
            tree.pop(CART_MANIFEST, None)
            now.pop(CART_MANIFEST, None)
        changed = diff_snapshots(tree, now)
        if acted or data_requests or changed:
            self.violation(
                "second-run-not-noop",
                f"a second identical run ({sync}) after a clean one: "
                f"{data_requests} data requests; acted on "
                + ", ".join(f"{self._rel(sync, r.path)} ({r.entity_id} {r.action})" for r in acted[:6])
                + (f"; local changes: {changed}" if changed else "")
                + "; the first run had "
                + ", ".join(
                    f"{self._rel(sync, r.path)} ({r.entity_id} v{r.version} {r.action})"
                    for r in results
                    if r.entity_id in {a.entity_id for a in acted}
                ),
            )

    def _note_homes(self) -> None:
        for rel, remote in self.remote.files.items():
            self.homes.setdefault(remote.entity_id, set()).add(self.remote.folders[parent_of(rel)])
        for entity, (folder, _) in self.remote.odd.items():
            self.homes.setdefault(entity, set()).add(self.remote.folders[folder])

    def _check_keep_paths_usage(self, sync: Sync) -> None:
        """``keep-paths-usage``: with keep_paths, a list that is one project or folder alone is a usage error
        (ConfigError, CLI exit 2), and no other list is."""
        containers = set(self.remote.folders.values())
        if len(sync.refs) > 1 and len(set(sync.refs)) == 1 and sync.refs[0] in containers:
            return  # (the same container twice: a list of it, or it alone; either is sound)
        alone = len(sync.refs) == 1 and sync.refs[0] in containers
        refused = self.usage_error is not None and "remote paths" in self.usage_error
        if alone != refused:
            self.violation(
                "keep-paths-usage",
                f"the sync ({sync}) "
                + (
                    "of one container alone with keep_paths was no usage error"
                    if alone
                    else f"was refused as a usage error: {self.usage_error}"
                ),
            )

    def _check_kept_path(self, sync: Sync, result, rel: str, when: str) -> None:
        """``kept-path-wrong``: with keep_paths, a file synced that no renaming names (a file that lands flat, a
        name taken or mapped: its own id, or a folder's above it, leads a ``renamed`` line) is at
        ``<project name>/<folder path>/<name>``, in a folder it lives in (or lived in: a file the index holds
        unchanged keeps its index row's folder, documented), by its current name."""
        if not sync.keep_paths or sync.hostile:
            return
        entity = result.entity_id
        by_id = self.remote.by_id()
        if entity in by_id:
            name = name_of(by_id[entity])
        elif entity in self.remote.odd:
            name = self.remote.odd[entity][1]
        else:
            return  # (a file outside the model's project: a credential file, which fails)
        renamed = {m.group(1) for m in (re.match(r"(syn\d+)", line) for line in self.renamed_lines) if m}
        folder_of = {fid: path for path, fid in self.remote.folders.items()}
        expected = []
        for home in sorted(self.homes.get(entity, ())):
            if home not in folder_of:
                continue  # (deleted since)
            folder = folder_of[home]
            chain = {self.remote.folders[p] for p in self.remote.folders if not p or under(folder, p)}
            if entity in renamed or chain & renamed:
                return
            expected.append(join(f"sources-{self.seed}", join(folder, name)))
        # (a keep.both download, name(1).ext, stays that file's name in the runs after: the index's)
        keep_both = sync.target in self.keep_both_targets
        if expected and not any(self._same_local_path(rel, path, keep_both=keep_both) for path in expected):
            self.violation(
                "kept-path-wrong",
                f"{when} ({sync}): {entity} v{result.version} reported {result.status.value} at {rel!r}, "
                f"where its remote path is {expected}"
                + (f"; renamed: {self.renamed_lines}" if self.renamed_lines else ""),
            )

    @staticmethod
    def _same_local_path(local: str, remote: str, *, keep_both: bool = False) -> bool:
        """Whether ``local`` is ``remote`` as a local disk may hold it, component by component: as it is, in its
        Windows form, or either with an entity id (a twin's: ``case (syn4).txt``). A name is sticky (the index's,
        documented in local_names.py): a folder mapped by an earlier run under another filesystem probe keeps its
        local name, with no renaming line in the runs after. ``keep_both``: the file may be a keep.both download
        beside a local file that differs, ``name(1).ext`` (docs/cli.md)."""
        parts, wanted = local.split("/"), remote.split("/")
        if len(parts) != len(wanted):
            return False
        copy = re.fullmatch(r"(.+)\(\d+\)(\.[^.]*)?", parts[-1]) if keep_both else None
        if copy is not None and SourcesWalk._same_local_path(
            "/".join(parts[:-1] + [copy.group(1) + (copy.group(2) or "")]), remote
        ):
            return True
        for depth, (part, name) in enumerate(zip(parts, wanted)):
            forms = {name, windows_form(name)}
            if part in forms:
                continue
            folder = depth < len(wanted) - 1
            if not any(
                re.fullmatch(re.escape(with_id(form, "@", is_folder=folder)).replace("@", r"syn\d+(?:\.\d+)?"), part)
                for form in forms
            ):
                return False
        return True

    def _cache_maps(self) -> Dict[str, str]:
        return {str(p): p.read_text(encoding="utf-8") for p in self.cache_root.glob("*/*/.cacheMap")}

    def _rel(self, sync: Sync, path) -> Optional[str]:
        if path is None:
            return None
        root = os.path.realpath(self.targets[sync.target])
        rel = os.path.relpath(os.path.normpath(str(path)), root)
        return None if rel == ".." or rel.startswith("../") else Path(rel).as_posix()

    def check_plan(self, sync: Sync, plan: SyncPlan) -> None:
        on_path: Dict[str, Set[Tuple[str, Optional[int]]]] = {}
        for entry in plan.entries:
            if entry.destination is None or entry.action.value == "delete":
                continue
            on_path.setdefault(os.path.normpath(str(entry.destination)), set()).add(
                (entry.entity_id, getattr(entry, "version", None))
            )
        for path, entities in sorted(on_path.items()):
            if len({e for e, _ in entities}) > 1:
                self.violation(
                    "shared-path",
                    f"the dry run ({sync}) plans {sorted(entities)} to one path {self._rel(sync, path)!r}",
                )
        self._check_separator(sync, [e.destination for e in plan.entries], "the dry run")

    def _check_separator(self, sync: Sync, paths, when: str) -> None:
        for path in paths:
            rel = self._rel(sync, path)
            if rel and any(part in SEPARATOR_PARTS for part in rel.split("/")):
                self.violation(
                    "separator-name-synced",
                    f"{when} ({sync}) put a file at {rel!r}: a remote name holding '/' became folders",
                )
                return

    def check_results(self, sync: Sync, results, when: str) -> None:
        on_path: Dict[str, Set[Tuple[str, Optional[int]]]] = {}
        inodes: Dict[Tuple[int, int], Set[str]] = {}
        seen = {r.entity_id for r in results}
        for result in results:
            if str(result.entity_id).startswith("syn0"):
                self.violation(
                    "id-not-canonical",
                    f"{when} ({sync}): a result for {result.entity_id!r}, not the canonical id: {result!r}",
                )
            if leaked(str(result.error or "")) or leaked(str(result.path or "")):
                self.violation("secret-leaked", f"{when} ({sync}): a secret is in a result: {result!r}")
            rel = self._rel(sync, result.path)
            if result.path is not None and rel is None:
                self.violation("result-outside-target", f"{when} ({sync}): a result outside the target: {result!r}")
                continue
            if (
                result.status is SyncStatus.FAILED
                or result.action in ("delete", "keep-local")
                or result.status is SyncStatus.DELETED
            ):
                continue
            on_path.setdefault(os.path.normpath(str(result.path)), set()).add((result.entity_id, result.version))
            self._check_on_disk(sync, result, rel, when, inodes)
            self._check_kept_path(sync, result, rel, when)
            bad = self._answered_unsafe(sync, result.entity_id)
            if bad:
                self.violation(
                    "hostile-name-synced",
                    f"{when} ({sync}): the server answered the name {bad!r} for "
                    f"{result.entity_id} (or a folder above it), yet it is "
                    f"reported {result.status.value} at {rel!r}",
                )
        for path, entities in sorted(on_path.items()):
            if len(entities) > 1:
                self.violation(
                    "shared-path", f"{when} ({sync}): {sorted(entities)} share the path {self._rel(sync, path)!r}"
                )
        for entities in inodes.values():
            # --synapse-cache-link makes a target's file the cache's file: two entities of the same bytes whose files
            # a link-mode run made (one of them stale and skipped as synclient's own) are one inode by design
            if len(entities) > 1 and sync.target not in self.linked_targets:
                self.violation("shared-inode", f"{when} ({sync}): the files of {sorted(entities)} are one inode")
        self._check_separator(
            sync, [r.path for r in results if r.status is not SyncStatus.FAILED and r.path is not None], when
        )
        self._check_renamed(sync, results, when)
        missing = sorted(e for e in sync.named if e not in seen)
        if missing and not sync.hostile:
            self.violation("missing-result", f"{when} ({sync}): no result for the listed files {missing}")

    def _answered_unsafe(self, sync: Sync, entity: str) -> Optional[str]:
        """Under hostile-server mode: the unsafe name (with '/', NUL, '.', '..') the server answered for this file,
        or for a folder above it in a walk, if any."""
        answered_name = getattr(emulator_hostile, "answered_name", None)
        if not sync.hostile or self.last_hostile_knobs is None or answered_name is None:
            return None
        if sync.source == "cart":
            # the hostile mode leaves the download list's rows and manifest alone: a cart run names its files by
            # them, real names, whatever a bundle asked for a path (keep_paths) answered
            return None
        rel = self.remote.by_id().get(entity)
        names = []
        if rel is not None:
            names.append((entity, name_of(rel)))
            if sync.source in ("walk", "view-walk"):
                names += [
                    (self.remote.folders[p], name_of(p))
                    for p in self.remote.folders
                    if p and under(rel, p) and p != rel
                ]
        elif entity in self.remote.odd:
            names.append((entity, self.remote.odd[entity][1]))
        for key, name in names:
            answered = answered_name(self.last_hostile_knobs, key, name)
            if answered != name and unsafe_name(answered):
                return answered
        return None

    def _check_renamed(self, sync: Sync, results, when: str) -> None:
        """Each renaming the report prints ("syn1: a:b -> a：b (why)") is on disk: the entity's file is at the new
        path, when its result is not a failure."""
        ok = {}
        for r in results:
            if r.status is not SyncStatus.FAILED and r.action not in ("delete", "keep-local") and r.path is not None:
                ok.setdefault(r.entity_id, set()).add(self._rel(sync, r.path))
        for line in self.renamed_lines:
            match = RENAMED_LINE.match(line)
            if match is None:
                continue
            entity, given = match.group(1).split(".")[0], match.group(3)
            if entity not in ok or given in ok[entity]:
                continue
            if not os.path.lexists(self.targets[sync.target] / given):
                self.violation(
                    "rename-not-on-disk",
                    f"{when} ({sync}) reports {line!r}, but {given!r} is not "
                    f"there (the results put {entity} at {sorted(ok[entity])})",
                )
                return

    def _check_on_disk(self, sync: Sync, result, rel: str, when: str, inodes) -> None:
        entity, version = result.entity_id, result.version
        wanted = sync.wanted.get(entity)
        if wanted is None:
            self.violation(
                "unexpected-entity",
                f"{when} ({sync}): a result for {entity}, which the source does not name: {result!r}",
            )
        elif version not in wanted:
            self.violation(
                "wrong-version",
                f"{when} ({sync}): {entity} at version {version}, the source asks for {sorted(wanted)}: {result!r}",
            )
        if entity not in self.remote.current and result.status is SyncStatus.DOWNLOADED:
            self.violation(
                "synced-gone-entity",
                f"{when} ({sync}): {entity} was deleted remotely but is reported {result.status.value}: {result!r}",
            )
        try:
            info = os.lstat(result.path)
        except FileNotFoundError:
            self.violation(
                "report-not-disk",
                f"{when} ({sync}): {rel!r} reported {result.status.value} "
                f"({result.action}) for {entity} v{version} but is absent"
                + (f" (renamed: {result.renamed})" if getattr(result, "renamed", None) else ""),
            )
            return
        if not stat.S_ISREG(info.st_mode):
            self.violation(
                "report-not-disk",
                f"{when} ({sync}): {rel!r} reported {result.status.value} but is not "
                f"a regular file (mode {oct(info.st_mode)})",
            )
            return
        inodes.setdefault((info.st_dev, info.st_ino), set()).add(entity)
        expected = self.remote.history.get((entity, version))
        data = Path(result.path).read_bytes()
        if expected is None:
            self.violation(
                "report-not-disk",
                f"{when} ({sync}): {rel!r} reported for {entity} v{version}, a version the model never made",
            )
        elif data != expected:
            self.violation(
                "report-not-disk",
                f"{when} ({sync}): {rel!r} reported {result.status.value} "
                f"({result.action}) for {entity} v{version} holds {len(data)} bytes "
                f"md5 {md5(data)}, that version has {len(expected)} bytes md5 "
                f"{md5(expected)} ({info.st_nlink} links)",
            )

    # -- SIGKILL mid-sync --------------------------------------------------------------------------------------------

    def kill_mid_sync(self, sync: Sync, rng: Optional[random.Random] = None) -> None:
        """The CLI of this sync in a child, SIGKILLed once N data bytes were served, once a partial file exists in
        its target, or once a partial with several links exists there; then every invariant that holds without the
        run's report."""
        self.stats["kills"] += 1
        rng = rng or self.rng
        trigger = rng.choice(("bytes", "partial", "linked-partial"))
        threshold = rng.randint(1, 400_000)
        bandwidth = rng.choice((150_000, 400_000))
        self._note_homes()
        cart = self._expect_cart(sync) if sync.source == "cart" else set()
        argv, env = self._cli(sync, dry_run=False)
        target = self.targets[sync.target]
        self.note(
            f"kill: CLI {sync}, SIGKILL on {trigger}"
            + (f" after {threshold} data bytes at {bandwidth} B/s per connection" if trigger == "bytes" else "")
        )
        before = self.protected(sync.target)
        # a slow data plane for a kill on bytes served (a file-made trigger needs none: copies are local)
        self.emu.set_knobs(bandwidth_per_conn=bandwidth if trigger == "bytes" else 0)
        self.emu.reset_stats()
        self._set_hostile(sync.hostile)
        child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=str(self.home))
        killed = False
        try:
            deadline = time.monotonic() + SYNC_TIMEOUT
            while child.poll() is None and time.monotonic() < deadline:
                if trigger == "bytes" and self.emu.stats()["data_bytes"] >= threshold:
                    break
                if trigger != "bytes" and self._partial_in(target, linked=trigger == "linked-partial"):
                    break
                time.sleep(0.0005)  # polling the child's progress (bytes served, files made), not waiting for time
            if child.poll() is None:
                child.kill()
                killed = True
            stdout, stderr = child.communicate(timeout=60)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
            self.emu.set_knobs(bandwidth_per_conn=0)
            self._set_hostile(False)
        self.stats["killed"] += killed
        self.note(f"  -> {'killed' if killed else f'the child finished first (exit {child.returncode})'}")
        for channel, text in (("stdout", stdout), ("stderr", stderr)):
            secret = leaked(text)
            if secret:
                self.violation(
                    "secret-leaked",
                    f"{secret!r} is in the killed CLI's {channel} ({sync}): "
                    f"{around(text.decode('utf-8', 'replace'), secret)}",
                )
        self.check_outside(before, sync, "the killed sync")
        self.check_partials("the killed sync")
        self.check_cache_maps()
        if sync.source == "cart":  # (a run killed after its removals removed only complete files)
            self.check_cart(sync, cart, None, "the killed sync")

    @staticmethod
    def _partial_in(root: Path, *, linked: bool) -> bool:
        for folder, _, files in os.walk(root):
            for name in files:
                if name.endswith(TEMP_SUFFIX):
                    if not linked:
                        return True
                    try:
                        if os.lstat(os.path.join(folder, name)).st_nlink > 1:
                            return True
                    except FileNotFoundError:
                        pass
        return False
