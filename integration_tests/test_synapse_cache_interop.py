"""One download cache for synclient and the official synapseclient 4.14, against the emulator: what one of them
downloaded the other copies without a data request (the emulator counts every storage GET)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from synctrees import local_tree

from synclient import Platform, SyncStatus, TransferConfig, sync_from_platform
from synclient.emulator import seeded_bytes
from synclient.errors import CacheLockTimeoutError
from synclient.results import FROM_SYNAPSE_CACHE
from synclient.synapse_cache import CACHE_MAP, SynapseCache

pytest.importorskip("synapseclient")
pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),  # synapseclient 4.14's own, about syn.get
    pytest.mark.over_tls,
]  # each test also runs against an emulator serving HTTPS

REPO_ROOT = Path(__file__).resolve().parent.parent
MiB = 1024 * 1024


def _spec():
    """15 files below the multipart threshold (one data request each), in three folders, one of 3 MiB. The top
    files' handles have their own fileName (what synapseclient names them by)."""
    top = [
        {
            "type": "file",
            "name": f"top{i}.txt",
            "file_name": f"Top file {i}.txt",
            "content": f"top file {i}\n" * (i + 1),
        }
        for i in range(3)
    ]
    a = [{"type": "file", "name": f"a{i}.dat", "size": 2000 + 97 * i, "seed": 10 + i} for i in range(6)]
    c = [{"type": "file", "name": f"c{i}.csv", "content": f"x,y\n{i},{i * i}\n"} for i in range(5)]
    big = {"type": "file", "name": "big.bin", "size": 3 * MiB + 17, "seed": 99}
    return {
        "projects": [
            {
                "name": "cached",
                "children": top
                + [
                    {"type": "folder", "name": "a", "children": a},
                    {
                        "type": "folder",
                        "name": "b",
                        "children": [{"type": "folder", "name": "c", "children": c + [big]}],
                    },
                ],
            }
        ]
    }


def _expected(by_handle: bool = False):
    """Relative path -> MD5 of every file, each named by its entity (synclient) or its handle (synapseclient)."""
    expected = {}

    def walk(children, prefix):
        for child in children:
            if child["type"] == "folder":
                walk(child["children"], f"{prefix}{child['name']}/")
            else:
                data = child["content"].encode() if "content" in child else seeded_bytes(child["size"], child["seed"])
                name = child.get("file_name", child["name"]) if by_handle else child["name"]
                expected[prefix + name] = hashlib.md5(data).hexdigest()

    walk(_spec()["projects"][0]["children"], "")
    return expected


FILES = len(_expected())


@pytest.fixture
def project(emulator):
    return emulator.seed_spec(_spec())["cached"]


@pytest.fixture
def cache_root(tmp_path):
    """A synapseclient cache that exists, named by the test's own config file (``[cache] location``)."""
    root = tmp_path / "synapse-cache"
    root.mkdir()
    Path(os.environ["SYNAPSE_CONFIG_FILE"]).write_text(f"[cache]\nlocation = {root}\n")
    return root


def _maps(root: Path):
    """Every cache map under ``root``: {handle id: parsed map}."""
    return {
        folder.name: json.loads((folder / CACHE_MAP).read_text())
        for folder in root.glob("*/*")
        if (folder / CACHE_MAP).is_file()
    }


def _snapshot(root: Path):
    return {str(path): (path.stat().st_mtime_ns, path.read_bytes()) for path in root.rglob("*") if path.is_file()}


def _sync(emulator, project, out, **options):
    """``sync_from_platform`` of ``project`` into ``out`` with a Platform of its own, closed afterwards."""
    with Platform(endpoint=emulator.endpoint, token=emulator.token) as platform:
        return sync_from_platform(project, out, platform=platform, **options)


def test_synapseclient_gets_what_synclient_synced_without_a_data_request(
    emulator, project, cache_root, tmp_path, synapse_login
):
    out = tmp_path / "out"
    results = _sync(emulator, project, out, progress=False)
    assert len(results) == FILES and {r.action for r in results} == {"download"}
    assert results.report.from_cache == 0 and emulator.stats()["data_requests"] == FILES
    maps = _maps(cache_root)
    assert sorted(path for recorded in maps.values() for path in recorded) == sorted(str(r.path) for r in results)
    before = local_tree(out)

    emulator.reset_stats()
    syn = synapse_login(emulator, cache_root=cache_root)
    for result in results:
        entity = syn.get(result.entity_id, downloadLocation=str(result.path.parent))
        assert entity.path == str(result.path)
    assert emulator.stats()["data_requests"] == 0
    assert local_tree(out) == before == _expected()  # no second copy ("name(1).txt") beside any file


def test_synclient_copies_what_synapseclient_got_and_downloads_the_rest(
    emulator, project, cache_root, tmp_path, synapse_login
):
    syn = synapse_login(emulator, cache_root=cache_root)
    theirs = tmp_path / "theirs"
    got = {}
    for entity_id, _name in _some_files(syn, project):
        entity = syn.get(entity_id, downloadLocation=str(theirs))
        got[entity_id] = Path(entity.path)
    assert len(got) == 4

    emulator.reset_stats()
    out = tmp_path / "out"
    results = _sync(emulator, project, out, progress=False)
    cached = {r.entity_id for r in results if r.action == FROM_SYNAPSE_CACHE}
    assert cached == set(got)
    assert all(r.status is SyncStatus.DOWNLOADED for r in results)
    stats = emulator.stats()
    assert stats["data_requests"] == FILES - len(got)
    report = results.report
    assert report.downloaded == FILES and report.from_cache == len(got)
    assert report.bytes_downloaded == sum(r.size for r in results if r.entity_id not in cached)
    assert f"{FILES} downloaded ({len(got)} from the synapseclient cache)" in report.summary()
    assert stats["api_by_route"]["POST /file/v1/fileHandle/batch"] == 1  # the URL batch, as without the cache
    assert results.report.rest_calls == stats["api_requests"]
    assert local_tree(out) == _expected()
    for entity_id, path in got.items():  # a copy, not the cached file itself
        mine = next(r.path for r in results if r.entity_id == entity_id)
        assert os.stat(mine).st_ino != os.stat(path).st_ino
    # indexed like a download: the next run skips every file, and synapseclient knows each of them now
    emulator.reset_stats()
    again = _sync(emulator, project, out, progress=False)
    assert {r.status for r in again} == {SyncStatus.SKIPPED} and emulator.stats()["data_requests"] == 0
    recorded = {path for entries in _maps(cache_root).values() for path in entries}
    assert recorded == {str(r.path) for r in results} | {str(path) for path in got.values()}
    # no REST call added: the same calls as a sync that does not look at the cache
    emulator.reset_stats()
    _sync(emulator, project, tmp_path / "plain", progress=False, synapse_cache=False)
    assert emulator.stats()["api_by_route"] == stats["api_by_route"]


def test_the_drop_in_names_files_as_synapseutils_does_with_or_without_cached_copies(
    emulator, project, tmp_path, synapse_login
):
    """synapseclient names a download by its handle's fileName, or by the cached copy it copies: the drop-in lands
    path for path where synapseutils does, with empty caches and after ``synclient get`` (entity names) recorded
    its copies. (Each cache is named here: no config file names one.)"""
    synapseutils = pytest.importorskip("synapseutils")
    from synclient import syncFromSynapse

    caches = {name: tmp_path / name for name in ("their-cache", "our-cache", "shared-cache")}
    for root in caches.values():
        root.mkdir()
    synapseutils.syncFromSynapse(
        synapse_login(emulator, cache_root=caches["their-cache"]), project, path=str(tmp_path / "theirs")
    )
    syncFromSynapse(synapse_login(emulator, cache_root=caches["our-cache"]), project, path=str(tmp_path / "ours"))
    assert local_tree(tmp_path / "ours") == local_tree(tmp_path / "theirs") == _expected(by_handle=True)
    assert _expected(by_handle=True) != _expected()
    # synclient's own rule (entity names), its copies recorded in the shared cache
    _sync(emulator, project, tmp_path / "get", progress=False, synapse_cache=caches["shared-cache"])
    assert local_tree(tmp_path / "get") == _expected()
    # the cache's copies are named by their entities: synapseclient copies each under that name, and so does the
    # drop-in, neither downloading anything
    emulator.reset_stats()
    syn = synapse_login(emulator, cache_root=caches["shared-cache"])
    synapseutils.syncFromSynapse(syn, project, path=str(tmp_path / "theirs2"))
    syncFromSynapse(syn, project, path=str(tmp_path / "ours2"))
    assert local_tree(tmp_path / "ours2") == local_tree(tmp_path / "theirs2") == _expected()
    assert emulator.stats()["data_requests"] == 0


def test_without_the_cache_every_file_is_downloaded_and_nothing_recorded(emulator, project, cache_root, tmp_path):
    _sync(emulator, project, tmp_path / "first", progress=False)
    snapshot = _snapshot(cache_root)
    emulator.reset_stats()
    results = _sync(emulator, project, tmp_path / "api", progress=False, synapse_cache=False)
    assert {r.action for r in results} == {"download"} and emulator.stats()["data_requests"] == FILES
    emulator.reset_stats()
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    cli = subprocess.run(
        [
            sys.executable,
            "-m",
            "synclient",
            "--endpoint",
            emulator.endpoint,
            "--token",
            emulator.token,
            "--json",
            "get",
            "-r",
            project,
            "--path",
            str(tmp_path / "cli"),
            "--no-progress",
            "--no-synapse-cache",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["report"]["from_cache"] == 0 and emulator.stats()["data_requests"] == FILES
    assert _snapshot(cache_root) == snapshot


def test_the_cli_uses_the_cache_by_default(emulator, project, cache_root, tmp_path):
    _sync(emulator, project, tmp_path / "first", progress=False)
    emulator.reset_stats()
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    cli = subprocess.run(
        [
            sys.executable,
            "-m",
            "synclient",
            "--endpoint",
            emulator.endpoint,
            "--token",
            emulator.token,
            "--json",
            "get",
            "-r",
            project,
            "--path",
            str(tmp_path / "cli"),
            "--no-progress",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert cli.returncode == 0, cli.stderr
    document = json.loads(cli.stdout)
    assert document["report"]["from_cache"] == FILES and emulator.stats()["data_requests"] == 0
    assert "POST /file/v1/fileHandle/batch" not in emulator.stats()["api_by_route"]  # no URL wanted at all
    assert {f["action"] for f in document["files"]} == {FROM_SYNAPSE_CACHE}
    assert local_tree(tmp_path / "cli") == _expected()


def test_a_cached_copy_with_other_bytes_falls_back_to_a_download(
    emulator, project, cache_root, tmp_path, synapse_login, caplog
):
    """Changed in place, same size, its mtime put back: only the bytes tell, and they are hashed while copied."""
    syn = synapse_login(emulator, cache_root=cache_root)
    entity_id, _name = _some_files(syn, project)[0]
    path = Path(syn.get(entity_id, downloadLocation=str(tmp_path / "theirs")).path)
    info = path.stat()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    handle = syn.get(entity_id, downloadFile=False)._file_handle
    assert SynapseCache(cache_root).lookup(handle["id"], md5=handle["contentMd5"], size=info.st_size) == path
    emulator.reset_stats()
    caplog.set_level("INFO", logger="synclient")
    out = tmp_path / "out"
    results = _sync(emulator, project, out, progress=False)
    assert {r.action for r in results} == {"download"} and results.report.from_cache == 0
    assert emulator.stats()["data_requests"] == FILES
    assert local_tree(out) == _expected()
    assert f"{entity_id}: the copy in synapseclient's cache ({path}) is not usable (MD5 mismatch" in caplog.text


def test_hard_links_when_asked(emulator, project, cache_root, tmp_path):
    first = _sync(emulator, project, tmp_path / "first", progress=False)
    emulator.reset_stats()
    linked = _sync(emulator, project, tmp_path / "linked", progress=False, synapse_cache_link=True)
    assert emulator.stats()["data_requests"] == 0
    by_entity = {r.entity_id: r.path for r in first}
    assert all(os.stat(r.path).st_ino == os.stat(by_entity[r.entity_id]).st_ino for r in linked)
    assert local_tree(tmp_path / "linked") == _expected()


def test_a_dry_run_neither_reads_nor_writes_the_cache(emulator, project, cache_root, tmp_path):
    _sync(emulator, project, tmp_path / "first", progress=False)
    snapshot = _snapshot(cache_root)
    emulator.reset_stats()
    plan = _sync(emulator, project, tmp_path / "planned", dry_run=True)
    assert len(plan.entries) == FILES
    assert not (tmp_path / "planned").exists() and _snapshot(cache_root) == snapshot
    assert emulator.stats()["data_requests"] == 0


def test_no_cache_folder_means_no_cache_and_none_made(emulator, project, tmp_path):
    root = tmp_path / "not-there"
    Path(os.environ["SYNAPSE_CONFIG_FILE"]).write_text(f"[cache]\nlocation = {root}\n")
    results = _sync(emulator, project, tmp_path / "out", progress=False)
    assert {r.action for r in results} == {"download"}
    assert not root.exists() and not (Path(os.environ["HOME"]) / ".synapseCache").exists()


def _some_files(syn, project):
    """(entity id, name) of four files of the project, two from the top folder and two from the deepest one."""

    def children(parent):
        return {child["name"]: child["id"] for child in syn.getChildren(parent)}

    top = children(project)
    deep = children(children(top["b"])["c"])
    return [
        (top["top0.txt"], "top0.txt"),
        (top["top2.txt"], "top2.txt"),
        (deep["big.bin"], "big.bin"),
        (deep["c0.csv"], "c0.csv"),
    ]


def test_a_cache_that_cannot_be_written_fails_no_file_and_is_said_once(
    emulator, project, cache_root, tmp_path, monkeypatch, caplog
):
    calls = []

    def refuse(self, file_handle_id, path, md5):
        calls.append(file_handle_id)
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(SynapseCache, "record", refuse)
    caplog.set_level("WARNING", logger="synclient.sync")
    results = _sync(emulator, project, tmp_path / "out", config=TransferConfig(max_workers=4), progress=False)
    assert all(r.status is SyncStatus.DOWNLOADED for r in results) and len(calls) == FILES
    assert caplog.text.count("cannot record") == 1 and "Permission denied" in caplog.text


def test_a_cache_lock_never_released_is_waited_for_once_per_run(emulator, project, cache_root, tmp_path, monkeypatch):
    calls = []

    def locked(self, file_handle_id, path, md5):
        calls.append(file_handle_id)
        raise CacheLockTimeoutError("the synapseclient cache lock x was not released within 70 s")

    monkeypatch.setattr(SynapseCache, "record", locked)
    results = _sync(emulator, project, tmp_path / "out", config=TransferConfig(max_workers=1), progress=False)
    assert all(r.status is SyncStatus.DOWNLOADED for r in results) and len(calls) == 1
