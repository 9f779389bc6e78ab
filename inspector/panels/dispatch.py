"""DispatchPanel: edit a call context, toggle rows per family, and watch the decision table change.

Toggles scope the panel's own rendering with ``op_backend``; widget callbacks may run on a
kernel thread other than the cells', so the panel never leaves a ``ContextVar`` set for the
user. To use the selection in code: ``with panel.selection(): ...`` for a block, or
``panel.apply_process_wide()`` (``set_op``) for the whole process.
"""

from __future__ import annotations

import html
import os
from typing import Any

import ipywidgets as widgets
import pandas as pd

from inspector.dispatch import (
    ENV_VAR,
    CallContext,
    Trace,
    families,
    op_backend,
    process_selection,
    reload_env,
    rows,
    run_rows,
    set_op,
    trace,
    what_if,
)
from inspector.dispatch.torch_sdpa import ensure_registered
from inspector.panels._base import PANEL_CSS, Panel
from inspector.panels._render import RawHTML, pre, render_into
from inspector.panels.context_editor import DTYPES, ContextEditor
from inspector.views._figures import figure_to_html
from inspector.views.dispatch import (
    comparison_table,
    decision_counts_table,
    decision_table,
    plan_table,
    style_decision_table,
    watch_table,
    what_if_heatmap,
)

AUTO = "auto"
PROFILE_OPTIONS = {"none": None, "reference": "reference"}


class DispatchPanel(Panel):
    """Decision tables for every registered op family, live."""

    title = "Dispatch"

    def __init__(self, family: str | None = None, context: CallContext | None = None) -> None:
        super().__init__()
        ensure_registered()  # PyTorch's own SDPA family is always there
        names = list(families())
        if not names:
            raise RuntimeError(
                "No operator family is registered; register one, or `import inspector.examples` for the demos"
            )
        self.family = widgets.Dropdown(options=names, value=family or names[0], description="family",
                                       layout=widgets.Layout(width="220px"))
        self.editor = ContextEditor(self.guard(self.refresh))
        self.toggles = {name: self._toggle(name) for name in names}
        self.snippet = widgets.HTML()
        apply_button = widgets.Button(description="Use process-wide (set_op)", icon="globe",
                                      layout=widgets.Layout(width="230px"))
        clear_button = widgets.Button(description="Clear process-wide", icon="eraser",
                                      layout=widgets.Layout(width="170px"))
        apply_button.on_click(self.guard(lambda _b: self.apply_process_wide()))
        clear_button.on_click(self.guard(lambda _b: self.clear_process_wide()))
        self.env_text = widgets.Text(value=os.environ.get(ENV_VAR, ""), description=ENV_VAR,
                                     placeholder="attention=sdpa,profile=reference",
                                     style={"description_width": "initial"}, layout=widgets.Layout(width="420px"))
        env_button = widgets.Button(description="Apply and reload_env()", icon="refresh",
                                    layout=widgets.Layout(width="200px"))
        env_button.on_click(self.guard(lambda _b: self.apply_env(self.env_text.value)))
        self.profile = widgets.Dropdown(options=list(PROFILE_OPTIONS), value="none", description="profile",
                                        layout=widgets.Layout(width="190px"))
        self.profile.observe(self.guard(lambda _c: self.set_profile(PROFILE_OPTIONS[self.profile.value])),
                             names="value")
        self.process_label = widgets.HTML()
        self.table_out = widgets.Output()
        self.trace_html = widgets.HTML()
        self.plan_out = widgets.Output()
        self.what_if_out = widgets.Output()
        self.compare_out = widgets.Output()
        self.ran_out = widgets.Output()
        ran_button = widgets.Button(description="Show what ran", icon="history", layout=widgets.Layout(width="160px"),
                                    tooltip="The calls of the last `with torch_sdpa.watch():` block, and decisions "
                                            "of any running record_decisions()")
        ran_button.on_click(self.guard(lambda _b: self.show_what_ran()))
        what_if_button = widgets.Button(description="Draw what-if grid", icon="th")
        what_if_button.on_click(self.guard(lambda _b: self.draw_what_if()))
        compare_button = widgets.Button(description="Run and compare rows", icon="play")
        compare_button.on_click(self.guard(lambda _b: self.run_and_compare()))
        details = widgets.Accordion(children=[
            self.trace_html,
            self.plan_out,
            widgets.VBox([what_if_button, self.what_if_out]),
            widgets.VBox([compare_button, self.compare_out]),
            widgets.VBox([ran_button, self.ran_out]),
        ])
        details.titles = ("Trace", "Plan (all families)", "What-if grid", "Run and compare", "What ran")
        details.selected_index = 0
        self.family.observe(self.guard(lambda _c: self.refresh()), names="value")
        toggle_rows = [widgets.HBox([widgets.Label(f"{name}:", layout=widgets.Layout(width="80px")), toggle])
                       for name, toggle in self.toggles.items()]
        self.widget = widgets.VBox([
            widgets.HTML(PANEL_CSS + "<b>Operator dispatch</b>: which implementation runs, and why"),
            widgets.HBox([self.family]),
            self.editor.widget,
            *toggle_rows,
            widgets.HBox([apply_button, clear_button, self.snippet]),
            widgets.HBox([self.env_text, env_button, self.profile]),
            self.process_label,
            self.status,
            self.errors.widget,
            self.table_out,
            details,
        ])
        self.widget.add_class("inspector-dispatch-panel")
        self.last_trace: Trace | None = None
        self.last_table: pd.DataFrame | None = None
        self.last_what_if: Any = None
        self.last_what_ran: pd.DataFrame | None = None
        if context is not None:
            self.editor.load(context)
        self.refresh()

    def _toggle(self, family: str) -> widgets.ToggleButtons:
        toggle = widgets.ToggleButtons(options=[AUTO, *[r.name for r in rows(family)]], value=AUTO,
                                       style={"button_width": "86px"})
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
        """Make the toggles' selection process-wide with ``set_op`` (soft: falls through when incapable)."""
        for family, toggle in self.toggles.items():
            set_op(family, None if toggle.value == AUTO else toggle.value)
        self.refresh()

    def clear_process_wide(self) -> None:
        for family in self.toggles:
            set_op(family, None)
        self.refresh()

    def apply_env(self, text: str) -> None:
        """Set ``INSPECTOR_OPS`` in this process and re-read it (replaces ``set_op`` edits)."""
        os.environ[ENV_VAR] = text
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
        """Re-trace the current family under the toggles and redraw table, trace and plan."""
        ctx = self.context
        with self.selection():
            self.last_trace = trace(self.family.value, ctx)
            plan = [self._trace_or_failure(name, ctx._replace(family=name)) for name in self.toggles]
        self.last_table = decision_table(self.last_trace)
        render_into(self.table_out, style_decision_table(self.last_table))
        self.trace_html.value = pre(self.last_trace.explain())
        render_into(self.plan_out, plan_table(plan))
        snippet = ", ".join(f"{k}={v!r}" for k, v in self.selected.items())
        self.snippet.value = f"<code>with op_backend({html.escape(snippet)}):</code>" if snippet else ""
        current = dict(process_selection())
        self.process_label.value = f"<small>process selection (set_op / {ENV_VAR}): {html.escape(str(current))}</small>"
        t = self.last_trace
        if t.ok:
            self.set_status(f"{t.family}: {t.chosen} (origin={t.origin})")
        else:
            self.set_status(f"{t.family}: ERROR: {(t.error or '').splitlines()[0]}")

    @staticmethod
    def _trace_or_failure(family: str, ctx: CallContext) -> Trace:
        """One family's trace for the plan; a family that refuses the shared context says why."""
        try:
            return trace(family, ctx)
        except ValueError as exc:  # e.g. an extra axis meant for another family
            return Trace.failed(family, ctx, exc)

    def show_what_ran(self) -> pd.DataFrame | None:
        """What ran: the last ``torch_sdpa.watch()`` block, and decisions of running recorders."""
        from inspector.dispatch.recorder import ACTIVE
        from inspector.dispatch.torch_sdpa import last_watch

        calls = last_watch()
        frame = watch_table(calls.table()) if calls is not None else None
        self.last_what_ran = frame
        parts: list[Any] = []
        if frame is None:
            parts.append(RawHTML("<i>No watched block yet: run <code>with torch_sdpa.watch() as calls: "
                                 "model(x)</code>, then press the button again.</i>"))
        else:
            parts += [RawHTML(f"<b>Last watch(): {len(calls or ())} SDPA call(s)</b>"),
                      RawHTML(frame.to_html(index=False))]  # in full: the reasons are the point
        for recorder in tuple(ACTIVE):
            parts += [RawHTML(f"<b>record_decisions(): {recorder.total} decision(s)</b>"),
                      RawHTML(decision_counts_table(recorder.counts()).to_html(index=False))]
        render_into(self.ran_out, *parts)
        return frame

    def draw_what_if(self, **sweep: Any) -> Any:
        """Heatmap of the winning row over dtype × head_dim × mask × grad (or the axes given)."""
        sweep = sweep or {
            "dtype": list(DTYPES.values()),
            "head_dim": sorted({64, 128, 256, 512, self.editor.head_dim.value}),
            "has_mask": [False, True],
            "grad_enabled": [True, False],
        }
        with self.selection():
            cells = what_if(self.family.value, self.context, **sweep)
        index = [name for name in ("dtype", "head_dim") if name in sweep] or None
        self.last_what_if = what_if_heatmap(cells, index=index, title=f"{self.family.value}: winning row")
        render_into(self.what_if_out, self.last_what_if)
        return cells

    def run_and_compare(self) -> pd.DataFrame:
        """Run every capable row on random inputs of the current context against the reference."""
        frame = comparison_table(run_rows(self.family.value, self.context, repeats=3))
        render_into(self.compare_out, frame)
        return frame

    def static_html(self) -> str:
        parts = [PANEL_CSS]
        if self.last_table is not None and self.last_trace is not None:
            parts.append(style_decision_table(self.last_table).to_html())
            parts.append(pre(self.last_trace.explain()))
        if self.last_what_if is not None:
            parts.append(figure_to_html(self.last_what_if, alt="what-if grid"))
        return "<div class='inspector-dispatch-static'>" + "".join(parts) + "</div>"
