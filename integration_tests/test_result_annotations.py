"""Every FileResult carries its file's annotations, from the bundle call a sync already makes (no extra call) and,
on a re-sync, from the index (no call at all)."""

from __future__ import annotations

from synclient import Platform, SyncStatus, sync_from_platform

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
                            "type": "file",
                            "name": "a.txt",
                            "content": "A",
                            "annotations": {"tissue": ["brain"], "n": [3, 4], "x": [1.5], "ok": [True]},
                        }
                    ],
                },
                {"type": "file", "name": "b.txt", "content": "B", "annotations": {"tags": ["x", "y,z"]}},
                {"type": "file", "name": "plain.bin", "content": "P"},
            ],
        }
    ]
}
EXPECTED = {
    "a.txt": {"tissue": ["brain"], "n": [3, 4], "x": [1.5], "ok": [True]},
    "b.txt": {"tags": ["x", "y,z"]},
    "plain.bin": {},
}


def _by_name(results):
    return {result.path.name: result for result in results}


def test_results_carry_annotations_at_no_extra_call(emulator, tmp_path, request):
    project = emulator.seed_spec(SPEC)["p"]
    platform = Platform(endpoint=emulator.endpoint, token=emulator.token)
    request.addfinalizer(platform.close)
    # before annotations were in every result, a sync without a manifest asked for none: the call count of that
    # sync (listings + one bundle per file + URL batches) is the bound
    first = sync_from_platform(project, tmp_path / "one", platform=platform, manifest="suppress")
    assert {name: r.annotations for name, r in _by_name(first).items()} == EXPECTED
    second = sync_from_platform(project, tmp_path / "two", platform=platform, manifest="all")
    assert {name: r.annotations for name, r in _by_name(second).items()} == EXPECTED
    # the root entity, 2 listings, 3 bundles, 1 URL batch
    assert first.report.rest_calls == second.report.rest_calls == 1 + 2 + 3 + 1

    again = sync_from_platform(project, tmp_path / "one", platform=platform)  # unchanged: from the index
    assert {r.status for r in again} == {SyncStatus.SKIPPED}
    assert again.report.rest_calls == 1 + 2  # the root and the listings only
    assert {name: r.annotations for name, r in _by_name(again).items()} == EXPECTED
    assert all(r.entity is None for r in again)


def test_entity_details_keep_the_entity_record(emulator, tmp_path, request):
    project = emulator.seed_spec(SPEC)["p"]
    platform = Platform(endpoint=emulator.endpoint, token=emulator.token)
    request.addfinalizer(platform.close)
    sync_from_platform(project, tmp_path / "out", platform=platform)
    again = sync_from_platform(project, tmp_path / "out", platform=platform, entity_details=True)
    assert {r.status for r in again} == {SyncStatus.SKIPPED}
    assert again.report.rest_calls == 1 + 2 + 3  # a bundle per file, even unchanged ones: they carry the record
    for result in again:
        assert result.entity["id"] == result.entity_id and result.entity["name"] == result.path.name
        assert result.entity["versionNumber"] == result.version and "etag" in result.entity
    assert _by_name(again)["a.txt"].annotations == EXPECTED["a.txt"]
