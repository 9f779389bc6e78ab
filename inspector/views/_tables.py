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

import base64
import html
import math
import re
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
    if index and frame.index.nlevels == 1 and frame.columns.nlevels == 1 and frame.columns.name is None:
        # the index's name in the header row's corner, not in a header row of its own
        frame = frame.rename_axis(index=None, columns=frame.index.name)
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
click:function(event){var th=event.target.closest('th');if(th&&th.closest('thead'))window.inspectorTables.sort(th);},
copy:function(button){var link=button.closest('.inspector-table').querySelector('a.inspector-table-csv');
var bytes=atob(link.getAttribute('href').split(',')[1]);
var text=new TextDecoder().decode(Uint8Array.from(bytes,function(c){return c.charCodeAt(0);}));
function done(){button.textContent='copied';setTimeout(function(){button.textContent='copy CSV';},1500);}
function fallback(){var t=document.createElement('textarea');t.value=text;document.body.appendChild(t);t.select();
document.execCommand('copy');t.remove();done();}
if(navigator.clipboard&&window.isSecureContext){navigator.clipboard.writeText(text).then(done,fallback);}else{fallback();}}};
})();</script>"""

TABLE_CSS = (
    "<style>.inspector-table{max-width:100%;overflow-x:auto;margin:0.3em 0}"
    ".inspector-table table{border-collapse:collapse;table-layout:auto}"
    ".inspector-table td,.inspector-table th{overflow-wrap:normal;word-break:normal;hyphens:none;max-width:32em;"
    "padding:0.15em 0.5em;vertical-align:top}"
    ".inspector-table thead th{cursor:pointer;user-select:none}"
    ".inspector-table th[data-order=asc]::after{content:' ▲'}.inspector-table th[data-order=desc]::after{content:' ▼'}"
    ".inspector-table th[title]{text-decoration:underline dotted;text-underline-offset:2px}"
    ".inspector-table-tools{font-size:0.85em;margin-bottom:0.2em}"
    ".inspector-table-tools input,.inspector-table-tools button{background:var(--jp-layout-color1,transparent);"
    "color:var(--jp-ui-font-color1,inherit);border:1px solid var(--jp-border-color1,#bbb);border-radius:2px;"
    "font-size:inherit}.inspector-table-tools a{color:var(--jp-content-link-color,#1a73e8);white-space:nowrap}"
    "</style>"
)

# NOTE [ Table headers ]
# JupyterLab and Voila lay out output tables with ``table-layout: fixed``, which squeezes a column
# to its share of the width and breaks a header inside a word ("priorit y"). Inspector tables lay
# out by their content and never break a word: a header wraps only at a space
# (``share_of_memcpy`` stays whole), and what does not fit scrolls inside the table's box. A
# column left empty in every row (``h2d_*`` on a machine without CUDA) is not shown, and a header
# that does not explain itself carries a tooltip: ``COLUMN_TIPS``, or the frame's own
# ``frame.attrs["column_tips"]``, keyed by the header as shown. In a styled table each header
# lines up with its cells: numbers to the right, everything else to the left.
COLUMN_TIPS = {
    "share_of_memcpy": "MiB/s of this cell divided by a plain memcpy of the same size, measured in the same run",
    "share of memcpy, same size": "MiB/s of this cell divided by a plain memcpy of the same size, measured in the "
    "same run",
    "share_of_dram_memcpy": "MiB/s of this cell divided by a memcpy of the largest size measured (beyond the CPU "
    "caches: what DRAM delivers), measured in the same run",
    "share of memcpy, largest size": "MiB/s of this cell divided by a memcpy of the largest size measured (beyond "
    "the CPU caches: what DRAM delivers), measured in the same run",
    "busy_machine": "whether the machine was busy while this was measured (load average above its core count): "
    "treat the figures as rough",
    "x_sync": "ours ÷ a synchronous load of the same files in the caller (above 1: ours is faster)",
    "x_mp_queue": "ours ÷ a multiprocessing.Queue of worker processes (above 1: ours is faster)",
    "x_dataloader": "ours ÷ a torch DataLoader over the same files (above 1: ours is faster)",
    "faithful": "whether the row computes the reference's numbers (unfaithful rows run only when selected)",
    "origin": "which tier chose the row: explicit, context (op_backend), env (INSPECTOR_OPS / set_op), profile, "
    "chain (first capable row) or fallback",
}
_TH = re.compile(r"(<th\b[^>]*>)([^<]*)(</th>)")


def _empty(value: Any) -> bool:
    try:
        shown = cell_text(value)
    except (TypeError, ValueError):  # a cell holding an array or another odd value: shown, so not empty
        return False
    return isinstance(shown, str) and shown in ("", EMPTY)


def _empty_columns(frame: pd.DataFrame) -> list[Any]:
    """Columns with no value in any row (a table with no rows keeps its headers)."""
    if frame.empty:
        return []
    return [c for c in frame.columns if frame[c].map(_empty).all()]


def _numeric_columns(frame: pd.DataFrame) -> list[Any]:
    return [
        c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])
    ]


def _headers(markup: str, tips: dict[str, str]) -> str:
    """Each header with its tooltip, when it has one (NOTE [ Table headers ])."""

    def one(match: re.Match[str]) -> str:
        start, text, end = match.groups()
        tip = tips.get(html.unescape(text).strip())
        if tip:
            start = f'{start[:3]} title="{html.escape(tip, quote=True)}"{start[3:]}'
        return start + text + end

    return _TH.sub(one, markup)


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet reads as the start of a formula


def spreadsheet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every text cell (and index label) that a spreadsheet would run as a formula quoted with a
    leading ``'``: a backend or loader name such as ``=HYPERLINK(...)`` stays text when the CSV is opened."""

    def quoted(value: Any) -> Any:
        return "'" + value if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value

    safe = frame.copy()
    for column in safe.columns:
        if safe[column].dtype == object or pd.api.types.is_string_dtype(safe[column].dtype):
            safe[column] = safe[column].map(quoted)
    safe.index = safe.index.map(quoted)
    return safe


def _csv_link(frame: pd.DataFrame, index: bool, caption: str) -> str:
    name = re.sub(r"[^A-Za-z0-9]+", "_", caption).strip("_").lower()[:40] or "table"
    label = html.unescape(str(frame.index.name or frame.columns.name or "")) if index else None
    text = spreadsheet_safe(frame).to_csv(index=index, index_label=label or None)
    data = base64.b64encode(text.encode("utf-8")).decode("ascii")
    return (
        f"<a class='inspector-table-csv' download='{name}.csv' href='data:text/csv;charset=utf-8;base64,{data}' "
        "title='Download this table as a CSV file (every row, full precision)'>⬇ CSV</a> "
        "<button type='button' class='inspector-table-copy' title='Copy this table as CSV, to paste anywhere' "
        "onclick='window.inspectorTables&amp;&amp;inspectorTables.copy(this)'>copy CSV</button>"
    )


def table_html(value: Any, caption: str = "") -> str:
    """A table in its scroll box: filter box, sortable headers, CSV download and copy (NOTE [ Table cells and
    sorting ], NOTE [ Table headers ])."""
    tips = dict(COLUMN_TIPS)
    if isinstance(value, pd.DataFrame):
        frame = value.drop(columns=_empty_columns(value))
        tips.update(value.attrs.get("column_tips", {}))
        markup = display_frame(frame).to_html(index=False, border=0, escape=True, na_rep="")
        markup, rows, index = _headers(markup, tips), len(frame), False
    elif isinstance(value, Styler):
        frame, index = value.data, not all(getattr(value, "hide_index_", [False]))
        tips.update(frame.attrs.get("column_tips", {}))
        hidden = _empty_columns(frame)
        if hidden:
            value.hide(hidden, axis="columns")
            frame = frame.drop(columns=hidden)
        if frame.columns.is_unique:  # each header where its cells are: numbers right, the rest left
            numbers = set(_numeric_columns(frame))
            value.set_table_styles(
                {
                    c: [{"selector": "", "props": f"text-align: {'right' if c in numbers else 'left'}"}]
                    for c in frame.columns
                },
                overwrite=False,
            )
        markup, rows = _headers(str(value.to_html()), tips), len(frame)
    else:
        frame, markup, rows, index = None, html.escape(str(value)), 0, False
    finder = (
        (
            "<input type='search' class='inspector-table-filter' "
            "placeholder='filter rows' title='Show only the rows that contain every word typed here' "
            "oninput='window.inspectorTables&amp;&amp;inspectorTables.filter(this)'/> "
            f"<span class='inspector-table-count'>{rows} rows</span> <small>(click a header to sort)</small> "
        )
        if rows > 1
        else ""
    )
    tools = (
        f"<div class='inspector-table-tools'>{finder}{_csv_link(frame, index, caption)}</div>"
        if frame is not None and rows
        else ""
    )
    title = f"<div class='inspector-caption'>{html.escape(caption)}</div>" if caption else ""
    return (
        f"{TABLE_CSS}{TABLE_SCRIPT}{title}<div class='inspector-table' "
        f"onclick='window.inspectorTables&amp;&amp;inspectorTables.click(event)'>{tools}{markup}</div>"
    )
