"""The Loader panel's "Past runs" part: the last benchmark runs side by side, two of them overlaid, and labels.

The base of ``LoaderPanel``; the runs are read from the history under your cache
(``inspector.loader.bench.read_history``) and drawn by the page's history section. Kept apart
so each module stays small.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from inspector.loader.bench import label_run, read_history
from inspector.loader.bench.history import run_name
from inspector.panels._base import Panel
from inspector.panels._guard import ErrorLine
from inspector.views.loader import LoaderSection, LoaderState


class PastRuns(Panel[LoaderState]):
    """Show the last benchmark runs (from the history under your cache), overlay two, label one."""

    _history: tuple[Any, ...] | None
    _history_note: str
    _overlay: tuple[str, ...]

    def _past_runs(self, wide: widgets.Layout) -> list[widgets.Widget]:
        """The part's widgets: the button, the overlay and label controls (hidden until a history is shown), the
        history's output."""
        self.history_out = widgets.Output()
        history = widgets.Button(
            description="Show history",
            icon="history",
            layout=widgets.Layout(width="auto"),
            tooltip="The last five benchmark runs side by side (kept under your cache)",
        )
        history.on_click(self.guard(lambda _b: self.show_history()))
        self.overlay_first = widgets.Dropdown(
            options=[],
            description="overlay",
            layout=wide,
            tooltip="The first of two past runs to draw in one chart (solid)",
        )
        self.overlay_second = widgets.Dropdown(
            options=[],
            description="with",
            layout=wide,
            tooltip="The second past run to draw in the same chart (dashed)",
        )
        for choice in (self.overlay_first, self.overlay_second):
            choice.observe(self.guard(lambda _change: self._overlay_changed()), names="value")
        self.run_label = widgets.Text(
            value="",
            description="new label",
            layout=wide,
            tooltip="A label for the first run picked above (plain text)",
        )
        label_button = widgets.Button(
            description="Label run",
            icon="tag",
            layout=widgets.Layout(width="auto"),
            tooltip="Keep this label with the first run picked above",
        )
        self.history_errors = ErrorLine("history")
        label_button.on_click(
            self.guard_into(
                self.history_errors, lambda _b: self.label_run(self.overlay_first.value, self.run_label.value)
            )
        )
        self.history_box = widgets.VBox(
            [
                widgets.HBox([self.overlay_first, self.overlay_second, self.run_label, label_button]),
                self.history_errors.widget,
            ]
        )
        self.history_box.layout.display = "none"  # until a history is shown
        return [widgets.HBox([widgets.HTML("<b>Past runs</b>"), history]), self.history_box, self.history_out]

    def show_history(self, last: int = 5) -> None:
        """Show the last ``last`` benchmark runs (from the history under your cache) side by side."""
        kept = read_history("loader", last=last)
        self._history, self._history_note = tuple(kept), kept.note()
        options = [(run_name(i, r), r["id"]) for i, r in enumerate(kept)]
        with_rows = [r["id"] for r in kept if r["rows"]]
        self._overlay = tuple(with_rows[-2:])
        ids = [run_id for _, run_id in options]
        for choice, value in zip((self.overlay_first, self.overlay_second), [*self._overlay, None, None], strict=False):
            choice.options = options
            choice.value = value if value in ids else None
        self.history_box.layout.display = "" if len(options) > 1 else "none"
        self.show(self.history_out, self.page(self.state()), LoaderSection.HISTORY)

    def _overlay_changed(self) -> None:
        chosen = (self.overlay_first.value, self.overlay_second.value)
        if None in chosen or chosen == self._overlay or self._history is None:
            return
        self._overlay = chosen
        self.show(self.history_out, self.page(self.state()), LoaderSection.HISTORY)

    def label_run(self, run_id: str, label: str) -> None:
        """Keep ``label`` with the past run ``run_id`` (one of the runs shown), then show the history again."""
        if not run_id:
            raise ValueError("Show the history and pick a run first, then label it.")
        label_run(run_id, label.strip())
        self.run_label.value = ""
        overlay = self._overlay
        self.show_history()
        self._overlay = overlay
        self.show(self.history_out, self.page(self.state()), LoaderSection.HISTORY)
