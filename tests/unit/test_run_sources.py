"""One typed source per run (synclient.sync.sources.resolve): what each source resolves to, and the calls it takes,
with a fake platform (no HTTP)."""

from __future__ import annotations

import dataclasses

import pytest

from synclient.errors import ConfigError, NotFoundError
from synclient.platform.models import Entity, EntityHeader, EntityType, QueryPage, QueryRow
from synclient.sync.local.name_gate import RemotePath
from synclient.sync.sources.id_lists import EntityRef
from synclient.sync.sources.resolve import (
    LIST_ROOT,
    FileSource,
    GivenFiles,
    ListSource,
    TreeSource,
    resolve_entity,
    resolve_ids,
    resolve_query,
)

F, D, P, DS, V, T = (
    EntityType.FILE,
    EntityType.FOLDER,
    EntityType.PROJECT,
    EntityType.DATASET,
    EntityType.ENTITY_VIEW,
    EntityType.TABLE,
)


class FakePlatform:
    """A few entities (id -> name, type, current version, items) and one query's pages; records every call."""

    def __init__(self, entities, pages=()):
        self.entities = {
            entity_id: (name, kind, version, items)
            for entity_id, name, kind, version, *rest in entities
            for items in [rest[0] if rest else ()]
        }
        self.pages = list(pages)
        self.calls = []

    def _header(self, entity_id):
        name, kind, version, _ = self.entities[entity_id]
        return EntityHeader(entity_id, name, kind, version)

    def get_entity_header(self, entity_id):
        self.calls.append(("header", entity_id))
        if entity_id not in self.entities:
            raise NotFoundError(f"{entity_id} not found", status=404)
        return self._header(entity_id)

    def get_entity_headers(self, ids):
        self.calls.append(("headers", len(ids)))
        return {i: self._header(i) for i in ids if i in self.entities}

    def get_entity(self, entity_id, *, version=None):
        self.calls.append(("entity", entity_id, version))
        name, kind, current, items = self.entities[entity_id]
        if version is not None and version > current:
            raise NotFoundError(f"{entity_id}.{version} not found", status=404)
        return Entity(id=entity_id, name=name, type=kind, version_number=version or current, items=tuple(items))

    def query_table(self, table_id, sql):
        self.calls.append(("query", table_id))
        return iter(self.pages)


WORLD = [
    ("syn1", "a.csv", F, 3),
    ("syn2", "b.csv", F, 1),
    ("syn4", "raw", D, 1),
    ("syn6", "p", P, 1),
    ("syn5", "d", DS, 2, [("syn1", 2), ("syn2", 1)]),
    ("syn9", "view", V, 1),
    ("syn10", "t", T, 1),
]


def test_a_folder_resolves_to_a_tree_that_mirrors_it_from_one_header_call():
    platform = FakePlatform(WORLD)
    source = resolve_entity(platform, EntityRef("syn4"))
    assert source == TreeSource(EntityHeader("syn4", "raw", D, 1))
    assert (source.root_id, source.description, source.mirrors_container) == ("syn4", "raw", True)
    assert platform.calls == [("header", "syn4")]


def test_a_header_the_caller_has_is_not_asked_for_again():
    platform = FakePlatform(WORLD)
    header = EntityHeader("syn6", "p", P, 1)
    assert resolve_entity(platform, EntityRef("syn6"), header=header) == TreeSource(header)
    assert platform.calls == []  # (the CLI fetched it to check it against its flags: once per get)


def test_a_file_resolves_at_the_version_named_which_must_exist():
    platform = FakePlatform(WORLD)
    current = resolve_entity(platform, EntityRef("syn1"))
    assert current == FileSource(EntityHeader("syn1", "a.csv", F, 3)) and not current.mirrors_container
    assert platform.calls == [("header", "syn1")]
    platform.calls.clear()
    older = resolve_entity(platform, EntityRef("syn1", 2))
    assert isinstance(older, FileSource) and older.root.version_number == 2 and older.root_id == "syn1"
    assert platform.calls == [("header", "syn1"), ("entity", "syn1", 2)]
    with pytest.raises(NotFoundError):
        resolve_entity(platform, EntityRef("syn1", 7))


@pytest.mark.parametrize(
    "ref, message",
    [
        (EntityRef("syn4", 2), "a folder has no versions"),
        (EntityRef("syn10"), "syn10 is a table; sync takes a project, folder, file, dataset or dataset collection"),
    ],
)
def test_what_a_sync_cannot_take_is_a_usage_error(ref, message):
    with pytest.raises(ConfigError, match=message):
        resolve_entity(FakePlatform(WORLD), ref)


def test_a_dataset_synced_by_id_is_a_list_of_its_items_owned_by_its_id():
    platform = FakePlatform(WORLD)
    source = resolve_entity(platform, EntityRef("syn5"))
    assert isinstance(source, ListSource) and source.root == EntityHeader("syn5", "d", DS, 2)
    assert (source.root_id, source.description, source.mirrors_container) == ("syn5", "d", False)
    assert [(e.header.id, e.header.version_number) for e in source.plan.entries] == [("syn1", 2), ("syn2", 1)]
    assert platform.calls[0] == ("header", "syn5")  # once: plan_sources is given it


def test_ids_resolve_to_a_list_owned_by_the_list_or_the_one_id():
    platform = FakePlatform(WORLD)
    several = resolve_ids(platform, [EntityRef("syn1"), EntityRef("syn2")], recursive=False)
    assert (several.root_id, several.description, several.mirrors_container) == (LIST_ROOT, "2 ids", False)
    assert several.query is None and several.described == {}
    one = resolve_ids(platform, [EntityRef("syn2")], recursive=False)
    assert (one.root_id, one.description) == ("syn2", "1 id")


def test_one_folder_id_alone_is_that_folders_mirror():
    source = resolve_ids(FakePlatform(WORLD), [EntityRef("syn4")], recursive=True)
    assert (source.root_id, source.description, source.mirrors_container) == ("syn4", "raw", True)


def _view_page(*rows):
    columns = ("id", "dataFileHandleId", "dataFileMD5Hex", "dataFileSizeBytes", "parentId")
    return QueryPage(
        columns=columns,
        rows=tuple(
            QueryRow(row_id=int(i[3:]), version=version, values=(i, h, m, s, p)) for i, version, h, m, s, p in rows
        ),
    )


def test_a_query_over_a_view_carries_what_its_rows_describe_and_the_report_of_the_query():
    md5 = "0" * 32
    platform = FakePlatform(
        WORLD, pages=[_view_page(("syn1", 3, "11", md5, "5", "syn4"), ("syn2", 1, "12", md5, "7", "syn4"))]
    )
    source = resolve_query(platform, "SELECT * FROM syn9", table_id="syn9", recursive=False)
    assert (source.root_id, source.description, source.mirrors_container) == (LIST_ROOT, "query", False)
    assert sorted(source.described) == [("syn1", 3), ("syn2", 1)]
    facts = source.described["syn2", 1]
    assert (facts.handle.id, facts.handle.content_size, facts.parent_id, facts.from_row) == ("12", 7, "syn4", True)
    assert source.query is not None and (source.query.table, source.query.rows, source.query.entities) == ("syn9", 2, 2)
    # the view's header rides along with its rows' entities: one header call for all
    assert platform.calls == [("query", "syn9"), ("headers", 3)]


def test_a_query_over_a_table_describes_no_file():
    md5 = "0" * 32
    platform = FakePlatform(WORLD, pages=[_view_page(("syn1", 3, "11", md5, "5", "syn4"))])
    source = resolve_query(platform, "SELECT * FROM syn10", table_id="syn10", recursive=False)
    assert source.described == {} and [e.header.id for e in source.plan.entries] == ["syn1"]


def test_a_query_that_selects_nothing_is_an_empty_list():
    platform = FakePlatform(WORLD, pages=[_view_page()])
    source = resolve_query(platform, "SELECT * FROM syn9 WHERE 1=0", table_id="syn9", recursive=False)
    assert source.plan.entries == [] and source.query is not None and source.query.rows == 0


def test_given_files_are_owned_by_the_root_named_and_sources_are_frozen():
    files = ((EntityHeader("syn1", "a.csv", F, 3), RemotePath(("x", "a.csv"))),)
    source = GivenFiles(files, root_id="syn99")
    assert (source.root_id, source.description, source.mirrors_container) == ("syn99", "syn99", False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        source.root_id = "syn1"  # type: ignore[misc]
