"""Issue 3 acceptance: the sync engine against the emulator (real HTTP on loopback, real files)."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from synctrees import (
    KILLED_SYNC,
    MiB,
    Tree,
    assert_tree_matches,
    local_tree,
    mixed_tree,
    rest_bound,
    seeded_md5,
    sigkill_sync_after,
)

from synclient import Platform, SyncStatus, TransferConfig, portable, sync_from_platform
from synclient.emulator import Emulator
from synclient.errors import SyncError, UnsafePathError
from synclient.transfer.partial import FileIdentity, JournalHeader, ResumeJournal, journal_path, temp_path

SMALL_PARTS = dict(multipart_threshold=8 * MiB, part_size=8 * MiB)


@pytest.fixture(scope="module")
def tree():
    return mixed_tree()


@pytest.fixture(scope="module")
def emulator(tree, tmp_path_factory):
    with Emulator(data_dir=str(tmp_path_factory.mktemp("emu"))) as emu:
        emu.project_id = emu.seed_spec(tree.spec())[tree.name]
        yield emu


@pytest.fixture
def emu(emulator):
    emulator.set_knobs(**{name: value for name, value in _CLEAN_KNOBS.items()})
    emulator.reset_stats()
    return emulator


_CLEAN_KNOBS = dict(
    api_latency_ms=0,
    fault_api_5xx_rate=0.0,
    fault_api_429_rate=0.0,
    fault_data_cut_rate=0.0,
    fault_data_stall_rate=0.0,
    url_lifetime=900.0,
    data_ignore_range=False,
    data_wrong_content_range=False,
    max_concurrent_per_user=0,
    max_requests_per_minute=0,
    bandwidth_per_conn=0,
)


def platform_for(emu: Emulator) -> Platform:
    return Platform(endpoint=emu.endpoint, token=emu.token)


# workers=32: the fast subset's one end-to-end sync (conftest.py)
@pytest.mark.parametrize("workers", [1, 2, pytest.param(32, marks=pytest.mark.fast)])
def test_mixed_tree_is_byte_exact_at_any_pool_size(emu, tree, tmp_path, workers):
    results = sync_from_platform(
        emu.project_id, tmp_path, platform=platform_for(emu), config=TransferConfig(max_workers=workers, **SMALL_PARTS)
    )
    assert len(results) == tree.file_count
    assert all(r.status is SyncStatus.DOWNLOADED for r in results)
    assert_tree_matches(tmp_path, tree.expected)
    stats = emu.stats()
    bound, pages = rest_bound(tree)
    by_route = stats["api_by_route"]
    assert by_route["POST /repo/v1/entity/children"] == pages
    assert by_route["POST /repo/v1/entity/{id}/version/{v}/bundle2"] == tree.file_count
    assert by_route["POST /file/v1/fileHandle/batch"] == -(-tree.file_count // 100)
    assert stats["api_requests"] <= bound
    assert stats["auth_headers_on_data"] == 0
    assert results.report.rest_calls == stats["api_requests"]


def test_second_run_skips_verified_files_and_fetches_no_data(emu, tree, tmp_path):
    sync_from_platform(emu.project_id, tmp_path, platform=platform_for(emu))
    emu.reset_stats()
    again = sync_from_platform(emu.project_id, tmp_path, platform=platform_for(emu))
    assert {r.status for r in again} == {SyncStatus.SKIPPED}
    assert emu.stats()["data_requests"] == 0


def test_faults_end_byte_exact(emu, tree, tmp_path):
    emu.set_knobs(
        fault_api_5xx_rate=0.05,
        fault_api_429_rate=0.02,
        fault_data_cut_rate=0.02,
        fault_data_stall_rate=0.01,
        stall_seconds=3,
        url_lifetime=5,
        fault_seed=7,
    )
    config = TransferConfig(max_workers=16, stall_timeout=1.0, max_attempts=8, **SMALL_PARTS)
    results = sync_from_platform(emu.project_id, tmp_path, platform=platform_for(emu), config=config)
    assert all(r.status is SyncStatus.DOWNLOADED for r in results)
    assert_tree_matches(tmp_path, tree.expected)
    stats = emu.stats()
    assert stats["api_5xx_injected"] > 0 and stats["data_cuts_injected"] > 0
    assert stats["auth_headers_on_data"] == 0


@pytest.mark.parametrize("knob", ["data_ignore_range", "data_wrong_content_range"])
def test_storage_that_mishandles_range_is_detected_not_trusted(emu, tree, tmp_path, knob):
    emu.set_knobs(**{knob: True})
    results = sync_from_platform(
        emu.project_id, tmp_path, platform=platform_for(emu), config=TransferConfig(max_workers=8, **SMALL_PARTS)
    )
    assert all(r.ok for r in results)
    assert_tree_matches(tmp_path, tree.expected)


def test_synapse_profile_throttles_see_under_one_percent_429(tmp_path):
    tree = Tree()
    for f in range(3):
        folder = tree.folder(tree.children, f"d{f}")
        for i in range(80):
            tree.text_file(folder, f"d{f}/", f"x{i}.txt", f"{f}-{i}")
    with Emulator(profile="synapse") if _has_profile_arg() else Emulator(**_synapse_knobs()) as emu:
        project = emu.seed_spec(tree.spec())["p"]
        results = sync_from_platform(project, tmp_path, platform=platform_for(emu), max_workers=16)
        stats = emu.stats()
    assert len(results) == tree.file_count
    assert_tree_matches(tmp_path, tree.expected)
    assert stats["throttled_429"] < 0.01 * stats["api_requests"], stats


def _has_profile_arg() -> bool:
    import inspect

    return "profile" in inspect.signature(Emulator.__init__).parameters


def _synapse_knobs() -> dict:
    from synclient.emulator.knobs import profile_knobs

    return profile_knobs("synapse")


def test_access_denied_file_fails_alone_and_is_reported(tmp_path):
    """A file the user may read but not download (Synapse's bundle withholds its handle) fails alone, as access
    denied; a file the user may not read is not listed at all, as Synapse hides it, and is no failure."""
    spec = {
        "projects": [
            {
                "name": "p",
                "children": [
                    {"type": "file", "name": "ok.txt", "content": "fine"},
                    {"type": "file", "name": "secret.txt", "content": "x", "deny": "download"},
                    {"type": "file", "name": "hidden.txt", "content": "x", "deny": "read"},
                ],
            }
        ]
    }
    with Emulator() as emu:
        project = emu.seed_spec(spec)["p"]
        with pytest.raises(SyncError) as info:
            sync_from_platform(project, tmp_path, platform=platform_for(emu))
        assert [f.path.name for f in info.value.failures] == ["secret.txt"]
        assert isinstance(info.value.failures[0].error, PermissionError)
        assert "not download" in str(info.value.failures[0].error)
        assert (tmp_path / "ok.txt").read_text() == "fine" and not (tmp_path / "secret.txt").exists()
        assert not (tmp_path / "hidden.txt").exists()
        results = sync_from_platform(project, tmp_path, platform=platform_for(emu), on_error="continue")
        assert sorted(r.status.value for r in results) == ["failed", "skipped"]


@pytest.mark.parametrize("fs_names", ["none", "case,nfd,windows"])
def test_hostile_names_never_write_outside_the_target(tmp_path, fs_names):
    """Hostile names are refused before any mapping of names the filesystem cannot hold ('..' never becomes
    '.．'); with the mapping, a backslash is a lookalike and case twins get their id."""
    names = ["a/b", "/abs", "nul\x00x", "back\\slash", "Case.txt", "case.txt", "ok.txt"]
    spec = {
        "names": "unchecked",
        "projects": [
            {
                "name": "p",
                "children": [
                    {
                        "type": "folder",
                        "name": "..",
                        "children": [{"type": "file", "name": "escape.txt", "content": "x"}],
                    },
                    {"type": "folder", "name": "sub", "children": [{"type": "file", "name": "..", "content": "x"}]},
                    *({"type": "file", "name": n, "content": n} for n in names),
                ],
            }
        ],
    }
    outside_before = sorted(os.listdir(tmp_path))
    target = tmp_path / "target"
    with Emulator() as emu:
        project = emu.seed_spec(spec)["p"]
        lower = emu.resolve(project, "case.txt")
        results = sync_from_platform(
            project, target, platform=platform_for(emu), on_error="continue", filesystem_names=fs_names
        )
    assert sorted(os.listdir(tmp_path)) == sorted(outside_before + ["target"])
    if fs_names == "none":
        assert sorted(local_tree(target)) == ["Case.txt", "case.txt", "ok.txt"]
    else:
        assert sorted(local_tree(target)) == sorted(["Case.txt", f"case ({lower}).txt", "back\uff3cslash", "ok.txt"])
    failed = [r for r in results if r.status is SyncStatus.FAILED]
    assert len(failed) == (6 if fs_names == "none" else 5)  # unsafe file names (a backslash: mapped) + the ".."
    assert (target / "sub").is_dir()
    assert all(isinstance(r.error, UnsafePathError) for r in failed)


def test_small_file_resumes_with_a_range_request(emu, tree, tmp_path):
    entity = emu.resolve(emu.project_id, "mb/m3.bin")
    platform = platform_for(emu)
    handle = platform.get_file_bundle(entity).file_handle
    destination = tmp_path / "m3.bin"
    seed = _seed_of(tree, "mb/m3.bin")
    full = random.Random(seed).randbytes(handle.content_size)
    have = 400_000
    temp = temp_path(destination, handle.id)
    temp.write_bytes(full[:have])
    # what an interrupted run leaves: the partial and its journal, which names the partial's device and inode and
    # marks how many of its bytes were durable
    journal = ResumeJournal(journal_path(temp), JournalHeader(handle.id, handle.content_size, handle.content_md5, 0))
    journal.start(FileIdentity.of(os.lstat(temp)), {0: have})
    journal.close()
    emu.reset_stats()
    sync_from_platform(f"{entity}", tmp_path, platform=platform)
    assert destination.read_bytes() == full
    assert emu.stats()["data_bytes"] == handle.content_size - have
    assert not temp.exists() and not journal_path(temp).exists()


def test_a_partial_without_its_journal_is_never_resumed(emu, tree, tmp_path):
    """The write rule: bytes under a partial's name that no journal vouches for are not ours to continue."""
    entity = emu.resolve(emu.project_id, "mb/m3.bin")
    platform = platform_for(emu)
    handle = platform.get_file_bundle(entity).file_handle
    destination = tmp_path / "m3.bin"
    full = random.Random(_seed_of(tree, "mb/m3.bin")).randbytes(handle.content_size)
    temp_path(destination, handle.id).write_bytes(full[:400_000])
    emu.reset_stats()
    sync_from_platform(f"{entity}", tmp_path, platform=platform)
    assert destination.read_bytes() == full
    assert emu.stats()["data_bytes"] == handle.content_size


def _seed_of(tree: Tree, relpath: str) -> int:
    def find(children, prefix):
        for child in children:
            path = prefix + child["name"]
            if path == relpath:
                return child["seed"]
            if child["type"] == "folder":
                found = find(child["children"], path + "/")
                if found is not None:
                    return found
        return None

    return find(tree.children, "")


def _one_file_project(size: int, seed: int) -> dict:
    return {"projects": [{"name": "p", "children": [{"type": "file", "name": "big.bin", "size": size, "seed": seed}]}]}


def test_sigkill_mid_file_then_rerun_refetches_only_parts_in_flight(tmp_path):
    size, part, workers = 256 * MiB, 16 * MiB, 4
    with Emulator(bandwidth_per_conn=40 * 10**6) as emu:
        project = emu.seed_spec(_one_file_project(size, 99))["p"]
        first = sigkill_sync_after(emu, project, tmp_path, size // 3)
        assert size // 3 <= first < size, "the kill must land mid-file"
        assert not (tmp_path / "big.bin").exists(), "nothing may appear at the final path before it is verified"
        emu.reset_stats()
        emu.set_knobs(bandwidth_per_conn=0)
        sync_from_platform(
            project,
            tmp_path,
            platform=platform_for(emu),
            config=TransferConfig(max_workers=workers, multipart_threshold=part, part_size=part),
        )
        second = emu.stats()["data_bytes"]
    md5 = hashlib.md5((tmp_path / "big.bin").read_bytes()).hexdigest()
    assert md5 == seeded_md5(size, 99)
    refetched = first + second - size
    assert refetched <= workers * part, (first, second)
    assert sorted(local_tree(tmp_path)) == ["big.bin"]  # partial and journal cleaned up


_KILLED_AFTER_INSTALL = textwrap.dedent("""
    import os, signal, sys
    from synclient import Platform, TransferConfig, sync_from_platform
    from synclient.transfer.partial import ResumeJournal
    # die in the narrowest window there is: the verified file is in place, its journal not yet removed
    ResumeJournal.remove = lambda self: os.kill(os.getpid(), signal.SIGKILL)
    endpoint, token, entity, target = sys.argv[1:5]
    config = TransferConfig(max_workers=4, multipart_threshold=4 * 2**20, part_size=4 * 2**20)
    sync_from_platform(entity, target, platform=Platform(endpoint=endpoint, token=token), config=config)
""")


def test_a_kill_between_install_and_journal_removal_leaves_nothing_after_the_rerun(tmp_path):
    size = 16 * MiB
    with Emulator() as emu:
        project = emu.seed_spec(_one_file_project(size, 7))["p"]
        child = subprocess.run(
            [sys.executable, "-c", _KILLED_AFTER_INSTALL, emu.endpoint, emu.token, project, str(tmp_path)], timeout=60
        )
        assert child.returncode == -signal.SIGKILL
        left = sorted(local_tree(tmp_path))  # the crash's state: the file in place and its journal beside it
        assert left[0].startswith(".big.bin.") and left[0].endswith(".synclient-partial.parts")
        assert left[1:] == ["big.bin"]
        emu.reset_stats()
        results = sync_from_platform(
            project,
            tmp_path,
            platform=platform_for(emu),
            config=TransferConfig(multipart_threshold=4 * MiB, part_size=4 * MiB),
        )
        assert [r.action for r in results] == ["adopt"]
        assert emu.stats()["data_bytes"] == 0
    assert hashlib.md5((tmp_path / "big.bin").read_bytes()).hexdigest() == seeded_md5(size, 7)
    assert sorted(local_tree(tmp_path)) == ["big.bin"]  # the stale journal went with the adoption


def test_partials_of_an_older_version_go_once_a_newer_one_is_synced(tmp_path):
    size = 64 * MiB
    with Emulator(bandwidth_per_conn=10 * 10**6) as emu:
        project = emu.seed_spec(_one_file_project(size, 3))["p"]
        assert sigkill_sync_after(emu, project, tmp_path, size // 3) < size, "the kill must land mid-file"
        left = sorted(local_tree(tmp_path))
        assert len(left) == 2 and all(".synclient-partial" in name for name in left), left  # temp + journal
        emu.add_version(emu.resolve(project, "big.bin"), "version 2\n")
        emu.set_knobs(bandwidth_per_conn=0)
        results = sync_from_platform(project, tmp_path, platform=platform_for(emu))
        assert [r.status for r in results] == [SyncStatus.DOWNLOADED]
    assert (tmp_path / "big.bin").read_text() == "version 2\n"
    assert sorted(local_tree(tmp_path)) == ["big.bin"]  # version 1's 64 MiB partial can never resume: gone


def test_sigint_stops_promptly_and_keeps_partial_data(tmp_path):
    size = 128 * MiB
    spec = _one_file_project(size, 5)
    # 4 connections of 1 MB/s: the whole file takes 34 s, the interrupt comes after 8 MiB (about 2 s)
    with Emulator(bandwidth_per_conn=1 * 10**6) as emu:
        project = emu.seed_spec(spec)["p"]
        child = subprocess.Popen(
            [sys.executable, "-c", KILLED_SYNC, emu.endpoint, emu.token, project, str(tmp_path), "4", str(16 * MiB)],
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        while emu.stats()["data_bytes"] < 8 * MiB and time.monotonic() < deadline:
            time.sleep(0.05)
        child.send_signal(signal.SIGINT)
        child.wait(timeout=60)  # a safety bound only
        # promptly, counted in bytes rather than seconds (a loaded machine is slow): the child stopped long
        # before the rest of the file could arrive
        assert emu.stats()["data_bytes"] < size // 2
    assert child.returncode != 0
    assert not (tmp_path / "big.bin").exists()
    assert any(name.endswith(".synclient-partial") for name in os.listdir(tmp_path))


class RecordingObserver:
    def __init__(self):
        import threading

        self.lock = threading.Lock()
        self.planned = self.bytes = 0
        self.finished = []
        self.files = {}  # path -> its PlannedFile
        self.bytes_of = {}  # path -> bytes counted for it

    def file_planned(self, file):
        with self.lock:
            self.planned += 1
            assert file.path not in self.files  # one PlannedFile per fetched file
            self.files[file.path] = file

    def bytes_transferred(self, file, count):
        with self.lock:
            assert self.files[file.path] is file  # the very object its plan announced
            self.bytes += count
            self.bytes_of[file.path] = self.bytes_of.get(file.path, 0) + count

    def file_finished(self, result):
        with self.lock:
            self.finished.append(result)


def test_secrets_stay_out_of_logs_reprs_and_reports_and_pool_never_overflows(emu, tree, tmp_path, caplog):
    import json
    import logging

    caplog.set_level(logging.DEBUG)
    emu.set_knobs(fault_api_5xx_rate=0.05, fault_data_cut_rate=0.05, url_lifetime=4, fault_seed=3)
    observer = RecordingObserver()
    platform = platform_for(emu)
    results = sync_from_platform(
        emu.project_id,
        tmp_path,
        platform=platform,
        observer=observer,
        config=TransferConfig(max_workers=32, max_attempts=8, **SMALL_PARTS),
    )
    # the client's logs (the emulator, in-process here, is the server and logs its own access lines)
    client_log = "\n".join(r.getMessage() for r in caplog.records if not r.name.startswith("synclient.emulator"))
    text = "\n".join(
        [
            client_log,
            repr(platform),
            repr(results),
            repr(list(results)),  # every FileResult's repr (the results' own repr is one line of counts)
            results._repr_html_(),
            repr(results.report),
            json.dumps([r.to_json() for r in results]),
            json.dumps(results.report.to_json()),
        ]
    )
    assert emu.token not in text
    assert "Signature=" not in text and "X-Amz-Signature" not in text
    assert "Connection pool is full" not in caplog.text
    assert any(
        "GET" in r.getMessage() and "?<redacted>" in r.getMessage()
        for r in caplog.records
        if r.name.startswith("urllib3")
    )
    assert len(observer.finished) == tree.file_count == observer.planned
    assert observer.bytes >= sum(r.size for r in results)
    # every byte is counted for its own file (retried bytes count again, so at least the file's size)
    for result in results:
        planned = observer.files[result.path]
        assert (planned.entity_id, planned.version, planned.size) == (result.entity_id, result.version, result.size)
        assert observer.bytes_of.get(result.path, 0) >= result.size


def test_library_progress_stays_quiet_when_nobody_watches(emu, tmp_path, capfd):
    sync_from_platform(emu.project_id, tmp_path, platform=platform_for(emu))  # progress=True by default
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == ""


def test_cut_parts_continue_from_their_last_byte_not_from_the_part_start(tmp_path):
    size = 64 * MiB
    spec = _one_file_project(size, 11)
    with Emulator() as emu:
        project = emu.seed_spec(spec)["p"]
        emu.set_knobs(fault_data_cut_rate=0.5, fault_seed=5)
        config = TransferConfig(max_workers=4, multipart_threshold=16 * MiB, part_size=16 * MiB, max_attempts=12)
        sync_from_platform(project, tmp_path, platform=platform_for(emu), config=config)
        stats = emu.stats()
    assert stats["data_cuts_injected"] >= 2
    assert hashlib.md5((tmp_path / "big.bin").read_bytes()).hexdigest() == seeded_md5(size, 11)
    # every byte served was kept: a retry asks only for what is still missing
    assert stats["data_bytes"] <= size + stats["data_requests"] * 256 * 1024, stats


def test_a_large_file_keeps_at_most_streams_per_file_parts_in_flight(tmp_path):
    """12 parts, 8 workers, 3 streams per file: the storage never sees more than 3 bodies at once for the file,
    and the file is still byte-exact (every finished part submits the next)."""
    size = 12 * MiB
    spec = _one_file_project(size, 12)
    with Emulator() as emu:
        project = emu.seed_spec(spec)["p"]
        emu.set_knobs(bandwidth_per_conn=16 * MiB)  # slow enough that parts overlap
        config = TransferConfig(max_workers=8, multipart_threshold=MiB, part_size=MiB, streams_per_file=3)
        sync_from_platform(project, tmp_path, platform=platform_for(emu), config=config)
        stats = emu.stats()
    assert stats["data_requests"] == 12
    assert stats["peak_data_concurrency"] == 3, stats
    assert hashlib.md5((tmp_path / "big.bin").read_bytes()).hexdigest() == seeded_md5(size, 12)


@pytest.mark.parametrize("direct_io", [True, False])
def test_a_large_file_is_written_direct_only_when_asked(tmp_path, monkeypatch, direct_io):
    """With ``direct_io`` the multipart path opens the partial file a second time with O_DIRECT (where the
    filesystem allows it, as ext4/xfs do) and the file is byte-exact, its odd-sized tail written buffered; without
    it, no direct descriptor is opened."""
    import synclient.transfer.download as download
    from synclient.transfer.direct import filesystem_type, open_direct

    opened = []
    monkeypatch.setattr(
        download, "open_direct", lambda path, same_as: opened.append(open_direct(path, same_as)) or opened[-1]
    )
    size = 5 * MiB + 1234  # unaligned tail
    spec = _one_file_project(size, 13)
    with Emulator() as emu:
        project = emu.seed_spec(spec)["p"]
        config = TransferConfig(max_workers=4, multipart_threshold=MiB, part_size=MiB, direct_io=direct_io)
        sync_from_platform(project, tmp_path, platform=platform_for(emu), config=config)
    assert hashlib.md5((tmp_path / "big.bin").read_bytes()).hexdigest() == seeded_md5(size, 13)
    if not direct_io:
        assert opened == []
    else:
        assert len(opened) == 1  # elsewhere (overlay, tmpfs) it may be -1: buffered, and still byte-exact
        if filesystem_type(tmp_path) in ("ext4", "xfs", "btrfs"):  # -1 too where the system has no O_DIRECT
            assert (opened[0] >= 0) is portable.CAPABILITIES.direct_io
