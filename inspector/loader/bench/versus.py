"""Ours against a synchronous ``FileStorage.load`` of the same files, taking turns in rounds within one run.

The throughput table measures each method in its own cell, one after the other, so a change in
the machine's load between cells moves one figure and not the other. ``versus_sync`` keeps both
up and alternates them in short rounds (which goes first alternates too), each round timing the
same number of payloads with each, so both see the same machine; the ratio is the median of the
rounds' ratios, and their spread says how far to trust it (NOTE [ Numbers a researcher can trust ]
in ``stats``). The synchronous side is exactly the ``sync`` baseline of the table.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import asdict, dataclass
from typing import Any

from inspector.loader.bench.ours import ours_once
from inspector.loader.bench.peers import BenchFiles, sync_peer
from inspector.loader.bench.stats import MachineLoad, Spread, machine_load


@dataclass(frozen=True)
class VersusSync:
    """MiB/s of ours and of the synchronous load, per round, and each round's ratio."""

    layout: str
    size_mb: float
    workers: int
    ours_mb_s: Spread
    sync_mb_s: Spread
    round_ratios: tuple[float, ...]
    machine: MachineLoad

    @property
    def ratio(self) -> float:
        """The median of the rounds' ratios (ours over sync; the target at 1 MiB is at least 1)."""
        return statistics.median(self.round_ratios)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": self.ratio}


def versus_sync(
    size_mb: float = 1.0,
    layout: str = "steps",
    workers: int = 2,
    rounds: int = 10,
    loads: int = 128,
    directory: str | None = None,
) -> VersusSync:
    """Both, ``loads`` payloads a round each after a warm-up, in ``rounds`` rounds.

    >>> result = versus_sync(1, rounds=6)  # doctest: +SKIP
    >>> f"{result.ratio:.2f}x a synchronous load"  # doctest: +SKIP
    """
    if rounds < 1 or loads < 1 or workers < 1 or size_mb <= 0:
        raise ValueError("rounds, loads, workers and size_mb must be positive")
    machine = machine_load()
    ours_speeds: list[float] = []
    sync_speeds: list[float] = []
    with tempfile.TemporaryDirectory(prefix="inspector-bench-", dir=directory) as tmp:
        files = BenchFiles(tmp, layout, size_mb, tensors=False)
        sync_once = sync_peer(files, None)
        try:
            with ours_once(files, workers, None) as (ours, _loader):
                ours(loads)  # warm-up: the segment pool fills, the page cache and the plan cache are hot
                sync_once(loads)
                for r in range(rounds):
                    pair = (ours, sync_once) if r % 2 == 0 else (sync_once, ours)
                    speeds = {id(fn): _speed(fn, loads, files.nbytes) for fn in pair}
                    ours_speeds.append(speeds[id(ours)])
                    sync_speeds.append(speeds[id(sync_once)])
        finally:
            files.remove()
    ratios = tuple(o / s for o, s in zip(ours_speeds, sync_speeds, strict=True))
    return VersusSync(layout, size_mb, workers, Spread.of(ours_speeds), Spread.of(sync_speeds), ratios, machine)


def _speed(once: Any, loads: int, nbytes: int) -> float:
    started = time.perf_counter()
    if once(loads):
        raise AssertionError("a corrupt delivery while comparing with the synchronous load")
    return loads * nbytes / (time.perf_counter() - started) / 2**20
