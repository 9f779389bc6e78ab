"""Dispatch views: decision tables, plans, what-if grids and row comparisons as DataFrames/Figures."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import TYPE_CHECKING, Any

import pandas as pd

from inspector.dispatch import (
    CallContext,
    DecisionCount,
    RowRun,
    Trace,
    WhatIfCell,
    families,
    op_backend,
    torch_sdpa,
    trace,
    what_if,
)
from inspector.views._tables import styled
from inspector.views.dispatch_what_if import (  # noqa: F401  (the what-if views, importable from here too)
    family_of,
    what_if_colours,
    what_if_heatmap,
    what_if_key_html,
    what_if_pivot,
    what_if_table,
)
from inspector.views.page import Block, Page, figure, lazy, note, pre, table, trusted_html
from inspector.views.sdpa_tables import sdpa_comparison_table, watch_caption, watch_table

if TYPE_CHECKING:
    from pandas.io.formats.style import Styler

    from inspector.dispatch.torch_sdpa import SdpaComparison
    from inspector.dispatch.torch_sdpa.watch import WatchTable

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
        family=trace.family,
        context=trace.context.describe(),
        chosen=trace.chosen,
        origin=trace.origin,
        error=trace.error,
        selection=trace.selection,
        selection_tier=trace.selection_tier,
    )
    return frame


def clause_table(trace: Trace) -> pd.DataFrame:
    """Every clause of every row: row, clause, axis, required, actual, passed (long form)."""
    records = [
        {
            "row": row.name,
            "clause": c.clause,
            "axis": c.axis,
            "required": c.required,
            "actual": c.actual,
            "passed": c.passed,
        }
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
        styled(frame)
        .apply(row_style, axis=1)
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
        columns=[
            "row",
            "status",
            "faithful",
            "max_abs_error",
            "max_rel_error",
            "within_tolerance",
            "tolerance",
            "median_ms",
            "detail",
        ],
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
    family: str | None = None,
    context: CallContext | None = None,
    selections: Mapping[str, Any] | None = None,
    *,
    what_if_all: bool = False,
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
    return what_if(
        family,
        ctx,
        dtype=[getattr(torch, name) for name in WHAT_IF_SWEEP_DTYPES],
        head_dim=list(head_dims),
        has_mask=[False, True],
        grad_enabled=[True, False],
    )


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
    heatmap = what_if_heatmap(
        cells, index=what_if_index(cells), title=f"{family}: winning row", family=family, key=False
    )
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
