"""A dry run's progress line: the files planned so far, and how many of them to download.

A dry run moves no bytes, so the real run's bytes bar (:mod:`synclient.progress`) has nothing to show; this is
its counterpart for planning, drawn by the same tqdm, on the same clock (``REDRAW_INTERVAL``, a ticker thread
redrawing while the listing waits on the platform), in a terminal or a notebook. A dry run's ``progress`` option
(the CLI: on stderr when a terminal) turns it on.
"""

from __future__ import annotations

import sys
import threading
from typing import IO, TYPE_CHECKING, Any, Dict, Optional, Tuple, cast

from synclient.progress import REDRAW_INTERVAL
from synclient.sync.plan.dry_run import PlanEntry

if TYPE_CHECKING:  # pragma: no cover - tqdm itself is imported where a bar is made
    from tqdm.notebook import tqdm_notebook
    from tqdm.std import tqdm as std_tqdm


class PlanProgress:
    """Counts each planned entry (:meth:`planned`, called from pool threads) on one tqdm counter line; call
    :meth:`close` when the dry run returns."""

    def __init__(self, *, stream: Optional[IO[str]] = None, description: str = "sync", ticking: bool = True) -> None:
        """``ticking``: a daemon thread redraws the line while no entry comes; tests turn it off."""
        from tqdm.auto import tqdm  # imported here: importing synclient must stay cheap

        self._lock = threading.Lock()
        self.files = 0  # entries planned
        self.to_download = 0  # of which fetch
        settings: Dict[str, Any] = dict(
            total=None,
            unit=" files",
            desc=f"dry run of {description}",
            file=stream if stream is not None else sys.stderr,
            dynamic_ncols=True,
            mininterval=REDRAW_INTERVAL,
            miniters=0,  # redrawn on the clock, never on a learned count of updates
            leave=True,
            postfix=self._text(),
        )
        self._bar: std_tqdm[Any]
        self._shown: Optional[Tuple[Any, tqdm_notebook[Any]]] = None  # (IPython's display handle, the widget)
        notebook = sys.modules.get("tqdm.notebook")  # (imported by tqdm.auto only in a notebook)
        if notebook is not None and issubclass(tqdm, notebook.tqdm_notebook):
            from IPython.display import display

            # shown with an id, as the real run's bar: a saved notebook then keeps the final count, not "0 files"
            widget = cast("tqdm_notebook[Any]", tqdm(display=False, **settings))
            self._bar = widget
            self._shown = (display(widget.container, display_id=True), widget)
        else:
            self._bar = tqdm(**settings)
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick_until_closed, name="synclient-plan-progress", daemon=True)
        if ticking:
            self._ticker.start()

    def _text(self) -> str:
        return f"{self.to_download} to download"

    def planned(self, entry: PlanEntry) -> None:
        with self._lock:
            self.files += 1
            self.to_download += entry.action.fetches
            self._bar.set_postfix_str(self._text(), refresh=False)
            self._bar.update(1)

    def tick(self) -> None:
        """Redraw if the interval is up (the elapsed time moves while the platform is asked)."""
        with self._lock:
            self._bar.update(0)

    def _tick_until_closed(self) -> None:
        while not self._stop.wait(REDRAW_INTERVAL / 2):
            self.tick()

    def close(self) -> None:
        """The final count, drawn once and left on its line."""
        self._stop.set()
        if self._ticker.is_alive():
            self._ticker.join(timeout=1.0)
        with self._lock:
            self._bar.set_postfix_str(self._text(), refresh=False)
            self._bar.close()
            if self._shown is not None:
                handle, widget = self._shown
                handle.update(widget.container)
