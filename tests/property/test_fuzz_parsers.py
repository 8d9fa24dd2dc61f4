"""The emulator's Range and paging parsers under hypothesis: arbitrary bytes, and inputs shaped like the real ones."""

from __future__ import annotations

from fuzz_targets import fuzz_paging, fuzz_range
from hypothesis import given
from hypothesis import strategies as st

_RANGE_LIKE = st.builds(
    lambda size, a, b, junk: size.to_bytes(3, "big") + f"bytes={a}-{b}{junk}".encode("latin-1"),
    st.integers(0, 2**24 - 1),
    st.one_of(st.just(""), st.integers(0, 2**25).map(str)),
    st.one_of(st.just(""), st.integers(0, 2**25).map(str)),
    st.sampled_from(["", ",0-1", " ", "x", "-"]),
)
_TOKEN_LIKE = st.builds(
    lambda a, b, sep: f"{a}{sep}{b}".encode(),
    st.integers(-5, 10**6),
    st.integers(-5, 10**9),
    st.sampled_from(["a", "A", "", "aa", " a"]),
)


@given(st.binary(max_size=40))
def test_range_parser_on_arbitrary_bytes(data):
    fuzz_range(data)


@given(_RANGE_LIKE)
def test_range_parser_on_range_shaped_headers(data):
    fuzz_range(data)


@given(st.binary(max_size=40))
def test_paging_parser_on_arbitrary_bytes(data):
    fuzz_paging(data)


@given(_TOKEN_LIKE)
def test_paging_parser_on_token_shaped_input(data):
    fuzz_paging(data)
