"""Decision-table rows and the decisions made from them."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from inspector.dispatch.spec import Spec

logger = logging.getLogger("inspector.dispatch")

ORIGINS = ("explicit", "context", "env", "profile", "chain", "fallback")


@dataclass(frozen=True)
class ImplRecord:
    """One row of a family's decision table: an implementation and what it can handle.

    ``available`` is a bool or a zero-argument probe. Probes run once per table build and are
    memoised until ``invalidate``; set ``probe_each_call`` for availability that can change
    between calls. ``faithful=False`` marks rows that change numerics (fp8 and friends): only
    an explicit, context or process selection reaches them, never the automatic chain.
    """

    family: str
    name: str
    obj: Any
    spec: Spec
    available: bool | Callable[[], bool] = True
    priority: int = 100
    faithful: bool = True
    probe_each_call: bool = False
    description: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"ImplRecord.name must be a non-empty string, got {self.name!r}")
        if isinstance(self.priority, bool) or not isinstance(self.priority, int):
            raise TypeError(
                f"ImplRecord {self.name!r}: priority must be an int (lower runs first), got {self.priority!r}"
            )
        if not isinstance(self.spec, Spec):
            raise TypeError(
                f"ImplRecord {self.name!r}: spec must be a Spec, got {type(self.spec).__name__}; "
                "build one with Spec.of(fn, 'description') or the Spec builders"
            )

    def is_available(self) -> bool:
        """Probe availability now; a probe that raises counts as unavailable."""
        if not callable(self.available):
            return bool(self.available)
        try:
            return bool(self.available())
        except Exception:
            logger.debug("availability probe of %s/%s raised", self.family, self.name, exc_info=True)
            return False


@dataclass(frozen=True, slots=True)
class Resolution:
    """The row chosen for a call and which tier chose it (one of ``ORIGINS``)."""

    record: ImplRecord
    origin: str

    @property
    def name(self) -> str:
        return self.record.name

    def __repr__(self) -> str:
        return f"Resolution({self.record.family}/{self.record.name}, origin={self.origin!r})"

    def _repr_html_(self) -> str:
        from inspector.dispatch.display import resolution_html

        return resolution_html(self)

    @property
    def obj(self) -> Any:
        return self.record.obj
