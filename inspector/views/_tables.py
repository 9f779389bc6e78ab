"""Tables that read at a glance: ✓/✗ for booleans, numbers to meaningful digits, sort and filter in place.

NOTE [ Table cells and sorting ]
Every table a page shows goes through ``styled`` (a view's own styling is applied on top), so a
boolean reads ✓ or ✗ and a float shows three significant digits (thousands grouped, never six
decimals), in the panel, its static HTML and the report alike. ``table_html`` wraps the table in
a box that scrolls sideways inside itself (the page never overflows), with a filter box above
it; clicking a column header sorts by it (again: the other way). The behaviour is one small
inline script (``TABLE_SCRIPT``, no CDN, nothing fetched) sent with each table and idempotent,
so it works in JupyterLab's and Voila's trusted outputs and in a report opened from disk; where
scripts do not run (an untrusted notebook) the table is still all there, just static. Numbers
sort as numbers (thousands separators ignored), everything else as text.
"""

from __future__ import annotations

import html
import math
from numbers import Integral, Real
from typing import Any

import pandas as pd
from pandas.io.formats.style import Styler

TICK, CROSS, EMPTY = "✓", "✗", "—"
SIGNIFICANT = 3


def meaningful(value: float) -> str:
    """``value`` to three significant digits (thousands grouped): 1234.5 -> 1,234; 0.012345 -> 0.0123."""
    if not math.isfinite(value):
        return EMPTY if math.isnan(value) else ("∞" if value > 0 else "-∞")
    if value == 0:
        return "0"
    size = abs(value)
    if size >= 10 ** (SIGNIFICANT - 1):
        return f"{value:,.0f}"
    if size >= 1e-3:
        decimals = SIGNIFICANT - 1 - math.floor(math.log10(size))
        return f"{value:.{decimals}f}"
    return f"{value:.{SIGNIFICANT - 1}e}"


def cell_text(value: Any) -> Any:
    """What a cell shows: ✓/✗ for a boolean, ``meaningful`` for a float, ``—`` for missing, else as is."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return TICK if value else CROSS
    if value is None or value is pd.NA or value is pd.NaT:
        return ""
    if isinstance(value, Integral):
        return f"{int(value):,}" if abs(int(value)) >= 10_000 else str(int(value))
    if isinstance(value, Real):
        return meaningful(float(value))
    return value


def styled(frame: pd.DataFrame, *, index: bool = False) -> Styler:
    """``frame.style`` with every cell shown by ``cell_text``, the index hidden unless asked.

    Everything is escaped: cells, index and column labels, and the axes' names (pandas escapes
    none of the labels by default, and no ``format_index`` option reaches the names), since a
    label is often a name a user or a package chose (a backend, a verb, a row).
    """
    named = frame.rename_axis(index=_escaped_names(frame.index), columns=_escaped_names(frame.columns))
    styler = (
        named.style.format(cell_text, escape="html", na_rep="")
        .format_index(escape="html", axis="index")
        .format_index(escape="html", axis="columns")
    )
    return styler if index else styler.hide(axis="index")


def _escaped_names(axis: pd.Index) -> list[str | None]:
    return [None if name is None else html.escape(str(name)) for name in axis.names]


def display_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` holding the text each cell shows (for tests and plain-text output)."""
    return frame.map(cell_text)


TABLE_SCRIPT = """<script>(function(){if(window.inspectorTables)return;
function key(cell){var t=(cell.getAttribute('data-sort')||cell.textContent).trim();
var n=parseFloat(t.replace(/,/g,''));
return (t!==''&&!isNaN(n)&&/^[-+0-9.,e∞]+/i.test(t))?[0,n,t]:[1,0,t.toLowerCase()];}
function cmp(a,b){return a[0]-b[0]||(a[0]===0?a[1]-b[1]:(a[2]<b[2]?-1:a[2]>b[2]?1:0));}
window.inspectorTables={
sort:function(th){var table=th.closest('table');var body=table.tBodies[0];if(!body)return;
var col=Array.prototype.indexOf.call(th.parentNode.children,th);var up=th.getAttribute('data-order')!=='asc';
Array.prototype.forEach.call(th.parentNode.children,function(h){h.removeAttribute('data-order');});
th.setAttribute('data-order',up?'asc':'desc');
var rows=Array.prototype.slice.call(body.rows);rows.sort(function(r1,r2){
var c=cmp(key(r1.cells[col]||r1),key(r2.cells[col]||r2));return up?c:-c;});
rows.forEach(function(r){body.appendChild(r);});},
filter:function(input){var box=input.closest('.inspector-table');var words=input.value.toLowerCase().split(/\\s+/)
.filter(Boolean);var shown=0,rows=box.querySelectorAll('tbody tr');
Array.prototype.forEach.call(rows,function(r){var text=r.textContent.toLowerCase();
var keep=words.every(function(w){return text.indexOf(w)>=0;});r.style.display=keep?'':'none';shown+=keep?1:0;});
var count=box.querySelector('.inspector-table-count');if(count)count.textContent=shown+' of '+rows.length+' rows';},
click:function(event){var th=event.target.closest('th');if(th&&th.closest('thead'))window.inspectorTables.sort(th);}};
})();</script>"""

TABLE_CSS = (
    "<style>.inspector-table{max-width:100%;overflow-x:auto;margin:0.3em 0}"
    ".inspector-table table{border-collapse:collapse}"
    ".inspector-table td,.inspector-table th{overflow-wrap:anywhere;max-width:32em;padding:0.15em 0.5em}"
    ".inspector-table thead th{cursor:pointer;user-select:none}"
    ".inspector-table th[data-order=asc]::after{content:' ▲'}.inspector-table th[data-order=desc]::after{content:' ▼'}"
    ".inspector-table-tools{font-size:0.85em;margin-bottom:0.2em}</style>"
)


def table_html(value: Any, caption: str = "") -> str:
    """A table in its scroll box, with a filter box and sortable headers (NOTE [ Table cells and sorting ])."""
    if isinstance(value, pd.DataFrame):
        markup, rows = display_frame(value).to_html(index=False, border=0, escape=True, na_rep=""), len(value)
    elif isinstance(value, Styler):
        markup, rows = str(value.to_html()), len(value.data)
    else:
        markup, rows = html.escape(str(value)), 0
    tools = (
        "<div class='inspector-table-tools'><input type='search' class='inspector-table-filter' "
        "placeholder='filter rows' title='Show only the rows that contain every word typed here' "
        "oninput='window.inspectorTables&amp;&amp;inspectorTables.filter(this)'/> "
        f"<span class='inspector-table-count'>{rows} rows</span> <small>(click a header to sort)</small></div>"
    ) if rows > 1 else ""
    title = f"<div class='inspector-caption'>{html.escape(caption)}</div>" if caption else ""
    return (
        f"{TABLE_CSS}{TABLE_SCRIPT}{title}<div class='inspector-table' "
        f"onclick='window.inspectorTables&amp;&amp;inspectorTables.click(event)'>{tools}{markup}</div>"
    )
