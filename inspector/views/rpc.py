"""RPC views: the device-map graph or grid, maps and problems as tables, and the RPC page.

A small plan is drawn as a worker graph, a GPU mesh as one GPU x GPU grid per worker pair
(``device_level``, NOTE [ Device grid ]). Arrows always point caller -> callee, from the caller's
source device to the callee's target device, because that is how a map is keyed and read
(``set_device_map(callee, {local: remote})``); a problem paints its edge or worker red and
names its category, and its rows in the maps table are highlighted with the next step. A local
world's tables and figures (workers, latency, bandwidth) are ``views.rpc_world``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from typing import TYPE_CHECKING

import pandas as pd

from inspector.rpc import (
    BackendInfo,
    DerivedDevices,
    DeviceMapProblem,
    InitError,
    JobView,
    PreflightWarning,
    TopologyPlan,
    WorldSnapshot,
    last_gather,
    predict_init_error,
)
from inspector.views._rpc_graph import OK_COLOUR, PROBLEM_COLOUR, pair_problems, topology_figure
from inspector.views._rpc_grid import device_grid_figure
from inspector.views._tables import styled
from inspector.views.page import Block, LazySection, Page, figure, lazy, pre, table
from inspector.views.rpc_job import job_blocks
from inspector.views.rpc_world import (  # re-exported: notebook 04 imports them from here
    bandwidth_figure,
    bandwidth_table,
    map_text,
    rtt_heatmap,
    rtt_table,
    workers_table,
)

if TYPE_CHECKING:
    from pandas.io.formats.style import Styler

__all__ = [
    "MAP_COLUMNS",
    "OK_COLOUR",
    "PROBLEM_COLOUR",
    "backends_table",
    "bandwidth_figure",
    "bandwidth_table",
    "derived_table",
    "device_grid_figure",
    "device_level",
    "highlighted_maps",
    "init_error_text",
    "maps_table",
    "next_step",
    "problems_table",
    "pair_problems",
    "rtt_heatmap",
    "rtt_table",
    "topology_figure",
    "warnings_table",
    "workers_table",
]

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
                records.append(
                    {
                        "caller": w.name,
                        "callee": callee,
                        "source": src,
                        "target": dst,
                        "problems": ", ".join(str(p.category) for p in found),
                        "next step": "; ".join(steps),
                    }
                )
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
        {
            "category": str(p.category),
            "worker": p.worker,
            "target": p.target or "",
            "devices": ", ".join(str(d) for d in p.devices),
            "message": p.headline,
            "torch raises": p.torch_exception,
        }
        for p in problems
    ]
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


def _str_map(mapping: dict) -> dict[str, str]:
    return {str(k): str(v) for k, v in mapping.items()}


def derived_table(derived: Sequence[DerivedDevices]) -> pd.DataFrame:
    """Per worker: the reverse maps (responses from each caller) and the device list its agent uses."""
    records = [
        {
            "worker": d.worker,
            "reverse maps": map_text({c: _str_map(m) for c, m in d.reverse_device_maps.items()}),
            "device list": ", ".join(str(x) for x in d.device_list),
            "problem": str(d.problem.category) if d.problem else "",
        }
        for d in derived
    ]
    return pd.DataFrame.from_records(records, columns=["worker", "reverse maps", "device list", "problem"])


def backends_table(rows: Sequence[BackendInfo]) -> pd.DataFrame:
    records = [
        {"registry": r.registry, "name": r.name, "options handler": r.construct_handler, "init handler": r.init_handler}
        for r in rows
    ]
    return pd.DataFrame.from_records(records, columns=["registry", "name", "options handler", "init handler"])


# -- the page -------------------------------------------------------------------------------
MAX_GRAPH_PAIRS = 24  # mapped pairs the worker graph labels one by one; more, and the device grid shows them
MAX_GRAPH_BUNDLE = 2  # pairs between one caller and one callee the graph labels; more is a mesh: the grid
DEFAULT_PLAN = TopologyPlan.build(
    2, 2, {"worker0": {"worker1": {"cuda:0": "cuda:1"}}, "worker1": {"worker0": {"cuda:1": "cuda:0"}}}
)


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
