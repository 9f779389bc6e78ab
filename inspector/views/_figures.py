"""Figure helpers shared by every view: object-API figures that fit a notebook, keys above the data, PNG.

NOTE [ Figure sizes ]
A figure is rendered at ``DPI`` into a notebook output area, a Voila page or the report, none
of which reliably offers more than about 800 px of width (a laptop screen with JupyterLab's side
bar open) or, without scrolling, 600 px of height. ``new_figure`` clamps every figure to that
box, so a view may ask for what its content needs and still never overflows; a view with many
lines of content (a tall what-if grid) shrinks its row height and font to fit instead.
Keys (legends) sit above the data, outside every axes (``key_above``), where they are read first
and never cover a point.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from typing import Any

from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine

# Transparent background and a mid-grey foreground read on JupyterLab's light and dark themes.
NEUTRAL_INK = "#7f7f7f"
DPI = 100
MAX_WIDTH_IN = 8.0  # 800 px at DPI (NOTE [ Figure sizes ])
MAX_HEIGHT_IN = 6.0  # 600 px at DPI


def fitted_size(width: float, height: float) -> tuple[float, float]:
    """``(width, height)`` in inches, clamped to the notebook box (NOTE [ Figure sizes ])."""
    return min(width, MAX_WIDTH_IN), min(height, MAX_HEIGHT_IN)


def new_figure(width: float = 6.4, height: float = 4.0) -> Figure:
    """A figure built with matplotlib's object API (never registered with pyplot), fitted to the notebook."""
    fig = Figure(figsize=fitted_size(width, height), layout="constrained", dpi=DPI)
    fig.patch.set_alpha(0.0)
    return fig


def pad_figure(fig: Figure, inches: float = 0.08) -> None:
    """Keep the content ``inches`` from the image's edge (the layout's default lets a frame touch it)."""
    engine = fig.get_layout_engine()
    if isinstance(engine, ConstrainedLayoutEngine):
        engine.set(w_pad=inches, h_pad=inches)


def style_axes(ax, ink: str = NEUTRAL_INK) -> None:
    """Make an axes legible on light and dark backgrounds alike."""
    ax.set_facecolor((0, 0, 0, 0))
    for spine in ax.spines.values():
        spine.set_color(ink)
    ax.tick_params(colors=ink, which="both")
    ax.xaxis.label.set_color(ink)
    ax.yaxis.label.set_color(ink)
    ax.title.set_color(ink)


def key_above(fig: Figure, handles: Sequence[Any], labels: Sequence[str] | None = None, columns: int = 4) -> Any:
    """One key for the whole figure, above every axes (outside the data), in the neutral ink."""
    if not handles:
        return None
    labels = list(labels) if labels is not None else [h.get_label() for h in handles]
    legend = fig.legend(handles, labels, loc="outside upper center", ncols=max(1, min(columns, len(handles))),
                        fontsize=7, frameon=False, labelcolor=NEUTRAL_INK)  # fmt: skip
    return legend


def axes_key_above(fig: Figure, axes: Sequence[Any], columns: int = 4) -> Any:
    """``key_above`` with every distinct labelled artist of ``axes`` (first occurrence wins)."""
    seen: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(label, handle)
    return key_above(fig, list(seen.values()), list(seen), columns)


def figure_to_png(fig: Figure, dpi: int = DPI) -> bytes:
    """Render a figure to PNG bytes (transparent background kept)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, transparent=True)
    return buffer.getvalue()


def figure_to_html(fig: Figure, dpi: int = DPI, alt: str = "figure") -> str:
    """A self-contained ``<img>`` tag (base64 PNG) for static reports, never wider than its page."""
    encoded = base64.b64encode(figure_to_png(fig, dpi=dpi)).decode("ascii")
    style = "max-width: 100%; height: auto"
    return f'<img alt="{html.escape(alt)}" style="{style}" src="data:image/png;base64,{encoded}"/>'
