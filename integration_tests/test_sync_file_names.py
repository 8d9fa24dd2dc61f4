"""``sync_from_platform(..., file_names=...)``: files under their entity names (the default, what ``synclient get``
does) or under their handles' ``fileName`` (synapseclient's rule, the drop-ins'), at one bundle call per file."""

from __future__ import annotations

import pytest
from synctrees import local_tree

from synclient import Platform, SyncStatus, sync_from_platform

SPEC = {
    "projects": [
        {
            "name": "p",
            "children": [
                {"type": "file", "name": "entity.csv", "file_name": "handle.csv", "content": "1"},
                {
                    "type": "folder",
                    "name": "d",
                    "children": [
                        {"type": "file", "name": "plain.txt", "content": "2"},
                        {
                            "type": "file",
                            "name": "v.txt",
                            "versions": [
                                {"content": "a", "file_name": "old.txt"},
                                {"content": "b", "file_name": "r\u00e9sum\u00e9.txt"},
                            ],
                        },
                    ],
                },
            ],
        }
    ]
}


@pytest.mark.parametrize(
    "file_names, expected",
    [
        ("entity", {"entity.csv", "d/plain.txt", "d/v.txt"}),
        ("handle", {"handle.csv", "d/plain.txt", "d/r\u00e9sum\u00e9.txt"}),
    ],
)
def test_files_land_under_the_names_asked_for_and_a_resync_fetches_nothing(emulator, tmp_path, file_names, expected):
    project = emulator.seed_spec(SPEC)["p"]
    with Platform(endpoint=emulator.endpoint, token=emulator.token) as platform:
        first = sync_from_platform(
            project, tmp_path, platform=platform, progress=False, synapse_cache=False, file_names=file_names
        )
        assert set(local_tree(tmp_path)) == expected and len(first) == 3
        bundles = emulator.stats()["api_by_route"]["POST /repo/v1/entity/{id}/version/{v}/bundle2"]
        assert bundles == 3  # one per file: handle names take the call the pipeline then uses
        emulator.reset_stats()
        again = sync_from_platform(
            project, tmp_path, platform=platform, progress=False, synapse_cache=False, file_names=file_names
        )
    assert {r.status for r in again} == {SyncStatus.SKIPPED} and emulator.stats()["data_requests"] == 0
    assert set(local_tree(tmp_path)) == expected
