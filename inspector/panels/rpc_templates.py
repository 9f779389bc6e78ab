"""The RPC panel's topology templates: a full mesh, a ring or a parameter server of N workers x G GPUs.

Typing 96 map rows for a 4 x 8 mesh is no way to start; a template builds the plan with the
engine's own constructors (``TopologyPlan.full_mesh``, ``.ring``, ``.parameter_server``) and
hands it to the panel, which then edits it row by row like any other plan.
"""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as widgets

from inspector.rpc import TopologyPlan

TEMPLATES: dict[str, Callable[[int, int], TopologyPlan]] = {
    "full mesh": TopologyPlan.full_mesh,
    "ring": TopologyPlan.ring,
    "parameter server": TopologyPlan.parameter_server,
}
MAX_TEMPLATE_WORKERS = 64


class TemplatePicker:
    """A template, its worker count and GPUs per worker, and a button that applies them."""

    def __init__(self, on_apply: Callable[[TopologyPlan], None]) -> None:
        self.kind = widgets.Dropdown(options=list(TEMPLATES), value="full mesh", description="template",
                                     layout=widgets.Layout(width="230px"))  # fmt: skip
        self.workers = widgets.BoundedIntText(value=4, min=1, max=MAX_TEMPLATE_WORKERS, description="N",
                                              layout=widgets.Layout(width="120px"))  # fmt: skip
        self.gpus = widgets.BoundedIntText(value=8, min=0, max=128, description="× GPUs",
                                           layout=widgets.Layout(width="140px"))  # fmt: skip
        self.apply_button = widgets.Button(description="Use template", icon="sitemap")
        self.apply_button.on_click(lambda _b: on_apply(self.plan()))
        self.widget = widgets.HBox([self.kind, self.workers, self.gpus, self.apply_button])
        self.widget.add_class("inspector-rpc-templates")
        self.apply_button.add_class("inspector-rpc-template-apply")

    def plan(self) -> TopologyPlan:
        """The chosen template's plan (for a parameter server, N counts the trainers)."""
        return TEMPLATES[self.kind.value](self.workers.value, self.gpus.value)
