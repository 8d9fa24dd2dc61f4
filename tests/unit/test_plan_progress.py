"""A dry run's progress line (synclient/sync/plan/plan_progress.py): counts, its final state, a notebook's widget."""

from __future__ import annotations

import io
from pathlib import Path

from synclient.sync.plan.dry_run import PlanEntry
from synclient.sync.plan.plan_progress import PlanProgress
from synclient.sync.plan.planner import Action
from tests.notebook_standin import install_notebook_standins

ACTIONS = [Action.DOWNLOAD, Action.SKIP, Action.KEEP_BOTH, Action.KEEP_LOCAL, Action.OVERWRITE, Action.ADOPT]


def _entry(number: int, action: Action) -> PlanEntry:
    return PlanEntry(f"f{number}", f"syn{number}", 1, 1, action, Path(f"f{number}"))


def test_the_line_counts_each_planned_entry_and_ends_on_its_final_count():
    drawn = io.StringIO()
    display = PlanProgress(stream=drawn, description="syn1", ticking=False)
    for number, action in enumerate(ACTIONS * 5):
        display.planned(_entry(number, action))
    display.close()
    assert (display.files, display.to_download) == (30, 15)
    last = drawn.getvalue().replace("\r", "\n").strip().splitlines()[-1]
    assert last.startswith("dry run of syn1: 30 files") and last.endswith("15 to download]")


def test_a_notebook_widget_keeps_the_final_count(monkeypatch):
    """As the real run's bar (tests/cli/test_cli_progress.py): shown with an id, shown again when closed, so a saved
    notebook keeps the final count. tqdm.auto, tqdm.notebook and IPython.display are stood in for."""
    shown = install_notebook_standins(monkeypatch)
    display_ = PlanProgress(stream=io.StringIO(), description="syn1", ticking=False)
    for number in range(7):
        display_.planned(_entry(number, Action.DOWNLOAD))
    display_.close()
    (widget,) = shown
    assert "0 files" in widget.texts[0] and "7 files" in widget.texts[-1] and "7 to download" in widget.texts[-1]
