"""Issue 29, defects 2 and 7: every source gets its local paths from one name gate (synclient/sync/local/name_gate.py).

A remote name with a ``/`` is refused for its entity by every source, as the walk refuses it (a file root, a list
of ids, a dataset in a collection), and two entities never share a local path, dry run included. A renaming is
reported only where the file is (or a dry run would put it) at the other name.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections import Counter

import pytest
from synctrees import local_tree

from synclient import Platform, SyncStatus, download_many, download_query, sync_from_platform
from synclient.emulator import Emulator
from synclient.errors import UnsafePathError

#: names Synapse refuses (a "/"): a hostile server's, so "names": "unchecked"
SPEC = {
    "names": "unchecked",
    "projects": [
        {
            "name": "p",
            "children": [
                {"type": "file", "name": "sub/evil.txt", "content": "evil"},
                {
                    "type": "folder",
                    "name": "sub",
                    "children": [{"type": "file", "name": "evil.txt", "content": "good"}],
                },
                {"type": "file", "name": "ok.txt", "content": "ok"},
                {"type": "dataset", "name": "x/ds", "items": [{"ref": "ok.txt"}]},
                {"type": "dataset", "name": "fine", "items": [{"ref": "ok.txt"}]},
                {"type": "datasetcollection", "name": "coll", "items": [{"ref": ["x/ds"]}, {"ref": "fine"}]},
                {"type": "entityview", "name": "files", "scope": [""], "columns": []},
            ],
        }
    ],
}


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    with Emulator(data_dir=str(tmp_path_factory.mktemp("emu"))) as emulator:
        project = emulator.seed_spec(SPEC)["p"]
        emulator.ids = {
            name: emulator.resolve(project, [name])
            for name in ("sub/evil.txt", "sub", "ok.txt", "x/ds", "fine", "coll", "files")
        }
        emulator.project = project
        yield emulator


def files(**contents: str):
    """The tree ``local_tree`` should see: path -> MD5 of its text."""
    return {path: hashlib.md5(text.encode()).hexdigest() for path, text in contents.items()}


def _get(emu, ids, target, **kwargs):
    with Platform(emu.endpoint, token=emu.token) as platform:
        return download_many(ids, target, platform=platform, on_error="continue", progress=False, **kwargs)


def _refused(results, entity_id):
    failed = {r.entity_id: r for r in results.failures}
    assert entity_id in failed, results.failures
    assert isinstance(failed[entity_id].error, UnsafePathError)
    assert "path separator" in str(failed[entity_id].error)


def test_a_file_root_named_with_a_slash_fails_alone_and_makes_no_folder(emu, tmp_path):
    evil = emu.ids["sub/evil.txt"]
    with Platform(emu.endpoint, token=emu.token) as platform:
        results = sync_from_platform(evil, tmp_path, platform=platform, on_error="continue", progress=False)
    _refused(results, evil)
    assert local_tree(tmp_path) == {} and not (tmp_path / "sub").exists()


def test_a_list_with_a_slash_named_file_fetches_the_others(emu, tmp_path):
    evil, ok = emu.ids["sub/evil.txt"], emu.ids["ok.txt"]
    results = _get(emu, [evil, ok], tmp_path)
    _refused(results, evil)
    assert local_tree(tmp_path) == files(**{"ok.txt": "ok"})
    assert [r.status for r in results if r.entity_id == ok] == [SyncStatus.DOWNLOADED]


def test_a_dataset_named_with_a_slash_in_a_collection_fails_alone(emu, tmp_path):
    results = _get(emu, [emu.ids["coll"], emu.ids["ok.txt"]], tmp_path)
    _refused(results, emu.ids["x/ds"])
    assert local_tree(tmp_path) == files(**{"ok.txt": "ok", "coll/fine/ok.txt": "ok"})
    assert not (tmp_path / "coll" / "x").exists() and not (tmp_path / "x").exists()


def test_a_folder_and_a_slash_named_file_never_share_a_path_and_reruns_are_stable(emu, tmp_path):
    ids = [emu.ids["sub"], emu.ids["sub/evil.txt"]]
    for _ in range(2):
        results = _get(emu, ids, tmp_path, recursive=True)
        _refused(results, emu.ids["sub/evil.txt"])
        assert local_tree(tmp_path) == files(**{"sub/evil.txt": "good"})  # the folder's file, never the other's bytes
    with Platform(emu.endpoint, token=emu.token) as platform:
        plan = download_many(ids, tmp_path / "fresh", platform=platform, recursive=True, dry_run=True)
    destinations = Counter(entry.destination for entry in plan.entries)
    assert [entry.rel_path for entry in plan.fetch_entries] == ["sub/evil.txt"]
    assert max(destinations.values()) == 1, destinations
    assert [f.entity_id for f in plan.failures] == [emu.ids["sub/evil.txt"]]


@pytest.mark.parametrize("columns", ["id", "*"])  # by bundle, or known from the view's own rows
def test_a_query_selecting_a_slash_named_file_fetches_the_others(emu, tmp_path, columns):
    with Platform(emu.endpoint, token=emu.token) as platform:
        results = download_query(
            f"SELECT {columns} FROM {emu.ids['files']}",
            tmp_path,
            platform=platform,
            on_error="continue",
            progress=False,
        )
    _refused(results, emu.ids["sub/evil.txt"])
    assert local_tree(tmp_path) == files(**{"ok.txt": "ok", "evil.txt": "good"})


def test_the_walk_refuses_the_slash_named_file_and_keeps_the_folder_file(emu, tmp_path):
    with Platform(emu.endpoint, token=emu.token) as platform:
        results = sync_from_platform(
            emu.project, tmp_path, platform=platform, on_error="continue", progress=False, manifest="suppress"
        )
    _refused(results, emu.ids["sub/evil.txt"])
    assert local_tree(tmp_path) == files(**{"ok.txt": "ok", "sub/evil.txt": "good"})


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_rename_is_reported_only_where_the_file_is(tmp_path, dry_run):
    spec = {
        "names": "unchecked",
        "projects": [
            {
                "name": "p",
                "children": [
                    {"type": "file", "name": name, "content": name} for name in ("Case.txt", "case.txt", "a:b")
                ]
                + [
                    {"type": "folder", "name": name, "children": [{"type": "file", "name": "f.txt", "content": name}]}
                    for name in ("Data", "data", "x:y")
                ],
            }
        ],
    }
    before = files(
        **{n: n for n in ("Case.txt", "case.txt", "a:b")}, **{f"{n}/f.txt": n for n in ("Data", "data", "x:y")}
    )
    with Emulator() as emu:
        project = emu.seed_spec(spec)["p"]
        with Platform(emu.endpoint, token=emu.token) as platform:
            first = sync_from_platform(project, tmp_path, platform=platform, progress=False)
            assert first.report.renamed == [] and len(first) == 6
            for _ in range(2):  # the same target, now said to be case-insensitive with Windows' names
                again = sync_from_platform(
                    project,
                    tmp_path,
                    platform=platform,
                    progress=False,
                    filesystem_names="case,windows",
                    dry_run=dry_run,
                )
                renamed = again.renamed if dry_run else again.report.renamed
                assert renamed == []  # every file stays where it is: nothing was renamed
                if not dry_run:
                    assert {r.status for r in again} == {SyncStatus.SKIPPED}
                    assert all(r.renamed is None for r in again)
                else:
                    assert not again.failures and not again.fetch_entries
                assert local_tree(tmp_path) == before
            # a new target with those rules: the files are at the other names, and so says the report
            fresh = sync_from_platform(
                project,
                tmp_path / "fresh",
                platform=platform,
                progress=False,
                filesystem_names="case,windows",
                dry_run=dry_run,
            )
            renamed = fresh.renamed if dry_run else fresh.report.renamed
            assert len(renamed) == 4 and any("a：b" in line for line in renamed), renamed
            assert any(line.startswith(f"{emu.resolve(project, 'x:y')}: x:y -> x：y ") for line in renamed), renamed
            if not dry_run:
                assert {"a：b", "x：y/f.txt"} <= set(local_tree(tmp_path / "fresh"))


def test_two_entries_of_one_name_in_a_listing_never_share_a_path(tmp_path):
    """A server that answers a folder's listing with two files of one name (the emulator refuses to make them: the
    second is renamed in its store directly): the first listed keeps the path, the other fails, run after run."""
    spec = {
        "projects": [
            {
                "name": "p",
                "children": [
                    {"type": "file", "name": "dup.txt", "content": "one"},
                    {"type": "file", "name": "dup2.txt", "content": "two"},
                ],
            }
        ]
    }
    with Emulator() as emu:
        project = emu.seed_spec(spec)["p"]
        first, second = emu.resolve(project, "dup.txt"), emu.resolve(project, "dup2.txt")
        with emu.store._lock:
            emu.store._touch(int(second[3:]), "name = ?", ("dup.txt",))
        with Platform(emu.endpoint, token=emu.token) as platform:
            for dry_run in (False, False, True):
                results = sync_from_platform(
                    project, tmp_path, platform=platform, on_error="continue", progress=False, dry_run=dry_run
                )
                assert [f.entity_id for f in results.failures] == [second]
                assert "already the local path of" in str(results.failures[0].error)
                assert local_tree(tmp_path) == files(**{"dup.txt": "one"})
                if dry_run:
                    assert [(e.entity_id, e.destination) for e in results.entries] == [(first, tmp_path / "dup.txt")]


def test_a_keep_both_copy_stays_its_files_when_a_remote_file_of_its_name_fails(tmp_path):
    """A remote file that now has the name of an earlier keep.both copy, and fails before it could take the path:
    the copy is still its own file's, up to date, in this run."""
    spec = {"projects": [{"name": "p", "children": [{"type": "file", "name": "x.txt", "content": "remote"}]}]}
    with Emulator() as emu:
        project = emu.seed_spec(spec)["p"]
        (tmp_path / "x.txt").write_text("the user's")
        with Platform(emu.endpoint, token=emu.token) as platform:
            first = sync_from_platform(project, tmp_path, platform=platform, if_collision="keep.both", progress=False)
            assert [r.path.name for r in first] == ["x(1).txt"]
            newcomer = emu.add_file(project, "x(1).txt", b"new")
            emu.set_deny(newcomer, "download")  # its bundle withholds the handle: it fails before it is decided
            again = sync_from_platform(
                project, tmp_path, platform=platform, if_collision="keep.both", progress=False, on_error="continue"
            )
        assert [f.entity_id for f in again.failures] == [newcomer]
        assert [(r.status, r.path.name) for r in again if r.ok] == [(SyncStatus.SKIPPED, "x(1).txt")]
        assert local_tree(tmp_path) == files(**{"x.txt": "the user's", "x(1).txt": "remote"})


@contextlib.contextmanager
def _two_of_one_name(name: str):
    """An emulator whose project has two files named ``name`` (in folders ``one`` and ``two``): (emulator, a
    platform of it, the two ids)."""
    spec = {
        "names": "unchecked",
        "projects": [
            {
                "name": "p",
                "children": [
                    {"type": "folder", "name": folder, "children": [{"type": "file", "name": name, "content": folder}]}
                    for folder in ("one", "two")
                ],
            }
        ],
    }
    with Emulator() as emu, Platform(emu.endpoint, token=emu.token) as platform:
        project = emu.seed_spec(spec)["p"]
        yield emu, platform, [emu.resolve(project, [folder, name]) for folder in ("one", "two")]


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_list_renaming_names_the_local_path_the_file_is_at(tmp_path, dry_run):
    """Two files of a list named ``a:b``: the second is renamed ``a:b (synN)``, which Windows' names then hold as
    ``a：b (synN)``. The report's line says where the file is (found by the sources model test: it named the
    remote form, which is on no disk), in a real run and a dry run, and again on a run that keeps the local file."""
    with _two_of_one_name("a:b") as (emu, platform, ids):
        runs = [dict(), dict(if_collision="keep.local")] if not dry_run else [dict(dry_run=True)]
        for options in runs:
            results = download_many(
                ids,
                tmp_path,
                platform=platform,
                on_error="continue",
                progress=False,
                filesystem_names="windows",
                **options,
            )
            renamed = results.renamed if dry_run else results.report.renamed
            assert f"{ids[1]}.1: a:b -> a：b ({ids[1]}) (the name was taken)" in renamed, renamed
            if not dry_run:
                assert set(local_tree(tmp_path)) == {"a：b", f"a：b ({ids[1]})"}


def test_a_list_renaming_names_where_a_file_synced_before_stays(tmp_path):
    """The same list synced first as the names are, then with Windows' names: the file the index already holds at
    ``a:b (synN)`` stays there, and the report says so (sources model test, seed 26 step 79), whatever the
    collision rule."""
    with _two_of_one_name("a:b") as (emu, platform, ids):
        download_many(ids, tmp_path, platform=platform, progress=False)
        before = local_tree(tmp_path)
        assert set(before) == {"a:b", f"a:b ({ids[1]})"}
        for collision in ("keep.local", "overwrite.local"):
            for dry_run in (True, False):
                results = download_many(
                    ids,
                    tmp_path,
                    platform=platform,
                    on_error="continue",
                    progress=False,
                    filesystem_names="windows",
                    if_collision=collision,
                    dry_run=dry_run,
                )
                renamed = results.renamed if dry_run else results.report.renamed
                lines = [line for line in renamed if "(the name was taken)" in line]
                assert lines == [f"{ids[1]}.1: a:b -> a:b ({ids[1]}) (the name was taken)"], renamed
                assert local_tree(tmp_path) == before


def test_a_list_renaming_of_a_file_that_failed_is_not_reported(tmp_path):
    """Two files of a list named ``a.txt``; the second's answer is refused (a hostile size): it is at no name, so
    no ``(the name was taken)`` line says it is (found by the sources model test, hostile seed 32, step 113)."""
    from synclient.emulator import hostile

    with _two_of_one_name("a.txt") as (emu, platform, ids):
        handles = [platform.get_file_bundle(entity).file_handle.id for entity in ids]
        seed = next(
            seed
            for seed in range(1000)
            if [
                hostile.chosen(
                    emu.knobs.replace(fault_seed=seed, hostile_rate=0.5, hostile_kinds="sizes"), "sizes", handle
                )
                for handle in handles
            ]
            == [False, True]
        )
        emu.set_knobs(fault_seed=seed, hostile_rate=0.5, hostile_kinds="sizes")
        for dry_run in (True, False):
            results = download_many(
                ids, tmp_path, platform=platform, on_error="continue", progress=False, dry_run=dry_run
            )
            assert [r.entity_id for r in results.failures] == [ids[1]]
            assert (results.renamed if dry_run else results.report.renamed) == []
        assert local_tree(tmp_path) == files(**{"a.txt": "one"})
