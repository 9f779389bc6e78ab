"""What-if grids as views: the long table, the pivot of winning rows, each row's colour and the heatmap."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd
from matplotlib.colors import to_rgba
from matplotlib.patches import Patch

from inspector.dispatch import WhatIfCell, families, rows
from inspector.dispatch.context import format_value
from inspector.views._figures import MAX_HEIGHT_IN, key_above, new_figure, style_axes
from inspector.views._palette import NO_ROW_GREY, colour_of, row_colours

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def what_if_table(cells: Sequence[WhatIfCell]) -> pd.DataFrame:
    """Long form: one line per combination, the swept axes as columns, then winner, origin, error."""
    records = []
    for cell in cells:
        line: dict[str, Any] = {name: format_value(value) for name, value in cell.axes}
        line.update(winner=cell.row or "—", origin=cell.origin or "", error=cell.error or "")
        records.append(line)
    return pd.DataFrame.from_records(records)


def _split_axes(cells: Sequence[WhatIfCell], index: Sequence[str] | None) -> tuple[list[str], list[str]]:
    names = [name for name, _ in cells[0].axes] if cells else []
    if index is None:
        index = names[: max(1, len(names) // 2)]
    unknown = [n for n in index if n not in names]
    if unknown:
        raise KeyError(f"Axis {unknown[0]!r} was not swept. Swept axes: {names}")
    return list(index), [n for n in names if n not in index]


def what_if_pivot(cells: Sequence[WhatIfCell], index: Sequence[str] | None = None) -> pd.DataFrame:
    """The grid as a table of winning rows: ``index`` axes down, the other swept axes across."""
    rows_axes, column_axes = _split_axes(cells, index)
    frame = what_if_table(cells)
    if not column_axes:
        return frame.set_index(rows_axes)[["winner"]]
    return frame.pivot_table(index=rows_axes, columns=column_axes, values="winner", aggfunc="first", sort=False)


def family_of(winners: Iterable[str]) -> str | None:
    """The registered family whose table holds every one of ``winners`` (the first, by name), if any."""
    wanted = set(winners)
    for name in families():
        try:
            if wanted <= {r.name for r in rows(name)}:
                return name
        except KeyError:  # unregistered meanwhile
            continue
    return None


def what_if_colours(cells: Sequence[WhatIfCell], family: str | None = None) -> dict[str, str]:
    """Each winning row of a grid and its colour: the row's own colour in its family (NOTE [ Stable colours ])."""
    winners = [c.row for c in cells if c.row]
    fixed = row_colours(family or family_of(winners) or "")
    order = {name: i for i, name in enumerate(fixed)}
    ordered = sorted(dict.fromkeys(winners), key=lambda name: (order.get(name, len(order)), name))
    return {name: colour_of(name, fixed) for name in ordered}


def what_if_key_html(cells: Sequence[WhatIfCell], family: str | None = None) -> str:
    """The grid's colour key as HTML (one swatch per winning row), for a page to show above the figure."""
    colours = what_if_colours(cells, family)
    items = [(name, colour) for name, colour in colours.items()]
    if any(c.row is None for c in cells):
        items.append(("no row (error)", NO_ROW_GREY))
    spans = "".join(
        f"<span class='inspector-key-item' data-row='{html.escape(name, quote=True)}' data-colour='{colour}' "
        f"style='margin-right: 1.2em; white-space: nowrap'><span class='inspector-swatch' style='display: "
        f"inline-block; width: 0.9em; height: 0.9em; margin-right: 0.3em; vertical-align: middle; "
        f"background: {colour}'></span>{html.escape(name)}</span>"
        for name, colour in items
    )
    return f"<div class='inspector-key'><small>winning row:</small> {spans}</div>"


def what_if_heatmap(
    cells: Sequence[WhatIfCell],
    index: Sequence[str] | None = None,
    title: str = "",
    *,
    family: str | None = None,
    key: bool = True,
) -> Figure:
    """The grid as a heatmap, one colour per winning row, the row name written in each cell.

    A row keeps its colour from grid to grid (its family's, see NOTE [ Stable colours ]; the family
    is found from the winners unless given). The columns' axis sits at the top, the key above it
    (``key=False`` leaves the key to the page, which shows it as HTML); the figure fits a notebook.
    """
    pivot = what_if_pivot(cells, index)
    colours = what_if_colours(cells, family)
    n_rows, n_cols = len(pivot.index), max(len(pivot.columns), 1)
    # NOTE [ Figure sizes ]: rows shrink (and their text with them) before the figure outgrows the page.
    header_in = 1.3 + (0.3 if title else 0.0) + (0.3 if key else 0.0)
    row_in = max(0.16, min(0.32, (MAX_HEIGHT_IN - header_in) / max(n_rows, 1)))
    fontsize = 8 if row_in >= 0.28 else 7 if row_in >= 0.21 else 6
    longest = max([len(w) for w in colours] + [1])
    column_in = max(0.8, 0.012 * fontsize * longest + 0.25)
    label_in = 0.6 + 0.07 * max([len(_label(i)) for i in pivot.index] + [1])
    fig = new_figure(label_in + column_in * n_cols, header_in + row_in * n_rows)
    ax = fig.add_subplot()
    rgba = [
        [to_rgba(colours.get(_winner(pivot.iat[i, j]), NO_ROW_GREY)) for j in range(len(pivot.columns))]
        for i in range(n_rows)
    ]
    ax.imshow(rgba, aspect="auto", interpolation="nearest")
    for (i, j), winner in _cells(pivot):
        ax.text(j, i, winner, ha="center", va="center", fontsize=fontsize, color="white")
    column_labels = [_label(c) for c in pivot.columns]
    rotate = max([len(label) for label in column_labels] + [0]) * 0.07 > column_in
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    ax.set_xticks(
        range(len(pivot.columns)),
        column_labels,
        rotation=30 if rotate else 0,
        ha="left" if rotate else "center",
        fontsize=fontsize,
    )
    ax.set_yticks(range(n_rows), [_label(i) for i in pivot.index], fontsize=fontsize)
    ax.set_xlabel(" / ".join(str(n) for n in (pivot.columns.names or [])), fontsize=9)
    ax.set_ylabel(" / ".join(str(n) for n in (pivot.index.names or [])), fontsize=9)
    if title:
        ax.set_title(title, fontsize=10)
    style_axes(ax)
    if key:
        handles = [Patch(color=colour, label=name) for name, colour in colours.items()]
        if any(c.row is None for c in cells):
            handles.append(Patch(color=NO_ROW_GREY, label="no row (error)"))
        key_above(fig, handles, columns=6)
    return fig


def _winner(value: Any) -> str:
    return value if isinstance(value, str) else "—"


def _cells(pivot: pd.DataFrame) -> Iterable[tuple[tuple[int, int], str]]:
    for i in range(len(pivot.index)):
        for j in range(len(pivot.columns)):
            value = pivot.iat[i, j]
            yield (i, j), value if isinstance(value, str) else "—"


def _label(key: Any) -> str:
    return ", ".join(str(k) for k in key) if isinstance(key, tuple) else str(key)
