"""Files named by their handles' fileName (synclient.sync.plan.handle_names, issue 30 item 20): twins of one fileName
in a folder are named apart by id whatever the listing's order, a folder keeps its name, and a file whose bundle
cannot be had keeps its entity name."""

from __future__ import annotations

import itertools

from synclient.errors import AccessDeniedError
from synclient.platform.models import Entity, EntityHeader, EntityType, FileBundle, FileHandle
from synclient.sync.plan.handle_names import HandleNames

FILE_NAMES = {"syn5": "same.csv", "syn12": "same.csv", "syn40": "d", "syn7": "own.txt"}


class FakePlatform:
    def __init__(self) -> None:
        self.calls = 0

    def get_file_bundle(self, entity_id, *, version=None, include_annotations=False):
        self.calls += 1
        if entity_id == "syn99":
            raise AccessDeniedError(f"{entity_id}: denied")
        handle = FileHandle(id=f"h{entity_id}", content_size=1, content_md5="0" * 32, file_name=FILE_NAMES[entity_id])
        return FileBundle(
            Entity(id=entity_id, name="entity", type=EntityType.FILE, data_file_handle_id=handle.id), handle
        )


def _file(entity_id: str, name: str) -> EntityHeader:
    return EntityHeader(id=entity_id, name=name, type=EntityType.FILE, version_number=1)


LISTING = [
    _file("syn12", "b"),
    _file("syn5", "a"),
    EntityHeader(id="syn3", name="d", type=EntityType.FOLDER),
    _file("syn40", "c"),
    _file("syn7", "e"),
    _file("syn99", "secret"),
]


def test_twins_are_named_apart_by_id_whatever_the_order():
    answers = set()
    for order in itertools.permutations(LISTING):
        named = HandleNames(FakePlatform()).listing(list(order))
        answers.add(frozenset((h.id, h.name) for h in named))
    assert answers == {
        frozenset(
            {
                ("syn5", "same.csv"),
                ("syn12", "same (syn12).csv"),
                ("syn3", "d"),
                ("syn40", "d (syn40)"),
                ("syn7", "own.txt"),
                ("syn99", "secret"),
            }
        )
    }


def test_each_bundle_is_fetched_once_and_handed_over_once():
    platform = FakePlatform()
    names = HandleNames(platform, fetches=2)
    names.listing(LISTING)
    assert platform.calls == 5
    assert names.take("syn5", 1).entity.id == "syn5" and names.take("syn5", 1) is None
    assert names.take("syn99", 1) is None  # denied: no bundle, its entity name kept
