"""A part's page: what a panel shows, its static HTML and its report section, from one function.

Each ``views/<part>.py`` has ``page(state) -> Page``. The live panel renders a page's sections
into its output areas, the panel's static HTML and the report render the whole page as HTML, so
the three can never drift. A page is plain data: titled sections of blocks (a table, a figure,
monospace text, a note or trusted HTML), built by pure functions a test can call.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from inspector.views._figures import figure_to_html
from inspector.views._tables import table_html

TABLE, FIGURE, PRE, NOTE, HTML = "table", "figure", "pre", "note", "html"


@dataclass(frozen=True)
class Block:
    """One thing on a page: ``kind`` says how ``value`` is shown (see the builders below)."""

    kind: str
    value: Any
    caption: str = ""

    def to_html(self) -> str:
        if self.kind == TABLE:
            return table_html(self.value, self.caption)
        if self.kind == FIGURE:
            return figure_to_html(self.value, alt=self.caption or "figure")
        if self.kind == PRE:
            return f"<pre class='inspector-pre'>{html.escape(str(self.value))}</pre>"
        if self.kind == NOTE:
            return f"<p class='note inspector-note'>{html.escape(str(self.value))}</p>"
        return str(self.value)


@dataclass(frozen=True)
class Section:
    """A titled group of blocks; ``key`` names it for the panel that renders it somewhere."""

    key: str
    title: str
    blocks: tuple[Block, ...]

    def to_html(self, level: int = 3) -> str:
        body = "".join(block.to_html() for block in self.blocks)
        return f"<h{level}>{html.escape(self.title)}</h{level}>{body}" if self.title else body


@dataclass(frozen=True)
class Page:
    """A part's whole page."""

    title: str
    sections: tuple[Section, ...]

    def section(self, key: str) -> Section:
        for section in self.sections:
            if section.key == key:
                return section
        raise KeyError(f"No section {key!r} on the {self.title} page. Sections: {[s.key for s in self.sections]}")

    def to_html(self, level: int = 2) -> str:
        body = "".join(section.to_html(level + 1) for section in self.sections)
        return f"<section><h{level}>{html.escape(self.title)}</h{level}>{body}</section>"


def table(frame: Any, caption: str = "") -> Block:
    return Block(TABLE, frame, caption)


def figure(fig: Any, alt: str) -> Block:
    return Block(FIGURE, fig, alt)


def pre(text: str) -> Block:
    return Block(PRE, text)


def note(text: str) -> Block:
    return Block(NOTE, text)


def trusted_html(markup: str) -> Block:
    """Markup built by the inspector itself (escaped where it holds user text)."""
    return Block(HTML, markup)


def section(key: str, title: str, blocks: Iterable[Block]) -> Section:
    return Section(key, title, tuple(blocks))
