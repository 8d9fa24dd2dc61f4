"""A dry run's progress line: the files planned so far, and how many of them to download.

A dry run moves no bytes, so the real run's bytes bar (:mod:`synclient.progress`) has nothing to show; this is
its counterpart for planning, drawn by the same tqdm, on the same clock (``REDRAW_INTERVAL``, a ticker thread
redrawing while the listing waits on the platform), in a terminal or a notebook. A dry run's ``progress`` option
(the CLI: on stderr when a terminal) turns it on.
"""

from __future__ import annotations

import sys
from typing import IO, Any, Dict, Optional

from synclient.progress import REDRAW_INTERVAL, TqdmLine
from synclient.sync.plan.dry_run import PlanEntry


class PlanProgress(TqdmLine):
    """Counts each planned entry (:meth:`planned`, called from pool threads) on one tqdm counter line; call
    :meth:`close` when the dry run returns."""

    def __init__(self, *, stream: Optional[IO[str]] = None, description: str = "sync", ticking: bool = True) -> None:
        """``ticking``: a daemon thread redraws the line while no entry comes; tests turn it off."""
        from tqdm.auto import tqdm  # imported here: importing synclient must stay cheap

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
            postfix=self.final_postfix(),
        )
        super().__init__(tqdm, settings, thread_name="synclient-plan-progress")
        self._start_ticking(ticking)

    def final_postfix(self) -> str:
        return f"{self.to_download} to download"

    def planned(self, entry: PlanEntry) -> None:
        with self._lock:
            self.files += 1
            self.to_download += entry.action.fetches
            self._bar.set_postfix_str(self.final_postfix(), refresh=False)
            self._bar.update(1)
