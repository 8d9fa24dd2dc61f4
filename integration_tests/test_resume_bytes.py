"""Issue 32 part 1: an interrupted download resumes every byte that reached the disk, measured by the emulator's
data-byte counter.

A project of one multipart file (two streams) and one single-stream file is synced, interrupted when the client has
written a given share of its bytes (Ctrl-C: a real SIGINT in this process; SIGKILL: a child library run kills
itself from its observer, or a child CLI run (``python -m synclient get -r``) from its writes), on a capped link and
an uncapped one. The bytes on disk are then counted (per part, the prefix that is
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
#: the CLI's own transfer settings (the defaults): big.bin in two 32 MiB parts (two streams), mid.bin one stream
CLI_PART = TransferConfig().part_size
assert TransferConfig().multipart_threshold == CLI_PART and FILES["mid.bin"][0] < CLI_PART < FILES["big.bin"][0]


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


_CLI_KILLED_AT = textwrap.dedent("""
    import os, runpy, signal, sys, threading
    from synclient.transfer import direct, download
    threshold = int(sys.argv.pop())
    lock, written, write = threading.Lock(), [0], direct.pwrite_all

    def counted(fd, data, offset):  # every byte of a download goes to its file through this
        write(fd, data, offset)
        with lock:
            written[0] += len(data)
            if written[0] >= threshold:
                os.kill(os.getpid(), signal.SIGKILL)

    direct.pwrite_all = download.pwrite_all = counted
    sys.argv[0] = "synclient"
    runpy.run_module("synclient", run_name="__main__")
""")


def _interrupt_in_process(emu: Emulator, target: Path, threshold: int) -> None:
    assert threading.current_thread() is threading.main_thread(), "a SIGINT reaches the main thread only"
    before = set(threading.enumerate())
    # Python's own Ctrl-C for the run, whatever an earlier test of this process left as SIGINT's handler
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    interrupt = _SigintAt(threshold)
    try:
        with pytest.raises(KeyboardInterrupt):
            sync_from_platform(
                emu.project_id,
                target,
                platform=Platform(endpoint=emu.endpoint, token=emu.token),
                config=TransferConfig(**CONFIG),
                observer=interrupt,
                progress=False,
            )
    finally:
        signal.signal(signal.SIGINT, handler)
    assert interrupt.sent, ("the run ended before the interrupt", interrupt.written, threshold)
    for thread in set(threading.enumerate()) - before:  # the streams stop at their next chunk, marking what they had
        if thread.name.startswith("synclient"):
            thread.join()


def _kill_child(emu: Emulator, target: Path, threshold: int) -> None:
    child = subprocess.run(
        [sys.executable, "-c", _KILLED_AT, emu.endpoint, emu.token, emu.project_id, str(target), str(threshold)],
        timeout=120,
    )
    assert child.returncode == -signal.SIGKILL, "the run ended before the kill"


def _kill_cli(emu: Emulator, target: Path, threshold: int, home: Path) -> None:
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SYNCLIENT_", "SYNAPSE_"))}
    env.update(
        HOME=str(home),
        SYNAPSE_CONFIG_FILE=str(home / ".synapseConfig"),
        SYNCLIENT_ENDPOINT=emu.endpoint,
        SYNCLIENT_AUTH_TOKEN=emu.token,
        PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH", "")]),
    )
    args = ["get", "-r", emu.project_id, "--path", str(target), "--no-progress", str(threshold)]
    child = subprocess.run([sys.executable, "-c", _CLI_KILLED_AT, *args], env=env, timeout=120, capture_output=True)
    assert child.returncode == -signal.SIGKILL, ("the run ended before the kill", child.stderr[-2000:])


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


def _on_disk(target: Path, contents: Dict[str, bytes], part_size: int) -> int:
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
        part = part_size if len(data) >= part_size else len(data)
        found += sum(_kept_prefix(data, s, min(s + part, len(data)), disk) for s in range(0, len(data), part))
    return found


def _run_interrupted(emu: Emulator, tmp_path: Path, contents, *, how: str, share: float, link: int) -> List[int]:
    """One interrupted run and its re-run; returns (served before, on disk, served by the re-run)."""
    target = tmp_path / f"{how}-{link}-{share}"
    emu.set_knobs(bandwidth_per_conn=link)
    emu.reset_stats()
    threshold = int(share * TOTAL)
    config = TransferConfig(**CONFIG)
    if how == "ctrl-c":
        _interrupt_in_process(emu, target, threshold)
    elif how == "sigkill":
        _kill_child(emu, target, threshold)
    else:
        _kill_cli(emu, target, threshold, tmp_path / "home")
        config = TransferConfig()  # the journals name the CLI's part size: the re-run resumes them with it
    first = emu.stats()["data_bytes"]
    kept = _on_disk(target, contents, config.part_size)
    assert kept >= threshold, (kept, threshold)  # the interrupt came after the bytes that triggered it were written
    emu.set_knobs(bandwidth_per_conn=0)
    emu.reset_stats()
    results = sync_from_platform(
        emu.project_id,
        target,
        platform=Platform(endpoint=emu.endpoint, token=emu.token),
        config=config,
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
        f"\n{how:11} at {share:4.0%} of the bytes, link {'%d MB/s' % (link // 10**6) if link else 'uncapped':9}: "
        f"first run served {first / MiB:6.1f} MiB, {kept / MiB:6.1f} MiB on disk; re-run served {again / MiB:6.1f} MiB"
        f" (missing {missing / MiB:6.1f}); in all {(first + again) / MiB:6.1f} MiB for {TOTAL / MiB:.1f} MiB"
    )
    return [first, kept, again]


@pytest.mark.parametrize(
    "how, share, link",
    [("ctrl-c", 0.5, SLOW), ("ctrl-c", 0.3, 0), ("sigkill", 0.6, SLOW), ("sigkill-cli", 0.7, 0)],
    ids=["ctrl-c-slow", "ctrl-c-fast", "sigkill-slow", "sigkill-cli-fast"],
)
def test_an_interrupted_sync_fetches_again_only_what_the_disk_lacks(emu, contents, tmp_path, how, share, link):
    _run_interrupted(emu, tmp_path, contents, how=how, share=share, link=link)


SHARES = (0.05, 0.2, 0.35, 0.5, 0.65, 0.8, 0.95)


@pytest.mark.slow  # about a minute and a half: every moment, every interrupt, both links
@pytest.mark.parametrize("how", ["ctrl-c", "sigkill", "sigkill-cli"])
@pytest.mark.parametrize("link", [SLOW, 0], ids=["slow", "fast"])
def test_interrupts_at_many_moments_refetch_at_most_the_missing_bytes_and_a_mark_per_stream(
    emu, contents, tmp_path, how, link
):
    for share in SHARES:
        _run_interrupted(emu, tmp_path, contents, how=how, share=share, link=link)
