"""A part's page: what a panel shows, its static HTML and its report section, from one function.

Each ``views/<part>.py`` has ``page(state) -> Page``. The live panel renders a page's sections
into its output areas, the panel's static HTML and the report render the whole page as HTML, so
the three can never drift. A page is plain data: titled sections of blocks (a table, a figure,
monospace text, a note or trusted HTML), built by pure functions a test can call.

NOTE [ Lazy pages ]
A page lists its sections up front (``page.keys``, known without building anything) and builds
each one the first time it is asked for (``page.section(key)``), at most once per page; the
report and the static HTML ask for all of them, a panel only for the ones it shows now (the
Loader tab's worker table never draws the three throughput charts). What several sections
read (a plan's problems, a decision table) is a fact of the part's ``State``: a
``cached_property``, computed once per state, so once per panel refresh, and shared with the
panel, which reads the same state. Each lazy section also names its ``inputs``, the values of
the state it is built from: a panel compares them with those of what an output area already
shows and redraws nothing whose inputs did not change (``Panel.show``). Section keys are each
part's ``StrEnum`` members (``RpcSection.GRAPH``), never bare strings.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable
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

    def blocks_html(self) -> str:
        return "".join(block.to_html() for block in self.blocks)

    def to_html(self, level: int = 3) -> str:
        body = self.blocks_html()
        return f"<h{level}>{html.escape(self.title)}</h{level}>{body}" if self.title else body


@dataclass(frozen=True)
class LazySection:
    """A section not built yet: ``build()`` makes its blocks from ``inputs`` (NOTE [ Lazy pages ])."""

    key: str
    title: str
    build: Callable[[], Iterable[Block]]
    inputs: Any


class Page:
    """A part's whole page: its sections in order, each built when first asked for (NOTE [ Lazy pages ])."""

    def __init__(self, title: str, sections: Iterable[Section | LazySection]) -> None:
        self.title = title
        self._entries: dict[str, Section | LazySection] = {}
        for entry in sections:
            if entry.key in self._entries:
                raise ValueError(f"Section {entry.key!r} appears twice on the {title} page")
            self._entries[entry.key] = entry
        self._built: dict[str, Section] = {}

    @property
    def keys(self) -> tuple[str, ...]:
        """Every section's key, in page order (nothing is built to list them)."""
        return tuple(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def _entry(self, key: str) -> Section | LazySection:
        try:
            return self._entries[key]
        except KeyError:
            raise KeyError(f"No section {key!r} on the {self.title} page. Sections: {list(self._entries)}") from None

    def section(self, key: str) -> Section:
        """The section ``key``, built now if it was not yet (once per page)."""
        built = self._built.get(key)
        if built is None:
            entry = self._entry(key)
            built = entry if isinstance(entry, Section) else Section(entry.key, entry.title, tuple(entry.build()))
            self._built[key] = built
        return built

    def inputs(self, key: str) -> Any:
        """What section ``key`` is built from: equal inputs, same section (an eager section is its own)."""
        entry = self._entry(key)
        return entry if isinstance(entry, Section) else entry.inputs

    @property
    def sections(self) -> tuple[Section, ...]:
        """Every section, built."""
        return tuple(self.section(key) for key in self._entries)

    def to_html(self, level: int = 2) -> str:
        body = "".join(section.to_html(level + 1) for section in self.sections)
        return f"<section><h{level}>{html.escape(self.title)}</h{level}>{body}</section>"


def same_inputs(a: Any, b: Any) -> bool:
    """Whether two sections' inputs are the same: identical, or equal (a comparison that fails is "not")."""
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:  # arrays and frames refuse a truth value: treat as changed
        return False


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


def lazy(key: str, title: str, build: Callable[[], Iterable[Block]], inputs: Any) -> LazySection:
    """A section built by ``build()`` when first asked for, from ``inputs`` (NOTE [ Lazy pages ])."""
    return LazySection(key, title, build, inputs)
