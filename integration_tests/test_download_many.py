"""Issue 16: lists of ids on the one shared pool, against the emulator (real HTTP on loopback, real files)."""

from __future__ import annotations

import hashlib
import math

import pytest
from synctrees import assert_tree_matches

from synclient import Platform, SyncStatus, TransferConfig, download_many
from synclient.emulator import Emulator
from synclient.errors import ConfigError

N_FOLDERS, PER_FOLDER = 100, 10  # 1,000 ids from 100 folders: the figure of the issue


def content(i: int, j: int) -> str:
    return f"file {j} of folder {i}\n" * (1 + (i * 7 + j) % 5)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    spec = {
        "projects": [
            {
                "name": "many",
                "children": [
                    {
                        "type": "folder",
                        "name": f"d{i:03d}",
                        "children": [
                            {"type": "file", "name": f"f{i:03d}_{j}.txt", "content": content(i, j)}
                            for j in range(PER_FOLDER)
                        ],
                    }
                    for i in range(N_FOLDERS)
                ]
                + [
                    {
                        "type": "folder",
                        "name": "other",
                        "children": [
                            {
                                "type": "file",
                                "name": "f000_0.txt",
                                "content": "a file with a name already in the list\n",
                            },
                            {"type": "file", "name": "v.txt", "versions": [{"content": "one\n"}, {"content": "two\n"}]},
                        ],
                    }
                ],
            }
        ]
    }
    with Emulator(data_dir=str(tmp_path_factory.mktemp("emu"))) as emu:
        project = emu.seed_spec(spec)["many"]
        emu.ids = [
            emu.resolve(project, f"d{i:03d}/f{i:03d}_{j}.txt") for i in range(N_FOLDERS) for j in range(PER_FOLDER)
        ]
        emu.project = project
        yield emu


@pytest.fixture
def emu(seeded):
    seeded.set_knobs(fault_api_5xx_rate=0.0, fault_data_cut_rate=0.0, fault_data_corrupt_rate=0.0)
    seeded.reset_stats()
    return seeded


def expected_tree():
    return {
        f"f{i:03d}_{j}.txt": hashlib.md5(content(i, j).encode()).hexdigest()
        for i in range(N_FOLDERS)
        for j in range(PER_FOLDER)
    }


def test_a_thousand_ids_from_a_hundred_folders_cost_a_bundle_each_and_a_url_call_per_hundred(emu, tmp_path):
    n = len(emu.ids)
    with Platform(emu.endpoint, token=emu.token) as platform:
        results = download_many(emu.ids, tmp_path, platform=platform)
    assert_tree_matches(tmp_path, expected_tree())
    assert len(results) == n and not results.failures
    routes = emu.stats()["api_by_route"]
    calls = sum(routes.values())
    # N bundles + ceil(N/100) URL batches + one header call for the list; no folder is listed
    assert calls <= n + math.ceil(n / 100) + 1, routes
    assert not any("children" in route for route in routes), routes
    assert routes["POST /file/v1/fileHandle/batch"] == math.ceil(n / 100)
    assert results.report.rest_calls == calls

    emu.reset_stats()  # the same list again: nothing changed, so one header call and no bytes
    with Platform(emu.endpoint, token=emu.token) as platform:
        again = download_many(emu.ids, tmp_path, platform=platform)
    assert {r.status for r in again} == {SyncStatus.SKIPPED}
    stats = emu.stats()
    assert stats["api_by_route"] == {"POST /repo/v1/entity/header": 1} and stats["data_requests"] == 0


def test_a_list_under_faults_is_byte_exact_and_names_never_overwrite(emu, tmp_path):
    emu.set_knobs(fault_api_5xx_rate=0.1, fault_data_cut_rate=0.2, fault_data_corrupt_rate=0.1, fault_seed=16)
    clash = emu.resolve(emu.project, "other/f000_0.txt")
    versioned = emu.resolve(emu.project, "other/v.txt")
    ids = emu.ids[:120] + [clash, f"{versioned}.1", versioned]
    with Platform(emu.endpoint, token=emu.token) as platform:
        results = download_many(ids, tmp_path, platform=platform, config=TransferConfig(max_workers=8))
    expected = {name: md5 for name, md5 in expected_tree().items() if name < "f012"}
    expected[f"f000_0 ({clash}).txt"] = hashlib.md5(b"a file with a name already in the list\n").hexdigest()
    expected["v.txt"] = hashlib.md5(b"one\n").hexdigest()
    expected[f"v ({versioned}.2).txt"] = hashlib.md5(b"two\n").hexdigest()  # another version of a named file
    assert_tree_matches(tmp_path, expected)
    assert not results.failures
    assert results.report.renamed == [
        f"{clash}.1: f000_0.txt -> f000_0 ({clash}).txt (the name was taken)",
        f"{versioned}.2: v.txt -> v ({versioned}.2).txt (the name was taken)",
    ]
    stats = emu.stats()
    assert stats["api_5xx_injected"] and stats["data_cuts_injected"]  # the faults did happen


def test_containers_in_a_list_need_recursive_and_then_get_their_own_folder(emu, tmp_path):
    folder = emu.resolve(emu.project, "d001")
    with Platform(emu.endpoint, token=emu.token) as platform:
        with pytest.raises(ConfigError, match=f"{folder} is a folder; pass -r"):
            download_many([emu.ids[0], folder], tmp_path, platform=platform)
        assert not any(tmp_path.iterdir())  # refused before anything was written
        results = download_many([emu.ids[0], folder], tmp_path, platform=platform, recursive=True)
    assert not results.failures
    expected = {"f000_0.txt": expected_tree()["f000_0.txt"]}
    expected.update({f"d001/{name}": md5 for name, md5 in expected_tree().items() if name.startswith("f001_")})
    assert_tree_matches(tmp_path, expected)
    assert results.folders == {"d001": folder}


def test_an_unknown_id_fails_alone(emu, tmp_path):
    with Platform(emu.endpoint, token=emu.token) as platform:
        results = download_many([emu.ids[0], "syn999999999"], tmp_path, platform=platform, on_error="continue")
    assert [r.entity_id for r in results.failures] == ["syn999999999"]
    assert "does not exist or may not be read" in str(results.failures[0].error)
    assert (tmp_path / "f000_0.txt").is_file()


# -- a list's names against what the target already holds (the index) --------------------------------------------

CLASH_SPEC = {
    "projects": [
        {
            "name": "clash",
            "children": [
                {"type": "folder", "name": "f", "children": [{"type": "file", "name": "a.csv", "content": "f/a\n"}]},
                {"type": "folder", "name": "g", "children": [{"type": "file", "name": "a.csv", "content": "g/a\n"}]},
                {
                    "type": "folder",
                    "name": "h",
                    "children": [{"type": "file", "name": "a(1).csv", "content": "h/a(1)\n"}],
                },
                {
                    "type": "folder",
                    "name": "tree",
                    "children": [{"type": "file", "name": "a.csv", "content": "tree/a\n"}],
                },
            ],
        }
    ]
}


@pytest.fixture
def clash(emulator):
    project = emulator.seed_spec(CLASH_SPEC)["clash"]
    emulator.at = lambda path: emulator.resolve(project, path)
    emulator.platform = Platform(emulator.endpoint, token=emulator.token)
    yield emulator
    emulator.platform.close()


def files_in(root):
    return {
        p.relative_to(root).as_posix(): p.read_text()
        for p in root.rglob("*")
        if p.is_file() and ".synclient" not in p.parts
    }


def test_a_reordered_list_keeps_every_name_and_adds_no_copy(clash, tmp_path):
    f_a, g_a = clash.at("f/a.csv"), clash.at("g/a.csv")
    download_many([f_a, g_a], tmp_path, platform=clash.platform)
    before = files_in(tmp_path)
    again = download_many([g_a, f_a], tmp_path, platform=clash.platform)
    assert files_in(tmp_path) == before == {"a.csv": "f/a\n", f"a ({g_a}).csv": "g/a\n"}
    assert {r.status for r in again} == {SyncStatus.SKIPPED}


def test_a_keep_both_copy_is_never_overwritten_by_a_later_entry_of_its_name(clash, tmp_path):
    f_a, h_a1 = clash.at("f/a.csv"), clash.at("h/a(1).csv")
    (tmp_path / "a.csv").write_text("the user's own a.csv\n")
    download_many([f_a], tmp_path, platform=clash.platform, if_collision="keep.both")  # f/a goes to a(1).csv
    assert files_in(tmp_path) == {"a.csv": "the user's own a.csv\n", "a(1).csv": "f/a\n"}
    results = download_many([f_a, h_a1], tmp_path, platform=clash.platform, if_collision="keep.both")
    assert files_in(tmp_path) == {
        "a.csv": "the user's own a.csv\n",
        "a(1).csv": "f/a\n",
        f"a(1) ({h_a1}).csv": "h/a(1)\n",
    }
    by_id = {r.entity_id: r for r in results}
    assert by_id[f_a].status is SyncStatus.SKIPPED and by_id[f_a].path.name == "a(1).csv"
    assert by_id[h_a1].status is SyncStatus.DOWNLOADED


def test_a_list_never_takes_a_synced_trees_file_and_a_later_delete_spares_the_lists(clash, tmp_path):
    from synclient import sync_from_platform

    tree, f_a = clash.at("tree"), clash.at("f/a.csv")
    sync_from_platform(tree, tmp_path, platform=clash.platform, manifest="suppress")
    assert files_in(tmp_path) == {"a.csv": "tree/a\n"}
    download_many([f_a], tmp_path, platform=clash.platform)
    assert files_in(tmp_path) == {"a.csv": "tree/a\n", f"a ({f_a}).csv": "f/a\n"}
    clash.delete_entity(clash.at("tree/a.csv"))
    results = sync_from_platform(tree, tmp_path, platform=clash.platform, delete=True, manifest="suppress")
    assert results.report.deleted == 1
    assert files_in(tmp_path) == {f"a ({f_a}).csv": "f/a\n"}


def test_a_folder_walked_in_a_list_settles_keep_both_copies_as_a_sync_does(clash, tmp_path):
    f, g_a = clash.at("f"), clash.at("g/a.csv")
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "a.csv").write_text("the user's own\n")
    download_many([f, g_a], tmp_path, platform=clash.platform, recursive=True, if_collision="keep.both")
    assert files_in(tmp_path) == {"f/a.csv": "the user's own\n", "f/a(1).csv": "f/a\n", "a.csv": "g/a\n"}
    clash.add_file(f, "a(1).csv", b"a remote file named like the copy\n")  # it takes its name: the copy moves
    again = download_many([f, g_a], tmp_path, platform=clash.platform, recursive=True, if_collision="keep.both")
    assert not again.failures
    assert files_in(tmp_path) == {
        "f/a.csv": "the user's own\n",
        "f/a(1).csv": "a remote file named like the copy\n",
        "f/a(2).csv": "f/a\n",
        "a.csv": "g/a\n",
    }
