"""Fidelity: the official synapseclient 4.14 creates, queries and deletes an entity view on the emulator (issue 34).

``syn.store(Project(...))`` posts ``/entity``; ``syn.store(EntityViewSchema(...))`` asks the default columns
(``GET /column/tableview/defaults``), the scope's annotation columns (the ``/column/view/scope`` job), stores them
(``POST /column/batch``) and posts ``/entity``; ``syn.tableQuery`` runs the query job (rowset) or the CSV job, which
answer 202 while the view builds (knob ``view_build_seconds_per_1000_files``); ``syn.delete`` sends
``DELETE /entity/{id}`` (to the trash can). No patching of synapseclient: it only gets the emulator's endpoints and
token.
"""

from __future__ import annotations

import pytest

synapseclient = pytest.importorskip("synapseclient")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

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
                                {"type": "file", "name": "b.txt", "content": "BB", "annotations": {"reads": [12]}},
                            ],
                        },
                    ],
                },
                {"type": "file", "name": "outside.txt", "content": "not in the scope"},
            ],
        }
    ]
}


@pytest.fixture
def data(emulator, synapse_login):
    project = emulator.seed_spec(SPEC)["data"]
    return synapse_login(emulator), project, lambda path: emulator.resolve(project, path)


def _make_view(syn, raw):
    from synapseclient import EntityViewSchema, EntityViewType, Project

    scratch = syn.store(Project(name="synclient scratch"))
    view = syn.store(
        EntityViewSchema(name="temporary view", parent=scratch, scopes=[raw], includeEntityTypes=[EntityViewType.FILE])
    )
    return scratch, view


def test_store_a_view_with_default_and_annotation_columns(emulator, data):
    syn, _project, ids = data
    scratch, view = _make_view(syn, ids("raw"))
    assert scratch.id.startswith("syn") and view.parentId == scratch.id
    assert view.scopeIds == [ids("raw")[3:]] and view.viewTypeMask == 1
    names = [column["name"] for column in syn.getColumns(view.columnIds)]
    assert names[:3] == ["id", "name", "createdOn"] and "dataFileMD5Hex" in names
    assert {"tissue", "reads"} <= set(names)
    reads = next(column for column in syn.getColumns(view.columnIds) if column["name"] == "reads")
    assert reads["columnType"] == "INTEGER"
    assert syn.get(view.id).name == "temporary view"


class TickingClock:
    """A build clock that moves one second each time it is read: a view of 2 files at 2,000 s per 1,000 files is
    read at its start and then stays building for the next two GETs, whatever the time synapseclient sleeps."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


@pytest.mark.parametrize("results_as", ["rowset", "csv"])
def test_query_answers_202_while_the_view_builds_then_the_files_rows(emulator, data, results_as):
    syn, _project, ids = data
    emulator.set_knobs(view_build_seconds_per_1000_files=2000.0, query_pending_polls=0)
    emulator.set_view_build_clock(TickingClock())
    _scratch, view = _make_view(syn, ids("raw"))
    assert emulator.building_views() == [view.id]
    emulator.reset_stats()
    table = syn.tableQuery(f"select * from {view.id}", resultsAs=results_as)
    frame = table.asDataFrame()
    assert sorted(frame["name"]) == ["a.txt", "b.txt"]
    assert sorted(frame["id"]) == sorted([ids("raw/a.txt"), ids("raw/deep/b.txt")])
    by_route = emulator.stats()["api_by_route"]
    kind = "download/csv" if results_as == "csv" else "query"
    polls = sum(count for route, count in by_route.items() if f"/table/{kind}/async/get/" in route)
    assert emulator.stats()["api_by_status"].get("202", 0) >= 1  # the build held the query back
    assert polls >= 2 and emulator.building_views() == []


def test_delete_moves_the_view_to_the_trash(emulator, data):
    syn, _project, ids = data
    scratch, view = _make_view(syn, ids("raw"))
    syn.delete(view)
    assert [item["id"] for item in emulator.trash()] == [view.id]
    with pytest.raises(synapseclient.core.exceptions.SynapseHTTPError, match="is in trash can"):
        syn.get(view.id)
    assert [entity["inTrash"] for entity in emulator.project_entities(scratch.id)] == [False, True]
    syn.restDELETE(f"/entity/{scratch.id}?skipTrashCan=true")
    assert scratch.id not in emulator.info()["projects"].values()


def test_the_models_api_stores_queries_and_deletes_a_view(emulator, data):
    """``EntityView(...).store()`` posts ``/entity/bundle2/create``, stores its columns and sets them with a table
    transaction's schema change; ``query`` runs the CSV job; ``delete`` sends ``DELETE /entity/{id}``."""
    from synapseclient.models import EntityView, Project, ViewTypeMask

    syn, _project, ids = data
    scratch = Project(name="models scratch").store(synapse_client=syn)
    view = EntityView(
        name="models view", parent_id=scratch.id, scope_ids=[ids("raw")], view_type_mask=ViewTypeMask.FILE
    ).store(synapse_client=syn)
    assert list(view.columns)[:2] == ["id", "name"] and "dataFileMD5Hex" in view.columns
    frame = view.query(f"select name from {view.id}", synapse_client=syn)
    assert sorted(frame["name"]) == ["a.txt", "b.txt"]
    view.delete(synapse_client=syn)
    assert [item["id"] for item in emulator.trash()] == [view.id]


def test_storing_a_project_again_updates_it(emulator, data):
    """``syn.store`` of a project whose name is taken: the 409, then synapseclient's createOrUpdate finds it
    (``POST /entity/child``), reads it and ``PUT``s it back with its etag: the same project."""
    from synapseclient import Project

    syn, _project, _ids = data
    first = syn.store(Project(name="synclient scratch"))
    again = syn.store(Project(name="synclient scratch", description="found again"))
    assert again.id == first.id and again.description == "found again" and again.etag != first.etag
