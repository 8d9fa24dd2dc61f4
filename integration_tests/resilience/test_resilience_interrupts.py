"""Issue 7, matrix item 2: SIGINT and SIGKILL at seeded random points of a mixed tree; every rerun completes, no file
at a final path is ever partial or unverified, and what the rerun fetches again is bounded by what was in flight.

Not repeated here (test_sync_engine.py): the 256 MiB single-file SIGKILL resume and SIGINT promptness.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from resilience_support import CONFIG, FIGURES, SECRETS, expected_sizes, small_mixed_tree, sync

from synclient import SyncStatus, TransferConfig

_CHILD = textwrap.dedent("""
    import logging, sys
    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)  # every client DEBUG line goes to the watch
    from synclient import Platform, TransferConfig, sync_from_platform
    endpoint, token, entity, target = sys.argv[1:5]
    config = TransferConfig(max_workers=4, multipart_threshold=2**20, part_size=256 * 2**10, stall_timeout=5)
    sync_from_platform(entity, target, platform=Platform(endpoint=endpoint, token=token), config=config,
                       progress=False)
""")
WORKERS, THRESHOLD = 4, 2**20


def _points(long: bool):
    rng = random.Random(20240607)
    count = 60 if long else 20
    points = []
    for i in range(count):
        sig = signal.SIGKILL if i % 2 == 0 else signal.SIGINT
        if i < 4:  # during the walk, before any data byte
            points.append((sig, "api", rng.randint(1, 12)))
        else:
            # at most 80% of the bytes: the rest takes over a second at the capped rate, so a busy parent still
            # signals before the sync ends (at 97% that margin was ~0.1 s)
            points.append((sig, "bytes", rng.uniform(0.02, 0.8)))
    return points


@pytest.mark.slow  # about 40 s: the slow tier (pytest -m slow, run by CI after the README's command)
def test_sigint_and_sigkill_at_seeded_random_points(emulators, tmp_path, long):
    tree = small_mixed_tree()
    total = sum(expected_sizes(tree).values())
    points = _points(long)
    with FIGURES.scenario(
        f"SIGINT/SIGKILL at {len(points)} seeded points of a {tree.file_count}-file tree, then rerun", "interrupts"
    ) as sc:
        emu = emulators.start(bandwidth_per_conn=1_500_000)
        project = emu.seed_spec(tree.spec())["p"]
        worst = 0
        for number, (sig, kind, at) in enumerate(points):
            target = tmp_path / f"point{number}"
            emu.set_knobs(bandwidth_per_conn=1_500_000)
            _account_data_requests(emu)
            emu.reset_stats()
            child = subprocess.Popen(
                [sys.executable, "-c", _CHILD, emu.endpoint, emu.token, project, str(target)],
                stderr=subprocess.PIPE,
                text=True,
            )
            threshold = at if kind == "api" else int(at * total)
            key = "api_requests" if kind == "api" else "data_bytes"
            deadline = time.monotonic() + 60
            while emu.stats()[key] < threshold and child.poll() is None and time.monotonic() < deadline:
                time.sleep(0.005)
            finished_before_signal = child.poll() is not None
            child.send_signal(sig)
            _, stderr = child.communicate(timeout=30)
            SECRETS.scan(stderr, "child stderr (DEBUG log)")
            first = emu.stats()["data_bytes"]
            sc.tries += 1
            assert not finished_before_signal, f"point {number}: the sync ended before the signal"
            assert child.returncode != 0
            # nothing at a final path may be partial or unverified
            sc.check(target, tree.expected, complete=False)
            _account_data_requests(emu)
            emu.set_knobs(bandwidth_per_conn=0)
            emu.reset_stats()
            results = sync(emu, project, target, config=TransferConfig(**{**CONFIG, "max_workers": WORKERS}))
            assert all(r.status in (SyncStatus.DOWNLOADED, SyncStatus.SKIPPED) for r in results)
            sc.check(target, tree.expected)
            refetched = first + emu.stats()["data_bytes"] - total
            _account_data_requests(emu)
            worst = max(worst, refetched)
            # in flight at the signal: at most WORKERS streams, each a part (re-fetched whole) or a small file
            # (resumed from its partial bytes; under THRESHOLD), plus what sat in socket buffers
            assert refetched <= WORKERS * THRESHOLD, (number, sig, kind, at, first, refetched)
        sc.notes.append(f"worst re-fetch {worst} bytes (bound {WORKERS * THRESHOLD})")


def _account_data_requests(emu) -> None:
    """Stats are reset between points: count (and check) the data requests of each run before that."""
    stats = emu.stats()
    SECRETS.data_requests += stats["data_requests"]
    SECRETS.auth_on_data += stats["auth_headers_on_data"]
    assert stats["auth_headers_on_data"] == 0
