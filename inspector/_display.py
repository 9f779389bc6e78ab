"""Plain-HTML tables for engine objects' ``_repr_html_``, so a cell's last expression shows a table.

No pandas: the engine stays importable without the notebook stack. The panels' richer tables
come from ``inspector.views``.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
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
) -> str:
    """An HTML table: the head and caption escaped, the values through ``cell`` (or, with ``markup``,
    cells the caller built and escaped itself: a trace's marked rows)."""
    show = str if markup else cell
    header = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{show(v)}</td>" for v in row) + "</tr>" for row in rows)
    top = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f"<table class='{css_class}'>{top}<thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>"
