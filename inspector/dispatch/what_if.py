"""Counterfactual decisions: sweep context axes and record the winning row for each cell."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from inspector.dispatch.context import AXES, CallContext
from inspector.dispatch.resolution import decide
from inspector.dispatch.trace import SELECTION_ERRORS


@dataclass(frozen=True)
class WhatIfCell:
    """The decision for one combination of swept axis values."""

    axes: tuple[tuple[str, Any], ...]
    row: str | None
    origin: str | None
    error: str | None

    def value(self, axis: str) -> Any:
        return dict(self.axes)[axis]


def with_axes(base: CallContext, values: dict[str, Any]) -> CallContext:
    """``base`` with standard axes replaced and any other names set in ``extra``."""
    standard = {k: v for k, v in values.items() if k in AXES}
    extra = {k: v for k, v in values.items() if k not in AXES}
    if extra:
        standard["extra"] = {**base.extra, **extra}
    return base.evolve(**standard) if standard else base


def what_if(family: str, base: CallContext, **sweep: Sequence[Any]) -> tuple[WhatIfCell, ...]:
    """Decide ``family`` for every combination of ``sweep`` values applied to ``base``.

    ``what_if("attention", ctx, dtype=[torch.float16, torch.float32], has_mask=[False, True])``
    answers "which row would run if ...?" without tensors or the hardware; selections in force
    (``op_backend``, ``set_op``) apply exactly as they would at run time.
    """
    if not sweep:
        raise TypeError("what_if needs at least one axis to sweep, e.g. dtype=[torch.float16, torch.float32]")
    names = list(sweep)
    cells = []
    for combo in itertools.product(*(list(values) for values in sweep.values())):
        values = dict(zip(names, combo, strict=True))
        ctx = with_axes(base, values)
        try:
            resolution = decide(family, ctx)
        except SELECTION_ERRORS as exc:
            cells.append(WhatIfCell(tuple(values.items()), None, None, str(exc).partition("\n")[0]))
        else:
            cells.append(WhatIfCell(tuple(values.items()), resolution.record.name, resolution.origin, None))
    return tuple(cells)
