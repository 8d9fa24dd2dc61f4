"""Issue 33, part 4: ``--keep-paths`` (``keep_paths=True``): a list's files land at ``<project name>/<folder
path>/<name>``, where a tree sync of their project into ``TARGET/<project name>`` puts them, against the emulator
(real HTTP on loopback, real files): paths and bytes, the call bound, and the later tree sync that downloads
nothing."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import requests
from synctrees import assert_tree_matches

from synclient import Platform, SyncStatus, download_list, download_many, download_query, sync_from_platform
from synclient.cli import main
from synclient.emulator import Emulator
from synclient.errors import ConfigError

#: project -> remote path -> content
ALPHA = {
    "raw/2024/q1/a.txt": "alpha a\n",
    "raw/2024/q1/b.txt": "alpha b\n" * 3,
    "raw/2024/c.txt": "alpha c\n",
    "raw/d.txt": "alpha d\n" * 2,
    "top.txt": "alpha top\n",
    "notes/top.txt": "alpha notes top\n",
}
BETA = {
    "raw/a.txt": "beta a\n",
    "deep/x/y/z.txt": "beta z\n" * 5,
    "top.txt": "beta top\n",
}


def md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


def children_of(files: dict) -> list:
    """A seed spec's children from '/'-separated paths."""
    root: dict = {}
    for path, content in files.items():
        *folders, name = path.split("/")
        node = root
        for folder in folders:
            node = node.setdefault(folder, {})
        node[name] = content

    def spec(node: dict) -> list:
        return [
            {"type": "folder", "name": name, "children": spec(value)}
            if isinstance(value, dict)
            else {"type": "file", "name": name, "content": value}
            for name, value in node.items()
        ]

    return spec(root)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    with Emulator(data_dir=str(tmp_path_factory.mktemp("emu"))) as emu:
        projects = emu.seed_spec(
            {
                "projects": [
                    {
                        "name": "alpha",
                        "children": children_of(ALPHA)
                        + [{"type": "entityview", "name": "files", "scope": [""], "columns": []}],
                    },
                    {
                        "name": "beta",
                        "children": children_of(BETA)
                        + [
                            {
                                "type": "dataset",
                                "name": "cohort",
                                "items": [{"ref": "raw/a.txt"}, {"ref": "deep/x/y/z.txt"}],
                            }
                        ],
                    },
                ]
            }
        )
        emu.alpha, emu.beta = projects["alpha"], projects["beta"]
        emu.view = emu.resolve(emu.alpha, "files")
        yield emu


@pytest.fixture
def emu(seeded):
    seeded.set_knobs(fault_api_5xx_rate=0.0, fault_data_cut_rate=0.0, view_lag=False)
    seeded.reset_stats()
    return seeded


def ids_of(emu, project: str, paths) -> list:
    return [emu.resolve(project, path) for path in paths]


def expected(project: str, files: dict, paths=None) -> dict:
    return {f"{project}/{path}": md5(content) for path, content in files.items() if paths is None or path in paths}


def routes(emu) -> dict:
    return emu.stats()["api_by_route"]


def count(routes_: dict, suffix: str) -> int:
    return sum(n for route, n in routes_.items() if route.endswith(suffix))


def test_an_id_list_from_two_projects_lands_at_its_remote_paths_with_a_path_call_per_folder(emu, tmp_path):
    ids = ids_of(emu, emu.alpha, ALPHA) + ids_of(emu, emu.beta, BETA)
    with Platform(emu.endpoint, token=emu.token) as platform:
        results = download_many(ids, tmp_path, platform=platform, keep_paths=True)
    assert not results.failures and len(results) == len(ALPHA) + len(BETA)
    assert_tree_matches(tmp_path, {**expected("alpha", ALPHA), **expected("beta", BETA)})
    calls = routes(emu)
    # 9 files in 8 distinct folders, asked in the list's order: raw/2024/q1's chain names raw/2024, raw and alpha;
    # then alpha/notes, beta/raw and beta/deep/x/y (whose chain names beta): 4 path calls. No header batch but the
    # list's own (no item named Redacted), one bundle per file (the call a flat list makes for each file anyway,
    # made at plan time and not again)
    assert count(calls, "/path") == 4
    assert count(calls, "/bundle2") == len(ids)
    assert count(calls, "/entity/header") == 1  # (the list's own header batch)
    assert results.report.rest_calls == sum(calls.values())

    emu.reset_stats()  # again: every file up to date, no bundle, one path call per folder at most, no byte
    again = download_many(ids, tmp_path, platform=Platform(emu.endpoint, token=emu.token), keep_paths=True)
    assert {r.status for r in again} == {SyncStatus.SKIPPED}
    calls = routes(emu)
    assert count(calls, "/bundle2") == 0 and emu.stats()["data_requests"] == 0
    assert count(calls, "/path") == 4


def test_the_path_calls_are_at_most_one_per_distinct_folder_and_fewer_when_deep_ones_name_the_rest(emu, tmp_path):
    paths = ["raw/2024/q1/a.txt", "raw/2024/q1/b.txt", "raw/2024/c.txt", "raw/d.txt"]  # 4 files, 3 nested folders
    with Platform(emu.endpoint, token=emu.token) as platform:
        download_many(ids_of(emu, emu.alpha, paths), tmp_path, platform=platform, keep_paths=True)
    assert_tree_matches(tmp_path, expected("alpha", ALPHA, paths))
    assert count(routes(emu), "/path") == 1  # the deepest folder first: its chain names the other two


def test_a_later_tree_sync_of_the_project_into_target_slash_project_downloads_nothing(emu, tmp_path):
    ids = ids_of(emu, emu.alpha, ALPHA)
    with Platform(emu.endpoint, token=emu.token) as platform:
        download_many(ids, tmp_path, platform=platform, keep_paths=True)
        emu.reset_stats()
        tree = sync_from_platform(emu.alpha, tmp_path / "alpha", platform=platform)
    assert emu.stats()["data_requests"] == 0
    assert not tree.failures and {r.status for r in tree} == {SyncStatus.SKIPPED}
    assert {r.action for r in tree} == {"adopt"}  # (each file hashed once and indexed in the tree's own target)
    assert_tree_matches(tmp_path / "alpha", {path: md5(content) for path, content in ALPHA.items()})
    emu.reset_stats()  # and the tree sync again: the index's fast path, not even a bundle
    with Platform(emu.endpoint, token=emu.token) as platform:
        assert {r.action for r in sync_from_platform(emu.alpha, tmp_path / "alpha", platform=platform)} == {"skip"}
    assert count(routes(emu), "/bundle2") == 0


def test_a_view_query_selecting_parent_ids_costs_no_bundle_and_a_path_call_per_folder(emu, tmp_path):
    sql = (
        f"SELECT id, currentVersion, parentId, dataFileHandleId, dataFileMD5Hex, dataFileSizeBytes FROM {emu.view} "
        "WHERE name LIKE '%.txt'"
    )
    with Platform(emu.endpoint, token=emu.token) as platform:
        results = download_query(sql, tmp_path, platform=platform, keep_paths=True)
    assert not results.failures and len(results) == len(ALPHA)
    assert_tree_matches(tmp_path, expected("alpha", ALPHA))
    calls = routes(emu)
    assert count(calls, "/bundle2") == 0
    assert count(calls, "/path") <= 5  # 5 distinct folders (q1, 2024, raw, notes, the project): fewer, as q1 names 3


def test_the_same_file_at_two_versions_gets_the_lists_versioned_name(emu, tmp_path):
    file_id = emu.resolve(emu.beta, "top.txt")
    emu.add_version(file_id, "beta top, second\n")
    try:
        with Platform(emu.endpoint, token=emu.token) as platform:
            results = download_many([f"{file_id}.1", f"{file_id}.2"], tmp_path, platform=platform, keep_paths=True)
        assert not results.failures
        assert_tree_matches(
            tmp_path, {"beta/top.txt": md5("beta top\n"), f"beta/top ({file_id}.2).txt": md5("beta top, second\n")}
        )
    finally:
        emu.add_version(file_id, BETA["top.txt"])


def test_a_listed_folder_is_walked_into_its_own_remote_path(emu, tmp_path):
    folder = emu.resolve(emu.alpha, "raw/2024")
    loose = emu.resolve(emu.beta, "deep/x/y/z.txt")
    inside = emu.resolve(emu.alpha, "raw/2024/c.txt")  # the folder's walk has it
    with Platform(emu.endpoint, token=emu.token) as platform:
        results = download_many([folder, loose, inside], tmp_path, platform=platform, keep_paths=True, recursive=True)
    assert not results.failures
    assert_tree_matches(
        tmp_path,
        {
            **{f"alpha/{p}": md5(c) for p, c in ALPHA.items() if p.startswith("raw/2024/")},
            "beta/deep/x/y/z.txt": md5(BETA["deep/x/y/z.txt"]),
        },
    )


def test_one_project_or_folder_alone_is_refused_and_the_cli_says_so_in_one_line(emu, tmp_path, capsys, monkeypatch):
    with Platform(emu.endpoint, token=emu.token) as platform:
        with pytest.raises(ConfigError, match="keep-paths"):
            download_many([emu.alpha], tmp_path / "a", platform=platform, keep_paths=True, recursive=True)
    monkeypatch.setenv("SYNCLIENT_AUTH_TOKEN", emu.token)
    code = main(["get", "-r", emu.alpha, "--keep-paths", "--path", str(tmp_path / "b"), "--endpoint", emu.endpoint])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert "--keep-paths" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "b" / "alpha").exists()


def test_the_cli_keeps_paths_for_one_file_id_too(emu, tmp_path, monkeypatch):
    monkeypatch.setenv("SYNCLIENT_AUTH_TOKEN", emu.token)
    file_id = emu.resolve(emu.beta, "deep/x/y/z.txt")
    code = main(["get", file_id, "--keep-paths", "--path", str(tmp_path), "--endpoint", emu.endpoint, "-q"])
    assert code == 0
    assert_tree_matches(tmp_path, expected("beta", BETA, ["deep/x/y/z.txt"]))


def hostile_world(emu, knobs):
    """file id -> why a folder of its path, as the hostile server answers it, can be no local name: "remote" (no
    path component: '/', '..', NUL), "local" (one, but not on this disk: 300 bytes long), or None."""
    from synclient.emulator.hostile import answered_name
    from synclient.sync.local.name_gate import RemotePath
    from synclient.sync.local.paths import validate_name

    world = {}
    for project, files in ((emu.alpha, ALPHA), (emu.beta, BETA)):
        name = "alpha" if project == emu.alpha else "beta"
        for path in files:
            folders = path.split("/")[:-1]
            chain = [(project, name)] + [
                (emu.resolve(project, "/".join(folders[: i + 1])), folders[i]) for i in range(len(folders))
            ]
            answered = [answered_name(knobs, entity_id, real) for entity_id, real in chain]
            hostile = None
            try:
                RemotePath(tuple(answered))
                hostile = "local"
                for each in answered:  # (each a local name here too: the name gate's check, 255 bytes included)
                    validate_name(each)
                hostile = None
            except Exception:
                hostile = hostile or "remote"
            world[emu.resolve(project, path)] = hostile
    return world


def test_hostile_folder_names_land_their_files_flat_each_with_a_line_and_nothing_outside(emu, tmp_path):
    from synclient.emulator import Knobs

    # a seed where some folders' answered names can be no local name and some can, one of them a path component
    # that this disk cannot hold (too long) (decided per entity, replayable)
    for seed in range(1, 200):
        knobs = Knobs(hostile_rate=0.3, hostile_kinds="names", fault_seed=seed)
        world = hostile_world(emu, knobs)
        if None in world.values() and "remote" in world.values() and "local" in world.values():
            break
    else:
        pytest.fail("no seed gives some hostile folders and some not")
    emu.set_knobs(hostile_rate=0.3, hostile_kinds="names", fault_seed=seed)
    try:
        with Platform(emu.endpoint, token=emu.token) as platform:
            results = download_many(
                list(world), tmp_path / "t", platform=platform, keep_paths=True, on_error="continue"
            )
    finally:
        emu.set_knobs(hostile_rate=0.0)
    flat = {line.split()[0].split(".")[0] for line in results.report.renamed if " lands flat: " in line}
    assert flat == {file_id for file_id, hostile in world.items() if hostile is not None}
    assert set(world) <= {result.entity_id for result in results}  # every listed file has its result
    root = (tmp_path / "t").resolve()
    for result in results:
        if result.path is not None:
            assert root in Path(result.path).resolve().parents
    for result in results:
        if result.entity_id in flat and result.path is not None:
            assert Path(result.path).parent.resolve() == root  # flat: at the target's top


def test_a_datasets_items_and_a_dry_run_keep_their_paths_too(emu, tmp_path, monkeypatch):
    dataset = emu.resolve(emu.beta, "cohort")
    with Platform(emu.endpoint, token=emu.token) as platform:
        plan = download_many([dataset], tmp_path / "d", platform=platform, keep_paths=True, dry_run=True)
    assert sorted(Path(e.destination).relative_to(tmp_path / "d").as_posix() for e in plan.entries) == [
        "beta/deep/x/y/z.txt",
        "beta/raw/a.txt",
    ]
    assert not (tmp_path / "d").exists()
    monkeypatch.setenv("SYNCLIENT_AUTH_TOKEN", emu.token)
    assert main(["get", dataset, "--keep-paths", "--path", str(tmp_path / "d"), "--endpoint", emu.endpoint, "-q"]) == 0
    assert_tree_matches(tmp_path / "d", expected("beta", BETA, ["raw/a.txt", "deep/x/y/z.txt"]))


@pytest.mark.parametrize("query", [False, True])
def test_no_call_beyond_the_flat_layouts_but_the_path_calls(emu, tmp_path, query):
    """The same list flat and with --keep-paths, first run and re-run: every route's count is the same but the
    path calls (at most one per distinct folder), and no header batch is added (nothing is named Redacted)."""
    ids = ids_of(emu, emu.alpha, ALPHA) + ids_of(emu, emu.beta, BETA)
    sql = f"SELECT id, parentId, dataFileHandleId, dataFileMD5Hex, dataFileSizeBytes FROM {emu.view}"
    folders = {path.rsplit("/", 1)[0] if "/" in path else "" for path in ALPHA}
    counts = {}
    for keep_paths in (False, True):
        for attempt in ("first", "again"):
            emu.reset_stats()
            with Platform(emu.endpoint, token=emu.token) as platform:
                if query:
                    download_query(sql, tmp_path / str(keep_paths), platform=platform, keep_paths=keep_paths)
                else:
                    download_many(ids, tmp_path / str(keep_paths), platform=platform, keep_paths=keep_paths)
            counts[keep_paths, attempt] = routes(emu)
    for attempt in ("first", "again"):
        flat, kept = counts[False, attempt], dict(counts[True, attempt])
        path_calls = kept.pop("GET /repo/v1/entity/{id}/path", 0)
        assert kept == flat, attempt
        assert 1 <= path_calls <= (len(folders) if query else len(folders) + 4)  # (beta's 4 folders in the id list)


def test_include_and_exclude_match_the_kept_paths(emu, tmp_path):
    ids = ids_of(emu, emu.alpha, ALPHA) + ids_of(emu, emu.beta, BETA)
    with Platform(emu.endpoint, token=emu.token) as platform:
        download_many(ids, tmp_path, platform=platform, keep_paths=True, include=["beta/*"], exclude=["*/top.txt"])
    assert_tree_matches(tmp_path, expected("beta", BETA, ["raw/a.txt", "deep/x/y/z.txt"]))


def test_entity_details_take_the_bundles_made_for_the_paths_not_a_second_one(emu, tmp_path):
    ids = ids_of(emu, emu.beta, BETA)
    with Platform(emu.endpoint, token=emu.token) as platform:
        results = download_many(ids, tmp_path, platform=platform, keep_paths=True, entity_details=True)
    assert count(routes(emu), "/bundle2") == len(ids)
    assert {r.entity["parentId"] for r in results} == {
        emu.resolve(emu.beta, folder) for folder in ("raw", "deep/x/y")
    } | {emu.beta}
    assert all(r.file_handle and r.file_handle["contentMd5"] == r.md5 for r in results)


@pytest.mark.parametrize("name", ["a\\b", "L" * 300, ".synclient", ".x.synclient-partial"])
def test_a_folder_name_the_local_disk_cannot_hold_lands_its_files_flat_each_with_a_result(tmp_path, name):
    """A remote name that is a path component (no '/', '..', NUL) but can be no local name here (a backslash, too
    long, synclient's index folder at the top, a partial download's name): its files land flat with a note, as
    for '..', not silently missing from the results (their folder failing instead)."""
    with Emulator(data_dir=str(tmp_path / "emu")) as emu:
        project = emu.seed_spec({"projects": [{"name": "gamma", "children": children_of({"raw/a.txt": "g a\n"})}]})[
            "gamma"
        ]
        file_id = emu.resolve(project, "raw/a.txt")
        folder = project if name == ".synclient" else emu.resolve(project, "raw")
        emu.rename_entity(folder, name, names="unchecked")
        with Platform(emu.endpoint, token=emu.token) as platform:
            results = download_many([file_id], tmp_path / "t", platform=platform, keep_paths=True)
    assert [(r.entity_id, r.status) for r in results] == [(file_id, SyncStatus.DOWNLOADED)]
    assert [line.split()[0] for line in results.report.renamed if " lands flat: " in line] == [f"{file_id}.1"]
    assert_tree_matches(tmp_path / "t", {"a.txt": md5("g a\n")})


def test_an_earlier_version_of_a_file_in_a_listed_folder_lands_flat_not_dropped_for_the_walks(emu, tmp_path):
    """The walk of a listed folder downloads its files' current versions; a listed file of it at an earlier version
    cannot take that path, and is downloaded flat (as without --keep-paths) with a note, not silently left out."""
    folder = emu.resolve(emu.beta, "raw")
    file_id = emu.resolve(emu.beta, "raw/a.txt")
    emu.add_version(file_id, "beta a, second\n")
    try:
        with Platform(emu.endpoint, token=emu.token) as platform:
            results = download_many(
                [f"{file_id}.1", folder], tmp_path, platform=platform, keep_paths=True, recursive=True
            )
    finally:
        emu.add_version(file_id, BETA["raw/a.txt"])
    assert not results.failures
    assert_tree_matches(tmp_path, {"beta/raw/a.txt": md5("beta a, second\n"), "a.txt": md5("beta a\n")})
    assert [line.split()[0] for line in results.report.renamed if " lands flat: " in line] == [f"{file_id}.1"]


def test_a_re_run_after_the_file_moved_and_its_folder_was_deleted_finds_its_new_folder(tmp_path):
    with Emulator(data_dir=str(tmp_path / "emu")) as emu:
        project = emu.seed_spec(
            {"projects": [{"name": "gamma", "children": children_of({"raw/a.txt": "g a\n", "other/b.txt": "g b\n"})}]}
        )["gamma"]
        file_id, old, new = (emu.resolve(project, path) for path in ("raw/a.txt", "raw", "other"))
        with Platform(emu.endpoint, token=emu.token) as platform:
            download_many([file_id], tmp_path / "t", platform=platform, keep_paths=True)
            emu.move_entity(file_id, new)
            emu.delete_entity(old)
            emu.reset_stats()
            results = download_many([file_id], tmp_path / "t", platform=platform, keep_paths=True)
        calls = routes(emu)
    assert not results.failures and not results.report.renamed  # (not flat: "its folder may not be read")
    assert [Path(r.path).relative_to(tmp_path / "t").as_posix() for r in results] == ["gamma/other/a.txt"]
    assert count(calls, "/bundle2") == 1  # the file's bundle, once: the index's folder is gone


def test_the_download_cart_keeps_paths_by_the_keyword_and_the_cli(emu, tmp_path, monkeypatch):
    """``download_list(..., keep_paths=True)`` (as download_many and download_query take it: it raised TypeError)
    and ``get --download-list --keep-paths``: the cart's files at their remote paths, the manifest at the top."""
    paths = {"alpha": ["raw/2024/q1/a.txt", "top.txt"], "beta": ["deep/x/y/z.txt"]}
    items = [{"fileEntityId": emu.resolve(getattr(emu, project), p)} for project in paths for p in paths[project]]
    answer = requests.post(
        emu.endpoint + "/repo/v1/download/list/add",
        json={"batchToAdd": items},
        headers={"Authorization": f"Bearer {emu.token}"},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    want = {**expected("alpha", ALPHA, paths["alpha"]), **expected("beta", BETA, paths["beta"])}
    try:
        with Platform(emu.endpoint, token=emu.token) as platform:
            results = download_list(tmp_path / "api", platform=platform, keep_paths=True, keep_cart=True)
        assert not results.failures and len(results) == 3
        (tmp_path / "api" / "manifest.csv").unlink()
        assert_tree_matches(tmp_path / "api", want)
        monkeypatch.setenv("SYNCLIENT_AUTH_TOKEN", emu.token)
        cli = ["get", "--download-list", "--keep-paths", "--path", str(tmp_path / "cli"), "--endpoint", emu.endpoint]
        assert main(cli + ["-q"]) == 0
        (tmp_path / "cli" / "manifest.csv").unlink()
        assert_tree_matches(tmp_path / "cli", want)
    finally:  # (the module's emulator: its cart left empty)
        requests.delete(
            emu.endpoint + "/repo/v1/download/list", headers={"Authorization": f"Bearer {emu.token}"}, timeout=60
        )


def test_a_file_moved_since_a_flat_run_is_kept_at_its_new_folder_and_the_next_run_downloads_nothing(tmp_path):
    """A flat run's index row (its file at the top) names the folder the file had then: after a move at the same
    version, the first keep_paths run put the file in that old folder, and recorded the bundle's new one, so the
    second run downloaded it again into the new folder (found by the sources model: seed 22, step 71)."""
    with Emulator(data_dir=str(tmp_path / "emu")) as emu:
        project = emu.seed_spec(
            {"projects": [{"name": "delta", "children": children_of({"raw/a.txt": "d a\n", "other/b.txt": "d b\n"})}]}
        )["delta"]
        file_id, new = (emu.resolve(project, path) for path in ("raw/a.txt", "other"))
        with Platform(emu.endpoint, token=emu.token) as platform:
            download_many([file_id], tmp_path / "t", platform=platform)
            emu.move_entity(file_id, new)
            first = download_many([file_id], tmp_path / "t", platform=platform, keep_paths=True)
            emu.reset_stats()
            second = download_many([file_id], tmp_path / "t", platform=platform, keep_paths=True)
            data = emu.stats()["data_requests"]
    paths = [[Path(r.path).relative_to(tmp_path / "t").as_posix() for r in run] for run in (first, second)]
    assert paths == [["delta/other/a.txt"], ["delta/other/a.txt"]]
    assert [r.status for r in second] == [SyncStatus.SKIPPED] and data == 0
    assert not (tmp_path / "t" / "delta" / "raw").exists()
