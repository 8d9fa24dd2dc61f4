"""One size convention in one run (issue 32, 4.5): the bar, the summary, the dry run and ``ls -l`` all say KiB,
MiB, GiB (1024 steps); none says tqdm's "163M" or a decimal "MB"."""

from __future__ import annotations

import re

from cli_support import run_cli
from test_cli_signals_and_progress import _run_in_pty

#: a number followed by a size unit: a binary one, a decimal one ("MB", "kB") or tqdm's bare prefix ("163M")
SIZE = re.compile(r"\b\d+(?:\.\d+)?\s?([KMGTPE]iB|[kKMGTPE]B|[kKMGTPE]|B)(?=/s\b|\b)")
BINARY_UNITS = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}


def test_the_pattern_sees_every_convention():
    text = "163M/163M [00:06<00:00, 27.1MB/s] 170.7 MB 160 MiB 12 kB 0 B 5 s syn123 3 levels"
    assert [match.group(1) for match in SIZE.finditer(text)] == ["M", "M", "MB", "MB", "MiB", "kB", "B"]


def test_bar_summary_dry_run_and_listing_use_binary_units(tmp_path, tree_emulator, env):
    project = tree_emulator.ids["cli-project"]  # 3 MiB + 32 B in three files
    code, terminal = _run_in_pty(["get", "-r", project, "--path", str(tmp_path / "synced")], env)
    assert code == 0, terminal
    dry_run = run_cli("get", "-r", project, "--path", str(tmp_path / "fresh"), "--dry-run", env=env)
    assert dry_run.returncode == 0, dry_run.stderr
    listing = run_cli("ls", "-r", "-l", project, env=env)
    assert listing.returncode == 0, listing.stderr

    assert "3.0 MiB/3.0 MiB" in terminal  # the bar's final state
    assert re.search(r"3 downloaded.*; 3\.0 MiB in [\d.]+ s \([\d.]+ (B|KiB|MiB|GiB)/s\)", terminal), terminal
    assert "3 files to download (3.0 MiB)" in dry_run.stdout
    assert "3.0 MiB" in listing.stdout
    for where, text in (("bar and summary", terminal), ("dry run", dry_run.stdout + dry_run.stderr)):
        units = {match.group(1) for match in SIZE.finditer(text)}
        assert units and units <= BINARY_UNITS, (where, units - BINARY_UNITS, text)
    units = {match.group(1) for match in SIZE.finditer(listing.stdout)}
    assert units <= BINARY_UNITS, (units, listing.stdout)
