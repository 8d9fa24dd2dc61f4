"""Issue 17: a sync planned from a file view (view=) must be the sync without it, whatever the view lags behind:
moves, files replaced by new versions, handles replaced in place, a view without its file columns. Each scenario
runs twice on one emulator state, into two targets, with and without the view, and the two must agree (tree,
manifests, actions); then the calls the view saved are checked.

Issue 34: the scenarios of a view's rows run again with ``view="auto"`` (a temporary view the run makes of the
tree, here as soon as one file needs its bundle): the same outcome, the same calls saved, and nothing left in the
account after each run (no scratch project, no view, nothing in the trash)."""

from __future__ import annotations

import csv
import hashlib
import io
import logging
from pathlib import Path

import pytest
from synctrees import assert_tree_matches, local_tree

from synclient import Platform, SyncOptions, SyncStatus, download_query, sync_from_platform
from synclient.emulator import Emulator
from synclient.errors import ConfigError
from synclient.sync.sources import auto_view

SPEC = {
    "projects": [
        {
            "name": "p",
            "children": [
                {
                    "type": "folder",
                    "name": "A",
                    "children": [
                        {"type": "file", "name": "a1.txt", "content": "a1\n", "annotations": {"assay": ["rna"]}},
                        {"type": "file", "name": "a2.txt", "content": "a2\n", "annotations": {"assay": ["dna"]}},
                    ],
                },
                {
                    "type": "folder",
                    "name": "B",
                    "children": [
                        {"type": "file", "name": "b1.txt", "content": "b1\n", "annotations": {"assay": ["rna"]}}
                    ],
                },
                {"type": "file", "name": "top.csv", "content": "x,y\n", "annotations": {"assay": ["dna"]}},
                {"type": "entityview", "name": "files", "scope": [""], "columns": ["assay"]},
                {"type": "entityview", "name": "bare", "scope": [""], "columns": ["assay"], "defaultColumns": False},
            ],
        }
    ]
}


@pytest.fixture(params=["given", "auto"])
def emu(request, tmp_path, monkeypatch):
    """An emulator seeded with SPEC; ``emu.view``: the view a sync is planned from, the seeded one or "auto"."""
    with Emulator(data_dir=str(tmp_path / "emu")) as emu:
        emu.project = emu.seed_spec(SPEC)["p"]
        emu.at = lambda path: emu.resolve(emu.project, path)
        emu.view = emu.at("files") if request.param == "given" else "auto"
        monkeypatch.setattr(auto_view, "WORTH_A_VIEW", 1)  # four files: a view from the first one on
        yield emu


def given_view_only(emu):
    if emu.view == "auto":
        pytest.skip("about a view the user names")


def sync(emu, target, **keywords):
    with Platform(emu.endpoint, token=emu.token) as platform:
        results = sync_from_platform(emu.project, target, platform=platform, synapse_cache=False, **keywords)
    if keywords.get("view") == "auto":
        assert_nothing_left(emu)
    return results


def assert_nothing_left(emu):
    """No project but the seeded one, nothing in the trash: --view auto's view and scratch project are gone."""
    assert set(emu.store.projects()) == {"p"} and emu.trash() == []
    assert not [e for e in emu.project_entities(emu.project) if e["kind"] == "entityview" and e["name"] not in SEEDED]


SEEDED = {"files", "bare"}


def manifest_rows(root):
    """Every manifest row of the tree, keyed by path, without contentType: a view has no such column."""
    rows = {}
    for manifest in sorted(root.rglob("SYNAPSE_METADATA_MANIFEST.tsv")):
        for row in csv.DictReader(io.StringIO(manifest.read_text()), delimiter="\t"):
            row.pop("contentType", None)
            row["path"] = Path(row["path"]).relative_to(root).as_posix()
            rows[manifest.parent.relative_to(root).as_posix(), row["path"]] = row
    return rows


def outcome(results, root):
    return sorted((str(r.path.relative_to(root)), r.entity_id, r.version, r.status.value, r.action) for r in results)


def both_ways(emu, tmp_path, name, **keywords):
    """The sync with and without the view, from the same remote state (dry run first): they must agree."""
    plain, viewed = tmp_path / f"{name}-plain", tmp_path / f"{name}-view"
    plans, results = {}, {}
    for root, view in ((plain, None), (viewed, emu.view)):
        plan = sync(emu, root, view=view, dry_run=True, **keywords)
        plans[root] = sorted(
            (
                e.rel_path,
                e.entity_id,
                e.version,
                e.action.value,
                str(e.destination.relative_to(root)) if e.destination else None,
            )
            for e in plan.entries
        )
        emu.reset_stats()
        results[root] = sync(emu, root, view=view, on_error="continue", **keywords)
    assert plans[plain] == plans[viewed]
    assert local_tree(plain) == local_tree(viewed)
    assert manifest_rows(plain) == manifest_rows(viewed)
    assert outcome(results[plain], plain) == outcome(results[viewed], viewed)
    assert not results[viewed].failures
    return results[viewed]


def bundle_calls(emu):
    return sum(count for route, count in emu.stats()["api_by_route"].items() if route.endswith("/bundle2"))


def test_a_first_sync_from_the_view_is_the_sync_without_it_with_no_bundle_call(emu, tmp_path):
    both_ways(emu, tmp_path, "first")
    assert bundle_calls(emu) == 0
    emu.reset_stats()  # nothing changed: the view is not even read
    again = sync(emu, tmp_path / "first-view", view=emu.view)
    assert {r.status for r in again} == {SyncStatus.SKIPPED}
    assert not any("/table/query" in route for route in emu.stats()["api_by_route"])
    assert "POST /repo/v1/entity" not in emu.stats()["api_by_route"]  # (view="auto": nor made)


def test_edits_the_view_lags_behind_change_nothing_but_the_calls(emu, tmp_path):
    both_ways(emu, tmp_path, "before")
    emu.set_knobs(view_lag=True)
    emu.refresh_views()
    emu.move_entity(emu.at("A/a1.txt"), emu.at("B"))  # no new version: the row's parent is stale
    emu.add_version(emu.at("A/a2.txt"), "a2 two\n")  # a new version: the row's version is stale
    # not in the view at all; and it takes the name a keep.both copy of a1 would get in B
    emu.add_file(emu.at("B"), "a1(1).txt", "new\n")
    emu.rename_entity(emu.at("top.csv"), "top2.csv")  # the row's name is stale (names come from the listing)
    for root in ("before-plain", "before-view"):
        (tmp_path / root / "B" / "a1.txt").write_text("the user's own\n")  # where the moved a1 lands
    results = both_ways(emu, tmp_path, "before", if_collision="keep.both")
    tree = local_tree(tmp_path / "before-view")
    # the user's file stays, the remote a1(1).txt keeps its name, and a1 gets the next copy name
    assert tree["B/a1.txt"] == hashlib.md5(b"the user's own\n").hexdigest()
    assert tree["B/a1(1).txt"] == hashlib.md5(b"new\n").hexdigest()
    assert tree["B/a1(2).txt"] == hashlib.md5(b"a1\n").hexdigest()
    assert tree["A/a2.txt"] == hashlib.md5(b"a2 two\n").hexdigest()
    assert manifest_rows(tmp_path / "before-view")["B", "B/a1(2).txt"]["parent"] == emu.at("B")  # not the stale row's
    # a2 (new version) and a1(1).txt (not in the view) took their bundles; a1 moved and top renamed did not
    assert bundle_calls(emu) == 2
    assert {r.path.name for r in results if r.status is SyncStatus.DOWNLOADED} >= {"a2.txt", "a1(1).txt"}


def test_a_handle_replaced_in_place_behind_the_view_falls_back_to_the_bundle(emu, tmp_path, caplog):
    emu.set_knobs(view_lag=True)
    emu.refresh_views()
    new_handle = emu.replace_file_handle(emu.at("A/a1.txt"))  # same bytes, same version, another handle
    caplog.set_level(logging.INFO, logger="synclient")
    emu.reset_stats()
    results = sync(emu, tmp_path / "t", view=emu.view)
    assert_tree_matches(
        tmp_path / "t",
        {
            "A/a1.txt": hashlib.md5(b"a1\n").hexdigest(),
            "A/a2.txt": hashlib.md5(b"a2\n").hexdigest(),
            "B/b1.txt": hashlib.md5(b"b1\n").hexdigest(),
            "top.csv": hashlib.md5(b"x,y\n").hexdigest(),
        },
    )
    assert not results.failures and bundle_calls(emu) == 1  # the one refused by the URL batch
    assert f"now {new_handle}" in caplog.text
    with Platform(emu.endpoint, token=emu.token) as platform:
        sql = f"SELECT * FROM {emu.at('files')} WHERE name = 'a1.txt'"
        picked = download_query(sql, tmp_path / "q", platform=platform, synapse_cache=False)
    assert [r.status for r in picked] == [SyncStatus.DOWNLOADED] and (tmp_path / "q" / "a1.txt").read_text() == "a1\n"
    emu.reset_stats()  # the index recorded the handle that was fetched: a re-sync is a no-op
    again = sync(emu, tmp_path / "t", view=emu.view)
    assert {r.status for r in again} == {SyncStatus.SKIPPED} and emu.stats()["data_requests"] == 0


def test_a_view_without_its_file_columns_is_said_once_and_every_file_takes_its_bundle(emu, tmp_path, caplog):
    given_view_only(emu)
    caplog.set_level(logging.WARNING, logger="synclient")
    results = sync(emu, tmp_path / "t", view=emu.at("bare"))
    assert len(results) == 4 and not results.failures and bundle_calls(emu) == 4
    warnings = [r for r in caplog.records if "cannot stand in" in r.getMessage()]
    assert len(warnings) == 1
    with pytest.raises(ConfigError, match="not a file view"):
        sync(emu, tmp_path / "u", view=emu.at("A"))
    with pytest.raises(ConfigError, match="without a version"):
        sync(emu, tmp_path / "u", view=f"{emu.view}.1")


def test_a_query_selection_is_laid_out_alike_whatever_its_row_count_and_filters_apply(emu, tmp_path):
    given_view_only(emu)
    with Platform(emu.endpoint, token=emu.token) as platform:
        one = download_query(
            f"SELECT * FROM {emu.view} WHERE name = 'a1.txt'", tmp_path / "one", platform=platform, synapse_cache=False
        )
        assert one[0].annotations == {"assay": ["rna"]}  # the view's annotation column, as selected
        filtered = download_query(
            f"SELECT id FROM {emu.view}", tmp_path / "f", platform=platform, exclude=["*.csv"], synapse_cache=False
        )
        with pytest.raises(ConfigError, match="deletes nothing"):
            download_query(
                f"SELECT id FROM {emu.view}", tmp_path / "d", platform=platform, options=SyncOptions(delete=True)
            )
    assert sorted(local_tree(tmp_path / "f")) == ["a1.txt", "a2.txt", "b1.txt"] and len(filtered) == 3
    assert list(local_tree(tmp_path / "one")) == ["a1.txt"]
    assert not list((tmp_path / "one").glob("*.tsv")) and not list((tmp_path / "one").glob("*.csv"))
