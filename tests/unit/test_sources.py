"""plan_sources: what a list of ids, a dataset or a collection resolves to, with a fake platform (no HTTP)."""

from __future__ import annotations

import pytest

from synclient.errors import ConfigError, NotFoundError, UnsupportedError
from synclient.platform.models import Entity, EntityHeader, EntityType
from synclient.sync.records.index import IndexRow
from synclient.sync.sources.by_id import plan_sources
from synclient.sync.sources.id_lists import EntityRef

F, D, P, DS, DC, T = (
    EntityType.FILE,
    EntityType.FOLDER,
    EntityType.PROJECT,
    EntityType.DATASET,
    EntityType.DATASET_COLLECTION,
    EntityType.OTHER,
)


class FakePlatform:
    """Headers and items of a few entities; counts calls as the real platform's REST calls would be."""

    def __init__(self, entities):
        self.entities = {
            entity_id: (name, kind, version, items)
            for entity_id, name, kind, version, *rest in entities
            for items in [rest[0] if rest else ()]
        }
        self.calls = []

    def get_entity_headers(self, ids):
        self.calls.append(("headers", len(ids)))
        return {
            i: EntityHeader(i, self.entities[i][0], self.entities[i][1], self.entities[i][2])
            for i in ids
            if i in self.entities
        }

    def get_entity(self, entity_id, *, version=None):
        self.calls.append(("entity", entity_id))
        name, kind, current, items = self.entities[entity_id]
        return Entity(id=entity_id, name=name, type=kind, version_number=version or current, items=tuple(items))


WORLD = FakePlatform(
    [
        ("syn1", "a.csv", F, 3),
        ("syn2", "a.csv", F, 1),
        ("syn3", "b.csv", F, 2),
        ("syn4", "raw", D, 1),
        ("syn5", "d", DS, 1, [("syn1", 2), ("syn2", 1), ("syn3", None)]),
        ("syn6", "p", P, 1),
        ("syn7", "e", DS, 1, [("syn3", 1), ("syn9", 1), ("syn4", None)]),
        ("syn8", "c", DC, 1, [("syn5", 1), ("syn7", 1)]),
        ("syn10", "t", T, 1),
        ("syn11", "a (syn2).csv", F, 1),
        ("syn12", "d", F, 1),
    ]
)


class Plan:
    """A plan laid out against an index that holds ``rows`` (none: a new target)."""

    def __init__(self, ids, recursive, platform, rows):
        platform.calls.clear()
        self.plan = plan_sources(platform, [EntityRef.parse(i) for i in ids], recursive=recursive)
        self.refused = self.plan.refused
        self.layout = self.plan.laid_out(lambda folder: [r for r in rows if _in(folder, r)])
        self.files, self.containers, self.renamed = self.layout.files, self.layout.containers, self.layout.renamed


def _in(folder, row):
    return any(path.rpartition("/")[0] == folder for path in (row.rel_path, row.local_path))


def plan(*ids, recursive=False, platform=WORLD, rows=()):
    return Plan(ids, recursive, platform, rows)


def row(rel_path, entity_id, *, local_path=None, root_id="ids"):
    return IndexRow(
        rel_path=rel_path,
        local_path=local_path or rel_path,
        root_id=root_id,
        entity_id=entity_id,
        version=1,
        file_handle_id="1",
        md5=None,
        size=1,
        content_type=None,
        parent_id=None,
        local_size=1,
        mtime_ns=1,
    )


def files_of(result):
    return [(header.id, header.version_number, rel.text) for header, rel in result.files]


def test_files_land_flat_at_the_version_named_or_current():
    result = plan("syn1.2", "syn3")
    assert files_of(result) == [("syn1", 2, "a.csv"), ("syn3", 2, "b.csv")]
    assert WORLD.calls == [("headers", 2)]  # one call for the whole list


def test_the_first_keeps_a_name_later_ones_get_their_id_in_it_deterministically():
    first = plan("syn1", "syn2", "syn1.1")
    # another version of a file that already has a name here gets its version in the name
    assert files_of(first) == [("syn1", 3, "a.csv"), ("syn2", 1, "a (syn2).csv"), ("syn1", 1, "a (syn1.1).csv")]
    assert [str(r) for r in first.renamed] == [
        "syn2.1: a.csv -> a (syn2).csv (the name was taken)",
        "syn1.1: a.csv -> a (syn1.1).csv (the name was taken)",
    ]
    assert files_of(plan("syn1", "syn2", "syn1.1")) == files_of(first)  # the same list, the same names
    assert files_of(plan("syn2", "syn1"))[1] == ("syn1", 3, "a (syn1).csv")  # in a new target the order decides


def test_another_version_of_a_renamed_file_and_a_name_made_to_clash():
    # syn11 is really called "a (syn2).csv": syn2's rename has to step around it
    result = plan("syn1", "syn11", "syn2", "syn2.3", "syn2.3")
    assert files_of(result) == [
        ("syn1", 3, "a.csv"),
        ("syn11", 1, "a (syn2).csv"),
        ("syn2", 1, "a (syn2.1).csv"),
        ("syn2", 3, "a (syn2.3).csv"),
    ]
    assert len({rel for _, _, rel in files_of(result)}) == 4  # the same version twice is fetched once


def test_names_the_index_holds_stay_with_their_files_whatever_the_order():
    before = [row("a.csv", "syn1"), row("a (syn2).csv", "syn2")]  # an earlier run of [syn1, syn2]
    assert files_of(plan("syn2", "syn1", rows=before)) == [("syn2", 1, "a (syn2).csv"), ("syn1", 3, "a.csv")]


def test_a_name_the_index_holds_for_another_file_is_never_taken():
    # a synced tree's a.csv (another entity), and a keep.both copy of syn3 at "a (syn1).csv"
    taken = [row("a.csv", "syn99", root_id="syn50"), row("b.csv", "syn3", local_path="a (syn1).csv")]
    result = plan("syn1", "syn3", rows=taken)
    assert files_of(result) == [("syn1", 3, "a (syn1.3).csv"), ("syn3", 2, "b.csv")]
    assert [str(r) for r in result.renamed] == ["syn1.3: a.csv -> a (syn1.3).csv (the name was taken)"]


def test_a_container_or_dataset_named_twice_is_fetched_once():
    result = plan("syn6", "syn6", "syn5", "syn5", recursive=True)
    assert [(c.header.id, c.rel_dir) for c in result.containers] == [("syn6", "p")]
    assert [rel for _, _, rel in files_of(result)] == ["d/a.csv", "d/a (syn2).csv", "d/b.csv"]
    assert [r.given for r in result.renamed] == ["d/a (syn2).csv"]  # the dataset's own clash, once


def test_a_dataset_alone_fills_the_target_with_its_pinned_items():
    result = plan("syn5")
    assert files_of(result) == [("syn1", 2, "a.csv"), ("syn2", 1, "a (syn2).csv"), ("syn3", 2, "b.csv")]
    assert WORLD.calls == [("headers", 1), ("entity", "syn5"), ("headers", 3)]


def test_a_collection_gives_a_folder_per_dataset_and_bad_items_fail_alone():
    result = plan("syn8")
    assert files_of(result) == [
        ("syn1", 2, "d/a.csv"),
        ("syn2", 1, "d/a (syn2).csv"),
        ("syn3", 2, "d/b.csv"),
        ("syn3", 1, "e/b.csv"),
    ]
    refused = {header.id: error for header, error in result.refused}
    assert isinstance(refused["syn9"], NotFoundError) and "an item of syn7" in str(refused["syn9"])
    assert isinstance(refused["syn4"], UnsupportedError) and "is a folder, not a file" in str(refused["syn4"])


def test_in_a_list_containers_and_datasets_get_folders_named_after_them():
    result = plan("syn12", "syn6", "syn5", "syn10", "syn404", recursive=True)
    assert [(c.header.id, c.rel_dir) for c in result.containers] == [("syn6", "p")]
    # the file syn12 is called "d": the dataset "d" that comes later is renamed, not mixed into it
    assert files_of(result)[0] == ("syn12", 1, "d")
    assert [rel for _, _, rel in files_of(result)[1:]] == ["d (syn5)/a.csv", "d (syn5)/a (syn2).csv", "d (syn5)/b.csv"]
    refused = {header.id: type(error) for header, error in result.refused}
    assert refused == {"syn10": UnsupportedError, "syn404": NotFoundError}


def test_one_container_alone_is_walked_into_the_target_itself():
    result = plan("syn4", recursive=True)
    assert result.plan.one_container.id == "syn4" and result.containers[0].rel_dir == ""


@pytest.mark.parametrize(
    "ids, recursive, message",
    [
        (("syn4",), False, "syn4 is a folder; pass -r"),
        (("syn1", "syn6"), False, "syn6 is a project; pass -r"),
        (("syn6.2",), True, "syn6.2: a project has no versions to choose from"),
    ],
)
def test_usage_errors(ids, recursive, message):
    with pytest.raises(ConfigError, match=message):
        plan(*ids, recursive=recursive)


def test_a_file_named_at_an_earlier_version_than_its_current_one_says_so():
    result = plan("syn1.2", "syn1.3", "syn3", "syn5")  # syn1 is at 3; the dataset pins syn1 at 2, syn3 at none
    said = {
        (e.header.id, e.header.version_number): e.earlier_version
        for e in result.plan.entries + result.plan.entries[-1].children
        if e.kind.value == "file"
    }
    assert said == {("syn1", 2): True, ("syn1", 3): False, ("syn3", 2): False, ("syn2", 1): False}
