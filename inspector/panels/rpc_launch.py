"""Launching a real ``LocalWorld`` from the RPC panel: what can run here, the refusal check, and the job.

The job starts the world, measures RTT for every ordered pair (percentiles, tails flagged) and
the bandwidth around a ring of workers at three message sizes after warm-up sends, and always
closes the world, reporting progress in one count from start to end; the cancel button is
honoured while starting and between measurements. A plan ``init_rpc`` would refuse is launched
only after a loud confirmation (``LaunchConfirmation``): its world fails on every rank.
"""

from __future__ import annotations

import html
import threading
from collections.abc import Callable

import ipywidgets as widgets

from inspector._bench import Progress
from inspector._messages import Message
from inspector.errors import Cancelled
from inspector.rpc import InitError, LocalWorld, TopologyPlan, WorkerPlan, WorldSnapshot, predict_init_error

MAX_LOCAL_WORKERS = 8  # more processes than this would only measure an oversubscribed machine
BANDWIDTH_FRACTIONS = (1 / 64, 1 / 8, 1.0)  # message sizes, as fractions of the largest
BANDWIDTH_REPEATS = 5
BANDWIDTH_WARMUP = 2
WorldJob = Callable[[Progress, threading.Event], WorldSnapshot]


def launchable(plan: TopologyPlan) -> tuple[TopologyPlan, str]:
    """The part of ``plan`` a local world can run on this machine, and a note on what was left out."""
    import torch

    if len(plan.workers) > MAX_LOCAL_WORKERS:
        headline = f"Launching {len(plan.workers)} local workers would only measure an oversubscribed machine."
        raise ValueError(str(Message(headline, {"limit": MAX_LOCAL_WORKERS}, next_step="lower 'workers' to launch")))
    if torch.cuda.device_count() > 0:
        return plan, ""
    plan, dropped = plan.cpu_only()
    return plan, (f"No GPU here: {dropped} non-cpu map pair(s) left out. " if dropped else "")


def here(plan: TopologyPlan) -> TopologyPlan:
    """``plan`` with every worker's device count replaced by this machine's (what its world will gather)."""
    import torch

    count = torch.cuda.device_count()
    return TopologyPlan(tuple(WorkerPlan(w.name, count, w.devices, w.device_maps) for w in plan.workers),
                        plan.static_group)  # fmt: skip


def refusal(planned: TopologyPlan, launched: TopologyPlan) -> str | None:
    """Why a launch needs confirming (init_rpc refuses the plan or the local world), or None."""
    lines = []
    predicted: InitError | None = predict_init_error(planned)
    if predicted is not None:
        lines.append(f"init_rpc would refuse this plan: {predicted.text.partition(chr(10))[0]}")
    local = predict_init_error(here(launched))
    if local is not None:
        lines.append(f"The local world would fail on {', '.join(local.raised_by)}: {local.text.partition(chr(10))[0]}")
    elif predicted is not None:
        lines.append("The local world runs only the part of the plan this machine has, and that part would start.")
    return "\n".join(lines) or None


class LaunchConfirmation:
    """A loud box that asks before a refused plan is launched; hidden until ``ask``."""

    def __init__(self) -> None:
        self.message = widgets.HTML()
        self.launch_anyway = widgets.Button(description="Launch anyway", button_style="danger", icon="warning",
                                            layout=widgets.Layout(width="auto"),
                                            tooltip="Start the world although init_rpc would refuse the plan")
        self.cancel = widgets.Button(description="Cancel", icon="times", layout=widgets.Layout(width="auto"),
                                     tooltip="Launch nothing; fix the rows marked in red first")
        self.cancel.add_class("inspector-rpc-launch-cancel")
        self.widget = widgets.VBox([self.message, widgets.HBox([self.launch_anyway, self.cancel])],
                                   layout=widgets.Layout(display="none"))  # fmt: skip
        self.widget.add_class("inspector-rpc-confirm")
        self.launch_anyway.add_class("inspector-rpc-launch-anyway")
        self._on_yes: Callable[[], None] | None = None
        self.launch_anyway.on_click(lambda _b: self._answer(True))
        self.cancel.on_click(lambda _b: self._answer(False))

    @property
    def asking(self) -> bool:
        return self.widget.layout.display != "none"

    def ask(self, reason: str, on_yes: Callable[[], None]) -> None:
        self._on_yes = on_yes
        self.message.value = (
            "<b>⚠ init_rpc would refuse this launch.</b><br>" + html.escape(reason).replace("\n", "<br>")
            + "<br>Launch anyway to see how it fails on every rank, or cancel and fix the rows marked in red."
        )  # fmt: skip
        self.widget.layout.display = "flex"

    def dismiss(self) -> None:
        self._on_yes = None
        self.widget.layout.display = "none"

    def _answer(self, yes: bool) -> None:
        on_yes = self._on_yes
        self.dismiss()
        if yes and on_yes is not None:
            on_yes()


def bandwidth_sizes(largest_bytes: int) -> list[int]:
    """Three message sizes up to ``largest_bytes``, each a whole number of float32 values."""
    return sorted({max(4, int(largest_bytes * f) // 4 * 4) for f in BANDWIDTH_FRACTIONS})


def world_job(plan: TopologyPlan, samples: int, largest_bytes: int) -> WorldJob:
    """The background job: start ``plan``'s world, measure it, close it, return its snapshot."""
    names = plan.names
    ring = [(names[i], names[(i + 1) % len(names)]) for i in range(len(names))] if len(names) > 1 else []
    sizes = bandwidth_sizes(largest_bytes)

    def job(report: Progress, cancelled: threading.Event) -> WorldSnapshot:
        n = len(names)
        total = n + n * n + len(ring) * len(sizes)
        world = LocalWorld.from_plan(plan, progress=lambda d, _t, m: report(d, total, m), cancel=cancelled)
        with world:
            world.measure_rtt(samples, progress=lambda d, _t, m: report(n + d, total, f"RTT {m}"))
            if cancelled.is_set():
                raise Cancelled("cancelled after the RTT measurement")
            if ring:
                world.measure_bandwidth(
                    repeats=BANDWIDTH_REPEATS, pairs=ring, sizes=sizes, warmup=BANDWIDTH_WARMUP,
                    progress=lambda d, _t, m: report(n + n * n + d, total, f"bandwidth {m}"),
                )  # fmt: skip
            return world.snapshot()

    return job
