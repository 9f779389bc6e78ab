"""Plain-HTML tables for engine objects' ``_repr_html_``, so a cell's last expression shows a table.

No pandas: the engine stays importable without the notebook stack. The panels' richer tables
come from ``inspector.views``.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Sequence
from typing import Any


def cell(value: Any) -> str:
    """One value as table text: ✓/✗ for booleans, three significant digits for floats."""
    if isinstance(value, bool):
        return "✓" if value else "✗"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"
    return html.escape("" if value is None else str(value))


def html_table(
    head: Sequence[str],
    rows: Iterable[Sequence[Any]],
    caption: str = "",
    *,
    css_class: str = "inspector-table",
    markup: bool = False,
    row_headers: bool = False,
) -> str:
    """An HTML table: the head and caption escaped, the values through ``cell`` (or, with ``markup``,
    cells the caller built and escaped itself: a trace's marked rows).

    ``row_headers``: each row's first value heads its row (an escaped, left-aligned ``<th>``). A row
    shorter than ``head`` ends in a cell that spans the columns left (a backend that failed to import).
    No ``head``: no head row (a two-column list of facts); no ``css_class``: no class attribute."""
    show = str if markup else cell
    width = len(head)
    body = "".join(_row(row, width, show, row_headers) for row in rows)
    top = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    header = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    thead = f"<thead><tr>{header}</tr></thead>" if head else ""
    attribute = f" class='{css_class}'" if css_class else ""
    return f"<table{attribute}>{top}{thead}<tbody>{body}</tbody></table>"


def _row(row: Sequence[Any], width: int, show: Callable[[Any], str], row_header: bool) -> str:
    cells = []
    for index, value in enumerate(row):
        if row_header and index == 0:
            cells.append(f"<th scope='row' style='text-align:left'>{html.escape(str(value))}</th>")
            continue
        left = width - index
        span = f" colspan='{left}'" if index == len(row) - 1 and left > 1 else ""
        cells.append(f"<td{span}>{show(value)}</td>")
    return "<tr>" + "".join(cells) + "</tr>"
