"""Views of past loader benchmark runs (the history): side by side, with their baselines, and two runs overlaid.

Every kept run holds its baselines' rows and its targets with their baselines, so a past run
reads as it did when it ran. A run is named by its place, time and label (``history.run_name``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd
from matplotlib.lines import Line2D

from inspector.loader.bench import METHOD_LABELS, side_by_side
from inspector.loader.bench.history import run_name, targets_side_by_side
from inspector.views._figures import NEUTRAL_INK, key_above, new_figure, style_axes
from inspector.views._palette import method_colour

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# The first run solid with circles, the second dashed with squares.
RUN_STYLES: tuple[tuple[Any, str], ...] = (("-", "o"), ("--", "s"))
WORKERLESS = ("sync", "memcpy", "h2d")


def history_table(runs: Sequence[Mapping[str, Any]], method: str | None = None) -> pd.DataFrame:
    """Past runs side by side: one row per (layout, size, workers, method), MiB/s of each run in its own column.

    Every method is shown, baselines included (``method`` keeps one).
    """
    frame = pd.DataFrame.from_records(side_by_side(runs, ("layout", "size_mb", "workers", "method"), "mb_s"))
    if frame.empty:
        return pd.DataFrame(columns=["layout", "size_mb", "workers", "method"])
    if method is not None:
        frame = frame[frame["method"] == method]
    order = {m: i for i, m in enumerate(METHOD_LABELS)}
    frame = frame.assign(_order=frame["method"].map(lambda m: order.get(m, len(order))))
    frame = frame.sort_values(["layout", "size_mb", "_order", "workers"], ignore_index=True).drop(columns="_order")
    frame["method"] = frame["method"].map(lambda m: METHOD_LABELS.get(m, m))
    return frame


def history_targets(runs: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Each run's targets side by side: the figure and its baseline, as ``ours / baseline``, with PASS or MISS."""
    names = [run_name(i, run) for i, run in enumerate(runs)]
    return pd.DataFrame.from_records(targets_side_by_side(runs), columns=["measurement", *names])


def history_environments(runs: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Where each past run ran: its id and label, time, commit, torch, numpy, CPU, GPU, load average, cancelled."""
    columns = [
        "run",
        "id",
        "label",
        "time",
        "commit",
        "torch",
        "numpy",
        "cpu",
        "cores",
        "gpu",
        "load_average",
        "cancelled",
    ]
    records = []
    for i, run in enumerate(runs):
        env = run.get("environment", {})
        records.append(
            {
                "run": f"#{i + 1}",
                "id": run.get("id", ""),
                "label": run.get("label", ""),
                "time": run.get("time"),
                "cancelled": run.get("cancelled", False),
                **{k: env.get(k) for k in columns[4:-1]},
            }
        )
    return pd.DataFrame.from_records(records, columns=columns)


def overlay_figure(first: Mapping[str, Any], second: Mapping[str, Any], names: Sequence[str] = ()) -> Figure:
    """Two kept runs in one chart: MiB/s by payload size, a colour per method, a line style per run; a panel
    per layout either run measured. ``names`` are the runs' names (``run_name``) for the key."""
    runs = (first, second)
    shown = list(names) or [run_name(i, run) for i, run in enumerate(runs)]
    layouts = sorted({row["layout"] for run in runs for row in run.get("rows", [])}) or ["(no rows)"]
    fig = new_figure(width=5.2 * len(layouts), height=3.8)
    axes = fig.subplots(1, len(layouts), squeeze=False)[0]
    methods: dict[str, str] = {}
    for ax, layout in zip(axes, layouts, strict=True):
        for (style, marker), run in zip(RUN_STYLES, runs, strict=True):
            rows = [row for row in run.get("rows", []) if row["layout"] == layout]
            workers = max((row["workers"] for row in rows if row["method"] == "ours"), default=None)
            for method in dict.fromkeys(row["method"] for row in rows):
                line = sorted(
                    (
                        row
                        for row in rows
                        if row["method"] == method
                        and (method in WORKERLESS or workers is None or row["workers"] == workers)
                    ),
                    key=lambda row: row["size_mb"],
                )
                if not line:
                    continue
                colour = method_colour(method)
                methods.setdefault(method, colour)
                ax.plot(
                    [row["size_mb"] for row in line],
                    [row["mb_s"] for row in line],
                    linestyle=style,
                    marker=marker,
                    color=colour,
                )
        ax.set_xscale("log", base=2)
        sizes = sorted({row["size_mb"] for run in runs for row in run.get("rows", []) if row["layout"] == layout})
        if sizes:
            ax.set_xticks(sizes, [f"{size:g}" for size in sizes])
            ax.minorticks_off()
        ax.set_yscale("log")
        ax.set_xlabel("payload size (MiB)")
        ax.set_ylabel("MiB/s (log)")
        ax.set_title(layout)
        style_axes(ax)
    handles = [Line2D([], [], color=colour, linewidth=3) for colour in methods.values()]
    labels = [METHOD_LABELS.get(m, m) for m in methods]
    for (style, marker), name in zip(RUN_STYLES, shown, strict=True):
        handles.append(Line2D([], [], color=NEUTRAL_INK, linestyle=style, marker=marker))
        labels.append(name)
    key_above(fig, handles, labels, columns=4)
    return fig


def history_blocks(history: Sequence[Mapping[str, Any]], skipped: str = "", overlay: Sequence[str] = ()) -> list[Any]:
    """The Past runs section: MiB/s of every method per run, each run's targets, two runs overlaid, where each ran."""
    from inspector.views._tables import styled
    from inspector.views.page import figure, note, table

    if not history:
        blocks: list[Any] = [note("No past runs yet: each Run is kept (also from `inspector bench loader`).")]
        return blocks + ([note(skipped)] if skipped else [])
    frame = history_table(history).rename(columns={"size_mb": "size MiB"})
    blocks = [table(styled(frame), "MiB/s of every method, baselines included, by run")]
    targets = history_targets(history)
    if not targets.empty:
        blocks.append(table(styled(targets), "Targets by run (ours / baseline)"))
    pair = overlay_pair(history, overlay)
    if pair is not None:
        names = [run_name(i, run) for i, run in enumerate(history) if run in pair]
        blocks.append(figure(overlay_figure(*pair, names=names), "two past runs overlaid"))
    blocks.append(table(styled(history_environments(history)), "Where each run ran"))
    return blocks + ([note(skipped)] if skipped else [])


def overlay_pair(history: Sequence[Mapping[str, Any]], ids: Sequence[str] = ()) -> tuple[Any, Any] | None:
    """The two runs to overlay: those named by ``ids`` (in history order), else the last two with rows."""
    chosen = [run for run in history if run.get("id") in set(ids)] if ids else []
    if len(chosen) != 2:
        chosen = [run for run in history if run.get("rows")][-2:]
    return (chosen[0], chosen[1]) if len(chosen) == 2 else None
