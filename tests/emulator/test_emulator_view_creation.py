"""Issue 34: a client makes its own view. ``POST /entity`` (project, folder, entity view), the column routes,
``PUT annotations2``, ``DELETE /entity/{id}`` (trash can, ``skipTrashCan``), the create-permission knobs, the scope
limit, a view's build time (202 until built) and a lagging view built from the last refresh."""

from __future__ import annotations

import pytest
import requests
from emuhelpers import Api

from synclient.emulator.entity_routes import CERTIFIED_ONLY, PROJECT_SCOPE_TOO_BIG, SCOPE_TOO_BIG
from synclient.emulator.process import EmulatorProcess, Seed

PROJECT = "org.sagebionetworks.repo.model.Project"
FOLDER = "org.sagebionetworks.repo.model.Folder"
VIEW = "org.sagebionetworks.repo.model.table.EntityView"
QUERY = "org.sagebionetworks.repo.model.table.QueryBundleRequest"
SPEC = {
    "projects": [
        {
            "name": "data",
            "children": [
                {
                    "type": "folder",
                    "name": "raw",
                    "children": [
                        {"type": "file", "name": "a.txt", "content": "A", "annotations": {"tissue": ["liver"]}},
                        {
                            "type": "folder",
                            "name": "deep",
                            "children": [
                                {
                                    "type": "file",
                                    "name": "b.txt",
                                    "content": "BB",
                                    "annotations": {"reads": [12, 13], "tissue": ["a longer tissue"]},
                                },
                                {"type": "folder", "name": "deeper"},
                            ],
                        },
                    ],
                },
                {"type": "file", "name": "outside.txt", "content": "not in the scope"},
                {"type": "folder", "name": "closed", "deny": True},
                {"type": "folder", "name": "nodl", "deny": "download"},
            ],
        }
    ]
}


class World:
    def __init__(self, emulator) -> None:
        self.emu = emulator
        self.api = Api(emulator)
        self.project = emulator.seed_spec(SPEC)["data"]

    def id(self, path: str) -> str:
        return self.emu.resolve(self.project, path)

    def create(self, body, api=None) -> requests.Response:
        return (api or self.api).post("/repo/v1/entity", body)

    def default_column_ids(self):
        answer = self.api.get("/repo/v1/column/tableview/defaults?viewEntityType=entityview&viewTypeMask=1").json()
        return [column["id"] for column in answer["list"]]

    def make_view(self, parent: str, scope, columns=None, name="v") -> requests.Response:
        body = {
            "concreteType": VIEW,
            "name": name,
            "parentId": parent,
            "scopeIds": scope,
            "columnIds": self.default_column_ids() if columns is None else columns,
            "viewTypeMask": 1,
        }
        return self.create(body)

    def scratch(self, name="scratch") -> str:
        answer = self.create({"concreteType": PROJECT, "name": name})
        assert answer.status_code == 201, answer.text
        return answer.json()["id"]

    def query(self, view_id: str, sql=None):
        """(statuses of each GET, the final answer) of a query job."""
        start = self.api.post(
            f"/repo/v1/entity/{view_id}/table/query/async/start",
            {"concreteType": QUERY, "query": {"sql": sql or f"select * from {view_id}"}, "partMask": 1},
        ).json()
        statuses = []
        for _ in range(10):
            answer = self.api.get(f"/repo/v1/entity/{view_id}/table/query/async/get/{start['token']}")
            statuses.append(answer.status_code)
            if answer.status_code != 202:
                return statuses, answer.json()
        return statuses, None


@pytest.fixture
def world(emulator):
    emulator.set_knobs(query_pending_polls=0)
    return World(emulator)


def reason(response) -> str:
    return response.json()["reason"]


def rows_of(answer):
    return answer["queryResult"]["queryResults"]["rows"]


# --- POST /entity -----------------------------------------------------------------------------------------------
def test_create_a_project_a_folder_and_a_view_answered_as_get_answers_them(world):
    project = world.create({"concreteType": PROJECT, "name": "scratch", "description": "mine"})
    assert project.status_code == 201
    assert project.json() == world.api.get(f"/repo/v1/entity/{project.json()['id']}").json()
    assert project.json()["parentId"] == "syn4489" and project.json()["description"] == "mine"
    folder = world.create({"concreteType": FOLDER, "name": "f", "parentId": project.json()["id"]})
    assert folder.status_code == 201 and folder.json()["parentId"] == project.json()["id"]
    view = world.make_view(project.json()["id"], [world.id("raw")])
    assert view.status_code == 201, view.text
    body = view.json()
    assert body == world.api.get(f"/repo/v1/entity/{body['id']}").json()
    assert body["scopeIds"] == [world.id("raw")[3:]] and body["viewTypeMask"] == 1
    assert body["columnIds"] == world.default_column_ids() and body["versionLabel"] == "in progress"
    assert body["isSearchEnabled"] is False


def test_a_seeded_view_and_the_defaults_share_column_ids(emulator):
    projects = emulator.seed_spec(
        {
            "projects": [
                {
                    "name": "s",
                    "children": [{"type": "folder", "name": "d"}, {"type": "entityview", "name": "sv", "scope": ["d"]}],
                }
            ]
        }
    )
    api = Api(emulator)
    seeded = api.get(f"/repo/v1/entity/{emulator.resolve(projects['s'], 'sv')}").json()["columnIds"]
    defaults = api.get("/repo/v1/column/tableview/defaults?viewEntityType=entityview&viewTypeMask=1").json()
    assert seeded == [column["id"] for column in defaults["list"]]
    assert defaults["concreteType"] == "org.sagebionetworks.repo.model.table.ColumnModel"


def test_a_created_view_has_every_file_below_its_scope(world):
    view = world.make_view(world.scratch(), [world.id("raw")]).json()["id"]
    statuses, answer = world.query(view, f"select id, name from {view}")
    assert statuses == [201]
    assert sorted(row["values"][1] for row in rows_of(answer)) == ["a.txt", "b.txt"]


def test_the_deprecated_type_gives_the_mask(world):
    body = {"concreteType": VIEW, "name": "old", "parentId": world.scratch(), "scopeIds": [], "type": "file"}
    assert world.create(body).json()["viewTypeMask"] == 1
    body.pop("type")
    answer = world.create(dict(body, name="neither"))
    assert answer.status_code == 400 and reason(answer) == "Either 'viewType' or 'viewTypeMask' must be provided"


def test_names_taken_answer_409_in_synapse_words(world):
    world.scratch("dup")
    again = world.create({"concreteType": PROJECT, "name": "dup"})
    assert again.status_code == 409
    assert reason(again) == "An entity with the name: dup already exists with a parentId: syn4489"
    raw = world.id("raw")
    folder = world.create({"concreteType": FOLDER, "name": "deep", "parentId": raw})
    assert folder.status_code == 409 and reason(folder).endswith(f"parentId: {raw}")


@pytest.mark.parametrize(
    "body",
    [
        {"name": "no type"},
        {"concreteType": "org.sagebionetworks.repo.model.FileEntity", "name": "f", "parentId": "syn1"},
        {"concreteType": FOLDER, "name": "no parent"},
        {"concreteType": FOLDER, "name": "", "parentId": "{raw}"},
        {"concreteType": FOLDER, "name": "bad/name", "parentId": "{raw}"},
        {"concreteType": FOLDER, "name": "x", "parentId": "not an id"},
    ],
)
def test_bad_bodies_answer_400(world, body):
    filled = {key: (world.id("raw") if value == "{raw}" else value) for key, value in body.items()}
    assert world.create(filled).status_code == 400


def test_an_unknown_parent_answers_404(world):
    answer = world.create({"concreteType": FOLDER, "name": "x", "parentId": "syn999999999"})
    assert answer.status_code == 404 and reason(answer) == "The given parent: syn999999999 does not exist"
    trashed = world.create({"concreteType": FOLDER, "name": "t", "parentId": world.scratch()}).json()["id"]
    assert delete(world, trashed).status_code == 204
    inside = world.create({"concreteType": FOLDER, "name": "x", "parentId": trashed})
    assert inside.status_code == 404 and reason(inside) == f"The given parent: {trashed} does not exist"


def test_an_unknown_column_answers_404_and_makes_no_view(world):
    """ColumnModelManagerImpl.getAndValidateColumnModels: a NotFoundException, the view's creation rolled back."""
    project = world.scratch()
    answer = world.make_view(project, [world.id("raw")], columns=["999999"])
    assert answer.status_code == 404 and reason(answer) == "Column does not exist for id: 999999"
    assert [e["id"] for e in world.emu.project_entities(project)] == [project]


def test_a_scope_over_the_container_limit_answers_400(world):
    """raw, raw/deep and raw/deep/deeper: three containers (Synapse counts the sub-folders)."""
    world.emu.set_knobs(max_containers_per_view=2)
    answer = world.make_view(world.scratch(), [world.id("raw")])
    assert answer.status_code == 400 and reason(answer) == SCOPE_TOO_BIG % 2
    assert "2 projects and/or folders" in reason(answer)
    world.emu.set_knobs(max_containers_per_view=3)
    assert world.make_view(world.scratch("s3"), [world.id("raw")]).status_code == 201


def test_a_project_view_counts_its_projects_and_no_type_joins_the_project_type(world):
    """EntityMetadataIndexProvider.validateScopeAndType: a project view's limit counts its scope's ids, the project
    bit stands alone; a mask without the file bit (0 too) counts containers as a file view does."""
    world.emu.set_knobs(max_containers_per_view=2)
    project = world.scratch()
    body = {"concreteType": VIEW, "name": "p", "parentId": project, "columnIds": [], "viewTypeMask": 2}
    three = world.create(dict(body, scopeIds=[world.id("raw"), project, world.scratch("other")]))
    assert three.status_code == 400 and reason(three) == PROJECT_SCOPE_TOO_BIG % 2
    assert world.create(dict(body, scopeIds=[project])).status_code == 201
    mixed = world.create(dict(body, name="m", scopeIds=[project], viewTypeMask=3))
    assert mixed.status_code == 400 and reason(mixed) == "The Project type cannot be combined with any other type."
    no_type = world.create(dict(body, name="n", scopeIds=[world.id("raw")], viewTypeMask=0))
    assert no_type.status_code == 400 and reason(no_type) == SCOPE_TOO_BIG % 2


def test_an_entity_without_a_name_is_named_by_its_id_and_a_given_id_or_etag_is_ignored(world):
    """NameValidation.validateName passes a null name and NodeDAOImpl.create names the entity by its id; createNewNode
    issues a new id and a new etag whatever the body says."""
    project = world.scratch()
    folder = world.create({"concreteType": FOLDER, "parentId": project, "id": "syn1", "etag": "mine"})
    assert folder.status_code == 201, folder.text
    made = folder.json()
    assert made["name"] == made["id"] and made["id"] != "syn1" and made["etag"] != "mine"
    assert world.api.get(f"/repo/v1/entity/{made['id']}").json()["name"] == made["id"]
    empty = world.create({"concreteType": FOLDER, "parentId": project, "name": " "})
    assert empty.status_code == 400 and reason(empty) == "Name cannot be only whitespace or empty string"


# --- who may create ---------------------------------------------------------------------------------------------
def test_the_anonymous_user_may_not_create(world):
    anonymous = Api(world.emu, token=False)
    answer = world.create({"concreteType": PROJECT, "name": "anon"}, api=anonymous)
    assert answer.status_code == 403 and reason(answer) == "Anonymous users have only READ access permission."


def test_an_uncertified_user_may_create_projects_only(world):
    world.emu.set_knobs(uncertified_user=True)
    scratch = world.scratch()
    for body in (
        {"concreteType": FOLDER, "name": "f", "parentId": scratch},
        {"concreteType": VIEW, "name": "v", "parentId": scratch, "scopeIds": [], "viewTypeMask": 1},
    ):
        answer = world.create(body)
        assert answer.status_code == 403 and reason(answer) == CERTIFIED_ONLY
    world.emu.set_knobs(uncertified_user=False)
    assert world.make_view(scratch, [world.id("raw")]).status_code == 201


def test_deny_create_refuses_projects_too(world):
    world.emu.set_knobs(deny_create=True)
    answer = world.create({"concreteType": PROJECT, "name": "p"})
    assert answer.status_code == 403 and reason(answer) == "You lack CREATE access to the requested entity."


@pytest.mark.parametrize("parent", ["closed", "nodl"])
def test_a_parent_with_a_deny_mark_refuses_create(world, parent):
    answer = world.create({"concreteType": FOLDER, "name": "x", "parentId": world.id(parent)})
    assert answer.status_code == 403 and reason(answer) == "You lack CREATE access to the requested entity."


# --- build time and lag -----------------------------------------------------------------------------------------
class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_view_answers_202_until_its_build_time_passed(world):
    clock = Clock()
    world.emu.set_view_build_clock(clock)
    world.emu.set_knobs(view_build_seconds_per_1000_files=500.0)  # 2 files: 1 s
    view = world.make_view(world.scratch(), [world.id("raw")]).json()["id"]
    assert world.emu.building_views() == [view]
    start = world.api.post(
        f"/repo/v1/entity/{view}/table/query/async/start",
        {"concreteType": QUERY, "query": {"sql": f"select * from {view}"}},
    ).json()
    get = f"/repo/v1/entity/{view}/table/query/async/get/{start['token']}"
    pending = world.api.get(get)
    assert pending.status_code == 202 and pending.json()["jobState"] == "PROCESSING"
    clock.now = 0.999
    assert world.api.get(get).status_code == 202
    clock.now = 1.0
    done = world.api.get(get)
    assert done.status_code == 201 and len(rows_of(done.json())) == 2
    assert world.emu.building_views() == []


def test_finish_view_builds_ends_every_build(world):
    world.emu.set_knobs(view_build_seconds_per_1000_files=1e9)
    view = world.make_view(world.scratch(), [world.id("raw")]).json()["id"]
    assert world.query(view)[0] == [202] * 10
    assert world.emu.finish_view_builds() == [view]
    statuses, answer = world.query(view)
    assert statuses == [201] and len(rows_of(answer)) == 2


def test_a_view_of_no_files_builds_at_once(world):
    world.emu.set_knobs(view_build_seconds_per_1000_files=1e9)
    view = world.make_view(world.scratch(), [world.id("raw/deep/deeper")]).json()["id"]
    assert world.emu.building_views() == [] and world.query(view)[0] == [201]


def test_with_view_lag_a_created_view_shows_the_files_as_of_the_last_refresh(world):
    world.emu.set_knobs(view_lag=True)
    world.emu.refresh_views()
    world.emu.add_version(world.id("raw/a.txt"), "A, second version")
    world.emu.add_file(world.id("raw"), "new.txt", "too new for the replication")
    view = world.make_view(world.scratch(), [world.id("raw")]).json()["id"]
    _, answer = world.query(view, f"select name, currentVersion from {view}")
    assert sorted(tuple(row["values"]) for row in rows_of(answer)) == [("a.txt", "1"), ("b.txt", "1")]
    world.emu.refresh_views(view)  # the view catches up
    _, answer = world.query(view, f"select name, currentVersion from {view}")
    assert sorted(tuple(row["values"]) for row in rows_of(answer)) == [("a.txt", "2"), ("b.txt", "1"), ("new.txt", "1")]


def test_without_view_lag_a_created_view_is_live(world):
    world.emu.refresh_views()
    world.emu.add_version(world.id("raw/a.txt"), "A, second version")
    view = world.make_view(world.scratch(), [world.id("raw")]).json()["id"]
    _, answer = world.query(view, f"select name, currentVersion from {view}")
    assert sorted(tuple(row["values"]) for row in rows_of(answer)) == [("a.txt", "2"), ("b.txt", "1")]


# --- columns ----------------------------------------------------------------------------------------------------
def test_column_batch_reuses_the_id_of_an_identical_model(world):
    body = {
        "concreteType": "org.sagebionetworks.repo.model.ListWrapper",
        "list": [{"name": "tissue", "columnType": "STRING"}, {"name": "reads", "columnType": "INTEGER_LIST"}],
    }
    first = world.api.post("/repo/v1/column/batch", body)
    assert first.status_code == 201
    models = first.json()["list"]
    assert models[0] == {"name": "tissue", "columnType": "STRING", "maximumSize": 50, "id": models[0]["id"]}
    again = world.api.post("/repo/v1/column/batch", body).json()["list"]
    assert [m["id"] for m in again] == [m["id"] for m in models]
    bad = world.api.post("/repo/v1/column/batch", {"list": [{"name": "x"}]})
    assert bad.status_code == 400


@pytest.mark.parametrize(
    "model, status, message",
    [
        ({"name": "s", "columnType": "STRING", "maximumSize": 1001}, 400, "cannot exceed: 1000"),
        ({"name": "s", "columnType": "STRING", "maximumSize": 0}, 400, "must be greater than 0"),
        ({"name": "s", "columnType": "STRING_LIST", "maximumListLength": 101}, 400, "cannot exceed: 100"),
        ({"name": "s", "columnType": "INTEGER_LIST", "maximumListLength": 1}, 400, "must be at least 2"),
        ({"name": "s", "columnType": "DOUBLE", "facetType": "enumeration"}, 400, "can only be ranges"),
        ({"name": "s", "columnType": "BOOLEAN", "facetType": "range"}, 400, "can only be enumeration faceted"),
        ({"name": "s", "columnType": "LARGETEXT", "facetType": "enumeration"}, 400, "can not be faceted"),
        ({"name": "row_id", "columnType": "INTEGER"}, 400, "is a system reserved column name"),
        ({"name": "x" * 257, "columnType": "INTEGER"}, 400, "256 characters or less"),
        ({"name": "s", "columnType": "STRING", "maximumSize": 1000, "facetType": "enumeration"}, 201, ""),
    ],
)
def test_column_batch_checks_a_model_as_synapse_does(world, model, status, message):
    """ColumnModelManagerImpl.validateColumnModel and ColumnModelUtils.createNormalizedClone."""
    answer = world.api.post("/repo/v1/column/batch", {"list": [model]})
    assert answer.status_code == status, answer.text
    assert message in answer.text


def test_the_anonymous_user_may_not_create_column_models(world):
    anonymous = Api(world.emu, token=False)
    answer = anonymous.post("/repo/v1/column/batch", {"list": [{"name": "s", "columnType": "STRING"}]})
    assert answer.status_code == 403 and reason(answer) == "You must login to create a ColumnModel"


def test_a_view_refuses_columns_over_synapses_row_size(world):
    """ColumnModelManagerImpl.validateSchemaSize: 4 bytes a character, a STRING_LIST's size times its length; three
    STRING_LISTs of 50 characters and 100 values are 60,000 bytes, a fourth one's 20,000 more pass 64,000."""
    models = [{"name": f"l{i}", "columnType": "STRING_LIST"} for i in range(4)]
    ids = [m["id"] for m in world.api.post("/repo/v1/column/batch", {"list": models}).json()["list"]]
    project = world.scratch()
    assert world.make_view(project, [world.id("raw")], columns=ids[:3], name="three").status_code == 201
    four = world.make_view(project, [world.id("raw")], columns=ids)
    assert four.status_code == 400
    assert reason(four) == (
        "Too much data per column. The maximum size for a row is about 64000 bytes. "
        "The size for the given columns would be 80000 bytes"
    )


def test_a_schema_change_refuses_a_column_name_twice(world):
    """The transaction binds its new schema as a view's creation does (ColumnModelManagerImpl.validateSchemaSize)."""
    view = world.make_view(world.scratch(), [world.id("raw")]).json()["id"]
    name_again = world.api.post("/repo/v1/column/batch", {"list": [{"name": "name", "columnType": "INTEGER"}]})
    columns = world.default_column_ids() + [name_again.json()["list"][0]["id"]]
    change = {
        "concreteType": "org.sagebionetworks.repo.model.table.TableSchemaChangeRequest",
        "entityId": view,
        "changes": [],
        "orderedColumnIds": columns,
    }
    body = {
        "concreteType": "org.sagebionetworks.repo.model.table.TableUpdateTransactionRequest",
        "entityId": view,
        "changes": [change],
    }
    start = world.api.post(f"/repo/v1/entity/{view}/table/transaction/async/start", body)
    assert start.status_code == 201
    answer = world.api.get(f"/repo/v1/entity/{view}/table/transaction/async/get/{start.json()['token']}")
    assert answer.status_code == 400 and reason(answer) == "Duplicate column name: 'name'"


def test_column_batch_gives_a_list_column_synapses_default_list_length(world):
    answer = world.api.post("/repo/v1/column/batch", {"list": [{"name": "reads", "columnType": "INTEGER_LIST"}]})
    assert answer.json()["list"][0]["maximumListLength"] == 100


def test_a_view_refuses_more_than_152_columns_and_a_name_twice(world):
    ids = [
        m["id"]
        for m in world.api.post(
            "/repo/v1/column/batch", {"list": [{"name": f"c{i}", "columnType": "INTEGER"} for i in range(153)]}
        ).json()["list"]
    ]
    project = world.scratch()
    too_many = world.make_view(project, [world.id("raw")], columns=ids)
    assert too_many.status_code == 400
    assert too_many.json()["reason"] == "A view cannot have 153 columns.  It must have 152 columns or less."
    other = world.api.post("/repo/v1/column/batch", {"list": [{"name": "c0", "columnType": "STRING"}]})
    twice = world.make_view(project, [world.id("raw")], columns=[ids[0], other.json()["list"][0]["id"]])
    assert twice.status_code == 400
    assert twice.json()["reason"] == "Duplicate column name: 'c0'"
    assert world.make_view(project, [world.id("raw")], columns=ids[:152]).status_code == 201


def scope_columns(world, scope, token=None):
    body = {
        "concreteType": "org.sagebionetworks.repo.model.table.ViewColumnModelRequest",
        "viewScope": {"scope": scope, "viewEntityType": "entityview", "viewTypeMask": 1},
    }
    if token:
        body["nextPageToken"] = token
    start = world.api.post("/repo/v1/column/view/scope/async/start", body)
    assert start.status_code == 201
    answer = world.api.get(f"/repo/v1/column/view/scope/async/get/{start.json()['token']}")
    assert answer.status_code == 201, answer.text
    return answer.json()


def test_the_scope_columns_are_the_files_annotations_typed_as_synapse_derives_them(world):
    answer = scope_columns(world, [world.id("raw")])
    assert answer["concreteType"] == "org.sagebionetworks.repo.model.table.ViewColumnModelResponse"
    assert answer["results"] == [
        {"name": "reads", "columnType": "INTEGER_LIST", "maximumListLength": 2},
        {"name": "tissue", "columnType": "STRING", "maximumSize": len("a longer tissue")},
    ]
    assert "nextPageToken" not in answer


def test_the_scope_columns_come_in_pages_of_50(world):
    folder = world.emu.add_folder(world.project, "many")
    file_id = world.emu.add_file(folder, "f.txt", "f")
    for index in range(51):
        world.emu.set_annotation(file_id, f"key{index:02d}", [index])
    first = scope_columns(world, [folder])
    assert len(first["results"]) == 50 and first["nextPageToken"] == "50a50"
    second = scope_columns(world, [folder], first["nextPageToken"])
    assert [c["name"] for c in second["results"]] == ["key50"] and "nextPageToken" not in second


def test_a_view_with_a_list_column_shows_the_values_as_a_json_array(world):
    created = world.api.post(
        "/repo/v1/column/batch", {"list": [{"name": "reads", "columnType": "INTEGER_LIST", "maximumListLength": 2}]}
    ).json()["list"]
    view = world.make_view(world.scratch(), [world.id("raw")], world.default_column_ids()[:2] + [created[0]["id"]])
    view_id = view.json()["id"]
    _, answer = world.query(view_id, f"select name, reads from {view_id}")
    assert sorted(tuple(row["values"]) for row in rows_of(answer)) == [("a.txt", None), ("b.txt", "[12,13]")]


# --- annotations ------------------------------------------------------------------------------------------------
def test_put_annotations_replaces_them_and_a_stale_etag_answers_412(world):
    target = world.id("raw/a.txt")
    current = world.api.get(f"/repo/v1/entity/{target}/annotations2").json()
    body = dict(
        current, annotations={"stage": {"type": "STRING", "value": ["done"]}, "n": {"type": "LONG", "value": ["4"]}}
    )
    answer = world.api.session.put(world.emu.endpoint + f"/repo/v1/entity/{target}/annotations2", json=body)
    assert answer.status_code == 200
    assert answer.json()["annotations"] == body["annotations"] and answer.json()["etag"] != current["etag"]
    assert world.api.get(f"/repo/v1/entity/{target}").json()["etag"] == answer.json()["etag"]
    stale = world.api.session.put(world.emu.endpoint + f"/repo/v1/entity/{target}/annotations2", json=body)
    assert stale.status_code == 412
    assert reason(stale) == (
        f"Object: {target} was updated since you last fetched it, retrieve it again and re-apply the update"
    )


@pytest.mark.parametrize(
    "annotations, message",
    [
        ({"bad-key": {"type": "STRING", "value": ["x"]}}, "Annotation names may only contain; letters"),
        ({"_accessRequirementIds": {"type": "LONG", "value": ["1"]}}, "is a system reserved annotation"),
        ({"k": {"type": "STRING", "value": [None]}}, "null is not allowed. To indicate no values, use an empty list."),
        ({"k": {"type": "STRING", "value": ["x" * 300, "y" * 201]}}, "Can be at most 500 characters."),
        ({"k": {"type": "LONG", "value": [str(n) for n in range(101)]}}, "maximum number of values allowed: 100"),
        ({"k": {"value": ["1"]}}, "a value or a value type must be set for values associated with key=k"),
        ({"k": {"type": "LONG", "value": ["1.5"]}}, "Value associated with key=k is not valid for type=LONG: 1.5"),
        ({"k": {"type": "BOOLEAN", "value": ["yes"]}}, "not valid for type=BOOLEAN: yes"),
        ({f"k{n}": {"type": "LONG", "value": ["1"]} for n in range(101)}, "Exceeded maximum number of annotation"),
    ],
)
def test_put_annotations_checks_keys_and_values_as_synapse_does(world, annotations, message):
    """AnnotationsV2Utils.validateAnnotations and its value validators."""
    target = world.id("raw/a.txt")
    current = world.api.get(f"/repo/v1/entity/{target}/annotations2").json()
    answer = world.api.session.put(
        world.emu.endpoint + f"/repo/v1/entity/{target}/annotations2", json=dict(current, annotations=annotations)
    )
    assert answer.status_code == 400 and message in reason(answer)


def test_put_annotations_reads_typed_strings(world):
    """Every value is a string on the wire: BOOLEAN "TRUE" and "false", LONG "-7", TIMESTAMP_MS "1700000000000"."""
    target = world.id("raw/a.txt")
    current = world.api.get(f"/repo/v1/entity/{target}/annotations2").json()
    annotations = {
        "flag": {"type": "BOOLEAN", "value": ["TRUE", "false"]},
        "n": {"type": "LONG", "value": ["-7"]},
        "when": {"type": "TIMESTAMP_MS", "value": ["1700000000000"]},
    }
    answer = world.api.session.put(
        world.emu.endpoint + f"/repo/v1/entity/{target}/annotations2", json=dict(current, annotations=annotations)
    )
    assert answer.status_code == 200, answer.text
    got = answer.json()["annotations"]
    assert got["flag"] == {"type": "BOOLEAN", "value": ["true", "false"]}
    assert got["n"] == {"type": "LONG", "value": ["-7"]}
    assert got["when"]["value"] == ["1700000000000"]


def test_put_annotations_touches_the_entity_and_wants_an_etag_first(world):
    """NodeManagerImpl.updateUserAnnotations: requiredNotEmpty(etag) before access; nodeDao.touch: a new modifiedOn."""
    target = world.id("raw/a.txt")
    before = world.api.get(f"/repo/v1/entity/{target}").json()
    current = world.api.get(f"/repo/v1/entity/{target}/annotations2").json()
    url = world.emu.endpoint + f"/repo/v1/entity/{target}/annotations2"
    world.emu.set_knobs(deny_create=True)
    no_etag = world.api.session.put(world.emu.endpoint + "/repo/v1/entity/syn999999/annotations2", json={"etag": ""})
    assert no_etag.status_code == 400 and reason(no_etag) == "etag is required and must not be the empty string."
    world.emu.set_knobs(deny_create=False)
    body = dict(current, annotations={"stage": {"type": "STRING", "value": ["done"]}})
    assert world.api.session.put(url, json=body).status_code == 200
    after = world.api.get(f"/repo/v1/entity/{target}").json()
    assert after["modifiedOn"] > before["modifiedOn"] and after["etag"] != before["etag"]


def test_an_uncertified_user_may_not_annotate_a_folder(world):
    world.emu.set_knobs(uncertified_user=True)
    target = world.id("raw")
    current = world.api.get(f"/repo/v1/entity/{target}/annotations2").json()
    answer = world.api.session.put(world.emu.endpoint + f"/repo/v1/entity/{target}/annotations2", json=current)
    assert answer.status_code == 403 and reason(answer) == CERTIFIED_ONLY


# --- deletion and the trash can ---------------------------------------------------------------------------------
def delete(world, entity_id, query=""):
    return world.api.session.delete(world.emu.endpoint + f"/repo/v1/entity/{entity_id}{query}")


def test_delete_moves_to_the_trash_can(world):
    scratch = world.scratch()
    view = world.make_view(scratch, [world.id("raw")]).json()["id"]
    answer = delete(world, view)
    assert answer.status_code == 204 and answer.content == b""
    gone = world.api.get(f"/repo/v1/entity/{view}")
    assert gone.status_code == 404 and reason(gone) == f"Entity {view} is in trash can."
    children = world.api.post("/repo/v1/entity/children", {"parentId": scratch, "includeTypes": ["entityview"]})
    assert children.json()["page"] == []
    assert [(item["id"], item["name"], item["parentId"]) for item in world.emu.trash()] == [(view, "v", scratch)]
    assert [(e["id"], e["inTrash"]) for e in world.emu.project_entities(scratch)] == [(scratch, False), (view, True)]
    assert world.make_view(scratch, [world.id("raw")]).status_code == 201  # the name is free again
    assert delete(world, view).status_code == 204  # already in the trash: nothing happens (PLFM-2921)


def test_a_project_in_the_trash_takes_its_subtree(world):
    scratch = world.scratch()
    view = world.make_view(scratch, [world.id("raw")]).json()["id"]
    assert delete(world, scratch).status_code == 204
    inside = world.api.get(f"/repo/v1/entity/{view}")
    assert inside.status_code == 404 and reason(inside) == f"Entity {view} is in trash can."
    assert scratch not in world.emu.info()["projects"].values()
    assert world.scratch() != scratch  # its name is free


def test_skip_trash_can_deletes_the_subtree_for_good(world):
    scratch = world.scratch()
    folder = world.create({"concreteType": FOLDER, "name": "f", "parentId": scratch}).json()["id"]
    view = world.make_view(folder, [world.id("raw")]).json()["id"]
    assert delete(world, scratch, "?skipTrashCan=true").status_code == 204
    for entity_id in (scratch, folder, view):
        answer = world.api.get(f"/repo/v1/entity/{entity_id}")
        assert answer.status_code == 404 and reason(answer) == f"Resource: '{entity_id}' does not exist"
    assert world.emu.trash() == []


def test_delete_needs_delete_access(world):
    assert delete(world, world.id("closed")).status_code == 403
    answer = delete(world, world.id("nodl"))
    assert answer.status_code == 403 and reason(answer) == "You lack DELETE access to the requested entity."
    anonymous = requests.delete(world.emu.endpoint + f"/repo/v1/entity/{world.id('raw')}")
    assert anonymous.status_code == 403
    assert delete(world, "syn999999999").status_code == 204  # Synapse: nothing to delete is no error
    assert delete(world, "not-an-id").status_code == 400
    assert delete(world, world.id("raw"), "?skipTrashCan=maybe").status_code == 400


# --- admin helpers ----------------------------------------------------------------------------------------------
def test_age_a_leftover_view(world):
    scratch = world.scratch()
    view = world.make_view(scratch, [world.id("raw")]).json()["id"]
    world.emu.set_annotation(view, "synclientCreatedOn", ["2020-01-01T00:00:00.000Z"])
    world.emu.set_created_on(view, "2020-01-01T00:00:00.000Z")
    entity = world.api.get(f"/repo/v1/entity/{view}").json()
    assert entity["createdOn"] == "2020-01-01T00:00:00.000Z"
    annotations = world.api.get(f"/repo/v1/entity/{view}/annotations2").json()["annotations"]
    assert annotations == {"synclientCreatedOn": {"type": "STRING", "value": ["2020-01-01T00:00:00.000Z"]}}
    listed = world.emu.project_entities(scratch)
    assert listed[1]["annotations"] == {"synclientCreatedOn": ["2020-01-01T00:00:00.000Z"]}
    with pytest.raises(ValueError):
        world.emu.set_created_on(view, "yesterday")


def test_the_admin_routes_in_a_child_process(tmp_path):
    """EmulatorProcess reaches the same helpers over ``/emulator/...``."""
    with EmulatorProcess(seed=Seed(spec=SPEC), view_build_seconds_per_1000_files=1e9) as emu:
        api = Api(emu)
        scratch = api.post("/repo/v1/entity", {"concreteType": PROJECT, "name": "s"}).json()["id"]
        project = emu.info()["projects"]["data"]
        raw = emu.resolve(project, "raw")
        body = {"concreteType": VIEW, "name": "v", "parentId": scratch, "scopeIds": [raw], "viewTypeMask": 1}
        view = api.post("/repo/v1/entity", body).json()["id"]
        assert emu.building_views() == [view] and emu.finish_view_builds() == [view]
        emu.set_annotation(view, "host", ["here"])
        emu.set_created_on(view, "2021-02-03T04:05:06.000Z")
        listed = emu.project_entities(scratch)
        assert listed[1]["annotations"] == {"host": ["here"]} and listed[1]["createdOn"].startswith("2021")
        requests.delete(emu.endpoint + f"/repo/v1/entity/{view}", headers={"Authorization": f"Bearer {emu.token}"})
        assert [item["id"] for item in emu.trash()] == [view]


def test_an_uncertified_user_is_told_so_in_its_permissions(world):
    target = world.id("raw")
    bundle = {"includePermissions": True, "includeRestrictionInformation": True}
    assert world.api.post(f"/repo/v1/entity/{target}/bundle2", bundle).json()["permissions"]["isCertifiedUser"]
    world.emu.set_knobs(uncertified_user=True)
    answer = world.api.post(f"/repo/v1/entity/{target}/bundle2", bundle).json()
    assert answer["permissions"]["isCertifiedUser"] is False
    assert answer["restrictionInformation"]["userEntityPermissions"]["isCertifiedUser"] is False


# --- PUT /entity/{id} -------------------------------------------------------------------------------------------
def put(world, entity_id, body):
    return world.api.session.put(world.emu.endpoint + f"/repo/v1/entity/{entity_id}", json=body)


def test_a_scope_change_rebuilds_the_view(world):
    clock = Clock()
    world.emu.set_view_build_clock(clock)
    view = world.make_view(world.scratch(), [world.id("raw/deep")]).json()
    _, answer = world.query(view["id"], f"select name from {view['id']}")
    assert [row["values"] for row in rows_of(answer)] == [["b.txt"]]
    world.emu.set_knobs(view_build_seconds_per_1000_files=1000.0)
    changed = put(world, view["id"], dict(view, scopeIds=[world.id("raw")], name="renamed"))
    assert changed.status_code == 200, changed.text
    assert changed.json()["scopeIds"] == [world.id("raw")[3:]] and changed.json()["name"] == "renamed"
    assert changed.json()["etag"] != view["etag"]
    assert world.query(view["id"])[0] == [202] * 10
    clock.now = 2.0  # 2 files: 2 s
    _, answer = world.query(view["id"], f"select name from {view['id']}")
    assert sorted(row["values"][0] for row in rows_of(answer)) == ["a.txt", "b.txt"]
    stale = put(world, view["id"], view)
    assert stale.status_code == 412


def test_put_renames_a_project_and_refuses_a_taken_name(world):
    first = world.create({"concreteType": PROJECT, "name": "first"}).json()
    world.scratch("second")
    renamed = put(world, first["id"], dict(first, name="third", description="now described"))
    assert renamed.status_code == 200 and renamed.json()["description"] == "now described"
    taken = put(world, first["id"], dict(renamed.json(), name="second"))
    assert taken.status_code == 409
