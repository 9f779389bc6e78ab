"""One colour per name, the same in every figure and table: rows, loader methods, RPC pairs.

NOTE [ Stable colours ]
A colour picked by a name's place among the names a figure happens to show changes when the
figure shows other names (a row that wins in one what-if grid and not in the next would shift
every colour after it). So a colour is picked once per *family* of names: a dispatch row by its
index in its family's table (the priority order, fixed while the family is registered), a loader
method by a fixed map, anything else by a hash of its text (the same in every process). Red and
grey never appear in the palette: red marks problems and misses, grey "no row" and ceilings.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping

# Qualitative colours that read on light and dark backgrounds (matplotlib's tab10 without red and grey).
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22")
PROBLEM_RED = "#d62728"
NO_ROW_GREY = "#7f7f7f"
IO_ONLY_COLOUR = "#17becf"  # the inspector's loader replaying saved batches: I/O only, never the user's loader colour


# A loader benchmark's methods (and a profiled loader named after one): ours blue, the ceilings grey/brown.
METHOD_COLOURS = {
    "ours": "#1f77b4",
    "sync": "#2ca02c",
    "mp_queue": "#9467bd",
    "dataloader": "#ff7f0e",
    "memcpy": NO_ROW_GREY,
    "h2d": "#8c564b",
}


def method_colour(name: str) -> str:
    """A loader method's fixed colour (by key, or by a label such as ``DataLoader``), else its hashed one."""
    key = name.lower().replace(" ", "_")
    return METHOD_COLOURS.get(key) or hashed_colour(name)


def hashed_colour(name: str) -> str:
    """A palette colour chosen by the name's text alone (crc32, so the same in every process)."""
    return PALETTE[zlib.crc32(name.encode("utf-8")) % len(PALETTE)]


def ordered_colours(names: Iterable[str]) -> dict[str, str]:
    """Each name its palette colour by its place in ``names`` (a family's fixed order)."""
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(dict.fromkeys(names))}


def colour_of(name: str, fixed: Mapping[str, str]) -> str:
    """``fixed[name]``, or the name's hashed colour when the family does not list it."""
    return fixed.get(name) or hashed_colour(name)


def row_colours(family: str) -> dict[str, str]:
    """A dispatch family's rows, each its colour by its index in the family's table (NOTE [ Stable colours ])."""
    from inspector.dispatch import rows

    try:
        return ordered_colours(r.name for r in rows(family))
    except KeyError:  # an unregistered family (a hand-made trace): fall back on hashing every name
        return {}
