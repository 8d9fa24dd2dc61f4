"""Issue 18: names a local filesystem cannot hold, with the filesystem probe's answer forced (Linux here has no
case-folding filesystem): case and Unicode twins, Windows' names, over-long paths."""

from __future__ import annotations

import csv
import os
import unicodedata
from pathlib import Path

import pytest
from synctrees import MANIFEST, local_tree

from synclient import Platform, SyncStatus, download_many, sync_from_platform
from synclient.emulator import Emulator
from synclient.errors import UnsafePathError
from synclient.sync.local.local_names import PROBE_ENV, FilesystemNames

NFC, NFD = unicodedata.normalize("NFC", "café.txt"), unicodedata.normalize("NFD", "café.txt")


def platform_for(emu: Emulator) -> Platform:
    return Platform(endpoint=emu.endpoint, token=emu.token)


def _file(name: str, content: str) -> dict:
    return {"type": "file", "name": name, "content": content}


def _sync(emu, project, target, names, **kwargs):
    return sync_from_platform(
        project, target, platform=platform_for(emu), filesystem_names=names, progress=False, **kwargs
    )


def _by_id(results):
    return {r.entity_id: r for r in results}


def _fold(name: str) -> str:
    return unicodedata.normalize("NFC", name).casefold()


def _folded_twins(root: Path):
    """Entries of one folder that a case- and normalization-insensitive filesystem would take for one."""
    twins = []
    for folder, dirs, files in os.walk(root):
        seen = {}
        for name in dirs + files:
            seen.setdefault(_fold(name), []).append(name)
        twins += [(os.path.relpath(folder, root), sorted(names)) for names in seen.values() if len(names) > 1]
    return twins


@pytest.fixture
def emu():
    with Emulator() as emulator:
        yield emulator


def test_case_twins_both_land_under_distinct_names_resync_is_a_no_op_and_delete_removes_the_right_one(emu, tmp_path):
    spec = {
        "projects": [
            {
                "name": "p",
                "children": [
                    _file("Case.txt", "upper"),
                    _file("case.txt", "lower"),
                    _file("other.txt", "other"),
                    {"type": "folder", "name": "Data", "children": [_file("a.txt", "big D")]},
                    {"type": "folder", "name": "data", "children": [_file("a.txt", "small d")]},
                ],
            }
        ]
    }
    project = emu.seed_spec(spec)["p"]
    upper, lower = emu.resolve(project, "Case.txt"), emu.resolve(project, "case.txt")
    big, small = emu.resolve(project, "Data"), emu.resolve(project, "data")
    older, newer = sorted([upper, lower], key=lambda i: int(i[3:]))
    older_folder, newer_folder = sorted([big, small], key=lambda i: int(i[3:]))

    first = _sync(emu, project, tmp_path, "case")
    assert {r.status for r in first} == {SyncStatus.DOWNLOADED} and len(first) == 5
    names = {upper: "Case.txt", lower: "case.txt"}
    stem, ext = names[newer].split(".")
    renamed_file = f"{stem} ({newer}).{ext}"
    folders = {big: "Data", small: "data"}
    renamed_folder = f"{folders[newer_folder]} ({newer_folder})"
    assert sorted(local_tree(tmp_path)) == sorted(
        [names[older], renamed_file, "other.txt", f"{folders[older_folder]}/a.txt", f"{renamed_folder}/a.txt"]
    )
    assert (tmp_path / names[older]).read_text() == ("upper" if older == upper else "lower")
    assert (tmp_path / renamed_file).read_text() == ("upper" if newer == upper else "lower")
    results = _by_id(first)
    assert results[older].renamed is None
    assert "differs only in case" in results[newer].renamed and names[older] in results[newer].renamed
    assert results[newer].to_json()["renamed"] == results[newer].renamed
    lines = first.report.renamed
    assert len(lines) == 2 and "renamed" in first.report.summary()
    assert any(line.startswith(f"{newer}: {names[newer]} -> {renamed_file} (") for line in lines)
    assert any(line.startswith(f"{newer_folder}: {folders[newer_folder]} -> {renamed_folder} (") for line in lines)

    # the manifest keeps the remote name beside the local path
    with open(tmp_path / MANIFEST, newline="") as handle:
        rows = {row["path"].rsplit("/", 1)[-1]: row for row in csv.DictReader(handle, delimiter="\t")}
    assert rows[renamed_file]["name"] == names[newer] and rows[renamed_file]["id"] == newer

    emu.reset_stats()
    again = _sync(emu, project, tmp_path, "case")
    assert {r.status for r in again} == {SyncStatus.SKIPPED} and len(again) == 5
    assert emu.stats()["data_requests"] == 0
    assert "POST /repo/v1/entity/{id}/version/{v}/bundle2" not in emu.stats()["api_by_route"]
    assert _by_id(again)[newer].renamed == results[newer].renamed  # still said on a no-op run

    emu.delete_entity(newer)
    emu.delete_entity(older_folder)
    third = _sync(emu, project, tmp_path, "case", delete=True)
    deleted = sorted(r.path.relative_to(tmp_path).as_posix() for r in third if r.status is SyncStatus.DELETED)
    assert deleted == sorted([renamed_file, f"{folders[older_folder]}/a.txt"])
    assert sorted(local_tree(tmp_path)) == sorted([names[older], "other.txt", f"{renamed_folder}/a.txt"])
    assert {r.status for r in third if r.status is not SyncStatus.DELETED} == {SyncStatus.SKIPPED}


def test_a_twin_added_later_never_renames_the_file_already_there(emu, tmp_path):
    project = emu.seed_spec({"projects": [{"name": "p", "children": [_file("Report.csv", "first")]}]})["p"]
    _sync(emu, project, tmp_path, "case")
    new = emu.add_file(project, "REPORT.csv", "second")
    emu.reset_stats()
    results = _sync(emu, project, tmp_path, "case")
    assert sorted(local_tree(tmp_path)) == ["REPORT (%s).csv" % new, "Report.csv"]
    assert (tmp_path / "Report.csv").read_text() == "first"
    assert emu.stats()["data_requests"] == 1
    assert [r.entity_id for r in results if r.status is SyncStatus.DOWNLOADED] == [new]


def test_unicode_normalization_twins_are_kept_apart_and_a_new_version_stays_at_its_local_name(emu, tmp_path):
    project = emu.seed_spec(
        {
            "names": "unchecked",
            "projects": [{"name": "p", "children": [_file(NFC, "composed"), _file(NFD, "decomposed")]}],
        }
    )["p"]
    composed, decomposed = emu.resolve(project, NFC), emu.resolve(project, NFD)
    first = _sync(emu, project, tmp_path, "nfd")
    later = max(composed, decomposed, key=lambda i: int(i[3:]))
    expected_twin = f"{(NFC if later == composed else NFD)[:-4]} ({later}).txt"
    assert len(local_tree(tmp_path)) == 2 and expected_twin in local_tree(tmp_path)
    assert "Unicode normalization" in _by_id(first)[later].renamed

    emu.add_version(later, "a new version")
    again = _sync(emu, project, tmp_path, "nfd")
    assert [r.entity_id for r in again if r.status is SyncStatus.DOWNLOADED] == [later]
    assert (tmp_path / expected_twin).read_text() == "a new version"
    assert len(local_tree(tmp_path)) == 2


def test_windows_names_are_mapped_to_lookalikes_and_suffixes(emu, tmp_path):
    names = ["a:b?.txt", "CON", "nul.txt", "com1.tar.gz", "trail.", "space ", 'x<y>z|"*', "tab\tname"]
    project = emu.seed_spec(
        {
            "names": "unchecked",
            "projects": [
                {
                    "name": "p",
                    "children": [
                        *(_file(name, name) for name in names),
                        _file("a：b？.txt", "already full-width"),
                        {"type": "folder", "name": "AUX", "children": [_file("in.txt", "inside")]},
                    ],
                }
            ],
        }
    )["p"]
    mapped_one = emu.resolve(project, "a:b?.txt")
    results = _sync(emu, project, tmp_path, FilesystemNames(windows_rules=True))
    assert {r.status for r in results} == {SyncStatus.DOWNLOADED}
    assert sorted(local_tree(tmp_path)) == sorted(
        [
            f"a：b？ ({mapped_one}).txt",
            "a：b？.txt",
            "CON_",
            "nul_.txt",
            "com1_.tar.gz",
            "trail．",
            "space␠",
            "x＜y＞z｜＂＊",
            "tab␉name",
            "AUX_/in.txt",
        ]
    )
    assert (tmp_path / "a：b？.txt").read_text() == "already full-width"  # the remote name as it is wins
    assert (tmp_path / f"a：b？ ({mapped_one}).txt").read_text() == "a:b?.txt"
    assert all(r.renamed for r in results if r.path.name not in ("a：b？.txt", "in.txt"))
    assert len(results.report.renamed) == len(names) + 1  # each mapped file, and the folder
    again = _sync(emu, project, tmp_path, "windows")
    assert {r.status for r in again} == {SyncStatus.SKIPPED}


def test_twins_on_different_listing_pages_are_found(emu, tmp_path):
    children = (
        [_file("Alpha.txt", "A")] + [_file(f"b{i:02d}.txt", str(i)) for i in range(60)] + [_file("alpha.txt", "a")]
    )
    project = emu.seed_spec({"projects": [{"name": "p", "children": children}]})["p"]
    later = emu.resolve(project, "alpha.txt")
    results = _sync(emu, project, tmp_path, "case", max_workers=4)
    assert len(results) == 62 and {r.status for r in results} == {SyncStatus.DOWNLOADED}
    assert "Alpha.txt" in local_tree(tmp_path) and f"alpha ({later}).txt" in local_tree(tmp_path)


def test_an_over_long_path_is_one_reported_failure_not_a_traceback(emu, tmp_path):
    project = emu.seed_spec(
        {"projects": [{"name": "p", "children": [_file("short.txt", "s"), _file("x" * 120 + ".txt", "long")]}]}
    )["p"]
    limit = len(str(tmp_path.resolve() / "short.txt")) + 20
    results = _sync(emu, project, tmp_path, f"windows,max_path={limit}", on_error="continue")
    failed = [r for r in results if r.status is SyncStatus.FAILED]
    assert len(failed) == 1 and isinstance(failed[0].error, UnsafePathError)
    assert f"longer than the {limit} characters" in str(failed[0].error)
    assert sorted(local_tree(tmp_path)) == ["short.txt"]
    again = _sync(emu, project, tmp_path / "again", "max_name=100", on_error="continue")
    failed = [r for r in again if r.status is SyncStatus.FAILED]
    assert len(failed) == 1 and "has a name of 124 bytes, longer than the 100" in str(failed[0].error)


def test_the_environment_forces_the_probe_and_a_dry_run_plans_the_same_names(emu, tmp_path, monkeypatch):
    project = emu.seed_spec(
        {"projects": [{"name": "p", "children": [_file("Case.txt", "upper"), _file("case.txt", "lower")]}]}
    )["p"]
    later = max(emu.resolve(project, "Case.txt"), emu.resolve(project, "case.txt"), key=lambda i: int(i[3:]))
    monkeypatch.setenv(PROBE_ENV, "case")
    plan = sync_from_platform(project, tmp_path / "t", platform=platform_for(emu), dry_run=True, progress=False)
    planned = sorted(entry.destination.name for entry in plan.entries)
    assert len(plan.renamed) == 1 and plan.renamed[0].startswith(later) and plan.to_json()["renamed"] == plan.renamed
    sync_from_platform(project, tmp_path / "t", platform=platform_for(emu), progress=False)
    assert planned == sorted(local_tree(tmp_path / "t")) and len(planned) == 2
    assert any(f"({later})" in name for name in planned)


def test_without_a_forced_answer_linux_keeps_every_name(emu, tmp_path, monkeypatch):
    monkeypatch.delenv(PROBE_ENV, raising=False)
    project = emu.seed_spec(
        {
            "names": "unchecked",
            "projects": [
                {
                    "name": "p",
                    "children": [_file("Case.txt", "upper"), _file("case.txt", "lower"), _file("a:b", "colon")],
                }
            ],
        }
    )["p"]
    results = sync_from_platform(project, tmp_path, platform=platform_for(emu), progress=False)
    assert sorted(local_tree(tmp_path)) == ["Case.txt", "a:b", "case.txt"]
    assert not results.report.renamed and all(r.renamed is None for r in results)
    assert sorted(p.name for p in (tmp_path / ".synclient").iterdir() if "probe" in p.name) == []


def test_when_the_twin_that_kept_the_name_goes_the_other_stays_put_until_its_next_version(emu, tmp_path):
    project = emu.seed_spec(
        {"projects": [{"name": "p", "children": [_file("Case.txt", "upper"), _file("case.txt", "lower")]}]}
    )["p"]
    older, newer = sorted(
        [emu.resolve(project, "Case.txt"), emu.resolve(project, "case.txt")], key=lambda i: int(i[3:])
    )
    first = _by_id(_sync(emu, project, tmp_path, "case"))
    kept, renamed = first[older].path.name, first[newer].path.name
    emu.delete_entity(older)
    emu.reset_stats()
    second = _sync(emu, project, tmp_path, "case", delete=True)
    assert sorted(local_tree(tmp_path)) == [renamed]  # no twin any more, but the file is not moved for that
    assert {r.status for r in second} == {SyncStatus.DELETED, SyncStatus.SKIPPED}
    assert emu.stats()["data_requests"] == 0
    emu.add_version(newer, "new")
    third = _by_id(_sync(emu, project, tmp_path, "case", delete=True))
    assert third[newer].status is SyncStatus.DOWNLOADED and third[newer].renamed is None
    assert sorted(local_tree(tmp_path)) == ["case.txt" if kept == "Case.txt" else "Case.txt"]
    assert _sync(emu, project, tmp_path, "case")[0].status is SyncStatus.SKIPPED


def test_a_list_of_ids_names_its_twins_apart_and_maps_windows_names(emu, tmp_path):
    project = emu.seed_spec(
        {
            "names": "unchecked",
            "projects": [
                {
                    "name": "p",
                    "children": [
                        {"type": "folder", "name": "x", "children": [_file("Case.txt", "x"), _file("a:b", "colon")]},
                        {"type": "folder", "name": "y", "children": [_file("case.txt", "y")]},
                    ],
                }
            ],
        }
    )["p"]
    upper, lower, colon = (emu.resolve(project, path) for path in ("x/Case.txt", "y/case.txt", "x/a:b"))
    results = download_many(
        [upper, lower, colon], tmp_path, platform=platform_for(emu), progress=False, filesystem_names="case,windows"
    )
    assert {r.status for r in results} == {SyncStatus.DOWNLOADED}
    assert sorted(local_tree(tmp_path)) == sorted(["Case.txt", f"case ({lower}).txt", "a：b"])
    assert _by_id(results)[colon].renamed and len(results.report.renamed) == 2
    again = download_many(
        [upper, lower, colon], tmp_path, platform=platform_for(emu), progress=False, filesystem_names="case,windows"
    )
    assert {r.status for r in again} == {SyncStatus.SKIPPED}


def test_a_keep_both_copy_name_is_not_a_case_twin_of_a_remote_name(emu, tmp_path):
    project = emu.seed_spec(
        {"projects": [{"name": "p", "children": [_file("a.txt", "remote a"), _file("A(1).txt", "remote A(1)")]}]}
    )["p"]
    (tmp_path / "a.txt").write_text("the user's own a")
    results = _sync(emu, project, tmp_path, "case", if_collision="keep.both")
    assert {r.status for r in results} == {SyncStatus.DOWNLOADED}
    assert sorted(local_tree(tmp_path)) == ["A(1).txt", "a(2).txt", "a.txt"]
    assert (tmp_path / "a.txt").read_text() == "the user's own a"
    assert (tmp_path / "a(2).txt").read_text() == "remote a"


def test_no_manifest_is_written_over_a_remote_file_whose_name_differs_from_it_only_in_case(emu, tmp_path):
    """Review of issue 18: a remote entity takes a manifest's name as the filesystem compares names (the remote
    entity wins, as with the exact name): on a case-insensitive disk the manifest would replace its bytes."""
    project = emu.seed_spec(
        {
            "projects": [
                {
                    "name": "p",
                    "children": [
                        _file("synapse_metadata_manifest.tsv", "remote tsv"),
                        _file("MANIFEST.CSV", "remote csv"),
                        _file("x.txt", "x"),
                    ],
                }
            ]
        }
    )["p"]
    results = _sync(emu, project, tmp_path, "case", manifest="all", on_error="continue")
    assert {r.status for r in results} == {SyncStatus.DOWNLOADED}
    assert _folded_twins(tmp_path) == []
    assert (tmp_path / "synapse_metadata_manifest.tsv").read_text() == "remote tsv"
    assert (tmp_path / "MANIFEST.CSV").read_text() == "remote csv"
    again = _sync(emu, project, tmp_path, "case", manifest="all", on_error="continue")
    assert {r.status for r in again} == {SyncStatus.SKIPPED} and _folded_twins(tmp_path) == []


def test_an_entity_named_by_id_never_takes_the_index_folders_name_as_the_filesystem_compares_it(emu, tmp_path):
    """Review of issue 18: '.SYNCLIENT' is the '.synclient' index folder on a case-insensitive disk: a file of a
    list, a listed folder and a single-file root get '.SYNCLIENT (synN)', as the walker names a child of the root."""
    project = emu.seed_spec(
        {
            "projects": [
                {
                    "name": "p",
                    "children": [
                        _file(".SYNCLIENT", "not the index"),
                        _file("other.txt", "o"),
                        {
                            "type": "folder",
                            "name": "sub",
                            "children": [{"type": "folder", "name": ".Synclient", "children": [_file("in.txt", "i")]}],
                        },
                    ],
                }
            ]
        }
    )["p"]
    dot, folder = emu.resolve(project, ".SYNCLIENT"), emu.resolve(project, "sub/.Synclient")
    results = download_many(
        [dot, emu.resolve(project, "other.txt"), folder],
        tmp_path,
        recursive=True,
        platform=platform_for(emu),
        filesystem_names="case",
        on_error="continue",
        progress=False,
    )
    assert not results.failures
    assert _by_id(results)[dot].path == tmp_path / f".SYNCLIENT ({dot})"
    assert sorted(local_tree(tmp_path)) == sorted([f".SYNCLIENT ({dot})", "other.txt", f".Synclient ({folder})/in.txt"])
    assert _folded_twins(tmp_path) == []
    alone = tmp_path / "alone"
    single = _sync(emu, dot, alone, "case", on_error="continue")
    assert [r.path for r in single] == [alone / f".SYNCLIENT ({dot})"] and single[0].renamed
    assert (alone / f".SYNCLIENT ({dot})").read_text() == "not the index" and _folded_twins(alone) == []


def test_a_folder_twin_whose_keeper_is_deleted_keeps_its_local_folder_for_its_new_files(emu, tmp_path):
    """Review of issue 18: local names are sticky. 'data' got 'data (synN)' beside 'Data'; once 'Data' is gone it
    keeps that folder (its new files land there too): one remote folder is one local folder."""
    project = emu.seed_spec(
        {
            "projects": [
                {
                    "name": "p",
                    "children": [
                        {"type": "folder", "name": "Data", "children": [_file("a.txt", "big")]},
                        {"type": "folder", "name": "data", "children": [_file("b.txt", "small")]},
                    ],
                }
            ]
        }
    )["p"]
    big, small = emu.resolve(project, "Data"), emu.resolve(project, "data")
    assert int(big[3:]) < int(small[3:])
    _sync(emu, project, tmp_path, "case", delete=True)
    assert sorted(local_tree(tmp_path)) == ["Data/a.txt", f"data ({small})/b.txt"]
    emu.delete_entity(big)
    second = _sync(emu, project, tmp_path, "case", delete=True)
    assert sorted(local_tree(tmp_path)) == [f"data ({small})/b.txt"]
    assert any(line.startswith(f"{small}: data -> data ({small}) (it keeps") for line in second.report.renamed)
    emu.add_file(small, "c.txt", "new")
    third = _sync(emu, project, tmp_path, "case", delete=True)
    assert sorted(local_tree(tmp_path)) == [f"data ({small})/b.txt", f"data ({small})/c.txt"]
    assert {r.status for r in third} == {SyncStatus.SKIPPED, SyncStatus.DOWNLOADED}
    again = _sync(emu, project, tmp_path, "case", delete=True)
    assert {r.status for r in again} == {SyncStatus.SKIPPED}


@pytest.mark.parametrize("kind", ["folder", "file"])
def test_a_literal_lookalike_added_later_never_takes_the_mapped_name_already_there(emu, tmp_path, kind):
    """Review of issue 18: 'a:b' synced to 'a：b' keeps it when a literal 'a：b' is added: the newcomer gets its id
    (nothing re-downloaded, no two remote folders' files mixed in one local folder)."""
    entity = (
        {"type": "folder", "name": "a:b", "children": [_file("x", "colon x"), _file("y", "colon y")]}
        if kind == "folder"
        else _file("a:b", "colon")
    )
    project = emu.seed_spec({"names": "unchecked", "projects": [{"name": "p", "children": [entity]}]})["p"]
    colon = emu.resolve(project, "a:b")
    _sync(emu, project, tmp_path, "windows", delete=True)
    if kind == "folder":
        literal = emu.add_folder(project, "a\uff1ab", names="unchecked")
        fetched = emu.add_file(literal, "x", "literal x")
        expected = {"a\uff1ab/x": "colon x", "a\uff1ab/y": "colon y", f"a\uff1ab ({literal})/x": "literal x"}
    else:
        literal = fetched = emu.add_file(project, "a\uff1ab", "literal", names="unchecked")
        expected = {"a\uff1ab": "colon", f"a\uff1ab ({literal})": "literal"}
    emu.reset_stats()
    results = _sync(emu, project, tmp_path, "windows", delete=True)
    assert {path: (tmp_path / path).read_text() for path in local_tree(tmp_path)} == expected
    assert [r.entity_id for r in results if r.status is SyncStatus.DOWNLOADED] == [fetched]
    assert emu.stats()["data_requests"] == 1
    assert any(line.startswith(f"{colon}: a:b -> a\uff1ab (Windows") for line in results.report.renamed)
    assert any(line.startswith(f"{literal}: a\uff1ab -> a\uff1ab ({literal})") for line in results.report.renamed)
    assert {r.status for r in _sync(emu, project, tmp_path, "windows", delete=True)} == {SyncStatus.SKIPPED}


def test_a_twin_that_keeps_its_renamed_local_name_still_says_why(emu, tmp_path):
    """Review of issue 18: its keeper gone, a twin stays at 'name (synN).ext' and its result and report say so."""
    project = emu.seed_spec(
        {"projects": [{"name": "p", "children": [_file("Case.txt", "upper"), _file("case.txt", "lower")]}]}
    )["p"]
    upper, lower = emu.resolve(project, "Case.txt"), emu.resolve(project, "case.txt")
    assert int(upper[3:]) < int(lower[3:])
    _sync(emu, project, tmp_path, "case")
    emu.delete_entity(upper)
    results = _sync(emu, project, tmp_path, "case", delete=True)
    twin = _by_id(results)[lower]
    assert twin.status is SyncStatus.SKIPPED and twin.path.name == f"case ({lower}).txt"
    assert twin.renamed and "keeps the local name" in twin.renamed
    assert any(line.startswith(f"{lower}: case.txt -> case ({lower}).txt") for line in results.report.renamed)


def test_a_twin_differing_in_case_and_unicode_normalization_says_so(emu, tmp_path):
    """Review of issue 18: 'Café.txt' decomposed and 'café.txt' composed differ in both: the reason names both."""
    project = emu.seed_spec(
        {
            "names": "unchecked",
            "projects": [
                {
                    "name": "p",
                    "children": [
                        _file(unicodedata.normalize("NFD", "Caf\u00e9.txt"), "upper"),
                        _file(unicodedata.normalize("NFC", "caf\u00e9.txt"), "lower"),
                    ],
                }
            ],
        }
    )["p"]
    results = _sync(emu, project, tmp_path, "case,nfd")
    renamed = [r.renamed for r in results if r.renamed]
    assert len(renamed) == 1 and "differs only in case and Unicode normalization" in renamed[0], renamed
    assert _folded_twins(tmp_path) == []


def test_a_listed_folder_given_another_local_name_is_reported(emu, tmp_path):
    """Review of issue 18: a folder named by id ('CON', with recursive) lands at 'CON_' and is a renamed: line."""
    project = emu.seed_spec(
        {
            "projects": [
                {
                    "name": "p",
                    "children": [{"type": "folder", "name": "CON", "children": [_file("y", "3")]}, _file("other", "o")],
                }
            ]
        }
    )["p"]
    folder = emu.resolve(project, "CON")
    results = download_many(
        [folder, emu.resolve(project, "other")],
        tmp_path,
        recursive=True,
        platform=platform_for(emu),
        filesystem_names="windows",
        on_error="continue",
        progress=False,
    )
    assert sorted(local_tree(tmp_path)) == ["CON_/y", "other"]
    assert [line for line in results.report.renamed if line.startswith(f"{folder}: ")] == [
        f"{folder}: CON -> CON_ (Windows cannot hold this name)"
    ]


def test_a_keep_both_copy_name_longer_than_the_filesystem_allows_fails_its_file_only(emu, tmp_path):
    name = "n" * 16 + ".txt"  # 20 bytes: the limit; its copy name 'nnn...(1).txt' is longer
    project = emu.seed_spec({"projects": [{"name": "p", "children": [_file(name, "remote"), _file("ok.txt", "ok")]}]})[
        "p"
    ]
    (tmp_path / name).write_text("the user's own")
    results = _sync(emu, project, tmp_path, "max_name=20", if_collision="keep.both", on_error="continue")
    failed = [r for r in results if r.status is SyncStatus.FAILED]
    assert len(failed) == 1 and isinstance(failed[0].error, UnsafePathError) and "20" in str(failed[0].error)
    assert sorted(local_tree(tmp_path)) == [name, "ok.txt"] and (tmp_path / name).read_text() == "the user's own"
