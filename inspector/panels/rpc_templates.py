"""The RPC panel's topology templates: a full mesh, a ring or a parameter server of N workers x G GPUs.

Typing 96 map rows for a 4 x 8 mesh is no way to start; a template builds the plan with the
engine's own constructors (``TopologyPlan.full_mesh``, ``.ring``, ``.parameter_server``) and
hands it to the panel, which then edits it row by row like any other plan.
"""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as widgets

from inspector.panels._guard import ErrorLine, guarded
from inspector.rpc import TopologyPlan

TEMPLATES: dict[str, Callable[[int, int], TopologyPlan]] = {
    "full mesh": TopologyPlan.full_mesh,
    "ring": TopologyPlan.ring,
    "parameter server": TopologyPlan.parameter_server,
}
MAX_TEMPLATE_WORKERS = 64


class TemplatePicker:
    """A template, its worker count and GPUs per worker, and a button that applies them.

    A template that cannot be applied (too large to edit row by row) is explained in ``errors``,
    in the picker's own box.
    """

    def __init__(self, on_apply: Callable[[TopologyPlan], None]) -> None:
        self.kind = widgets.Dropdown(
            options=list(TEMPLATES),
            value="full mesh",
            description="template",
            layout=widgets.Layout(width="230px"),
            tooltip="Every worker maps to every other, a ring, or trainers around a parameter server",
        )
        self.workers = widgets.BoundedIntText(
            value=4,
            min=1,
            max=MAX_TEMPLATE_WORKERS,
            description="N",
            layout=widgets.Layout(width="120px"),
            tooltip="Workers (for a parameter server: trainers)",
        )
        self.gpus = widgets.BoundedIntText(
            value=8,
            min=0,
            max=128,
            description="× GPUs",
            layout=widgets.Layout(width="140px"),
            tooltip="GPUs per worker",
        )
        self.apply_button = widgets.Button(
            description="Use template",
            icon="sitemap",
            layout=widgets.Layout(width="auto"),
            tooltip="Replace the plan below with this template's",
        )
        self.errors = ErrorLine("template")
        self.apply_button.on_click(guarded(self.errors)(lambda _b: on_apply(self.plan())))
        self.widget = widgets.VBox(
            [widgets.HBox([self.kind, self.workers, self.gpus, self.apply_button]), self.errors.widget]
        )
        self.widget.add_class("inspector-rpc-templates")
        self.apply_button.add_class("inspector-rpc-template-apply")

    def plan(self) -> TopologyPlan:
        """The chosen template's plan (for a parameter server, N counts the trainers)."""
        return TEMPLATES[self.kind.value](self.workers.value, self.gpus.value)
