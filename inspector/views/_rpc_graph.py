"""The device-map graph: workers as boxes, one arrow per mapped pair (or per worker pair), caller -> callee.

NOTE [ Graph labels ]
An arrow's label (its pairs, its problem categories) must never cover a worker's box: the
box names the worker and its devices, which is what the graph is read for. The axes have a
fixed place in the figure (no layout engine moves them later, and the equal aspect is applied
before measuring), so boxes can be measured with
the figure's renderer as soon as they exist, without drawing; each label then tries positions
along its own curve (nearer the caller first) and keeps the first whose extent meets no box
and no label placed before it. When every position meets another label it takes one that
only meets labels; when every position meets a box, the label is left out of the picture
(the tables list every problem), so a dense mesh stays readable. A map target that is not in
the group gets a dashed box placed the same way, before any label: positions outward from its
caller, on both sides, until one meets no worker and no other such box, and leaves room
between it and its caller for the arrowhead, so the arrow never ends over a worker's name.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.patches import FancyArrowPatch
from matplotlib.transforms import Bbox

from inspector.views._figures import NEUTRAL_INK, literal, new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from inspector.rpc import DeviceMapProblem, TopologyPlan

OK_COLOUR = "#1f77b4"
PROBLEM_COLOUR = "#d62728"
NODE_CATEGORIES = {"DUPLICATED_DEVICES", "INVALID_DEVICE_INDEX", "UNSORTABLE_DEVICE_LIST"}
SOURCE_CATEGORIES = {"UNEXPECTED_SOURCE", "INVALID_SOURCE_INDEX"}
TARGET_CATEGORIES = {"DUPLICATED_TARGET", "UNEXPECTED_TARGET", "INVALID_TARGET_INDEX"}
ALONG_CURVE = (0.35, 0.5, 0.25, 0.62, 0.18, 0.72, 0.12, 0.82)
LABEL_PADDING_PX = 2.0
GHOST_TURNS = (0.0, 0.45, -0.45, 0.9, -0.9, 1.35, -1.35, 1.8, -1.8, 2.4, -2.4, math.pi)  # radians off outward
GHOST_DISTANCES = (0.62, 0.9, 1.15)  # data units from the caller's centre (workers sit on the unit circle)
ARROW_ROOM_PX = 16.0  # clear space around a caller's box where the arrow to its ghost ends
EDGE_LABEL, NODE = "edge-label", "node"  # artist gids, so a test can find what must not overlap


def pair_problems(
    problems: Sequence[DeviceMapProblem], caller: str, callee: str, src: str, dst: str
) -> list[DeviceMapProblem]:
    """The problems that involve one mapped pair (its map's, at its source or its target end)."""
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
            found.append(p)
    return found


def pair_categories(problems: Sequence[DeviceMapProblem], caller: str, callee: str, src: str, dst: str) -> list[str]:
    return [str(p.category) for p in pair_problems(problems, caller, callee, src, dst)]


@dataclass
class _Label:
    """A label waiting for a place: its text and colour, and where it may go (data coordinates)."""

    text: str
    colour: str
    candidates: list[tuple[float, float]]
    ha: str = "center"


def _positions(names: Sequence[str]) -> dict[str, tuple[float, float]]:
    n = len(names)
    if n == 1:
        return {names[0]: (0.0, 0.0)}
    return {
        name: (math.cos(math.pi / 2 - 2 * math.pi * i / n), math.sin(math.pi / 2 - 2 * math.pi * i / n))
        for i, name in enumerate(names)
    }


def _pairs_label(pairs: Sequence[tuple[str, str]]) -> str:
    if len(pairs) <= 2:
        return "\n".join(f"{s}→{d}" for s, d in pairs)
    if all(s == d for s, d in pairs):
        return f"{len(pairs)} pairs, each d→d"
    return f"{len(pairs)} pairs"


def _along(start: tuple[float, float], end: tuple[float, float], rad: float) -> list[tuple[float, float]]:
    """Points of the arrow's arc (matplotlib's ``arc3``) at the candidate fractions, caller first."""
    (x1, y1), (x2, y2) = start, end
    cx, cy = (x1 + x2) / 2 + rad * (y2 - y1), (y1 + y2) / 2 - rad * (x2 - x1)
    return [
        ((1 - t) ** 2 * x1 + 2 * t * (1 - t) * cx + t**2 * x2, (1 - t) ** 2 * y1 + 2 * t * (1 - t) * cy + t**2 * y2)
        for t in ALONG_CURVE
    ]


def _arrow(ax: Any, start: Any, end: Any, colour: str, rad: float, width: float, ends: Any, dashed: bool) -> None:
    ax.add_artist(
        FancyArrowPatch(  # add_artist: limits are fixed, no need to measure every curve
            start,
            end,
            connectionstyle=f"arc3,rad={rad}",
            arrowstyle="-|>",
            mutation_scale=12,
            color=colour,
            linewidth=width,
            linestyle="--" if dashed else "-",
            patchA=ends[0],
            patchB=ends[1],
            shrinkA=2,
            shrinkB=2,
        )
    )


def _self_loop(ax: Any, centre: tuple[float, float], colour: str, width: float) -> list[tuple[float, float]]:
    x, y = centre
    start, end = (x - 0.07, y + 0.1), (x + 0.07, y + 0.1)
    ax.add_artist(
        FancyArrowPatch(
            start,
            end,
            connectionstyle="arc3,rad=-2.2",
            arrowstyle="-|>",
            mutation_scale=10,
            color=colour,
            linewidth=width,
            shrinkA=0,
            shrinkB=0,
        )
    )
    return [(x, y + dy) for dy in (0.34, 0.45, -0.34, -0.45)] + [(x + dx, y) for dx in (0.42, -0.42)]


def _node_text(plan: TopologyPlan, name: str) -> str:
    worker = next(w for w in plan.workers if w.name == name)
    lines = [name, f"{worker.device_count} × cuda" if worker.device_count else "cpu only"]
    if worker.devices:
        shown = ", ".join(worker.devices[:4]) + (" …" if len(worker.devices) > 4 else "")
        lines.append(f"devices: {shown}")
    return "\n".join(lines)


def _draw_nodes(
    ax: Any, plan: TopologyPlan, pos: dict[str, tuple[float, float]], problems: Any
) -> tuple[dict, list, dict]:
    """Worker boxes (red, with categories, for worker-level problems): their patches, every node artist,
    and each worker's name artist."""
    node_problems: dict[str, set[str]] = {}
    for p in problems:
        if p.category in NODE_CATEGORIES and p.worker is not None:
            node_problems.setdefault(p.worker, set()).add(str(p.category))
    boxes: dict[str, Any] = {}
    artists: list[Any] = []
    named: dict[str, Any] = {}
    for name, (x, y) in pos.items():
        bad = sorted(node_problems.get(name, ()))
        if len(pos) > 16:  # too many for boxes: a dot and a name
            ax.plot([x], [y], "o", color=PROBLEM_COLOUR if bad else NEUTRAL_INK, markersize=4)
            clear = {"boxstyle": "square,pad=0.2", "facecolor": "none", "edgecolor": "none"}  # an arrow's end
            named[name] = ax.text(
                x * 1.08, y * 1.08, name, ha="center", va="center", fontsize=5, color=NEUTRAL_INK, bbox=clear
            )
            artists.append(named[name])
            continue
        frame = {
            "boxstyle": "round,pad=0.4",
            "facecolor": (0.5, 0.5, 0.5, 0.12),
            "edgecolor": PROBLEM_COLOUR if bad else NEUTRAL_INK,
            "linewidth": 2.0 if bad else 1.0,
        }
        label = _node_text(plan, name)
        box = ax.text(x, y, label, ha="center", va="center", fontsize=8, color=NEUTRAL_INK, bbox=frame, zorder=3)
        boxes[name] = box.get_bbox_patch()
        named[name] = box
        artists.append(box)
        if bad:
            below = 4.8 * (label.count("\n") + 1) + 6  # points: half the box's text lines, plus padding
            artists.append(
                ax.annotate(
                    ", ".join(bad),
                    (x, y),
                    xytext=(0, -below),
                    textcoords="offset points",
                    ha="center",
                    va="top",
                    fontsize=7,
                    color=PROBLEM_COLOUR,
                )
            )
    return boxes, artists, named


def _ghost_candidates(near: tuple[float, float], limit: float) -> list[tuple[float, float]]:
    """Places for a dashed box of a caller at ``near``: outward first, then turning to either side."""
    x, y = near
    outward = math.atan2(y, x) if (x, y) != (0.0, 0.0) else math.pi / 2
    spots = []
    for turn in GHOST_TURNS:  # the nearer to outward the better, then the nearer to the caller
        for distance in GHOST_DISTANCES:
            gx, gy = x + distance * math.cos(outward + turn), y + distance * math.sin(outward + turn)
            if max(abs(gx), abs(gy)) <= limit:
                spots.append((gx, gy))
    return spots


def _ghost(
    ax: Any, name: str, near: tuple[float, float], blocked: list[Bbox], caller: Bbox, renderer: Any, limit: float
) -> tuple[tuple[float, float], Any]:
    """A dashed box for a map target not in the group, where it meets no node (NOTE [ Graph labels ])."""
    frame = {"boxstyle": "round,pad=0.3", "facecolor": "none", "edgecolor": PROBLEM_COLOUR, "linestyle": "--"}
    box = ax.text(
        0, 0, f"{name}\n(not in group)", ha="center", va="center", fontsize=7, color=PROBLEM_COLOUR, bbox=frame
    )
    room = caller.padded(ARROW_ROOM_PX)
    frame_px = ax.get_window_extent(renderer)
    spots = _ghost_candidates(near, limit) or [near]
    for spot in spots:
        box.set_position(spot)
        extent = _extent(box, renderer)
        inside = frame_px.contains(extent.x0, extent.y0) and frame_px.contains(extent.x1, extent.y1)
        if inside and not extent.overlaps(room) and not any(extent.overlaps(other) for other in blocked):
            return spot, box
    box.set_position(spots[-1])  # nowhere is clear (a crowded picture): the farthest place
    return spots[-1], box


def _place_ghosts(
    fig: Figure,
    ax: Any,
    plan: TopologyPlan,
    pos: dict[str, tuple[float, float]],
    named: dict[str, Any],
    boxes: dict[str, Any],
    obstacles: list[Any],
    limit: float,
) -> dict[str, tuple[float, float]]:
    """A dashed box for every map target not in the group, each clear of the rest; where each went.

    Each box joins ``boxes`` (so arrows end at its edge) and ``obstacles`` (so labels avoid it).
    """
    renderer = _renderer(fig, ax)
    blocked = [_extent(artist, renderer) for artist in obstacles]
    ghosts: dict[str, tuple[float, float]] = {}
    for worker in plan.workers:
        for callee, _ in worker.device_maps:
            if callee in pos or callee in ghosts:
                continue
            caller = _extent(named[worker.name], renderer)
            ghosts[callee], box = _ghost(ax, callee, pos[worker.name], blocked, caller, renderer, limit)
            boxes[callee] = box.get_bbox_patch()
            obstacles.append(box)
            blocked.append(_extent(box, renderer))
    return ghosts


def _extent(artist: Any, renderer: Any) -> Bbox:
    extent = literal(artist).get_window_extent(renderer)
    patch = artist.get_bbox_patch() if hasattr(artist, "get_bbox_patch") else None
    if patch is not None:
        artist.update_bbox_position_size(renderer)
        extent = Bbox.union([extent, patch.get_window_extent(renderer)])
    return extent.padded(LABEL_PADDING_PX)


def _renderer(fig: Figure, ax: Any) -> Any:
    """A renderer that measures artists where they will be drawn (NOTE [ Graph labels ])."""
    renderer = FigureCanvasAgg(fig).get_renderer()
    ax.apply_aspect()  # the equal aspect shrinks the axes at draw time: measure in the final coordinates
    return renderer


def place_labels(fig: Figure, ax: Any, labels: list[_Label], obstacles: list[Any]) -> None:
    """Put each label where it covers no node and, if possible, no other label (NOTE [ Graph labels ])."""
    if not labels:
        return
    renderer = _renderer(fig, ax)
    blocked = [_extent(artist, renderer) for artist in obstacles]
    placed: list[Bbox] = []
    for label in labels:
        text = literal(
            ax.text(
                0, 0, label.text, fontsize=7, color=label.colour, ha=label.ha, va="center", zorder=2, gid=EDGE_LABEL
            )
        )
        chosen = crowded = None
        for candidate in label.candidates:
            text.set_position(candidate)
            extent = text.get_window_extent(renderer).padded(LABEL_PADDING_PX)
            if any(extent.overlaps(box) for box in blocked):
                continue
            if not any(extent.overlaps(other) for other in placed):
                chosen = (candidate, extent)
                break
            crowded = crowded or (candidate, extent)
        chosen = chosen or crowded
        if chosen is None:
            text.remove()  # every place covers a worker: the tables still list it
            continue
        text.set_position(chosen[0])
        placed.append(chosen[1])


def topology_figure(
    plan: TopologyPlan, problems: Sequence[DeviceMapProblem] = (), max_labelled_edges: int = 24
) -> Figure:
    """Workers as nodes (with their devices), one arrow per mapped device pair, caller -> callee.

    Pairs between the same two workers share one arrow once the plan has more than
    ``max_labelled_edges`` pairs; problems colour their edge or node red with the category.
    Labels never cover a worker (NOTE [ Graph labels ]).
    """
    pos = _positions(plan.names)
    n = len(pos)
    scale = min(1.4, 1.0 + 0.05 * max(0, n - 4))  # new_figure keeps it within the notebook (800 x 600 px)
    fig = new_figure(5.6 * scale, 4.8 * scale)
    fig.set_layout_engine("none")  # the axes stay where they are put (see NOTE [ Graph labels ])
    ax = fig.add_axes((0.02, 0.02, 0.96, 0.86))
    per_pair = plan.pair_count <= max_labelled_edges
    shared = {_pairs_label(pairs) for w in plan.workers for _, pairs in w.device_maps}
    common = shared.pop() if not per_pair and len(shared) == 1 else ""  # said once in the title instead
    outside = [callee for w in plan.workers for callee, _ in w.device_maps if callee not in pos]
    extent = 1.45 + (0.6 if outside else 0.0)
    ax.set_xlim(-extent, extent)
    ax.set_ylim(-extent, extent)
    ax.set_aspect("equal")
    ax.axis("off")
    boxes, obstacles, named = _draw_nodes(ax, plan, pos, problems)
    ghosts = _place_ghosts(fig, ax, plan, pos, named, boxes, obstacles, extent - 0.2) if outside else {}
    labels: list[_Label] = []
    for worker in plan.workers:
        start = pos[worker.name]
        for callee, pairs in worker.device_maps:
            end = pos.get(callee) or ghosts[callee]
            groups = [[pair] for pair in pairs] if per_pair else [list(pairs)]
            found = [
                sorted({c for s, d in g for c in pair_categories(problems, worker.name, callee, s, d)}) for g in groups
            ]
            lines = []
            for group, categories in zip(groups, found, strict=True):
                pairs_text = _pairs_label(group) if (per_pair or n <= 8) and not common else ""
                lines.append(f"{pairs_text} {', '.join(categories)}".strip())
            text = "\n".join(line for line in lines if line)
            label_colour = PROBLEM_COLOUR if any(found) else OK_COLOUR
            for k, categories in enumerate(found):
                colour, width = (PROBLEM_COLOUR, 1.6) if categories else (OK_COLOUR, 1.0 if n <= 16 else 0.3)
                if callee == worker.name:
                    spots = _self_loop(ax, start, label_colour, width)
                else:
                    rad = 0.15 + 0.12 * k
                    origin, first = start, boxes.get(worker.name)
                    if first is None and callee in ghosts:  # a dot: start beyond its name, not across it
                        origin, first = named[worker.name].get_position(), named[worker.name].get_bbox_patch()
                    _arrow(ax, origin, end, colour, rad, width, (first, boxes.get(callee)), callee not in pos)
                    spots = _along(origin, end, rad)
                if k == 0 and text:
                    labels.append(_Label(text, label_colour, spots))
    for artist in obstacles:
        artist.set_gid(NODE)
    kind = "static" if plan.static_group else "dynamic"
    title = f"Device maps ({kind} group): arrow = caller's source device → callee's target device"
    subtitle = f"{len(problems)} problem(s)" + (f"; each arrow: {common}" if common else "")
    ax.set_title(f"{title}\n{subtitle}", fontsize=9, color=NEUTRAL_INK)
    place_labels(fig, ax, labels, obstacles)
    return fig
