"""A watch's table: one line per group of calls (``WatchGroup``), as text, HTML, a DataFrame or CSV."""

from __future__ import annotations

import csv
import html
import io
import os
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from inspector.dispatch.context import format_value


@dataclass(frozen=True)
class WatchGroup:
    """One line of a watch's table: calls that ran the same backend on the same kind of call."""

    backend: str
    count: int
    module: str
    dtype: str
    shapes: str
    causal: bool | None
    dropout_p: float | None
    mask: str
    grad: bool | None
    enabled: str
    next_step: str
    rejected: str
    answered_by: str
    predicted: str
    note: str


def _options(g: WatchGroup, enabled: bool) -> list[str]:
    """What sets a group's calls apart beyond backend, dtype and shapes (the table's option columns)."""
    found = []
    if g.causal:
        found.append("causal")
    if g.dropout_p:
        found.append(f"dropout_p={g.dropout_p:g}")
    if g.mask:
        found.append(f"mask {g.mask}")
    if g.grad:
        found.append("grad")
    if enabled:
        found.append(f"enabled: {g.enabled}")
    return found


def _line_texts(groups: tuple[WatchGroup, ...]) -> list[str]:
    """One line of text per group, each different from the others: the options that vary are
    shown, and where two lines would still read alike, what else tells them apart."""
    usual = Counter(g.enabled for g in groups).most_common(1)[0][0] if groups else ""
    texts = []
    for g in groups:
        where = f" [{g.module}]" if g.module else ""
        texts.append(" ".join([g.dtype, g.shapes, *_options(g, g.enabled != usual)]).strip() + where)
    for text in set(texts):
        alike = [i for i, t in enumerate(texts) if t == text]
        if len(alike) < 2:
            continue
        for field_name in ("answered_by", "predicted", "note", "rejected"):
            values = [getattr(groups[i], field_name) for i in alike]
            if len(set(values)) > 1:
                for i, value in zip(alike, values, strict=True):
                    texts[i] += f" ({field_name.replace('_', ' ')}: {value or '-'})"
                break
        else:
            for number, i in enumerate(alike, 1):
                texts[i] += f" (kind {number})"
    return texts


COLUMNS = [
    "backend",
    "count",
    "module",
    "dtype",
    "shapes",
    "causal",
    "dropout_p",
    "mask",
    "grad",
    "enabled",
    "next_step",
    "rejected",
    "answered_by",
    "predicted",
    "note",
]


@dataclass(frozen=True)
class WatchTable:
    """``WatchedCalls.table()``: one line per group, most calls first, with how many calls were seen."""

    groups: tuple[WatchGroup, ...]
    seen: int = 0
    kept: int = 0
    why_nothing: str = field(default="")

    def __repr__(self) -> str:
        if not self.groups:
            return f"(no SDPA calls) {self.why_nothing}".rstrip()
        lines = [f"{self.seen:,} SDPA call(s) seen, first {self.kept:,} kept in full"]
        shown = self.groups[:10]
        for g, text in zip(shown, _line_texts(shown), strict=True):
            lines.append(f"{g.count:>9,} x {g.backend:<20} {text}")
            if g.next_step:
                lines.append(f"{'':>13}{g.next_step}")
        more = len(self.groups) - 10
        return "\n".join(lines + ([f"... {more} more"] if more > 0 else []))

    def _repr_html_(self) -> str:
        if not self.groups:
            return f"<p class='inspector-watch-empty'>{html.escape(self.why_nothing)}</p>"
        shown = COLUMNS[: COLUMNS.index("answered_by")]  # what a reader asks; the rest is for exports
        head = "".join(f"<th>{html.escape(name.replace('_', ' '))}</th>" for name in shown)
        rows = []
        for g in self.groups:
            cells = []
            for name in shown:
                value = getattr(g, name)
                text = "—" if value in ("", None) else (f"{value:,}" if name == "count" else format_value(value))
                cells.append(f"<td>{html.escape(text)}</td>")
            rows.append("<tr>" + "".join(cells) + "</tr>")
        caption = f"{self.seen:,} SDPA call(s) seen, the first {self.kept:,} kept in full"
        return (
            f"<table class='inspector-watch'><caption>{html.escape(caption)}</caption><tr>{head}</tr>"
            f"{''.join(rows)}</table>"
        )

    def rows(self) -> list[dict[str, Any]]:
        return [asdict(g) for g in self.groups]

    def to_frame(self) -> Any:
        """The table as a pandas ``DataFrame`` (needs pandas: ``pip install dispatch-inspector[ui]``)."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError("WatchTable.to_frame needs pandas: pip install 'dispatch-inspector[ui]'") from exc
        frame = pd.DataFrame(self.rows(), columns=COLUMNS)
        frame.attrs.update(seen=self.seen, kept=self.kept)
        return frame

    def to_csv(self, path: str | os.PathLike[str]) -> str:
        """Write the table as CSV (one line per group; atomic: a reader never sees half a file)."""
        from inspector._files import atomic_write_text

        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=COLUMNS)
        writer.writeheader()
        for row in self.rows():
            writer.writerow({k: "" if v is None else v for k, v in row.items()})
        return str(atomic_write_text(path, buffer.getvalue()))
