"""``synclient.sync_from_synapse(container, ...)`` against synapseclient 4.14's models API
``container.sync_from_synapse(...)`` on the same emulated project: the same container tree (files and folders, with
their fields, annotations and paths) and the same files on disk."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

import synclient
from synclient.errors import ConfigError

models = pytest.importorskip("synapseclient.models")

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
                                # handle fileNames that are not the entity names: the models API writes those
                                # (unicode is fine there)
                                {
                                    "type": "file",
                                    "name": "deep.csv",
                                    "file_name": "d\u00e9j\u00e0 vu.csv",
                                    "content": "1,2\n",
                                    "annotations": {"n": [3], "x": [1.5]},
                                }
                            ],
                        },
                        {"type": "folder", "name": "empty", "children": []},
                        {
                            "type": "file",
                            "name": "a.txt",
                            "file_name": "A data.txt",
                            "content": "A",
                            "annotations": {"tissue": ["brain"], "ok": [True]},
                        },
                    ],
                },
                {"type": "file", "name": "b.txt", "content": "B", "annotations": {"tags": ["x", "y,z"]}},
            ],
        }
    ]
}
FILE_FIELDS = (
    "id",
    "name",
    "etag",
    "created_on",
    "modified_on",
    "created_by",
    "modified_by",
    "parent_id",
    "version_number",
    "version_label",
    "is_latest_version",
    "data_file_handle_id",
)
FOLDER_FIELDS = ("id", "name", "etag", "created_on", "modified_on", "created_by", "modified_by", "parent_id")


def shape(container, root: Path):
    """The container's tree as plain data, paths relative to ``root``."""
    files = sorted(
        (
            tuple(getattr(f, name) for name in FILE_FIELDS),
            dict(f.annotations),
            os.path.relpath(f.path, root) if f.path else None,
            f.file_handle.content_md5,
        )
        for f in container.files
    )
    folders = sorted((tuple(getattr(d, name) for name in FOLDER_FIELDS), shape(d, root)) for d in container.folders)
    return {"files": files, "folders": folders}


MANIFESTS = ("SYNAPSE_METADATA_MANIFEST.tsv", "manifest.csv")  # they hold the root's path: compared elsewhere


def disk(root: Path):
    return {
        p.relative_to(root).as_posix(): hashlib.md5(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file() and ".synclient" not in p.parts and p.name not in MANIFESTS
    }


@pytest.mark.parametrize("kind", ["Project", "Folder"])
def test_same_tree_as_the_models_api(emulator, synapse_login, tmp_path, kind):
    project = emulator.seed_spec(SPEC)["p"]
    syn = synapse_login(emulator)
    root_id = project if kind == "Project" else next(c["id"] for c in syn.getChildren(project) if c["name"] == "d")
    container = getattr(models, kind)
    theirs = container(id=root_id).sync_from_synapse(path=str(tmp_path / "theirs"), synapse_client=syn)
    ours = synclient.sync_from_synapse(container(id=root_id), path=str(tmp_path / "ours"), synapse_client=syn)
    assert type(ours) is type(theirs) and ours.id == theirs.id and ours.name == theirs.name
    assert ours.etag == theirs.etag and ours.parent_id == theirs.parent_id
    assert shape(ours, tmp_path / "ours") == shape(theirs, tmp_path / "theirs")
    assert disk(tmp_path / "ours") == disk(tmp_path / "theirs")
    assert (tmp_path / "ours" / "d" / "empty").is_dir() if kind == "Project" else True
    assert "d/A data.txt" in disk(tmp_path / "ours") or kind == "Folder"


def test_not_recursive_and_metadata_only(emulator, synapse_login, tmp_path):
    project = emulator.seed_spec(SPEC)["p"]
    syn = synapse_login(emulator)
    # (synapseclient 4.14 with recursive=False fails writing a manifest into a folder it did not create)
    theirs = models.Project(id=project).sync_from_synapse(
        path=str(tmp_path / "theirs"), recursive=False, manifest="suppress", synapse_client=syn
    )
    ours = synclient.sync_from_synapse(
        models.Project(id=project),
        path=str(tmp_path / "ours"),
        recursive=False,
        manifest="suppress",
        synapse_client=syn,
    )
    assert shape(ours, tmp_path / "ours") == shape(theirs, tmp_path / "theirs")
    assert [f.name for f in ours.files] == ["b.txt"] and [d.name for d in ours.folders] == ["d"]
    assert not (tmp_path / "ours" / "d" / "a.txt").exists()


def test_metadata_only(emulator, synapse_login, tmp_path):
    """Nothing downloaded before (synapseclient answers the path of a copy its cache has, see the cache tests)."""
    project = emulator.seed_spec(SPEC)["p"]
    syn = synapse_login(emulator)
    theirs = models.Project(id=project).sync_from_synapse(
        path=str(tmp_path / "t2"), download_file=False, synapse_client=syn
    )
    ours = synclient.sync_from_synapse(
        models.Project(id=project), path=str(tmp_path / "o2"), download_file=False, synapse_client=syn
    )
    assert emulator.stats()["data_requests"] == 0
    assert shape(ours, tmp_path / "o2") == shape(theirs, tmp_path / "t2")


def test_bad_arguments(emulator, synapse_login, tmp_path):
    syn = synapse_login(emulator)
    project = emulator.seed_spec(SPEC)["p"]
    with pytest.raises(ValueError, match="Invalid manifest value"):
        synclient.sync_from_synapse(models.Project(id=project), path=str(tmp_path), manifest="x", synapse_client=syn)
    with pytest.raises(ConfigError, match="include_types must name 'file'"):
        synclient.sync_from_synapse(
            models.Project(id=project), path=str(tmp_path), include_types=["folder"], synapse_client=syn
        )


def test_without_a_path_into_synapseclients_cache(emulator, synapse_login, tmp_path):
    project = emulator.seed_spec(SPEC)["p"]
    theirs_syn = synapse_login(emulator)
    ours_syn = synapse_login(emulator, cache_root=tmp_path / "our-cache")
    theirs = models.Project(id=project).sync_from_synapse(synapse_client=theirs_syn)
    before = emulator.stats()["data_requests"]
    ours = synclient.sync_from_synapse(models.Project(id=project), synapse_client=ours_syn)
    assert emulator.stats()["data_requests"] - before == 3
    assert shape(ours, tmp_path / "our-cache") == shape(theirs, Path(theirs_syn.cache.cache_root_dir))
