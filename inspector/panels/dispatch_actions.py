"""The Dispatch panel's actions: the what-if grid, running and comparing the rows, and showing what ran.

The base of ``DispatchPanel``, which shows the boxes among its sections and redraws its page
(``_render``); each action reads the panel's context under the toggles' selection. Kept apart
so each module stays small.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from inspector.dispatch import CallContext, op_backend, run_rows, what_if
from inspector.dispatch.torch_sdpa import FAMILY as TORCH_SDPA
from inspector.dispatch.torch_sdpa import what_if_grid
from inspector.panels._base import Panel, busy
from inspector.panels._guard import ErrorLine
from inspector.panels._render import RawHTML
from inspector.panels.context_editor import DTYPES, ContextEditor
from inspector.views.dispatch import DispatchState, comparison_table, watch_table, what_if_key
from inspector.views.page import FIGURE, Page
from inspector.views.sdpa_tables import sdpa_comparison_table

if TYPE_CHECKING:
    import pandas as pd


class DispatchActions(Panel[DispatchState]):
    """Buttons that run longer work on the panel's context: each with its own error line and output."""

    family: widgets.Dropdown
    editor: ContextEditor
    last_what_if: Any
    last_what_ran: pd.DataFrame | None
    _what_if: tuple[str, tuple[Any, ...]] | None
    _runs: tuple[Any, ...] | None
    _sdpa_runs: Any
    _what_ran: Any
    _decisions: tuple[Any, ...] | None

    @property
    def context(self) -> CallContext:
        """The context the panel's editor describes."""
        raise NotImplementedError

    def selection(self) -> op_backend:
        """The toggles' selection, for a ``with`` block."""
        raise NotImplementedError

    def _render(self) -> Page:
        """Redraw the panel's page and return it."""
        raise NotImplementedError

    def _action_boxes(self) -> list[widgets.VBox]:
        """The three actions' boxes (what-if grid, run and compare, what ran), each saying what its button does."""
        self.what_if_out = widgets.Output()
        self.compare_out = widgets.Output()
        self.ran_out = widgets.Output()
        self.put(self.what_if_out, RawHTML("<i>No grid yet: press <b>Draw what-if grid</b>.</i>"))
        self.put(self.compare_out, RawHTML("<i>No comparison yet: press <b>Run and compare rows</b>.</i>"))
        self.put(self.ran_out, RawHTML("<i>Nothing shown yet: press <b>Show what ran</b>.</i>"))
        return [
            self._action_box(
                "Draw what-if grid",
                "th",
                "Heatmap of the winning row as the axes that change it vary "
                "(torch_sdpa: GPU x dtype x variations of the call), under the toggles",
                self.draw_what_if,
                self.what_if_out,
            ),
            self._action_box(
                "Run and compare rows",
                "play",
                "Run every capable row on random inputs of this "
                "context and compare it with the reference (torch_sdpa: every backend, timed)",
                self.run_and_compare,
                self.compare_out,
            ),
            self._action_box(
                "Show what ran",
                "history",
                "The calls of the last `with torch_sdpa.watch():` block, "
                "and decisions of any running record_decisions()",
                self.show_what_ran,
                self.ran_out,
            ),
        ]

    def _action_box(self, label: str, icon: str, tooltip: str, action: Any, out: widgets.Output) -> widgets.VBox:
        """A button, its own error line and its output; the button is disabled while its work runs."""
        button = widgets.Button(description=label, icon=icon, tooltip=tooltip, layout=widgets.Layout(width="auto"))
        errors = ErrorLine()

        def run(_button: Any) -> None:
            with busy(button):
                action()

        button.on_click(self.guard_into(errors, run))
        return widgets.VBox([button, errors.widget, out])

    def show_what_ran(self) -> pd.DataFrame | None:
        """What ran: the last ``torch_sdpa.watch()`` block, and the decisions of the running
        ``record_decisions()`` recorders (or, when none runs, of the one that stopped last)."""
        from inspector.dispatch.recorder import ACTIVE, last_stopped
        from inspector.dispatch.torch_sdpa import last_watch

        calls = last_watch()
        self._what_ran = calls.table() if calls is not None else None
        stopped = last_stopped()
        recorders = tuple(ACTIVE) or ((stopped,) if stopped is not None else ())
        self._decisions = tuple(c for recorder in recorders for c in recorder.counts()) if recorders else None
        if self._what_ran is None and self._decisions is None:
            self.put(
                self.ran_out,
                RawHTML(
                    "<i>No watched block yet: run <code>with torch_sdpa.watch() as calls: model(x)</code> (or "
                    "<code>with record_decisions(): ...</code> for your own families), then press the button again.</i>"
                ),
            )
            self.last_what_ran = None
            return None
        self._render()
        self.last_what_ran = watch_table(self._what_ran) if self._what_ran is not None else None
        return self.last_what_ran

    def draw_what_if(self, **sweep: Any) -> Any:
        """Heatmap of the winning row over dtype × head_dim × mask × grad (or the axes given); for
        ``torch_sdpa``, over devices and GPUs × dtype × variations of the call (``what_if_grid``)."""
        if self.family.value == TORCH_SDPA and not sweep:
            with self.selection():
                cells = what_if_grid(self.context)
            return self._show_what_if(cells)
        sweep = sweep or {
            "dtype": list(DTYPES.values()),
            "head_dim": sorted({64, 128, 256, 512, self.editor.head_dim.value}),
            "has_mask": [False, True],
            "grad_enabled": [True, False],
        }
        with self.selection():
            cells = what_if(self.family.value, self.context, **sweep)
        return self._show_what_if(cells)

    def _show_what_if(self, cells: Any) -> Any:
        self._what_if = (self.family.value, cells)
        blocks = self._render().section(what_if_key(self.family.value)).blocks
        self.last_what_if = next((block.value for block in blocks if block.kind == FIGURE), None)  # one line: agreed
        return cells

    def run_and_compare(self, budget_s: float = 0.3) -> pd.DataFrame:
        """Run every capable row on random inputs of the current context against the reference; for
        ``torch_sdpa``, time every backend that can serve the call here (``torch_sdpa.compare``)."""
        if self.family.value == TORCH_SDPA:
            return self._compare_sdpa(budget_s)
        self._runs = tuple(run_rows(self.family.value, self.context, repeats=3))
        self._render()
        return comparison_table(self._runs)

    def _compare_sdpa(self, budget_s: float) -> pd.DataFrame:
        import torch

        from inspector.dispatch.torch_sdpa import compare
        from inspector.dispatch.torch_sdpa.compare_limits import refuse_what_cannot_run
        from inspector.dispatch.torch_sdpa.described import complete
        from inspector.dispatch.torch_sdpa.inputs import tensors_for

        ctx = complete(self.context)
        facts = ctx.extra["sdpa"]
        # too big for this machine, or a GPU it lacks: ValueError before any tensor is made, shown by the button
        refuse_what_cannot_run(
            facts,
            budget_s,
            facts.requires_grad and ctx.grad_enabled,
            how="smaller batch, heads, seq_len, kv_len or head_dim in the context editor",
        )
        call, options = tensors_for(facts)
        with torch.set_grad_enabled(ctx.grad_enabled):
            self._sdpa_runs = compare(*call, **options, budget_s=budget_s)
        self._render()
        return sdpa_comparison_table(self._sdpa_runs)
