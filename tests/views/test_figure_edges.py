"""Nothing a figure says is cut off at its edge: titles, tick labels, value labels and keys all lie inside it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

import inspector.examples  # noqa: F401  (the attention family)
from inspector.loader import LoaderProfile
from inspector.loader.bench import MachineLoad
from inspector.rpc import PairLatency, RttMatrix, TopologyPlan
from inspector.views import rpc as rpc_views
from inspector.views.loader_profile import profile_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MARGIN_PX = 1.0


def outside(fig: Figure) -> list[str]:
    """What is drawn beyond the figure's image: each axes' drawn extent (its texts included) and each key."""
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    width, height = fig.bbox.width, fig.bbox.height
    found = []
    for artist in [*fig.axes, *fig.legends, *fig.texts]:
        box = artist.get_tightbbox(renderer) if hasattr(artist, "get_tightbbox") else artist.get_window_extent()
        if box.x0 < -MARGIN_PX or box.y0 < -MARGIN_PX or box.x1 > width + MARGIN_PX or box.y1 > height + MARGIN_PX:
            found.append(
                f"{type(artist).__name__} {getattr(artist, 'get_title', lambda: '')()!r}: "
                f"{box.x0:.0f},{box.y0:.0f}..{box.x1:.0f},{box.y1:.0f} of {width:.0f}x{height:.0f}"
            )
    return found


def profile(label: str, seconds: float, nbytes: int) -> LoaderProfile:
    return LoaderProfile("DataLoader", 1.5, (seconds,) * 5, (nbytes,) * 5, 2, False, MachineLoad(0.1, 2), label=label)


def test_the_profiles_last_bar_label_is_inside_its_frame_and_the_figure() -> None:
    slow, fast = profile("your DataLoader", 0.004, 2**22), profile("inspector loader (same bytes)", 0.0013, 2**22)
    fig = profile_figure([slow, fast])
    assert outside(fig) == []
    bars = fig.axes[1]
    renderer = FigureCanvasAgg(fig).get_renderer()
    frame = bars.get_window_extent(renderer)
    for label in bars.texts:  # each value label ends inside the frame, never across it or at the image's edge
        box = label.get_window_extent(renderer)
        assert box.x1 <= frame.x1 - 2 and box.x1 <= fig.bbox.width - 3, (label.get_text(), box.x1, frame.x1)
    assert [t.get_text().strip() for t in bars.texts] == ["1,000", "3,077"]


@pytest.mark.parametrize("name", ["rtt heatmap", "device grid", "worker graph"])
def test_rpc_figures_keep_everything_inside(name: str) -> None:
    names = ("worker0", "worker1", "worker2")
    rtt = RttMatrix(
        names,
        tuple(PairLatency(a, b, 50, 2e-4, 3e-4, 4e-4, 3e-3 if a == b else 5e-4, 4e-3) for a in names for b in names),
    )
    mesh = TopologyPlan.full_mesh(4, 8)
    small = TopologyPlan.ring(5, 2)
    fig = {
        "rtt heatmap": lambda: rpc_views.rtt_heatmap(rtt),
        "device grid": lambda: rpc_views.device_grid_figure(mesh, mesh.check()),
        "worker graph": lambda: rpc_views.topology_figure(small, small.check()),
    }[name]()
    assert outside(fig) == []
