"""Views of the user's own loader profiled (``inspector.loader.profile_loader``): a table and a chart.

Each loader keeps the colour its name has in every loader figure (``views._palette.method_colour``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from inspector.loader import LoaderProfile
from inspector.views._figures import NEUTRAL_INK, axes_key_above, new_figure, style_axes
from inspector.views._palette import method_colour


def _profiles(profiles: LoaderProfile | Iterable[LoaderProfile]) -> list[LoaderProfile]:
    return [profiles] if isinstance(profiles, LoaderProfile) else list(profiles)


def profile_table(profiles: LoaderProfile | Iterable[LoaderProfile]) -> pd.DataFrame:
    """One row per profiled loader: first batch, batches/s, MiB/s, ms per batch (median, min, max), H2D."""
    return pd.DataFrame.from_records([p.summary() for p in _profiles(profiles)])


def _value_label(ax: Any, row: int, value: float, longest: float) -> None:
    """A bar's MiB/s at its end: inside a long bar (in white), after a short one, so none crosses the frame."""
    inside = value >= 0.5 * longest
    ax.text(value, row, f"{value:,.0f} " if inside else f" {value:,.0f}", va="center", fontsize=8,
            ha="right" if inside else "left", color="white" if inside else NEUTRAL_INK)


def profile_figure(profiles: LoaderProfile | Iterable[LoaderProfile]) -> Figure:
    """Left: milliseconds per batch, batch by batch, a line per loader. Right: MiB/s of each loader."""
    found = _profiles(profiles)
    fig = new_figure(width=8.0, height=3.6)
    left, right = fig.subplots(1, 2, width_ratios=(2, 1))
    for i, profile in enumerate(found):
        name = profile.label or profile.name
        ms = np.asarray(profile.batch_seconds) * 1e3
        colour = method_colour(name)
        left.plot(np.arange(1, len(ms) + 1), ms, marker=".", linewidth=1, color=colour, label=name)
        right.barh(i, profile.mb_per_s, color=colour)
        _value_label(right, i, profile.mb_per_s, max(p.mb_per_s for p in found))
    left.set_xlabel("batch")
    left.set_ylabel("ms per batch")
    left.set_yscale("log")
    left.set_title("time between batches (after warm-up)")
    right.set_yticks(range(len(found)), [p.label or p.name for p in found])
    right.set_xlabel("MiB/s of tensors and arrays", loc="right")  # ends with the frame: never past the edge
    right.invert_yaxis()
    for ax in (left, right):
        style_axes(ax)
    if found:
        axes_key_above(fig, [left])
    else:
        left.set_title("no profile yet")
    return fig
