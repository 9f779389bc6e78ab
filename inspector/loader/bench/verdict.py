"""Is the loop waiting for data? A verdict from each step's wait for its batch and its compute; pure.

NOTE [ Loader-bound or compute-bound ]
A training step is two waits in a row: ``next(loader)`` (the wait for data) and the step itself
(compute). The share of the wall time spent in the first, ``data_wait_share``, says what a faster
loader could give at most: with data free, the loop would run ``1 / (1 - share)`` times faster.

* **loader-bound** when at least ``LOADER_BOUND`` (a third) of the wall time waits for data: data
  free would make the loop at least 1.5x faster, so the input pipeline is the thing to fix;
* **compute-bound** when at most ``COMPUTE_BOUND`` (a sixth) does: a faster loader would make
  the loop at most 1.2x faster, so tune the step instead;
* **balanced** in between: both matter.

The share is also taken over consecutive spans of the run, so its spread shows whether the
verdict held all along (a loader that falls behind late, a machine that got busy).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

LOADER_BOUND = 1 / 3
COMPUTE_BOUND = 1 / 6
VERDICTS = ("loader-bound", "compute-bound", "balanced")
SPANS = 5  # the run is cut into this many spans (fewer for a short run) for the share's spread


@dataclass(frozen=True)
class WaitShare:
    """The share of wall time spent waiting for the next batch: overall, and its min and max over spans."""

    value: float
    min: float
    max: float
    spans: int

    def __float__(self) -> float:
        return self.value

    def __str__(self) -> str:
        return f"{self.value:.0%} [{self.min:.0%}-{self.max:.0%} over {self.spans} spans]"


def wait_share(waits: Sequence[float], computes: Sequence[float]) -> WaitShare:
    """The share of ``sum(waits) / sum(waits + computes)``, with its spread over spans of consecutive steps."""
    if not waits or len(waits) != len(computes):
        raise ValueError("a wait share needs one compute time per wait, and at least one step")
    spans = max(1, min(SPANS, len(waits) // 3))
    size = len(waits) / spans
    shares = []
    for i in range(spans):
        lo, hi = round(i * size), round((i + 1) * size)
        shares.append(_share(waits[lo:hi], computes[lo:hi]))
    return WaitShare(_share(waits, computes), min(shares), max(shares), spans)


def _share(waits: Sequence[float], computes: Sequence[float]) -> float:
    total = sum(waits) + sum(computes)
    return sum(waits) / total if total > 0 else 0.0


def verdict_of(share: float) -> str:
    """``loader-bound``, ``compute-bound`` or ``balanced`` for a data-wait share (NOTE [ Loader-bound ... ])."""
    if share >= LOADER_BOUND:
        return "loader-bound"
    if share <= COMPUTE_BOUND:
        return "compute-bound"
    return "balanced"


def speedup_if_data_free(share: float) -> float:
    """How much faster the loop would run if every wait for data took no time."""
    return 1 / (1 - share) if share < 1 else float("inf")


def verdict_words(
    share: WaitShare,
    step_s: float,
    free_s: float,
    workers: int | None = None,
    stage: tuple[str, float] | None = None,
    cores: int = 0,
) -> str:
    """The verdict in a few sentences, with what to change next: ``stage`` is the largest stage (title, seconds)."""
    verdict = verdict_of(share.value)
    held = f"{share.min:.0%}-{share.max:.0%} across the run" if share.spans > 1 else "one span"
    gain = speedup_if_data_free(share.value)
    head = (
        f"{verdict.capitalize()}: {share.value:.0%} of the wall time ({held}) waits for the next batch. "
        f"With data free, a step would take {_ms(free_s)} instead of {_ms(step_s)}"
        + (f" ({gain:.3g}x faster)." if gain < 1000 else ".")
    )
    if verdict == "compute-bound":
        return head + " A faster loader would change little: tune the step itself (or grow the batch)."
    where = f" Most of a batch's time is in {stage[0]} ({_ms(stage[1])} per batch)." if stage else ""
    if workers == 0:
        nxt = (
            " Next step: worker processes (num_workers=2 or more) so batches are made while the step runs; "
            "sweep_loader(make_loader, num_workers=[0, 1, 2, 4]) finds how many pay off."
        )
        if 0 < cores <= 2:
            nxt += f" With {cores} cores, workers take them from your step: only the sweep can say which wins."
    elif workers:
        nxt = (
            f" Next step: with {workers} workers already, try more (sweep_loader), a lighter __getitem__, "
            "or save the prepared batches once and load them (profile_inspector_loader shows that speed)."
        )
    else:
        nxt = " Next step: profile the loader on its own (profile_loader) to see where its time goes."
    return head + where + nxt


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"
