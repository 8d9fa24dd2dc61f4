"""Fuzz targets for the emulator's Range and paging parsers: each takes arbitrary bytes and either returns or raises
the parser's documented error; anything else (another exception, an out-of-bounds range) is a bug.

Driven by hypothesis in test_fuzz_parsers.py; with atheris installed, ``python tests/property/fuzz_targets.py``
runs them under libFuzzer instead (``-atheris_runs=N``), else it feeds seeded random bytes for a while.
"""

from __future__ import annotations

import sys

from synclient.emulator.data import ByteRange, RangeNotSatisfiable, parse_range
from synclient.emulator.routes import ApiError, make_page_token, parse_page_token


def fuzz_range(data: bytes) -> None:
    size = int.from_bytes(data[:3].ljust(3, b"\0"), "big")  # objects of 0 .. 16 MiB
    header = data[3:].decode("latin-1")
    try:
        wanted = parse_range(header, size)
    except RangeNotSatisfiable:
        return
    if wanted is None:
        return
    assert isinstance(wanted, ByteRange)
    assert 0 <= wanted.start <= wanted.end < size, (header, size, wanted)
    assert wanted.length == wanted.end - wanted.start + 1


def fuzz_paging(data: bytes) -> None:
    token = data.decode("utf-8", "replace")
    try:
        limit, offset = parse_page_token(token)
    except ApiError as error:
        assert error.status == 400
        return
    assert limit > 0 and offset >= 0
    if token:  # a token that parses is exactly what make_page_token writes (modulo leading zeros)
        assert parse_page_token(make_page_token(limit, offset)) == (limit, offset)


def main() -> None:
    try:
        import atheris
    except ImportError:
        import random

        rng = random.Random(7)
        for _ in range(200_000):
            blob = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 24)))
            fuzz_range(blob)
            fuzz_paging(blob)
        print("200000 random inputs per target: no failure (atheris not installed)")
        return

    def both(data: bytes) -> None:
        fuzz_range(data)
        fuzz_paging(data)

    atheris.Setup(sys.argv, both)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
