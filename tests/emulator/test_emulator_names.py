"""Entity names as Synapse takes them, and file handles with a fileName of their own (issue 30, item 20).

Synapse's rule: lib/jdomodels/.../repo/model/jdo/NameValidation.java (trimmed; empty, over 256 characters, or other
than ``[a-zA-Z0-9,_. \\-+()']`` refused, 400 with its reason), applied by NodeManagerImpl.validateNode on every
create and update. ``"names": "unchecked"`` is the documented escape for a hostile server."""

from __future__ import annotations

import pytest
from emuhelpers import Api, assert_spec_node_refused

from synclient.emulator import SpecError
from synclient.emulator.entity_names import InvalidName, synapse_name

INVALID = (
    "Names may only contain: letters, numbers, spaces, underscores, hyphens, periods, plus signs, "
    "apostrophes, and parentheses"
)


@pytest.mark.parametrize("name", ["a.txt", "..", ".", "Raw data (v2), final+1 - it's_ok", "x" * 256, "CON"])
def test_names_synapse_takes(name):
    assert synapse_name(name) == name


@pytest.mark.parametrize(
    "name, reason",
    [
        ("a/b", f"Invalid Name: 'a/b'. {INVALID}"),
        ("a:b", INVALID),
        ("caf\u00e9", INVALID),
        ("a\\b", INVALID),
        ("tab\there", INVALID),
        ("a*b", INVALID),
        ("x" * 257, "Name length cannot be longer than 256 characters."),
        ("   ", "Name cannot be only whitespace or empty string"),
        ("", "Name cannot be only whitespace or empty string"),
    ],
)
def test_names_synapse_refuses_with_its_reason(name, reason):
    with pytest.raises(InvalidName) as raised:
        synapse_name(name)
    assert reason in str(raised.value)


def test_a_name_is_stored_trimmed_as_synapse_stores_it(emulator, api):
    project = emulator.seed_spec(
        {"projects": [{"name": " p ", "children": [{"type": "file", "name": "\ta.txt ", "content": "x"}]}]}
    )["p"]
    entity = api.get(f"/repo/v1/entity/{emulator.resolve(project, 'a.txt')}").json()
    assert entity["name"] == "a.txt"


@pytest.mark.parametrize("name", ["a/b", "a:b", "r\u00e9sum\u00e9.txt", "a\x00b", "x" * 257])
def test_a_seed_with_a_name_synapse_refuses_fails_whole(emulator, name):
    assert_spec_node_refused(emulator, {"type": "folder", "name": name}, "Name")


def test_a_refused_project_or_link_name_names_its_node(emulator):
    with pytest.raises(SpecError, match=r"projects\[0\]: Invalid Name: 'p:q'"):
        emulator.seed_spec({"projects": [{"name": "p:q"}]})
    with pytest.raises(SpecError, match=r"projects\[0\]\.children\[1\]: Invalid Name"):
        emulator.seed_spec(
            {
                "projects": [
                    {
                        "name": "p",
                        "children": [
                            {"type": "file", "name": "f", "content": "x"},
                            {"type": "link", "name": "to/f", "target": "f"},
                        ],
                    }
                ]
            }
        )
    with pytest.raises(SpecError, match='names must be "synapse" or "unchecked"'):
        emulator.seed_spec({"names": "loose", "projects": []})
    assert emulator.info()["projects"] == {}


def test_unchecked_names_are_a_hostile_servers(emulator, api):
    project = emulator.seed_spec(
        {
            "names": "unchecked",
            "projects": [
                {
                    "name": "p",
                    "children": [
                        {"type": "file", "name": "a/b", "content": "x"},
                        {"type": "file", "name": " pad ", "content": "y"},
                    ],
                }
            ],
        }
    )["p"]
    assert emulator.resolve(project, ["a/b"]) and emulator.resolve(project, [" pad "])  # stored as given
    folder = emulator.add_folder(project, "f")
    with pytest.raises(InvalidName):
        emulator.add_file(folder, "a:b", b"x")
    hostile = emulator.add_file(folder, "a:b", b"x", names="unchecked")
    with pytest.raises(InvalidName):
        emulator.rename_entity(hostile, "c|d")
    emulator.rename_entity(hostile, "c|d", names="unchecked")
    assert api.get(f"/repo/v1/entity/{hostile}").json()["name"] == "c|d"


def test_admin_routes_refuse_with_synapses_reason_unless_unchecked(emulator):
    project = emulator.seed_spec({"projects": [{"name": "p"}]})["p"]
    admin = Api(emulator, token=False)
    refused = admin.post("/emulator/folder", {"parentId": project, "name": "a/b"})
    assert refused.status_code == 400 and f"Invalid Name: 'a/b'. {INVALID}" in refused.text
    assert admin.post("/emulator/folder", {"parentId": project, "name": "a/b", "names": "unchecked"}).status_code == 201
    file_id = admin.post("/emulator/file", {"parentId": project, "name": "f", "content": "x"}).json()["id"]
    assert admin.post(f"/emulator/entity/{file_id}/rename", {"name": "f:g"}).status_code == 400
    assert admin.post(f"/emulator/entity/{file_id}/rename", {"name": "f:g", "names": "unchecked"}).status_code == 200


def _handle(api, entity_id, version=None):
    path = f"/repo/v1/entity/{entity_id}" + (f"/version/{version}" if version else "") + "/bundle2"
    return api.post(path, {"includeEntity": True, "includeFileHandles": True}).json()["fileHandles"][0]


def test_a_file_handle_has_its_own_file_name_per_file_and_per_version(emulator, api):
    project = emulator.seed_spec(
        {
            "projects": [
                {
                    "name": "p",
                    "children": [
                        {"type": "file", "name": "plain", "content": "x"},
                        {"type": "file", "name": "renamed", "file_name": "raw data.csv", "content": "y"},
                        {
                            "type": "file",
                            "name": "v",
                            "file_name": "v.txt",
                            "versions": [
                                {"content": "1"},
                                {"content": "2", "file_name": "d\u00e9j\u00e0 vu/..\\x:y.txt"},
                            ],
                        },
                        {
                            "type": "file",
                            "name": "ext",
                            "external": True,
                            "file_name": "r\u00e9sum\u00e9.pdf",
                            "content": "z",
                        },
                        {
                            "type": "file",
                            "name": "sftp",
                            "external": "sftp://h.example.org/data/remote.csv",
                            "file_name": "mine.csv",
                        },
                    ],
                }
            ]
        }
    )["p"]
    assert _handle(api, emulator.resolve(project, "plain"))["fileName"] == "plain"  # the default: the entity's
    assert _handle(api, emulator.resolve(project, "renamed"))["fileName"] == "raw data.csv"
    versioned = emulator.resolve(project, "v")
    assert _handle(api, versioned, 1)["fileName"] == "v.txt"
    assert _handle(api, versioned, 2)["fileName"] == "d\u00e9j\u00e0 vu/..\\x:y.txt"  # any string: a server's
    assert _handle(api, emulator.resolve(project, "ext"))["fileName"] == "r\u00e9sum\u00e9.pdf"
    assert _handle(api, emulator.resolve(project, "sftp"))["fileName"] == "mine.csv"


def test_a_bad_file_name_is_refused(emulator):
    assert_spec_node_refused(emulator, {"type": "file", "file_name": "", "content": "x"}, "file_name must be")
    assert_spec_node_refused(
        emulator, {"type": "file", "versions": [{"content": "x", "file_name": 3}]}, "file_name must be"
    )


def test_live_files_and_versions_take_a_file_name(emulator, api):
    project = emulator.seed_spec({"projects": [{"name": "p"}]})["p"]
    added = emulator.add_file(project, "data", b"x", file_name="data (2).csv")
    assert _handle(api, added)["fileName"] == "data (2).csv"
    emulator.add_version(added, b"y", file_name="r\u00e9sum\u00e9.csv")
    assert _handle(api, added, 2)["fileName"] == "r\u00e9sum\u00e9.csv"
    emulator.add_version(added, b"z")
    assert _handle(api, added, 3)["fileName"] == "data"
    admin = Api(emulator, token=False)
    over_http = admin.post("/emulator/file", {"parentId": project, "name": "h", "content": "x", "file_name": "h.csv"})
    assert _handle(api, over_http.json()["id"])["fileName"] == "h.csv"
    admin.post(f"/emulator/entity/{over_http.json()['id']}/version", {"content": "w", "file_name": "w.csv"})
    assert _handle(api, over_http.json()["id"], 2)["fileName"] == "w.csv"
