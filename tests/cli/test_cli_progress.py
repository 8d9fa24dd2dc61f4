"""The progress observers (in-process): mode choice, thread safety, plain lines without carriage returns."""
from __future__ import annotations

import io
import threading
from pathlib import Path

from synclient import progress
from synclient.events import PlannedFile
from synclient.sync.results import FileResult, SyncStatus  # the old import path keeps working


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _result(status=SyncStatus.DOWNLOADED):
    return FileResult("syn1", 1, Path("x"), 10, None, status)


def _planned(size):
    return PlannedFile("syn1", 1, Path("x"), size)


def test_mode_choice(monkeypatch):
    monkeypatch.delenv(progress.DISABLE_VARIABLE, raising=False)
    assert progress.choose_mode(stream=FakeTty()) is progress.ProgressMode.BAR
    assert progress.choose_mode(stream=io.StringIO()) is progress.ProgressMode.LOG_LINES
    assert progress.choose_mode(enabled=False, stream=FakeTty()) is progress.ProgressMode.OFF
    monkeypatch.setenv(progress.DISABLE_VARIABLE, "1")
    assert progress.choose_mode(stream=FakeTty()) is progress.ProgressMode.OFF


def test_bar_counts_bytes_and_files_from_many_threads(monkeypatch):
    monkeypatch.delenv(progress.DISABLE_VARIABLE, raising=False)
    stream = FakeTty()
    bar = progress.progress_observer(stream=stream)
    assert isinstance(bar, progress.ProgressBar)

    def work():
        for _ in range(100):
            bar.file_planned(_planned(1000))
            for _ in range(10):
                bar.bytes_transferred(_planned(1000), 100)
            bar.file_finished(_result())

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert bar._bar.n == 800_000 and bar._bar.total == 800_000
    bar.file_finished(_result(SyncStatus.FAILED))
    bar.close()
    assert "801 files done, 1 failed" in stream.getvalue()


def test_lines_are_periodic_and_plain():
    stream = io.StringIO()
    lines = progress.ProgressLines(stream=stream, interval=0.0)
    lines.file_planned(_planned(10))
    lines.bytes_transferred(_planned(10), 10)
    lines.file_finished(_result())
    lines.close()
    text = stream.getvalue()
    assert "\r" not in text and "1 files done" in text
    quiet = io.StringIO()
    rare = progress.ProgressLines(stream=quiet, interval=3600)
    rare.bytes_transferred(_planned(10), 10)
    rare.file_finished(_result())
    rare.close()
    assert quiet.getvalue() == ""  # a short run prints nothing: the summary says it all
