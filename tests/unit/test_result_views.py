"""What a notebook shows of SyncResults and SyncPlan: a one-line repr and a small HTML table, every remote text
redacted and escaped (errors here are plain exceptions, whose str() nothing redacted before); summaries and
progress lines in the one size convention."""

from __future__ import annotations

import io
from pathlib import Path

from synclient import progress
from synclient.events import PlannedFile
from synclient.html_view import FIRST_ROWS
from synclient.results import FileResult, SyncReport, SyncResults, SyncStatus
from synclient.sync.plan.dry_run import PlanEntry, SyncPlan
from synclient.sync.plan.planner import Action

MiB = 1 << 20
HOSTILE = "<script>alert(1)</script>.csv"
SIGNATURE = "X-Amz-Signature=0123456789abcdef0123456789abcdef"
TOKEN = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlc2lnbmF0dXJl"
LEAKY_ERROR = f"403 from https://bucket.example/data.csv?{SIGNATURE} with Bearer {TOKEN}"


def _results(downloaded: int = 322, failed: int = 1) -> SyncResults:
    files = [
        FileResult(f"syn{n}", 1, Path(f"/data/f{n}.bin"), 530_000, "0" * 32, SyncStatus.DOWNLOADED)
        for n in range(downloaded)
    ]
    files.insert(0, FileResult("syn9", 1, Path("/data") / HOSTILE, 10, None, SyncStatus.DOWNLOADED))
    files += [
        FileResult("syn7", 2, Path("/data/broken.csv"), None, None, SyncStatus.FAILED, RuntimeError(LEAKY_ERROR))
        for _ in range(failed)
    ]
    report = SyncReport()
    for result in files:
        report.count(result)
    report.wall_seconds = 3.24
    return SyncResults(files, report)


def _plan(entries: int = 40) -> SyncPlan:
    plan = SyncPlan()
    plan.add(PlanEntry(HOSTILE, "syn9", 1, 10, Action.DOWNLOAD, Path("/data") / HOSTILE))
    for n in range(entries):
        plan.add(PlanEntry(f"f{n:03d}.bin", f"syn{n + 100}", 1, MiB, Action.DOWNLOAD, Path(f"/data/f{n:03d}.bin")))
    plan.add(PlanEntry("old.txt", "syn5", 1, 4, Action.SKIP, Path("/data/old.txt")))
    plan.add_failure(FileResult("syn7", None, None, None, None, SyncStatus.FAILED, RuntimeError(LEAKY_ERROR)))
    return plan


def test_results_repr_is_one_short_line():
    text = repr(_results())
    assert text == "<SyncResults 323 downloaded (162.8 MiB), 0 skipped, 1 failed, 3.2 s>"
    assert "\n" not in text and len(text) < 100


def test_plan_repr_is_one_short_line():
    plan = _plan()
    text = repr(plan)
    estimate = f"estimated {plan.estimate_seconds:.1f} s"
    expected = f"<SyncPlan 41 to download (40.0 MiB), 1 up to date, 0 to delete, 1 failed, {estimate}>"
    assert text == expected
    assert "\n" not in text and len(text) < 120


def test_results_html_has_the_counts_and_first_rows_escaped_and_redacted():
    page = _results(downloaded=30, failed=12)._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;.csv" in page
    assert SIGNATURE not in page and TOKEN not in page and "bucket.example/data.csv" in page
    assert "<td>31</td>" in page and "<td>12</td>" in page  # downloaded, failed
    assert "15.2 MiB" in page  # 30 x 530,000 B + 10 B
    assert f"failures (first {FIRST_ROWS} of 12)" in page and f"files (first {FIRST_ROWS} of 43)" in page
    assert page.count("<tr>") == 2 + (1 + FIRST_ROWS) * 2  # the totals, then two lists of their first rows


def test_plan_html_has_the_counts_and_first_rows_escaped_and_redacted():
    page = _plan()._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert SIGNATURE not in page and TOKEN not in page
    assert "<td>41</td>" in page and "40.0 MiB" in page  # to download and its bytes
    assert f"entries (first {FIRST_ROWS} of 42)" in page and "failures</caption>" in page
    assert page.count("<tr>") == 2 + (1 + 1) + (1 + FIRST_ROWS)


def test_an_empty_run_shows_its_totals_only():
    page = SyncResults([], SyncReport())._repr_html_()
    assert "<caption>" not in page and "<td>0</td>" in page


def test_summaries_and_progress_lines_speak_binary_units():
    results = _results()
    assert "162.8 MiB in 3.2 s (50.2 MiB/s)" in results.report.summary()
    assert "(40.0 MiB)" in _plan().summary()
    stream = io.StringIO()
    lines = progress.ProgressLines(stream=stream, interval=0.0)
    file = PlannedFile("syn1", 1, Path("x"), 3 * MiB)
    lines.file_planned(file)
    lines.bytes_transferred(file, MiB + 512 * 1024)
    assert "1.5 MiB of 3.0 MiB, " in stream.getvalue() and " MB" not in stream.getvalue()


def test_the_bar_shows_binary_units(monkeypatch):
    """tqdm's own fields said "163M/163M ... 27.1MB/s" for MiB; the bar's fields go through format_size."""
    import tqdm.std

    now = [1000.0]
    monkeypatch.setattr(tqdm.std, "time", lambda: now[0])
    monkeypatch.delenv(progress.DISABLE_VARIABLE, raising=False)

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Tty()
    bar = progress.ProgressBar(stream=stream, ticking=False)
    file = PlannedFile("syn1", 1, Path("x"), 163 * MiB)
    bar.file_planned(file)
    for _ in range(163):
        now[0] += 0.5
        bar.bytes_transferred(file, MiB)
    bar.close()
    final = stream.getvalue().split("\r")[-1]
    assert "163.0 MiB/163.0 MiB" in final and "2.0 MiB/s" in final, final
    assert "163M" not in stream.getvalue() and "MB/s" not in stream.getvalue()
