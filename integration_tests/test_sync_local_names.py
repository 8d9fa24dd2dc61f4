"""Issue 18: names a local filesystem cannot hold, with the filesystem probe's answer forced (Linux here has no
case-folding filesystem): case and Unicode twins, Windows' names, over-long paths."""
from __future__ import annotations

import csv
import unicodedata

import pytest

from synclient import Platform, SyncStatus, download_many, sync_from_platform
from synclient.emulator import Emulator
from synclient.errors import UnsafePathError
from synclient.sync.local_names import PROBE_ENV, FilesystemNames
from synctrees import MANIFEST, local_tree

NFC, NFD = unicodedata.normalize("NFC", "café.txt"), unicodedata.normalize("NFD", "café.txt")


def platform_for(emu: Emulator) -> Platform:
    return Platform(endpoint=emu.endpoint, token=emu.token)


def _file(name: str, content: str) -> dict:
    return {"type": "file", "name": name, "content": content}


def _sync(emu, project, target, names, **kwargs):
    return sync_from_platform(project, target, platform=platform_for(emu), filesystem_names=names,
                              progress=False, **kwargs)


def _by_id(results):
    return {r.entity_id: r for r in results}


@pytest.fixture
def emu():
    with Emulator() as emulator:
        yield emulator


def test_case_twins_both_land_under_distinct_names_resync_is_a_no_op_and_delete_removes_the_right_one(emu, tmp_path):
    spec = {"projects": [{"name": "p", "children": [
        _file("Case.txt", "upper"), _file("case.txt", "lower"), _file("other.txt", "other"),
        {"type": "folder", "name": "Data", "children": [_file("a.txt", "big D")]},
        {"type": "folder", "name": "data", "children": [_file("a.txt", "small d")]}]}]}
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
    assert sorted(local_tree(tmp_path)) == sorted([names[older], renamed_file, "other.txt",
                                                   f"{folders[older_folder]}/a.txt", f"{renamed_folder}/a.txt"])
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
    project = emu.seed_spec({"projects": [{"name": "p", "children": [
        _file(NFC, "composed"), _file(NFD, "decomposed")]}]})["p"]
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
    names = ['a:b?.txt', 'CON', 'nul.txt', 'com1.tar.gz', 'trail.', 'space ', 'x<y>z|"*', "tab\tname"]
    project = emu.seed_spec({"projects": [{"name": "p", "children": [
        *(_file(name, name) for name in names), _file("a：b？.txt", "already full-width"),
        {"type": "folder", "name": "AUX", "children": [_file("in.txt", "inside")]}]}]})["p"]
    mapped_one = emu.resolve(project, "a:b?.txt")
    results = _sync(emu, project, tmp_path, FilesystemNames(windows_rules=True))
    assert {r.status for r in results} == {SyncStatus.DOWNLOADED}
    assert sorted(local_tree(tmp_path)) == sorted([
        f"a：b？ ({mapped_one}).txt", "a：b？.txt", "CON_", "nul_.txt", "com1_.tar.gz", "trail．", "space␠",
        "x＜y＞z｜＂＊", "tab␉name", "AUX_/in.txt"])
    assert (tmp_path / "a：b？.txt").read_text() == "already full-width"  # the remote name as it is wins
    assert (tmp_path / f"a：b？ ({mapped_one}).txt").read_text() == "a:b?.txt"
    assert all(r.renamed for r in results if r.path.name not in ("a：b？.txt", "in.txt"))
    assert len(results.report.renamed) == len(names) + 1  # each mapped file, and the folder
    again = _sync(emu, project, tmp_path, "windows")
    assert {r.status for r in again} == {SyncStatus.SKIPPED}


def test_twins_on_different_listing_pages_are_found(emu, tmp_path):
    children = [_file("Alpha.txt", "A")] + [_file(f"b{i:02d}.txt", str(i)) for i in range(60)] + [
        _file("alpha.txt", "a")]
    project = emu.seed_spec({"projects": [{"name": "p", "children": children}]})["p"]
    later = emu.resolve(project, "alpha.txt")
    results = _sync(emu, project, tmp_path, "case", max_workers=4)
    assert len(results) == 62 and {r.status for r in results} == {SyncStatus.DOWNLOADED}
    assert "Alpha.txt" in local_tree(tmp_path) and f"alpha ({later}).txt" in local_tree(tmp_path)


def test_an_over_long_path_is_one_reported_failure_not_a_traceback(emu, tmp_path):
    project = emu.seed_spec({"projects": [{"name": "p", "children": [
        _file("short.txt", "s"), _file("x" * 120 + ".txt", "long")]}]})["p"]
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
    project = emu.seed_spec({"projects": [{"name": "p", "children": [
        _file("Case.txt", "upper"), _file("case.txt", "lower")]}]})["p"]
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
    project = emu.seed_spec({"projects": [{"name": "p", "children": [
        _file("Case.txt", "upper"), _file("case.txt", "lower"), _file("a:b", "colon")]}]})["p"]
    results = sync_from_platform(project, tmp_path, platform=platform_for(emu), progress=False)
    assert sorted(local_tree(tmp_path)) == ["Case.txt", "a:b", "case.txt"]
    assert not results.report.renamed and all(r.renamed is None for r in results)
    assert sorted(p.name for p in (tmp_path / ".synclient").iterdir() if "probe" in p.name) == []


def test_when_the_twin_that_kept_the_name_goes_the_other_stays_put_until_its_next_version(emu, tmp_path):
    project = emu.seed_spec({"projects": [{"name": "p", "children": [
        _file("Case.txt", "upper"), _file("case.txt", "lower")]}]})["p"]
    older, newer = sorted([emu.resolve(project, "Case.txt"), emu.resolve(project, "case.txt")],
                          key=lambda i: int(i[3:]))
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
    project = emu.seed_spec({"projects": [{"name": "p", "children": [
        {"type": "folder", "name": "x", "children": [_file("Case.txt", "x"), _file("a:b", "colon")]},
        {"type": "folder", "name": "y", "children": [_file("case.txt", "y")]}]}]})["p"]
    upper, lower, colon = (emu.resolve(project, path) for path in ("x/Case.txt", "y/case.txt", "x/a:b"))
    results = download_many([upper, lower, colon], tmp_path, platform=platform_for(emu), progress=False,
                            filesystem_names="case,windows")
    assert {r.status for r in results} == {SyncStatus.DOWNLOADED}
    assert sorted(local_tree(tmp_path)) == sorted(["Case.txt", f"case ({lower}).txt", "a：b"])
    assert _by_id(results)[colon].renamed and len(results.report.renamed) == 2
    again = download_many([upper, lower, colon], tmp_path, platform=platform_for(emu), progress=False,
                          filesystem_names="case,windows")
    assert {r.status for r in again} == {SyncStatus.SKIPPED}


def test_a_keep_both_copy_name_is_not_a_case_twin_of_a_remote_name(emu, tmp_path):
    project = emu.seed_spec({"projects": [{"name": "p", "children": [
        _file("a.txt", "remote a"), _file("A(1).txt", "remote A(1)")]}]})["p"]
    (tmp_path / "a.txt").write_text("the user's own a")
    results = _sync(emu, project, tmp_path, "case", if_collision="keep.both")
    assert {r.status for r in results} == {SyncStatus.DOWNLOADED}
    assert sorted(local_tree(tmp_path)) == ["A(1).txt", "a(2).txt", "a.txt"]
    assert (tmp_path / "a.txt").read_text() == "the user's own a"
    assert (tmp_path / "a(2).txt").read_text() == "remote a"
