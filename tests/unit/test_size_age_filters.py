"""The size and age filters and --order-by (issue 35): parsing of rclone's sizes, durations and dates, the filter's
decisions at its bounds, the download order's keys, and the pool's ordered queue."""

from __future__ import annotations

import datetime as dt

import pytest

from synclient.errors import ConfigError
from synclient.sync.options import SyncOptions
from synclient.sync.plan.download_order import OrderBy, OrderKey
from synclient.sync.plan.filters import SizeAgeFilter, cutoff, modified_moment, parse_age
from synclient.transfer.pool import Priority, TaskPool
from synclient.units import parse_size

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "text, size",
    [
        ("512b", 512),
        ("512B", 512),
        ("100k", 100 * 1024),
        ("100K", 100 * 1024),
        ("10", 10 * 1024),  # rclone: a number alone is KiB
        ("1.5M", 3 * 512 * 1024),
        ("1G", 1 << 30),
        ("1Gi", 1 << 30),
        ("1GiB", 1 << 30),
        ("2T", 2 << 40),
        ("0", 0),
    ],
)
def test_sizes_are_rclones_binary_units(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "k", "x", "1x", "-1k", "1 k", "nan", "inf", "1kk"])
def test_a_bad_size_is_one_line(text):
    with pytest.raises(ValueError) as raised:
        parse_size(text)
    assert "\n" not in str(raised.value) and "100k" in str(raised.value)


@pytest.mark.parametrize(
    "text, delta",
    [
        ("30m", dt.timedelta(minutes=30)),
        ("2h", dt.timedelta(hours=2)),
        ("7d", dt.timedelta(days=7)),
        ("1w", dt.timedelta(weeks=1)),
        ("1M", dt.timedelta(days=30)),
        ("1y", dt.timedelta(days=365)),
        ("1h30m", dt.timedelta(minutes=90)),
        ("1.5d", dt.timedelta(hours=36)),
        ("90", dt.timedelta(seconds=90)),  # rclone: a number alone is seconds
        ("500ms", dt.timedelta(milliseconds=500)),
    ],
)
def test_durations_are_rclones(text, delta):
    assert parse_age(text) == delta


def test_dates_are_moments_local_unless_they_name_a_zone():
    assert parse_age("2026-01-01") == dt.datetime(2026, 1, 1).astimezone()
    assert parse_age("2026-01-01T10:00:00") == dt.datetime(2026, 1, 1, 10).astimezone()
    assert parse_age("2026-01-01 10:00:00") == dt.datetime(2026, 1, 1, 10).astimezone()
    assert parse_age("2026-01-01T10:00:00Z") == dt.datetime(2026, 1, 1, 10, tzinfo=UTC)
    assert parse_age("2026-01-01T10:00:00+02:00") == dt.datetime(2026, 1, 1, 8, tzinfo=UTC)
    assert cutoff(parse_age("7d"), NOW) == NOW - dt.timedelta(days=7)
    assert cutoff(parse_age("2026-01-01T00:00:00Z"), NOW) == dt.datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize("text", ["", "d", "7x", "7 d", "yesterday", "2026-13-01", "1d-2h"])
def test_a_bad_age_is_one_config_error_line(text):
    with pytest.raises(ConfigError) as raised:
        parse_age(text, option="max_age")
    assert str(raised.value).startswith("max_age: not an age") and "\n" not in str(raised.value)


def test_modified_on_is_read_as_iso_or_epoch_milliseconds():
    moment = dt.datetime(2026, 1, 1, 10, 0, 0, 123000, tzinfo=UTC)
    assert modified_moment("2026-01-01T10:00:00.123Z") == moment
    assert modified_moment(str(int(moment.timestamp() * 1000))) == moment  # a view's DATE cell
    assert modified_moment(int(moment.timestamp() * 1000)) == moment
    assert modified_moment(None) is None and modified_moment("") is None and modified_moment("soon") is None


def test_size_bounds_are_included_as_rclones():
    judged = SizeAgeFilter(min_size=1024, max_size=2048)
    assert [judged.wants(size=s, modified_on=None) for s in (1023, 1024, 2048, 2049)] == [False, True, True, False]


def test_an_unknown_size_fails_min_size_and_passes_max_size_and_is_not_judged_before_it_is_known():
    assert not SizeAgeFilter(min_size=1).wants(size=None, modified_on=None)
    assert SizeAgeFilter(max_size=1).wants(size=None, modified_on=None)
    assert not SizeAgeFilter(min_size=1).refuses_known(size=None)  # (a listing: its bundle will tell)


def test_age_bounds_are_included_and_an_unknown_time_passes():
    ages = SyncOptions(max_age="7d", min_age="1d").size_age_filter(NOW)
    at = lambda delta: (NOW - delta).isoformat()  # noqa: E731
    assert ages.wants(size=0, modified_on=at(dt.timedelta(days=7)))
    assert not ages.wants(size=0, modified_on=at(dt.timedelta(days=7, milliseconds=1)))
    assert ages.wants(size=0, modified_on=at(dt.timedelta(days=1)))
    assert not ages.wants(size=0, modified_on=at(dt.timedelta(hours=23)))
    assert ages.wants(size=0, modified_on=None)
    assert not SyncOptions().size_age_filter(NOW).active


def test_options_parse_and_refuse_in_one_line():
    options = SyncOptions(min_size="1k", max_size=4096, max_age="2h", order_by="size,desc")
    assert (options.min_size, options.max_size, options.order_by) == (1024, 4096, OrderBy(OrderKey.SIZE, True))
    assert options.filter_settings == {
        "min_size": 1024,
        "max_size": 4096,
        "max_age": "2h",
        "order_by": "size,descending",
    }
    assert SyncOptions().filter_settings == {}
    for bad in (dict(min_size="big"), dict(max_size=-1), dict(min_age="later"), dict(order_by="colour")):
        with pytest.raises(ConfigError) as raised:
            SyncOptions(**bad)
        assert "\n" not in str(raised.value)
    assert SyncOptions.overridden(None, {"max_size": "1M"}).max_size == 1 << 20


@pytest.mark.parametrize(
    "text, order",
    [
        ("size", OrderBy(OrderKey.SIZE)),
        ("name,ascending", OrderBy(OrderKey.NAME)),
        ("name,asc", OrderBy(OrderKey.NAME)),
        ("modtime,descending", OrderBy(OrderKey.MODTIME, True)),
        ("Size,DESC", OrderBy(OrderKey.SIZE, True)),
    ],
)
def test_order_by_is_rclones_format(text, order):
    assert OrderBy.parse(text) == order


@pytest.mark.parametrize("text", ["", "date", "size,", "size,mixed", "size,up", "name,asc,desc"])
def test_a_bad_order_is_one_line(text):
    with pytest.raises(ConfigError) as raised:
        OrderBy.parse(text)
    assert "\n" not in str(raised.value) and "size, name or modtime" in str(raised.value)


def _sorted_by(order: str, files):
    by = OrderBy.parse(order)
    return [f[0] for f in sorted(files, key=lambda f: by.sort_key(size=f[1], rel_path=f[0], modified_on=f[2]))]


def test_order_keys_sort_as_named_descending_included():
    files = [
        ("b", 30, "2026-01-02T00:00:00.000Z"),
        ("a", 10, "2026-01-03T00:00:00.000Z"),
        ("ab", 20, None),
        ("c", None, "2026-01-01T00:00:00.000Z"),
    ]
    assert _sorted_by("size", files) == ["c", "a", "ab", "b"]  # (no size: 0)
    assert _sorted_by("size,desc", files) == ["b", "ab", "a", "c"]
    assert _sorted_by("name", files) == ["a", "ab", "b", "c"]
    assert _sorted_by("name,descending", files) == ["c", "b", "ab", "a"]
    assert _sorted_by("modtime", files) == ["ab", "c", "b", "a"]  # (no modifiedOn: the oldest)
    assert _sorted_by("modtime,desc", files) == ["a", "b", "c", "ab"]


def test_the_pool_starts_ordered_tasks_by_key_ties_and_plain_tasks_in_their_order():
    pool, started = TaskPool(1), []
    pool.submit(Priority.DOWNLOAD, started.append, "plain first")
    for key, label in [((3,), "c"), ((1,), "a1"), ((2,), "b"), ((1,), "a2")]:
        pool.submit_ordered(Priority.DOWNLOAD, key, started.append, label)
    pool.submit(Priority.URL_BATCH, started.append, "url batch")  # a higher priority still goes first
    pool.run()
    assert started == ["url batch", "plain first", "a1", "a2", "b", "c"]
