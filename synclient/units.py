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


#: rclone's size suffixes: each a power of 1024 (``b`` bytes, ``k`` KiB, ``M`` MiB, ...), any case, with an optional
#: ``i`` and ``B`` (``1G``, ``1Gi``, ``1GiB`` are the same); a number without one is in KiB, as rclone reads it
_SIZE_SUFFIXES = {"b": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5, "e": 6}


def parse_size(text: str) -> int:
    """A size as rclone writes one (``100k``, ``1.5G``, ``10MiB``, ``512b``; no suffix: KiB) in bytes. A bad one
    raises ValueError with one line that says what is accepted."""
    spelled = text.strip()
    number, unit = spelled, "k"
    lowered = spelled.lower()
    for ending in ("ib", "i", "b"):  # (a lone "b" is the bytes suffix, so it is tried last)
        if len(lowered) > len(ending) and lowered.endswith(ending) and lowered[-len(ending) - 1] in _SIZE_SUFFIXES:
            lowered = lowered[: -len(ending)]
            break
    if lowered and lowered[-1] in _SIZE_SUFFIXES:
        number, unit = lowered[:-1], lowered[-1]
    elif lowered.endswith("b"):
        number, unit = lowered[:-1], "b"
    try:
        value = float(number)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or not number or number.strip() != number:
        raise ValueError(f"not a size: {text!r} (a number and a unit: 512b, 100k, 1.5M, 1G, 2T; no unit is KiB)")
    return int(value * STEP ** _SIZE_SUFFIXES[unit])
