"""keep_remote_paths (--keep-paths): a list's files at their remote paths, each parent from the cheapest source that
says it, the plan rebuilt as a tree and named by the list's rules; with a fake platform that counts its calls."""

from __future__ import annotations

import threading

import pytest
from test_remote_paths import WORLD, FakePaths

from synclient.errors import AccessDeniedError, CallCancelledError, NotFoundError, ServerError
from synclient.platform.models import Entity, EntityHeader, EntityType, FileBundle, FileHandle
from synclient.sync.sources.by_id import Entry, EntryKind, FileVersionFacts, SourcePlan
from synclient.sync.sources.kept_paths import keep_remote_paths
from synclient.sync.sources.remote_paths import FolderPaths

F = EntityType.FILE
#: file id -> (name, parent folder id)
FILES = {
    "syn101": ("a.txt", "syn3"),  # alpha/raw/2024
    "syn102": ("b.txt", "syn3"),
    "syn103": ("c.txt", "syn2"),  # alpha/raw
    "syn104": ("d.txt", "syn1"),  # alpha
    "syn105": ("e.txt", "syn5"),  # beta/raw
    "syn106": ("f.txt", "syn7"),  # beta/../inner: hostile
    "syn107": ("g.txt", "syn8"),  # alpha/a\b: hostile
    "syn108": ("h.txt", "syn10"),  # alpha/secret: may not be read
    "syn109": ("a.txt", "syn5"),  # beta/raw/a.txt
}


class FakeBundles:
    """``POST /entity/{id}/bundle2`` for FILES; counts its calls; ``refused``: ids whose bundle fails."""

    def __init__(self, refused=()):
        self.asked = []
        self.refused = set(refused)

    def __call__(self, header):
        self.asked.append(header.id)
        if header.id in self.refused:
            raise AccessDeniedError(f"{header.id}: no READ", status=403)
        name, parent = FILES[header.id]
        handle = FileHandle(id=f"h{header.id}", content_size=1, content_md5="0" * 32)
        entity = Entity(header.id, name, F, parent, header.version_number or 1, handle.id, raw={"id": header.id})
        return FileBundle(entity, handle, {"annotations": {"k": {"type": "STRING", "value": ["v"]}}})


def file_entry(file_id, version=1):
    return Entry(EntityHeader(file_id, FILES[file_id][0], F, version), EntryKind.FILE)


def plan_of(*entries):
    return SourcePlan(entries=list(entries))


def keep(plan, *, lookup=None, bundles=None, described=None, indexed=None, view=None):
    lookup = lookup or FakePaths(WORLD, unreadable={"syn10"})
    bundles = bundles or FakeBundles()
    kept = keep_remote_paths(
        plan,
        folder_paths=FolderPaths(lookup, lookup.headers),
        bundle_of=bundles,
        described=described or {},
        indexed_parent=lambda header: (indexed or {}).get(header.id),
        fetches=4,
        view=view,
    )
    return kept, lookup, bundles


def paths_of(kept, rows=()):
    layout = kept.plan.laid_out(lambda folder: list(rows))
    return {
        header.id if header.version_number in (None, 1) else f"{header.id}.{header.version_number}": remote.text
        for header, remote in layout.files
    }, layout


def test_files_of_two_projects_land_at_their_remote_paths_with_one_path_call_per_unnamed_folder():
    ids = ["syn101", "syn102", "syn103", "syn104", "syn105", "syn109"]
    kept, lookup, bundles = keep(plan_of(*map(file_entry, ids)))
    placed, layout = paths_of(kept)
    assert placed == {
        "syn101": "alpha/raw/2024/a.txt",
        "syn102": "alpha/raw/2024/b.txt",
        "syn103": "alpha/raw/c.txt",
        "syn104": "alpha/d.txt",
        "syn105": "beta/raw/e.txt",
        "syn109": "beta/raw/a.txt",
    }
    # 6 files in 4 folders: syn3's chain names syn2 and syn1: 2 path calls; one bundle per file, handed on
    assert lookup.asked == ["syn3", "syn5"] and kept.path_calls == 2
    assert sorted(bundles.asked) == sorted(ids) and kept.bundle_calls == 6
    assert set(kept.described) == {(i, 1) for i in ids}
    assert kept.described["syn101", 1].entity == {"id": "syn101"} and kept.described["syn101", 1].annotations
    assert not kept.notes and not layout.renamed and not layout.refused
    # the projects and folders are the list's folders, each claimed for its own entity
    assert {(f.header.id, f.rel_dir) for f in layout.folders} == {
        ("syn1", "alpha"),
        ("syn2", "alpha/raw"),
        ("syn3", "alpha/raw/2024"),
        ("syn4", "beta"),
        ("syn5", "beta/raw"),
    }


def test_a_view_row_or_the_index_says_the_parent_and_no_bundle_is_made():
    row = FileVersionFacts(FileHandle(id="h", content_size=1, content_md5="0" * 32), 1, "syn3", from_row=True)
    kept, lookup, bundles = keep(
        plan_of(file_entry("syn101"), file_entry("syn103"), file_entry("syn105")),
        described={("syn101", 1): row},
        indexed={"syn103": "syn2"},
        view=lambda entity_id, version: row if entity_id == "syn105" else None,
    )
    placed, _ = paths_of(kept)
    assert placed == {"syn101": "alpha/raw/2024/a.txt", "syn103": "alpha/raw/c.txt", "syn105": "alpha/raw/2024/e.txt"}
    assert bundles.asked == [] and kept.described == {}  # (the row said syn105's folder is syn3: it is believed)


def test_hostile_and_unreadable_folders_land_their_files_flat_each_with_a_one_line_note():
    kept, _, _ = keep(plan_of(file_entry("syn106"), file_entry("syn107"), file_entry("syn108"), file_entry("syn101")))
    placed, _ = paths_of(kept)
    assert placed == {"syn106": "f.txt", "syn107": "g.txt", "syn108": "h.txt", "syn101": "alpha/raw/2024/a.txt"}
    assert len(kept.notes) == 3 and all("\n" not in note for note in kept.notes)
    assert kept.notes[0].startswith("syn106.1 lands flat") and "can be no local name" in kept.notes[0]
    assert "syn10 may not be read" in kept.notes[2]
    for path in placed.values():
        assert ".." not in path.split("/") and "\x00" not in path


def test_a_file_whose_bundle_fails_is_refused_with_its_error_and_asked_once():
    kept, _, bundles = keep(plan_of(file_entry("syn101"), file_entry("syn102")), bundles=FakeBundles({"syn102"}))
    placed, _ = paths_of(kept)
    assert placed == {"syn101": "alpha/raw/2024/a.txt"}
    assert [(h.id, type(e)) for h, e in kept.plan.refused] == [("syn102", AccessDeniedError)]
    assert bundles.asked.count("syn102") == 1


def test_one_file_at_two_versions_gets_the_lists_versioned_name():
    kept, _, _ = keep(plan_of(file_entry("syn101", 1), file_entry("syn101", 2)))
    placed, layout = paths_of(kept)
    assert placed == {"syn101": "alpha/raw/2024/a.txt", "syn101.2": "alpha/raw/2024/a (syn101.2).txt"}
    assert [str(r) for r in layout.renamed] == [
        "syn101.2: alpha/raw/2024/a.txt -> alpha/raw/2024/a (syn101.2).txt (the name was taken)"
    ]


def test_two_projects_of_one_name_are_two_folders_the_later_named_with_its_id():
    world = dict(WORLD, syn4=("alpha", EntityType.PROJECT, None))  # beta renamed alpha: two projects "alpha"
    kept, _, _ = keep(plan_of(file_entry("syn101"), file_entry("syn105")), lookup=FakePaths(world))
    placed, layout = paths_of(kept)
    assert placed == {"syn101": "alpha/raw/2024/a.txt", "syn105": "alpha (syn4)/raw/e.txt"}
    assert [str(r) for r in layout.renamed] == ["syn4: alpha -> alpha (syn4) (the name was taken)"]


def test_a_listed_folder_goes_to_its_own_path_and_takes_the_files_inside_it():
    folder = Entry(EntityHeader("syn2", "raw", EntityType.FOLDER), EntryKind.CONTAINER)
    kept, lookup, bundles = keep(plan_of(folder, file_entry("syn101"), file_entry("syn104"), file_entry("syn105")))
    placed, layout = paths_of(kept)
    assert [(c.header.id, c.rel_dir) for c in layout.containers] == [("syn2", "alpha/raw")]
    assert placed == {"syn104": "alpha/d.txt", "syn105": "beta/raw/e.txt"}  # syn101 is the walk's (alpha/raw/2024)
    assert lookup.asked == ["syn2", "syn3", "syn5"]  # syn2's chain names syn1


def test_a_datasets_items_leave_its_folder_and_those_without_a_path_stay_in_it():
    dataset = Entry(
        EntityHeader("syn200", "picks", EntityType.DATASET),
        EntryKind.FOLDER,
        [file_entry("syn101"), file_entry("syn106")],
    )
    kept, _, _ = keep(plan_of(dataset))
    placed, layout = paths_of(kept)
    assert placed == {"syn101": "alpha/raw/2024/a.txt", "syn106": "picks/f.txt"}


def test_a_name_the_index_holds_for_another_file_is_not_taken():
    from synclient.sync.records.index import IndexRow

    held = IndexRow(
        rel_path="alpha/raw/2024/a.txt",
        local_path="alpha/raw/2024/a.txt",
        root_id="ids",
        entity_id="syn999",
        version=1,
        file_handle_id="h",
        md5=None,
        size=1,
        content_type=None,
        parent_id="syn3",
        local_size=1,
        mtime_ns=1,
    )
    kept, _, _ = keep(plan_of(file_entry("syn101")))
    layout = kept.plan.laid_out(lambda folder: [held] if folder == "alpha/raw/2024" else [])
    assert [remote.text for _, remote in layout.files] == ["alpha/raw/2024/a (syn101).txt"]


@pytest.mark.parametrize("fetches", [1, 8])
def test_bundles_are_asked_once_each_whatever_the_concurrency(fetches):
    lookup, bundles = FakePaths(WORLD), FakeBundles()
    ids = ["syn101", "syn102", "syn103", "syn105"]
    keep_remote_paths(
        plan_of(*map(file_entry, ids)),
        folder_paths=FolderPaths(lookup, lookup.headers),
        bundle_of=bundles,
        described={},
        indexed_parent=lambda header: None,
        fetches=fetches,
    )
    assert sorted(bundles.asked) == sorted(ids)


def test_a_listed_folder_without_a_path_is_walked_flat_with_a_note():
    folder = Entry(EntityHeader("syn7", "inner", EntityType.FOLDER), EntryKind.CONTAINER)  # under beta/..
    kept, _, _ = keep(plan_of(folder, file_entry("syn101")))
    placed, layout = paths_of(kept)
    assert [(c.header.id, c.rel_dir) for c in layout.containers] == [("syn7", "inner")]
    assert placed == {"syn101": "alpha/raw/2024/a.txt"}
    assert len(kept.notes) == 1 and kept.notes[0].startswith("syn7 lands flat")


def test_the_same_file_version_in_two_datasets_is_asked_once_and_lands_once():
    first = Entry(EntityHeader("syn200", "one", EntityType.DATASET), EntryKind.FOLDER, [file_entry("syn101")])
    second = Entry(EntityHeader("syn201", "two", EntityType.DATASET), EntryKind.FOLDER, [file_entry("syn101")])
    kept, _, bundles = keep(plan_of(first, second))
    placed, layout = paths_of(kept)
    assert bundles.asked == ["syn101"]
    assert [remote.text for _, remote in layout.files] == ["alpha/raw/2024/a.txt"]


def test_a_view_row_without_a_parent_gives_way_to_the_index():
    row = FileVersionFacts(FileHandle(id="h", content_size=1, content_md5="0" * 32), 1, None, from_row=True)
    kept, _, bundles = keep(plan_of(file_entry("syn103")), described={("syn103", 1): row}, indexed={"syn103": "syn2"})
    assert paths_of(kept)[0] == {"syn103": "alpha/raw/c.txt"} and bundles.asked == []


def test_an_earlier_version_of_a_file_in_a_listed_folder_lands_flat_with_a_note():
    folder = Entry(EntityHeader("syn2", "raw", EntityType.FOLDER), EntryKind.CONTAINER)
    earlier = Entry(EntityHeader("syn103", "c.txt", F, 1), EntryKind.FILE, earlier_version=True)
    kept, _, _ = keep(plan_of(folder, earlier, file_entry("syn101")))
    placed, layout = paths_of(kept)
    assert placed == {"syn103": "c.txt"}  # syn101 (current) is the walk's; syn103.1 is not: flat, as the list has it
    assert kept.notes == ["syn103.1 lands flat: the walk of syn2 puts its current version at its path"]


def test_ctrl_c_during_the_bundle_calls_cancels_the_calls_under_way_and_does_not_wait_for_them():
    cancel, under_way = threading.Event(), threading.Event()

    def bundle_of(header):
        if header.id == "syn101":  # Ctrl-C while another call waits to retry
            under_way.wait()
            raise KeyboardInterrupt
        under_way.set()
        cancel.wait(timeout=30)  # a call waiting to retry: the platform's cancel event stops it
        raise CallCancelledError("cancelled while waiting to retry")

    lookup = FakePaths(WORLD)
    with pytest.raises(KeyboardInterrupt):
        keep_remote_paths(
            plan_of(file_entry("syn101"), file_entry("syn102")),
            folder_paths=FolderPaths(lookup, lookup.headers),
            bundle_of=bundle_of,
            described={},
            indexed_parent=lambda header: None,
            fetches=2,
            cancel=cancel,
        )
    assert cancel.is_set()


def test_a_path_call_that_fails_but_for_a_refusal_to_read_fails_its_files_not_lands_them_flat():
    """A 5xx (its retries spent) says nothing of the folder: its files fail with it (the next run places them at
    their paths), where a 403 or 404 (the folder may not be read) lands them flat."""

    class Failing(FakePaths):
        def __call__(self, entity_id):
            if entity_id == "syn3":
                raise ServerError("GET /entity/{id}/path: 503 after 5 tries", status=503)
            return super().__call__(entity_id)

    folder = Entry(EntityHeader("syn3", "2024", EntityType.FOLDER), EntryKind.CONTAINER)
    kept, _, _ = keep(
        plan_of(file_entry("syn101"), file_entry("syn108"), file_entry("syn104"), folder),
        lookup=Failing(WORLD, unreadable={"syn10"}),
    )
    placed, _ = paths_of(kept)
    assert placed == {"syn108": "h.txt", "syn104": "alpha/d.txt"}  # (syn10 may not be read: flat)
    assert [(h.id, type(e)) for h, e in kept.plan.refused] == [("syn3", ServerError), ("syn101", ServerError)]
    assert [note.split()[0] for note in kept.notes] == ["syn108.1"]


def test_the_index_rows_read_for_parents_are_only_the_lists_files_whatever_the_targets_size():
    """A list of one file into a target whose index holds many rows of earlier lists: the rows are streamed and
    only the list's kept (memory by the list, not by the index)."""
    import tracemalloc
    from contextlib import contextmanager
    from pathlib import Path

    from synclient.sync.records.index import IndexRow
    from synclient.sync.sources.kept_paths import kept_paths_of

    class Index:
        target_root = Path("/nonexistent-target")

        def iter_rows(self, root_id):
            for n in range(20_000):
                yield IndexRow(
                    f"f/{n:06d}-{'x' * 40}.txt",
                    f"f/{n:06d}-{'x' * 40}.txt",
                    root_id,
                    f"syn{900000 + n}",
                    1,
                    str(n),
                    "0" * 32,
                    1,
                    None,
                    "syn2",
                    1,
                    1,
                )

    class Platform:
        lookup = FakePaths(WORLD)
        get_entity_path, get_entity_headers = lookup, lookup.headers

        @contextmanager
        def cancel_on(self, event):
            yield

    facts = FileVersionFacts(FileHandle(id="h", content_size=1, content_md5="0" * 32), 1, "syn3")
    tracemalloc.start()
    try:
        kept = kept_paths_of(
            plan_of(file_entry("syn101")),
            platform=Platform(),
            index=Index(),
            root_id="ids",
            described={("syn101", 1): facts},
            fetches=1,
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert paths_of(kept)[0] == {"syn101": "alpha/raw/2024/a.txt"}
    assert peak < 1_000_000  # (all 20,000 rows held: several MB)


def test_a_parent_the_index_remembers_that_is_gone_is_asked_of_the_files_bundle_once():
    """The index says the folder a file was in; when that folder no longer exists (the file was moved and the folder
    deleted), the file's bundle says where it is now, rather than the file landing flat. A folder that exists but
    may not be read costs no bundle: the file's folder is the same."""

    class Gone(FakePaths):
        def __call__(self, entity_id):
            if entity_id == "syn99":
                self.asked.append(entity_id)
                raise NotFoundError("GET /entity/{id}/path: HTTP 404: Resource: 'syn99' does not exist", status=404)
            return super().__call__(entity_id)

    kept, lookup, bundles = keep(
        plan_of(file_entry("syn101"), file_entry("syn108"), file_entry("syn104")),
        lookup=Gone(WORLD, unreadable={"syn10"}),
        indexed={"syn101": "syn99", "syn108": "syn10", "syn104": "syn1"},
    )
    placed, _ = paths_of(kept)
    assert placed == {"syn101": "alpha/raw/2024/a.txt", "syn108": "h.txt", "syn104": "alpha/d.txt"}
    assert bundles.asked == ["syn101"] and ("syn101", 1) in kept.described  # (handed on: not asked again)
    assert [note.split()[0] for note in kept.notes] == ["syn108.1"]
    assert lookup.asked == ["syn99", "syn10", "syn1", "syn3"]


def test_a_hostile_chain_with_a_repeated_id_and_a_file_in_its_middle_stays_inside_its_project():
    from test_remote_paths import ROOT

    def path_of(entity_id):
        if entity_id != "syn3":
            raise AccessDeniedError(f"{entity_id}: no READ", status=403)
        project, raw = EntityHeader("syn1", "alpha", EntityType.PROJECT), EntityHeader("syn2", "raw", F)
        return [ROOT, project, raw, raw, EntityHeader("syn3", "2024", F)]

    kept = keep_remote_paths(
        plan_of(file_entry("syn101")),
        folder_paths=FolderPaths(path_of, lambda ids: {}),
        bundle_of=FakeBundles(),
        described={},
        indexed_parent=lambda header: None,
        fetches=1,
    )
    placed, layout = paths_of(kept)
    assert placed == {"syn101": "alpha/raw/2024/a.txt"} and not layout.refused
