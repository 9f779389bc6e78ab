"""The device-level picture of a plan: one GPU x GPU grid per worker pair, each mapped pair a cell.

NOTE [ Device grid ]
A worker graph bundles a mesh's pairs into one arrow per worker pair ("8 pairs"), so it cannot
show *which* pair of eight is wrong. The grid can: rows are the callers' source devices and
columns the callees' target devices, grouped by worker, so block (caller, callee) is that pair of
workers' ``set_device_map`` and each filled cell one ``source -> target`` entry of it, blue when
torch accepts it and red (with a cross) when a check refuses it. A device a map names but the
worker does not have (``cuda:7`` on a 4-GPU worker) gets its own row or column, its tick in red;
a worker-level problem (its devices list) paints the worker's name red. Every block is square
in cells, so an 8-GPU pair reads as an 8 x 8 grid; device ticks are shown while they fit, and
beyond that only the workers' names.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.colors import ListedColormap, to_rgba

from inspector.views._figures import DPI, NEUTRAL_INK, new_figure, pad_figure
from inspector.views._rpc_graph import NODE_CATEGORIES, OK_COLOUR, PROBLEM_COLOUR, pair_problems

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from inspector.rpc import DeviceMapProblem, TopologyPlan

EMPTY, MAPPED, REFUSED = 0, 1, 2
EMPTY_CELL = (0.5, 0.5, 0.5, 0.10)  # reads as "nothing here" on light and dark backgrounds
MAX_DEVICE_TICKS = 48  # per axis; beyond, only the workers' names label the blocks
NAME_CHAR_PX, NAME_LINE_PX = 5.0, 11.0  # a worker name's width per character and its height, at 7.5 pt
MAX_CROSSES = 400  # refused cells marked with an x as well as red, while the marks stay legible


def _device_order(device: str) -> tuple[int, str, int]:
    kind, _, index = device.partition(":")
    return (0 if kind == "cpu" else 1, kind, int(index) if index.isdigit() else -1)


def _short(device: str) -> str:
    kind, _, index = device.partition(":")
    return index if kind == "cuda" and index else device


def _has(plan: TopologyPlan, worker: str, device: str) -> bool:
    counts = plan.device_counts
    kind, _, index = device.partition(":")
    if kind == "cpu":
        return True
    return kind == "cuda" and index.isdigit() and worker in counts and int(index) < counts[worker]


def device_axes(plan: TopologyPlan) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The grid's rows (caller, source device) and columns (callee, target device), grouped by worker.

    A worker's devices are its CUDA devices, plus ``cpu`` and any device a map names (a device
    the worker lacks included), in device order; callers are the workers with maps, callees the
    workers (or names outside the group) they call.
    """
    sources: dict[str, set[str]] = {}
    targets: dict[str, set[str]] = {}
    for w in plan.workers:
        for callee, pairs in w.device_maps:
            sources.setdefault(w.name, set()).update(s for s, _ in pairs)
            targets.setdefault(callee, set()).update(d for _, d in pairs)
    counts = plan.device_counts

    def devices(worker: str, named: set[str]) -> list[str]:
        own = {f"cuda:{i}" for i in range(counts.get(worker, 0))}
        return sorted(own | named, key=_device_order)

    order = {name: i for i, name in enumerate(plan.names)}
    callers = [name for name in plan.names if name in sources]
    callees = sorted(targets, key=lambda name: (order.get(name, len(order)), name))
    rows = [(name, d) for name in callers for d in devices(name, sources[name])]
    columns = [(name, d) for name in callees for d in devices(name, targets[name])]
    return rows, columns


def device_grid(plan: TopologyPlan, problems: Sequence[DeviceMapProblem] = ()) -> tuple[np.ndarray, list, list]:
    """The grid's cells (``EMPTY``, ``MAPPED`` or ``REFUSED``) with its rows and columns (see ``device_axes``)."""
    rows, columns = device_axes(plan)
    row_at = {key: i for i, key in enumerate(rows)}
    column_at = {key: j for j, key in enumerate(columns)}
    cells = np.full((len(rows), len(columns)), EMPTY, dtype=np.int8)
    for w in plan.workers:
        for callee, pairs in w.device_maps:
            for source, target in pairs:
                refused = bool(pair_problems(problems, w.name, callee, source, target))
                cells[row_at[(w.name, source)], column_at[(callee, target)]] = REFUSED if refused else MAPPED
    return cells, rows, columns


def _blocks(keys: Sequence[tuple[str, str]]) -> list[tuple[str, int, int]]:
    """(worker, first index, last index) of each run of one worker's devices along an axis."""
    runs: list[tuple[str, int, int]] = []
    for i, (worker, _) in enumerate(keys):
        if runs and runs[-1][0] == worker:
            runs[-1] = (worker, runs[-1][1], i)
        else:
            runs.append((worker, i, i))
    return runs


def device_grid_figure(plan: TopologyPlan, problems: Sequence[DeviceMapProblem] = ()) -> Figure:
    """One GPU x GPU grid per worker pair: caller's source devices (rows) -> callee's target devices (columns).

    Mapped pairs are blue, refused ones red with a cross; see NOTE [ Device grid ].
    """
    cells, rows, columns = device_grid(plan, problems)
    n_rows, n_columns = max(1, len(rows)), max(1, len(columns))
    cell_in = min(0.3, 5.6 / max(n_rows, n_columns))
    fig = new_figure(max(6.4, n_columns * cell_in + 2.2), n_rows * cell_in + 2.4)  # the title needs 6.4 in
    pad_figure(fig)  # the frame never touches the image's edge
    ax = fig.add_subplot()
    kind = "static" if plan.static_group else "dynamic"
    refused = int((cells == REFUSED).sum())
    categories = sorted({str(p.category) for p in problems})
    verdict = (
        f"{refused} refused pair(s) in red: {', '.join(categories)}"
        if refused
        else (f"{len(problems)} problem(s): {', '.join(categories)}" if problems else "every mapped pair accepted")
    )
    ax.set_title(
        f"Device maps ({kind} group): a block per caller → callee, a blue cell per mapped pair\n{verdict}",
        fontsize=9,
        color=NEUTRAL_INK,
    )
    if not rows:
        ax.axis("off")
        ax.text(0.5, 0.5, "no device maps", ha="center", va="center", color=NEUTRAL_INK, transform=ax.transAxes)
        return fig
    palette = ListedColormap([to_rgba(EMPTY_CELL), to_rgba(OK_COLOUR), to_rgba(PROBLEM_COLOUR)])
    cell_px = cell_in * DPI
    ax.imshow(
        cells,
        cmap=palette,
        vmin=EMPTY,
        vmax=REFUSED,
        aspect="equal",
        interpolation="nearest" if cell_px >= 2 else "antialiased",
    )
    if refused <= MAX_CROSSES:
        bad_rows, bad_columns = np.nonzero(cells == REFUSED)
        ax.scatter(
            bad_columns, bad_rows, marker="x", s=min(40.0, (cell_in * 72 * 0.6) ** 2), color="white", linewidths=1.2
        )
    row_blocks, column_blocks = _blocks(rows), _blocks(columns)
    narrowest = min(last - first + 1 for _, first, last in row_blocks + column_blocks) * cell_px
    line = min(1.0, narrowest / 10)  # separators never drown small blocks
    for _, _, last in row_blocks[:-1]:
        ax.axhline(last + 0.5, color=NEUTRAL_INK, linewidth=line)
    for _, _, last in column_blocks[:-1]:
        ax.axvline(last + 0.5, color=NEUTRAL_INK, linewidth=line)
    _label_axes(ax, plan, problems, rows, columns, row_blocks, column_blocks, cell_in)
    for spine in ax.spines.values():
        spine.set_color(NEUTRAL_INK)
    ax.set_facecolor((0, 0, 0, 0))
    return fig


def _label_axes(
    ax: Any,
    plan: TopologyPlan,
    problems: Sequence[DeviceMapProblem],
    rows: list,
    columns: list,
    row_blocks: list,
    column_blocks: list,
    cell_in: float,
) -> None:
    """Device ticks beside the cells while they fit; the workers' names outside them (red when at fault)."""
    at_fault = {p.worker for p in problems if p.category in NODE_CATEGORIES}
    members = set(plan.names)
    ax.tick_params(colors=NEUTRAL_INK, labelsize=6, length=2)
    ax.xaxis.tick_top()
    for side, keys, blocks, title in (
        ("top", columns, column_blocks, "callee: its target devices"),
        ("left", rows, row_blocks, "caller: its source devices"),
    ):
        axis = ax.xaxis if side == "top" else ax.yaxis
        ticked = len(keys) <= MAX_DEVICE_TICKS
        axis.set_ticks(range(len(keys)) if ticked else [], [_short(d) for _, d in keys] if ticked else [])
        for tick, (worker, device) in zip(axis.get_ticklabels(), keys if ticked else [], strict=True):
            if worker in members and not _has(plan, worker, device):
                tick.set_color(PROBLEM_COLOUR)  # a device this worker does not have
        names = ax.secondary_xaxis("top") if side == "top" else ax.secondary_yaxis("left")
        names_axis = names.xaxis if side == "top" else names.yaxis
        for spine in names.spines.values():
            spine.set_visible(False)
        labels = [n if n in members else f"{n} (not in group)" for n, _, _ in blocks]
        block_px = min(last - first + 1 for _, first, last in blocks) * cell_in * DPI
        widest_px = max(len(label) for label in labels) * NAME_CHAR_PX
        upright = side == "top" and block_px < widest_px  # too narrow for a level name: turn it up
        every = max(1, math.ceil(NAME_LINE_PX / block_px)) if upright or side == "left" else 1
        shown = [(block, label) for k, (block, label) in enumerate(zip(blocks, labels, strict=True)) if k % every == 0]
        names_axis.set_ticks([(first + last) / 2 for (_, first, last), _ in shown], [label for _, label in shown])
        names.tick_params(length=0, pad=14 if ticked else 2, labelsize=7.5, colors=NEUTRAL_INK)
        if upright:
            names_axis.set_tick_params(rotation=90)
        for tick, ((name, _, _), _) in zip(names_axis.get_ticklabels(), shown, strict=True):
            if name in at_fault or name not in members:
                tick.set_color(PROBLEM_COLOUR)
        names_axis.set_label_text(title, color=NEUTRAL_INK, fontsize=8)
