"""``--min-size``/``--max-size``/``--min-age``/``--max-age`` and ``--order-by`` (issue 35) end to end against the
emulator: files left out before any URL or download (and, where the listing or a view's row tells, before any
bundle), never deleted by ``--delete``, counted apart by the dry run; downloads started in the stated order."""

from __future__ import annotations

from pathlib import Path
from typing import List

import pytest

from synclient import Platform, SyncStatus, download_many, download_query, sync_from_platform
from synclient.events import PlannedFile, SyncObserver

BUNDLE = "POST /repo/v1/entity/{id}/version/{v}/bundle2"
URL_BATCH = "POST /file/v1/fileHandle/batch"

#: small.txt (10 B, 2020), mid.txt (2 KiB, the seed's time: now), big.txt (5000 B, 2021)
SPEC = {
    "projects": [
        {
            "name": "p",
            "children": [
                {"type": "file", "name": "small.txt", "content": "s" * 10, "modifiedOn": "2020-01-01T00:00:00.000Z"},
                {"type": "file", "name": "mid.txt", "content": "m" * 2048},
                {"type": "file", "name": "big.txt", "content": "b" * 5000, "modifiedOn": "2021-01-01T00:00:00.000Z"},
                {"type": "entityview", "name": "v", "scope": [""]},
            ],
        }
    ]
}


@pytest.fixture
def emu(emulator):
    emulator.ids = emulator.seed_spec(SPEC)
    emulator.project = emulator.ids["p"]
    emulator.refresh_views()
    emulator.platform = Platform(endpoint=emulator.endpoint, token=emulator.token)
    return emulator


def files_in(path: Path) -> List[str]:
    return sorted(p.name for p in path.iterdir() if p.suffix in (".txt", ".bin"))


def test_size_filters_leave_files_out_before_any_url_or_download(emu, tmp_path):
    emu.reset_stats()
    results = sync_from_platform(emu.project, tmp_path / "a", platform=emu.platform, min_size="1k", max_size="4k")
    assert files_in(tmp_path / "a") == ["mid.txt"]
    assert [r.path.name for r in results if r.status is SyncStatus.DOWNLOADED] == ["mid.txt"]
    assert results.report.filtered == 2 and results.report.filters == {"min_size": 1024, "max_size": 4096}
    assert "2 files left out by the filters" in results.report.summary()
    stats = emu.stats()
    assert stats["data_requests"] == 1 and stats["api_by_route"][URL_BATCH] == 1

    emu.reset_stats()  # everything left out: not one URL batch, not one byte
    results = sync_from_platform(emu.project, tmp_path / "b", platform=emu.platform, min_size="1G")
    assert files_in(tmp_path / "b") == [] and results.report.filtered == 3
    assert URL_BATCH not in emu.stats()["api_by_route"] and emu.stats()["data_requests"] == 0


def test_age_filters_judge_by_the_listings_modified_on_with_no_bundle_for_files_left_out(emu, tmp_path):
    emu.reset_stats()
    results = sync_from_platform(emu.project, tmp_path / "new", platform=emu.platform, max_age="1y")
    assert files_in(tmp_path / "new") == ["mid.txt"] and results.report.filtered == 2
    assert emu.stats()["api_by_route"][BUNDLE] == 1  # the listing's modifiedOn left the others out
    emu.reset_stats()
    old = sync_from_platform(emu.project, tmp_path / "old", platform=emu.platform, min_age="2020-06-01")
    assert files_in(tmp_path / "old") == ["small.txt"] and old.report.filtered == 2
    assert emu.stats()["api_by_route"][BUNDLE] == 1
    # bounds included: exactly the file's modifiedOn
    exact = sync_from_platform(emu.project, tmp_path / "x", platform=emu.platform, min_age="2021-01-01T00:00:00Z")
    assert files_in(tmp_path / "x") == ["big.txt", "small.txt"] and exact.report.filtered == 1


def test_a_resync_judges_from_the_listing_and_the_index_with_no_call_per_file(emu, tmp_path):
    sync_from_platform(emu.project, tmp_path, platform=emu.platform)
    emu.reset_stats()
    again = sync_from_platform(emu.project, tmp_path, platform=emu.platform, max_size="4k", max_age="10y")
    assert BUNDLE not in emu.stats()["api_by_route"] and emu.stats()["data_requests"] == 0
    assert again.report.filtered == 1 and again.report.skipped == 2  # big.txt: left out by its indexed size
    assert files_in(tmp_path) == ["big.txt", "mid.txt", "small.txt"]  # and still there


def test_delete_leaves_files_left_out_by_the_filters_alone(emu, tmp_path):
    sync_from_platform(emu.project, tmp_path, platform=emu.platform)
    for name in ("small.txt", "mid.txt"):
        emu.delete_entity(emu.resolve(emu.project, name))
    results = sync_from_platform(emu.project, tmp_path, platform=emu.platform, delete=True, max_size="1k")
    # small.txt: gone remotely and within the filters: deleted; mid.txt: gone but 2 KiB, outside them: kept (as
    # rclone judges a destination's file by its own size); big.txt: listed, left out: neither fetched nor deleted
    assert sorted(r.path.name for r in results if r.status is SyncStatus.DELETED) == ["small.txt"]
    assert files_in(tmp_path) == ["big.txt", "mid.txt"] and results.report.filtered == 1
    plain = sync_from_platform(emu.project, tmp_path, platform=emu.platform, delete=True)
    assert [r.path.name for r in plain if r.status is SyncStatus.DELETED] == ["mid.txt"]
    assert files_in(tmp_path) == ["big.txt"]


def test_the_dry_run_lists_with_the_filters_and_counts_the_rest_apart(emu, tmp_path):
    plan = sync_from_platform(
        emu.project, tmp_path / "t", platform=emu.platform, dry_run=True, max_size="4k", order_by="name,desc"
    )
    assert sorted(e.rel_path for e in plan.fetch_entries) == ["mid.txt", "small.txt"]
    assert plan.filtered == 1 and "1 file left out by the filters" in plan.summary()
    document = plan.to_json()
    assert document["filtered"] == 1 and document["filters"] == {"max_size": 4096, "order_by": "name,descending"}
    assert not (tmp_path / "t").exists()


def test_a_query_over_a_view_is_filtered_by_its_rows_with_no_bundle_call(emu, tmp_path):
    view = emu.ids["p/v"] if "p/v" in emu.ids else emu.resolve(emu.project, "v")
    emu.reset_stats()
    results = download_query(
        f"SELECT * FROM {view}", tmp_path, platform=emu.platform, max_size="4k", max_age="1y", synapse_cache=False
    )
    assert files_in(tmp_path) == ["mid.txt"] and results.report.filtered == 2
    routes = emu.stats()["api_by_route"]
    assert BUNDLE not in routes and routes[URL_BATCH] == 1 and emu.stats()["data_requests"] == 1


class StartOrder(SyncObserver):
    """The order files' first bytes arrive: with one worker, the order their downloads start."""

    def __init__(self) -> None:
        self.started: List[str] = []

    def bytes_transferred(self, file: PlannedFile, count: int) -> None:
        if file.path.name not in self.started:
            self.started.append(file.path.name)


ORDER_SPEC = {
    "projects": [
        {
            "name": "o",
            "children": [
                {
                    "type": "file",
                    "name": f"f{i}.bin",
                    "size": size,
                    "seed": i,
                    "modifiedOn": f"2026-01-0{1 + day}T00:00:00.000Z",
                }
                for i, (size, day) in enumerate([(300, 0), (100, 3), (500, 6), (200, 2), (400, 5), (50, 1)])
            ],
        }
    ]
}


@pytest.mark.parametrize(
    "order_by, expected",
    [
        (None, [0, 1, 2, 3, 4, 5]),  # the default: the order the list gives
        ("size", [5, 1, 3, 0, 4, 2]),
        ("size,descending", [2, 4, 0, 3, 1, 5]),
        ("name,desc", [5, 4, 3, 2, 1, 0]),
        ("modtime", [0, 5, 3, 1, 4, 2]),
    ],
)
def test_downloads_start_in_the_stated_order(emulator, tmp_path, order_by, expected):
    project = emulator.seed_spec(ORDER_SPEC)["o"]
    ids = [emulator.resolve(project, f"f{i}.bin") for i in range(6)]
    observer = StartOrder()
    download_many(
        ids,
        tmp_path,
        platform=Platform(endpoint=emulator.endpoint, token=emulator.token),
        max_workers=1,  # one download at a time, and every file planned before the URL batch (< 100 files)
        order_by=order_by,
        observer=observer,
        synapse_cache=False,
    )
    assert observer.started == [f"f{i}.bin" for i in expected]


def test_the_download_cart_is_filtered_by_its_manifest_rows_and_keeps_what_was_left_out(emu, tmp_path):
    import csv

    import requests

    from synclient import download_list

    names = ("small.txt", "mid.txt", "big.txt")
    items = [{"fileEntityId": emu.resolve(emu.project, name)} for name in names]
    added = requests.post(
        emu.endpoint + "/repo/v1/download/list/add",
        json={"batchToAdd": items},
        headers={"Authorization": f"Bearer {emu.token}"},
        timeout=60,
    )
    assert added.status_code == 200, added.text
    emu.reset_stats()
    emu.set_knobs(record_exchanges=100)
    results = download_list(tmp_path, platform=emu.platform, max_size="4k", max_age="1y", synapse_cache=False)
    assert files_in(tmp_path) == ["mid.txt"] and results.report.filtered == 2
    assert BUNDLE not in emu.stats()["api_by_route"]
    assert emu.stats()["data_requests"] == 2  # the cart's manifest, then mid.txt
    asked = [
        item["associateObjectId"]
        for exchange in emu.exchanges()
        if exchange.path == "/file/v1/fileHandle/batch"
        for item in exchange.request["requestedFiles"]
        if str(item["associateObjectId"]).startswith("syn")  # (not the cart manifest's own handle)
    ]
    assert asked == [emu.resolve(emu.project, "mid.txt")]  # no URL for a file left out
    with open(tmp_path / "manifest.csv", newline="", encoding="utf-8") as handle:
        errors = {row["name"]: row["error"] for row in csv.DictReader(handle)}
    assert errors == {
        "mid.txt": "",
        "small.txt": "not downloaded: left out by the filters",
        "big.txt": "not downloaded: left out by the filters",
    }
    remaining = {row.file_entity_id for row in emu.platform.download_list_available()}
    assert remaining == {emu.resolve(emu.project, "small.txt"), emu.resolve(emu.project, "big.txt")}
