"""Dispatch views: decision tables, plans, what-if grids and row comparisons as DataFrames/Figures."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from pandas.io.formats.style import Styler

from inspector.dispatch import DecisionCount, RowRun, Trace, WhatIfCell
from inspector.dispatch.context import format_value
from inspector.dispatch.torch_sdpa.watch import WatchTable
from inspector.views._figures import NEUTRAL_INK, new_figure, style_axes

DECISION_COLUMNS = ["row", "priority", "available", "faithful", "verdict", "failing", "chosen", "origin"]
CHOSEN_STYLE = "background-color: rgba(44, 160, 44, 0.25); font-weight: bold"
REJECT_STYLE = "color: #d62728"
SKIP_STYLE = "opacity: 0.6"
# Qualitative colours, distinguishable on light and dark backgrounds.
ROW_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]
NO_ROW_COLOUR = "#7f7f7f"


def decision_table(trace: Trace) -> pd.DataFrame:
    """One line per row: priority, availability, faithfulness, verdict, failing clauses, chosen, origin.

    ``failing`` lists each failing clause as ``axis: required ..., got ...``; the frame's
    ``attrs`` carry the family, the context and the decision (or its error).
    """
    records = [
        {
            "row": row.name,
            "priority": row.priority,
            "available": row.available,
            "faithful": row.faithful,
            "verdict": row.verdict,
            "failing": "; ".join(str(c) for c in row.failing),
            "chosen": row.chosen,
            "origin": trace.origin if row.chosen else "",
        }
        for row in trace.rows
    ]
    frame = pd.DataFrame.from_records(records, columns=DECISION_COLUMNS)
    frame["priority"] = frame["priority"].astype("Int64")
    frame.attrs.update(
        family=trace.family, context=trace.context.describe(), chosen=trace.chosen, origin=trace.origin,
        error=trace.error, selection=trace.selection, selection_tier=trace.selection_tier,
    )
    return frame


def clause_table(trace: Trace) -> pd.DataFrame:
    """Every clause of every row: row, clause, axis, required, actual, passed (long form)."""
    records = [
        {"row": row.name, "clause": c.clause, "axis": c.axis, "required": c.required, "actual": c.actual,
         "passed": c.passed}
        for row in trace.rows
        for c in row.checks
    ]
    return pd.DataFrame.from_records(records, columns=["row", "clause", "axis", "required", "actual", "passed"])


def style_decision_table(frame: pd.DataFrame) -> Styler:
    """Highlight the chosen row, colour rejections, dim skipped rows; caption states the decision."""

    def row_style(line: pd.Series) -> list[str]:
        if line["chosen"]:
            style = CHOSEN_STYLE
        elif line["verdict"] == "reject":
            style = REJECT_STYLE
        elif str(line["verdict"]).startswith("SKIP"):
            style = SKIP_STYLE
        else:
            style = ""
        return [style] * len(line)

    attrs = frame.attrs
    if attrs.get("error"):
        caption = f"{attrs.get('family')}: ERROR: {str(attrs['error']).splitlines()[0]}"
    else:
        caption = f"{attrs.get('family')}: {attrs.get('chosen')} (origin={attrs.get('origin')})"
    return (
        frame.style.apply(row_style, axis=1)
        .format({"chosen": lambda v: "★" if v else ""})
        .set_properties(subset=["row", "verdict", "failing", "origin"], **{"text-align": "left"})
        .set_caption(caption)
        .hide(axis="index")
        .set_table_attributes('class="inspector-decision-table"')
    )


def plan_table(traces: Iterable[Trace]) -> pd.DataFrame:
    """One line per family of a plan: chosen row, origin, selection in force, error, context."""
    records = [
        {
            "family": t.family,
            "chosen": t.chosen or "",
            "origin": t.origin or "",
            "selection": f"{t.selection} ({t.selection_tier})" if t.selection else "",
            "error": (t.error or "").partition("\n")[0],
            "context": t.context.describe(),
        }
        for t in traces
    ]
    return pd.DataFrame.from_records(records, columns=["family", "chosen", "origin", "selection", "error", "context"])


def what_if_table(cells: Sequence[WhatIfCell]) -> pd.DataFrame:
    """Long form: one line per combination, the swept axes as columns, then winner, origin, error."""
    records = []
    for cell in cells:
        line: dict[str, Any] = {name: format_value(value) for name, value in cell.axes}
        line.update(winner=cell.row or "—", origin=cell.origin or "", error=cell.error or "")
        records.append(line)
    return pd.DataFrame.from_records(records)


def _split_axes(cells: Sequence[WhatIfCell], index: Sequence[str] | None) -> tuple[list[str], list[str]]:
    names = [name for name, _ in cells[0].axes] if cells else []
    if index is None:
        index = names[: max(1, len(names) // 2)]
    unknown = [n for n in index if n not in names]
    if unknown:
        raise KeyError(f"Axis {unknown[0]!r} was not swept. Swept axes: {names}")
    return list(index), [n for n in names if n not in index]


def what_if_pivot(cells: Sequence[WhatIfCell], index: Sequence[str] | None = None) -> pd.DataFrame:
    """The grid as a table of winning rows: ``index`` axes down, the other swept axes across."""
    rows_axes, column_axes = _split_axes(cells, index)
    frame = what_if_table(cells)
    if not column_axes:
        return frame.set_index(rows_axes)[["winner"]]
    return frame.pivot_table(index=rows_axes, columns=column_axes, values="winner", aggfunc="first", sort=False)


def what_if_heatmap(cells: Sequence[WhatIfCell], index: Sequence[str] | None = None, title: str = "") -> Figure:
    """The grid as a heatmap, one colour per winning row, the row name written in each cell."""
    pivot = what_if_pivot(cells, index)
    winners = sorted({w for w in pivot.to_numpy().ravel() if isinstance(w, str) and w != "—"})
    colour_of = {name: ROW_COLOURS[i % len(ROW_COLOURS)] for i, name in enumerate(winners)}
    codes = pivot.apply(lambda col: col.map(lambda w: winners.index(w) + 1 if w in colour_of else 0))
    palette = ListedColormap([NO_ROW_COLOUR] + [colour_of[w] for w in winners])

    height = max(2.5, 0.45 * len(pivot.index) + 1.5)
    width = max(4.5, 1.1 * len(pivot.columns) + 3.0)
    fig = new_figure(width, height)
    ax = fig.add_subplot()
    ax.imshow(codes.to_numpy(dtype=float), cmap=palette, vmin=0, vmax=max(len(winners), 1), aspect="auto")
    for (i, j), winner in _cells(pivot):
        ax.text(j, i, winner, ha="center", va="center", fontsize=8, color="white")
    ax.set_xticks(range(len(pivot.columns)), [_label(c) for c in pivot.columns], rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(pivot.index)), [_label(i) for i in pivot.index], fontsize=8)
    ax.set_xlabel(" / ".join(str(n) for n in (pivot.columns.names or [])), fontsize=9)
    ax.set_ylabel(" / ".join(str(n) for n in (pivot.index.names or [])), fontsize=9)
    if title:
        ax.set_title(title, fontsize=10)
    style_axes(ax)
    handles = [Patch(color=colour_of[w], label=w) for w in winners]
    if (codes.to_numpy() == 0).any():
        handles.append(Patch(color=NO_ROW_COLOUR, label="no row (error)"))
    legend = ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    for text in legend.get_texts():
        text.set_color(NEUTRAL_INK)
    return fig


def _cells(pivot: pd.DataFrame) -> Iterable[tuple[tuple[int, int], str]]:
    for i in range(len(pivot.index)):
        for j in range(len(pivot.columns)):
            value = pivot.iat[i, j]
            yield (i, j), value if isinstance(value, str) else "—"


def _label(key: Any) -> str:
    return ", ".join(str(k) for k in key) if isinstance(key, tuple) else str(key)


def comparison_table(runs: Sequence[RowRun]) -> pd.DataFrame:
    """Row runs against the reference: status, max abs/rel error, within tolerance, median time."""
    records = [
        {
            "row": r.row,
            "status": r.status,
            "faithful": r.faithful,
            "max_abs_error": r.max_abs_error,
            "max_rel_error": r.max_rel_error,
            "within_tolerance": r.within_tolerance,
            "tolerance": f"atol={r.atol:g}, rtol={r.rtol:g}",
            "median_ms": r.median_ms,
            "detail": r.detail,
        }
        for r in runs
    ]
    return pd.DataFrame.from_records(
        records,
        columns=["row", "status", "faithful", "max_abs_error", "max_rel_error", "within_tolerance", "tolerance",
                 "median_ms", "detail"],
    )


def decision_counts_table(counts: Sequence[DecisionCount]) -> pd.DataFrame:
    """What a ``DecisionRecorder`` saw: family, row, origin, count."""
    return pd.DataFrame.from_records(
        [{"family": c.family, "row": c.row, "origin": c.origin, "count": c.count} for c in counts],
        columns=["family", "row", "origin", "count"],
    )


def watch_table(table: WatchTable) -> pd.DataFrame:
    """What a ``torch_sdpa.watch()`` block saw: backend, dtype, shapes, calls, faster backends rejected."""
    return pd.DataFrame.from_records(
        [{"backend": g.backend, "dtype": g.dtype, "shapes": g.shapes, "calls": g.count, "rejected": g.rejected}
         for g in table.groups],
        columns=["backend", "dtype", "shapes", "calls", "rejected"],
    )
