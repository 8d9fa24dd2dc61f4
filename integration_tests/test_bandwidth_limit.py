"""Issue 35: ``bwlimit`` measured against the emulator's data-byte counter.

A file set (one multipart file in parallel parts, four single-stream files, four connections) is downloaded at a
limit of 2 MiB/s, far below what this machine moves, so the limit is the only bottleneck. Every byte the emulator
served must fit the limit plus one burst over the run (the limiter's guarantee, strictly: from before the run's
first request to the client's last byte written), and the achieved rate, from the emulator's first byte served to
the client's last byte written, must be within 10% of the limit. (The window ends at the client: the emulator counts
a chunk before it goes out and the socket buffers hold bytes the client has not read yet, so its own last count
comes early.)
"""

from __future__ import annotations

import threading
import time
from typing import List, Tuple

import pytest
from synctrees import MiB, local_tree, seeded_md5

from synclient import Platform, SyncStatus, TransferConfig, sync_from_platform
from synclient.events import SyncObserver
from synclient.transfer.bandwidth import burst_bytes

LIMIT = 2 * MiB
FILES = {"big.bin": (8 * MiB, 11), **{f"f{n}.bin": (2 * MiB + n * 1000, 20 + n) for n in range(4)}}
TOTAL = sum(size for size, _ in FILES.values())  # about 16 MiB: about 8 s at the limit
CONFIG = dict(max_workers=4, multipart_threshold=4 * MiB, part_size=1 * MiB, streams_per_file=2)


class _LastWrite(SyncObserver):
    """When the client wrote its last byte."""

    def __init__(self) -> None:
        self.at = 0.0
        self.written = 0
        self._lock = threading.Lock()

    def bytes_transferred(self, file, count: int) -> None:
        with self._lock:
            self.at, self.written = time.monotonic(), self.written + count


@pytest.mark.slow
def test_the_achieved_rate_is_the_limit(emulator, tmp_path):
    spec = {
        "projects": [
            {
                "name": "p",
                "children": [{"type": "file", "name": n, "size": s, "seed": seed} for n, (s, seed) in FILES.items()],
            }
        ]
    }
    project = emulator.seed_spec(spec)["p"]
    emulator.reset_stats()
    samples: List[Tuple[float, int]] = []
    stop = threading.Event()

    def sample() -> None:  # the emulator's counter, every few milliseconds
        while not stop.is_set():
            samples.append((time.monotonic(), emulator.stats()["data_bytes"]))
            stop.wait(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    observer = _LastWrite()
    sampler.start()
    run_started = time.monotonic()
    try:
        results = sync_from_platform(
            project,
            tmp_path / "copy",
            platform=Platform(endpoint=emulator.endpoint, token=emulator.token),
            config=TransferConfig(**CONFIG, bwlimit=LIMIT),
            observer=observer,
            progress=False,
        )
    finally:
        stop.set()
        sampler.join()
    assert all(r.status is SyncStatus.DOWNLOADED for r in results)
    assert local_tree(tmp_path / "copy") == {name: seeded_md5(size, seed) for name, (size, seed) in FILES.items()}
    served = emulator.stats()["data_bytes"]
    assert served == TOTAL == observer.written  # every byte once: no retry blurs the count
    run_seconds = observer.at - run_started
    first_byte = min(at for at, count in samples if count > 0)  # (a look at most a few ms after it went out)
    seconds = observer.at - first_byte
    rate = served / seconds
    print(
        f"\n{served / MiB:.1f} MiB served in {seconds:.2f} s from the first byte: {rate / MiB:.3f} MiB/s "
        f"({rate / LIMIT - 1:+.1%}) at a limit of {LIMIT / MiB:.1f} MiB/s; the run {run_seconds:.2f} s"
    )
    assert served <= LIMIT * run_seconds + burst_bytes(LIMIT)  # the limit and one burst, over the whole run
    assert 0.9 * LIMIT <= rate <= 1.1 * LIMIT
