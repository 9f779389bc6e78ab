"""Figure helpers shared by every view: object-API figures that fit a notebook, keys above the data, PNG.

NOTE [ Figure sizes ]
A figure is rendered at ``DPI`` into a notebook output area, a Voila page or the report, none
of which reliably offers more than about 800 px of width (a laptop screen with JupyterLab's side
bar open) or, without scrolling, 600 px of height. ``new_figure`` clamps every figure to that
box, so a view may ask for what its content needs and still never overflows; a view with many
lines of content (a tall what-if grid) shrinks its row height and font to fit instead.
Keys (legends) sit above the data, outside every axes (``key_above``), where they are read first
and never cover a point, and always fit the figure's width: a key too wide for its figure takes
fewer columns, and labels too long for one column wrap (a key wider than its figure was cut off
by the figure's edge: "memcpy (ce"). ``figure_to_png`` writes where each key entry landed into
the PNG (``KEYS_METADATA``), so a browser test can check every entry is inside the figure shown.

NOTE [ Literal text ]
Figures carry the user's strings (loader labels, sweep settings, family and backend names, error
text), and matplotlib reads ``$...$`` in any text as mathtext: ``cost $5`` loses its dollar and
``$\foo{$`` raises while drawing, which broke every page showing that figure. Our figures are
``LiteralFigure``: whatever draws them (``figure_to_png``, Jupyter's display, ``savefig``), every
text is drawn as written, tick labels made during the draw included; a log axis's own tick labels,
which matplotlib writes as mathtext, are written in plain text instead (``10⁵``, ``2×10⁻³``).
"""

from __future__ import annotations

import base64
import html
import io
import itertools
import json
import re
import struct
import textwrap
import zlib
from collections.abc import Sequence
from typing import Any

import matplotlib
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.text import Text
from matplotlib.ticker import LogFormatterMathtext, LogFormatterSciNotation

# Transparent background and a mid-grey foreground read on JupyterLab's light and dark themes.
NEUTRAL_INK = "#7f7f7f"
DPI = 100
MAX_WIDTH_IN = 8.0  # 800 px at DPI (NOTE [ Figure sizes ])
MAX_HEIGHT_IN = 6.0  # 600 px at DPI


def fitted_size(width: float, height: float) -> tuple[float, float]:
    """``(width, height)`` in inches, clamped to the notebook box (NOTE [ Figure sizes ])."""
    return min(width, MAX_WIDTH_IN), min(height, MAX_HEIGHT_IN)


class LiteralFigure(Figure):
    """A figure whose texts are never read as mathtext (NOTE [ Literal text ])."""

    def draw(self, renderer: Any) -> None:
        with matplotlib.rc_context({"text.parse_math": False}):  # for texts the draw itself makes (ticks)
            plain_log_ticks(self)
            literal(self)
            super().draw(renderer)


_SUPERSCRIPTS = str.maketrans("0123456789-+.", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺·")


def plain_math(text: str) -> str:
    """A log axis's mathtext tick label (``$\\mathdefault{2\\times10^{-3}}$``) as plain text (``2×10⁻³``)."""
    if len(text) < 2 or not (text.startswith("$") and text.endswith("$")):
        return text
    inner = re.sub(r"\\mathdefault\{(.*)\}", r"\1", text[1:-1])
    inner = inner.replace(r"\times", "×").replace(r"\cdot", "·").replace(r"\minus", "-").replace("−", "-")
    inner = re.sub(r"\^\{([^}]*)\}|\^(\S)", lambda m: (m.group(1) or m.group(2)).translate(_SUPERSCRIPTS), inner)
    return inner.replace("{", "").replace("}", "").replace("\\", "")


class PlainLogFormatter(LogFormatterSciNotation):
    """Log-axis tick labels in plain text (``10⁵``), which a literal figure draws as meant."""

    def __call__(self, x: float, pos: int | None = None) -> str:
        return plain_math(super().__call__(x, pos))


def plain_log_ticks(fig: Figure) -> None:
    """Give every log axis of ``fig`` plain-text tick labels (its default ones are mathtext)."""
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for get, put in (
                (axis.get_major_formatter, axis.set_major_formatter),
                (axis.get_minor_formatter, axis.set_minor_formatter),
            ):
                found = get()
                if isinstance(found, LogFormatterMathtext) and not isinstance(found, PlainLogFormatter):
                    plain = PlainLogFormatter.__new__(PlainLogFormatter)
                    plain.__dict__.update(vars(found))  # the same base, thresholds and sublabels
                    put(plain)


def literal(artist: Any) -> Any:
    """``artist`` with every text in it drawn and measured as written (NOTE [ Literal text ])."""
    for text in artist.findobj(Text):
        text.set_parse_math(False)
    return artist


def new_figure(width: float = 6.4, height: float = 4.0) -> Figure:
    """A figure built with matplotlib's object API (never registered with pyplot), fitted to the notebook."""
    fig = LiteralFigure(figsize=fitted_size(width, height), layout="constrained", dpi=DPI)
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
    room = fig.bbox.width * KEY_ROOM
    renderer = _renderer(fig)
    wrap = 0
    for ncols in itertools.chain(range(max(1, min(columns, len(handles))), 0, -1), itertools.repeat(1, 4)):
        shown = [textwrap.fill(label, wrap) if wrap else label for label in labels]
        legend = literal(
            fig.legend(
                handles,
                shown,
                loc="outside upper center",
                ncols=ncols,
                fontsize=7,
                frameon=False,
                labelcolor=NEUTRAL_INK,
            )
        )
        width = legend.get_window_extent(renderer).width
        if width <= room:
            return legend
        legend.remove()
        if ncols == 1:  # one column and still too wide: wrap the labels, narrower each time
            longest = max(len(label) for label in labels)
            wrap = max(8, int((wrap or longest) * room / width) - 1)
    return literal(
        fig.legend(
            handles, shown, loc="outside upper center", ncols=1, fontsize=7, frameon=False, labelcolor=NEUTRAL_INK
        )
    )


KEY_ROOM = 0.98  # of the figure's width a key may take


def _renderer(fig: Figure) -> Any:
    """A renderer to measure text with (the Agg one a PNG is drawn by)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    return canvas.get_renderer()


def axes_key_above(fig: Figure, axes: Sequence[Any], columns: int = 4) -> Any:
    """``key_above`` with every distinct labelled artist of ``axes`` (first occurrence wins)."""
    seen: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(label, handle)
    return key_above(fig, list(seen.values()), list(seen), columns)


KEYS_METADATA = "inspector-keys"  # PNG text chunk: JSON [[label, x0, y0, x1, y1], ...] in pixels from the top left


def figure_to_png(fig: Figure, dpi: int = DPI) -> bytes:
    """Render a figure to PNG bytes (transparent background kept), with where its key entries landed."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, transparent=True)
    keys = key_boxes(fig, dpi)  # as laid out by that drawing
    png = buffer.getvalue()
    return _with_text(png, KEYS_METADATA, json.dumps(keys)) if keys else png


def _with_text(png: bytes, key: str, text: str) -> bytes:
    """``png`` with a ``tEXt`` chunk ``key: text`` right after its header chunk (33 bytes in)."""
    data = key.encode("latin-1") + b"\0" + text.encode("latin-1", "replace")
    chunk = struct.pack(">I", len(data)) + b"tEXt" + data + struct.pack(">I", zlib.crc32(b"tEXt" + data))
    return png[:33] + chunk + png[33:]


def key_boxes(fig: Figure, dpi: int = DPI) -> list[list[Any]]:
    """Every key entry's text as ``[label, x0, y0, x1, y1]`` in pixels of a PNG at ``dpi`` (y from the top)."""
    renderer = _renderer(fig)
    scale = dpi / fig.dpi
    height = fig.bbox.height * scale
    found = []
    for legend in [*fig.legends, *(ax.get_legend() for ax in fig.axes)]:
        if legend is None:
            continue
        for text in literal(legend).get_texts():
            box = text.get_window_extent(renderer)
            found.append(
                [
                    text.get_text(),
                    round(box.x0 * scale, 1),
                    round(height - box.y1 * scale, 1),
                    round(box.x1 * scale, 1),
                    round(height - box.y0 * scale, 1),
                ]
            )
    return found


def figure_to_html(fig: Figure, dpi: int = DPI, alt: str = "figure") -> str:
    """A self-contained ``<img>`` tag (base64 PNG) for static reports, never wider than its page."""
    encoded = base64.b64encode(figure_to_png(fig, dpi=dpi)).decode("ascii")
    style = "max-width: 100%; height: auto"
    return f'<img alt="{html.escape(alt)}" style="{style}" src="data:image/png;base64,{encoded}"/>'
