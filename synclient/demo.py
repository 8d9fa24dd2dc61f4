"""``synclient demo``: the whole product in one command, with no network and nothing to set up.

Starts the platform emulator in-process on free 127.0.0.1 ports with realistic latency and Synapse's concurrency
limit, seeds a demo project (a few hundred small files over three folder levels plus two large files), syncs it to
a local folder with progress, then syncs again to show that an unchanged tree downloads nothing.

The demo talks to its own emulator with the emulator's token, passed explicitly: it never reads or writes the
user's real configuration, environment token or keyring.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from synclient.events import SyncObserver
from synclient.platform.rest import Platform
from synclient.results import SyncResults
from synclient.sync.runner import sync_from_platform
from synclient.units import format_size

MiB = 1024 * 1024
PROJECT_NAME = "synclient-demo"

#: Latency like a real platform over the internet, and Synapse's 3-concurrent-requests limit, so the demo shows
#: the adaptive gate at work. Kept small enough that the demo finishes in well under 30 s on two cores.
DEMO_KNOBS: Dict[str, Any] = dict(
    api_latency_ms=40.0, api_latency_jitter_ms=10.0, data_latency_ms=10.0, max_concurrent_per_user=3
)


@dataclass(frozen=True)
class DemoShape:
    """How big the demo project is."""

    folders_per_level: int  # fan-out at each of the three folder levels
    files_per_folder: int  # small files in every folder (and the project root)
    small_file_bytes: int  # the largest small file; sizes vary from 1/8 of it up to it
    large_files: tuple  # sizes of the large files, in bytes

    @property
    def folder_count(self) -> int:
        n = self.folders_per_level
        return n + n * n + n * n * n

    @property
    def small_file_count(self) -> int:
        return (self.folder_count + 1) * self.files_per_folder


FULL = DemoShape(
    folders_per_level=3, files_per_folder=8, small_file_bytes=16 * 1024, large_files=(96 * MiB, 64 * MiB)
)  # 320 small files + 160 MiB
SMALL = DemoShape(
    folders_per_level=2, files_per_folder=2, small_file_bytes=4 * 1024, large_files=(2 * MiB, 1 * MiB)
)  # for tests: 30 small files + 3 MiB


def demo_spec(shape: DemoShape) -> Dict[str, Any]:
    """The emulator seed spec of the demo project (deterministic: same shape, same bytes)."""
    counter = iter(range(1, 1 << 30))

    def small_files() -> List[Dict[str, Any]]:
        files = []
        for _ in range(shape.files_per_folder):
            n = next(counter)
            size = shape.small_file_bytes // 8 + (n * 997) % (shape.small_file_bytes - shape.small_file_bytes // 8)
            files.append({"type": "file", "name": f"reading-{n:04d}.dat", "size": size, "seed": n})
        return files

    def folder(name: str, level: int) -> Dict[str, Any]:
        children: List[Dict[str, Any]] = small_files()
        if level < 3:
            children += [folder(f"{name}.{i + 1}", level + 1) for i in range(shape.folders_per_level)]
        return {"type": "folder", "name": f"level{level}-{name}", "children": children}

    large = [
        {"type": "file", "name": f"scan-{chr(ord('a') + i)}.bin", "size": size, "seed": 1000 + i}
        for i, size in enumerate(shape.large_files)
    ]
    root_children = small_files() + [folder(str(i + 1), 1) for i in range(shape.folders_per_level)]
    root_children.append({"type": "folder", "name": "raw", "children": large})
    return {"projects": [{"name": PROJECT_NAME, "children": root_children}]}


@dataclass
class DemoOutcome:
    endpoint: str
    project_id: str
    path: Path
    seed_seconds: float
    first: SyncResults
    second: SyncResults


Narrate = Callable[[str], None]
ObserverFactory = Callable[[str], Optional[SyncObserver]]


def run_demo(
    path: Path,
    *,
    shape: DemoShape = FULL,
    max_workers: Optional[int] = None,
    make_observer: ObserverFactory = lambda description: None,
    narrate: Narrate = lambda line: None,
) -> DemoOutcome:
    """Run the demo into ``path``; ``make_observer(description)`` supplies a progress display per sync."""
    from synclient.emulator import Emulator  # the emulator is only needed here

    with Emulator(**DEMO_KNOBS) as emulator:
        narrate(
            f"started a local platform emulator at {emulator.endpoint} "
            f"(API latency {DEMO_KNOBS['api_latency_ms']:.0f} ms, at most "
            f"{DEMO_KNOBS['max_concurrent_per_user']} concurrent requests, like Synapse)"
        )
        started = time.monotonic()
        project_id = emulator.seed_spec(demo_spec(shape))[PROJECT_NAME]
        seed_seconds = time.monotonic() - started
        narrate(
            f"seeded project {project_id}: {shape.small_file_count} small files in {shape.folder_count} "
            f"folders (3 levels) + {len(shape.large_files)} large files ({format_size(sum(shape.large_files))})"
        )
        if _holds_files(path):
            narrate(resync_note(path))
        with Platform(emulator.endpoint, token=emulator.token) as platform:
            first = _sync(project_id, path, platform, max_workers, make_observer, "first sync", narrate)
            second = _sync(project_id, path, platform, max_workers, make_observer, "second sync", narrate)
        return DemoOutcome(
            endpoint=emulator.endpoint,
            project_id=project_id,
            path=path,
            seed_seconds=seed_seconds,
            first=first,
            second=second,
        )


def _holds_files(path: Path) -> bool:
    return path.is_dir() and any(path.iterdir())


def resync_note(path: Path) -> str:
    """Said before the first sync when ``path`` already holds files (an earlier demo's): that sync then finds them
    in place and downloads little or nothing, which is what a re-sync does, not a fault."""
    return (
        f"{path} already exists, so the first sync is a re-sync: files already there are skipped; for a fresh "
        f"start, remove {path} or give --path another folder"
    )


def _sync(
    project_id: str,
    path: Path,
    platform: Platform,
    max_workers: Optional[int],
    make_observer: ObserverFactory,
    description: str,
    narrate: Narrate,
) -> SyncResults:
    narrate(f"{description}: {project_id} -> {path}")
    observer = make_observer(description)
    try:
        return sync_from_platform(
            project_id,
            path,
            platform=platform,
            max_workers=max_workers,
            on_error="continue",
            observer=observer,
            progress=False,
            # the emulator's file handle ids are not the platform's: they stay out of the
            # machine's synapseclient cache, which synapseclient trusts without checking
            synapse_cache=False,
        )
    finally:
        close = getattr(observer, "close", None)
        if close is not None:
            close()
