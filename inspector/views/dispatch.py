"""Dispatch views: decision tables, plans, what-if grids and row comparisons as DataFrames/Figures."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import Any

import pandas as pd
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from pandas.io.formats.style import Styler

from inspector.dispatch import (
    CallContext,
    DecisionCount,
    RowRun,
    Trace,
    WhatIfCell,
    families,
    op_backend,
    rows,
    torch_sdpa,
    trace,
    what_if,
)
from inspector.dispatch.context import format_value
from inspector.dispatch.torch_sdpa import SdpaComparison
from inspector.dispatch.torch_sdpa.watch import WatchTable
from inspector.views._figures import MAX_HEIGHT_IN, key_above, new_figure, style_axes
from inspector.views._palette import NO_ROW_GREY, colour_of, row_colours
from inspector.views._tables import styled
from inspector.views.page import Block, Page, figure, lazy, note, pre, table, trusted_html
from inspector.views.sdpa_tables import sdpa_comparison_table, watch_caption, watch_table

DECISION_COLUMNS = ["row", "priority", "available", "faithful", "verdict", "failing", "chosen", "origin"]
CHOSEN_STYLE = "background-color: rgba(44, 160, 44, 0.25); font-weight: bold"
REJECT_STYLE = "color: #d62728"
SKIP_STYLE = "opacity: 0.6"


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
        styled(frame).apply(row_style, axis=1)
        .format(lambda v: "★" if v else "", subset=["chosen"])
        .set_properties(subset=["row", "verdict", "failing", "origin"], **{"text-align": "left"})
        .set_caption(html.escape(caption))
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


def family_of(winners: Iterable[str]) -> str | None:
    """The registered family whose table holds every one of ``winners`` (the first, by name), if any."""
    wanted = set(winners)
    for name in families():
        try:
            if wanted <= {r.name for r in rows(name)}:
                return name
        except KeyError:  # unregistered meanwhile
            continue
    return None


def what_if_colours(cells: Sequence[WhatIfCell], family: str | None = None) -> dict[str, str]:
    """Each winning row of a grid and its colour: the row's own colour in its family (NOTE [ Stable colours ])."""
    winners = [c.row for c in cells if c.row]
    fixed = row_colours(family or family_of(winners) or "")
    order = {name: i for i, name in enumerate(fixed)}
    ordered = sorted(dict.fromkeys(winners), key=lambda name: (order.get(name, len(order)), name))
    return {name: colour_of(name, fixed) for name in ordered}


def what_if_key_html(cells: Sequence[WhatIfCell], family: str | None = None) -> str:
    """The grid's colour key as HTML (one swatch per winning row), for a page to show above the figure."""
    colours = what_if_colours(cells, family)
    items = [(name, colour) for name, colour in colours.items()]
    if any(c.row is None for c in cells):
        items.append(("no row (error)", NO_ROW_GREY))
    spans = "".join(
        f"<span class='inspector-key-item' data-row='{html.escape(name, quote=True)}' data-colour='{colour}' "
        f"style='margin-right: 1.2em; white-space: nowrap'><span class='inspector-swatch' style='display: "
        f"inline-block; width: 0.9em; height: 0.9em; margin-right: 0.3em; vertical-align: middle; "
        f"background: {colour}'></span>{html.escape(name)}</span>"
        for name, colour in items
    )
    return f"<div class='inspector-key'><small>winning row:</small> {spans}</div>"


def what_if_heatmap(
    cells: Sequence[WhatIfCell], index: Sequence[str] | None = None, title: str = "", *,
    family: str | None = None, key: bool = True,
) -> Figure:
    """The grid as a heatmap, one colour per winning row, the row name written in each cell.

    A row keeps its colour from grid to grid (its family's, see NOTE [ Stable colours ]; the family
    is found from the winners unless given). The columns' axis sits at the top, the key above it
    (``key=False`` leaves the key to the page, which shows it as HTML); the figure fits a notebook.
    """
    pivot = what_if_pivot(cells, index)
    colours = what_if_colours(cells, family)
    n_rows, n_cols = len(pivot.index), max(len(pivot.columns), 1)
    # NOTE [ Figure sizes ]: rows shrink (and their text with them) before the figure outgrows the page.
    header_in = 1.3 + (0.3 if title else 0.0) + (0.3 if key else 0.0)
    row_in = max(0.16, min(0.32, (MAX_HEIGHT_IN - header_in) / max(n_rows, 1)))
    fontsize = 8 if row_in >= 0.28 else 7 if row_in >= 0.21 else 6
    longest = max([len(w) for w in colours] + [1])
    column_in = max(0.8, 0.012 * fontsize * longest + 0.25)
    label_in = 0.6 + 0.07 * max([len(_label(i)) for i in pivot.index] + [1])
    fig = new_figure(label_in + column_in * n_cols, header_in + row_in * n_rows)
    ax = fig.add_subplot()
    rgba = [[to_rgba(colours.get(_winner(pivot.iat[i, j]), NO_ROW_GREY)) for j in range(len(pivot.columns))]
            for i in range(n_rows)]  # fmt: skip
    ax.imshow(rgba, aspect="auto", interpolation="nearest")
    for (i, j), winner in _cells(pivot):
        ax.text(j, i, winner, ha="center", va="center", fontsize=fontsize, color="white")
    column_labels = [_label(c) for c in pivot.columns]
    rotate = max([len(label) for label in column_labels] + [0]) * 0.07 > column_in
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    ax.set_xticks(range(len(pivot.columns)), column_labels, rotation=30 if rotate else 0,
                  ha="left" if rotate else "center", fontsize=fontsize)  # fmt: skip
    ax.set_yticks(range(n_rows), [_label(i) for i in pivot.index], fontsize=fontsize)
    ax.set_xlabel(" / ".join(str(n) for n in (pivot.columns.names or [])), fontsize=9)
    ax.set_ylabel(" / ".join(str(n) for n in (pivot.index.names or [])), fontsize=9)
    if title:
        ax.set_title(title, fontsize=10)
    style_axes(ax)
    if key:
        handles = [Patch(color=colour, label=name) for name, colour in colours.items()]
        if any(c.row is None for c in cells):
            handles.append(Patch(color=NO_ROW_GREY, label="no row (error)"))
        key_above(fig, handles, columns=6)
    return fig


def _winner(value: Any) -> str:
    return value if isinstance(value, str) else "—"


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


# -- the page -------------------------------------------------------------------------------
WHAT_IF_SWEEP_DTYPES = ("float16", "bfloat16", "float32", "float64")


class DispatchSection(StrEnum):
    """The Dispatch page's sections (a family's what-if grid is ``what_if_key(family)``)."""

    DECISION = "decision"
    TRACE = "trace"
    PLAN = "plan"
    WHAT_IF = "what_if"
    COMPARE = "compare"
    WHAT_RAN = "what_ran"
    FAMILIES = "families"


def what_if_key(family: str) -> str:
    """The key of ``family``'s what-if grid on the Dispatch page."""
    return f"{DispatchSection.WHAT_IF}:{family}"


@dataclass(frozen=True)
class DispatchState:
    """What the Dispatch page shows: one family in focus, every family's trace, optional results.

    ``plan`` holds every family's trace under ``selections`` (the focused family's among them);
    ``what_if`` maps a family to its grid; ``what_ran`` is the last ``torch_sdpa.watch()`` block.
    """

    family: str
    context: CallContext
    selections: Mapping[str, Any]
    plan: tuple[Trace, ...]
    what_if: Mapping[str, tuple[WhatIfCell, ...]] = field(default_factory=dict)
    comparison: tuple[RowRun, ...] | None = None
    what_ran: WatchTable | None = None
    decisions: tuple[DecisionCount, ...] | None = None
    sdpa_comparison: SdpaComparison | None = None  # torch_sdpa's "Run and compare": every backend timed

    @property
    def trace(self) -> Trace:
        for item in self.plan:
            if item.family == self.family:
                return item
        raise KeyError(f"No trace of {self.family!r} in this state. Families: {[t.family for t in self.plan]}")

    @cached_property
    def decision(self) -> pd.DataFrame:
        """The focused family's decision table (once per state: NOTE [ Lazy pages ] in ``views/page.py``)."""
        return decision_table(self.trace)


def default_context(family: str) -> CallContext:
    """A float32, 4-D, head_dim 64 context (``attention``: kv_len 128): what the panel opens on."""
    import torch

    extra = {"kv_len": 128} if family == "attention" else {}
    return CallContext(family, dtype=torch.float32, ndim=4, head_dim=64, extra=extra)


def trace_or_failure(family: str, ctx: CallContext) -> Trace:
    """One family's trace; a family that refuses the context (an axis meant for another) says why.

    PyTorch's own family decides in the order PyTorch uses for the call (cuDNN first on some GPUs).
    """
    from inspector.dispatch.torch_sdpa.family import ours, trace_context

    try:
        return trace_context(ctx) if family == torch_sdpa.FAMILY and ours() else trace(family, ctx)
    except ValueError as exc:
        return Trace.failed(family, ctx, exc)


def current_state(
    family: str | None = None, context: CallContext | None = None, selections: Mapping[str, Any] | None = None,
    *, what_if_all: bool = False,
) -> DispatchState:
    """The page's state read from the engine now: every family traced under ``selections``."""
    names = families()
    if not names:
        raise RuntimeError("No operator family is registered; register one, or `import inspector.examples`")
    focus = family or names[0]
    selections = dict(selections or {})
    with op_backend(**selections):
        plan = tuple(
            trace_or_failure(name, context._replace(family=name) if context is not None else default_context(name))
            for name in names
        )
        grids = {name: sweep_what_if(name, default_context(name)) for name in names} if what_if_all else {}
    ctx = context._replace(family=focus) if context is not None else default_context(focus)
    return DispatchState(focus, ctx, selections, plan, grids)


def sweep_what_if(family: str, ctx: CallContext, head_dims: Sequence[int] = (64, 256)) -> tuple[WhatIfCell, ...]:
    """The standard grid: dtype × head_dim × mask × grad; for PyTorch's own family, the axes that
    change its answer (device and GPU × dtype × variations of the call, ``torch_sdpa.what_if_grid``)."""
    import torch

    if family == torch_sdpa.FAMILY:
        return torch_sdpa.what_if_grid(ctx)
    return what_if(family, ctx, dtype=[getattr(torch, name) for name in WHAT_IF_SWEEP_DTYPES],
                   head_dim=list(head_dims), has_mask=[False, True], grad_enabled=[True, False])


def what_if_index(cells: Sequence[WhatIfCell]) -> list[str] | None:
    """The axes a grid's rows show: device and dtype for ``torch_sdpa``'s, dtype and head_dim otherwise."""
    swept = {name for cell in cells[:1] for name, _ in cell.axes}
    for wanted in (("device", "dtype"), ("dtype", "head_dim")):
        index: list[str] = [name for name in wanted if name in swept]
        if index:
            return index
    return None


def what_if_blocks(family: str, cells: Sequence[WhatIfCell]) -> list[Block]:
    """A grid as its key and heatmap, or one line when every cell runs the same row."""
    winners = {cell.row for cell in cells}
    if cells and len(winners) == 1 and None not in winners:
        swept = " × ".join(name for name, _ in cells[0].axes)
        return [note(f"Every one of the {len(cells)} combinations ({swept}) runs {cells[0].row}.")]
    heatmap = what_if_heatmap(cells, index=what_if_index(cells), title=f"{family}: winning row", family=family,
                              key=False)
    return [trusted_html(what_if_key_html(cells, family)), figure(heatmap, f"{family} what-if grid")]


def page(state: DispatchState) -> Page:
    """The Dispatch page: the focused family's decision and trace, the plan, and any results."""
    focus = state.trace
    sections = [
        lazy(DispatchSection.DECISION, "", lambda: [table(style_decision_table(state.decision))], focus),
        lazy(DispatchSection.TRACE, "Trace", lambda: [pre(focus.explain())], focus),
        lazy(DispatchSection.PLAN, "Plan (all families)", lambda: [table(plan_table(state.plan))], state.plan),
    ]
    for family, cells in state.what_if.items():
        title = f"What-if grid: {family}"
        sections.append(lazy(what_if_key(family), title, _what_if_blocks(family, cells), (family, cells)))
    if state.sdpa_comparison is not None:
        timed = state.sdpa_comparison
        sections.append(lazy(DispatchSection.COMPARE, "Run and compare", lambda: _compare_blocks(timed), timed))
    elif state.comparison is not None:
        runs = state.comparison
        sections.append(lazy(DispatchSection.COMPARE, "Run and compare", lambda: [table(comparison_table(runs))], runs))
    if state.what_ran is not None or state.decisions is not None:
        ran = (state.what_ran, state.decisions)
        sections.append(lazy(DispatchSection.WHAT_RAN, "What ran", lambda: _what_ran_blocks(state), ran))
    others = tuple(t for t in state.plan if t.family != state.family)
    if others:
        sections.append(lazy(DispatchSection.FAMILIES, "Every other family", lambda: _families_blocks(others), others))
    return Page("Operator dispatch", tuple(sections))


def _families_blocks(traces: tuple[Trace, ...]) -> list[Block]:
    return [block for t in traces for block in (table(style_decision_table(decision_table(t))), pre(t.explain()))]


def _what_if_blocks(family: str, cells: tuple[WhatIfCell, ...]) -> Any:
    return lambda: what_if_blocks(family, cells)


def _compare_blocks(comparison: SdpaComparison) -> list[Block]:
    notes = [note(text) for text in (comparison.summary(), *comparison.notes)]
    return [*notes, table(sdpa_comparison_table(comparison), f"torch_sdpa.compare: {comparison.call}")]


def _what_ran_blocks(state: DispatchState) -> list[Block]:
    blocks = []
    if state.what_ran is not None:
        ran = state.what_ran
        if ran.groups:
            blocks.append(table(watch_table(ran), f"Last torch_sdpa.watch() block: {watch_caption(ran)}"))
        else:
            blocks.append(note(ran.why_nothing))
    if state.decisions is not None:
        blocks.append(table(decision_counts_table(state.decisions), "record_decisions()"))
    return blocks
