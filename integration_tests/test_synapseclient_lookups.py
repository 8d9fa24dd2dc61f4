"""Fidelity: the official synapseclient 4.14's lookups and headers against the emulator (issue 30, items 1 and 2).

``syn.findEntityId`` posts an EntityLookupRequest to ``POST /entity/child`` (synapseclient/client.py) and reads a 404
as "no such entity"; ``Project(name=...).get()`` looks the project up the same way with a null ``parentId``.
No patching of synapseclient: it only gets the emulator's endpoints and token.
"""

from __future__ import annotations

import pytest

synapseclient = pytest.importorskip("synapseclient")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # findEntityId, syn.get: deprecated in 4.14

SPEC = {
    "projects": [
        {
            "name": "study",
            "children": [
                {"type": "folder", "name": "raw", "children": [{"type": "file", "name": "a.txt", "content": "A"}]},
                {"type": "file", "name": "v.txt", "versions": [{"content": "v1"}, {"content": "v22"}]},
            ],
        }
    ]
}


@pytest.fixture
def study(emulator, synapse_login):
    project = emulator.seed_spec(SPEC)["study"]
    return synapse_login(emulator), project, lambda path: emulator.resolve(project, path)


def test_find_entity_id(study):
    syn, project, ids = study
    assert syn.findEntityId("raw", project) == ids("raw")  # an existing folder, by its parent's id
    assert syn.findEntityId("a.txt", syn.get(ids("raw"), downloadFile=False)) == ids("raw/a.txt")  # by the entity
    assert syn.findEntityId("study") == project  # a project, by name (parentId null)
    assert syn.findEntityId("missing", project) is None  # the 404 Synapse answers
    assert syn.findEntityId("missing") is None


def test_project_get_by_name(study):
    from synapseclient.models import Folder, Project

    syn, project, ids = study
    assert Project(name="study").get(synapse_client=syn).id == project
    assert Folder(name="raw", parent_id=project).get(synapse_client=syn).id == ids("raw")


def test_headers_of_a_named_version(study):
    """synapseclient posts ``targetVersionNumber`` as given; the answer is the header of that version."""
    syn, _, ids = study
    answer = syn.restPOST(
        "/entity/header", body='{"references": [{"targetId": "%s", "targetVersionNumber": 1}]}' % ids("v.txt")
    )
    assert [(h["versionNumber"], h["isLatestVersion"]) for h in answer["results"]] == [(1, False)]
