"""Figure helpers shared by every view: object-API figures, PNG bytes, inline HTML images."""

from __future__ import annotations

import base64
import io

from matplotlib.figure import Figure

# Transparent background and a mid-grey foreground read on JupyterLab's light and dark themes.
NEUTRAL_INK = "#7f7f7f"


def new_figure(width: float = 6.4, height: float = 4.0) -> Figure:
    """A figure built with matplotlib's object API (never registered with pyplot)."""
    fig = Figure(figsize=(width, height), layout="constrained")
    fig.patch.set_alpha(0.0)
    return fig


def style_axes(ax, ink: str = NEUTRAL_INK) -> None:
    """Make an axes legible on light and dark backgrounds alike."""
    ax.set_facecolor((0, 0, 0, 0))
    for spine in ax.spines.values():
        spine.set_color(ink)
    ax.tick_params(colors=ink, which="both")
    ax.xaxis.label.set_color(ink)
    ax.yaxis.label.set_color(ink)
    ax.title.set_color(ink)


def figure_to_png(fig: Figure, dpi: int = 100) -> bytes:
    """Render a figure to PNG bytes (transparent background kept)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, transparent=True)
    return buffer.getvalue()


def figure_to_html(fig: Figure, dpi: int = 100, alt: str = "figure") -> str:
    """A self-contained ``<img>`` tag (base64 PNG) for static reports."""
    encoded = base64.b64encode(figure_to_png(fig, dpi=dpi)).decode("ascii")
    return f'<img alt="{alt}" src="data:image/png;base64,{encoded}"/>'
