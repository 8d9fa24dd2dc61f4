"""Which local path each remote file gets (synclient.sync.claims.PathClaims), where only the whole run can tell:
the planner's decision for files indexed or not, a path held by synclient's own leftovers, a local folder where
the remote has a file, a local file where it has a folder, keep.both copy names (as the filesystem compares
names), and no path ever given to two entities. Driven as the pipeline and the walker drive it, against a real
index and target and an in-process remote tree."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

import pytest
from tree_support import ROOT_ID, FakeTree

from synclient.errors import PathConflictError
from synclient.events import SyncObserver
from synclient.platform.models import FileHandle
from synclient.results import SyncStatus
from synclient.sync.claims import PathClaims
from synclient.sync.effects import AppliedEffects, Effects, PlannedEffects
from synclient.sync.local.local_names import FilesystemNames
from synclient.sync.local.name_gate import PathRegistry
from synclient.sync.local.paths import TargetDirectory
from synclient.sync.options import SyncOptions
from synclient.sync.plan.planner import Action, Decision
from synclient.sync.records.index import IndexRow, LocalIndex

CASE_INSENSITIVE = FilesystemNames(case_insensitive=True)
CASE_SENSITIVE = FilesystemNames()


def _md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


def _handle(text: str) -> FileHandle:
    """The handle of a remote file holding ``text``."""
    return FileHandle("h-" + _md5(text)[:8], len(text.encode()), _md5(text))


class Run:
    """One run's claims over ``root`` (the target): the index as the last run left it (``rows``), the remote folder
    ``tree``, and the effects of a real run (or a dry run's plan)."""

    def __init__(
        self,
        root: Path,
        *,
        tree: Optional[FakeTree] = None,
        rows: Tuple[IndexRow, ...] = (),
        manifest_files: Tuple[str, ...] = (),
        names: FilesystemNames = CASE_SENSITIVE,
        dry_run: bool = False,
        kept_names: Optional[Dict[Path, Set[str]]] = None,
        **options,
    ) -> None:
        root.mkdir(exist_ok=True)
        if rows or manifest_files:  # the last run's index, committed before this run opens it
            with LocalIndex(root) as last:
                for row in rows:
                    last.record(row)
                last.set_manifest_files(list(manifest_files))
        self.tree = tree if tree is not None else FakeTree()
        self.target = TargetDirectory(root, create=not dry_run)
        self.index = LocalIndex(root, read_only=dry_run).open()
        self.options = SyncOptions(dry_run=dry_run, **options)
        self.effects: Effects = (
            PlannedEffects(target=self.target, index=self.index)
            if dry_run
            else AppliedEffects(
                target=self.target,
                index=self.index,
                observer=SyncObserver(),
                is_fatal=lambda error: False,
                on_fatal=lambda: None,
                list_in_manifest=True,
            )
        )
        self.registry = PathRegistry(names)
        self.claims = PathClaims(
            platform=self.tree,
            target=self.target,
            index=self.index,
            options=self.options,
            effects=self.effects,
            names=names,
            registry=self.registry,
            kept_names=kept_names,
        )

    def close(self) -> None:
        self.index.close()

    def decide(
        self,
        name: str,
        text: str,
        *,
        entity_id: str = "syn50",
        row: Optional[IndexRow] = None,
        copy: Optional[IndexRow] = None,
        parent_id: Optional[str] = ROOT_ID,
    ) -> Tuple[Decision, Optional[IndexRow]]:
        """The decision for the remote file ``name`` (holding ``text``) at the target's top, its path first given by
        the name gate, as the walker does."""
        destination = self.registry.claim(self.target.root / name, entity_id)
        return self.claims.place(destination, name, _handle(text), row, copy, parent_id, entity_id)

    @property
    def results(self) -> Dict[str, Tuple[SyncStatus, Optional[str]]]:
        """A real run's recorded results: local path -> (status, action)."""
        assert isinstance(self.effects, AppliedEffects)
        return {self.target.relative(r.path): (r.status, r.action) for r in self.effects.results}


@pytest.fixture
def runs():
    opened: List[Run] = []

    def make(root: Path, **kwargs) -> Run:
        run = Run(root, **kwargs)
        opened.append(run)
        return run

    yield make
    for run in opened:
        run.close()


def _ours(
    root: Path,
    rel_path: str,
    text: str = "synclient wrote this",
    *,
    entity_id: str = "syn9",
    local_path: Optional[str] = None,
) -> IndexRow:
    """A file synclient wrote (at ``local_path``, default its remote path) and its index row, untouched."""
    local_path = local_path or rel_path
    path = root / local_path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    info = os.lstat(path)
    return IndexRow(
        rel_path,
        local_path,
        ROOT_ID,
        entity_id,
        1,
        "h-" + _md5(text)[:8],
        _md5(text),
        info.st_size,
        "text/plain",
        ROOT_ID,
        info.st_size,
        info.st_mtime_ns,
    )


def _users(root: Path, rel_path: str, text: str = "the user's own") -> Path:
    path = root / rel_path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# -- the planner's decision, for files indexed or not ----------------------------------------------------------------


def test_a_file_not_there_is_downloaded_to_its_path_and_that_path_is_its_own(tmp_path, runs):
    run = runs(tmp_path / "t")
    decision, displaced = run.decide("a.txt", "remote", entity_id="syn50")
    assert decision == Decision(Action.DOWNLOAD, run.target.root / "a.txt") and displaced is None
    assert run.registry.owner_of(run.target.root / "a.txt") == "syn50"
    assert run.tree.listing_calls == []  # no collision: the remote folder's names are never needed


@pytest.mark.parametrize(
    "local, remote, expected",
    [
        ("same bytes", "same bytes", Action.SKIP),  # untouched and the remote's bytes: nothing to do
        ("old version", "new version", Action.DOWNLOAD),  # untouched, the remote moved on: replaced
    ],
)
def test_an_indexed_untouched_file(tmp_path, runs, local, remote, expected):
    root = tmp_path / "t"
    root.mkdir()
    row = _ours(root, "a.txt", local)
    run = runs(root, rows=(row,))
    decision, _ = run.decide("a.txt", remote, entity_id="syn9", row=row)
    assert decision == Decision(expected, run.target.root / "a.txt")


@pytest.mark.parametrize(
    "collision, expected, at",
    [
        ("overwrite.local", Action.OVERWRITE, "a.txt"),
        ("keep.local", Action.KEEP_LOCAL, "a.txt"),
        ("keep.both", Action.KEEP_BOTH, "a(1).txt"),
    ],
)
def test_a_file_changed_locally_since_indexed_follows_if_collision(tmp_path, runs, collision, expected, at):
    root = tmp_path / "t"
    root.mkdir()
    row = _ours(root, "a.txt", "old version")
    _users(root, "a.txt", "edited by the user")
    run = runs(root, rows=(row,), if_collision=collision)
    decision, _ = run.decide("a.txt", "new version", entity_id="syn9", row=row)
    assert decision == Decision(expected, run.target.root / at)
    assert run.registry.owner_of(run.target.root / at) == "syn9"


def test_a_local_file_with_the_remote_bytes_is_adopted_and_one_without_is_a_collision(tmp_path, runs):
    root = tmp_path / "t"
    _users(root, "same.txt", "remote bytes")
    _users(root, "other.txt", "the user's own")
    run = runs(root, if_collision="keep.local")
    assert run.decide("same.txt", "remote bytes", entity_id="syn50")[0].action is Action.ADOPT
    assert run.decide("other.txt", "remote bytes", entity_id="syn51")[0].action is Action.KEEP_LOCAL


def test_an_untouched_keep_both_copy_gets_the_new_bytes_where_it_is(tmp_path, runs):
    root = tmp_path / "t"
    root.mkdir()
    copy = _ours(root, "a.txt", "old remote", local_path="a(1).txt")  # the remote's file, beside the user's a.txt
    _users(root, "a.txt")
    run = runs(root, rows=(copy,), if_collision="keep.both")
    decision, _ = run.decide("a.txt", "new remote", entity_id="syn9", row=copy, copy=copy)
    assert decision == Decision(Action.KEEP_BOTH, run.target.root / "a(1).txt")
    assert run.registry.owner_of(run.target.root / "a(1).txt") == "syn9"  # the copy's path is its, in this run
    with pytest.raises(PathConflictError):
        run.registry.claim(run.target.root / "a(1).txt", "syn10")


def test_an_untouched_copy_with_the_remote_bytes_is_skipped_where_it_is_and_that_path_claimed(tmp_path, runs):
    root = tmp_path / "t"
    root.mkdir()
    copy = _ours(root, "a.txt", "remote bytes", local_path="a(1).txt")
    _users(root, "a.txt")
    run = runs(root, rows=(copy,), if_collision="keep.both")
    decision, _ = run.decide("a.txt", "remote bytes", entity_id="syn9", row=copy, copy=copy)
    assert decision == Decision(Action.SKIP, run.target.root / "a(1).txt")
    assert run.registry.owner_of(run.target.root / "a(1).txt") == "syn9"


# -- keep.both copy names ----------------------------------------------------------------------------------------


def test_a_copy_name_avoids_the_remote_folders_names_and_the_local_ones(tmp_path, runs):
    root = tmp_path / "t"
    tree = FakeTree(page_size=2)
    for name in ("a.txt", "a(1).txt", "b.txt", "c.txt"):
        tree.file(ROOT_ID, name)
    _users(root, "a.txt")
    _users(root, "b.txt")
    _users(root, "b(1).txt")  # a local name: taken too
    run = runs(root, tree=tree, if_collision="keep.both")

    first, _ = run.decide("a.txt", "remote a", entity_id="syn60")
    assert first == Decision(Action.KEEP_BOTH, run.target.root / "a(2).txt")  # a(1).txt is a remote file's
    second, _ = run.decide("b.txt", "remote b", entity_id="syn61")
    assert second == Decision(Action.KEEP_BOTH, run.target.root / "b(2).txt")
    assert run.registry.owner_of(run.target.root / "a(2).txt") == "syn60"
    # the remote folder is listed once, whole, for the whole run (two pages of two)
    assert run.tree.listing_calls == [(ROOT_ID, None), (ROOT_ID, "2")]


def test_a_copy_name_is_never_one_given_to_another_entity(tmp_path, runs):
    root = tmp_path / "t"
    _users(root, "a.txt")
    run = runs(root, if_collision="keep.both")
    run.registry.claim(run.target.root / "a(1).txt", "syn70")  # an entry of a list, say, placed there
    decision, _ = run.decide("a.txt", "remote", entity_id="syn60")
    assert decision.destination == run.target.root / "a(2).txt"


def test_on_a_case_insensitive_filesystem_a_copy_name_avoids_names_that_differ_only_in_case(tmp_path, runs):
    root = tmp_path / "t"
    tree = FakeTree()
    tree.file(ROOT_ID, "a.txt", entity_id="syn60")
    tree.file(ROOT_ID, "A(1).TXT", entity_id="syn61")
    _users(root, "a.txt")
    run = runs(root, tree=tree, names=CASE_INSENSITIVE, if_collision="keep.both")
    decision, _ = run.decide("a.txt", "remote", entity_id="syn60")
    assert decision.destination == run.target.root / "a(2).txt"

    case_sensitive = runs(tmp_path / "u", tree=tree, if_collision="keep.both")
    _users(tmp_path / "u", "a.txt")
    decision, _ = case_sensitive.decide("a.txt", "remote", entity_id="syn60")
    assert decision.destination == case_sensitive.target.root / "a(1).txt"


def test_copy_names_avoid_names_the_walker_kept_in_place(tmp_path, runs):
    root = tmp_path / "t"
    _users(root, "a.txt")
    # (the runner shares the walker's dict)
    run = runs(root, names=CASE_INSENSITIVE, if_collision="keep.both", kept_names={root: {"a(1).txt"}})
    decision, _ = run.decide("a.txt", "remote", entity_id="syn60")
    assert decision.destination == run.target.root / "a(2).txt"


# -- no two entities on one path ------------------------------------------------------------------------------------


def test_two_entities_never_get_one_path(tmp_path, runs):
    run = runs(tmp_path / "t")
    run.decide("a.txt", "one", entity_id="syn60")
    with pytest.raises(PathConflictError, match="syn60"):
        run.claims.claim(run.target.root / "a.txt", "syn61")


def test_on_a_case_insensitive_filesystem_names_differing_in_case_are_one_path(tmp_path, runs):
    run = runs(tmp_path / "t", names=CASE_INSENSITIVE)
    run.decide("Data.txt", "one", entity_id="syn60")
    with pytest.raises(PathConflictError):
        run.claims.claim(run.target.root / "data.TXT", "syn61")
    other = runs(tmp_path / "u")  # a case-sensitive one: two files
    other.decide("Data.txt", "one", entity_id="syn60")
    other.claims.claim(other.target.root / "data.TXT", "syn61")


def test_a_path_given_to_an_entity_that_failed_is_free_again(tmp_path, runs):
    run = runs(tmp_path / "t")
    path = run.target.root / "a(1).txt"
    run.registry.claim(path, "syn60")
    with pytest.raises(PathConflictError):
        run.claims.claim(path, "syn61", unless_failed={"syn99"})
    run.claims.claim(path, "syn61", unless_failed={"syn60"})
    assert run.registry.owner_of(path) == "syn61"


# -- synclient's own leftovers in the way --------------------------------------------------------------------------


def test_another_files_untouched_copy_at_the_path_gives_way_and_is_displaced(tmp_path, runs):
    root = tmp_path / "t"
    root.mkdir()
    copy = _ours(root, "b.txt", "b's bytes", entity_id="syn8", local_path="b(1).txt")
    run = runs(root, rows=(copy,))
    decision, displaced = run.decide("b(1).txt", "a remote file now named so", entity_id="syn60")
    assert decision == Decision(Action.DOWNLOAD, run.target.root / "b(1).txt")
    assert displaced == copy  # its row is stale once this file is in
    assert run.claims.is_displaced("b(1).txt")
    assert "b.txt" in run.claims.handled  # not "vanished" in this run: its file is decided again


def test_a_copy_the_user_changed_is_theirs_and_collides(tmp_path, runs):
    root = tmp_path / "t"
    root.mkdir()
    copy = _ours(root, "b.txt", "b's bytes", entity_id="syn8", local_path="b(1).txt")
    _users(root, "b(1).txt", "edited since, by the user")
    run = runs(root, rows=(copy,), if_collision="keep.local")
    decision, _ = run.decide("b(1).txt", "remote", entity_id="syn60")
    assert decision.action is Action.KEEP_LOCAL and not run.claims.is_displaced("b(1).txt")


def test_a_copy_whose_name_the_remote_now_has_is_given_up_for_the_remote_entity(tmp_path, runs):
    root = tmp_path / "t"
    root.mkdir()
    tree = FakeTree()
    tree.file(ROOT_ID, "c.txt", entity_id="syn8")
    tree.file(ROOT_ID, "C(1).txt", entity_id="syn60")
    copy = _ours(root, "c.txt", "c's bytes", entity_id="syn8", local_path="c(1).txt")
    run = runs(root, tree=tree, rows=(copy,), names=CASE_INSENSITIVE)

    assert run.claims.copy_name_taken(copy, run.target.root, ROOT_ID) is True
    assert run.claims.is_abandoned("c(1).txt")
    decision, _ = run.decide("c(1).txt", "the remote entity's", entity_id="syn60")
    assert decision == Decision(Action.DOWNLOAD, run.target.root / "c(1).txt")
    assert run.claims.is_displaced("c(1).txt")


def test_a_copy_whose_name_the_remote_does_not_have_is_kept(tmp_path, runs):
    root = tmp_path / "t"
    root.mkdir()
    tree = FakeTree()
    tree.file(ROOT_ID, "c.txt", entity_id="syn8")
    copy = _ours(root, "c.txt", "c's bytes", entity_id="syn8", local_path="c(1).txt")
    run = runs(root, tree=tree, rows=(copy,))
    assert run.claims.copy_name_taken(copy, run.target.root, ROOT_ID) is False
    assert not run.claims.is_abandoned("c(1).txt")


@pytest.mark.parametrize("recorded, expected", [((), Action.KEEP_LOCAL), (("manifest.csv",), Action.DOWNLOAD)])
def test_a_manifest_csv_is_synclients_only_where_the_index_records_writing_it(tmp_path, runs, recorded, expected):
    root = tmp_path / "t"
    _users(root, "manifest.csv", "path,parentId\r\n")
    run = runs(root, manifest_files=recorded, if_collision="keep.local")
    decision, _ = run.decide("manifest.csv", "a remote file of that name", entity_id="syn60")
    assert decision.action is expected


def test_a_stale_tsv_manifest_is_synclients_by_its_name(tmp_path, runs):
    root = tmp_path / "t"
    _users(root, "SYNAPSE_METADATA_MANIFEST.tsv", "path\tparent\r\n")
    run = runs(root, if_collision="keep.local")
    decision, _ = run.decide("SYNAPSE_METADATA_MANIFEST.tsv", "remote", entity_id="syn60")
    assert decision.action is Action.DOWNLOAD
    assert run.claims.is_displaced("SYNAPSE_METADATA_MANIFEST.tsv")


# -- a local folder where the remote has a file ----------------------------------------------------------------------


def _folder_of_ours(root: Path) -> Tuple[IndexRow, ...]:
    """``data/`` holding only what synclient wrote: two untouched files, a manifest, an empty sub-folder."""
    rows = (_ours(root, "data/x.csv", entity_id="syn20"), _ours(root, "data/sub/y.csv", entity_id="syn21"))
    (root / "data" / "SYNAPSE_METADATA_MANIFEST.tsv").write_text("path\tparent\r\n")
    (root / "data" / "empty").mkdir()
    return rows


def test_without_delete_a_folder_in_the_way_is_never_replaced(tmp_path, runs):
    root = tmp_path / "t"
    root.mkdir()
    rows = _folder_of_ours(root)
    run = runs(root, rows=rows)
    with pytest.raises(PathConflictError, match="with delete"):
        run.decide("data", "a remote file named like the folder")
    run.close()
    kept = runs(root, if_collision="keep.local")
    assert kept.decide("data", "remote")[0] == Decision(Action.KEEP_LOCAL, kept.target.root / "data")
    assert (root / "data" / "x.csv").exists()


def test_with_delete_a_folder_of_synclients_own_files_goes_for_the_remote_file(tmp_path, runs):
    root = tmp_path / "t"
    root.mkdir()
    run = runs(root, rows=_folder_of_ours(root), delete=True)
    decision, _ = run.decide("data", "remote")
    assert decision == Decision(Action.DOWNLOAD, run.target.root / "data")
    assert not (root / "data").exists()
    assert run.claims.handled == {"data/x.csv", "data/sub/y.csv"}
    assert run.results == {
        "data/x.csv": (SyncStatus.DELETED, "delete"),
        "data/sub/y.csv": (SyncStatus.DELETED, "delete"),
    }


def test_with_delete_a_folder_holding_a_users_file_stays(tmp_path, runs):
    root = tmp_path / "t"
    root.mkdir()
    rows = _folder_of_ours(root)
    _users(root, "data/notes.txt")
    run = runs(root, rows=rows, delete=True)
    with pytest.raises(PathConflictError, match="did not write"):
        run.decide("data", "remote")
    assert (root / "data" / "x.csv").exists() and run.claims.handled == set()


@pytest.mark.parametrize("filters", [{"min_size": "1k"}, {"max_age": "1y"}])
def test_with_delete_a_folder_holding_a_file_the_size_and_age_filters_may_leave_out_stays(tmp_path, runs, filters):
    # as a file the patterns leave out: x.csv (20 B, under --min-size 1k; or of an age --max-age cannot know) is not
    # this run's to delete, so the folder is not emptied for the remote file
    root = tmp_path / "t"
    root.mkdir()
    run = runs(root, rows=_folder_of_ours(root), delete=True, **filters)
    with pytest.raises(PathConflictError, match="did not write"):
        run.decide("data", "remote")
    assert (root / "data" / "x.csv").exists() and run.claims.handled == set() and run.results == {}


def test_the_dry_run_plans_what_the_real_run_does_with_a_folder_in_the_way(tmp_path, runs):
    dry_root, real_root = tmp_path / "dry", tmp_path / "real"
    dry_root.mkdir()
    real_root.mkdir()
    dry = runs(dry_root, rows=_folder_of_ours(dry_root), delete=True, dry_run=True)
    real = runs(real_root, rows=_folder_of_ours(real_root), delete=True)

    dry_decision, _ = dry.decide("data", "remote")
    real_decision, _ = real.decide("data", "remote")
    assert (
        (dry_decision.action, dry.target.relative(dry_decision.destination))
        == (real_decision.action, real.target.relative(real_decision.destination))
        == (Action.DOWNLOAD, "data")
    )
    assert isinstance(dry.effects, PlannedEffects)
    planned = {(e.rel_path, e.action.value) for e in dry.effects.plan.entries}
    assert planned == {(rel, action) for rel, (_, action) in real.results.items()}
    assert dry.claims.handled == real.claims.handled
    assert (dry_root / "data" / "x.csv").exists() and (dry_root / "data" / "empty").is_dir()  # nothing removed


# -- a local file where the remote has a folder (the walker's make_room) ------------------------------------------


def test_make_room_removes_synclients_own_copy_and_a_dry_run_only_says_so(tmp_path, runs):
    for dry_run in (False, True):
        root = tmp_path / ("dry" if dry_run else "real")
        root.mkdir()
        copy = _ours(root, "x", "x's bytes", entity_id="syn8", local_path="x(1)")
        run = runs(root, rows=(copy,), dry_run=dry_run)
        assert run.claims.make_room("x(1)", run.target.root / "x(1)") is True
        assert run.claims.is_displaced("x(1)")
        assert (root / "x(1)").exists() is dry_run


def test_make_room_with_delete_removes_an_untouched_file_synclient_wrote(tmp_path, runs):
    root = tmp_path / "t"
    root.mkdir()
    row = _ours(root, "data")
    run = runs(root, rows=(row,), delete=True)
    assert run.claims.make_room("data", run.target.root / "data") is True
    assert not (root / "data").exists()
    assert run.claims.handled == {"data"} and run.results == {"data": (SyncStatus.DELETED, "delete")}


@pytest.mark.parametrize("filters", [{"min_size": "1k"}, {"max_age": "1y"}])
def test_make_room_leaves_a_file_the_size_and_age_filters_may_leave_out(tmp_path, runs, filters):
    root = tmp_path / "t"
    root.mkdir()
    run = runs(root, rows=(_ours(root, "data"),), delete=True, **filters)
    assert run.claims.make_room("data", run.target.root / "data") is False
    assert (root / "data").is_file() and run.claims.handled == set() and run.results == {}


@pytest.mark.parametrize("case", ["no delete", "changed", "a user's"])
def test_make_room_leaves_what_is_not_synclients_to_remove(tmp_path, runs, case):
    root = tmp_path / "t"
    root.mkdir()
    rows: Tuple[IndexRow, ...] = ()
    if case == "a user's":
        _users(root, "data")
    else:
        rows = (_ours(root, "data"),)
    if case == "changed":
        _users(root, "data", "changed by the user since")
    run = runs(root, rows=rows, delete=case != "no delete")
    assert run.claims.make_room("data", run.target.root / "data") is False
    assert (root / "data").is_file() and run.claims.handled == set()
    assert run.results == {}  # a changed file is the deletion pass's to report (kept), as any vanished file
