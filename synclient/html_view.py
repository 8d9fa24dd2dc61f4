"""What a notebook shows of a sync's results or a dry run's plan (their ``_repr_html_``): a small HTML table.

The totals in one row, then the first :data:`FIRST_ROWS` rows of each list (files, failures) and how many more
there are: a notebook cell stays short whatever the size of the run. Every text that came from the platform or
the disk (names, paths, error messages) passes the one redactor (:func:`synclient.redaction.redact`: a signed
URL's query, a token) and is HTML-escaped (a file named ``<script>`` shows as text). Imports only the lowest layer.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

from synclient.redaction import redact, visible
from synclient.units import format_size

#: rows shown of each list; the rest are counted
FIRST_ROWS = 10


def cell_text(value: object) -> str:
    """One table cell's text: redacted, control characters spelled out, HTML-escaped; None is empty."""
    return html.escape(visible(redact("" if value is None else str(value))))


def size_cell(size: Optional[int]) -> str:
    """A file's size in a table; empty when unknown."""
    return format_size(size) if size is not None else ""


@dataclass(frozen=True)
class Rows:
    """One list of the table: its caption, its columns, its first rows, and how many rows it has in all."""

    caption: str
    columns: Tuple[str, ...]
    first: Sequence[Sequence[object]]
    total: int


def html_table(title: str, totals: Sequence[Tuple[str, object]], lists: Sequence[Rows]) -> str:
    """The HTML of ``title``, its ``totals`` (label, value) in one row, then each non-empty list's first rows."""
    parts = [
        '<div class="synclient">',
        f"<strong>{cell_text(title)}</strong>",
        "<table>",
        "<tr>" + "".join(f"<th>{cell_text(label)}</th>" for label, _ in totals) + "</tr>",
        "<tr>" + "".join(f"<td>{cell_text(value)}</td>" for _, value in totals) + "</tr>",
        "</table>",
    ]
    for rows in lists:
        if not rows.total:
            continue
        shown = rows.first[:FIRST_ROWS]
        more = f" (first {len(shown)} of {rows.total})" if rows.total > len(shown) else ""
        parts += [
            "<table>",
            f"<caption>{cell_text(rows.caption + more)}</caption>",
            "<tr>" + "".join(f"<th>{cell_text(column)}</th>" for column in rows.columns) + "</tr>",
            *("<tr>" + "".join(f"<td>{cell_text(value)}</td>" for value in row) + "</tr>" for row in shown),
            "</table>",
        ]
    parts.append("</div>")
    return "\n".join(parts)
