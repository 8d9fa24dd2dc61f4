"""Jupyter stood in for (IPython and ipywidgets are not installed here): tqdm.auto and tqdm.notebook give a widget
bar built as tqdm builds one, whose container's repr is the bar's text (tqdm.notebook.TqdmHBox.__repr__, what a
saved notebook keeps), and IPython.display records each text shown or updated under a display id."""

from __future__ import annotations

import sys
import types
from typing import List


class ShownWidget:
    """One ``display(..., display_id=True)``: the texts it showed, first and at each update."""

    def __init__(self, shown: object) -> None:
        self.texts: List[str] = [repr(shown)]

    def update(self, shown: object) -> None:
        self.texts.append(repr(shown))


def install_notebook_standins(monkeypatch) -> List[ShownWidget]:
    """Stand Jupyter in for the rest of the test; returns the widgets shown, in order."""
    import tqdm.std

    class Container:
        def __init__(self, bar):
            self.bar = bar

        def __repr__(self):  # as tqdm.notebook.TqdmHBox.__repr__
            return self.bar.format_meter(**self.bar.format_dict)

    class WidgetBar(tqdm.std.tqdm):
        def __init__(self, *args, display=True, **kwargs):
            assert display is False, "shown by synclient, with an id"
            super().__init__(*args, **kwargs)
            self.container = Container(self)

    shown: List[ShownWidget] = []

    def display(widget, display_id=False):
        assert display_id is True
        shown.append(ShownWidget(widget))
        return shown[-1]

    monkeypatch.setitem(sys.modules, "tqdm.auto", types.SimpleNamespace(tqdm=WidgetBar))
    monkeypatch.setitem(sys.modules, "tqdm.notebook", types.SimpleNamespace(tqdm_notebook=WidgetBar))
    monkeypatch.setitem(sys.modules, "IPython.display", types.SimpleNamespace(display=display))
    return shown
