"""Per-stage times of a DataLoader's batches, from the stamps each batch carried back; pure.

With ``num_workers=0`` every stage runs inside the main process's ``next(loader)``, so the stages
add up to that wait (``measured``); with workers they run in a worker, then the batch crosses to the
main process, so they add up to the batch's latency, from a worker starting it to the main process
holding it. What the timers do not see (the sampler, the fetch loop between items, handing the
batch back) is ``other``, taken per batch, so the stages' medians add up to the measured median
within the measured spread (``adds_up``) and ``unexplained_share`` says how much the named stages
leave unexplained.
Stamps are made as NOTE [ Stage timings through public seams ] in ``stages`` says.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from inspector.loader.bench.stats import Spread

STAGE_NAMES = ("dataset", "collate", "transfer", "pin", "other", "h2d")
STAGE_TITLES = {
    "dataset": "your dataset's __getitem__/__getitems__",
    "collate": "collate_fn",
    "transfer": "to the main process, and waiting",
    "pin": "pinning",
    "h2d": "host to device",
    "other": "other (sampler, fetch loop)",
}


@dataclass(frozen=True)
class StageSplit:
    """Seconds per batch in each stage (median, min, max over the timed batches) and what they add up to.

    ``measured`` is the main process's wait per batch (``num_workers=0``) or each batch's latency
    from a worker starting it to the main process receiving it (``num_workers > 0``);
    ``worker_busy_share`` is the share of the workers' time spent making batches (None without workers).
    """

    workers: int
    batches: int
    stages: dict[str, Spread]
    measured: Spread
    worker_busy_share: float | None = None

    @property
    def accounted_s(self) -> float:
        """The medians of the stages the measured time holds, summed (host to device is timed apart)."""
        return float(sum(spread.median for name, spread in self.stages.items() if name != "h2d"))

    @property
    def other_s(self) -> float:
        other = self.stages.get("other")
        return other.median if other is not None else 0.0

    @property
    def unexplained_share(self) -> float:
        """The share of the measured median the named stages leave to ``other``."""
        return self.other_s / self.measured.median if self.measured.median > 0 else 0.0

    @property
    def adds_up(self) -> bool:
        """The stages' medians sum to within the spread of the measured time."""
        return self.measured.min <= self.accounted_s <= self.measured.max

    def largest(self) -> str:
        """The named stage (not ``other``) with the largest median."""
        named = [name for name in self.stages if name != "other"] or list(self.stages)
        return max(named, key=lambda name: self.stages[name].median)

    def as_dict(self) -> dict[str, Any]:
        """Median milliseconds per stage, flat (for tables and JSON)."""
        record: dict[str, Any] = {f"{name}_ms": spread.median * 1e3 for name, spread in self.stages.items()}
        record.update(
            measured_ms=self.measured.median * 1e3, workers=self.workers, worker_busy_share=self.worker_busy_share
        )
        return record


def split_stages(
    stamps: Sequence[Any],
    asked: Sequence[float],
    received: Sequence[float],
    wall_s: float,
    workers: int,
    h2d_s: float | None = None,
) -> StageSplit | None:
    """The split of the timed batches from each one's ``TimedBatch`` stamps and the main process's clock
    (``time.monotonic()``): when it asked for the batch and when it had it; ``wall_s`` is the whole
    timed loop, ``h2d_s`` one batch's copy to the GPU (timed apart)."""
    rows = [(s, a, r) for s, a, r in zip(stamps, asked, received, strict=True) if s is not None]
    if not rows:
        return None
    here = os.getpid()
    in_main = all(s.pid == here for s, _, _ in rows)
    per: dict[str, list[float]] = {name: [] for name in STAGE_NAMES if name != "h2d"}
    measured = []
    for s, asked_at, got in rows:
        total = max(got - asked_at, 0.0) if in_main else max(got - s.started, 0.0)
        transfer = 0.0 if in_main else max(got - s.collated - s.pin_s, 0.0)
        named = s.fetch_s + s.collate_s + s.pin_s + transfer
        for name, value in (
            ("dataset", s.fetch_s),
            ("collate", s.collate_s),
            ("transfer", transfer),
            ("pin", s.pin_s),
            ("other", max(total - named, 0.0)),
        ):
            per[name].append(value)
        measured.append(total)
    stages = {name: Spread.of(values) for name, values in per.items() if any(values)}
    if h2d_s is not None:
        stages["h2d"] = Spread(h2d_s, h2d_s, h2d_s, 1)
    busy = None
    if not in_main and workers > 0 and wall_s > 0:
        busy = min(sum(s.fetch_s + s.collate_s for s, _, _ in rows) / (workers * wall_s), 1.0)
    return StageSplit(0 if in_main else workers, len(rows), stages, Spread.of(measured), busy)
