"""What the Dispatch panel says beside its controls: refusals on the row toggles, and selection problems.

A row that cannot serve the current context gets a mark on its own toggle button (an icon, and
its verdict as the button's tooltip) and a short refusal beside the toggle. ``INSPECTOR_OPS``
problems, which the engine only logs (once), are listed beside the variable's text field.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

from inspector.dispatch import ENV_VAR, RowTrace, Trace, families, parse_selections, rows
from inspector.dispatch.registry import is_steered
from inspector.dispatch.selection import PROFILE, PROFILES, steered_hint

REFUSED_ICON = "ban"
AUTO_TOOLTIP = "Let the decision table pick the row (the chain)"


def cannot_serve(row: RowTrace) -> bool:
    """Whether ``row`` would refuse the context if selected (not on this machine, or a clause fails)."""
    return not row.available or bool(row.failing)


def refusal(row: RowTrace) -> str:
    """Why ``row`` cannot serve the context, in a few words (its first failing clause)."""
    if not row.available:
        return "not on this machine"
    reason = str(row.failing[0])
    return reason + (f" (+{len(row.failing) - 1} more)" if len(row.failing) > 1 else "")


def toggle_marks(trace: Trace, options: Sequence[str]) -> tuple[list[str], list[str]]:
    """Icons and tooltips for a toggle's buttons (``options``: "auto", then row names)."""
    by_name = {row.name: row for row in trace.rows}
    icons, tips = [], []
    for name in options:
        row = by_name.get(name)
        if row is None:
            icons.append("")
            tips.append(AUTO_TOOLTIP if name == options[0] else f"Select {name} for this family")
            continue
        icons.append(REFUSED_ICON if cannot_serve(row) else "")
        tips.append(f"{name}: {trace.row_verdict(row)}")
    return icons, tips


def refusal_html(trace: Trace, selected: str | None) -> str:
    """The text beside a family's toggle: the selected row's refusal first, then every row that cannot serve."""
    parts = []
    if selected is not None and trace.error:
        parts.append(f"<b>✗ {html.escape(selected)} refused</b>: {html.escape(trace.error.splitlines()[0])}")
    elif not trace.rows and trace.error:
        parts.append(f"<b>✗</b> {html.escape(trace.error.splitlines()[0])}")
    parts += [
        f"✗ {html.escape(row.name)}: {html.escape(refusal(row))}"
        for row in trace.rows
        if cannot_serve(row) and row.name != selected
    ]
    if not parts:
        return ""
    return f'<span class="inspector-row-refusal">{" · ".join(parts)}</span>'


def env_problems(text: str, traces: Iterable[Trace] = ()) -> list[str]:
    """Every problem with an ``INSPECTOR_OPS`` value, and the notes of ``traces`` whose process selection
    could not be used: what the engine only writes to the log."""
    entries, problems = parse_selections(text)
    found = list(problems)
    known = families()
    for key, value in entries.items():
        if key == PROFILE:
            if value not in PROFILES:
                found.append(f"{ENV_VAR}: unknown profile {value!r}; profiles: {list(PROFILES)}")
        elif key not in known:
            found.append(f"{ENV_VAR}: unknown operator family {key!r} (families: {list(known)})")
        elif is_steered(key):
            found.append(f"{ENV_VAR}: {key}={value!r} is ignored: {steered_hint(key)}")
        elif value not in (names := [r.name for r in rows(key)]):
            found.append(f"{ENV_VAR}: {key}={value!r} is not a row of {key} (rows: {names}); it is ignored")
    found += [f"{t.family}: {note}" for t in traces for note in t.notes]
    return found


def env_problems_html(problems: Sequence[str]) -> str:
    if not problems:
        return ""
    items = "".join(f"<li>{html.escape(p)}</li>" for p in problems)
    return (
        f'<div class="inspector-error-box inspector-env-problems"><b>{ENV_VAR} is not used as written</b>'
        f"<ul>{items}</ul></div>"
    )
