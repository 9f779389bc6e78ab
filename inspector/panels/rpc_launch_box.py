"""The RPC panel's "Launch a local world" box: its controls, and the launch of a ``LocalWorld`` on a background job.

The base of ``RpcPanel``, which reads the plan from its fields (``plan``, ``last_plan``) and
shows the world it launched on its page; what runs and the refusal check are ``rpc_launch``'s.
Kept apart so each module stays small.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from inspector.panels._background import BackgroundJob
from inspector.panels._base import Panel
from inspector.panels._guard import ErrorLine, error_html
from inspector.panels.rpc_launch import LaunchConfirmation, LaunchSummary, refusal, summarize, world_job
from inspector.rpc._records import MIB
from inspector.views.rpc import RpcSection, RpcState

if TYPE_CHECKING:
    from inspector.rpc import TopologyPlan, WorldSnapshot

NARROW = {"description_width": "initial"}


class LaunchBox(Panel[RpcState]):
    """Start real workers for the plan, measure RTT and bandwidth, close them; a refused plan asks first."""

    last_plan: TopologyPlan | None
    last_world: WorldSnapshot | None
    last_launch_error: BaseException | None
    launched: LaunchSummary | None  # what the last launch ran

    @property
    def plan(self) -> TopologyPlan:
        """The plan the panel's fields describe."""
        raise NotImplementedError

    def _launch_box(self) -> widgets.VBox:
        """The box's widgets: samples, message size, the button, what it would run, the job and the world."""
        self.rtt_count = widgets.BoundedIntText(
            value=50,
            min=1,
            max=10_000,
            description="RTT samples",
            style=NARROW,
            layout=widgets.Layout(width="170px"),
            tooltip="Round trips timed for every ordered pair of workers",
        )
        self.mebibytes = widgets.BoundedFloatText(
            value=16.0,
            min=0.001,
            max=1024.0,
            description="largest message MiB",
            style=NARROW,
            layout=widgets.Layout(width="230px"),
            tooltip="The largest bandwidth message (two smaller sizes too)",
        )
        self.launch_button = widgets.Button(
            description="Launch local world",
            icon="rocket",
            layout=widgets.Layout(width="auto"),
            tooltip="Start real workers for this plan on this machine, measure RTT and bandwidth, then shut them down",
        )
        self.launch_errors = ErrorLine("launch")
        self.launch_preview = widgets.HTML()
        self.launch_preview.add_class("inspector-rpc-launch-preview")
        for control in (self.rtt_count, self.mebibytes):
            control.observe(self.guard(self._preview), names="value")
        self.launch_button.on_click(self.guard_into(self.launch_errors, lambda _b: self.launch()))
        self.confirmation = LaunchConfirmation()
        self.job = BackgroundJob("Local world", triggers=[self.launch_button])
        self.world_html, self.world_out = widgets.HTML(), widgets.Output()
        return widgets.VBox(
            [
                widgets.HBox([self.rtt_count, self.mebibytes, self.launch_button]),
                self.launch_preview,
                self.launch_errors.widget,
                self.confirmation.widget,
                self.job.widget,
                self.world_html,
                self.world_out,
            ]
        )

    def launch(self, *, wait: bool = False, confirmed: bool = False) -> None:
        """Start a LocalWorld for the plan on a background job, measure RTT and bandwidth, close it.

        A launch while one is running is refused before anything shown changes; a plan init_rpc
        would refuse asks first (``confirmation``), unless ``confirmed``.
        """
        self.ensure_idle(self.job, "A local world is already running in this panel.", "launch again")
        summary = self._summary(self.plan)
        reason = None if confirmed else refusal(summary)
        if reason is not None:
            self.confirmation.ask(reason, self.guard(lambda: self.launch(wait=wait, confirmed=True)))
            return
        self.confirmation.dismiss()
        job = world_job(summary.launched, summary.samples, max(summary.sizes))
        self.launched = summary
        self.world_html.value = html.escape(f"Starting: {summary.before()}")
        self.put(self.world_out)
        # A failure while showing the result appears in the launch box's error line.
        self.start_job(self.job, job, self._launched, self._launch_failed, done_errors=self.launch_errors, wait=wait)

    def _summary(self, plan: TopologyPlan) -> LaunchSummary:
        return summarize(plan, self.rtt_count.value, int(self.mebibytes.value * MIB))

    def _preview(self, _change: Any = None) -> None:
        """Say what Launch would start and measure for the plan shown (or why it cannot)."""
        plan = self.last_plan
        if plan is None:
            return
        try:
            text = self._summary(plan).before()
        except ValueError as exc:  # too many workers: the launch would refuse, saying so
            text = str(exc).partition("\n")[0]
        self.launch_preview.value = f"<small>{html.escape(text)}</small>"

    def _launched(self, snapshot: WorldSnapshot) -> None:
        self.last_world = snapshot
        self.last_launch_error = None
        summary = self.launched
        self.world_html.value = html.escape(summary.after(snapshot) if summary else "")
        self.show(self.world_out, self.page(self.state()), RpcSection.WORLD)

    def _launch_failed(self, exc: BaseException) -> None:
        # Shown here, not in the error line, which the guard clears when the click handler returns.
        self.last_launch_error = exc
        self.world_html.value = error_html(exc)
