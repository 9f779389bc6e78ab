"""Launching a real ``LocalWorld`` from the RPC panel: what can run here, what it measures, the refusal check, the job.

The job starts the world, measures RTT for every ordered pair (percentiles, tails flagged) and
the bandwidth around a ring of workers at three message sizes after warm-up sends, and always
closes the world, reporting progress in one count from start to end; the cancel button is
honoured while starting and between measurements. ``LaunchSummary`` says, before and after,
exactly what runs: which workers, which of the plan's maps (a machine without GPUs keeps only
the cpu -> cpu pairs), and that every figure is for CPU tensors (the workers time no-op calls
and send float32 CPU tensors, whatever the maps). A plan ``init_rpc`` would refuse is launched
only after a loud confirmation (``LaunchConfirmation``) that says whether the local part would
fail on every rank or start.
"""

from __future__ import annotations

import html
import threading
from collections.abc import Callable
from dataclasses import dataclass

import ipywidgets as widgets

from inspector._bench import Progress
from inspector._messages import Message
from inspector.errors import Cancelled
from inspector.rpc import InitError, LocalWorld, TopologyPlan, WorkerPlan, WorldSnapshot, predict_init_error
from inspector.rpc._records import MIB

MAX_LOCAL_WORKERS = 8  # more processes than this would only measure an oversubscribed machine
BANDWIDTH_FRACTIONS = (1 / 64, 1 / 8, 1.0)  # message sizes, as fractions of the largest
BANDWIDTH_REPEATS = 5
BANDWIDTH_WARMUP = 2
WorldJob = Callable[[Progress, threading.Event], WorldSnapshot]


def _mib(nbytes: int) -> str:
    return f"{nbytes / MIB:g}"


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


@dataclass(frozen=True)
class LaunchSummary:
    """What a launch of ``planned`` runs on this machine (``launched``) and measures, in words, before and after.

    A machine without GPUs runs only the plan's cpu -> cpu map pairs (``dropped_pairs`` went,
    with any explicit ``devices`` lists); with GPUs the maps go as written. Either way the
    workers time no-op ``rpc_sync`` calls and send float32 CPU tensors, so every figure is for
    CPU tensors.
    """

    planned: TopologyPlan
    launched: TopologyPlan
    gpus_here: int
    dropped_pairs: int
    samples: int
    sizes: tuple[int, ...]

    @property
    def ring(self) -> list[tuple[str, str]]:
        names = self.launched.names
        return [(names[i], names[(i + 1) % len(names)]) for i in range(len(names))] if len(names) > 1 else []

    @property
    def maps(self) -> str:
        """Which of the plan's maps the workers get."""
        kept = self.launched.pair_count
        if self.gpus_here:
            gpus = _count(self.gpus_here, "GPU")
            return f"the plan's {_count(kept, 'map pair')} as written, on this machine's {gpus}"
        lists = [w.name for w in self.planned.workers if w.devices]
        dropped = f"{_count(self.dropped_pairs, 'GPU map pair')}" + (
            f" and the devices lists of {', '.join(lists)}" if lists else ""
        )
        if not self.dropped_pairs and not lists:
            return f"the plan's {_count(kept, 'cpu → cpu map pair')}" if kept else "no device maps (the plan has none)"
        kept_text = f"only the plan's {_count(kept, 'cpu → cpu map pair')}" if kept else "no device maps"
        return f"{kept_text}: this machine has no GPU, so the plan's {dropped} are left out"

    @property
    def tensors(self) -> str:
        if self.gpus_here:
            return "Every figure is for CPU tensors: the GPU maps are set up, but no tensor sent lives on a GPU."
        return "Every figure is for CPU tensors in host memory, not for GPU-to-GPU copies."

    def before(self) -> str:
        """What pressing Launch will start and measure."""
        names = self.launched.names
        n = len(names)
        text = (
            f"Launch starts {_count(n, 'local worker')} ({', '.join(names)}) with {self.maps}; it times "
            f"{self.samples} no-op rpc_sync round trips for each of the {n * n} ordered pairs"
        )
        if self.ring:
            sizes = ", ".join(_mib(s) for s in self.sizes)
            loop = " → ".join([a for a, _ in self.ring] + [self.ring[0][0]])
            text += (
                f", then sends float32 tensors of {sizes} MiB around the ring {loop} ({BANDWIDTH_WARMUP} "
                f"warm-up and {BANDWIDTH_REPEATS} timed sends each)"
            )
        return f"{text}. {self.tensors}"

    def after(self, snapshot: WorldSnapshot) -> str:
        """What ran, once the world has been measured and shut down."""
        return (
            f"{_count(len(snapshot.workers), 'worker')} ready in {snapshot.start_seconds:.2f} s with "
            f"{self.maps}; measured, then shut down. {self.tensors}"
        )


def summarize(planned: TopologyPlan, samples: int = 50, largest_bytes: int = 16 << 20) -> LaunchSummary:
    """What a launch of ``planned`` would run here (refusing more than ``MAX_LOCAL_WORKERS`` workers)."""
    import torch

    if len(planned.workers) > MAX_LOCAL_WORKERS:
        headline = f"Launching {len(planned.workers)} local workers would only measure an oversubscribed machine."
        raise ValueError(str(Message(headline, {"limit": MAX_LOCAL_WORKERS}, next_step="lower 'workers' to launch")))
    gpus = torch.cuda.device_count()
    launched, dropped = (planned, 0) if gpus > 0 else planned.cpu_only()
    return LaunchSummary(planned, launched, gpus, dropped, samples, tuple(bandwidth_sizes(largest_bytes)))


def here(plan: TopologyPlan) -> TopologyPlan:
    """``plan`` with every worker's device count replaced by this machine's (what its world will gather)."""
    import torch

    count = torch.cuda.device_count()
    return TopologyPlan(
        tuple(WorkerPlan(w.name, count, w.devices, w.device_maps) for w in plan.workers), plan.static_group
    )


@dataclass(frozen=True)
class Refusal:
    """Why a launch needs confirming: init_rpc refuses the plan, and whether the part run here fails too."""

    lines: tuple[str, ...]
    local_fails: bool


def refusal(summary: LaunchSummary) -> Refusal | None:
    """Why a launch needs confirming (init_rpc refuses the plan or the local world), or None."""
    lines = []
    predicted: InitError | None = predict_init_error(summary.planned)
    if predicted is not None:
        lines.append(f"init_rpc would refuse this plan: {predicted.text.partition(chr(10))[0]}")
    local = predict_init_error(here(summary.launched))
    if local is not None:
        lines.append(f"The local world would fail on {', '.join(local.raised_by)}: {local.text.partition(chr(10))[0]}")
    elif predicted is not None:
        lines.append(f"This machine can run only part of the plan, and that part would start. {summary.before()}")
    return Refusal(tuple(lines), local is not None) if lines else None


class LaunchConfirmation:
    """A loud box that asks before a refused plan is launched; hidden until ``ask``."""

    def __init__(self) -> None:
        self.message = widgets.HTML()
        self.launch_anyway = widgets.Button(
            description="Launch anyway",
            button_style="danger",
            icon="warning",
            layout=widgets.Layout(width="auto"),
            tooltip="Start the world although init_rpc would refuse the plan",
        )
        self.cancel = widgets.Button(
            description="Cancel",
            icon="times",
            layout=widgets.Layout(width="auto"),
            tooltip="Launch nothing; fix the rows marked in red first",
        )
        self.cancel.add_class("inspector-rpc-launch-cancel")
        self.widget = widgets.VBox(
            [self.message, widgets.HBox([self.launch_anyway, self.cancel])], layout=widgets.Layout(display="none")
        )
        self.widget.add_class("inspector-rpc-confirm")
        self.launch_anyway.add_class("inspector-rpc-launch-anyway")
        self._on_yes: Callable[[], None] | None = None
        self.launch_anyway.on_click(lambda _b: self._answer(True))
        self.cancel.on_click(lambda _b: self._answer(False))

    @property
    def asking(self) -> bool:
        return self.widget.layout.display != "none"

    def ask(self, reason: Refusal, on_yes: Callable[[], None]) -> None:
        self._on_yes = on_yes
        if reason.local_fails:
            headline = "⚠ init_rpc would refuse this launch."
            choice = "Launch anyway to see how it fails on every rank, or cancel and fix the rows marked in red."
        else:
            headline = "⚠ init_rpc would refuse this plan; this machine can run only part of it."
            choice = "Launch anyway to run that part, or cancel and fix the rows marked in red."
        self.message.value = (
            f"<b>{headline}</b><br>" + "<br>".join(html.escape(line) for line in reason.lines) + f"<br>{choice}"
        )
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
                    repeats=BANDWIDTH_REPEATS,
                    pairs=ring,
                    sizes=sizes,
                    warmup=BANDWIDTH_WARMUP,
                    progress=lambda d, _t, m: report(n + n * n + d, total, f"bandwidth {m}"),
                )
            return world.snapshot()

    return job
