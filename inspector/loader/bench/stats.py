"""How every loader timing is taken and summarised: warm-up, repeats, min/median/max, a busy-machine note, an ETA.

NOTE [ Numbers a researcher can trust ]
Every figure the loader's benchmark, profiler, panel and command line print comes from the same
recipe: a warm-up that is not counted, then repeats summarised as min / median / max (the median
is the figure; the spread says how far to trust it), a per-run time cap so a slow baseline costs
seconds rather than minutes (fewer repeats, marked ``capped``), and the machine's load average
sampled before the run: when it exceeds the cores left free (``os.cpu_count() - 1``: one core
for the run itself), every table says "busy machine" next to the figures. Long runs report a
count and an estimate of the time left (NOTE [ Time left ] in ``time_left``); a cancelled run
keeps what it measured.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Spread:
    """The median of some repeated measurements, with their min, max and count."""

    median: float
    min: float
    max: float
    count: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        if not values:
            raise ValueError("a spread needs at least one measurement")
        return cls(statistics.median(values), min(values), max(values), len(values))

    def scaled(self, factor: float) -> Spread:
        return Spread(self.median * factor, self.min * factor, self.max * factor, self.count)

    def __str__(self) -> str:
        return f"{_short(self.median)} [{_short(self.min)}-{_short(self.max)}, n={self.count}]"


def _short(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


@dataclass(frozen=True)
class MachineLoad:
    """The load average when a run started, against the machine's cores."""

    load_average: float
    cores: int

    @property
    def busy(self) -> bool:
        """True when the load average exceeds the cores left free for the run (all but one)."""
        return self.load_average > max(self.cores - 1, 0)

    def note(self) -> str:
        """A line for every table: empty when the machine was quiet."""
        if not self.busy:
            return ""
        return (
            f"busy machine: load average {self.load_average:.1f} on {self.cores} cores when the run started; "
            "figures may read low and spread wide, rerun on a quiet machine to compare"
        )


def machine_load() -> MachineLoad:
    """The 1-minute load average now, and the number of cores."""
    try:
        load = os.getloadavg()[0]
    except OSError:  # not available on this platform
        load = 0.0
    return MachineLoad(load, os.cpu_count() or 1)
