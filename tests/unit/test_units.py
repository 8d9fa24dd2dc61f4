"""The one size format (synclient/units.py): IEC binary units, 1024 steps, whole bytes below 1 KiB."""

from __future__ import annotations

import pytest

from synclient.units import format_rate, format_size

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30


@pytest.mark.parametrize(
    "size, shown",
    [
        (0, "0 B"),
        (1, "1 B"),
        (1023, "1023 B"),
        (1024, "1.0 KiB"),
        (1025, "1.0 KiB"),
        (1536, "1.5 KiB"),
        (MiB - 1, "1.0 MiB"),  # not "1024.0 KiB": the unit moves up when the shown number would reach 1024
        (MiB, "1.0 MiB"),
        (int(170.7 * MiB), "170.7 MiB"),
        (160 * MiB, "160.0 MiB"),
        (GiB - 1, "1.0 GiB"),
        (2 * GiB, "2.0 GiB"),
        (5 * (1 << 40), "5.0 TiB"),
        (1 << 50, "1.0 PiB"),
        (1 << 60, "1.0 EiB"),
        (1 << 70, "1024.0 EiB"),  # beyond the last unit the number grows
        (10**30, f"{10**30 / (1 << 60):.1f} EiB"),
        (1023.4, "1023 B"),
        (1023.6, "1.0 KiB"),  # a rate: rounds to 1024 B, so shown in KiB
        (-2048, "-2.0 KiB"),
    ],
)
def test_format_size(size, shown):
    assert format_size(size) == shown


def test_no_decimal_unit_is_ever_shown():
    for exponent in range(0, 80):
        for size in (1 << exponent, (1 << exponent) - 1, 10**exponent // 7 + 1):
            number, unit = format_size(size).split(" ")
            assert unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"), size
            assert unit == "EiB" or float(number) < 1024, size


def test_rates_and_non_finite_values():
    assert format_rate(27.1 * MiB) == "27.1 MiB/s"
    assert format_rate(0) == "0 B/s"
    assert format_size(float("inf")) == "?" and format_size(float("nan")) == "?"
