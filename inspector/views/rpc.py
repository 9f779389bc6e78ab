"""RPC views: the device-map graph or grid, maps and problems as tables, latency and bandwidth, world summaries.

A small plan is drawn as a worker graph, a GPU mesh as one GPU x GPU grid per worker pair
(``device_level``, NOTE [ Device grid ]). Arrows always point caller -> callee, from the caller's
source device to the callee's target device, because that is how a map is keyed and read
(``set_device_map(callee, {local: remote})``); a problem paints its edge or worker red and
names its category, and its rows in the maps table are highlighted with the next step. Sizes
and throughput are in MiB and MiB/s, as in the Loader tab; latencies in microseconds, with a
pair whose p99 strays far from its median flagged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from pandas.io.formats.style import Styler

from inspector.rpc import (
    BackendInfo,
    Bandwidth,
    DerivedDevices,
    DeviceMapProblem,
    InitError,
    JobView,
    PreflightWarning,
    RttMatrix,
    TopologyPlan,
    WorkerSnapshot,
    WorldSnapshot,
    last_gather,
    predict_init_error,
)
from inspector.rpc._records import MIB, TAIL_FACTOR
from inspector.views._figures import NEUTRAL_INK, axes_key_above, new_figure, pad_figure, style_axes
from inspector.views._palette import hashed_colour
from inspector.views._rpc_graph import OK_COLOUR, PROBLEM_COLOUR, pair_problems, topology_figure
from inspector.views._rpc_grid import device_grid_figure
from inspector.views._tables import styled
from inspector.views.page import Block, LazySection, Page, figure, lazy, pre, table
from inspector.views.rpc_job import job_blocks

__all__ = [
    "MAP_COLUMNS", "OK_COLOUR", "PROBLEM_COLOUR", "backends_table", "bandwidth_figure", "bandwidth_table",
    "derived_table", "device_grid_figure", "device_level", "highlighted_maps", "init_error_text", "maps_table",
    "next_step", "problems_table", "pair_problems", "rtt_heatmap", "rtt_table", "topology_figure", "warnings_table",
    "workers_table",
]  # fmt: skip

MAP_COLUMNS = ["caller", "callee", "source", "target", "problems", "next step"]
ROW_HIGHLIGHT = "background-color: rgba(214, 39, 40, 0.18)"


def next_step(problem: DeviceMapProblem) -> str:
    """What to do about a problem (kept with it: nothing parses its message)."""
    return problem.next_step


def maps_table(plan: TopologyPlan, problems: Sequence[DeviceMapProblem] = ()) -> pd.DataFrame:
    """One row per mapped device pair (caller, callee, source, target), the problems touching it and what to do."""
    records = []
    for w in plan.workers:
        for callee, pairs in w.device_maps:
            for src, dst in pairs:
                found = pair_problems(problems, w.name, callee, src, dst)
                steps = list(dict.fromkeys(next_step(p) for p in found if next_step(p)))
                records.append({"caller": w.name, "callee": callee, "source": src, "target": dst,
                                "problems": ", ".join(str(p.category) for p in found),
                                "next step": "; ".join(steps)})  # fmt: skip
    return pd.DataFrame.from_records(records, columns=MAP_COLUMNS)


def highlighted_maps(plan: TopologyPlan, problems: Sequence[DeviceMapProblem] = ()) -> Styler:
    """``maps_table`` with every row a problem touches highlighted (the offending rows, with their next step)."""
    frame = maps_table(plan, problems)

    def paint(row: pd.Series) -> list[str]:
        return [ROW_HIGHLIGHT if row["problems"] else ""] * len(row)

    return styled(frame).apply(paint, axis=1)


def problems_table(problems: Sequence[DeviceMapProblem]) -> pd.DataFrame:
    """Every problem: category, worker, target, devices at fault, torch's first line, what torch raises."""
    records = [
        {"category": str(p.category), "worker": p.worker, "target": p.target or "",
         "devices": ", ".join(str(d) for d in p.devices), "message": p.headline, "torch raises": p.torch_exception}
        for p in problems
    ]  # fmt: skip
    return pd.DataFrame.from_records(
        records, columns=["category", "worker", "target", "devices", "message", "torch raises"]
    )


def warnings_table(warnings: Sequence[PreflightWarning]) -> pd.DataFrame:
    records = [
        {"kind": str(w.kind), "worker": w.worker, "target": w.target or "", "message": w.message} for w in warnings
    ]
    return pd.DataFrame.from_records(records, columns=["kind", "worker", "target", "message"])


def init_error_text(error: InitError | None) -> str:
    """What ``init_rpc`` would raise, verbatim, with who raises it; or that it would start."""
    if error is None:
        return "init_rpc would accept this topology."
    raised_by = ", ".join(error.raised_by)
    return f"{error.text}\n\n(stage: {error.stage}; raised by: {raised_by}) {error.note}".rstrip()


def _map_text(mapping: dict[str, dict[str, str]] | dict[str, dict]) -> str:
    return "; ".join(
        f"{caller}: " + ", ".join(f"{k}->{v}" for k, v in pairs.items()) for caller, pairs in mapping.items()
    )


def _str_map(mapping: dict) -> dict[str, str]:
    return {str(k): str(v) for k, v in mapping.items()}


def derived_table(derived: Sequence[DerivedDevices]) -> pd.DataFrame:
    """Per worker: the reverse maps (responses from each caller) and the device list its agent uses."""
    records = [
        {"worker": d.worker,
         "reverse maps": _map_text({c: _str_map(m) for c, m in d.reverse_device_maps.items()}),
         "device list": ", ".join(str(x) for x in d.device_list),
         "problem": str(d.problem.category) if d.problem else ""}
        for d in derived
    ]  # fmt: skip
    return pd.DataFrame.from_records(records, columns=["worker", "reverse maps", "device list", "problem"])


def workers_table(workers: Sequence[WorkerSnapshot]) -> pd.DataFrame:
    """What each worker of a running world reported, with its derived reverse maps and device list."""
    records = [
        {"rank": w.rank, "name": w.name, "pid": w.pid, "device count": w.device_count,
         "device maps": _map_text(w.device_maps), "devices": ", ".join(w.devices),
         "reverse maps": _map_text(w.reverse_device_maps), "device list": ", ".join(w.device_list),
         "init_rpc s": round(w.init_seconds, 3)}
        for w in workers
    ]  # fmt: skip
    columns = ["rank", "name", "pid", "device count", "device maps", "devices", "reverse maps", "device list",
               "init_rpc s"]  # fmt: skip
    return pd.DataFrame.from_records(records, columns=columns)


def rtt_table(rtt: RttMatrix) -> pd.DataFrame:
    """Every pair's round trips in microseconds: min, median, p90, p99, max, and the tail flagged."""
    records = [
        {"caller": p.caller, "callee": p.callee, "samples": p.samples, "min us": round(p.min_s * 1e6, 1),
         "median us": round(p.median_s * 1e6, 1), "p90 us": round(p.p90_s * 1e6, 1),
         "p99 us": round(p.p99_s * 1e6, 1), "max us": round(p.max_s * 1e6, 1),
         "tail": f"p99 = {p.tail_ratio:.1f}x median" if p.has_tail else ""}
        for p in rtt.pairs
    ]  # fmt: skip
    columns = ["caller", "callee", "samples", "min us", "median us", "p90 us", "p99 us", "max us", "tail"]
    return pd.DataFrame.from_records(records, columns=columns)


def bandwidth_table(results: Sequence[Bandwidth]) -> pd.DataFrame:
    """Each pair and message size: warm-up and timed sends, and the worst, median and best MiB/s."""
    records = [
        {"caller": b.caller, "callee": b.callee, "MiB": round(b.mib, 3), "warm-up": b.warmup, "repeats": b.repeats,
         "min MiB/s": round(b.worst_mib_per_s, 1), "median MiB/s": round(b.mib_per_s, 1),
         "max MiB/s": round(b.best_mib_per_s, 1)}
        for b in results
    ]  # fmt: skip
    columns = ["caller", "callee", "MiB", "warm-up", "repeats", "min MiB/s", "median MiB/s", "max MiB/s"]
    return pd.DataFrame.from_records(records, columns=columns)


def backends_table(rows: Sequence[BackendInfo]) -> pd.DataFrame:
    records = [
        {"registry": r.registry, "name": r.name, "options handler": r.construct_handler, "init handler": r.init_handler}
        for r in rows
    ]
    return pd.DataFrame.from_records(records, columns=["registry", "name", "options handler", "init handler"])


RTT_COLOURS = "viridis"


def _readable_ink(rgba: tuple[float, ...]) -> str:
    """Black on a light cell, white on a dark one (relative luminance of the cell's colour)."""
    red, green, blue = rgba[:3]
    return "black" if 0.2126 * red + 0.7152 * green + 0.0722 * blue > 0.45 else "white"


def rtt_heatmap(rtt: RttMatrix) -> Figure:
    """Median ``rpc_sync`` round trip per caller (rows) and callee (columns), in microseconds.

    A pair whose p99 strays ``TAIL_FACTOR`` times from its median gets a red frame and a "!"
    in the cell's own readable ink (black on light cells, white on dark), so the mark reads on
    every colour of the scale. The title sits on two short lines, within the figure.
    """
    n = len(rtt.names)
    fig = new_figure(max(4.6, 1.1 * n + 2.8), max(3.6, 0.9 * n + 2.2))
    pad_figure(fig)  # the frame never touches the image's edge
    ax = fig.add_subplot()
    values = np.array(rtt.median_matrix(), dtype=float) * 1e6
    image = ax.imshow(np.ma.masked_invalid(values), cmap=RTT_COLOURS)
    ax.xaxis.tick_top()  # the callee key sits above the cells, where it is read first
    ax.xaxis.set_label_position("top")
    ax.set_xticks(range(n), rtt.names, rotation=30, ha="left")
    ax.set_yticks(range(n), rtt.names)
    ax.set_xlabel("callee")
    ax.set_ylabel("caller")
    tails = sum(p.has_tail for p in rtt.pairs)
    flagged = f"{tails} pair(s) with p99 >= {TAIL_FACTOR:g}x median (red frame, !)" if tails else "no long tails"
    ax.set_title(f"rpc_sync round trip, median (us)\n{flagged}", fontsize=9)
    for (i, j), value in np.ndenumerate(values):
        pair = rtt.get(rtt.names[i], rtt.names[j])
        if pair is None or not math.isfinite(value) or not pair.has_tail:
            continue
        ax.add_patch(Rectangle((j - 0.46, i - 0.46), 0.92, 0.92, fill=False, edgecolor=PROBLEM_COLOUR, linewidth=2.5))
    if n <= 8:
        finite = values[np.isfinite(values)]
        low, span = (float(finite.min()), float(np.ptp(finite)) or 1.0) if finite.size else (0.0, 1.0)
        for (i, j), value in np.ndenumerate(values):
            pair = rtt.get(rtt.names[i], rtt.names[j])
            if pair is None or not math.isfinite(value):
                continue
            ink = _readable_ink(tuple(colormaps[RTT_COLOURS]((value - low) / span)))
            text = f"{value:.0f}\np99 {pair.p99_s * 1e6:.0f}" + (" !" if pair.has_tail else "")
            ax.text(j, i, text, ha="center", va="center", fontsize=8, color=ink,
                    fontweight="bold" if pair.has_tail else "normal")  # fmt: skip
    colorbar = fig.colorbar(image, ax=ax)
    colorbar.ax.tick_params(colors=NEUTRAL_INK)
    style_axes(ax)
    return fig


def bandwidth_figure(results: Sequence[Bandwidth]) -> Figure:
    """MiB/s against message size, one line per caller -> callee: the median, with worst..best as bars."""
    fig = new_figure(6.4, 4.0)
    ax = fig.add_subplot()
    by_pair: dict[tuple[str, str], list[Bandwidth]] = {}
    for b in results:
        by_pair.setdefault((b.caller, b.callee), []).append(b)
    for (caller, callee), rows in by_pair.items():
        rows = sorted(rows, key=lambda b: b.nbytes)
        sizes = [b.nbytes / MIB for b in rows]
        median = np.array([b.mib_per_s for b in rows])
        spread = [median - [b.worst_mib_per_s for b in rows], [b.best_mib_per_s for b in rows] - median]
        label = f"{caller} → {callee}"
        ax.errorbar(sizes, median, yerr=spread, marker="o", capsize=3, label=label, color=hashed_colour(label))
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (MiB)")
    ax.set_ylabel("MiB/s (median; bars: worst .. best)")
    warmups = sorted({b.warmup for b in results})
    ax.set_title(f"rpc_sync tensor send, after {', '.join(map(str, warmups))} warm-up send(s)", fontsize=9)
    style_axes(ax)
    axes_key_above(fig, [ax])
    return fig


# -- the page -------------------------------------------------------------------------------
MAX_GRAPH_PAIRS = 24  # mapped pairs the worker graph labels one by one; more, and the device grid shows them
MAX_GRAPH_BUNDLE = 2  # pairs between one caller and one callee the graph labels; more is a mesh: the grid
DEFAULT_PLAN = TopologyPlan.build(2, 2, {"worker0": {"worker1": {"cuda:0": "cuda:1"}},
                                         "worker1": {"worker0": {"cuda:1": "cuda:0"}}})  # fmt: skip


class RpcSection(StrEnum):
    """The RPC page's sections."""

    JOB = "job"
    INIT = "init"
    PROBLEMS = "problems"
    GRAPH = "graph"
    DERIVED = "derived"
    WORLD = "world"


@dataclass(frozen=True)
class RpcState:
    """What the RPC page shows: a plan, the last local world launched for it (if any), and the job's view
    (``inspector.rpc.gather`` on rank 0), when this process is part of a job.

    The plan's checks are facts of the state, each computed once (NOTE [ Lazy pages ] in ``views/page.py``).
    """

    plan: TopologyPlan
    world: WorldSnapshot | None = None
    job: JobView | None = None

    @cached_property
    def problems(self) -> tuple[DeviceMapProblem, ...]:
        """Every problem of the plan (``plan.check()``)."""
        return self.plan.check()

    @cached_property
    def warnings(self) -> tuple[PreflightWarning, ...]:
        """What torch accepts that is probably a mistake (``plan.preflight()``)."""
        return self.plan.preflight()

    @cached_property
    def prediction(self) -> InitError | None:
        """What ``init_rpc`` would raise for the plan, or ``None``."""
        return predict_init_error(self.plan)


LAST_GATHER = "last gather"


def current_state(plan: TopologyPlan | None = None, job: JobView | str | None = LAST_GATHER) -> RpcState:
    """The page's state: ``plan``, or a 2-worker × 2-GPU plan mapped both ways; ``job``, by default the view
    the last ``inspector.rpc.gather`` returned in this process (None outside a job)."""
    view = last_gather() if job == LAST_GATHER else job
    return RpcState(plan if plan is not None else DEFAULT_PLAN, job=view if isinstance(view, JobView) else None)


def device_level(plan: TopologyPlan) -> bool:
    """Whether the plan reads better as device grids than as a worker graph (NOTE [ Device grid ]).

    The worker graph stays for small plans: few pairs, at most ``MAX_GRAPH_BUNDLE`` between any
    two workers. A GPU mesh (eight pairs bundled on each arrow) gets the GPU x GPU grids.
    """
    bundles = [len(pairs) for w in plan.workers for _, pairs in w.device_maps]
    return plan.pair_count > MAX_GRAPH_PAIRS or max(bundles, default=0) > MAX_GRAPH_BUNDLE


def page(state: RpcState) -> Page:
    """The RPC page: the job's picture (inside a job), what init_rpc would say, every problem and warning,
    the maps, graph, devices, world."""
    plan = state.plan
    sections: list[LazySection] = []
    job = state.job
    if job is not None:
        sections.append(lazy(RpcSection.JOB, "This job, rank by rank", lambda: job_blocks(job), job))
    sections += [
        lazy(RpcSection.INIT, "init_rpc", lambda: [pre(init_error_text(state.prediction))], plan),
        lazy(RpcSection.PROBLEMS, "Device maps", lambda: _check_blocks(state), plan),
        lazy(RpcSection.GRAPH, "Topology", lambda: [_graph_block(state)], plan),
        lazy(RpcSection.DERIVED, "Devices each worker will use", lambda: [table(derived_table(plan.derive()))], plan),
    ]
    world = state.world
    if world is not None:
        sections.append(lazy(RpcSection.WORLD, "Local world", lambda: _world_blocks(world), world))
    return Page("RPC device maps", tuple(sections))


def _check_blocks(state: RpcState) -> list[Block]:
    problems = state.problems
    checks = [table(problems_table(problems), "Problems")] if problems else []
    if state.warnings:
        checks.append(table(warnings_table(state.warnings), "Pre-flight warnings (torch accepts these)"))
    checks.append(table(highlighted_maps(state.plan, problems)))
    return checks


def _graph_block(state: RpcState) -> Block:
    plan = state.plan
    if device_level(plan):
        return figure(device_grid_figure(plan, state.problems), "device grid")
    return figure(topology_figure(plan, state.problems), "device-map graph")


def _world_blocks(world: WorldSnapshot) -> list[Block]:
    blocks = [table(workers_table(world.workers))]
    if world.rtt is not None:
        blocks += [figure(rtt_heatmap(world.rtt), "RTT heatmap"), table(rtt_table(world.rtt))]
    if world.bandwidth:
        blocks += [figure(bandwidth_figure(world.bandwidth), "bandwidth"), table(bandwidth_table(world.bandwidth))]
    return blocks
