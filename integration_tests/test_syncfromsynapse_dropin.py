"""``from synclient import syncFromSynapse`` against synapseutils 4.14's own, on the same emulated project: the same
files with the same bytes, the same returned objects (ids, versions, paths, annotations, entity fields) and the
same manifests."""

from __future__ import annotations

import csv
import hashlib
import os
from pathlib import Path

import pytest

from synclient import syncFromSynapse

pytestmark = pytest.mark.over_tls  # each test also runs against an emulator serving HTTPS

synapseutils = pytest.importorskip("synapseutils")

SPEC = {
    "projects": [
        {
            "name": "p",
            "children": [
                {
                    "type": "folder",
                    "name": "d",
                    "children": [
                        {
                            "type": "folder",
                            "name": "e",
                            "children": [
                                {
                                    "type": "file",
                                    "name": "deep.csv",
                                    "content": "1,2\n",
                                    "annotations": {"n": [3], "x": [1.5]},
                                }
                            ],
                        },
                        {
                            "type": "file",
                            "name": "a.txt",
                            "content": "A",
                            "annotations": {"tissue": ["brain"], "ok": [True]},
                        },
                    ],
                },
                {"type": "file", "name": "b.txt", "content": "B", "annotations": {"tags": ["x", "y,z"]}},
                {"type": "file", "name": "big.bin", "size": 3 * 1024 * 1024 + 5, "seed": 7},
                {"type": "file", "name": "plain.bin", "content": "P"},
                # an entity name that is not its handle's fileName (renamed, or stored with name=):
                # synapseclient writes the handle's, unicode included (Synapse refuses unicode only in
                # entity names)
                {"type": "file", "name": "renamed", "file_name": "raw data.csv", "content": "R"},
                {
                    "type": "file",
                    "name": "v.txt",
                    "versions": [
                        {"content": "v1", "file_name": "old.txt"},
                        {"content": "v2", "file_name": "r\u00e9sum\u00e9.txt"},
                    ],
                },
            ],
        }
    ]
}

FIELDS = (
    "id",
    "name",
    "etag",
    "createdOn",
    "modifiedOn",
    "createdBy",
    "modifiedBy",
    "parentId",
    "versionNumber",
    "versionLabel",
    "dataFileHandleId",
)


MANIFESTS = ("SYNAPSE_METADATA_MANIFEST.tsv", "manifest.csv")  # compared on their own (they hold the root's path)


def tree(root: Path):
    return {
        p.relative_to(root).as_posix(): hashlib.md5(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file() and ".synclient" not in p.relative_to(root).parts and p.name not in MANIFESTS
    }


def described(files, root: Path):
    """Each File as plain data, its path relative to ``root``, in a stable order (a link's file appears twice)."""
    return sorted(
        (
            (
                os.path.relpath(f.path, root),
                {name: f.get(name) for name in FIELDS},
                dict(f.annotations),
                f.get("isLatestVersion"),
                {k: f._file_handle.get(k) for k in ("id", "contentMd5", "contentSize", "fileName")},
            )
            for f in files
        ),
        key=repr,
    )


def manifest_rows(root: Path):
    """Each manifest's rows as dicts (its annotation columns come in set order in synapseclient's)."""
    rows = {}
    for manifest in root.rglob("SYNAPSE_METADATA_MANIFEST.tsv"):
        with open(manifest, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
            listed = [{key: value.replace(str(root), "<root>") for key, value in row.items()} for row in reader]
        rows[manifest.relative_to(root).as_posix()] = sorted(listed, key=lambda row: row["path"])
    return rows


@pytest.mark.parametrize("manifest", ["all", "root", "suppress"])
def test_same_tree_objects_and_manifests_as_synapseutils(emulator, synapse_login, tmp_path, manifest):
    project = emulator.seed_spec(SPEC)["p"]
    syn = synapse_login(emulator)
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    their_files = synapseutils.syncFromSynapse(syn, project, path=str(theirs), manifest=manifest)
    our_files = syncFromSynapse(syn, project, path=str(ours), manifest=manifest)
    assert tree(ours) == tree(theirs) and len(tree(ours)) >= 5
    assert described(our_files, ours) == described(their_files, theirs)
    assert all(type(f) is type(their_files[0]) for f in our_files)
    assert manifest_rows(ours) == manifest_rows(theirs)
    if manifest == "all":  # (synapseutils writes manifest.csv into every folder whatever the mode: see the docs)
        assert (
            {p.relative_to(ours) for p in ours.rglob("manifest.csv")}
            == {p.relative_to(theirs) for p in theirs.rglob("manifest.csv")}
            != set()
        )


def test_files_land_under_their_handles_file_names_as_synapseutils_puts_them(emulator, synapse_login, tmp_path):
    project = emulator.seed_spec(SPEC)["p"]
    syn = synapse_login(emulator)
    ours = syncFromSynapse(syn, project, path=str(tmp_path / "ours"))
    theirs = synapseutils.syncFromSynapse(syn, project, path=str(tmp_path / "theirs"))
    by_name = {f.name: os.path.relpath(f.path, tmp_path / "ours") for f in ours}
    assert by_name["renamed"] == "raw data.csv" and by_name["v.txt"] == "r\u00e9sum\u00e9.txt"
    assert by_name == {f.name: os.path.relpath(f.path, tmp_path / "theirs") for f in theirs}


def test_two_handles_of_one_file_name_in_a_folder_keep_both_files(emulator, synapse_login, tmp_path):
    """synapseutils writes both to one path (the later replaces the earlier: a file is lost); the drop-in keeps the
    name for the file of the smallest id and gives the other its id in the name."""
    project = emulator.seed_spec(
        {
            "projects": [
                {
                    "name": "p",
                    "children": [
                        {"type": "file", "name": "one", "file_name": "same.csv", "content": "1"},
                        {"type": "file", "name": "two", "file_name": "same.csv", "content": "2"},
                        {"type": "folder", "name": "x.txt"},
                        {"type": "file", "name": "three", "file_name": "x.txt", "content": "3"},
                    ],
                }
            ]
        }
    )["p"]
    syn = synapse_login(emulator)
    ours = syncFromSynapse(syn, project, path=str(tmp_path / "ours"))
    ids = {f.name: f.id for f in ours}
    assert tree(tmp_path / "ours") == {
        "same.csv": hashlib.md5(b"1").hexdigest(),
        f"same ({ids['two']}).csv": hashlib.md5(b"2").hexdigest(),
        f"x ({ids['three']}).txt": hashlib.md5(b"3").hexdigest(),
    }
    assert {f.name: os.path.relpath(f.path, tmp_path / "ours") for f in ours} == {
        "one": "same.csv",
        "two": f"same ({ids['two']}).csv",
        "three": f"x ({ids['three']}).txt",
    }
    # (synapseutils, with a cache of its own: one path for both, where the later download replaced the earlier)
    theirs_syn = synapse_login(emulator, cache_root=tmp_path / "their-cache")
    theirs = synapseutils.syncFromSynapse(theirs_syn, project, path=str(tmp_path / "theirs"))
    assert len({f.path for f in theirs if f.name in ("one", "two")}) == 1


def test_twins_on_different_listing_pages_are_named_apart_the_same_way_every_run(emulator, synapse_login, tmp_path):
    """A folder's names are settled once its every page is listed: the smallest id keeps a shared fileName."""
    children = [
        {"type": "file", "name": f"f{i:02d}", "content": str(i), **({"file_name": "twin.txt"} if i in (1, 59) else {})}
        for i in range(60)
    ]
    project = emulator.seed_spec({"projects": [{"name": "p", "children": children}]})["p"]
    syn = synapse_login(emulator)
    first = {
        f.name: os.path.relpath(f.path, tmp_path / "out")
        for f in syncFromSynapse(syn, project, path=str(tmp_path / "out"))
    }
    later = emulator.resolve(project, "f59")
    assert first["f01"] == "twin.txt" and first["f59"] == f"twin ({later}).txt" and first["f02"] == "f02"
    again = {
        f.name: os.path.relpath(f.path, tmp_path / "out")
        for f in syncFromSynapse(syn, project, path=str(tmp_path / "out"))
    }
    assert again == first and len(tree(tmp_path / "out")) == 60


def test_a_hostile_handle_file_name_goes_through_the_name_gate(emulator, synapse_login, tmp_path):
    """A handle's fileName is a server's name like an entity's: ``/``, ``..`` and NUL fail that file alone, and
    nothing is written outside the target."""
    from synclient.errors import SyncError

    project = emulator.seed_spec(
        {
            "projects": [
                {
                    "name": "p",
                    "children": [
                        {
                            "type": "folder",
                            "name": "d",
                            "children": [
                                {"type": "file", "name": "up", "file_name": "../../escaped.txt", "content": "x"},
                                {"type": "file", "name": "dotdot", "file_name": "..", "content": "x"},
                                {"type": "file", "name": "nul", "file_name": "a\x00b", "content": "x"},
                                {"type": "file", "name": "fine", "file_name": "fine.txt", "content": "ok"},
                            ],
                        }
                    ],
                }
            ]
        }
    )["p"]
    syn = synapse_login(emulator)
    target = tmp_path / "deep" / "target"
    with pytest.raises(SyncError) as raised:
        syncFromSynapse(syn, project, path=str(target))
    assert len(raised.value.failures) == 3
    assert tree(target) == {"d/fine.txt": hashlib.md5(b"ok").hexdigest()}
    assert not (tmp_path / "deep" / "escaped.txt").exists() and not (tmp_path / "escaped.txt").exists()


def test_resync_returns_the_same_objects_without_downloading(emulator, synapse_login, tmp_path):
    project = emulator.seed_spec(SPEC)["p"]
    syn = synapse_login(emulator)
    first = syncFromSynapse(syn, project, path=str(tmp_path / "out"))
    before = emulator.stats()["data_requests"]
    assert before >= 5
    again = syncFromSynapse(syn, project, path=str(tmp_path / "out"))
    assert described(again, tmp_path / "out") == described(first, tmp_path / "out")
    assert emulator.stats()["data_requests"] == before


def test_entity_objects_versions_collisions_and_allfiles(emulator, synapse_login, tmp_path):
    project = emulator.seed_spec(SPEC)["p"]
    syn = synapse_login(emulator)
    folder = next(c for c in syn.getChildren(project) if c["name"] == "d")
    entity = syn.get(folder["id"], downloadFile=False)
    for tool, root in ((synapseutils.syncFromSynapse, tmp_path / "theirs"), (syncFromSynapse, tmp_path / "ours")):
        root.mkdir()
        (root / "a.txt").write_text("mine")  # a local change: keep.both keeps it and puts the remote beside it
        collected = ["earlier"]
        files = tool(syn, entity, path=str(root), ifcollision="keep.both", allFiles=collected)
        assert collected[0] == "earlier" and collected[1:] == files[1:] and len(collected) == 3
    assert tree(tmp_path / "ours") == tree(tmp_path / "theirs")
    b = next(c for c in syn.getChildren(project) if c["name"] == "b.txt")
    file_entity = syn.get(b["id"], downloadFile=False)
    ours = syncFromSynapse(syn, file_entity, path=str(tmp_path / "one"))
    theirs = synapseutils.syncFromSynapse(syn, file_entity, path=str(tmp_path / "two"))
    assert described(ours, tmp_path / "one") == described(theirs, tmp_path / "two")
    assert tree(tmp_path / "one") == tree(tmp_path / "two") == {"b.txt": hashlib.md5(b"B").hexdigest()}
    by_id = syncFromSynapse(syn, b["id"], path=str(tmp_path / "three"))  # an id: no manifest for a file either
    assert described(by_id, tmp_path / "three") == described(theirs, tmp_path / "two")
    names = {p.name for p in (tmp_path / "three").iterdir()} - {".synclient"}
    assert names == {p.name for p in (tmp_path / "two").iterdir()}


def test_bad_arguments_fail_as_synapseutils_does(emulator, synapse_login, tmp_path):
    syn = synapse_login(emulator)
    project = emulator.seed_spec(SPEC)["p"]
    with pytest.raises(ValueError, match="Value of manifest option should be one of"):
        syncFromSynapse(syn, project, path=str(tmp_path), manifest="some")


def test_metadata_only_downloads_nothing_and_answers_as_synapseutils(emulator, synapse_login, tmp_path):
    project = emulator.seed_spec(SPEC)["p"]
    syn = synapse_login(emulator)
    theirs = synapseutils.syncFromSynapse(syn, project, path=str(tmp_path / "theirs"), downloadFile=False)
    ours = syncFromSynapse(syn, project, path=str(tmp_path / "ours"), downloadFile=False)
    assert emulator.stats()["data_requests"] == 0
    assert not (tmp_path / "ours").exists()  # nothing written (synapseutils writes manifests of folders)
    # each File's path is the folder it would go into, in both
    assert described(ours, tmp_path / "ours") == described(theirs, tmp_path / "theirs")
    assert sorted(os.path.relpath(f.path, tmp_path / "ours") for f in ours) == [".", ".", ".", ".", ".", "d", "d/e"]


def test_the_drop_in_shares_the_synapse_objects_cache_both_ways(emulator, synapse_login, tmp_path):
    project = emulator.seed_spec(SPEC)["p"]
    syn = synapse_login(emulator)  # its cache root is a folder of the test's own
    synapseutils.syncFromSynapse(syn, project, path=str(tmp_path / "theirs"))
    before = emulator.stats()["data_requests"]
    ours = syncFromSynapse(syn, project, path=str(tmp_path / "ours"))
    assert emulator.stats()["data_requests"] == before  # every file copied from synapseclient's cache
    assert tree(tmp_path / "ours") == tree(tmp_path / "theirs")
    assert {os.path.relpath(f.path, tmp_path / "ours") for f in ours} == set(tree(tmp_path / "ours"))
    # metadata only: both answer each file's path as the copy the cache has of it
    their_paths = sorted(
        f.path for f in synapseutils.syncFromSynapse(syn, project, path=str(tmp_path / "t2"), downloadFile=False)
    )
    our_paths = sorted(f.path for f in syncFromSynapse(syn, project, path=str(tmp_path / "o2"), downloadFile=False))
    assert our_paths == their_paths and all(os.path.isfile(p) for p in our_paths)
    # and what the drop-in installed, synapseclient finds: a syn.get into our folder downloads nothing
    for f in ours:
        assert syn.get(f.id, downloadLocation=os.path.dirname(f.path)).path == f.path
    assert emulator.stats()["data_requests"] == before


def test_without_a_path_files_go_into_synapseclients_cache(emulator, synapse_login, tmp_path):
    project = emulator.seed_spec(SPEC)["p"]
    theirs_syn, ours_syn = synapse_login(emulator), synapse_login(emulator, cache_root=tmp_path / "our-cache")
    their_root, our_root = Path(theirs_syn.cache.cache_root_dir), tmp_path / "our-cache"
    theirs = synapseutils.syncFromSynapse(theirs_syn, project)
    before = emulator.stats()["data_requests"]
    ours = syncFromSynapse(ours_syn, project)
    assert emulator.stats()["data_requests"] - before == len(ours) == len(theirs) == 7
    # the same files, in the same place of each cache's layout (<handle % 1000>/<handle>/<file name>)
    assert described(ours, our_root) == described(theirs, their_root)
    assert all(hashlib.md5(Path(f.path).read_bytes()).hexdigest() == f._file_handle["contentMd5"] for f in ours)
    # synapseclient finds every file the drop-in put there: its own path=None sync downloads nothing
    before = emulator.stats()["data_requests"]
    again = synapseutils.syncFromSynapse(ours_syn, project)
    assert described(again, our_root) == described(ours, our_root)
    # and the drop-in finds them too, asking for no bytes
    assert described(syncFromSynapse(ours_syn, project), our_root) == described(ours, our_root)
    assert emulator.stats()["data_requests"] == before
    # metadata only: the cached copies, as synapseutils answers
    their_paths = sorted(f.path for f in synapseutils.syncFromSynapse(theirs_syn, project, downloadFile=False))
    assert sorted(f.path for f in syncFromSynapse(theirs_syn, project, downloadFile=False)) == their_paths
    assert emulator.stats()["data_requests"] == before


def test_without_a_path_partly_cached_shared_handles_and_clashing_names(emulator, synapse_login, tmp_path):
    """A tree some of whose files the cache has, a link to a file of the same tree (one file handle, two entries),
    a root file named like a cache folder, and a stale unrecorded file at a cache path: as synapseutils does it."""
    spec = {
        "projects": [
            {
                "name": "p",
                "children": [
                    {"type": "folder", "name": "d", "children": [{"type": "file", "name": "a.txt", "content": "A"}]},
                    {"type": "link", "name": "to-a", "target": "d/a.txt"},
                    {"type": "file", "name": "1", "content": "one"},
                    {"type": "file", "name": "b.txt", "content": "B"},
                ],
            }
        ]
    }
    project = emulator.seed_spec(spec)["p"]
    theirs_syn = synapse_login(emulator)
    ours_syn = synapse_login(emulator, cache_root=tmp_path / "our-cache")
    our_root = tmp_path / "our-cache"
    # synapseclient 4.14 downloads two entries of one file handle at once into one cache path, and the two writes
    # can interleave (a.txt once came out "AA": an MD5 mismatch it only logs, and a File without a path). The
    # reference run must not depend on that race: the shared handle is fetched alone first, so the sync finds it
    # cached, at the same cache path.
    theirs_syn.get(emulator.resolve(project, "d/a.txt"))
    theirs = synapseutils.syncFromSynapse(theirs_syn, project, followLink=True)
    assert len(theirs) == 4 and len({f.path for f in theirs}) == 3  # the link's file is the linked file's copy
    b = next(f for f in theirs if f.name == "b.txt")
    ours_syn.get(b.id)  # the cache has one file already; a stale, unrecorded file sits where another one goes
    a = next(f for f in theirs if f.name == "a.txt")
    stale = our_root / os.path.relpath(a.path, theirs_syn.cache.cache_root_dir)
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_text("stale")
    before = emulator.stats()["data_requests"]
    ours = syncFromSynapse(ours_syn, project, followLink=True, ifcollision="keep.local")  # (ignored for the cache)
    assert emulator.stats()["data_requests"] - before == 2  # a.txt once for both entries, and "1"
    assert described(ours, our_root) == described(theirs, Path(theirs_syn.cache.cache_root_dir))
    assert stale.read_text() == "A"
    again = syncFromSynapse(ours_syn, project, followLink=True)  # "1" is both a file name and a cache folder
    assert described(again, our_root) == described(ours, our_root)
    assert emulator.stats()["data_requests"] - before == 2
