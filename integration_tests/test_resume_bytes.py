"""Issue 32 part 1: an interrupted download resumes every byte that reached the disk, measured by the emulator's
data-byte counter.

A project of one multipart file (two streams) and one single-stream file is synced, interrupted when the client has
written a given share of its bytes (Ctrl-C: a real SIGINT in this process; SIGKILL: a child kills itself from its
observer), on a capped link and an uncapped one. The bytes on disk are then counted (per part, the prefix that is
the file's), and the re-run must fetch at most the bytes missing from the disk plus JOURNAL_EVERY per stream that
was running; its report must say exactly what came over the wire and what was reused; every file ends byte-exact.
The quick variants run by default; the sweep over many moments is marked slow.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Dict, List

import pytest
from synctrees import MiB, local_tree, seeded_md5

from synclient import Platform, SyncStatus, TransferConfig, sync_from_platform
from synclient.emulator import Emulator
from synclient.events import SyncObserver
from synclient.transfer.partial import JOURNAL_EVERY, TEMP_SUFFIX

PART = 16 * MiB
FILES = {"big.bin": (40 * MiB + 12_345, 101), "mid.bin": (12 * MiB + 777, 102)}  # name: (size, seed)
TOTAL = sum(size for size, _ in FILES.values())
STREAMS = 3  # big.bin's two streams and mid.bin's one: every stream that can run at once
CONFIG = dict(max_workers=4, multipart_threshold=PART, part_size=PART, streams_per_file=2)
SLOW = 6_000_000  # bytes/s per connection: a run takes about 3 s
#: (file name, part size) of what each file's partial holds
LAYOUT = {"big.bin": PART, "mid.bin": 0}


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    spec = {
        "projects": [
            {
                "name": "p",
                "children": [{"type": "file", "name": n, "size": s, "seed": seed} for n, (s, seed) in FILES.items()],
            }
        ]
    }
    with Emulator(data_dir=str(tmp_path_factory.mktemp("emu"))) as emulator:
        emulator.project_id = emulator.seed_spec(spec)["p"]
        yield emulator


@pytest.fixture(scope="module")
def contents() -> Dict[str, bytes]:
    return {name: random.Random(seed).randbytes(size) for name, (size, seed) in FILES.items()}


class _SigintAt(SyncObserver):
    """Ctrl-C once the client has written ``threshold`` bytes: a real SIGINT to this process, from the stream that
    wrote them (the main thread, waiting on the run, gets KeyboardInterrupt as from a terminal)."""

    def __init__(self, threshold: int) -> None:
        self.threshold, self.written, self.sent = threshold, 0, False
        self._lock = threading.Lock()

    def bytes_transferred(self, file, count: int) -> None:
        with self._lock:
            self.written += count
            if self.sent or self.written < self.threshold:
                return
            self.sent = True
        os.kill(os.getpid(), signal.SIGINT)


_KILLED_AT = textwrap.dedent("""
    import os, signal, sys, threading
    from synclient import Platform, TransferConfig, sync_from_platform
    from synclient.events import SyncObserver
    endpoint, token, entity, target, threshold = sys.argv[1:6]
    lock, written = threading.Lock(), [0]

    class KillAt(SyncObserver):
        def bytes_transferred(self, file, count):
            with lock:
                written[0] += count
                if written[0] >= int(threshold):
                    os.kill(os.getpid(), signal.SIGKILL)

    config = TransferConfig(max_workers=4, multipart_threshold=2**24, part_size=2**24, streams_per_file=2)
    sync_from_platform(entity, target, platform=Platform(endpoint=endpoint, token=token), config=config,
                       observer=KillAt(), progress=False)
""")


def _interrupt_in_process(emu: Emulator, target: Path, threshold: int) -> None:
    assert threading.current_thread() is threading.main_thread(), "a SIGINT reaches the main thread only"
    before = set(threading.enumerate())
    with pytest.raises(KeyboardInterrupt):
        sync_from_platform(
            emu.project_id,
            target,
            platform=Platform(endpoint=emu.endpoint, token=emu.token),
            config=TransferConfig(**CONFIG),
            observer=_SigintAt(threshold),
            progress=False,
        )
    for thread in set(threading.enumerate()) - before:  # the streams stop at their next chunk, marking what they had
        if thread.name.startswith("synclient"):
            thread.join()


def _kill_child(emu: Emulator, target: Path, threshold: int) -> None:
    child = subprocess.run(
        [sys.executable, "-c", _KILLED_AT, emu.endpoint, emu.token, emu.project_id, str(target), str(threshold)],
        timeout=120,
    )
    assert child.returncode == -signal.SIGKILL, "the run ended before the kill"


def _kept_prefix(data: bytes, start: int, end: int, disk: bytes) -> int:
    """Bytes of ``data[start:end]`` that ``disk`` holds from ``start`` on."""
    end = min(end, len(disk))
    block = 64 * 1024
    offset = start
    while offset < end:
        stop = min(offset + block, end)
        if disk[offset:stop] != data[offset:stop]:
            return offset - start + next(i for i in range(stop - offset) if disk[offset + i] != data[offset + i])
        offset = stop
    return max(end - start, 0)


def _on_disk(target: Path, contents: Dict[str, bytes]) -> int:
    """The files' bytes that reached the disk: installed files whole, partials part by part (zeros preallocated
    past what a part wrote are not its bytes)."""
    found = 0
    for name, data in contents.items():
        if (target / name).exists():
            found += len(data)
            continue
        partials = list(target.glob(f".{name}.*{TEMP_SUFFIX}"))
        if not partials:
            continue
        disk = partials[0].read_bytes()
        part = LAYOUT[name] or len(data)
        found += sum(_kept_prefix(data, s, min(s + part, len(data)), disk) for s in range(0, len(data), part))
    return found


def _run_interrupted(emu: Emulator, tmp_path: Path, contents, *, how: str, share: float, link: int) -> List[int]:
    """One interrupted run and its re-run; returns (served before, on disk, served by the re-run)."""
    target = tmp_path / f"{how}-{link}-{share}"
    emu.set_knobs(bandwidth_per_conn=link)
    emu.reset_stats()
    threshold = int(share * TOTAL)
    if how == "ctrl-c":
        _interrupt_in_process(emu, target, threshold)
    else:
        _kill_child(emu, target, threshold)
    first = emu.stats()["data_bytes"]
    kept = _on_disk(target, contents)
    assert kept >= threshold, (kept, threshold)  # the interrupt came after the bytes that triggered it were written
    emu.set_knobs(bandwidth_per_conn=0)
    emu.reset_stats()
    results = sync_from_platform(
        emu.project_id,
        target,
        platform=Platform(endpoint=emu.endpoint, token=emu.token),
        config=TransferConfig(**CONFIG),
        progress=False,
    )
    again = emu.stats()["data_bytes"]
    assert all(r.status in (SyncStatus.DOWNLOADED, SyncStatus.SKIPPED) for r in results)
    # byte-exact, and no partial or journal left
    assert local_tree(target) == {name: seeded_md5(size, seed) for name, (size, seed) in FILES.items()}
    missing = TOTAL - kept
    assert again <= missing + STREAMS * JOURNAL_EVERY, (how, share, link, first, kept, again)
    downloaded = sum(r.size for r in results if r.status is SyncStatus.DOWNLOADED)
    report = results.report
    assert report.bytes_downloaded == again  # what came over the wire, exactly
    assert report.bytes_reused == downloaded - again
    print(
        f"\n{how:7} at {share:4.0%} of the bytes, link {'%d MB/s' % (link // 10**6) if link else 'uncapped':9}: "
        f"first run served {first / MiB:6.1f} MiB, {kept / MiB:6.1f} MiB on disk; re-run served {again / MiB:6.1f} MiB"
        f" (missing {missing / MiB:6.1f}); in all {(first + again) / MiB:6.1f} MiB for {TOTAL / MiB:.1f} MiB"
    )
    return [first, kept, again]


@pytest.mark.parametrize(
    "how, share, link",
    [("ctrl-c", 0.5, SLOW), ("ctrl-c", 0.3, 0), ("sigkill", 0.6, SLOW)],
    ids=["ctrl-c-slow", "ctrl-c-fast", "sigkill-slow"],
)
def test_an_interrupted_sync_fetches_again_only_what_the_disk_lacks(emu, contents, tmp_path, how, share, link):
    _run_interrupted(emu, tmp_path, contents, how=how, share=share, link=link)


SHARES = (0.05, 0.2, 0.35, 0.5, 0.65, 0.8, 0.95)


@pytest.mark.slow  # about a minute: every moment, both interrupts, both links
@pytest.mark.parametrize("how", ["ctrl-c", "sigkill"])
@pytest.mark.parametrize("link", [SLOW, 0], ids=["slow", "fast"])
def test_interrupts_at_many_moments_refetch_at_most_the_missing_bytes_and_a_mark_per_stream(
    emu, contents, tmp_path, how, link
):
    for share in SHARES:
        _run_interrupted(emu, tmp_path, contents, how=how, share=share, link=link)
