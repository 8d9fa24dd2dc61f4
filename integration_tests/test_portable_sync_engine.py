"""Issue 18: sync-engine tests again, with every fallback of :mod:`synclient.portable` in force (as
``SYNCLIENT_PORTABLE=all`` gives at start; child processes get the variable): positional writes with a lock and
``lseek``, no ``O_DIRECT``, no reflink, ``realpath`` instead of ``/proc/self/fd``, the ``filelock`` target lock, and
folders by checked path instead of ``dir_fd``. The tests are the engine's own, imported (with their fixtures); the
ones added here cover a multipart resume and the lock held by another process."""

from __future__ import annotations

import hashlib
import signal
import subprocess
import sys
import textwrap

import pytest
from synctrees import MiB, local_tree, seeded_md5
from test_sync_engine import (
    _one_file_project,
    emu,
    emulator,
    platform_for,
    test_a_kill_between_install_and_journal_removal_leaves_nothing_after_the_rerun,
    test_a_large_file_is_written_direct_only_when_asked,
    test_mixed_tree_is_byte_exact_at_any_pool_size,
    test_second_run_skips_verified_files_and_fetches_no_data,
    test_small_file_resumes_with_a_range_request,
    tree,
)

from synclient import TransferConfig, sync_from_platform
from synclient.emulator import Emulator
from synclient.errors import SyncLockedError

#: the imported tests and fixtures, collected here again with the fallbacks in force
__all__ = [
    "emu",
    "emulator",
    "tree",
    "test_a_kill_between_install_and_journal_removal_leaves_nothing_after_the_rerun",
    "test_a_large_file_is_written_direct_only_when_asked",
    "test_mixed_tree_is_byte_exact_at_any_pool_size",
    "test_second_run_skips_verified_files_and_fetches_no_data",
    "test_small_file_resumes_with_a_range_request",
]
pytestmark = pytest.mark.usefixtures("portable_fallbacks")

_KILLED_AFTER_PARTS = textwrap.dedent("""
    import os, signal, sys
    from synclient import Platform, TransferConfig, portable, sync_from_platform
    from synclient.transfer.partial import ResumeJournal
    assert not portable.CAPABILITIES.positional_io  # SYNCLIENT_PORTABLE=all, read at start
    finished = set()
    mark = ResumeJournal.mark
    def mark_then_die(self, marks):  # die once three parts are written and journaled whole, the others in flight
        mark(self, marks)
        finished.update(index for index, end in marks.items() if end == (index + 1) * 2**20)
        if len(finished) >= 3:
            os.kill(os.getpid(), signal.SIGKILL)
    ResumeJournal.mark = mark_then_die
    endpoint, token, entity, target = sys.argv[1:5]
    config = TransferConfig(max_workers=4, multipart_threshold=2**20, part_size=2**20)
    sync_from_platform(entity, target, platform=Platform(endpoint=endpoint, token=token), config=config)
""")


def test_a_multipart_download_killed_after_three_parts_resumes_byte_exact(tmp_path):
    size = 12 * MiB + 4321
    with Emulator() as emu:
        project = emu.seed_spec(_one_file_project(size, 21))["p"]
        child = subprocess.run(
            [sys.executable, "-c", _KILLED_AFTER_PARTS, emu.endpoint, emu.token, project, str(tmp_path)], timeout=120
        )
        assert child.returncode == -signal.SIGKILL
        assert not (tmp_path / "big.bin").exists()
        emu.reset_stats()
        sync_from_platform(
            project,
            tmp_path,
            platform=platform_for(emu),
            config=TransferConfig(max_workers=4, multipart_threshold=MiB, part_size=MiB),
        )
        refetched = emu.stats()["data_bytes"]
    assert hashlib.md5((tmp_path / "big.bin").read_bytes()).hexdigest() == seeded_md5(size, 21)
    assert refetched <= size - 3 * MiB  # the three journaled parts were kept
    assert sorted(local_tree(tmp_path)) == ["big.bin"]


_HOLDS_THE_LOCK = textwrap.dedent("""
    import sys
    from synclient import portable
    from synclient.sync.records.index import LocalIndex
    assert not portable.CAPABILITIES.flock
    with LocalIndex(__import__("pathlib").Path(sys.argv[1])):
        print("held", flush=True)
        sys.stdin.readline()
""")


def test_a_sync_into_a_target_another_process_is_syncing_into_fails_fast(emu, tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDS_THE_LOCK, str(tmp_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(SyncLockedError):
            sync_from_platform(emu.project_id, tmp_path, platform=platform_for(emu), progress=False)
    finally:
        holder.stdin.close()
        assert holder.wait() == 0
    results = sync_from_platform(emu.project_id, tmp_path, platform=platform_for(emu), progress=False)
    assert all(r.ok for r in results)
