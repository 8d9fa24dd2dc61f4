"""``--max-transfer`` / ``--cutoff-mode`` (issue 35) end to end against the emulator: each mode's bound on the bytes
a run downloads, the partials a hard stop keeps, the runs that go on until the tree is complete (exit 8, then 0),
the dry run's forecast, and ``--delete`` beside a stopped run.

The bounds, counted (no clock): ``report.transferred`` is what the cap counted, every byte the client received
from storage; the emulator's ``data_bytes`` what it sent.

- hard: ``transferred <= cap + STREAMS x CHUNK`` (the chunk that reaches the cap is written, then every running
  stream stops at its next chunk; at most STREAMS = max_workers streams run at once), and every byte received is
  kept: over the runs that complete the tree, the bytes transferred add up to the tree's size exactly;
- soft: no file starts once the cap is reached: ``transferred <= cap + STREAMS x FILE`` and no partial is left;
- cautious: files of 3 MiB under 7 MiB: exactly 2 files, ``transferred == 6 MiB <= cap``.

The emulator's count adds what sat in the socket buffers when a stream stopped (sent, never read): the link is
paced (PACE per connection), so the client reads each write as it comes and the buffers hold at most the write
in flight; asserted ``served <= transferred + STREAMS x SLACK``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Dict, List

import pytest
from synctrees import MiB, local_tree, seeded_md5

from synclient import Platform, SyncStatus, TransferConfig, download_many, sync_from_platform
from synclient.emulator import Emulator
from synclient.errors import ConfigError
from synclient.results import LEFT_BY_CAP, SyncResults
from synclient.sync.plan.dry_run import SyncPlan
from synclient.transfer.partial import TEMP_SUFFIX

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_subprocess import run_synclient  # noqa: E402

CHUNK = 64 * 1024
STREAMS = 4
CONFIG = dict(max_workers=STREAMS, multipart_threshold=4 * MiB, part_size=4 * MiB, streams_per_file=2, chunk_size=CHUNK)
SMALL = 3 * MiB
#: name: (size, seed); big.bin goes in three ranged parts, the others in one stream each (journaled: >= 1 MiB)
TREE = {"big.bin": (10 * MiB + 4321, 11), **{f"f{i}.bin": (SMALL, 20 + i) for i in range(6)}}
TOTAL = sum(size for size, _ in TREE.values())
EVEN = {f"e{i}.bin": (SMALL, 40 + i) for i in range(6)}  # files of one size: soft and cautious counts are exact
PACE = 50_000_000  # bytes/s per data connection: the client keeps up with every write
SLACK = 4 * MiB  # what one connection's socket buffers may hold when its stream stops (checked loosely)


def _spec(name: str, files: Dict[str, tuple]) -> dict:
    children = [{"type": "file", "name": n, "size": s, "seed": seed} for n, (s, seed) in files.items()]
    return {"projects": [{"name": name, "children": children}]}


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    with Emulator(data_dir=str(tmp_path_factory.mktemp("emu"))) as emulator:
        emulator.tree = emulator.seed_spec(_spec("tree", TREE))["tree"]
        emulator.even = emulator.seed_spec(_spec("even", EVEN))["even"]
        emulator.set_knobs(bandwidth_per_conn=PACE)
        yield emulator


def _sync(emu: Emulator, project: str, target: Path, **keywords) -> SyncResults:
    return sync_from_platform(
        project,
        target,
        platform=Platform(endpoint=emu.endpoint, token=emu.token),
        config=TransferConfig(**CONFIG),
        progress=False,
        **keywords,
    )


def _partials(target: Path) -> List[Path]:
    return sorted(p for p in target.rglob(f"*{TEMP_SUFFIX}"))


def _left(results: SyncResults) -> List[str]:
    return sorted(r.path.name for r in results if r.action == LEFT_BY_CAP)


def _check_run(results: SyncResults, emu: Emulator, cap: int) -> int:
    """One capped run's invariants; the bytes the emulator served."""
    report = results.report
    served = emu.stats()["data_bytes"]
    assert report.failed == 0 and not results.failures
    assert all(r.status is SyncStatus.SKIPPED for r in results if r.action == LEFT_BY_CAP)
    assert report.left_files == len(_left(results)) and report.cap_reached == bool(report.left_files)
    assert report.max_transfer == cap
    assert report.transferred <= served <= report.transferred + STREAMS * SLACK, (report.transferred, served)
    return served


def test_hard_stops_at_the_cap_keeps_partials_and_the_runs_go_on_to_the_end(emu, tmp_path):
    cap = 12 * MiB
    target = tmp_path / "hard"
    transferred, runs = [], []
    for run in range(3):
        emu.reset_stats()
        results = _sync(emu, emu.tree, target, max_transfer=cap)
        served = _check_run(results, emu, cap)
        report = results.report
        transferred.append(report.transferred)
        runs.append((report.downloaded, report.left_files, report.transferred, report.bytes_reused, served))
        assert report.transferred <= cap + STREAMS * CHUNK, (run, report.transferred)  # the hard bound
        if run < 2:
            assert report.cap_reached and report.transferred >= cap
            assert _partials(target), "a stopped stream's partial is kept for the next run"
            assert not [p for p in target.iterdir() if p.name in _left(results)]  # never moved into place
    assert not report.cap_reached and report.left_files == 0  # the third run finished
    assert local_tree(target) == {n: seeded_md5(s, seed) for n, (s, seed) in TREE.items()}  # no partial left
    assert sum(transferred) == TOTAL  # every byte received was kept: none downloaded twice
    # the later runs resumed the stopped streams' partials (which run takes which file is the pool's order: the
    # second run may spend its cap on other files first, so only the two runs together must have reused bytes)
    assert sum(reused for *_, reused, _served in runs[1:]) > 0
    shown = "(downloaded, left, transferred, reused, served)"
    print(f"\nhard, cap {cap // MiB} MiB of {TOTAL / MiB:.1f} MiB: {shown} per run {runs}")


def test_soft_lets_running_files_finish_and_leaves_no_partial(emu, tmp_path):
    cap = 7 * MiB
    emu.reset_stats()
    results = _sync(emu, emu.even, tmp_path / "soft", max_transfer=cap, cutoff_mode="soft")
    _check_run(results, emu, cap)
    report = results.report
    assert cap <= report.transferred <= cap + STREAMS * SMALL
    assert report.transferred == report.downloaded * SMALL  # every file started finished: no partial bytes
    assert report.downloaded >= 3 and report.left_files == 6 - report.downloaded
    assert not _partials(tmp_path / "soft")


def test_cautious_starts_only_files_that_fit(emu, tmp_path):
    cap = 7 * MiB
    target = tmp_path / "cautious"
    emu.reset_stats()
    results = _sync(emu, emu.even, target, max_transfer=cap, cutoff_mode="cautious")
    _check_run(results, emu, cap)
    report = results.report
    assert (report.downloaded, report.left_files, report.left_bytes) == (2, 4, 4 * SMALL)
    assert report.transferred == 2 * SMALL <= cap
    assert not _partials(target)
    again = _sync(emu, emu.even, target, max_transfer=cap, cutoff_mode="cautious")
    assert (again.report.downloaded, again.report.skipped, again.report.left_files) == (2, 4, 2)


def test_a_cap_of_zero_downloads_nothing_and_delete_removes_only_what_vanished(emu, tmp_path):
    target = tmp_path / "zero"
    project = emu.seed_spec(_spec("gone", {"keep.bin": (SMALL, 60), "gone.bin": (SMALL, 61)}))["gone"]
    _sync(emu, project, target)
    emu.delete_entity(emu.resolve(project, "gone.bin"))
    emu.add_file(project, "new.bin", b"n" * (2 * MiB))
    emu.add_version(emu.resolve(project, "keep.bin"), b"k" * MiB)  # a new version the cap will not reach
    before = (target / "keep.bin").read_bytes()
    emu.reset_stats()
    results = _sync(emu, project, target, max_transfer=0, delete=True)
    assert emu.stats()["data_bytes"] == 0 and results.report.transferred == 0
    assert _left(results) == ["keep.bin", "new.bin"] and results.report.deleted == 1
    assert (target / "keep.bin").read_bytes() == before  # the old copy stays until the new one is in
    assert not (target / "gone.bin").exists() and not (target / "new.bin").exists()
    done = _sync(emu, project, target, delete=True)
    assert done.report.downloaded == 2 and (target / "keep.bin").read_bytes() == b"k" * MiB


def test_download_many_takes_the_keywords_and_refuses_dask(emu, tmp_path):
    ids = [emu.resolve(emu.even, name) for name in EVEN]
    platform = Platform(endpoint=emu.endpoint, token=emu.token)
    config = TransferConfig(**CONFIG)
    emu.reset_stats()
    many = download_many(
        ids, tmp_path / "many", platform=platform, config=config, progress=False, max_transfer="7M",
        cutoff_mode="cautious",
    )  # fmt: skip
    assert (many.report.downloaded, many.report.left_files, many.report.transferred) == (2, 4, 2 * SMALL)
    assert emu.stats()["data_bytes"] == 2 * SMALL  # cautious: no stream was cut, nothing sent beyond the files
    with pytest.raises(ConfigError, match="dask"):
        download_many(ids, tmp_path / "d", platform=platform, max_transfer="1G", dask=object())


@pytest.mark.parametrize("mode, files, left", [("hard", 2, 4), ("soft", 3, 3), ("cautious", 2, 4)])
def test_dry_run_says_what_fits_under_the_cap(emu, tmp_path, mode, files, left):
    emu.reset_stats()
    plan = _sync(emu, emu.even, tmp_path / "dry", dry_run=True, max_transfer=7 * MiB, cutoff_mode=mode)
    assert isinstance(plan, SyncPlan) and plan.cap is not None
    assert (plan.cap.files, plan.cap.bytes, plan.cap.left_files) == (files, files * SMALL, left)
    assert plan.to_json()["cap"]["left_files"] == left and emu.stats()["data_bytes"] == 0
    assert f"{files} files ({files * 3}.0 MiB) would finish" in plan.summary()


def test_cli_exits_8_with_the_line_until_done_then_0(emu, tmp_path):
    target = str(tmp_path / "cli")
    first = run_synclient(emu, tmp_path, "get", "-r", emu.even, "--path", target, "--max-transfer", "4M")
    assert first.returncode == 8, first.stderr
    assert "stopped at the --max-transfer cap of 4.0 MiB: " in first.stdout
    assert "left; run the same command again to go on" in first.stdout
    document = run_synclient(emu, tmp_path, "--json", "get", "-r", emu.even, "--path", target, "--max-transfer", "4M")
    assert document.returncode == 8, document.stderr
    report = json.loads(document.stdout)["report"]
    assert report["cap_reached"] and report["max_transfer"] == 4 * MiB and report["left_files"] > 0
    codes = []
    for _ in range(10):  # the nightly loop: the same command until it exits 0
        again = run_synclient(emu, tmp_path, "get", "-r", emu.even, "--path", target, "--max-transfer", "4M")
        codes.append(again.returncode)
        if again.returncode != 8:
            break
    assert codes[-1] == 0 and set(codes[:-1]) <= {8}, codes
    assert local_tree(Path(target)) == {n: seeded_md5(s, seed) for n, (s, seed) in EVEN.items()}
    dry = run_synclient(emu, tmp_path, "get", "-r", emu.even, "--path", target + "2", "--max-transfer", "7M",
                        "--cutoff-mode", "cautious", "--dry-run")  # fmt: skip
    assert dry.returncode == 0 and "2 files (6.0 MiB) would finish, 4 (12.0 MiB) left" in dry.stdout, dry.stdout


def test_cli_refuses_a_bad_size_and_the_cap_with_dask(emu, tmp_path):
    bad = run_synclient(emu, tmp_path, "get", "-r", emu.even, "--path", str(tmp_path / "x"), "--max-transfer", "lots")
    assert bad.returncode == 2 and "not a size" in bad.stderr
    dask = run_synclient(
        emu, tmp_path, "get", "-r", emu.even, "--path", str(tmp_path / "x"), "--max-transfer", "1G", "--dask", "local:1"
    )
    assert dask.returncode == 2 and "cannot be used with --dask" in dask.stderr


@pytest.mark.parametrize("mode", ["hard", "cautious"])
def test_a_file_that_fits_the_cap_exactly_is_downloaded_not_left(emu, tmp_path, mode):
    """A small file (one stream, no journal: never resumed) of exactly the cap: its last chunk lands on the cap and
    the file is installed, where it was left with every byte written by every run of the nightly loop."""
    size = 100 * 1024
    project = emu.seed_spec(_spec(f"exact-{mode}", {"one.bin": (size, 70)}))[f"exact-{mode}"]
    emu.reset_stats()
    results = _sync(emu, project, tmp_path / "exact", max_transfer=size, cutoff_mode=mode)
    report = results.report
    assert (report.downloaded, report.left_files, report.transferred) == (1, 0, size)
    assert not report.cap_reached and emu.stats()["data_bytes"] == size
    assert local_tree(tmp_path / "exact") == {"one.bin": seeded_md5(size, 70)}


def test_the_dry_runs_forecast_follows_order_by(emu, tmp_path):
    """With ``--order-by size`` the run starts the small files first, and those are what the cap lets finish: the
    forecast applies the cap in that order (it took the plan's: once the big file crossed the cap in a hard run,
    every file after it was left)."""
    files = {"a-big.bin": (5 * MiB, 80), **{f"b{i}.bin": (MiB, 81 + i) for i in range(3)}}
    project = emu.seed_spec(_spec("ordered", files))["ordered"]
    plan = _sync(emu, project, tmp_path / "o", dry_run=True, max_transfer=3 * MiB, order_by="size")
    assert isinstance(plan, SyncPlan) and plan.cap is not None
    assert (plan.cap.files, plan.cap.bytes, plan.cap.left) == (3, 3 * MiB, frozenset({"a-big.bin"}))


def test_a_failed_file_beside_files_left_by_the_cap_exits_1_with_the_caps_line(emu, tmp_path):
    """Exit 8 says 'run again to go on' only when nothing failed: a failure wins (exit 1), and the cap's line is
    still said; ``--json`` counts both."""
    spec = {
        "projects": [
            {
                "name": "mixed",
                "children": [
                    {"type": "file", "name": "big.bin", "size": SMALL, "seed": 90},
                    {"type": "file", "name": "small.txt", "content": "small\n"},
                    {"type": "file", "name": "gated.txt", "content": "gated\n", "deny": "download"},
                ],
            }
        ]
    }
    project = emu.seed_spec(spec)["mixed"]
    args = ["get", "-r", project, "--path", str(tmp_path / "m"), "--max-transfer", "2M", "--cutoff-mode", "cautious"]
    run = run_synclient(emu, tmp_path, "--json", *args)
    assert run.returncode == 1, run.stderr
    report = json.loads(run.stdout)["report"]
    assert (report["failed"], report["left_files"], report["downloaded"], report["cap_reached"]) == (1, 1, 1, True)
    text = run_synclient(emu, tmp_path, *args)
    assert text.returncode == 1 and "stopped at the --max-transfer cap of 2.0 MiB: 1 file" in text.stdout
