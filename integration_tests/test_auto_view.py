"""Issue 34: ``--view auto`` against the emulator: when synclient makes its temporary view and when it walks instead
(a small tree, an account that may not create it, a scope over the container limit, a view not built in time),
always with the walk's outcome; what a killed or interrupted run leaves and how the next run removes it (only
synclient's views, only after the grace period); a scratch project of the user's choice. The scenarios of a
lagging view are in test_view_planned_sync.py (run with and without view="auto")."""

from __future__ import annotations

import datetime
import signal
import threading

import pytest
from cli_subprocess import run_synclient, start_synclient
from synctrees import local_tree

from synclient import Platform, sync_from_platform
from synclient.emulator import Emulator
from synclient.sync.sources import auto_view, scratch_views
from synclient.sync.sources.scratch_views import CREATED_ON_KEY, LEFTOVER_GRACE, VIEW_NAME_PREFIX, ScratchViews

FOLDERS, PER_FOLDER = 3, 20  # 60 files: above WORTH_A_VIEW (50)
SPEC = {
    "projects": [
        {
            "name": "p",
            "children": [
                {
                    "type": "folder",
                    "name": f"F{i}",
                    "children": [
                        {
                            "type": "file",
                            "name": f"f{j}.txt",
                            "content": f"{i}/{j}\n",
                            "annotations": {"assay": ["rna" if j % 2 else "dna"], "n": [j]},
                        }
                        for j in range(PER_FOLDER)
                    ],
                }
                for i in range(FOLDERS)
            ],
        }
    ]
}


@pytest.fixture
def emu(tmp_path):
    with Emulator(data_dir=str(tmp_path / "emu")) as emu:
        emu.project = emu.seed_spec(SPEC)["p"]
        yield emu


def sync(emu, target, **keywords):
    with Platform(emu.endpoint, token=emu.token) as platform:
        return sync_from_platform(emu.project, target, platform=platform, synapse_cache=False, **keywords)


def calls(emu, route):
    return emu.stats()["api_by_route"].get(route, 0)


def bundles(emu):
    return sum(count for route, count in emu.stats()["api_by_route"].items() if route.endswith("/bundle2"))


def views_in(emu, project_id):
    return [e for e in emu.project_entities(project_id) if e["kind"] == "entityview"]


def assert_nothing_left(emu):
    assert set(emu.store.projects()) == {"p"} and emu.trash() == []


def walked_alike(emu, tmp_path, **keywords):
    """The sync with view="auto" and without it: the same tree; the auto run's results."""
    plain = sync(emu, tmp_path / "plain")
    emu.reset_stats()
    auto = sync(emu, tmp_path / "auto", view="auto", **keywords)
    assert local_tree(tmp_path / "plain") == local_tree(tmp_path / "auto")
    assert not plain.failures and not auto.failures and len(auto) == FOLDERS * PER_FOLDER
    return auto


def test_a_view_is_made_read_and_removed_when_it_pays(emu, tmp_path, caplog):
    caplog.set_level("INFO", logger="synclient.sync.auto_view")
    walked_alike(emu, tmp_path)
    assert bundles(emu) == auto_view.WORTH_A_VIEW - 1  # the files before the view took theirs; the others none
    assert calls(emu, "POST /repo/v1/entity") == 2 and calls(emu, "DELETE /repo/v1/entity/{id}") == 2
    assert calls(emu, "POST /file/v1/fileHandle/batch") == 1  # the other 11 files' URLs in one batch
    assert_nothing_left(emu)
    assert [r.getMessage() for r in caplog.records if "planned from a temporary file view" in r.getMessage()]


def test_external_url_files_take_their_bundle_from_an_auto_view_as_from_the_walk(emu, tmp_path, monkeypatch):
    monkeypatch.setattr(auto_view, "WORTH_A_VIEW", 1)  # the view from the first file on
    folder = emu.resolve(emu.project, "F2")
    emu.add_external_file(folder, "far.csv", "far\n")
    emu.add_external_file(folder, "unrecorded.csv", "no md5\n", record_md5=False)
    emu.reset_stats()
    plain = sync(emu, tmp_path / "plain")
    walk_bundles = bundles(emu)
    emu.reset_stats()
    auto = sync(emu, tmp_path / "auto", view="auto")
    assert local_tree(tmp_path / "plain") == local_tree(tmp_path / "auto")
    assert sorted((r.path.name, r.status, r.action) for r in plain) == sorted(
        (r.path.name, r.status, r.action) for r in auto
    )
    assert walk_bundles == FOLDERS * PER_FOLDER + 2
    assert bundles(emu) == 2  # the view's rows say which handles are external: those take their bundles
    assert_nothing_left(emu)


def test_a_small_tree_or_a_resync_makes_no_view(emu, tmp_path):
    sync(emu, tmp_path / "t", view="auto")
    emu.reset_stats()
    again = sync(emu, tmp_path / "t", view="auto")  # nothing changed: no file needs its bundle
    assert not again.failures and calls(emu, "POST /repo/v1/entity") == 0 and bundles(emu) == 0
    with Platform(emu.endpoint, token=emu.token) as platform:
        folder = emu.resolve(emu.project, "F0")
        emu.reset_stats()
        small = sync_from_platform(folder, tmp_path / "small", platform=platform, synapse_cache=False, view="auto")
    assert len(small) == PER_FOLDER and calls(emu, "POST /repo/v1/entity") == 0  # 20 files: the walk is cheaper
    plan = sync(emu, tmp_path / "dry", view="auto", dry_run=True)  # a dry run makes nothing in the account
    assert len(plan.entries) == FOLDERS * PER_FOLDER and calls(emu, "POST /repo/v1/entity") == 0
    assert_nothing_left(emu)


@pytest.mark.parametrize(
    "knobs, why",
    [
        ({"uncertified_user": True}, "Only certified users may create"),
        ({"deny_create": True}, "lack CREATE access"),
        ({"max_containers_per_view": 3}, "exceeds the maximum number of 3 projects and/or folders"),
    ],
)
def test_an_account_or_scope_that_cannot_have_the_view_walks_saying_why_once(emu, tmp_path, caplog, knobs, why):
    emu.set_knobs(**knobs)
    caplog.set_level("INFO", logger="synclient.sync.auto_view")
    walked_alike(emu, tmp_path)
    assert bundles(emu) == FOLDERS * PER_FOLDER  # every file took its bundle, as without a view
    notes = [r.getMessage() for r in caplog.records if r.name == "synclient.sync.auto_view"]
    assert len(notes) == 1 and why in notes[0] and "bundle call" in notes[0]
    assert_nothing_left(emu)  # (a scratch project made before the refusal is removed again)


def test_a_view_not_built_within_the_bound_is_removed_and_the_run_walks(emu, tmp_path, caplog, monkeypatch):
    emu.set_knobs(view_build_seconds_per_1000_files=100_000)  # never built during the test
    monkeypatch.setattr(auto_view, "BUILD_BOUND_SECONDS", 0.3)
    caplog.set_level("INFO", logger="synclient.sync.auto_view")
    walked_alike(emu, tmp_path)
    assert bundles(emu) == FOLDERS * PER_FOLDER
    assert any("not built within 0.3 s" in r.getMessage() for r in caplog.records)
    assert_nothing_left(emu)


def test_leftover_views_are_removed_after_the_grace_period_and_only_synclients(emu, tmp_path):
    with Platform(emu.endpoint, token=emu.token) as platform:
        scratch = ScratchViews(platform, host="crashed-node")
        project = scratch.open_project()
        old = scratch.create_view(project, scope_id=emu.project, column_ids=[])
        young = scratch.create_view(project, scope_id=emu.project, column_ids=[])
    long_ago = datetime.datetime.now(datetime.timezone.utc) - LEFTOVER_GRACE - datetime.timedelta(minutes=5)
    emu.set_annotation(old, CREATED_ON_KEY, [long_ago.strftime("%Y-%m-%dT%H:%M:%S.000Z")])
    emu.set_created_on(old, long_ago.strftime("%Y-%m-%dT%H:%M:%S.000Z"))  # (old by the platform's clock too)
    with Platform(emu.endpoint, token=emu.token) as platform:
        users_view = platform.create_entity(
            {
                "concreteType": "org.sagebionetworks.repo.model.table.EntityView",
                "name": VIEW_NAME_PREFIX + "mine",  # named as synclient's, but not marked so
                "parentId": project.id,
                "scopeIds": [emu.project],
                "viewTypeMask": 1,
                "columnIds": [],
            }
        ).id
    emu.set_created_on(users_view, long_ago.strftime("%Y-%m-%dT%H:%M:%S.000Z"))
    walked_alike(emu, tmp_path)
    left = {e["id"] for e in views_in(emu, project.id)}
    assert left == {young, users_view}  # the old one removed; the run's own view too; the project kept
    assert emu.trash() == []


def test_a_given_scratch_project_holds_the_view_and_stays(emu, tmp_path):
    scratch = emu.seed_spec({"projects": [{"name": "my scratch", "children": []}]})["my scratch"]
    walked_alike(emu, tmp_path, scratch_project=scratch)
    assert calls(emu, "POST /repo/v1/entity") == 1  # the view only
    assert views_in(emu, scratch) == []
    assert set(emu.store.projects()) == {"p", "my scratch"} and emu.trash() == []


def test_a_run_killed_while_its_view_builds_leaves_it_and_the_next_run_removes_it(emu, tmp_path):
    emu.set_knobs(view_build_seconds_per_1000_files=100_000)
    run = start_synclient(emu, tmp_path, "get", "-r", emu.project, "--path", str(tmp_path / "t"), "--view", "auto")
    try:
        _wait_for(lambda: emu.building_views(), run)
    finally:
        run.kill()
        run.communicate()
    (scratch,) = [i for name, i in emu.store.projects().items() if name.startswith("synclient-scratch-")]
    (leftover,) = views_in(emu, scratch)
    assert leftover["name"].startswith(VIEW_NAME_PREFIX) and CREATED_ON_KEY in leftover["annotations"]
    emu.set_knobs(view_build_seconds_per_1000_files=0)
    again = run_synclient(emu, tmp_path, "get", "-r", emu.project, "--path", str(tmp_path / "t"), "--view", "auto")
    assert again.returncode == 0, again.stderr
    assert views_in(emu, scratch) != []  # younger than the grace period: maybe a run still building, kept
    long_ago = datetime.datetime.now(datetime.timezone.utc) - LEFTOVER_GRACE - datetime.timedelta(minutes=1)
    emu.set_annotation(leftover["id"], CREATED_ON_KEY, [long_ago.strftime("%Y-%m-%dT%H:%M:%S.000Z")])
    emu.set_created_on(leftover["id"], long_ago.strftime("%Y-%m-%dT%H:%M:%S.000Z"))
    (tmp_path / "t" / "F0" / "f0.txt").unlink()  # one file to fetch: the run needs no view, and sweeps none
    for number in range(auto_view.WORTH_A_VIEW):  # so make it need one: 50 new files
        emu.add_file(emu.resolve(emu.project, "F1"), f"new{number}.txt", f"new {number}\n")
    third = run_synclient(emu, tmp_path, "get", "-r", emu.project, "--path", str(tmp_path / "t"), "--view", "auto")
    assert third.returncode == 0, third.stderr
    assert "left at" in third.stderr or "synclient: note: --view auto" in third.stderr
    assert_nothing_left(emu)
    assert len(local_tree(tmp_path / "t")) == FOLDERS * PER_FOLDER + auto_view.WORTH_A_VIEW


def test_ctrl_c_while_the_view_builds_removes_it(emu, tmp_path):
    emu.set_knobs(view_build_seconds_per_1000_files=100_000)
    run = start_synclient(emu, tmp_path, "get", "-r", emu.project, "--path", str(tmp_path / "t"), "--view", "auto")
    try:
        _wait_for(lambda: emu.building_views(), run)
        run.send_signal(signal.SIGINT)
        _, stderr = run.communicate(timeout=60)
    finally:
        run.kill()
    assert run.returncode == 130, stderr
    assert_nothing_left(emu)


def _wait_for(condition, process, *, seconds: float = 60.0) -> None:
    """Until ``condition()`` holds (polled on an event's timeout, not a fixed sleep), failing if ``process`` ends."""
    done = threading.Event()
    for _ in range(int(seconds / 0.05)):
        if condition():
            return
        if process.poll() is not None:
            pytest.fail(f"the run ended first: {process.communicate()}")
        done.wait(0.05)
    pytest.fail("the condition never held")


def test_the_documented_names():
    assert scratch_views.SCRATCH_PROJECT_NAME == "synclient-scratch-{owner_id}"
    assert VIEW_NAME_PREFIX == "synclient-auto-view-"
