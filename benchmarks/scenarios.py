"""The scenarios of issue 6: a seed spec (built here, so the expected bytes are known independently of the
emulator), the emulator knobs, and which contenders apply."""

from __future__ import annotations

import dataclasses
import hashlib
import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from synclient.emulator import seeded_chunks

MiB = 1024 * 1024
GiB = 1024 * MiB

#: contenders that talk to the platform (REST + data)
PLATFORM_CONTENDERS = ("synclient", "synclient-cli", "synclient-w1", "synapseclient")
#: contenders that only fetch pre-signed URLs (the data-plane upper bound)
DATA_CONTENDERS = ("aria2c", "curl")


@dataclass
class Scenario:
    name: str
    title: str
    spec: dict  # seed spec (emulator format)
    knobs: Dict[str, object]  # emulator serve flags (knob field -> value)
    contenders: Tuple[str, ...]
    resync: bool = False  # measure a no-op re-sync after an unmeasured first sync
    fresh_server_per_run: bool = False  # per-user throttle windows must not leak from one run into the next
    setup_knobs: Dict[str, object] = field(default_factory=dict)  # knobs during the unmeasured first sync
    #: "sync": sync the project into a tree; "ids": download every file by its id (``download_many`` and its peers)
    #: into one flat directory, so the expected tree is the files' names (unique by construction), no folders;
    #: "query": download what a query over the file view ``view`` selects (``WHERE select``) into one flat directory;
    #: "cart": every file is added to the user's download cart before each run (not timed), then the cart is
    #: downloaded into one flat directory (``get --download-list``, synapseclient's ``get-download-list``)
    job: str = "sync"
    #: name of a file view at the project's top (issue 17): the query's table, or (job "sync") the view a contender
    #: may plan the sync from (``view=``)
    view: str = ""
    #: (annotation, value): the query's ``WHERE annotation = 'value'``; the expected files are those it selects
    select: Optional[Tuple[str, str]] = None
    #: issue 18: the emulator serves HTTPS (``serve --tls``, a throwaway CA) and every contender is given its CA
    tls: bool = False

    @property
    def flat(self) -> bool:
        return self.job in ("ids", "query", "cart")

    @property
    def where(self) -> str:
        return f"{self.select[0]} = '{self.select[1]}'" if self.select else ""

    def _walk(self) -> List[Tuple[str, int, int, dict]]:
        found: List[Tuple[str, int, int, dict]] = []

        def walk(children, prefix):
            for child in children:
                if child["type"] == "folder":
                    walk(child["children"], prefix + child["name"] + "/")
                elif child["type"] == "file":
                    found.append((prefix + child["name"], child["size"], child["seed"], child.get("annotations") or {}))

        walk(self.spec["projects"][0]["children"], "")
        return found

    @property
    def all_files(self) -> List[Tuple[str, int, int]]:
        """(relative path, size, seed) of every file in the spec (views and tables are not files)."""
        return [(path, size, seed) for path, size, seed, _ in self._walk()]

    @property
    def files(self) -> List[Tuple[str, int, int]]:
        """(relative path, size, seed) of every file the job downloads: all of them, or what the query selects."""
        if self.select is None:
            return self.all_files
        name, value = self.select
        return [
            (path, size, seed) for path, size, seed, annotations in self._walk() if value in annotations.get(name, [])
        ]

    @property
    def total_bytes(self) -> int:
        return sum(size for _, size, _ in self.files)

    @property
    def folders(self) -> int:
        count = 0

        def walk(children):
            nonlocal count
            for child in children:
                if child["type"] == "folder":
                    count += 1
                    walk(child["children"])

        walk(self.spec["projects"][0]["children"])
        return count

    def expected(self) -> Dict[str, Tuple[int, str]]:
        """{relative path: (size, md5)} computed from the spec's seeds, not asked of the emulator."""
        result = {}
        for path, size, seed in self.files:
            digest = hashlib.md5()
            for chunk in seeded_chunks(size, seed):
                digest.update(chunk)
            key = path.rsplit("/", 1)[-1] if self.flat else path
            if key in result:
                raise ValueError(f"{self.name}: two files would land at {key}")
            result[key] = (size, digest.hexdigest())
        return result


def _file(name: str, size: int, seed: int, annotations: Optional[dict] = None) -> dict:
    node = {"type": "file", "name": name, "size": size, "seed": seed}
    if annotations:
        node["annotations"] = annotations
    return node


def _project(name: str, children: list) -> dict:
    return {"projects": [{"name": name, "children": children}]}


def tiny_tree(files: int, per_folder: int = 10) -> dict:
    """SYNPY-1074's shape: files under 50 B, three folder levels, ``per_folder`` files per leaf folder."""
    leaves = math.ceil(files / per_folder)
    level2 = max(1, math.ceil(leaves / 5))
    level1 = max(1, math.ceil(level2 / 4))
    n = 0
    top = []
    for a in range(level1):
        mids = []
        for b in range(4):
            lows = []
            for c in range(5):
                children = []
                for _ in range(per_folder):
                    if n < files:
                        children.append(_file(f"f{n:05d}.txt", 1 + (n * 7) % 49, 1000 + n))
                        n += 1
                if children:
                    lows.append({"type": "folder", "name": f"c{c}", "children": children})
            if lows:
                mids.append({"type": "folder", "name": f"b{b}", "children": lows})
        if mids:
            top.append({"type": "folder", "name": f"a{a}", "children": mids})
    return _project(f"tiny-{files}", top)


def mixed(big: int, big_size: int, medium: int, medium_size: int, small: int, small_size: int) -> dict:
    children = [_file(f"big{i}.bin", big_size, 10 + i) for i in range(big)]
    children.append(
        {
            "type": "folder",
            "name": "medium",
            "children": [_file(f"m{i:04d}.bin", medium_size, 100 + i) for i in range(medium)],
        }
    )
    children.append(
        {
            "type": "folder",
            "name": "small",
            "children": [_file(f"s{i:04d}.bin", small_size, 5000 + i) for i in range(small)],
        }
    )
    return _project(f"mixed-{big}-{medium}-{small}", children)


def one_file(size: int) -> dict:
    return _project(f"one-{size}", [_file("big.bin", size, 42)])


def wide(folders: int, per_folder: int, size: int = 1024) -> dict:
    children = [
        {
            "type": "folder",
            "name": f"d{f:03d}",
            "children": [_file(f"f{i:04d}.bin", size, 20000 + f * per_folder + i) for i in range(per_folder)],
        }
        for f in range(folders)
    ]
    return _project(f"wide-{folders}x{per_folder}", children)


def spread(folders: int, per_folder: int, size: int = 4096) -> dict:
    """``folders`` folders of ``per_folder`` files, every name unique across the project (downloaded flat by id,
    nothing is renamed)."""
    children = [
        {
            "type": "folder",
            "name": f"d{f:03d}",
            "children": [
                _file(f"f{f * per_folder + i:05d}.bin", size, 40000 + f * per_folder + i) for i in range(per_folder)
            ],
        }
        for f in range(folders)
    ]
    return _project(f"spread-{folders}x{per_folder}", children)


def viewed(folders: int, per_folder: int, every: int = 5, *, with_view: bool = True) -> dict:
    """Issue 17: ``folders`` folders of ``per_folder`` files of 1-4 KiB, names unique across the project, annotated
    ``assay``: ``rnaSeq`` on every ``every``-th file, ``wgs`` on the others; and a file view ``v`` over the whole
    project with the default file-view columns and an ``assay`` column (issue 34: ``with_view=False``, the same
    files and no view, as for a user who has none)."""
    children = []
    for f in range(folders):
        files = []
        for i in range(per_folder):
            n = f * per_folder + i
            files.append(
                _file(
                    f"f{n:05d}.bin",
                    1024 + (n * 37) % 3073,
                    60000 + n,
                    {"assay": ["rnaSeq" if n % every == 0 else "wgs"]},
                )
            )
        children.append({"type": "folder", "name": f"d{f:03d}", "children": files})
    if not with_view:
        return _project(f"unviewed-{folders}x{per_folder}", children)
    children.append({"type": "entityview", "name": "v", "scope": [""], "columns": ["assay"]})
    return _project(f"viewed-{folders}x{per_folder}", children)


ALL = PLATFORM_CONTENDERS
#: rate-bound rows: the serial baseline adds nothing there
THROTTLED = ("synclient", "synclient-cli", "synapseclient")
#: rows of a list of ids: download_many (library and `get --from-file`) against synapseclient's syn.get loop
BY_ID = ("synclient", "synclient-cli", "synapseclient")
WITH_DATA = PLATFORM_CONTENDERS + DATA_CONTENDERS
#: issue 17, a query over a file view: download_query with SELECT * (the view's file columns: no bundle per file), with
#: SELECT id (a bundle per file), `synclient get --query`, and synapseclient's `synapse get -q "SELECT id ..."`
BY_QUERY = ("synclient", "synclient-id", "synclient-cli", "synapseclient")
#: issue 33: the download cart, `download_list` (library and `get --download-list`) against synapseclient's
#: `synapse get-download-list`
BY_CART = ("synclient", "synclient-cli", "synapseclient")
#: issue 17, a first sync planned from a file view (view=) against the same sync without it
WITH_VIEW = ("synclient", "synclient-view")
#: issue 34, a first sync for a user with no view: the walk against `--view auto` (library and CLI), which makes a
#: temporary view of the tree, reads it and deletes it (a run that leaves anything behind is not byte-exact)
AUTO_VIEW = ("synclient", "synclient-auto", "synclient-cli-auto")
#: issue 34: Synapse's view build time assumed for S11 (seconds per 1,000 files in the view's scope; the
#: justification and the sensitivity to it are in docs/benchmarks.md, "Issue 34")
VIEW_BUILD_SECONDS_PER_1000_FILES = 2.0


#: issue 18: the suffix of a scenario's HTTPS variant (S1 -> S1h) and the rows that have one in every run
TLS_SUFFIX = "h"
TLS_ROWS = ("S1", "S3", "S5")


def over_tls(scenario: Scenario) -> Scenario:
    """The same scenario against an emulator serving HTTPS (``serve --tls``); every contender gets its CA."""
    return dataclasses.replace(
        scenario, name=scenario.name + TLS_SUFFIX, title=scenario.title + ", over HTTPS", tls=True
    )


def plain_of(name: str) -> Optional[str]:
    """The plain scenario whose HTTPS variant ``name`` is (``S5h`` -> ``S5``), else None."""
    return name[: -len(TLS_SUFFIX)] if name.endswith(TLS_SUFFIX) and len(name) > len(TLS_SUFFIX) else None


def lookup(scenarios: Dict[str, Scenario], name: str) -> Optional[Scenario]:
    """``name`` from ``scenarios``, or the HTTPS variant of any of them (``S2h``); None when unknown."""
    if name in scenarios:
        return scenarios[name]
    plain = plain_of(name)
    if plain in scenarios and not scenarios[plain].tls:
        return over_tls(scenarios[plain])
    return None


def build(quick: bool = False) -> Dict[str, Scenario]:
    """Full sizes from the issue, or ``quick`` sizes for the CI smoke test (< 3 minutes in all)."""
    q = quick
    folders, per_folder = (20, 100) if q else (100, 1000)  # the memory rows: 2,000 or 100,000 files of 64 B
    tree = wide(folders, per_folder, size=64)
    view_folders, view_per_folder = (10, 20) if q else (100, 100)  # issue 17: 200 or 10,000 files, 1 in 5 selected
    viewed_tree = viewed(view_folders, view_per_folder)
    viewed_files = view_folders * view_per_folder
    scenarios = [
        Scenario(
            "S1",
            "tiny tree (SYNPY-1074 shape)",
            tiny_tree(60 if q else 400),
            {"api_latency_ms": 20 if q else 100, "data_latency_ms": 10 if q else 30},
            ALL,
        ),
        Scenario(
            "S1t",
            "tiny tree under --profile synapse throttles",
            tiny_tree(40 if q else 400),
            {"profile": "synapse"},
            ALL,
            fresh_server_per_run=True,
        ),
        Scenario(
            "S2",
            "mixed sizes",
            mixed(2, (8 if q else 256) * MiB, 20 if q else 200, MiB, 50 if q else 500, 4096),
            {"bandwidth_per_conn": "32MB", "data_latency_ms": 20, "url_lifetime": 3600},
            WITH_DATA,
        ),
        Scenario(
            "S3",
            "one large file, 50 MB/s per connection",
            one_file((64 * MiB) if q else 2 * GiB),
            {"bandwidth_per_conn": "50MB", "url_lifetime": 3600},
            WITH_DATA,
        ),
        # issue 13: a first sync far above the 600-per-60-s window, at its real length and ten times faster
        Scenario(
            "S6",
            "sustained throttle: first sync above the 600/60 s window",
            wide(100, 30, size=16),
            {"profile": "synapse"},
            THROTTLED,
            fresh_server_per_run=True,
        ),
        Scenario(
            "S6s",
            "sustained throttle, ten times faster (600 per 6 s, API 5 ms)",
            wide(10 if q else 100, 15 if q else 30, size=16),
            {
                "profile": "synapse",
                "rate_window_seconds": 1 if q else 6,
                "api_latency_ms": 5,
                "api_latency_jitter_ms": 2,
                "data_latency_ms": 2,
                **({"max_requests_per_minute": 50} if q else {}),
            },
            THROTTLED,
            fresh_server_per_run=True,
        ),
        Scenario(
            "S4",
            "no-op re-sync",
            wide(10 if q else 100, 30 if q else 100),
            {"api_latency_ms": 20 if q else 100},
            ALL,
            resync=True,
            setup_knobs={"api_latency_ms": 0},
        ),
        Scenario(
            "S5",
            "one large file, raw loopback",
            one_file((64 * MiB) if q else 2 * GiB),
            {"url_lifetime": 3600},
            WITH_DATA,
        ),
        # issue 6's memory target (peak RSS <= 150 MB for a 100,000-file tree): tiny files and no latency, so the
        # run is about the number of entities, not bytes or waiting. One tree (one seeded store) for both rows.
        # issue 16: download_many of a list of ids, not a project sync; the ids are resolved before any timed run
        Scenario(
            "S7",
            f"{100 if q else 1000:,} ids spread over {10 if q else 100} folders",
            spread(10 if q else 100, 10, size=4096),
            {"api_latency_ms": 20 if q else 100, "data_latency_ms": 10 if q else 30},
            BY_ID,
            job="ids",
        ),
        # issue 33: the same 1,000 files in the user's download cart (refilled before every run: a run empties it)
        Scenario(
            "S10",
            f"a download cart of {100 if q else 1000:,} files",
            spread(10 if q else 100, 10, size=4096),
            {"api_latency_ms": 20 if q else 100, "data_latency_ms": 10 if q else 30},
            BY_CART,
            job="cart",
        ),
        # issue 17: a query over a file view selecting 1 file in 5, and a first sync planned from that view under
        # Synapse's throttles; one tree (one seeded store) for both rows
        Scenario(
            "S8",
            f"query selecting {viewed_files // 5:,} of {viewed_files:,} files in a view",
            viewed_tree,
            {"api_latency_ms": 20 if q else 50, "data_latency_ms": 10 if q else 20},
            BY_QUERY,
            job="query",
            view="v",
            select=("assay", "rnaSeq"),
        ),
        Scenario(
            "S9",
            f"first sync of {viewed_files:,} files under --profile synapse, with and without view=",
            viewed_tree,
            {"profile": "synapse"},
            WITH_VIEW,
            fresh_server_per_run=True,
            view="v",
        ),
        # issue 34: the same files for a user with no view (none seeded): the walk against `--view auto`, which makes
        # its own view (built for VIEW_BUILD_SECONDS_PER_1000_FILES per 1,000 files), reads it and removes it
        Scenario(
            "S11",
            f"first sync of {viewed_files:,} files under --profile synapse, walk vs --view auto (no view seeded)",
            viewed(view_folders, view_per_folder, with_view=False),
            {"profile": "synapse", "view_build_seconds_per_1000_files": VIEW_BUILD_SECONDS_PER_1000_FILES},
            AUTO_VIEW,
            fresh_server_per_run=True,
        ),
        # issue 34 at 100,000 files: `--view auto` only, the walk projected from its calls (docs/benchmarks.md)
        Scenario(
            "S11x",
            "first sync of 100,000 files under --profile synapse with --view auto (the walk projected)",
            viewed(100, 1000, with_view=False),
            {"profile": "synapse", "view_build_seconds_per_1000_files": VIEW_BUILD_SECONDS_PER_1000_FILES},
            ("synclient-auto",),
            fresh_server_per_run=True,
        ),
        Scenario("M1", f"memory: first sync of {folders * per_folder:,} files", tree, {}, ("synclient",)),
        Scenario(
            "M1r",
            f"memory: no-op re-sync of {folders * per_folder:,} files",
            tree,
            {"api_latency_ms": 0},
            ("synclient",),
            resync=True,
            setup_knobs={"api_latency_ms": 0},
        ),
    ]
    if q:  # at quick sizes S6 and S6s are the same run, and S11x is S11
        scenarios = [s for s in scenarios if s.name not in ("S6", "S11x")]
    # issue 18: S1, S3 and S5 also over HTTPS, each right after its plain row (run side by side with it)
    scenarios = [variant for s in scenarios for variant in ([s, over_tls(s)] if s.name in TLS_ROWS else [s])]
    return {s.name: s for s in scenarios}
