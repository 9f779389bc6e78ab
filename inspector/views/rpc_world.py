"""A running local world's views: what each worker reported, round trips and bandwidth, as tables and figures.

Sizes and throughput are in MiB and MiB/s, as in the Loader tab; latencies in microseconds, with
a pair whose p99 strays far from its median flagged. The RPC page shows them (``views.rpc``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.patches import Rectangle

from inspector.rpc._records import MIB, TAIL_FACTOR
from inspector.views._figures import NEUTRAL_INK, axes_key_above, new_figure, pad_figure, style_axes
from inspector.views._palette import hashed_colour
from inspector.views._rpc_graph import PROBLEM_COLOUR

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from inspector.rpc import Bandwidth, RttMatrix, WorkerSnapshot


def map_text(mapping: dict[str, dict[str, str]] | dict[str, dict]) -> str:
    """Each caller's maps on one line: ``w1: cuda:0->cuda:1; w2: ...``."""
    return "; ".join(
        f"{caller}: " + ", ".join(f"{k}->{v}" for k, v in pairs.items()) for caller, pairs in mapping.items()
    )


def workers_table(workers: Sequence[WorkerSnapshot]) -> pd.DataFrame:
    """What each worker of a running world reported, with its derived reverse maps and device list."""
    records = [
        {
            "rank": w.rank,
            "name": w.name,
            "pid": w.pid,
            "device count": w.device_count,
            "device maps": map_text(w.device_maps),
            "devices": ", ".join(w.devices),
            "reverse maps": map_text(w.reverse_device_maps),
            "device list": ", ".join(w.device_list),
            "init_rpc s": round(w.init_seconds, 3),
        }
        for w in workers
    ]
    columns = [
        "rank",
        "name",
        "pid",
        "device count",
        "device maps",
        "devices",
        "reverse maps",
        "device list",
        "init_rpc s",
    ]
    return pd.DataFrame.from_records(records, columns=columns)


def rtt_table(rtt: RttMatrix) -> pd.DataFrame:
    """Every pair's round trips in microseconds: min, median, p90, p99, max, and the tail flagged."""
    records = [
        {
            "caller": p.caller,
            "callee": p.callee,
            "samples": p.samples,
            "min us": round(p.min_s * 1e6, 1),
            "median us": round(p.median_s * 1e6, 1),
            "p90 us": round(p.p90_s * 1e6, 1),
            "p99 us": round(p.p99_s * 1e6, 1),
            "max us": round(p.max_s * 1e6, 1),
            "tail": f"p99 = {p.tail_ratio:.1f}x median" if p.has_tail else "",
        }
        for p in rtt.pairs
    ]
    columns = ["caller", "callee", "samples", "min us", "median us", "p90 us", "p99 us", "max us", "tail"]
    return pd.DataFrame.from_records(records, columns=columns)


def bandwidth_table(results: Sequence[Bandwidth]) -> pd.DataFrame:
    """Each pair and message size: warm-up and timed sends, and the worst, median and best MiB/s."""
    records = [
        {
            "caller": b.caller,
            "callee": b.callee,
            "MiB": round(b.mib, 3),
            "warm-up": b.warmup,
            "repeats": b.repeats,
            "min MiB/s": round(b.worst_mib_per_s, 1),
            "median MiB/s": round(b.mib_per_s, 1),
            "max MiB/s": round(b.best_mib_per_s, 1),
        }
        for b in results
    ]
    columns = ["caller", "callee", "MiB", "warm-up", "repeats", "min MiB/s", "median MiB/s", "max MiB/s"]
    return pd.DataFrame.from_records(records, columns=columns)


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
            ax.text(
                j,
                i,
                text,
                ha="center",
                va="center",
                fontsize=8,
                color=ink,
                fontweight="bold" if pair.has_tail else "normal",
            )
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
