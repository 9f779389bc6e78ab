"""DispatchPanel: edit a call context, toggle rows per family, and watch the decision table change.

Toggles scope the panel's own rendering with ``op_backend``; widget callbacks may run on a
kernel thread other than the cells', so the panel never leaves a ``ContextVar`` set for the
user. To use the selection in code: ``with panel.selection(): ...`` for a block, or
``panel.apply_process_wide()`` (``set_op``) for the whole process.
"""

from __future__ import annotations

import html
import os
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from inspector.dispatch import (
    ENV_VAR,
    CallContext,
    Trace,
    families,
    op_backend,
    process_selection,
    reload_env,
    rows,
    set_op,
)
from inspector.dispatch.registry import is_steered
from inspector.dispatch.selection import steered_hint
from inspector.dispatch.torch_sdpa import FAMILY as TORCH_SDPA
from inspector.dispatch.torch_sdpa import ensure_registered
from inspector.panels._base import PANEL_CLASS, PANEL_CSS, Panel
from inspector.panels._guard import ErrorLine, StaleMark
from inspector.panels._sections import Sections
from inspector.panels.context_editor import ContextEditor
from inspector.panels.dispatch_actions import DispatchActions
from inspector.panels.dispatch_feedback import env_problems, env_problems_html, refusal_html, toggle_marks
from inspector.views.dispatch import (
    DispatchSection,
    DispatchState,
    default_context,
    trace_or_failure,
    what_if_key,
)
from inspector.views.dispatch_axes import FamilyAxes, family_axes

if TYPE_CHECKING:
    import pandas as pd

    from inspector.views.page import Page

AUTO = "auto"
PROFILE_OPTIONS = {"none": None, "reference": "reference"}


class DispatchPanel(DispatchActions, Panel[DispatchState]):
    """Decision tables for every registered op family, live."""

    part = "dispatch"

    def __init__(self, family: str | None = None, context: CallContext | None = None) -> None:
        super().__init__()
        ensure_registered()  # PyTorch's own SDPA family is always there
        names = list(families())  # never empty: torch_sdpa is registered above
        self.family = widgets.Dropdown(
            options=names,
            value=family or names[0],
            description="family",
            layout=widgets.Layout(width="220px"),
            tooltip="The op family whose decision table is shown",
        )
        self.editor = ContextEditor(self.guard(self.refresh))
        self.editor.set_axes(self._axes(self.family.value))
        self.toggles = {name: self._toggle(name) for name in names}
        self.refusals = {name: widgets.HTML(layout=widgets.Layout(width="auto", flex="1 1 auto")) for name in names}
        self.snippet = widgets.HTML()
        apply_button = widgets.Button(
            description="Use process-wide (set_op)",
            icon="globe",
            layout=widgets.Layout(width="auto"),
            tooltip="Make the toggles' selection process-wide with set_op (soft)",
        )
        clear_button = widgets.Button(
            description="Clear process-wide",
            icon="eraser",
            layout=widgets.Layout(width="auto"),
            tooltip="Clear every family's process-wide selection",
        )
        apply_button.on_click(self.guard(lambda _b: self.apply_process_wide()))
        clear_button.on_click(self.guard(lambda _b: self.clear_process_wide()))
        self._env_applied = os.environ.get(ENV_VAR, "")  # what the process tier was last read from
        self.env_text = widgets.Text(
            value=self._env_applied,
            description=ENV_VAR,
            placeholder="attention=sdpa,profile=reference",
            tooltip="family=row pairs, comma-separated, and profile=reference",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="420px"),
        )
        env_button = widgets.Button(
            description="Apply and reload_env()",
            icon="refresh",
            layout=widgets.Layout(width="auto"),
            tooltip=f"Set {ENV_VAR} in this process and re-read it (replaces set_op edits)",
        )
        self.env_errors = ErrorLine("env")
        env_button.on_click(self.guard_into(self.env_errors, lambda _b: self.apply_env(self.env_text.value)))
        self.profile = widgets.Dropdown(
            options=list(PROFILE_OPTIONS),
            value="none",
            description="profile",
            layout=widgets.Layout(width="190px"),
            tooltip="profile=reference: every family without a selection uses its reference row",
        )
        self.profile.observe(
            self.guard_into(self.env_errors, lambda _c: self.set_profile(PROFILE_OPTIONS[self.profile.value])),
            names="value",
        )
        self.env_problems = widgets.HTML()
        self.env_box = widgets.VBox(
            [widgets.HBox([self.env_text, env_button, self.profile]), self.env_problems, self.env_errors.widget]
        )
        self.env_box.add_class("inspector-env-box")
        self.process_label = widgets.HTML()
        self.table_out = widgets.Output()
        self.trace_html = widgets.HTML()
        self.plan_out = widgets.Output()
        details = Sections(
            zip(
                ("Trace", "Plan (all families)", "What-if grid", "Run and compare", "What ran"),
                [self.trace_html, self.plan_out, *self._action_boxes()],
                strict=True,
            )
        )
        self.results = StaleMark(self.table_out, details.widget)
        self.family.observe(self.guard(lambda _c: self._family_changed()), names="value")
        toggle_rows = [
            widgets.HBox([widgets.Label(f"{name}:", layout=widgets.Layout(width="100px")), toggle, self.refusals[name]])
            for name, toggle in self.toggles.items()
        ]
        self.widget = widgets.VBox(
            [
                widgets.HTML(PANEL_CSS + "<b>Operator dispatch</b>: which implementation runs, and why"),
                widgets.HBox([self.family]),
                self.editor.widget,
                *toggle_rows,
                widgets.HBox([apply_button, clear_button, self.snippet]),
                self.env_box,
                self.process_label,
                self.status,
                self.errors.widget,
                self.results.widget,
            ]
        )
        self.widget.add_class("inspector-dispatch-panel")
        self.widget.add_class(PANEL_CLASS)
        self.last_trace: Trace | None = None
        self.last_table: pd.DataFrame | None = None
        self.last_what_if: Any = None
        self.last_what_ran: pd.DataFrame | None = None
        self._plan: tuple[Trace, ...] = ()
        self._what_if: tuple[str, tuple[Any, ...]] | None = None
        self._runs: tuple[Any, ...] | None = None
        self._sdpa_runs: Any = None
        self._what_ran: Any = None
        self._decisions: tuple[Any, ...] | None = None
        if context is not None:
            self.editor.load(context)
        self.refresh()

    @staticmethod
    def _axes(family: str) -> FamilyAxes:
        return family_axes(family, dict(default_context(family).extra))

    def _family_changed(self) -> None:
        """Shape the editor for the family's own axes, then redraw."""
        self.editor._holding = True
        try:
            self.editor.set_axes(self._axes(self.family.value))
        finally:
            self.editor._holding = False
        self.refresh()

    def _toggle(self, family: str) -> widgets.ToggleButtons:
        toggle = widgets.ToggleButtons(
            options=[AUTO, *[r.name for r in rows(family)]],
            value=AUTO,
            tooltip=f"Force a row of {family} for the panel's decisions (op_backend); "
            "a marked row cannot serve the context",
            style={"button_width": "auto"},
            layout=widgets.Layout(width="auto", flex="0 0 auto"),
        )
        toggle.add_class(f"inspector-toggle-{family}")
        toggle.observe(self.guard(lambda _c: self.refresh()), names="value")
        return toggle

    # -- what the user carries into code --------------------------------------------------
    @property
    def selected(self) -> dict[str, str]:
        """The rows picked with the toggles (families left on "auto" are absent)."""
        return {family: t.value for family, t in self.toggles.items() if t.value != AUTO}

    def selection(self) -> op_backend:
        """``with panel.selection(): ...`` runs a block under the toggles' selection."""
        return op_backend(**self.selected)

    def select(self, family: str, row: str | None) -> None:
        """Set a family's toggle (``None`` for auto), as a click would."""
        if family not in self.toggles:
            raise KeyError(f"No toggle for {family!r}. Families: {list(self.toggles)}")
        self.toggles[family].value = AUTO if row is None else row

    def apply_process_wide(self) -> None:
        """Make the toggles' selection process-wide with ``set_op`` (soft: falls through when incapable).

        A steered family (``torch_sdpa``) takes no process-wide selection; its toggle keeps acting
        in ``panel.selection()`` blocks, and the panel says so.
        """
        skipped = []
        for family, toggle in self.toggles.items():
            if is_steered(family):
                if toggle.value != AUTO:
                    skipped.append(family)
                continue
            set_op(family, None if toggle.value == AUTO else toggle.value)
        self.refresh()
        if skipped:
            self.set_status(f"set_op left out {', '.join(skipped)}: {steered_hint(skipped[0])}")

    def clear_process_wide(self) -> None:
        for family in self.toggles:
            set_op(family, None)
        self.refresh()

    def apply_env(self, text: str) -> None:
        """Set ``INSPECTOR_OPS`` in this process and re-read it (replaces ``set_op`` edits)."""
        os.environ[ENV_VAR] = text
        self._env_applied = text
        reload_env()
        profile = process_selection().get("profile")
        self.profile.value = "reference" if profile == "reference" else "none"
        self.refresh()

    def set_profile(self, profile: str | None) -> None:
        set_op("profile", profile)
        self.refresh()

    # -- rendering ------------------------------------------------------------------------
    @property
    def context(self) -> CallContext:
        return self.editor.context(self.family.value)

    def refresh(self) -> None:
        """Re-trace every family under the toggles and redraw the page.

        A context that cannot be read is explained in the editor, and what it invalidates (the
        decision, the trace, the grids) is marked stale until it is fixed.
        """
        try:
            ctx = self.context
        except ValueError as exc:
            self.editor.errors.show(exc)
            self.results.mark("the decision below is for the last context that could be read; fix the context above")
            self.set_status(f"{self.family.value}: the context cannot be read (see above)")
            return
        self.editor.errors.clear()
        self.results.clear()
        with self.selection():
            self._plan = tuple(trace_or_failure(name, ctx._replace(family=name)) for name in self.toggles)
        # A family that refuses the context as a whole (an axis it does not know) is said once, under the
        # fields where the context was typed: not again beside its toggles, in the status line or the trace.
        refusing = [t for t in self._plan if not t.rows and t.error]
        if refusing:
            self.editor.errors.show_text(
                "; ".join(
                    (t.error or "").splitlines()[0]
                    if t.family == self.family.value
                    else f"{t.family}: {(t.error or '').splitlines()[0]}"
                    for t in refusing
                )
            )
        if any(t.family == self.family.value for t in refusing):
            self._mark_toggles()
            self.results.mark(
                f"the decision below is for the last context {self.family.value} could use; fix the context above"
            )
            self.set_status(f"{self.family.value}: the context cannot be used (see above)")
            return
        self._render()
        self._mark_toggles()
        self.env_problems.value = env_problems_html(env_problems(self._env_applied, self._plan))
        snippet = ", ".join(f"{k}={v!r}" for k, v in self.selected.items())
        self.snippet.value = f"<code>with op_backend({html.escape(snippet)}):</code>" if snippet else ""
        current = dict(process_selection())
        self.process_label.value = f"<small>process selection (set_op / {ENV_VAR}): {html.escape(str(current))}</small>"
        t = self.last_trace
        assert t is not None
        if t.ok:
            self.set_status(f"{t.family}: {t.chosen} (origin={t.origin})")
        else:
            self.set_status(f"{t.family}: ERROR: {(t.error or '').splitlines()[0]}")

    def _mark_toggles(self) -> None:
        """Mark, on each toggle, the rows that cannot serve the context, with the refusal beside it."""
        for item in self._plan:  # one trace per toggle (refresh traces the toggles' families)
            toggle = self.toggles[item.family]
            icons, tips = toggle_marks(item, list(toggle.options))
            if list(toggle.icons) != icons:
                toggle.icons = icons
            if list(toggle.tooltips) != tips:
                toggle.tooltips = tips
            selected = None if toggle.value == AUTO else toggle.value
            whole = not item.rows and item.error  # the family refused the context: said under the fields
            self.refusals[item.family].value = "" if whole else refusal_html(item, selected)

    def state(self) -> DispatchState:
        """What this panel shows now, as the page's state (the report takes it as it is)."""
        family = self.family.value
        what_if_cells = {family: self._what_if[1]} if self._what_if and self._what_if[0] == family else {}
        sdpa_runs = self._sdpa_runs if family == TORCH_SDPA else None
        return DispatchState(
            family,
            self.context,
            dict(self.selected),
            self._plan,
            what_if_cells,
            self._runs if sdpa_runs is None else None,
            self._what_ran,
            self._decisions,
            sdpa_runs,
        )

    def _render(self) -> Page:
        """Show the page of one state (built once); only the sections whose inputs changed redraw."""
        state = self.state()
        current = self.page(state)
        self.last_trace = state.trace
        self.last_table = state.decision
        self.show(self.table_out, current, DispatchSection.DECISION)
        self.show(self.trace_html, current, DispatchSection.TRACE)
        self.show(self.plan_out, current, DispatchSection.PLAN)
        for key, out in (
            (what_if_key(state.family), self.what_if_out),
            (DispatchSection.COMPARE, self.compare_out),
            (DispatchSection.WHAT_RAN, self.ran_out),
        ):
            if key in current:
                self.show(out, current, key)
        return current
