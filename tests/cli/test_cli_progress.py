"""The progress observers (in-process): mode choice, thread safety, plain lines without carriage returns."""

from __future__ import annotations

import io
import threading
from pathlib import Path

from synclient import progress
from synclient.events import PlannedFile
from synclient.results import FileResult, SyncStatus, counted
from tests.notebook_standin import install_notebook_standins


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
    assert "\r" not in text and "1 file done" in text
    quiet = io.StringIO()
    rare = progress.ProgressLines(stream=quiet, interval=3600)
    rare.bytes_transferred(_planned(10), 10)
    rare.file_finished(_result())
    rare.close()
    assert quiet.getvalue() == ""  # a short run prints nothing: the summary says it all


class FakeClock:
    """tqdm's clock, moved by the test only."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class RecordingTty(FakeTty):
    """A terminal that notes, for every redraw, the fake time and how many files the test had finished by then."""

    def __init__(self, clock, finished) -> None:
        super().__init__()
        self.clock, self.finished, self.redraws = clock, finished, []

    def write(self, text):
        if "\r" in text:
            self.redraws.append((self.clock.now, self.finished[0], text))
        return super().write(text)


def _large_burst_then_small_files(monkeypatch):
    """The demo's shape: 12 large files arrive in 1 MiB parts for 1.92 s, then 300 files of 4 KiB finish over 3 s;
    the fake clock moves 10 ms per event. Returns the terminal and when the small files began."""
    import tqdm.std

    monkeypatch.delenv(progress.DISABLE_VARIABLE, raising=False)
    clock, finished = FakeClock(), [0]
    monkeypatch.setattr(tqdm.std, "time", clock)
    stream = RecordingTty(clock, finished)
    bar = progress.ProgressBar(stream=stream, ticking=False)
    large, small = _planned(16 * 1024 * 1024), _planned(4096)
    for _ in range(12):
        bar.file_planned(large)
    for _ in range(300):
        bar.file_planned(small)
    for _ in range(12):
        for _ in range(16):
            clock.now += 0.01
            bar.bytes_transferred(large, 1024 * 1024)
        finished[0] += 1
        bar.file_finished(_result())
    small_start = clock.now
    for _ in range(300):
        clock.now += 0.01
        bar.bytes_transferred(small, 4096)
        finished[0] += 1
        bar.file_finished(_result())
    bar.close()
    return stream, small_start


def test_bar_redraws_on_time_after_a_burst_of_large_updates(monkeypatch):
    stream, small_start = _large_burst_then_small_files(monkeypatch)
    during = [redraw for redraw in stream.redraws[:-1] if redraw[0] > small_start]  # (the last one is close's)
    # 3 s of small files at one redraw per REDRAW_INTERVAL: about 12, never one per file (300)
    assert 3.0 / progress.REDRAW_INTERVAL - 1 <= len(during) <= 3.0 / progress.REDRAW_INTERVAL + 1, len(during)
    times = [small_start] + [when for when, _, _ in during]
    assert max(b - a for a, b in zip(times, times[1:])) <= progress.REDRAW_INTERVAL + 0.011
    for when, finished, text in stream.redraws:
        assert f"{counted(finished, 'file')} done" in text, (when, finished, text)  # the latest count at every redraw
    assert "312 files done" in stream.redraws[-1][2]


def test_bar_keeps_redrawing_while_no_event_comes(monkeypatch):
    """Waiting on the platform (a batch call, a throttle): no bytes, no files, yet the time and the rate move."""
    import tqdm.std

    monkeypatch.delenv(progress.DISABLE_VARIABLE, raising=False)
    clock, finished = FakeClock(), [1]
    monkeypatch.setattr(tqdm.std, "time", clock)
    stream = RecordingTty(clock, finished)
    bar = progress.ProgressBar(stream=stream, ticking=False)
    bar.file_planned(_planned(100))
    bar.bytes_transferred(_planned(100), 50)
    bar.file_finished(_result())
    before = len(stream.redraws)
    for _ in range(32):  # 2 s of silence, a tick every 1/16 s (exact in binary: no rounding at the interval)
        clock.now += 0.0625
        bar.tick()
    assert len(stream.redraws) - before == 2.0 / progress.REDRAW_INTERVAL
    assert all("1 file done" in text for _, _, text in stream.redraws[before:])
    bar.close()


def test_ticker_thread_stops_at_close(monkeypatch):
    monkeypatch.delenv(progress.DISABLE_VARIABLE, raising=False)
    bar = progress.ProgressBar(stream=FakeTty())
    assert bar._ticker.is_alive() and bar._ticker.daemon
    bar.close()
    assert not bar._ticker.is_alive()


def test_notebook_widget_text_shows_the_final_state(monkeypatch):
    """In Jupyter the bar is a widget; a saved notebook keeps its text form (tqdm's widget repr is the bar's text).
    Without Jupyter here: tqdm.auto, tqdm.notebook and IPython.display are stood in for, as tqdm builds them."""
    handles = install_notebook_standins(monkeypatch)
    bar = progress.ProgressBar(stream=io.StringIO())
    for _ in range(322):
        bar.file_planned(_planned(10))
        bar.bytes_transferred(_planned(10), 10)
        bar.file_finished(_result())
    bar.close()
    (handle,) = handles
    assert "0 files done" in handle.texts[0]
    assert "322 files done" in handle.texts[-1] and "100%" in handle.texts[-1]
    assert "3.1 KiB/3.1 KiB" in handle.texts[-1]  # the widget's sizes in the one convention (synclient/units.py)
