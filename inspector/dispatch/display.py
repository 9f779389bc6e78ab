"""Plain-HTML displays of dispatch objects, so a cell's last expression shows a table.

No pandas here: the engine stays importable without the notebook stack. The panel's richer
tables (``inspector.views.dispatch``) are built from the same ``Trace`` records.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from inspector._display import html_table

if TYPE_CHECKING:
    from inspector.dispatch.records import Resolution
    from inspector.dispatch.trace import Trace

STYLE = (
    "<style>.inspector-trace td,.inspector-trace th{padding:2px 8px;text-align:left;vertical-align:top}"
    ".inspector-trace .chosen{font-weight:bold}</style>"
)
MARKS = {"MATCH": "✓", "reject": "✗"}


def trace_html(trace: Trace) -> str:
    """A trace as a table: one row per implementation, the decision underneath."""
    rows = []
    for row in trace.rows:
        mark = MARKS.get(row.verdict, "–")
        name = html.escape(row.name)
        if row.chosen:
            name = f"<span class='chosen'>▶ {name}</span>"
        rows.append(
            (
                name,
                str(row.priority if row.priority is not None else ""),
                f"{mark} {html.escape(row.verdict)}",
                html.escape(trace.row_verdict(row)),
            )
        )
    if trace.error is not None:
        outcome = f"<b>ERROR</b>: {html.escape(trace.error.splitlines()[0])}"
    else:
        outcome = f"<b>{html.escape(str(trace.chosen))}</b> (origin={html.escape(str(trace.origin))})"
    context = html.escape(trace.context.describe())
    return (
        f"{STYLE}<div><b>{html.escape(trace.family)}</b> <code>{context}</code>"
        f"{html_table(('row', 'priority', 'verdict', 'why'), rows, css_class='inspector-trace', markup=True)}"
        f"<div>⇒ {outcome}</div></div>"
    )


def resolution_html(resolution: Resolution) -> str:
    record = resolution.record
    return (
        f"<span class='inspector-resolution'><b>{html.escape(record.family)}</b> → "
        f"<b>{html.escape(record.name)}</b> (origin={html.escape(resolution.origin)})"
        f"{' — ' + html.escape(record.description) if record.description else ''}</span>"
    )
