"""Sizes as people read them, in one convention: IEC binary units, 1 KiB = 1024 B, 1 MiB = 1024 KiB, and so on.

Every size or rate synclient shows a person goes through :func:`format_size` (the progress bar and its plain lines,
the summary, the dry run, ``ls -l``, the demo), so one run never shows "163M", "170.7 MB" and "160 MiB" for sizes
of one convention. ``--json`` keeps raw integer bytes. Imports nothing of synclient (the lowest layer).
"""

from __future__ import annotations

import math

#: the units, each 1024 times the one before
UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
STEP = 1024


def format_size(size: float) -> str:
    """``size`` bytes as shown: whole bytes below 1 KiB (``0 B``, ``1023 B``), else one decimal in the largest
    unit that keeps the number below 1024 as shown (``1.0 KiB``, ``170.7 MiB``; 1 MiB - 1 B is ``1.0 MiB``, not
    ``1024.0 KiB``). Beyond EiB the number grows. A negative size keeps its sign; a non-finite one is ``?``."""
    if not math.isfinite(size):
        return "?"
    if size < 0:
        return "-" + format_size(-size)
    value = float(size)
    unit = UNITS[0]
    for unit in UNITS:
        shown = round(value) if unit == UNITS[0] else round(value, 1)
        if shown < STEP or unit == UNITS[-1]:
            break
        value /= STEP
    return f"{value:.0f} {unit}" if unit == UNITS[0] else f"{value:.1f} {unit}"


def format_rate(bytes_per_second: float) -> str:
    """A rate in the same units: ``27.1 MiB/s``."""
    return f"{format_size(bytes_per_second)}/s"


#: what a size's suffix multiplies by (rclone's ``SizeSuffix``: binary, case-insensitive; ``K``, ``Ki`` and ``KiB``
#: alike)
_MULTIPLIERS = {letter: STEP**power for power, letter in enumerate("bkmgtpe")}


def parse_size(text: str, *, default_unit: str = "k") -> int:
    """A size as rclone reads one (``10M``, ``512k``, ``1.5G``, ``100``): a number and a binary unit
    (``B|K|M|G|T|P|E``, case-insensitive, optionally followed by ``i`` or ``iB``: ``10M`` = ``10MiB`` = 10 MiB);
    without a unit, ``default_unit`` (rclone's default: KiB). Whole bytes, rounded down. Raises ValueError with one
    line naming what is wrong."""
    cleaned = text.strip()
    number = cleaned.rstrip("bBiIkKmMgGtTpPeE")
    unit = cleaned[len(number) :].lower()
    if unit.endswith("ib"):
        unit = unit[:-2]
    elif unit.endswith("i") or (len(unit) == 2 and unit.endswith("b")):
        unit = unit[:-1]
    unit = unit or default_unit
    if unit not in _MULTIPLIERS:
        raise ValueError(f"{text!r} is not a size: the unit is one of B, K, M, G, T, P, E (binary: 1K = 1024 B)")
    try:
        value = float(number)
    except ValueError:
        raise ValueError(f"{text!r} is not a size: a number and a unit, such as 10M or 512k") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{text!r} is not a size: it must be a finite number, at least 0")
    return int(value * _MULTIPLIERS[unit])
