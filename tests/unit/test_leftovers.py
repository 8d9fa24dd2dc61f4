"""The partial downloads a completed run sweeps (synclient.sync.leftovers), and those the filters spare."""

from __future__ import annotations

from synclient.sync.leftovers import sweep_run_partials
from synclient.sync.plan.filters import PathFilter, SizeAgeFilter
from synclient.sync.records.index import LocalIndex


def test_the_size_and_age_filters_spare_every_partial_as_the_patterns_spare_their_files(tmp_path):
    # big.bin's partial, of a file a run with --max-size now leaves out: it may resume another day (as the patterns'
    # files' do); without filters, a completed run leaves no partial in the folders it listed
    partial = tmp_path / ".big.bin.123.synclient-partial"
    for size_age, kept in ((SizeAgeFilter(max_size=1), True), (SizeAgeFilter(), False)):
        partial.write_bytes(b"half")
        with LocalIndex(tmp_path) as index:
            sweep_run_partials(
                index=index,
                root_id="syn1",
                target_root=tmp_path,
                listed={"": tmp_path},
                unvisited=set(),
                keep=set(),
                path_filter=PathFilter(),
                size_age=size_age,
            )
        assert partial.exists() is kept
