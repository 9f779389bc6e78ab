"""Where a load's time goes, by stage: the median per payload size as a table and as stacked bars."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, is_dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from inspector.loader import STAGE_LABELS, STAGES, LoadTiming
from inspector.views._figures import axes_key_above, new_figure, style_axes

if TYPE_CHECKING:
    from matplotlib.figure import Figure

STAGE_COLOURS = dict(
    zip(STAGES, ("#c7c7c7", "#1f77b4", "#ff7f0e", "#bcbd22", "#2ca02c", "#9467bd", "#8c564b"), strict=True)
)


def row_records(rows: Iterable[Any]) -> list[dict[str, Any]]:
    """Benchmark rows (dataclasses or mappings) as plain dicts."""
    return [asdict(r) if is_dataclass(r) and not isinstance(r, type) else dict(r) for r in rows]


def stage_table(source: Iterable[Any]) -> pd.DataFrame:
    """Median milliseconds per stage, by payload size: from ``LoadTiming`` records or from bench rows (ours)."""
    items = list(source)
    columns = ["payload", *STAGES]
    if not items:
        return pd.DataFrame(columns=columns)
    if isinstance(items[0], LoadTiming):
        frame = pd.DataFrame.from_records([asdict(t) for t in items if t.ok])
        if frame.empty:
            return pd.DataFrame(columns=columns)
        frame["payload"] = frame["nbytes"].map(_size_bucket)
        table = frame.groupby("payload", sort=False)[list(STAGES)].median() * 1e3
        order = sorted(table.index, key=lambda label: float(label.split()[0]))
        return table.loc[order].reset_index()[columns]
    records = []
    for row in row_records(items):
        if row.get("method") != "ours" or row.get("read_ms") is None:
            continue
        stages = {stage: row.get(f"{stage}_ms") or 0.0 for stage in STAGES}
        records.append({"payload": f"{row['layout']} {row['size_mb']:g} MiB", **stages})
    return pd.DataFrame.from_records(records, columns=columns)


def _size_bucket(nbytes: int) -> str:
    """Loads grouped by size to the nearest power of two ("16 MiB", "0.25 MiB")."""
    mib = max(nbytes, 1) / 2**20
    return f"{2.0 ** round(float(np.log2(mib))):g} MiB"


def stage_figure(source: Iterable[Any]) -> Figure:
    """Stacked bars: where a load's time goes (read into shared memory, hand-off, build, H2D, callback)."""
    table = stage_table(source)
    fig = new_figure(width=6.4, height=0.5 + 0.45 * max(len(table), 2))
    ax = fig.add_subplot(1, 1, 1)
    left = np.zeros(len(table))
    for stage in STAGES:
        values = table[stage].to_numpy(dtype=float) if not table.empty else np.zeros(0)
        if values.size and values.any():
            ax.barh(table["payload"], values, left=left, color=STAGE_COLOURS[stage], label=STAGE_LABELS[stage])
            left += values
    ax.set_xlabel("median ms per load")
    ax.invert_yaxis()
    if not len(table):
        ax.set_title("no timings yet")
    style_axes(ax)
    axes_key_above(fig, [ax])
    return fig
