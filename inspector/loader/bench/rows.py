"""The records a loader benchmark produces, and what its methods are called."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from inspector.errors import Cancelled

METHODS = ("ours", "sync", "mp_queue", "dataloader", "memcpy")
METHOD_LABELS = {
    "ours": "inspector loader",
    "sync": "FileStorage.load (sync)",
    "mp_queue": "multiprocessing.Queue",
    "dataloader": "torch DataLoader",
    "memcpy": "memcpy (ceiling)",
    "h2d": "pinned H2D copy",
}
WORKERLESS = ("sync", "memcpy", "h2d")  # measured once per size, reported with workers=1


class BenchCancelled(Cancelled):
    """``run`` stopped because its ``cancel`` event was set; ``rows`` holds what it measured before."""

    def __init__(self, rows: Sequence[Any] = ()) -> None:
        self.rows = list(rows)
        super().__init__(f"benchmark cancelled after {len(self.rows)} results (they are kept)")


@dataclass(frozen=True)
class BenchRow:
    """One measured cell: a method moving one layout and size with a number of workers.

    ``mb_s`` is the median over ``repeats`` timed repeats (after a warm-up), with its min and
    max; ``capped`` says the per-run time cap cut the repeats or loads short; ``load_average``
    and ``cores`` describe the machine when the cell started (NOTE [ Numbers a researcher can
    trust ] in ``stats``).
    """

    layout: str
    size_mb: float
    workers: int
    device: str
    method: str
    mb_s: float
    mb_s_min: float
    mb_s_max: float
    repeats: int
    loads: int
    leaves: int
    corrupt: int
    read_ms: float | None = None
    handoff_ms: float | None = None
    wait_ms: float | None = None
    build_ms: float | None = None
    h2d_ms: float | None = None
    callback_ms: float | None = None
    capped: bool = False
    load_average: float = 0.0
    cores: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Startup:
    """Seconds from creating a loader to the first payload delivered, and the target for that size."""

    seconds: float
    size_mb: float
    workers: int

    @property
    def target_s(self) -> float:
        return 0.5 + self.size_mb * 2**20 / 2e9


class BenchResults(list[BenchRow]):
    """What ``run`` returns: the rows, in the order they were measured, shown as a table in a notebook."""

    def __repr__(self) -> str:
        ours = [r for r in self if r.method == "ours"]
        best = max((r.mb_s for r in ours), default=0.0)
        return (
            f"<BenchResults: {len(self)} cells, {len(ours)} of the inspector's loader"
            f"{f', best {best:,.0f} MiB/s' if ours else ''}>"
        )

    def _repr_html_(self) -> str:
        from inspector._display import html_table

        rows = [
            (
                r.layout,
                r.size_mb,
                r.workers,
                METHOD_LABELS.get(r.method, r.method),
                r.mb_s,
                r.mb_s_min,
                r.mb_s_max,
                r.repeats,
                r.corrupt,
            )
            for r in self
        ]
        head = ("layout", "MiB", "workers", "method", "MiB/s (median)", "min", "max", "repeats", "corrupt")
        return html_table(head, rows, f"{len(self)} benchmark cells")
