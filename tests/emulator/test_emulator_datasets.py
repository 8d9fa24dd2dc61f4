"""Datasets and dataset collections: the seed spec and the JSON of every route that shows them."""

from __future__ import annotations

import hashlib

import pytest
from emuhelpers import Api, assert_spec_node_refused

DATASET = "org.sagebionetworks.repo.model.table.Dataset"
COLLECTION = "org.sagebionetworks.repo.model.table.DatasetCollection"

SPEC = {
    "projects": [
        {
            "name": "p",
            "children": [
                {
                    "type": "folder",
                    "name": "d",
                    "children": [
                        {"type": "file", "name": "a.csv", "content": "aaa"},
                        {"type": "dataset", "name": "inner", "items": [{"ref": ["d", "a.csv"]}]},
                    ],
                },
                {"type": "file", "name": "b.csv", "versions": [{"content": "b1"}, {"content": "b22"}]},
                {
                    "type": "dataset",
                    "name": "ds",
                    "items": [{"ref": "d/a.csv", "version": 1}, {"ref": "b.csv"}, {"ref": "b.csv", "version": 1}],
                    "annotations": {"k": ["v"]},
                },
                {"type": "dataset", "name": "empty"},
                {"type": "datasetcollection", "name": "dc", "items": [{"ref": "ds"}, {"ref": "d/inner", "version": 1}]},
            ],
        }
    ]
}


@pytest.fixture
def seeded_datasets(emulator):
    project = emulator.seed_spec(SPEC)["p"]
    return emulator, Api(emulator), project, lambda path: emulator.resolve(project, path)


def test_dataset_json(seeded_datasets):
    emu, api, project, ids = seeded_datasets
    entity = api.get(f"/repo/v1/entity/{ids('ds')}").json()
    assert entity["concreteType"] == DATASET
    assert entity["items"] == [
        {"entityId": ids("d/a.csv"), "versionNumber": 1},
        {"entityId": ids("b.csv"), "versionNumber": 2},
        {"entityId": ids("b.csv"), "versionNumber": 1},
    ]
    assert (entity["versionNumber"], entity["versionLabel"], entity["isLatestVersion"]) == (1, "in progress", True)
    assert (entity["columnIds"], entity["isSearchEnabled"], entity["parentId"]) == ([], False, project)
    md5s = sorted(hashlib.md5(data).hexdigest() for data in (b"aaa", b"b22", b"b1"))
    assert (entity["count"], entity["size"], entity["checksum"]) == (
        3,
        3 + 3 + 2,
        hashlib.md5("".join(md5s).encode()).hexdigest(),
    )  # no separator: NodeDAOImpl
    assert api.get(f"/repo/v1/entity/{ids('ds')}/version/1").json() == entity
    assert api.get(f"/repo/v1/entity/{ids('ds')}/version/2").status_code == 404
    assert api.get(f"/repo/v1/entity/{ids('empty')}").json()["items"] == []


def test_collection_json(seeded_datasets):
    emu, api, project, ids = seeded_datasets
    entity = api.get(f"/repo/v1/entity/{ids('dc')}").json()
    assert entity["concreteType"] == COLLECTION
    assert entity["items"] == [
        {"entityId": ids("ds"), "versionNumber": 1},
        {"entityId": ids("d/inner"), "versionNumber": 1},
    ]
    assert not {"size", "checksum", "count"} & set(entity)  # a Dataset's computed fields only


def test_bundle_headers_type_children_and_columns(seeded_datasets):
    emu, api, project, ids = seeded_datasets
    bundle = api.post(
        f"/repo/v1/entity/{ids('ds')}/bundle2",
        {"includeEntity": True, "includeAnnotations": True, "includeFileHandles": True},
    ).json()
    assert (bundle["entityType"], bundle["fileHandles"]) == ("dataset", [])
    assert bundle["annotations"]["annotations"] == {"k": {"type": "STRING", "value": ["v"]}}
    assert (
        api.post(f"/repo/v1/entity/{ids('dc')}/bundle2", {"includeEntity": True}).json()["entityType"]
        == "datasetcollection"
    )
    assert api.get(f"/repo/v1/entity/{ids('dc')}/type").json()["type"] == COLLECTION
    headers = api.post("/repo/v1/entity/header", {"references": [{"targetId": ids("ds")}]}).json()["results"]
    assert (headers[0]["type"], headers[0]["versionLabel"]) == (DATASET, "in progress")
    listed = api.post(
        "/repo/v1/entity/children", {"parentId": project, "includeTypes": ["dataset", "datasetcollection"]}
    ).json()
    assert [(h["name"], h["type"]) for h in listed["page"]] == [("dc", COLLECTION), ("ds", DATASET), ("empty", DATASET)]
    files_only = api.post("/repo/v1/entity/children", {"parentId": project, "includeTypes": ["file"]}).json()
    assert [h["name"] for h in files_only["page"]] == ["b.csv"]
    inner = api.post("/repo/v1/entity/children", {"parentId": ids("d"), "includeTypes": ["dataset"]}).json()
    assert [h["name"] for h in inner["page"]] == ["inner"]
    assert api.get(f"/repo/v1/entity/{ids('ds')}/column").json() == {"results": [], "totalNumberOfResults": 0}
    assert api.get(f"/repo/v1/entity/{ids('d')}/column").status_code == 400
    versions = api.get(f"/repo/v1/entity/{ids('ds')}/version").json()
    # Synapse skips a table type's current, "in progress" version (NodeManagerImpl.getVersionsOfEntity): no snapshots
    assert versions == {"results": [], "totalNumberOfResults": 0}
    assert api.get(f"/repo/v1/entity/{ids('ds')}/file").status_code == 400


def test_deleting_a_dataset_deletes_its_items(seeded_datasets):
    emu, api, project, ids = seeded_datasets
    dataset_id = ids("ds")
    emu.delete_entity(dataset_id)
    assert emu.store.items(int(dataset_id[3:])) == []


@pytest.mark.parametrize(
    "node, message",
    [
        ({"type": "dataset", "items": {"ref": "f"}}, "items must be a list"),
        ({"type": "dataset", "items": ["f"]}, 'an item must be an object with a "ref"'),
        ({"type": "dataset", "items": [{"ref": ""}]}, "ref must be a non-empty path"),
        ({"type": "dataset", "items": [{"ref": "f", "version": 0}]}, "version must be a positive integer"),
        ({"type": "dataset", "items": [{"ref": "f", "version": True}]}, "version must be a positive integer"),
        ({"type": "dataset", "items": [{"ref": "nope"}]}, "ref 'nope' not found in the project"),
        ({"type": "dataset", "items": [{"ref": "d"}]}, "ref 'd' is a folder, not a file"),
        ({"type": "dataset", "items": [{"ref": "f", "version": 2}]}, "'f' has no version 2"),
        ({"type": "datasetcollection", "items": [{"ref": "f"}]}, "ref 'f' is a file, not a dataset"),
        (
            {"type": "submissionview"},
            "type must be folder, file, link, dataset, datasetcollection, entityview or table",
        ),
    ],
)
def test_bad_dataset_specs_name_the_node(emulator, node, message):
    assert_spec_node_refused(emulator, node, message)
