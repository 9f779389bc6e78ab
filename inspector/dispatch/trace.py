"""Traces: every row's verdict and every clause's required vs actual value, plus the decision.

The decision inside a trace comes from ``decide`` (the same procedure ``resolve`` runs), and the
row verdicts come from the same clause expressions the compiled chain uses, so a trace cannot
disagree with what runs. ``explain`` renders a trace as text; it never raises for selection
errors, it reports them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from inspector.dispatch.errors import ExplicitSelectionError, NoImplementationError, UnknownImplementationError
from inspector.dispatch.overrides import get_override
from inspector.dispatch.plan import FamilyPlan, adhoc_record
from inspector.dispatch.registry import plan_for, seeded
from inspector.dispatch.resolution import decide_in
from inspector.dispatch.selection import PROFILE

if TYPE_CHECKING:
    from inspector.dispatch.clauses import ClauseCheck
    from inspector.dispatch.context import CallContext
    from inspector.dispatch.records import ImplRecord

MATCH, REJECT, UNAVAILABLE, UNFAITHFUL = "MATCH", "reject", "SKIP unavailable", "SKIP not faithful"
SELECTION_ERRORS = (ExplicitSelectionError, UnknownImplementationError, NoImplementationError)


@dataclass(frozen=True)
class RowTrace:
    """One row of the decision table evaluated against one context."""

    name: str
    priority: int | None
    available: bool
    faithful: bool
    verdict: str
    checks: tuple[ClauseCheck, ...]
    chosen: bool
    is_fallback: bool
    selected: bool
    description: str

    @property
    def matched(self) -> bool:
        return all(check.passed for check in self.checks)

    @property
    def failing(self) -> tuple[ClauseCheck, ...]:
        return tuple(check for check in self.checks if not check.passed)


@dataclass(frozen=True)
class Trace:
    """A whole decision: the context, each row, the selection in force and the outcome."""

    family: str
    context: CallContext
    rows: tuple[RowTrace, ...]
    chosen: str | None
    origin: str | None
    error: str | None
    error_type: str | None
    selection: str | None
    selection_tier: str | None
    profile: str | None
    notes: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return self.error is None

    @classmethod
    def failed(cls, family: str, ctx: CallContext, exc: BaseException) -> Trace:
        """A trace that could not be made (the context itself was refused), carrying why."""
        return cls(
            family, ctx, (), None, None, f"{type(exc).__name__}: {exc}", type(exc).__name__, None, None, None, ()
        )

    def row(self, name: str) -> RowTrace:
        for row in self.rows:
            if row.name == name:
                return row
        raise KeyError(f"No row {name!r} in this trace. Rows: {[r.name for r in self.rows]}")

    def explain(self) -> str:
        """One line per row (its verdict and why), then ``=> row (origin=...)`` or the error."""
        lines = [f"[{self.family}] {self.context.describe()}"]
        if self.selection is not None:
            lines.append(f"  selection: {self.selection} ({self.selection_tier})")
        elif self.profile is not None:
            lines.append(f"  profile: {self.profile}")
        lines += [f"  {row.name}: {self.row_verdict(row)}" for row in self.rows]
        lines += [f"  note: {note}" for note in self.notes]
        if self.error is not None:
            lines.append("  => ERROR: " + self.error.replace("\n", "\n     "))
        else:
            lines.append(f"  => {self.chosen} (origin={self.origin})")
        return "\n".join(lines)

    def row_verdict(self, row: RowTrace) -> str:
        """A row's verdict in words, with the reasons for rejecting or skipping it."""
        reasons = "; ".join(str(c) for c in row.failing)
        if row.verdict == REJECT:
            return f"reject ({reasons})"
        if row.verdict == MATCH:
            if not row.chosen and self.chosen is not None and self._below_chosen(row):
                return f"matches, lower priority than {self.chosen}"
            return f"MATCH ({_passed(row.checks)})"
        why = "explicit-only" if row.verdict == UNFAITHFUL else "not on this machine"
        also = f"; would also reject: {reasons}" if reasons else ""
        return f"{row.verdict} ({why}{also})"

    def _below_chosen(self, row: RowTrace) -> bool:
        names = [r.name for r in self.rows]
        return self.chosen in names and names.index(row.name) > names.index(self.chosen)

    def __repr__(self) -> str:
        outcome = f"ERROR ({self.error_type})" if self.error is not None else f"{self.chosen} (origin={self.origin})"
        return f"<Trace {self.family}: {outcome}; {len(self.rows)} rows; .explain() for every verdict>"

    def _repr_html_(self) -> str:
        from inspector.dispatch.display import trace_html

        return trace_html(self)


def _passed(checks: tuple[ClauseCheck, ...]) -> str:
    if len(checks) > 4:
        return f"all {len(checks)} checks pass"
    return ", ".join(c.clause for c in checks)


def _handle_text(handle: Any) -> str:
    return repr(handle) if isinstance(handle, str) else f"<{type(handle).__name__} object>"


def trace(family: str, ctx: CallContext, explicit: Any = None) -> Trace:
    """Evaluate every clause of every row for ``ctx`` and record the decision ``resolve`` makes."""
    return trace_in(plan_for(family), ctx, explicit)


def trace_in(plan: FamilyPlan, ctx: CallContext, explicit: Any = None) -> Trace:
    """``trace`` over a given compiled table (see ``decide_in``)."""
    family = plan.name
    ctx = plan.complete(ctx)
    selection = seeded()
    handle, tier = explicit, "explicit"
    if handle is None:
        handle, tier = get_override(family), "context"
    if handle is None:
        handle, tier = selection.get(family), "env"
    chosen: ImplRecord | None = None
    origin = error = error_type = None
    try:
        resolution = decide_in(plan, ctx, explicit)
        chosen, origin = resolution.record, resolution.origin
    except SELECTION_ERRORS as exc:
        error, error_type = str(exc), type(exc).__name__

    selected_record = plan.lookup(handle) if handle is not None else None
    records = list(plan.rows)
    if not any(r is plan.fallback for r in records):
        records.append(plan.fallback)
    if handle is not None and selected_record is None and not isinstance(handle, str):
        known = chosen is not None and any(r is chosen for r in records)
        selected_record = chosen if chosen is not None and not known else adhoc_record(family, handle)
        records.append(selected_record)

    in_table = {id(r) for r in plan.rows}
    rows = tuple(
        _row_trace(
            record,
            plan.is_available(record),
            ctx,
            record is chosen,
            record is plan.fallback,
            record is selected_record,
            id(record) in in_table,
        )
        for record in records
    )
    notes = []
    if tier == "env" and handle is not None and origin != "env":
        notes.append(f"process selection {family}={handle!r} could not be used here; the chain decided")
    profile = selection.get(PROFILE)
    return Trace(
        family,
        ctx,
        rows,
        chosen.name if chosen else None,
        origin,
        error,
        error_type,
        _handle_text(handle) if handle is not None else None,
        tier if handle is not None else None,
        profile,
        tuple(notes),
    )


def _row_trace(
    record: ImplRecord,
    available: bool,
    ctx: CallContext,
    chosen: bool,
    is_fallback: bool,
    selected: bool,
    in_table: bool,
) -> RowTrace:
    checks = record.spec.check(ctx)
    if not available:
        verdict = UNAVAILABLE
    elif not record.faithful:
        verdict = UNFAITHFUL
    else:
        verdict = MATCH if all(c.passed for c in checks) else REJECT
    return RowTrace(
        record.name,
        record.priority if in_table or is_fallback else None,
        available,
        record.faithful,
        verdict,
        checks,
        chosen,
        is_fallback,
        selected,
        record.description,
    )


def explain(family: str, ctx: CallContext, explicit: Any = None) -> str:
    """The decision as text: one line per row (MATCH / reject / SKIP), then ``=> row (origin=...)``."""
    return trace(family, ctx, explicit).explain()


class PlanTrace(tuple[Trace, ...]):
    """Traces of several families decided under the same selections (``trace_plan``)."""

    def explain(self) -> str:
        return "\n".join(t.explain() for t in self)

    def __repr__(self) -> str:
        decided = ", ".join(f"{t.family}={t.chosen if t.ok else 'ERROR'}" for t in self)
        return f"<PlanTrace: {decided}>"

    def _repr_html_(self) -> str:
        return "".join(t._repr_html_() for t in self)


def trace_plan(contexts: Mapping[str, CallContext]) -> PlanTrace:
    """Traces for several families under the same selections."""
    return PlanTrace(trace(family, ctx) for family, ctx in contexts.items())


def explain_plan(contexts: Mapping[str, CallContext]) -> str:
    return trace_plan(contexts).explain()
