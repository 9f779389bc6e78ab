"""The RPC tab's "This job, rank by rank" box: a button that reads the last gather, and the job's section."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

from inspector.panels._guard import ErrorLine
from inspector.panels._render import RawHTML
from inspector.views.rpc import RpcSection

TITLE = "This job, rank by rank"
NO_VIEW = RawHTML(
    "<p class='inspector-note'>No job view here yet. Call <code>inspector.rpc.gather(calls, profile)</code> on every "
    "rank of the job (rank 0 gets the view), or load a saved one: "
    "<code>panel.show_job(JobView.load('job.json'))</code>.</p>"
)


class JobBox:
    """The button (guarded into its own error line) and the output area of the job's section."""

    def __init__(self, on_show: Callable[[], Any], guard_into: Callable[..., Any]) -> None:
        self.out = widgets.Output()
        self.out.add_class("inspector-rpc-job")
        self.errors = ErrorLine("job")
        button = widgets.Button(
            description="Show the last gather",
            icon="sitemap",
            layout=widgets.Layout(width="auto"),
            tooltip="every rank's SDPA backends, loader and environment, as the last "
            "inspector.rpc.gather on this rank returned them",
        )
        button.on_click(guard_into(self.errors, lambda _b: on_show()))
        self.widget = widgets.VBox([button, self.errors.widget, self.out])

    def show(self, panel: Any, current: Any) -> None:
        """Show the job's section of ``current`` (the RPC page) through ``panel``, or say how to get one."""
        if RpcSection.JOB in current:
            panel.show(self.out, current, RpcSection.JOB)
        else:
            panel.put(self.out, NO_VIEW)
