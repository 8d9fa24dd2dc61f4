"""The download cart downloaded (issue 33, part 1, client side): ``synclient get --download-list`` and
``synclient.download_list`` against the emulator's download list: versions pinned, same-name clashes, the line on
files that need an action first, ``--keep-cart``, the manifest, the call bound (counted on the emulator), faults,
and a killed run resumed."""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import signal
import threading
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest
import requests
from cli_subprocess import run_synclient as synclient

from synclient import Platform, download_list, sync_from_platform
from synclient.emulator import Emulator
from synclient.errors import SyncError
from synclient.events import PlannedFile, SyncObserver
from synclient.results import FileResult, SyncStatus
from synclient.transfer.config import TransferConfig

LIST = "/repo/v1/download/list"
MANIFEST_COLUMNS = [
    "ID",
    "name",
    "versionNumber",
    "contentType",
    "dataFileSizeBytes",
    "createdBy",
    "createdOn",
    "modifiedBy",
    "modifiedOn",
    "parentId",
    "synapseURL",
    "dataFileMD5Hex",
]

SPEC = {
    "projects": [
        {
            "name": "cart",
            "children": [
                {"type": "file", "name": "a.txt", "content": "a at the top\n"},
                {
                    "type": "file",
                    "name": "b.txt",
                    "versions": [{"content": "b one\n"}, {"content": "b two, current\n"}],
                },
                {
                    "type": "folder",
                    "name": "d",
                    "children": [{"type": "file", "name": "a.txt", "content": "other a\n"}],
                },
                {"type": "file", "name": "gated.txt", "content": "gated\n", "deny": "download"},
                {"type": "file", "name": "manifest.csv", "content": "a file of that name\n"},
            ],
        }
    ]
}


@pytest.fixture
def emu(tmp_path):
    with Emulator(data_dir=str(tmp_path / "emu"), query_pending_polls=1) as emulator:
        project = emulator.seed_spec(SPEC)["cart"]
        emulator.at = lambda path: emulator.resolve(project, path)  # type: ignore[attr-defined]
        emulator.project = project  # type: ignore[attr-defined]
        yield emulator


def add(emu: Emulator, *pairs: Tuple[str, Optional[int]]) -> None:
    items = [{"fileEntityId": i} if v is None else {"fileEntityId": i, "versionNumber": v} for i, v in pairs]
    for start in range(0, len(items), 1000):
        answer = requests.post(
            emu.endpoint + LIST + "/add",
            json={"batchToAdd": items[start : start + 1000]},
            headers={"Authorization": f"Bearer {emu.token}"},
            timeout=60,
        )
        assert answer.status_code == 200, answer.text


def cart_keys(emu: Emulator) -> List[Tuple[str, Optional[int]]]:
    """The cart's available items, as they were added."""
    with Platform(emu.endpoint, token=emu.token) as platform:
        return sorted(
            ((row.file_entity_id, row.version_number) for row in platform.download_list_available()),
            key=lambda key: (key[0], key[1] or 0),
        )


def read_manifest(path: Path) -> Tuple[List[str], List[Dict[str, str]]]:
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def test_the_cart_lands_flat_at_its_versions_and_leaves_the_cart(emu, tmp_path):
    at = emu.at
    a, b, other_a, gated, named_manifest = (
        at("a.txt"),
        at("b.txt"),
        at("d/a.txt"),
        at("gated.txt"),
        at("manifest.csv"),
    )
    # b twice: at its old version 1, and without a version (its current one, 2)
    add(emu, (a, None), (b, 1), (b, None), (other_a, None), (gated, None), (named_manifest, None))
    out = tmp_path / "out"
    done = synclient(emu, tmp_path, "get", "--download-list", "--path", str(out))
    assert done.returncode == 0, done.stderr
    assert (out / "a.txt").read_bytes() == b"a at the top\n"
    assert (out / "b.txt").read_bytes() == b"b two, current\n"  # the versionless item: the current version
    assert (out / f"b ({b}.1).txt").read_bytes() == b"b one\n"  # the item added at version 1: that version
    assert (out / f"a ({other_a}).txt").read_bytes() == b"other a\n"  # same name, flat: the list's renaming
    assert (out / f"manifest ({named_manifest}).csv").read_bytes() == b"a file of that name\n"
    assert not (out / "gated.txt").exists()
    # the one line on what needs an action first (not an error)
    assert "1 file in your download cart needs an action on synapse.org first (access requirement" in done.stderr
    assert "download cart: 5 items removed" in done.stderr
    # manifest.csv: the cart manifest's columns + path + error, a row per item
    columns, rows = read_manifest(out / "manifest.csv")
    assert columns == MANIFEST_COLUMNS + ["path", "error"]
    assert sorted((row["ID"], row["versionNumber"]) for row in rows) == sorted(
        [(a, "1"), (b, "1"), (b, "2"), (other_a, "1"), (named_manifest, "1")]
    )
    for row in rows:
        assert row["error"] == ""
        assert Path(row["path"]).read_bytes()  # where the file is
        assert hashlib.md5(Path(row["path"]).read_bytes()).hexdigest() == row["dataFileMD5Hex"]
    # the cart keeps only what could not be downloaded (it needs an action)
    assert cart_keys(emu) == []
    with Platform(emu.endpoint, token=emu.token) as platform:
        assert [action.count for action in platform.download_list_actions()] == [1]
    # a second run: the cart has no file to download, a clear line, exit 0
    again = synclient(emu, tmp_path, "get", "--download-list", "--path", str(out))
    assert again.returncode == 0, again.stderr
    assert "your download cart has no file to download" in again.stdout


def test_keep_cart_and_dry_run_leave_the_cart(emu, tmp_path):
    at = emu.at
    add(emu, (at("a.txt"), None), (at("b.txt"), 1))
    before = cart_keys(emu)
    out = tmp_path / "out"
    dry = synclient(emu, tmp_path, "get", "--download-list", "--dry-run", "--path", str(out))
    assert dry.returncode == 0, dry.stderr
    assert "nothing was removed from your download cart" in dry.stderr
    assert not out.exists()
    assert cart_keys(emu) == before
    kept = synclient(emu, tmp_path, "--json", "get", "--download-list", "--keep-cart", "--path", str(out))
    assert kept.returncode == 0, kept.stderr
    assert "kept as it is (--keep-cart)" in kept.stderr
    cart = json.loads(kept.stdout)["report"]["cart"]
    assert (cart["files"], cart["removed"], cart["kept"], cart["manifest"]) == (2, 0, 2, str(out / "manifest.csv"))
    assert (out / "a.txt").read_bytes() == b"a at the top\n"
    assert cart_keys(emu) == before


def test_a_synced_file_named_manifest_csv_is_never_written_over(emu, tmp_path):
    """A tree sync put the project's file entity ``manifest.csv`` at the target's top: the cart's run into the same
    target leaves it as it is (it once replaced it with the cart's manifest, which the next tree sync then took for
    a local change), and still empties the cart."""
    out = tmp_path / "out"
    with Platform(emu.endpoint, token=emu.token) as platform:
        sync_from_platform(emu.project, out, platform=platform, progress=False, on_error="continue")
    assert (out / "manifest.csv").read_bytes() == b"a file of that name\n"
    add(emu, (emu.at("a.txt"), None))
    with Platform(emu.endpoint, token=emu.token) as platform:
        results = download_list(out, platform=platform, progress=False)
    assert (out / "manifest.csv").read_bytes() == b"a file of that name\n"
    assert results.report.cart is not None and results.report.cart.manifest is None
    assert results.report.cart.removed == 1 and cart_keys(emu) == []


@pytest.mark.parametrize(
    "args, says",
    [
        (["get", "syn1", "--download-list"], "give no ids"),
        (["get", "--download-list", "--from-file", "x.csv"], "give no ids, --from-file"),
        (["get", "--download-list", "--query", "SELECT id FROM syn1"], "--query"),
        (["get", "--keep-cart", "syn1"], "--keep-cart goes with --download-list"),
    ],
)
def test_usage_errors_are_one_line_exit_2(emu, tmp_path, args, says):
    done = synclient(emu, tmp_path, *args)
    assert done.returncode == 2
    assert says in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_the_call_bound(tmp_path):
    """N available files cost the query pages (a job each: start + polls), the action-required page, the count of
    available files (more than one page: the later pages are read at once), the manifest job and its URL,
    ceil(N/100) URL batches and ceil(N/1000) removes: no bundle or header call per file."""
    n = 120
    spec = {
        "projects": [
            {
                "name": "many",
                "children": [{"type": "file", "name": f"f{i:03}.txt", "content": f"{i}\n"} for i in range(n)],
            }
        ]
    }
    with Emulator(data_dir=str(tmp_path / "emu"), query_pending_polls=1) as emu:
        project = emu.seed_spec(spec)["many"]
        ids = [emu.resolve(project, f"f{i:03}.txt") for i in range(n)]
        add(emu, *[(entity_id, None) for entity_id in ids])
        emu.reset_stats()
        with Platform(emu.endpoint, token=emu.token) as platform:
            results = download_list(tmp_path / "out", platform=platform, progress=False)
        assert len(results) == n and not results.failures
        routes = emu.stats()["api_by_route"]
        pages = math.ceil(n / 50)
        polls = 2  # per job: one 202 (query_pending_polls=1), then its answer
        expected = {
            # + the action-required page + the count that tells the later pages' tokens (read 4 at a time)
            "POST /repo/v1/download/list/query/async/start": pages + 2,
            "GET /repo/v1/download/list/query/async/get/{id}": (pages + 2) * polls,
            "POST /repo/v1/download/list/manifest/async/start": 1,
            "GET /repo/v1/download/list/manifest/async/get/{id}": polls,
            "POST /file/v1/fileHandle/batch": 1 + math.ceil(n / 100),  # the manifest's URL + the files'
            "POST /repo/v1/download/list/remove": math.ceil(n / 1000),
        }
        assert {route: routes.get(route, 0) for route in expected} == expected, routes
        assert sum(routes.values()) == sum(expected.values()), routes  # nothing else: no bundle, no header
        assert results.report.rest_calls == sum(expected.values())
        assert cart_keys(emu) == []


def test_keep_paths_takes_each_files_parent_from_the_cart_manifest(tmp_path):
    """``--keep-paths``: each file's parent is the cart manifest's ``parentId`` (no bundle or header call per
    file): the only calls added to the flat run's are one ``entity/{id}/path`` per distinct parent folder."""
    spec = {
        "projects": [
            {
                "name": "p",
                "children": [
                    {
                        "type": "folder",
                        "name": "d1",
                        "children": [{"type": "file", "name": f"a{i}.txt", "content": f"{i}\n"} for i in range(30)],
                    },
                    {
                        "type": "folder",
                        "name": "d2",
                        "children": [
                            {
                                "type": "folder",
                                "name": "e",
                                "children": [
                                    {"type": "file", "name": f"b{i}.txt", "content": f"b{i}\n"} for i in range(30)
                                ],
                            }
                        ],
                    },
                ],
            }
        ]
    }
    with Emulator(data_dir=str(tmp_path / "emu"), query_pending_polls=0) as emu:
        project = emu.seed_spec(spec)["p"]
        paths = [f"d1/a{i}.txt" for i in range(30)] + [f"d2/e/b{i}.txt" for i in range(30)]
        add(emu, *[(emu.resolve(project, path), None) for path in paths])
        emu.reset_stats()
        out = tmp_path / "out"
        with Platform(emu.endpoint, token=emu.token) as platform:
            results = download_list(out, platform=platform, progress=False, keep_paths=True)
        assert not results.failures and len(results) == 60
        for path in paths:
            assert (out / "p" / path).is_file()
        routes = emu.stats()["api_by_route"]
        assert routes.get("GET /repo/v1/entity/{id}/path") == 2, routes  # d1 and d2/e: one each
        per_file = [r for r in routes if "bundle" in r or "/entity/header" in r or r == "GET /repo/v1/entity/{id}"]
        assert per_file == [], routes
        assert cart_keys(emu) == []


def test_manifest_suppress_writes_no_cart_manifest(emu, tmp_path):
    """``--manifest suppress`` (``manifest="suppress"``) is honoured: the files, no manifest.csv (it was written
    anyway); the cart is emptied as ever."""
    add(emu, (emu.at("a.txt"), None))
    out = tmp_path / "out"
    with Platform(emu.endpoint, token=emu.token) as platform:
        results = download_list(out, platform=platform, progress=False, manifest="suppress")
    assert (out / "a.txt").read_bytes() == b"a at the top\n"
    assert not (out / "manifest.csv").exists()
    assert results.report.cart is not None and results.report.cart.manifest is None
    assert cart_keys(emu) == []


def test_synapseclient_downloads_what_a_synclient_run_left_in_the_cart(emu, tmp_path):
    """One cart, two clients: synclient takes what its filter selects and removes only that; synapseclient 4.14's
    ``get-download-list`` then downloads the rest, byte-exact, and empties the cart."""
    synapseclient = pytest.importorskip("synapseclient")
    from synapseclient.__main__ import build_parser, get_download_list

    a, b = emu.at("a.txt"), emu.at("b.txt")
    add(emu, (a, None), (b, 1))
    with Platform(emu.endpoint, token=emu.token) as platform:
        results = download_list(tmp_path / "ours", platform=platform, progress=False, include=["a*"])
    assert [r.entity_id for r in results] == [a] and results.report.cart.removed == 1
    assert cart_keys(emu) == [(b, 1)]
    config = tmp_path / "synapseConfig"
    config.write_text("")
    syn = synapseclient.Synapse(
        configPath=str(config),
        repoEndpoint=emu.endpoint + "/repo/v1",
        authEndpoint=emu.endpoint + "/auth/v1",
        fileHandleEndpoint=emu.endpoint + "/file/v1",
        portalEndpoint=emu.endpoint + "/",
        skip_checks=True,
        cache_root_dir=str(tmp_path / "cache"),
        silent=True,
    )
    syn.login(authToken=emu.token)
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    get_download_list(build_parser().parse_args(["get-download-list", "--downloadLocation", str(theirs)]), syn)
    assert (theirs / "b.txt").read_bytes() == b"b one\n"  # the version the cart pinned
    assert not (theirs / "a.txt").exists()
    assert cart_keys(emu) == []


def test_items_added_while_the_run_goes_stay_in_the_cart(emu, tmp_path):
    """The cart changes between its reads and the removal: the user adds another version of a file, and the file
    version a versionless item meant at a version. Only the items read are removed, each by its own key."""
    a, b = emu.at("a.txt"), emu.at("b.txt")
    add(emu, (a, None), (b, 1))

    class AddMeanwhile(SyncObserver):
        def __init__(self) -> None:
            self.added = False

        def file_planned(self, file: PlannedFile) -> None:
            if not self.added:
                self.added = True
                add(emu, (b, 2), (a, 1))

    with Platform(emu.endpoint, token=emu.token) as platform:
        results = download_list(tmp_path / "out", platform=platform, progress=False, observer=AddMeanwhile())
    assert results.report.cart is not None and results.report.cart.removed == 2
    assert cart_keys(emu) == [(a, 1), (b, 2)]


class _DenyWhenPlanned(SyncObserver):
    """Revokes the user's access to one file just before its fetch: its URL is refused, the file fails."""

    def __init__(self, emu: Emulator, entity_id: str) -> None:
        self.emu, self.entity_id = emu, entity_id

    def file_planned(self, file: PlannedFile) -> None:
        if file.entity_id == self.entity_id:
            self.emu.set_deny(self.entity_id, "download")


def test_faults_failed_files_stay_in_the_cart(emu, tmp_path):
    """5xx on the API and cut bodies on storage are retried; a file that fails stays in the cart, its manifest
    row says why, and the run raises (the CLI: exit 1)."""
    at = emu.at
    a, b, other_a = at("a.txt"), at("b.txt"), at("d/a.txt")
    add(emu, (a, None), (b, 1), (b, None), (other_a, None))
    emu.set_knobs(fault_api_5xx_rate=0.2, fault_data_cut_rate=0.3, fault_seed=7)
    out = tmp_path / "out"
    with Platform(emu.endpoint, token=emu.token) as platform:
        with pytest.raises(SyncError) as raised:
            download_list(out, platform=platform, progress=False, observer=_DenyWhenPlanned(emu, other_a))
    stats = emu.stats()
    assert stats["api_5xx_injected"] > 0 and stats["data_cuts_injected"] > 0  # (the faults were there)
    assert [r.entity_id for r in raised.value.failures] == [other_a]
    assert len(raised.value.results) == 4
    assert (out / "a.txt").read_bytes() == b"a at the top\n"
    assert (out / "b.txt").read_bytes() == b"b two, current\n"
    _, rows = read_manifest(out / "manifest.csv")
    errors = {row["ID"]: row["error"] for row in rows if row["error"]}
    assert list(errors) == [other_a] and errors[other_a]
    emu.set_knobs(fault_api_5xx_rate=0.0, fault_data_cut_rate=0.0)
    emu.set_deny(other_a, False)
    assert cart_keys(emu) == [(other_a, None)]  # exactly the failed file
    # the next run: only that file moves (and the cart's manifest), the cart ends empty
    emu.reset_stats()
    with Platform(emu.endpoint, token=emu.token) as platform:
        again = download_list(out, platform=platform, progress=False)
    assert [(r.entity_id, r.status) for r in again] == [(other_a, SyncStatus.DOWNLOADED)]
    served_manifest = (out / "manifest.csv").stat().st_size  # (more than the cart's own: + path and error)
    assert emu.stats()["data_bytes"] <= len(b"other a\n") + served_manifest
    assert (out / f"a ({other_a}).txt").read_bytes() == b"other a\n"
    assert cart_keys(emu) == []


def test_a_killed_run_resumes_and_empties_the_cart(tmp_path):
    """Ctrl-C after some files: nothing is removed from the cart; the next run downloads only what was not
    complete (the emulator's byte counter), removes every item, and every file is byte-exact."""
    n, size = 12, 40_000
    contents = {f"f{i:02}.bin": hashlib.sha256(str(i).encode()).digest() * (size // 32) for i in range(n)}
    spec = {
        "projects": [
            {
                "name": "kill",
                "children": [{"type": "file", "name": name, "content": data.hex()} for name, data in contents.items()],
            }
        ]
    }
    expected = {name: data.hex().encode() for name, data in contents.items()}
    with Emulator(data_dir=str(tmp_path / "emu"), query_pending_polls=0) as emu:
        project = emu.seed_spec(spec)["kill"]
        add(emu, *[(emu.resolve(project, name), None) for name in contents])
        before = cart_keys(emu)
        finished: List[FileResult] = []

        class InterruptAfter(SyncObserver):
            def file_finished(self, result: FileResult) -> None:
                finished.append(result)
                if len(finished) == 4:
                    os.kill(os.getpid(), signal.SIGINT)

        assert threading.current_thread() is threading.main_thread()
        handler = signal.signal(signal.SIGINT, signal.default_int_handler)
        out = tmp_path / "out"
        try:
            with Platform(emu.endpoint, token=emu.token) as platform, pytest.raises(KeyboardInterrupt):
                download_list(
                    out,
                    platform=platform,
                    progress=False,
                    observer=InterruptAfter(),
                    config=TransferConfig(max_workers=1),
                )
        finally:
            signal.signal(signal.SIGINT, handler)
        assert cart_keys(emu) == before  # a killed run removes nothing
        complete = {r.path.name for r in finished if r.status is SyncStatus.DOWNLOADED and r.path is not None}
        assert len(complete) >= 4
        emu.reset_stats()
        with Platform(emu.endpoint, token=emu.token) as platform:
            results = download_list(out, platform=platform, progress=False)
        served = emu.stats()["data_bytes"]
        manifest_bytes = (out / "manifest.csv").stat().st_size  # (the cart's manifest came from storage too)
        missing = sum(len(expected[name]) for name in expected if name not in complete)
        assert served <= missing + manifest_bytes * 2  # nothing complete was downloaded again
        assert {r.path.name for r in results if r.status is SyncStatus.SKIPPED} == complete
        assert cart_keys(emu) == []
        for name, data in expected.items():
            assert (out / name).read_bytes() == data


def test_a_cart_of_over_1000_items_leaves_in_remove_calls_of_1000(tmp_path):
    """1,001 items: two remove calls (1,000 + 1), the cart empty, every file there."""
    n = 1001
    spec = {
        "projects": [
            {"name": "big", "children": [{"type": "file", "name": f"f{i:04}", "content": "x"} for i in range(n)]}
        ]
    }
    with Emulator(data_dir=str(tmp_path / "emu"), query_pending_polls=0) as emu:
        project = emu.seed_spec(spec)["big"]
        add(emu, *[(emu.resolve(project, f"f{i:04}"), None) for i in range(n)])
        emu.reset_stats()
        with Platform(emu.endpoint, token=emu.token) as platform:
            results = download_list(tmp_path / "out", platform=platform, progress=False)
        assert len(results) == n and not results.failures
        routes = emu.stats()["api_by_route"]
        assert routes["POST /repo/v1/download/list/remove"] == 2
        assert routes["POST /file/v1/fileHandle/batch"] == 1 + math.ceil(n / 100)
        assert not any("bundle" in route or "/entity/header" in route for route in routes)
        assert results.report.cart is not None and results.report.cart.removed == n
        assert cart_keys(emu) == []
        assert len(list((tmp_path / "out").glob("f*"))) == n
