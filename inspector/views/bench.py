"""Benchmark views: ``Measurement`` rows (ours vs the baseline of the same run) as a chart."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, is_dataclass
from typing import TYPE_CHECKING, Any

from inspector.views._figures import NEUTRAL_INK, new_figure, style_axes

if TYPE_CHECKING:
    from matplotlib.figure import Figure

OURS, BASELINE, MISSED = "#1f77b4", "#c7c7c7", "#d62728"


def _records(rows: Iterable[Any]) -> list[dict[str, Any]]:
    return [asdict(r) if is_dataclass(r) and not isinstance(r, type) else dict(r) for r in rows]


def measurements_figure(rows: Iterable[Mapping[str, Any] | Any], title: str = "") -> Figure:
    """One small panel per figure: a bar for ours (red when its target is missed) beside the baseline's."""
    records = _records(rows)
    fig = new_figure(max(4.0, 2.6 * len(records)), 3.2)
    axes = fig.subplots(1, max(len(records), 1), squeeze=False)[0]
    for ax, record in zip(axes, records, strict=False):
        labels, values, colours = ["ours"], [record["value"]], [OURS if record["ok"] else MISSED]
        if record.get("baseline_value") is not None:
            labels.append("baseline")
            values.append(record["baseline_value"])
            colours.append(BASELINE)
        ax.bar(labels, values, color=colours)
        ax.set_ylabel(record["unit"], fontsize=8)
        name = record["name"] if len(record["name"]) <= 34 else record["name"][:33] + "…"
        ax.set_title(f"{name}\n{record.get('target') or ''}", fontsize=8)
        ax.tick_params(labelsize=8)
        style_axes(ax)
    if title:
        fig.suptitle(title, color=NEUTRAL_INK, fontsize=10)
    return fig
