"""The transfer cap (``--max-transfer``, issue 35): the cap object's three modes, the dry run's forecast, the size
parser, the options and the report's line."""

from __future__ import annotations

import threading

import pytest

from synclient.errors import ConfigError, TransferCapReached
from synclient.results import LEFT_BY_CAP, FileResult, SyncReport, SyncStatus
from synclient.sync.options import SyncOptions
from synclient.transfer.cap import CutoffMode, TransferCap, forecast
from synclient.units import parse_size

MiB = 1024 * 1024


def _written(cap: TransferCap, sizes, ticket=None):
    """Hand ``sizes`` to a metered sink; what reached it, and whether the stream was stopped."""
    got = []
    sink = cap.metered(lambda offset, data: got.append(len(data)), ticket, "syn1")
    try:
        for size in sizes:
            sink(0, memoryview(b"x" * size))
    except TransferCapReached:
        return got, True
    return got, False


def test_hard_stops_a_stream_at_the_chunk_that_reaches_the_cap_after_writing_it():
    cap = TransferCap(100, CutoffMode.HARD)
    cap.start(1000, "syn1")
    got, stopped = _written(cap, [40, 40, 40, 40])
    assert stopped and got == [40, 40, 40]  # the chunk that crossed is written (kept), then the stream stops
    assert cap.received == 120 and cap.reached
    with pytest.raises(TransferCapReached):
        cap.check_stream("syn1")  # no stream starts again (a next part, a retry)
    with pytest.raises(TransferCapReached):
        cap.start(1, "syn2")
    assert not cap.would_start(0)


def test_hard_overshoot_is_at_most_one_chunk_per_running_stream():
    """Every stream counts after writing; once the count reached the cap each stops at its next chunk: the bound
    the integration test asserts (cap + streams x chunk)."""
    cap, chunk, streams = TransferCap(1000, CutoffMode.HARD), 64, 8
    barrier = threading.Barrier(streams)
    stopped = []

    def stream():
        barrier.wait()
        stopped.append(_written(cap, [chunk] * 100)[1])

    threads = [threading.Thread(target=stream) for _ in range(streams)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(stopped)
    assert 1000 <= cap.received <= 1000 + streams * chunk


def test_soft_never_stops_a_running_stream_but_starts_no_file_at_the_cap():
    cap = TransferCap(100, CutoffMode.SOFT)
    cap.start(300, "syn1")
    got, stopped = _written(cap, [100, 100, 100])
    assert not stopped and sum(got) == 300
    cap.check_stream("syn1")  # (its next part goes on)
    assert not cap.would_start(1)
    with pytest.raises(TransferCapReached):
        cap.start(1, "syn2")


def test_cautious_starts_only_what_fits_with_the_running_files_held():
    cap = TransferCap(100, CutoffMode.CAUTIOUS)
    first = cap.start(60, "syn1")
    assert cap.would_start(40) and not cap.would_start(41)  # 60 held by the running file
    second = cap.start(40, "syn2")
    assert cap.would_start(0)
    assert not cap.would_start(None)  # a file of unknown size never starts
    _written(cap, [30], first)  # received 30, first still holds 30
    assert not cap.would_start(1)
    cap.done(first)  # it ended after 30 of its 60 bytes (a resumed file): its other 30 are free again
    assert cap.would_start(30) and not cap.would_start(31)
    _, stopped = _written(cap, [40], second)
    assert not stopped and cap.received == 70
    cap.done(second)
    assert cap.would_start(30) and not cap.would_start(31)


def test_cautious_still_stops_streams_at_the_cap_a_refetch_would_pass():
    cap = TransferCap(100, CutoffMode.CAUTIOUS)
    ticket = cap.start(100, "syn1")
    _, stopped = _written(cap, [50, 50], ticket)
    assert stopped  # exactly at the cap: no byte more (a refetch after bad bytes would pass it)


def test_a_cap_of_zero_starts_nothing():
    for mode in CutoffMode:
        assert not TransferCap(0, mode).would_start(1)
    assert TransferCap(0, CutoffMode.CAUTIOUS).would_start(0)  # (an empty file takes no byte)


@pytest.mark.parametrize(
    "mode, files, left",
    [
        # 3 MiB files under 7 MiB: hard finishes 2 (the third crosses the cap: a partial), soft starts 3 (6 < 7),
        # cautious starts 2 (the third would take 9)
        (CutoffMode.HARD, 2, 4),
        (CutoffMode.SOFT, 3, 3),
        (CutoffMode.CAUTIOUS, 2, 4),
    ],
)
def test_forecast_applies_each_modes_rule_in_order(mode, files, left):
    planned = [(f"f{i}", 3 * MiB) for i in range(6)]
    cap = forecast(planned, 7 * MiB, mode)
    assert (cap.files, cap.left_files) == (files, left)
    assert (cap.bytes, cap.left_bytes) == (files * 3 * MiB, left * 3 * MiB)
    assert cap.left == {f"f{i}" for i in range(files, 6)}
    assert cap.to_json()["left"] == sorted(cap.left) and cap.to_json()["cutoff_mode"] == mode.value
    assert f"{files} files (" in cap.line() and "7.0 MiB" in cap.line()


def test_forecast_cautious_takes_a_smaller_file_after_one_that_does_not_fit():
    cap = forecast([("big", 8), ("small", 2), ("unknown", None)], 5, CutoffMode.CAUTIOUS)
    assert cap.left == {"big", "unknown"} and cap.files == 1


@pytest.mark.parametrize(
    "text, size",
    [
        ("10G", 10 * 1024**3),
        ("500M", 500 * MiB),
        ("1.5GiB", 3 * 1024**3 // 2),
        ("100k", 102400),
        ("4096", 4096 * 1024),
        ("4096b", 4096),
    ]
    + [("1KB", 1024), ("2b", 2), ("1Mi", MiB), (" 0 ", 0), ("1T", 1024**4)],
)
def test_parse_size_reads_binary_units(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "x", "-1M", "1X", "G", "nan", "inf", "1.2.3M"])
def test_parse_size_refuses_what_is_no_size_in_one_line(text):
    with pytest.raises(ValueError, match="not a size") as caught:
        parse_size(text)
    assert "\n" not in str(caught.value)


def test_options_take_a_size_as_written_and_check_the_mode():
    options = SyncOptions(max_transfer="1G", cutoff_mode="soft")
    assert options.max_transfer == 1024**3 and options.cutoff_mode is CutoffMode.SOFT
    cap = options.transfer_cap()
    assert cap is not None and cap.limit == 1024**3 and cap.mode is CutoffMode.SOFT
    assert SyncOptions().transfer_cap() is None and SyncOptions().cutoff_mode is CutoffMode.HARD
    assert SyncOptions.overridden(options, {"max_transfer": 5}).max_transfer == 5
    assert SyncOptions.overridden(options, {"max_transfer": None}).max_transfer == 1024**3
    with pytest.raises(ConfigError, match="max_transfer"):
        SyncOptions(max_transfer="lots")
    with pytest.raises(ConfigError, match="max_transfer"):
        SyncOptions(max_transfer=-1)
    with pytest.raises(ConfigError, match="cutoff_mode"):
        SyncOptions(cutoff_mode="gentle")


def test_report_counts_files_left_as_skipped_not_failed_and_says_so():
    report = SyncReport(max_transfer=MiB)
    assert report.cap_line() is None
    for size in (3 * MiB, MiB):
        report.count(FileResult("syn1", 1, None, size, None, SyncStatus.SKIPPED, action=LEFT_BY_CAP))
    report.count(FileResult("syn2", 1, None, 5, None, SyncStatus.SKIPPED, action="skip"))
    assert (report.skipped, report.failed, report.left_files, report.left_bytes) == (3, 0, 2, 4 * MiB)
    assert report.cap_reached and report.to_json()["cap_reached"] is True
    assert report.cap_line() == (
        "stopped at the --max-transfer cap of 1.0 MiB: 2 files (4.0 MiB) left; run the same command again to go on"
    )
