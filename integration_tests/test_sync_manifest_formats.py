"""Which manifests a sync writes (SyncOptions.manifest_formats), and what a later run does with them."""

from __future__ import annotations

import os

import pytest
from synctrees import CSV_MANIFEST, MANIFEST

from synclient import Platform, SyncOptions, sync_from_platform

SPEC = {
    "projects": [
        {
            "name": "p",
            "children": [
                {
                    "type": "folder",
                    "name": "d",
                    "children": [
                        {"type": "file", "name": "a.txt", "content": "A", "annotations": {"tissue": ["brain"]}}
                    ],
                },
                {"type": "folder", "name": "empty", "children": []},
                {"type": "file", "name": "b.txt", "content": "B"},
            ],
        }
    ]
}


def _manifests(root):
    return set(
        os.path.relpath(os.path.join(folder, name), root)
        for folder, dirs, files in os.walk(root)
        for name in files
        if name in (MANIFEST, CSV_MANIFEST)
    )


@pytest.fixture
def sync(emulator, tmp_path):
    project = emulator.seed_spec(SPEC)["p"]
    platform = Platform(endpoint=emulator.endpoint, token=emulator.token)

    def run(**options):
        return sync_from_platform(project, tmp_path, platform=platform, options=SyncOptions(progress=False, **options))

    return run


@pytest.mark.parametrize(
    "formats, expected",
    [
        ("tsv", [MANIFEST, f"d/{MANIFEST}"]),
        ("csv", [CSV_MANIFEST, f"d/{CSV_MANIFEST}", f"empty/{CSV_MANIFEST}"]),
        (("tsv", "csv"), [CSV_MANIFEST, MANIFEST, f"d/{CSV_MANIFEST}", f"d/{MANIFEST}", f"empty/{CSV_MANIFEST}"]),
    ],
)
def test_manifest_formats_choose_the_files(sync, tmp_path, formats, expected):
    sync(manifest_formats=formats)
    assert _manifests(tmp_path) == set(expected)
    sync(manifest_formats=formats, manifest="root")
    assert _manifests(tmp_path) == {name for name in expected if "/" not in name}


def test_a_format_dropped_later_goes_but_a_users_manifest_csv_stays(sync, tmp_path):
    sync()
    sync(manifest_formats="tsv")  # our manifest.csv files are stale now
    assert _manifests(tmp_path) == {MANIFEST, f"d/{MANIFEST}"}
    (tmp_path / "d" / CSV_MANIFEST).write_text("the user's own\n")  # a common name: never synclient's by its name
    sync(manifest_formats="tsv")
    assert (tmp_path / "d" / CSV_MANIFEST).read_text() == "the user's own\n"
    sync(manifest_formats="csv")  # the CSV is written again (as synapseclient does), the TSV goes
    assert _manifests(tmp_path) == {CSV_MANIFEST, f"d/{CSV_MANIFEST}", f"empty/{CSV_MANIFEST}"}
    assert (tmp_path / "d" / CSV_MANIFEST).read_text().startswith("path,parentId,")


def test_a_remote_file_named_manifest_csv_keeps_its_path(emulator, tmp_path):
    spec = {
        "projects": [
            {
                "name": "p",
                "children": [
                    {"type": "file", "name": CSV_MANIFEST, "content": "remote bytes"},
                    {"type": "file", "name": "b.txt", "content": "B"},
                ],
            }
        ]
    }
    project = emulator.seed_spec(spec)["p"]
    platform = Platform(endpoint=emulator.endpoint, token=emulator.token)
    for _ in range(2):  # listed now, then indexed from before
        sync_from_platform(project, tmp_path, platform=platform, options=SyncOptions(progress=False))
        assert (tmp_path / CSV_MANIFEST).read_text() == "remote bytes"
        assert f"{CSV_MANIFEST}\t" in (tmp_path / MANIFEST).read_text()  # the TSV is written, and lists it


@pytest.mark.parametrize("collision", ["keep.local", "keep.both"])
def test_a_remote_manifest_csv_takes_the_place_of_ours_whatever_if_collision(emulator, tmp_path, collision):
    """Our manifest.csv is synclient's own (recorded in the index), not a local change to keep."""
    project = emulator.seed_spec(
        {"projects": [{"name": "p", "children": [{"type": "file", "name": "b.txt", "content": "B"}]}]}
    )["p"]
    platform = Platform(endpoint=emulator.endpoint, token=emulator.token)
    sync_from_platform(project, tmp_path, platform=platform, options=SyncOptions(progress=False))
    assert (tmp_path / CSV_MANIFEST).read_text().startswith("path,parentId,")
    emulator.add_file(project, CSV_MANIFEST, b"remote bytes")
    sync_from_platform(
        project, tmp_path, platform=platform, options=SyncOptions(progress=False, if_collision=collision)
    )
    assert (tmp_path / CSV_MANIFEST).read_text() == "remote bytes"
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == [
        MANIFEST,
        "b.txt",
        CSV_MANIFEST,
    ]  # no manifest(1).csv copy
