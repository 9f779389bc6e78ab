"""Put objects into ``Output`` widgets as one atomic replacement.

NOTE [ Rendering into Output ]
Assigning ``Output.outputs`` in one step is what ``clear_output(wait=True)`` followed by
``display`` achieves (no flicker, nothing stale left behind), but it also works from widget
callbacks that ipykernel runs on a subshell thread and from background jobs, where the
``with out:`` capture cannot know which output area a message belongs to. Figures are
rendered to PNG here with the object API, never through pyplot.
"""

from __future__ import annotations

import base64
import html
from typing import TYPE_CHECKING, Any

from matplotlib.figure import Figure

from inspector.views._figures import figure_to_png

if TYPE_CHECKING:
    import ipywidgets as widgets


def mimebundle(obj: Any) -> dict[str, Any]:
    """The display data for one object: HTML for tables, PNG for figures, text otherwise."""
    if isinstance(obj, Figure):
        png = base64.b64encode(figure_to_png(obj)).decode("ascii")
        return {"image/png": png, "text/plain": "<Figure>"}
    if isinstance(obj, str):
        return {"text/plain": obj}
    bundle_method = getattr(obj, "_repr_mimebundle_", None)
    if bundle_method is not None:
        bundle = bundle_method()
        if isinstance(bundle, tuple):
            bundle = bundle[0]
        if bundle:
            return dict(bundle)
    html_method = getattr(obj, "_repr_html_", None)
    if html_method is not None:
        return {"text/html": html_method(), "text/plain": repr(obj)}
    return {"text/plain": repr(obj)}


def render_into(out: widgets.Output, *objects: Any) -> None:
    """Replace everything shown in ``out`` with ``objects`` (see NOTE [ Rendering into Output ])."""
    out.outputs = tuple({"output_type": "display_data", "data": mimebundle(obj), "metadata": {}} for obj in objects)


class RawHTML:
    """Markup to show as HTML in ``render_into`` (a plain ``str`` shows as text)."""

    def __init__(self, markup: str) -> None:
        self.markup = markup

    def _repr_html_(self) -> str:
        return self.markup

    def __repr__(self) -> str:
        return self.markup


def render_section(out: widgets.Output, section: Any) -> None:
    """Show a page section's blocks in ``out`` (figures as PNG, everything else as its HTML)."""
    from inspector.views.page import FIGURE

    render_into(out, *(block.value if block.kind == FIGURE else RawHTML(block.to_html()) for block in section.blocks))


def pre(text: str) -> str:
    """Escaped monospace block for traces and code snippets."""
    return f'<pre class="inspector-pre">{html.escape(text)}</pre>'
