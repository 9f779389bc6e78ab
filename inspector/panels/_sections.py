"""Collapsible sections that open and close on their own: several can stay open at once.

ipywidgets' ``Accordion`` keeps one child open (opening "What-if grid" closes "Trace"); a panel's
details are read side by side, so each section here is an accordion of its own, stacked.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import ipywidgets as widgets


class Sections:
    """Titled collapsible sections, each opened and closed independently; ``widget`` holds them."""

    def __init__(self, parts: Iterable[tuple[str, widgets.Widget]], opened: Sequence[int] = (0,)) -> None:
        self.parts = [widgets.Accordion(children=[child], titles=(title,)) for title, child in parts]
        for index, part in enumerate(self.parts):
            part.selected_index = 0 if index in opened else None
            part.add_class("inspector-section")
        self.widget = widgets.VBox(list(self.parts))
        self.widget.add_class("inspector-sections")

    @property
    def titles(self) -> tuple[str, ...]:
        return tuple(part.titles[0] for part in self.parts)

    def index(self, title: str) -> int:
        try:
            return self.titles.index(title)
        except ValueError:
            raise KeyError(f"No section {title!r}. Sections: {list(self.titles)}") from None

    def is_open(self, title: str) -> bool:
        return self.parts[self.index(title)].selected_index == 0

    def open(self, title: str, opened: bool = True) -> None:
        """Open (or, with ``opened=False``, close) the section called ``title``; the others stay as they are."""
        self.parts[self.index(title)].selected_index = 0 if opened else None
