"""Shards of a sync sharded over Dask (synclient/cluster/shards.py): sealed by size as files come, the rest split
into balanced contiguous runs, and a worker's pool waits for results that arrive from outside it."""

from __future__ import annotations

import pickle
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from synclient.cluster.shards import FILE_WEIGHT, Sharder, ShardSizes, split_balanced, weight
from synclient.errors import ConfigError
from synclient.platform.models import FileHandle
from synclient.transfer.jobs import FetchJob, LocalState
from synclient.transfer.pool import Priority, TaskPool


def _file(number: int, size: int, folder: str = "a") -> FetchJob:
    return FetchJob(f"syn{number}", 1, FileHandle(str(number), size, "0" * 32), Path(f"/t/{folder}/f{number}"))


def test_a_shard_is_sealed_at_its_file_count_or_its_bytes_whichever_comes_first():
    sharder = Sharder(sizes=ShardSizes(files=3, bytes=100))
    assert sharder.add(_file(1, 10)) is None and sharder.add(_file(2, 10)) is None
    by_count = sharder.add(_file(3, 10))
    assert [f.entity_id for f in by_count.files] == ["syn1", "syn2", "syn3"] and by_count.number == 0
    assert sharder.add(_file(4, 60)) is None
    by_bytes = sharder.add(_file(5, 40))
    assert [f.entity_id for f in by_bytes.files] == ["syn4", "syn5"] and by_bytes.number == 1
    assert sharder.pending == 0 and sharder.drain(parts=4) == []


def test_the_rest_is_drained_as_one_shard_per_worker_numbered_on():
    sharder = Sharder(sizes=ShardSizes(files=1000, bytes=1 << 40))
    for number in range(10):
        assert sharder.add(_file(number, 5 * FILE_WEIGHT)) is None
    shards = sharder.drain(parts=2)
    assert [len(shard.files) for shard in shards] == [5, 5] and [s.number for s in shards] == [0, 1]
    assert sharder.drain(parts=2) == [] and sharder.add(_file(11, 1)) is None
    assert [s.number for s in sharder.drain(parts=3)] == [2]  # one file: one shard, however many workers


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=64 * FILE_WEIGHT), min_size=1, max_size=60),
    parts=st.integers(min_value=1, max_value=8),
)
def test_a_balanced_split_keeps_the_order_and_no_run_exceeds_its_share_by_more_than_one_file(sizes, parts):
    files = [_file(number, size) for number, size in enumerate(sizes)]
    runs = split_balanced(files, parts=parts)
    assert [f for run in runs for f in run] == files  # contiguous, in order: a folder's files stay together
    assert 1 <= len(runs) <= min(parts, len(files)) and all(runs)
    share = sum(weight(f) for f in files) / min(parts, len(files))
    heaviest = max(weight(f) for f in files)
    assert all(sum(weight(f) for f in run) <= share + heaviest for run in runs)


def test_equal_files_split_evenly():
    runs = split_balanced([_file(n, 256 << 20) for n in range(8)], parts=2)
    assert [len(run) for run in runs] == [4, 4]
    runs = split_balanced([_file(n, 0) for n in range(9)], parts=3)
    assert [len(run) for run in runs] == [3, 3, 3]


def test_sizes_are_validated_and_shards_travel_by_pickle(tmp_path):
    with pytest.raises(ConfigError):
        ShardSizes(files=0)
    (tmp_path / "x").write_bytes(b"abc")
    state = LocalState.of(tmp_path / "x")
    assert state.size == 3 and LocalState.of(tmp_path / "missing") is None
    shard = Sharder(sizes=ShardSizes(files=1)).add(_file(1, 7))
    assert pickle.loads(pickle.dumps(shard)) == shard


def test_a_pool_does_not_end_while_results_from_outside_are_expected():
    """TaskPool.expect / deliver: the run waits for a result delivered from another thread, then runs it."""
    pool = TaskPool(2)
    ran, idle = [], threading.Event()
    # the delivery comes only once the pool has nothing of its own left: without expect() it would have ended
    pool.add_idle_check(lambda: None if pool.outstanding(*Priority) else idle.set())

    def elsewhere():
        assert idle.wait(10)
        pool.deliver(Priority.DOWNLOAD, ran.append, "delivered", count=2)

    def start():
        pool.expect(2)
        threading.Thread(target=elsewhere, daemon=True).start()

    pool.submit(Priority.LISTING, start)
    pool.run()
    assert ran == ["delivered"]


def test_listings_wait_while_too_many_results_are_expected_from_outside():
    """The walk runs ahead of a Dask cluster by a bounded amount: with ``expected_high_water`` results out, a
    listing waits until one is delivered."""
    pool = TaskPool(1)  # one task at a time: the order they run in is the order they were dispatched in
    pool.expected_high_water = 1
    order, held = [], threading.Event()
    # the listing is all that is left (had it run, it would have said so first)
    pool.add_idle_check(
        lambda: (
            held.set()
            if (pool.outstanding(*Priority) == pool.outstanding(Priority.LISTING) == 1 and not order)
            else None
        )
    )

    def elsewhere():
        held.wait(10)  # (never set when the listing ran at once: the order below then says so)
        pool.deliver(Priority.DOWNLOAD, order.append, "delivered", count=1)

    def start():
        pool.expect(1)
        pool.submit(Priority.LISTING, order.append, "listed")
        threading.Thread(target=elsewhere, daemon=True).start()

    pool.submit(Priority.BUNDLE, start)
    pool.run()
    assert order == ["delivered", "listed"]
