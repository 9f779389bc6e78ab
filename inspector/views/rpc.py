"""RPC views: the device-map graph, maps and problems as tables, latency heatmaps and world summaries.

Arrows always point caller -> callee, from the caller's source device to the callee's target
device, because that is how a map is keyed and read (``set_device_map(callee, {local: remote})``);
a problem paints its edge or worker red and names its category.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch

from inspector.rpc import (
    BackendInfo,
    Bandwidth,
    DerivedDevices,
    DeviceMapProblem,
    InitError,
    PreflightWarning,
    RttMatrix,
    TopologyPlan,
    WorkerSnapshot,
)
from inspector.views._figures import NEUTRAL_INK, new_figure, style_axes

OK_COLOUR = "#1f77b4"
PROBLEM_COLOUR = "#d62728"
WARNING_COLOUR = "#ff7f0e"
NODE_CATEGORIES = {"DUPLICATED_DEVICES", "INVALID_DEVICE_INDEX", "UNSORTABLE_DEVICE_LIST"}
SOURCE_CATEGORIES = {"UNEXPECTED_SOURCE", "INVALID_SOURCE_INDEX"}
TARGET_CATEGORIES = {"DUPLICATED_TARGET", "UNEXPECTED_TARGET", "INVALID_TARGET_INDEX"}
MAP_COLUMNS = ["caller", "callee", "source", "target", "problems"]


def _pair_categories(problems: Sequence[DeviceMapProblem], caller: str, callee: str, src: str, dst: str) -> list[str]:
    """The categories of the problems that involve one mapped pair."""
    found = []
    for p in problems:
        if (p.worker, p.target) != (caller, callee) or p.category in NODE_CATEGORIES:
            continue
        named = {str(d) for d in p.devices}
        if (
            p.category == "UNKNOWN_TARGET_NAME"
            or (p.category in SOURCE_CATEGORIES and src in named)
            or (p.category in TARGET_CATEGORIES and dst in named)
        ):
            found.append(str(p.category))
    return found


def maps_table(plan: TopologyPlan, problems: Sequence[DeviceMapProblem] = ()) -> pd.DataFrame:
    """One row per mapped device pair (caller, callee, source, target) and the problems touching it."""
    records = [
        {"caller": w.name, "callee": callee, "source": src, "target": dst,
         "problems": ", ".join(_pair_categories(problems, w.name, callee, src, dst))}
        for w in plan.workers
        for callee, pairs in w.device_maps
        for src, dst in pairs
    ]  # fmt: skip
    return pd.DataFrame.from_records(records, columns=MAP_COLUMNS)


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
    records = [
        {"caller": p.caller, "callee": p.callee, "samples": p.samples,
         "median us": round(p.median_s * 1e6, 1), "p90 us": round(p.p90_s * 1e6, 1)}
        for p in rtt.pairs
    ]  # fmt: skip
    return pd.DataFrame.from_records(records, columns=["caller", "callee", "samples", "median us", "p90 us"])


def bandwidth_table(results: Sequence[Bandwidth]) -> pd.DataFrame:
    records = [
        {"caller": b.caller, "callee": b.callee, "MB": round(b.nbytes / 1e6, 2), "repeats": b.repeats,
         "median s": round(b.median_s, 4), "MB/s": round(b.mb_per_s, 1)}
        for b in results
    ]  # fmt: skip
    return pd.DataFrame.from_records(records, columns=["caller", "callee", "MB", "repeats", "median s", "MB/s"])


def backends_table(rows: Sequence[BackendInfo]) -> pd.DataFrame:
    records = [
        {"registry": r.registry, "name": r.name, "options handler": r.construct_handler, "init handler": r.init_handler}
        for r in rows
    ]
    return pd.DataFrame.from_records(records, columns=["registry", "name", "options handler", "init handler"])


def rtt_heatmap(rtt: RttMatrix) -> Figure:
    """Median ``rpc_sync`` round trip per caller (rows) and callee (columns), in microseconds."""
    n = len(rtt.names)
    fig = new_figure(max(4.0, 1.1 * n + 2.5), max(3.2, 0.9 * n + 1.8))
    ax = fig.add_subplot()
    values = np.array(rtt.median_matrix(), dtype=float) * 1e6
    image = ax.imshow(values, cmap="viridis")
    ax.set_xticks(range(n), rtt.names, rotation=30, ha="right")
    ax.set_yticks(range(n), rtt.names)
    ax.set_xlabel("callee")
    ax.set_ylabel("caller")
    ax.set_title("rpc_sync round trip, median (us)")
    if n <= 8:
        finite = values[np.isfinite(values)]
        middle = float(np.median(finite)) if finite.size else 0.0
        for (i, j), value in np.ndenumerate(values):
            pair = rtt.get(rtt.names[i], rtt.names[j])
            if pair is None or not math.isfinite(value):
                continue
            ink = "black" if value > middle else "white"
            ax.text(j, i, f"{value:.0f}\np90 {pair.p90_s * 1e6:.0f}", ha="center", va="center", fontsize=8, color=ink)
    colorbar = fig.colorbar(image, ax=ax)
    colorbar.ax.tick_params(colors=NEUTRAL_INK)
    style_axes(ax)
    return fig


def _positions(names: Sequence[str]) -> dict[str, tuple[float, float]]:
    n = len(names)
    if n == 1:
        return {names[0]: (0.0, 0.0)}
    return {name: (math.cos(math.pi / 2 - 2 * math.pi * i / n), math.sin(math.pi / 2 - 2 * math.pi * i / n))
            for i, name in enumerate(names)}  # fmt: skip


def _pairs_label(pairs: Sequence[tuple[str, str]]) -> str:
    if len(pairs) <= 2:
        return "\n".join(f"{s}→{d}" for s, d in pairs)
    if all(s == d for s, d in pairs):
        return f"{len(pairs)} pairs, each d→d"
    return f"{len(pairs)} pairs"


def _arrow(
    ax,
    start,
    end,
    colour: str,
    rad: float,
    label: str,
    width: float,
    ends=(None, None),
    dashed=False,
    label_colour: str | None = None,
) -> None:
    """A curved arrow start -> end; its label sits a third of the way along, nearer the caller."""
    patch = FancyArrowPatch(
        start, end, connectionstyle=f"arc3,rad={rad}", arrowstyle="-|>", mutation_scale=12, color=colour,
        linewidth=width, linestyle="--" if dashed else "-", patchA=ends[0], patchB=ends[1], shrinkA=2, shrinkB=2,
    )  # fmt: skip
    ax.add_patch(patch)
    if label:
        (x1, y1), (x2, y2) = start, end
        cx, cy = (x1 + x2) / 2 + rad * (y2 - y1), (y1 + y2) / 2 - rad * (x2 - x1)
        t = 0.35
        lx = (1 - t) ** 2 * x1 + 2 * t * (1 - t) * cx + t**2 * x2
        ly = (1 - t) ** 2 * y1 + 2 * t * (1 - t) * cy + t**2 * y2
        align = "center" if abs(x2 - x1) < 0.2 else ("left" if x2 > x1 else "right")  # spread labels apart
        ax.text(lx, ly, label, fontsize=7, color=label_colour or colour, ha=align, va="center")


def _self_loop(ax, centre, colour: str, label: str, width: float) -> None:
    x, y = centre
    start, end = (x - 0.07, y + 0.1), (x + 0.07, y + 0.1)
    ax.add_patch(FancyArrowPatch(start, end, connectionstyle="arc3,rad=-2.2", arrowstyle="-|>", mutation_scale=10,
                                 color=colour, linewidth=width, shrinkA=0, shrinkB=0))  # fmt: skip
    if label:
        ax.text(x, y + 0.32, label, fontsize=7, color=colour, ha="center", va="bottom")


def _node_text(plan: TopologyPlan, name: str) -> str:
    worker = next(w for w in plan.workers if w.name == name)
    lines = [name, f"{worker.device_count} × cuda" if worker.device_count else "cpu only"]
    if worker.devices:
        shown = ", ".join(worker.devices[:4]) + (" …" if len(worker.devices) > 4 else "")
        lines.append(f"devices: {shown}")
    return "\n".join(lines)


def _draw_nodes(ax, plan: TopologyPlan, pos: dict[str, tuple[float, float]], problems) -> dict[str, Any]:
    """Worker boxes (red, with categories, for worker-level problems); returns each box patch."""
    node_problems: dict[str, set[str]] = {}
    for p in problems:
        if p.category in NODE_CATEGORIES and p.worker is not None:
            node_problems.setdefault(p.worker, set()).add(str(p.category))
    boxes: dict[str, Any] = {}
    for name, (x, y) in pos.items():
        bad = sorted(node_problems.get(name, ()))
        if len(pos) > 16:  # too many for boxes: a dot and a name
            ax.plot([x], [y], "o", color=PROBLEM_COLOUR if bad else NEUTRAL_INK, markersize=4)
            ax.text(x * 1.08, y * 1.08, name, ha="center", va="center", fontsize=5, color=NEUTRAL_INK)
            continue
        frame = {"boxstyle": "round,pad=0.4", "facecolor": (0.5, 0.5, 0.5, 0.12),
                 "edgecolor": PROBLEM_COLOUR if bad else NEUTRAL_INK, "linewidth": 2.0 if bad else 1.0}  # fmt: skip
        label = _node_text(plan, name)
        box = ax.text(x, y, label, ha="center", va="center", fontsize=8, color=NEUTRAL_INK, bbox=frame, zorder=3)
        boxes[name] = box.get_bbox_patch()
        if bad:
            below = 4.8 * (label.count("\n") + 1) + 6  # points: half the box's text lines, plus padding
            ax.annotate(", ".join(bad), (x, y), xytext=(0, -below), textcoords="offset points",
                        ha="center", va="top", fontsize=7, color=PROBLEM_COLOUR)  # fmt: skip
    return boxes


def _ghost(ax, name: str, near: tuple[float, float], count: int) -> tuple[tuple[float, float], Any]:
    """A dashed box for a map target that is not in the group, placed outside its caller."""
    x, y = near[0] * 1.6 + 0.3 * count, near[1] * 1.6 + 0.25
    frame = {"boxstyle": "round,pad=0.3", "facecolor": "none", "edgecolor": PROBLEM_COLOUR, "linestyle": "--"}
    box = ax.text(x, y, f"{name}\n(not in group)", ha="center", va="center", fontsize=7, color=PROBLEM_COLOUR,
                  bbox=frame)  # fmt: skip
    return (x, y), box.get_bbox_patch()


def topology_figure(
    plan: TopologyPlan, problems: Sequence[DeviceMapProblem] = (), max_labelled_edges: int = 24
) -> Figure:
    """Workers as nodes (with their devices), one arrow per mapped device pair, caller -> callee.

    Pairs between the same two workers share one arrow once the plan has more than
    ``max_labelled_edges`` pairs; problems colour their edge or node red with the category.
    """
    pos = _positions(plan.names)
    n = len(pos)
    scale = min(2.5, 1.0 + 0.08 * max(0, n - 4))
    fig = new_figure(6.4 * scale, 5.2 * scale)
    ax = fig.add_subplot()
    per_pair = sum(len(pairs) for w in plan.workers for _, pairs in w.device_maps) <= max_labelled_edges
    shared = {_pairs_label(pairs) for w in plan.workers for _, pairs in w.device_maps}
    common = shared.pop() if not per_pair and len(shared) == 1 else ""  # said once in the title instead
    boxes = _draw_nodes(ax, plan, pos, problems)
    ghosts: dict[str, tuple[float, float]] = {}
    for worker in plan.workers:
        start = pos[worker.name]
        for callee, pairs in worker.device_maps:
            if callee not in pos and callee not in ghosts:
                ghosts[callee], boxes[callee] = _ghost(ax, callee, start, len(ghosts))
            end = pos.get(callee) or ghosts[callee]
            groups = [[pair] for pair in pairs] if per_pair else [list(pairs)]
            found = [sorted({c for s, d in g for c in _pair_categories(problems, worker.name, callee, s, d)})
                     for g in groups]  # fmt: skip
            lines = []
            for group, categories in zip(groups, found, strict=True):
                pairs_text = _pairs_label(group) if (per_pair or n <= 8) and not common else ""
                lines.append(f"{pairs_text} {', '.join(categories)}".strip())
            label = "\n".join(line for line in lines if line)
            label_colour = PROBLEM_COLOUR if any(found) else OK_COLOUR
            for k, categories in enumerate(found):
                colour, width = (PROBLEM_COLOUR, 1.6) if categories else (OK_COLOUR, 1.0 if n <= 16 else 0.3)
                text = label if k == 0 else ""
                if callee == worker.name:
                    _self_loop(ax, start, label_colour, text, width)
                else:
                    _arrow(ax, start, end, colour, 0.15 + 0.12 * k, text, width,
                           ends=(boxes.get(worker.name), boxes.get(callee)), dashed=callee not in pos,
                           label_colour=label_colour)  # fmt: skip
    extent = 1.45 + (0.6 if ghosts else 0.0)
    ax.set_xlim(-extent, extent)
    ax.set_ylim(-extent, extent)
    ax.set_aspect("equal")
    ax.axis("off")
    kind = "static" if plan.static_group else "dynamic"
    title = f"Device maps ({kind} group): arrow = caller's source device → callee's target device"
    subtitle = f"{len(problems)} problem(s)" + (f"; each arrow: {common}" if common else "")
    ax.set_title(f"{title}\n{subtitle}", fontsize=9, color=NEUTRAL_INK)
    return fig
