"""Figures read on JupyterLab's light and dark themes: transparent background, theme-neutral text."""

from __future__ import annotations

import io

import matplotlib.colors as mc
import numpy as np
import pytest
import torch
from matplotlib.text import Text
from PIL import Image

import inspector.examples  # noqa: F401
from inspector.dispatch import CallContext, what_if
from inspector.loader.bench import BenchRow
from inspector.rpc import TopologyPlan
from inspector.views._figures import NEUTRAL_INK, figure_to_png
from inspector.views.bench import measurements_figure
from inspector.views.dispatch import what_if_heatmap
from inspector.views.loader import stage_figure, throughput_by_size_figure
from inspector.views.rpc import topology_figure

# Mid-grey reads on white and on JupyterLab's dark grey; white only ever sits on a coloured cell;
# red marks problems.
READABLE_ON_BOTH = {mc.to_hex(NEUTRAL_INK), "#ffffff", "#d62728"}


def bench_rows() -> list[BenchRow]:
    methods = (("ours", 5000), ("sync", 4000), ("mp_queue", 300), ("dataloader", 500), ("memcpy", 9000))
    return [
        BenchRow("columnar", size, 2, "cpu", m, v, v * 0.9, v * 1.1, 3, 8, 4, 0, 1.0, 0.5, 0.1, 0.2, None, 0.05)
        for size in (1.0, 16.0)
        for m, v in methods
    ]


def figures():
    plan = TopologyPlan.build(2, {"worker0": 2, "worker1": 1}, {"worker0": {"worker1": {"cuda:1": "cuda:1"}}})
    cells = what_if(
        "attention",
        CallContext("attention", dtype=torch.float32, ndim=4, head_dim=64),
        dtype=[torch.float16, torch.float32],
        has_mask=[False, True],
    )
    return {
        "what-if heatmap": lambda: what_if_heatmap(cells, index=["dtype"]),
        "rpc topology": lambda: topology_figure(plan, plan.check()),
        "loader throughput": lambda: throughput_by_size_figure(bench_rows()),
        "loader stages": lambda: stage_figure(bench_rows()),
        "benchmark bars": lambda: measurements_figure(
            [{"part": "x", "name": "n", "value": 1, "unit": "µs", "baseline_value": 2, "ok": True, "target": "t"}]
        ),
    }


@pytest.mark.parametrize("name", list(figures()))
def test_figure_is_transparent_with_theme_neutral_text(name: str) -> None:
    fig = figures()[name]()
    pixels = np.array(Image.open(io.BytesIO(figure_to_png(fig))).convert("RGBA"))
    assert pixels[0, 0, 3] == 0 and pixels[-1, -1, 3] == 0  # no white box on a dark page
    hidden = {  # tick labels of axes switched off are never drawn
        id(label)
        for ax in fig.axes
        if not ax.axison
        for axis in (ax.xaxis, ax.yaxis)
        for tick in axis.get_major_ticks() + axis.get_minor_ticks()
        for label in (tick.label1, tick.label2)
    }
    drawn = [t for t in fig.findobj(Text) if t.get_text().strip() and t.get_visible() and id(t) not in hidden]
    colours = {mc.to_hex(t.get_color()) for t in drawn}
    assert colours <= READABLE_ON_BOTH, f"{name}: text in {sorted(colours - READABLE_ON_BOTH)}"
