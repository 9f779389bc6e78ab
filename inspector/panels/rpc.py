"""RpcPanel: plan an RPC topology, see what torch's init_rpc would say as you type, and run a local world.

The plan lives in the widgets (worker count, GPUs per worker, explicit devices, one row per mapped
device pair, static or dynamic group) and is rebuilt as a ``TopologyPlan`` on every edit, parsed
once; all checking is the engine's (``check``, ``preflight``, ``predict_init_error``, ``derive``,
each reading the plan's parsed topology). A template (``rpc_templates``) fills the rows for a
mesh, a ring or a parameter server; ``Show this job's plan`` loads the job the notebook runs in
(``TopologyPlan.from_job``), and "This job, rank by rank" shows the job view the last
``inspector.rpc.gather`` returned here (rank 0). Rows a problem touches are outlined in red with the next step, and
the plan downloads as a JSON file. Launching starts a real ``LocalWorld`` on a background job
(``rpc_launch_box``, ``rpc_launch``), after a loud confirmation when init_rpc would refuse it; the launch box says,
before and after, what runs (on a machine without GPUs only the cpu -> cpu pairs go along) and
that every figure is for CPU tensors.
"""

from __future__ import annotations

import base64
from typing import Any

import ipywidgets as widgets

from inspector._messages import Message
from inspector.panels._base import PANEL_CLASS, PANEL_CSS, Panel
from inspector.panels._guard import ErrorLine, StaleMark
from inspector.panels._render import RawHTML
from inspector.panels._sections import Sections
from inspector.panels.rpc_fields import read_counts, read_devices
from inspector.panels.rpc_job import TITLE as JOB_TITLE
from inspector.panels.rpc_job import JobBox
from inspector.panels.rpc_launch import MAX_LOCAL_WORKERS, LaunchSummary
from inspector.panels.rpc_launch_box import LaunchBox
from inspector.panels.rpc_maps import ROWS_CSS, MapRow
from inspector.panels.rpc_templates import TemplatePicker
from inspector.rpc import JobView, PlanError, TopologyPlan, WorldSnapshot, last_gather, registered_backends
from inspector.views._tables import table_html
from inspector.views.rpc import DEFAULT_PLAN, RpcSection, RpcState, backends_table, next_step, pair_problems

__all__ = ["MAX_LOCAL_WORKERS", "MapRow", "RpcPanel"]

MAX_WORKERS = 64
MAX_EDITABLE_PAIRS = 2048  # one row of widgets per pair; a 16-worker x 8-GPU mesh has 1,920


def download_link(plan: TopologyPlan) -> str:
    """An ``<a download>`` that saves the plan as ``rpc_plan.json`` (no server round trip)."""
    data = base64.b64encode(plan.to_json().encode()).decode("ascii")
    return (
        f'<a class="inspector-rpc-download" download="rpc_plan.json" '
        f'href="data:application/json;base64,{data}">⬇ Download rpc_plan.json</a>'
    )


class RpcPanel(LaunchBox, Panel[RpcState]):
    """Plan, validate and launch RPC topologies; lists the registered RPC backends."""

    part = "rpc"

    def __init__(self, plan: TopologyPlan | None = None) -> None:
        super().__init__()
        self.last_plan: TopologyPlan | None = None
        self.last_world: WorldSnapshot | None = None
        self.last_launch_error: BaseException | None = None
        self.launched: LaunchSummary | None = None  # what the last launch ran
        self.job_view: JobView | None = last_gather()  # the job's picture, when this kernel is rank 0 of a job
        self._names: list[str] = []
        self._loading = False
        self.rows: list[MapRow] = []

        narrow = {"description_width": "initial"}
        self.workers = widgets.BoundedIntText(
            value=2,
            min=1,
            max=MAX_WORKERS,
            description="workers",
            layout=widgets.Layout(width="170px"),
            tooltip="Number of RPC workers (worker0, worker1, ...)",
        )
        self.gpus = widgets.Text(
            value="2",
            description="GPUs per worker",
            placeholder="8, or 8,8,4,4",
            style=narrow,
            layout=widgets.Layout(width="260px"),
            tooltip="One GPU count for every worker, or one per worker, comma-separated",
        )
        self.group = widgets.ToggleButtons(
            options=["static", "dynamic"],
            value="static",
            tooltips=["world_size given", "workers join later"],
            tooltip="static: init_rpc is given world_size; dynamic: workers join later",
        )
        self.devices = widgets.Textarea(
            description="devices",
            placeholder="worker0: cuda:0, cuda:1   (optional)",
            layout=widgets.Layout(width="520px", height="52px"),
            tooltip="Optional: each worker's devices list, one worker per line",
        )
        self.templates = TemplatePicker(self.load_plan)
        from_job = widgets.Button(
            description="Show this job's plan",
            icon="share-alt",
            tooltip="the topology of the RPC job this kernel runs in (TopologyPlan.from_job)",
            layout=widgets.Layout(width="auto"),
        )
        from_job.on_click(self.guard_into(self.templates.errors, lambda _b: self.load_job_plan()))
        self.plan_errors, self.rows_errors = ErrorLine("plan"), ErrorLine("rows")
        self.rows_box = widgets.VBox([])
        add_button = widgets.Button(
            description="Add map row",
            icon="plus",
            layout=widgets.Layout(width="auto"),
            tooltip="Append an empty row: caller, callee, source device, target device",
        )
        add_button.on_click(self.guard(lambda _b: self.add_row()))
        self.init_html = widgets.HTML()
        self.problems_out, self.graph_out, self.derived_out = widgets.Output(), widgets.Output(), widgets.Output()
        self.json_text = widgets.Textarea(
            placeholder="plan JSON",
            layout=widgets.Layout(width="620px", height="160px"),
            tooltip="The plan as JSON: Export fills it, Import reads it",
        )
        self.download = widgets.HTML()
        self._linked: TopologyPlan | None = None
        json_errors = ErrorLine("json")
        export_button = widgets.Button(
            description="Export plan",
            icon="download",
            layout=widgets.Layout(width="auto"),
            tooltip="Put the plan's JSON in the box below",
        )
        export_button.on_click(self.guard_into(json_errors, lambda _b: self.export_json()))
        import_button = widgets.Button(
            description="Import plan",
            icon="upload",
            layout=widgets.Layout(width="auto"),
            tooltip="Load the plan from the JSON in the box below",
        )
        import_button.on_click(self.guard_into(json_errors, lambda _b: self.import_json()))
        self.backends_out = widgets.Output()
        launch_box = self._launch_box()
        self.job_box = JobBox(self.show_job, self.guard_into)

        for control in (self.workers, self.gpus, self.group, self.devices):
            control.observe(self.guard(self._on_edit), names="value")
        plan_json = widgets.VBox([widgets.HBox([export_button, import_button]), json_errors.widget, self.json_text])
        details = [
            ("Topology", self.graph_out),
            ("Reverse maps and device lists", self.derived_out),
            ("Plan JSON", plan_json),
            ("Launch a local world", launch_box),
            ("Registered RPC backends", self.backends_out),
        ]
        job = (JOB_TITLE, self.job_box.widget)  # first, and open, in rank 0 of a job; else last, closed
        self.details = Sections([job, *details] if self.job_view is not None else [*details, job])
        header = PANEL_CSS + ROWS_CSS + "<b>RPC device maps</b>: plan a topology and see what init_rpc would say"
        rows_help = (
            "<small>Each row: the caller's <i>source</i> device → the callee's <i>target</i> device "
            "(<code>set_device_map(callee, {source: target})</code> on the caller)</small>"
        )
        # Each error shows in the box of the fields that caused it; what it invalidates is marked stale.
        plan_box = widgets.VBox(
            [widgets.HBox([self.workers, self.gpus, self.group]), self.devices, self.plan_errors.widget]
        )
        plan_box.add_class("inspector-rpc-plan-box")
        rows_area = widgets.VBox([widgets.HTML(rows_help), self.rows_box, add_button, self.rows_errors.widget])
        rows_area.add_class("inspector-rpc-rows-box")
        self.results = StaleMark(self.init_html, self.problems_out, self.details.widget)
        self.widget = widgets.VBox(
            [
                widgets.HTML(header),
                widgets.HBox([self.templates.widget, from_job, self.download]),
                plan_box,
                rows_area,
                self.status,
                self.errors.widget,
                self.results.widget,
            ]
        )
        self.widget.add_class("inspector-rpc-panel")
        self.widget.add_class(PANEL_CLASS)
        for control, name in (
            (self.workers, "workers"),
            (self.gpus, "gpus"),
            (self.group, "group"),
            (self.launch_button, "launch"),
            (self.world_html, "world"),
            (self.graph_out, "graph"),
            (self.init_html, "init"),
            (self.download, "download-box"),
        ):
            control.add_class(f"inspector-rpc-{name}")
        self.put(self.backends_out, RawHTML(table_html(backends_table(registered_backends()))))
        self.load_plan(plan or DEFAULT_PLAN)

    # -- the plan in the widgets -----------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return list(self._names)

    def _sync_names(self) -> None:
        count = self.workers.value
        names = self._names[:count]
        index = 0
        while len(names) < count:
            candidate = f"worker{index}"
            if candidate not in names:
                names.append(candidate)
            index += 1
        self._names = names
        for row in self.rows:
            row.caller.options = row.callee.options = tuple(names)

    def _counts(self) -> dict[str, int]:
        return read_counts(self.gpus.value, self._names)

    def _devices(self) -> dict[str, list[str]]:
        return read_devices(self.devices.value, self._names)

    @property
    def plan(self) -> TopologyPlan:
        """The plan the widgets describe (incomplete map rows are left out)."""
        maps: dict[str, dict[str, list[tuple[str, str]]]] = {}
        for caller, callee, source, target in (row.values for row in self.rows):
            if not all((caller, callee, source, target)):
                continue
            if caller not in self._names:
                raise PlanError("map rows", f"caller {caller!r} is not a worker", f"one of {self._names}")
            maps.setdefault(caller, {}).setdefault(callee, []).append((source, target))
        return TopologyPlan.build(self._names, self._counts(), maps, self._devices(), self.group.value == "static")

    def load_plan(self, plan: TopologyPlan) -> None:
        """Show ``plan`` in the widgets and validate it (up to ``MAX_EDITABLE_PAIRS`` rows)."""
        if plan.pair_count > MAX_EDITABLE_PAIRS:
            message = Message(
                f"This plan maps {plan.pair_count:,} device pairs, too many to edit row by row here.",
                {"limit": f"{MAX_EDITABLE_PAIRS:,}"},
                next_step="check it with plan.check() or `inspector rpc check PLAN.json`, or plan fewer workers",
            )
            raise ValueError(str(message))
        self._loading = True
        try:
            self._names = plan.names
            self.workers.value = len(plan.workers)
            counts = [str(w.device_count) for w in plan.workers]
            self.gpus.value = counts[0] if len(set(counts)) == 1 else ",".join(counts)
            self.group.value = "static" if plan.static_group else "dynamic"
            self.devices.value = "\n".join(f"{w.name}: {', '.join(w.devices)}" for w in plan.workers if w.devices)
            self.rows = []
            for worker in plan.workers:
                for callee, pairs in worker.device_maps:
                    for source, target in pairs:
                        self.rows.append(self._row((worker.name, callee, source, target)))
            self.rows_box.children = [row.widget for row in self.rows]
            self._sync_names()
        finally:
            self._loading = False
        self.refresh()

    def _row(self, values: tuple[str, ...] = ()) -> MapRow:
        # Not guarded into rows_errors: refresh writes a plan error there itself, and a guard
        # clears its line when the callback returns.
        return MapRow(self._names, self.guard(self._on_edit), self.guard(self.remove_row), values)

    def add_row(self, caller: str = "", callee: str = "", source: str = "", target: str = "") -> MapRow:
        """Append a map row (filled in when values are given) and re-validate."""
        row = self._row((caller, callee, source, target))
        self.rows.append(row)
        self.rows_box.children = [r.widget for r in self.rows]
        self.refresh()
        return row

    def remove_row(self, row: MapRow) -> None:
        self.rows.remove(row)
        self.rows_box.children = [r.widget for r in self.rows]
        self.refresh()

    def _on_edit(self, _change: Any = None) -> None:
        if self._loading:
            return
        self._sync_names()
        self.refresh()

    # -- validation ------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Rebuild the plan and show every problem, warnings, what init_rpc would raise, graph and devices.

        A plan the fields cannot describe is explained beside those fields (the worker fields, or the
        map rows), and the results below are marked stale until it is fixed.
        """
        try:
            plan = self.plan
        except PlanError as exc:
            in_rows = "device_maps" in exc.path or exc.path == "map rows"
            (self.rows_errors if in_rows else self.plan_errors).show(exc)
            (self.plan_errors if in_rows else self.rows_errors).clear()
            self.results.mark(
                "the results below are for the last plan that could be read; fix the "
                + ("map rows" if in_rows else "fields")
                + " above"
            )
            self.set_status("the plan cannot be read (see above)")
            return
        self.plan_errors.clear()
        self.rows_errors.clear()
        self.results.clear()
        state = RpcState(plan, job=self.job_view)  # each check runs once, for the page and this method alike
        problems, predicted = state.problems, state.prediction
        self.last_plan = plan
        current = self.page(state)
        self.show(self.init_html, current, RpcSection.INIT, prefix="<b>init_rpc</b>:")
        self._mark_rows(problems)
        self.show(self.problems_out, current, RpcSection.PROBLEMS)
        self.show(self.graph_out, current, RpcSection.GRAPH)
        self.show(self.derived_out, current, RpcSection.DERIVED)
        self.job_box.show(self, current)
        if plan != self._linked:
            self.download.value, self._linked = download_link(plan), plan
        self._preview()
        verdict = "init_rpc would start" if predicted is None else f"init_rpc would fail ({predicted.stage})"
        self.set_status(
            f"{len(plan.workers)} workers, {plan.pair_count} mapped pairs, {len(problems)} problem(s): {verdict}"
        )

    def _mark_rows(self, problems: Any) -> None:
        """Outline every row a problem touches, with the category and the next step beside it."""
        for row in self.rows:
            found = pair_problems(problems, *row.values) if all(row.values) else []
            row.mark([str(p.category) for p in found], list(dict.fromkeys(next_step(p) for p in found if next_step(p))))

    def load_job_plan(self) -> TopologyPlan:
        """Show the plan of the RPC job this kernel runs in (``TopologyPlan.from_job``)."""
        plan = TopologyPlan.from_job()
        self.load_plan(plan)
        return plan

    # -- the job ---------------------------------------------------------------------------------
    def show_job(self, view: JobView | None = None) -> JobView | None:
        """Show ``view``, by default what the last ``inspector.rpc.gather`` on this rank returned."""
        self.job_view = view if view is not None else last_gather()
        self.refresh()
        if self.job_view is not None:
            self.details.open(JOB_TITLE)
        return self.job_view

    # -- JSON ------------------------------------------------------------------------------------
    def export_json(self) -> str:
        """Put the plan's JSON in the text box (and return it)."""
        self.json_text.value = self.plan.to_json()
        return self.json_text.value

    def import_json(self, text: str | None = None) -> TopologyPlan:
        """Load a plan from JSON (the text box's, by default)."""
        plan = TopologyPlan.from_json(self.json_text.value if text is None else text)
        self.load_plan(plan)
        return plan

    # -- the page's state -----------------------------------------------------------------------------
    def state(self) -> RpcState:
        """What this panel shows now, as the page's state."""
        return RpcState(self.last_plan if self.last_plan is not None else self.plan, self.last_world, self.job_view)
