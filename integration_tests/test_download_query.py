"""Issue 17: what a query over a file view or table selects (download_query, get --query), and a sync planned from
a file view (view=), against the emulator's query service (real HTTP on loopback, real files)."""

from __future__ import annotations

import hashlib
import math

import pytest
from synctrees import assert_tree_matches

from synclient import Platform, SyncStatus, TransferConfig, download_query, sync_from_platform
from synclient.emulator import Emulator
from synclient.errors import BadRequestError, ConfigError, UnsupportedError

ASSAYS = ("rnaSeq", "wgs", "atac", "proteomics", "imaging")
N_FOLDERS, PER_FOLDER = 20, 25  # 500 files; assay rnaSeq is every fifth: 100 files


def content(i: int, j: int) -> str:
    return f"sample {j} of batch {i}\n" * (1 + (i + j) % 4)


#: files the tests gave a new version (the emulator is the module's): (i, j) -> their content now
EDITED = {}


def current(i: int, j: int) -> str:
    return EDITED.get((i, j), content(i, j))


def assay(i: int, j: int) -> str:
    return ASSAYS[(i * PER_FOLDER + j) % len(ASSAYS)]


def md5(text) -> str:
    return hashlib.md5(text.encode() if isinstance(text, str) else text).hexdigest()


def study_spec() -> dict:
    return {
        "projects": [
            {
                "name": "study",
                "children": [
                    {
                        "type": "folder",
                        "name": f"batch{i:02d}",
                        "children": [
                            {
                                "type": "file",
                                "name": f"s{i:02d}_{j:02d}.txt",
                                "content": content(i, j),
                                "annotations": {"assay": [assay(i, j)], "species": ["Mouse" if j % 2 else "Human"]},
                            }
                            for j in range(PER_FOLDER)
                        ],
                    }
                    for i in range(N_FOLDERS)
                ]
                + [
                    {"type": "entityview", "name": "files", "scope": [""], "columns": ["assay", "species"]},
                    {
                        "type": "table",
                        "name": "picks",
                        "columns": [{"name": "id", "type": "ENTITYID"}, "note"],
                        "rows": [["batch00/s00_00.txt", "first"], ["batch01/s01_03.txt", None]],
                    },
                ],
            }
        ]
    }


def seed_study(emu: Emulator) -> Emulator:
    project = emu.seed_spec(study_spec())["study"]
    emu.project = project
    emu.view = emu.resolve(project, "files")
    emu.table = emu.resolve(project, "picks")
    return emu


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    with Emulator(data_dir=str(tmp_path_factory.mktemp("emu"))) as emu:
        yield seed_study(emu)


@pytest.fixture
def emu(seeded):
    seeded.set_knobs(
        fault_api_5xx_rate=0.0,
        fault_data_cut_rate=0.0,
        fault_data_corrupt_rate=0.0,
        query_page_rows=40,
        query_pending_polls=1,
        view_lag=False,
    )
    seeded.reset_stats()
    return seeded


def selected(where=lambda i, j: True):
    return {
        f"s{i:02d}_{j:02d}.txt": md5(current(i, j)) for i in range(N_FOLDERS) for j in range(PER_FOLDER) if where(i, j)
    }


def tree():
    return {
        f"batch{i:02d}/s{i:02d}_{j:02d}.txt": md5(current(i, j)) for i in range(N_FOLDERS) for j in range(PER_FOLDER)
    }


def query_calls(routes):
    return sum(count for route, count in routes.items() if "/table/query" in route)


def bundle_calls(routes):
    return sum(count for route, count in routes.items() if route.endswith("/bundle2"))


def run(emu, sql, path, **keywords):
    with Platform(emu.endpoint, token=emu.token) as platform:
        return download_query(sql, path, platform=platform, **keywords)


def test_a_view_query_with_its_file_columns_costs_its_pages_and_a_url_call_per_hundred_files(emu, tmp_path):
    sql = (
        f"SELECT id, name, currentVersion, dataFileHandleId, dataFileMD5Hex, dataFileSizeBytes FROM {emu.view} "
        "WHERE assay = 'rnaSeq'"
    )
    results = run(emu, sql, tmp_path)
    expected = selected(lambda i, j: assay(i, j) == "rnaSeq")
    assert_tree_matches(tmp_path, expected)
    n = len(expected)
    assert n == 100 and len(results) == n and not results.failures
    routes = emu.stats()["api_by_route"]
    # the query's own calls (per page of 40 rows: its start, one 202 poll, its answer), one header call, a URL
    # call per 100 files: no bundle call
    assert not any("bundle2" in route for route in routes), routes
    assert query_calls(routes) == 3 * math.ceil(n / 40)
    assert sum(routes.values()) <= query_calls(routes) + math.ceil(n / 100) + 1, routes
    assert results.report.rest_calls == sum(routes.values())
    assert results.report.query.rows == n and results.report.query.table == emu.view
    assert {r.version for r in results} == {1}

    emu.reset_stats()  # the same query again: its calls and the header call, no bytes
    again = run(emu, sql, tmp_path)
    assert {r.status for r in again} == {SyncStatus.SKIPPED} and len(again) == n
    stats = emu.stats()
    assert stats["data_requests"] == 0
    assert set(stats["api_by_route"]) - {route for route in stats["api_by_route"] if "/table/query" in route} == {
        "POST /repo/v1/entity/header"
    }


def test_rows_that_fill_their_last_page_end_with_the_empty_page_synapse_sends(emu, tmp_path):
    """Synapse names a next page whenever a page is full (TableQueryManagerImpl.isRowCountEqualToMaxRowsPerPage), so
    100 rows at 20 a page are 5 full pages and a sixth, empty one without a token: all of it is followed, once."""
    emu.set_knobs(query_page_rows=20)
    sql = (
        f"SELECT id, name, currentVersion, dataFileHandleId, dataFileMD5Hex, dataFileSizeBytes FROM {emu.view} "
        "WHERE assay = 'rnaSeq'"
    )
    results = run(emu, sql, tmp_path)
    assert len(results) == 100 and not results.failures and results.report.query.rows == 100
    assert query_calls(emu.stats()["api_by_route"]) == 3 * (100 // 20 + 1)


def test_a_query_of_ids_only_takes_a_bundle_per_file_and_in_filters_and_order_are_the_platforms(emu, tmp_path):
    sql = f"SELECT id FROM {emu.view} WHERE species = 'Mouse' AND assay IN ('wgs', 'atac') ORDER BY name DESC"
    results = run(emu, sql, tmp_path)
    expected = selected(lambda i, j: j % 2 == 1 and assay(i, j) in ("wgs", "atac"))
    assert_tree_matches(tmp_path, expected)
    routes = emu.stats()["api_by_route"]
    assert bundle_calls(routes) == len(expected) == len(results)


def test_a_table_with_an_id_column_selects_files_by_bundle(emu, tmp_path):
    results = run(emu, f"SELECT * FROM {emu.table}", tmp_path)
    assert_tree_matches(tmp_path, {"s00_00.txt": md5(content(0, 0)), "s01_03.txt": md5(content(1, 3))})
    assert results.report.query.rows == 2


def test_a_lagging_view_pins_a_selected_version_and_otherwise_gives_way_to_the_current_one(emu, tmp_path):
    changed = emu.resolve(emu.project, "batch03/s03_00.txt")
    emu.set_knobs(view_lag=True)
    emu.refresh_views()
    emu.add_version(changed, "version two\n")
    EDITED[3, 0] = "version two\n"
    try:
        where = f"FROM {emu.view} WHERE name = 's03_00.txt'"
        pinned = run(
            emu,
            f"SELECT id, currentVersion, dataFileHandleId, dataFileMD5Hex, dataFileSizeBytes {where}",
            tmp_path / "pinned",
        )
        assert_tree_matches(tmp_path / "pinned", {"s03_00.txt": md5(content(3, 0))})
        assert [r.version for r in pinned] == [1]
        emu.reset_stats()
        current = run(
            emu, f"SELECT id, dataFileHandleId, dataFileMD5Hex, dataFileSizeBytes {where}", tmp_path / "current"
        )
        # the row describes version 1 and the file is at 2 now: its bundle, not the row, says what to fetch
        assert_tree_matches(tmp_path / "current", {"s03_00.txt": md5("version two\n")})
        assert [r.version for r in current] == [2]
        assert bundle_calls(emu.stats()["api_by_route"]) == 1
    finally:
        emu.set_knobs(view_lag=False)


def test_a_query_under_faults_is_byte_exact(tmp_path):
    """Every fault decision hashes (seed, request, occurrence): on an emulator of its own (the same ids every time)
    and with one worker (the same requests in the same batches every time), seed 3 gives the same faults on every
    run (4 of its 19 API calls answered 5xx), whatever ran before and however the suite is spread over processes."""
    with Emulator(data_dir=str(tmp_path / "emu"), query_page_rows=40, query_pending_polls=1) as emu:
        seed_study(emu)
        emu.set_knobs(fault_api_5xx_rate=0.1, fault_data_cut_rate=0.2, fault_data_corrupt_rate=0.1, fault_seed=3)
        sql = (
            f"SELECT id, dataFileHandleId, dataFileMD5Hex, dataFileSizeBytes FROM {emu.view} "
            "WHERE assay LIKE '%a%' AND NOT species = 'Human'"
        )
        results = run(emu, sql, tmp_path / "got", config=TransferConfig(max_workers=1))
        stats = emu.stats()
    tmp_path = tmp_path / "got"
    expected = selected(lambda i, j: "a" in assay(i, j) and j % 2 == 1)
    assert_tree_matches(tmp_path, expected)
    assert len(results) == len(expected) and not results.failures
    assert sum(stats["api_by_status"].get(status, 0) for status in ("500", "502", "503")) > 0


def test_queries_that_cannot_select_files_are_clear_errors(emu, tmp_path):
    with pytest.raises(ConfigError, match="selects no 'id' column"):
        run(emu, f"SELECT name FROM {emu.view}", tmp_path)
    with pytest.raises(BadRequestError):
        run(emu, f"SELECT id FROM {emu.view} WHERE nope = 1", tmp_path)
    with pytest.raises(BadRequestError):
        run(emu, f"SELECT id FROM {emu.view}; DROP TABLE x", tmp_path)
    assert not any(tmp_path.iterdir())  # nothing is written before the query has answered
    empty = run(emu, f"SELECT id FROM {emu.view} WHERE assay = 'none'", tmp_path / "none")
    assert len(empty) == 0 and empty.report.query.rows == 0


def test_a_sync_planned_from_a_view_takes_no_bundle_call_and_the_lagging_file_takes_its_own(emu, tmp_path):
    with Platform(emu.endpoint, token=emu.token) as platform:
        results = sync_from_platform(emu.project, tmp_path, platform=platform, view=emu.view, manifest="suppress")
    assert_tree_matches(tmp_path, tree())
    routes = emu.stats()["api_by_route"]
    n = N_FOLDERS * PER_FOLDER
    assert not any("bundle2" in route for route in routes), routes
    listings = routes["POST /repo/v1/entity/children"]
    assert sum(routes.values()) <= listings + query_calls(routes) + math.ceil(n / 100) + 4, routes
    assert len(results) == n and not results.failures
    # annotations come from the view's columns
    one = next(r for r in results if r.path.name == "s00_00.txt")
    assert one.annotations["assay"] == [assay(0, 0)]

    changed = emu.resolve(emu.project, "batch07/s07_07.txt")
    emu.set_knobs(view_lag=True)
    emu.refresh_views()
    emu.add_version(changed, "edited after the view was read\n")
    EDITED[7, 7] = "edited after the view was read\n"
    emu.reset_stats()
    try:
        with Platform(emu.endpoint, token=emu.token) as platform:
            again = sync_from_platform(emu.project, tmp_path, platform=platform, view=emu.view, manifest="suppress")
    finally:
        emu.set_knobs(view_lag=False)
    assert_tree_matches(tmp_path, tree())
    assert [r.path.name for r in again if r.status is SyncStatus.DOWNLOADED] == ["s07_07.txt"]
    assert bundle_calls(emu.stats()["api_by_route"]) == 1


def test_external_files_known_from_their_rows_are_fetched_or_fail_alone(tmp_path):
    spec = {
        "projects": [
            {
                "name": "ext",
                "children": [
                    {
                        "type": "file",
                        "name": "y.csv",
                        "external": "sftp://user:pw@sftp.example.org/y.csv",
                        "md5": "0" * 32,
                        "size": 5,
                    },
                    {"type": "file", "name": "x.csv", "external": True, "content": "a,b\n"},
                    {"type": "file", "name": "p.txt", "content": "platform\n"},
                    {"type": "entityview", "name": "files", "scope": [""]},
                ],
            }
        ]
    }
    with Emulator(data_dir=str(tmp_path / "emu")) as emu:
        view = emu.resolve(emu.seed_spec(spec)["ext"], "files")
        results = run(emu, f"SELECT * FROM {view}", tmp_path / "out", on_error="continue")
        routes = emu.stats()["api_by_route"]
    assert_tree_matches(tmp_path / "out", {"x.csv": md5("a,b\n"), "p.txt": md5("platform\n")})
    failed = [r for r in results if r.status is SyncStatus.FAILED]
    assert len(failed) == 1 and isinstance(failed[0].error, UnsupportedError)
    assert "sftp://sftp.example.org/y.csv" in str(failed[0].error) and "pw" not in str(failed[0].error)
    assert bundle_calls(routes) == 0
