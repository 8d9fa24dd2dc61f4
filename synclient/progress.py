"""Progress display for a sync: one tqdm.auto bar for bytes, with the count of files finished, rate and ETA.

``tqdm.auto`` renders a widget in Jupyter and a text bar in a terminal. When stderr is not a terminal (a log file,
CI, a pipe) no bar is drawn -- carriage-return animations would only garble the log -- and at most one plain line
is written every ``interval`` seconds instead. ``SYNCLIENT_DISABLE_PROGRESS=1`` switches everything off.

Observer methods are called from pool threads concurrently; every method takes one small lock and returns quickly.
The bar redraws on a clock, every ``REDRAW_INTERVAL`` seconds (a ticker thread redraws it while no event comes),
whatever the size of the updates (tqdm's own ``miniters`` would learn "redraw every N bytes" from a burst of large
parts, then freeze while hundreds of small files finish); the count of files done is redrawn with it, same clock.

    from synclient import syncFromPlatform
    from synclient.progress import progress_observer
    syncFromPlatform("syn123", "data", observer=progress_observer())
"""

from __future__ import annotations

import enum
import os
import sys
import threading
import time
from typing import IO, TYPE_CHECKING, Any, Dict, Optional, Tuple, Type, cast

from synclient.events import PlannedFile, SyncObserver
from synclient.results import FileResult, counted
from synclient.units import format_rate, format_size

if TYPE_CHECKING:  # pragma: no cover - tqdm itself is imported where a bar is made (importing synclient stays cheap)
    from tqdm.notebook import tqdm_notebook
    from tqdm.std import tqdm as std_tqdm

DISABLE_VARIABLE = "SYNCLIENT_DISABLE_PROGRESS"
REDRAW_INTERVAL = 0.25  # seconds between two redraws of the bar
ECHO_ROOM = 2  # columns the bar leaves free (beyond tqdm's one): the terminal echoes Ctrl-C as "^C" after it
#: tqdm's default layout with the sizes and the rate in synclient's units (fields of :func:`_in_our_units`' bar):
#: tqdm's own say "163M/163M ... 27.1MB/s" for what are MiB
BAR_FORMAT = "{l_bar}{bar}| {size_done}/{size_total} [{elapsed}<{remaining}, {size_rate}{postfix}]"
NO_TOTAL_FORMAT = "{desc}: {size_done} [{elapsed}, {size_rate}{postfix}]"


class ProgressMode(enum.Enum):
    BAR = "bar"  # tqdm.auto bar (terminal or notebook widget)
    LOG_LINES = "lines"  # a plain status line now and then, no carriage returns
    OFF = "off"


def _in_notebook() -> bool:
    """True inside a Jupyter kernel, where stderr is not a TTY but tqdm.auto draws a widget."""
    shell = sys.modules.get("IPython")
    if shell is None or "ipykernel" not in sys.modules:
        return False
    try:
        return shell.get_ipython() is not None
    except AttributeError:
        return False


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def choose_mode(*, enabled: bool = True, stream: Optional[IO[str]] = None) -> ProgressMode:
    """Decide how to show progress: asked off or disabled by environment -> OFF; TTY/notebook -> BAR; else lines."""
    if not enabled or os.environ.get(DISABLE_VARIABLE, "").strip().lower() in ("1", "true", "yes", "on"):
        return ProgressMode.OFF
    if _in_notebook() or _isatty(stream if stream is not None else sys.stderr):
        return ProgressMode.BAR
    return ProgressMode.LOG_LINES


class _Counts:
    """Totals shared by both displays (guarded by the observer's lock)."""

    def __init__(self) -> None:
        self.files_finished = 0
        self.files_failed = 0
        self.files_planned = 0
        self.bytes_planned = 0
        self.bytes_done = 0  # transferred (the rate's)
        self.bytes_reused = 0  # kept from partial downloads: done, but not transferred

    def files_text(self) -> str:
        failed = f", {self.files_failed} failed" if self.files_failed else ""
        return f"{counted(self.files_finished, 'file')} done{failed}"


class ProgressDisplay(SyncObserver):
    """An observer that shows a sync's progress somewhere; :meth:`close` it when the sync returns."""

    def close(self) -> None:
        """Leave the display in its final state (the bar drawn whole, the last line written)."""


class TqdmLine:
    """One tqdm line (a terminal's, or a notebook's widget shown with a display id) redrawn on one clock: updates
    ask the clock (``miniters=0``), and a daemon ticker redraws while no event comes (waiting on the platform: the
    time and rate still move). The real run's bytes bar and the dry run's line are both one; subclasses say the
    final postfix (:meth:`final_postfix`) and start the ticker when the bar is ready (:meth:`_start_ticking`)."""

    def __init__(self, bar_class: Type[std_tqdm[Any]], settings: Dict[str, Any], *, thread_name: str) -> None:
        self._lock = threading.Lock()
        notebook = sys.modules.get("tqdm.notebook")  # (imported by tqdm.auto only in a notebook)
        self._bar: std_tqdm[Any]
        self._shown: Optional[Tuple[Any, tqdm_notebook[Any]]] = None  # (IPython's display handle, the widget bar)
        if notebook is not None and issubclass(bar_class, notebook.tqdm_notebook):
            from IPython.display import display

            # tqdm.auto's class is a tqdm_notebook in a notebook (checked above); its stubs know only the terminal's
            widget_bar = cast("tqdm_notebook[Any]", bar_class(display=False, **settings))
            self._bar = widget_bar
            # shown with an id, so that close can show it again: a saved notebook keeps the widget's text form
            # as it was when shown ("0 files done") unless it is shown again at the end
            self._shown = (display(widget_bar.container, display_id=True), widget_bar)
        else:
            self._bar = bar_class(**settings)
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick_until_closed, name=thread_name, daemon=True)

    def _start_ticking(self, ticking: bool) -> None:
        """``ticking``: tests turn the ticker off and call :meth:`tick` themselves."""
        if ticking:
            self._ticker.start()

    def tick(self) -> None:
        """Redraw if the interval is up (the clock is tqdm's, as for updates)."""
        with self._lock:
            self._bar.update(0)

    def _tick_until_closed(self) -> None:
        while not self._stop.wait(REDRAW_INTERVAL / 2):
            self.tick()

    def final_postfix(self) -> str:
        raise NotImplementedError

    def close(self) -> None:
        """The final state, drawn once and left on its line (after Ctrl-C too: the "^C" stays after it)."""
        self._stop.set()
        if self._ticker.is_alive():
            self._ticker.join(timeout=1.0)
        with self._lock:
            self._bar.set_postfix_str(self.final_postfix(), refresh=False)
            self._bar.close()
            if self._shown is not None:  # the widget's text form (a saved notebook's) now says the final state
                handle, widget_bar = self._shown
                handle.update(widget_bar.container)


class ProgressBar(TqdmLine, ProgressDisplay):
    """One bytes bar; the total grows as files are planned, files are counted when they finish."""

    def __init__(self, *, stream: Optional[IO[str]] = None, description: str = "sync", ticking: bool = True) -> None:
        """``ticking``: a daemon thread redraws the bar while no event comes (waiting on the platform: the time and
        rate still move); tests turn it off and call :meth:`tick` themselves."""
        from tqdm.auto import tqdm  # imported here: importing synclient must stay cheap

        self._counts = _Counts()
        # miniters=0: no learned "every N bytes" (which froze the bar); every update asks the clock instead
        settings: Dict[str, Any] = dict(
            total=0,
            unit="B",
            bar_format=BAR_FORMAT,
            desc=description,
            file=stream if stream is not None else sys.stderr,
            dynamic_ncols=True,
            mininterval=REDRAW_INTERVAL,
            miniters=0,
            leave=True,
            postfix=self._counts.files_text(),
        )
        super().__init__(_in_our_units(tqdm), settings, thread_name="synclient-progress")  # sizes in our units
        _leave_echo_room(self._bar)
        self._start_ticking(ticking)

    def file_planned(self, file: PlannedFile) -> None:
        with self._lock:
            self._counts.files_planned += 1
            self._counts.bytes_planned += file.size
            self._bar.total = self._counts.bytes_planned

    def bytes_transferred(self, file: PlannedFile, count: int) -> None:
        with self._lock:
            self._counts.bytes_done += count
            self._bar.update(count)

    def bytes_reused(self, file: PlannedFile, count: int) -> None:
        """The bar starts further on; the rate and ETA count only transferred bytes (tqdm's own ``initial``: its
        overall rate is ``n - initial``, its smoothed one ``n - last_print_n``, per elapsed time)."""
        with self._lock:
            self._counts.bytes_reused += count
            bar = self._bar
            bar.initial += count
            bar.last_print_n += count
            bar.n += count

    def file_finished(self, result: FileResult) -> None:
        with self._lock:
            self._counts.files_finished += 1
            self._counts.files_failed += not result.ok
            self._bar.set_postfix_str(self._counts.files_text(), refresh=False)
            self._bar.update(0)  # redrawn now if the interval is up, else by the next update: same clock

    def final_postfix(self) -> str:
        return self._counts.files_text()


def _in_our_units(tqdm_class: Type[std_tqdm[Any]]) -> Type[std_tqdm[Any]]:
    """``tqdm_class`` (the terminal's or the notebook's) with :data:`BAR_FORMAT`'s fields: done, total and rate
    through :func:`synclient.units.format_size`, from the values tqdm itself would show (its smoothed rate)."""

    class InOurUnits(tqdm_class):  # type: ignore[misc,valid-type]
        @property
        def format_dict(self) -> Dict[str, Any]:
            values: Dict[str, Any] = super().format_dict
            rate, elapsed = values.get("rate"), values.get("elapsed")
            if rate is None and elapsed:  # as tqdm: the smoothed rate while running, the overall one at close
                rate = ((values.get("n") or 0) - (values.get("initial") or 0)) / elapsed
            if not values.get("total"):  # as tqdm: no bar (and a short line) until a total is known
                values["bar_format"] = NO_TOTAL_FORMAT
            values["size_done"] = format_size(values.get("n") or 0)
            values["size_total"] = format_size(values.get("total") or 0)
            values["size_rate"] = format_rate(rate) if rate else "?/s"
            return values

    InOurUnits.__name__ = InOurUnits.__qualname__ = tqdm_class.__name__
    return InOurUnits


def _leave_echo_room(bar: std_tqdm[Any]) -> None:
    """Draw a terminal bar ``ECHO_ROOM`` more columns short of the width: with tqdm's one spare column the echoed
    "^C" wrapped ("^" at the end of the bar, "C" on a new line, where the final redraw drew a second bar)."""
    measure = getattr(bar, "dynamic_ncols", None)
    if not callable(measure) or hasattr(bar, "container"):  # (a notebook widget has no columns)
        return

    def narrower(stream: IO[str]) -> Tuple[Optional[int], Optional[int]]:
        columns, rows = measure(stream)
        return (max(columns - ECHO_ROOM, 10) if columns else columns), rows

    # tqdm swaps its dynamic_ncols flag for this measuring function when the bar is made; the stubs know the flag
    bar.dynamic_ncols = narrower  # type: ignore[assignment]


class ProgressLines(ProgressDisplay):
    """For logs and pipes: at most one plain line every ``interval`` seconds, and one at the end."""

    def __init__(self, *, stream: Optional[IO[str]] = None, interval: float = 10.0, description: str = "sync"):
        self._stream = stream if stream is not None else sys.stderr
        self._interval = interval
        self._description = description
        self._lock = threading.Lock()
        self._counts = _Counts()
        self._started = time.monotonic()
        self._last_line = self._started
        self._wrote_any = False

    def file_planned(self, file: PlannedFile) -> None:
        with self._lock:
            self._counts.files_planned += 1
            self._counts.bytes_planned += file.size

    def bytes_transferred(self, file: PlannedFile, count: int) -> None:
        with self._lock:
            self._counts.bytes_done += count
            line = self._line_if_due()
        self._write(line)

    def bytes_reused(self, file: PlannedFile, count: int) -> None:
        with self._lock:
            self._counts.bytes_reused += count

    def file_finished(self, result: FileResult) -> None:
        with self._lock:
            self._counts.files_finished += 1
            self._counts.files_failed += not result.ok
            line = self._line_if_due()
        self._write(line)

    def close(self) -> None:
        with self._lock:
            line = self._line() if self._wrote_any else None  # short runs: the summary says it all
        self._write(line)

    def _line_if_due(self) -> Optional[str]:
        now = time.monotonic()
        if now - self._last_line < self._interval:
            return None
        self._last_line = now
        self._wrote_any = True
        return self._line()

    def _line(self) -> str:
        counts = self._counts
        elapsed = max(time.monotonic() - self._started, 1e-6)
        return (
            f"{self._description}: {counts.files_text()}, {format_size(counts.bytes_done + counts.bytes_reused)} of "
            f"{format_size(counts.bytes_planned)}, {format_rate(counts.bytes_done / elapsed)}"
        )

    def _write(self, line: Optional[str]) -> None:
        if line is None:
            return
        try:
            self._stream.write(line + "\n")
            self._stream.flush()
        except (OSError, ValueError):  # a closed pipe must never fail the sync
            pass


class NoProgress(ProgressDisplay):
    def close(self) -> None:
        pass


def progress_observer(
    *, enabled: bool = True, stream: Optional[IO[str]] = None, description: str = "sync", interval: float = 10.0
) -> ProgressDisplay:
    """The right display for where output goes; call ``.close()`` on it when the sync returns."""
    mode = choose_mode(enabled=enabled, stream=stream)
    if mode is ProgressMode.BAR:
        return ProgressBar(stream=stream, description=description)
    if mode is ProgressMode.LOG_LINES:
        return ProgressLines(stream=stream, interval=interval, description=description)
    return NoProgress()
