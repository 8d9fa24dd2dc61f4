"""Issue 32, part 3: a dry run costs listings, not a call per file; its byte count and call count are the real
run's; its estimate is within 2x of the real run's wall time (checked from the counted calls against the least time
the request window lets the real run take, which it took: no wall-clock ratio a loaded machine could break); it shows
progress.

The calls are counted by the emulator (its per-route counters), the bytes by the real run's report.
"""

from __future__ import annotations

import io
import os
import time
from dataclasses import replace

import pytest
from synctrees import Tree

from synclient import Platform, sync_from_platform
from synclient.platform.credentials import Endpoints
from synclient.platform.gate import MARGIN_SHARE, with_reserve
from synclient.platform.gate_state import GateRecord, GateStateFile
from synclient.sync.plan.dry_run import SyncPlan
from synclient.sync.plan.planner import Action

CHILDREN = "POST /repo/v1/entity/children"
BUNDLE = "POST /repo/v1/entity/{id}/version/{v}/bundle2"


def platform_for(emu) -> Platform:
    return Platform(endpoint=emu.endpoint, token=emu.token)


def seed(emu) -> str:
    """A root with one file, a folder of 30 files of different sizes, a folder of one, and an empty folder."""
    tree = Tree()
    many = tree.folder(tree.children, "a")
    for i in range(30):
        tree.text_file(many, "a/", f"f{i}.txt", "x" * (i + 1) * 7)
    one = tree.folder(tree.children, "b")
    tree.text_file(one, "b/", "one.txt", "the only file\n")
    tree.folder(tree.children, "empty")
    tree.text_file(tree.children, "", "top.md", "# top\n")
    return emu.seed_spec(tree.spec())["p"]


def dry_run(emu, project: str, target, **options) -> SyncPlan:
    emu.reset_stats()
    plan = sync_from_platform(project, target, platform=platform_for(emu), dry_run=True, **options)
    assert isinstance(plan, SyncPlan)
    return plan


def routes(emu) -> dict:
    return {route: count for route, count in emu.stats()["api_by_route"].items() if count}


def actions(plan: SyncPlan) -> dict:
    return {e.rel_path: e.action for e in plan.entries}


def test_a_first_dry_run_costs_its_listings_and_counts_the_real_runs_bytes_and_calls(emulator, tmp_path):
    project = seed(emulator)
    target = tmp_path / "t"
    plan = dry_run(emulator, project, target)
    calls = routes(emulator)
    assert BUNDLE not in calls  # no file needed its bundle: nothing is at any local path
    assert calls[CHILDREN] == 4  # one page per folder (the root, a, b, empty)
    assert sum(calls.values()) == 1 + 4  # and the root's header
    assert set(actions(plan).values()) == {Action.DOWNLOAD} and len(plan.entries) == 32
    sizes = {e.rel_path: e.size for e in plan.entries}
    # a folder's only download gets its folder's sum; several share theirs (in listed_bytes)
    assert sizes["top.md"] == 6 and sizes["b/one.txt"] == 14 and sizes["a/f0.txt"] is None
    assert plan.listed_bytes == sum((i + 1) * 7 for i in range(30))

    emulator.reset_stats()
    results = sync_from_platform(project, target, platform=platform_for(emulator))
    assert results.report.bytes_downloaded == plan.bytes_to_fetch
    assert results.report.rest_calls == plan.rest_calls == sum(routes(emulator).values())


def test_a_dry_run_calls_a_bundle_only_where_the_decision_needs_it(emulator, tmp_path):
    project = seed(emulator)
    target = tmp_path / "t"
    sync_from_platform(project, target, platform=platform_for(emulator))
    os.remove(target / "a" / "f0.txt")  # absent: downloaded, whatever its bytes (the listing decides)
    (target / "a" / "f1.txt").write_text("mine\n")  # the user's change: its MD5 decides (a bundle)
    emulator.add_version(emulator.resolve(project, "a/f2.txt"), b"a new version, longer than the old\n")  # (a bundle)
    emulator.add_file(emulator.resolve(project, "a"), "new.txt", b"new file\n")  # new: the listing decides
    plan = dry_run(emulator, project, target)
    assert routes(emulator)[BUNDLE] == 2
    fetched = {e.rel_path: e.action for e in plan.fetch_entries}
    assert fetched == {
        "a/f0.txt": Action.DOWNLOAD,
        "a/f1.txt": Action.OVERWRITE,
        "a/f2.txt": Action.DOWNLOAD,
        "a/new.txt": Action.DOWNLOAD,
    }
    assert plan.count(Action.SKIP) == 29

    emulator.reset_stats()
    results = sync_from_platform(project, target, platform=platform_for(emulator))
    assert {r.path.relative_to(target.resolve()).as_posix(): r.action for r in results if r.action != "skip"} == {
        path: action.value for path, action in fetched.items()
    }
    assert results.report.bytes_downloaded == plan.bytes_to_fetch
    assert results.report.rest_calls == plan.rest_calls


def test_where_a_filter_leaves_files_out_of_a_folder_its_downloads_are_sized_by_their_bundles(emulator, tmp_path):
    project = seed(emulator)
    target = tmp_path / "t"
    plan = dry_run(emulator, project, target, exclude=["a/f1*"])  # f1, f10..f19 left out of a/'s sum
    assert routes(emulator)[BUNDLE] == 30 - 11  # the 19 downloads of a/, for their sizes alone
    assert plan.listed_bytes == 0 and all(e.size is not None for e in plan.entries)
    emulator.reset_stats()
    results = sync_from_platform(project, target, platform=platform_for(emulator), exclude=["a/f1*"])
    assert len(results) == len(plan.entries) == 21
    assert results.report.bytes_downloaded == plan.bytes_to_fetch
    assert results.report.rest_calls == plan.rest_calls  # (the size bundles are the dry run's alone)


def test_the_estimate_is_within_twice_the_real_runs_wall_time_under_the_request_window(emulator_factory, tmp_path):
    """Synapse's limits scaled down (30 requests per 1 s window, 3 at a time, 50 ms a call): a first sync of 100
    small files makes about 104 calls, which the window makes last at least 3 s (the emulator refuses a faster run).
    The gate knows the window from an earlier command of the user (its state file, as back-to-back commands share
    it).

    Nothing here hangs on how loaded the machine is: the estimate is checked from the calls the dry run counted,
    paced at the emulator's latency, against the least time the window lets the real run take (which the real run
    did take: the server enforces it); the dry run's measured pace only makes its estimate longer."""
    allowed, window, latency = 30, 1.0, 0.05
    emu = emulator_factory(
        max_concurrent_per_user=3,
        max_requests_per_minute=allowed,
        rate_window_seconds=window,
        api_latency_ms=latency * 1000,
    )
    tree = Tree()
    for i in range(100):
        tree.text_file(tree.children, "", f"f{i:03}.txt", f"file {i}\n" * 20)
    project = emu.seed_spec(tree.spec())["p"]
    learned = GateRecord(window_seconds=window, budget=with_reserve(allowed), budget_ceiling=with_reserve(allowed))
    state = GateStateFile.for_user(
        Endpoints.from_root(emu.endpoint).repo, emu.token, default_window=window, margin_share=MARGIN_SHARE
    )
    assert state is not None and state.merge(replace(learned, stated_concurrency=3)) is not None
    platform = platform_for(emu)
    assert platform.gate.policy.budget == with_reserve(allowed)  # the window is known
    plan = sync_from_platform(project, tmp_path / "t", platform=platform, dry_run=True)
    assert isinstance(plan, SyncPlan) and len(plan.fetch_entries) == 100
    started = time.monotonic()
    results = sync_from_platform(project, tmp_path / "t", platform=platform)
    wall = time.monotonic() - started
    assert len(results) == 100 and not results.failures
    assert results.report.rest_calls - results.report.retries == plan.rest_calls  # (a refused call is retried)
    # the least time the window allows the real run's calls: every 30 past the first wait a window
    least = (plan.rest_calls - 1) // allowed * window
    assert least >= 3 * window and wall >= least
    limits = plan.limits
    assert (limits.requests_per_window, limits.concurrency) == (with_reserve(allowed), 3), limits
    assert window <= limits.window_seconds <= 1.05 * window and limits.seconds_per_call >= latency, limits
    at_the_latency = replace(limits, seconds_per_call=latency).seconds_for(plan.rest_calls)
    assert least <= at_the_latency <= 2 * least, (at_the_latency, least)
    assert plan.estimate_seconds >= at_the_latency


def test_a_dry_run_shows_its_progress_where_someone_watches(emulator, tmp_path, monkeypatch):
    import synclient.progress as progress
    from synclient.sync.plan import plan_progress

    project = seed(emulator)
    drawn = io.StringIO()
    made = []

    class Watched(plan_progress.PlanProgress):
        def __init__(self, **kwargs):
            super().__init__(stream=drawn, ticking=False, **kwargs)
            made.append(self)

    monkeypatch.setattr(progress, "choose_mode", lambda **_: progress.ProgressMode.BAR)  # (as in a terminal)
    monkeypatch.setattr(plan_progress, "PlanProgress", Watched)
    plan = dry_run(emulator, project, tmp_path / "t", progress=True)
    (display,) = made
    assert display.files == len(plan.entries) == 32 and display.to_download == 32
    last = drawn.getvalue().replace("\r", "\n").strip().splitlines()[-1]
    assert "dry run of p" in last and "32 files" in last and "32 to download" in last
    # off unless asked (and a real run's bar is not a dry run's)
    made.clear()
    dry_run(emulator, project, tmp_path / "t", progress=False)
    assert made == []


@pytest.mark.parametrize("asked", [True, False])
def test_the_children_listing_sums_file_sizes_only_when_asked(emulator, asked):
    from synclient.platform.models import EntityType

    project = seed(emulator)
    page = platform_for(emulator).list_children(
        emulator.resolve(project, "a"), include_types=[EntityType.FILE, EntityType.FOLDER], sum_file_sizes=asked
    )
    assert page.sum_file_sizes == (sum((i + 1) * 7 for i in range(30)) if asked else None)
