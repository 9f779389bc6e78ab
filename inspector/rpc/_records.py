"""Snapshots a ``LocalWorld`` hands out: what each worker reported, measured latencies and bandwidth."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class WorkerSnapshot:
    """One worker as gathered after ``init_rpc``; reverse maps and device list derived as torch does."""

    rank: int
    name: str
    pid: int
    device_count: int
    device_maps: dict[str, dict[str, str]]
    devices: tuple[str, ...]
    reverse_device_maps: dict[str, dict[str, str]]
    device_list: tuple[str, ...]
    init_seconds: float


@dataclass(frozen=True)
class WorkerFailure:
    """Why a worker did not become ready: its stage, exception and message, and its stderr's tail."""

    rank: int
    name: str
    stage: str
    exception: str
    message: str
    stderr_tail: str = ""

    @property
    def headline(self) -> str:
        return (
            f"{self.name} (rank {self.rank}) failed during {self.stage}: {self.exception}: "
            + (self.message.partition("\n")[0])
        )


def percentile(samples: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100) of non-empty ``samples``."""
    ordered = sorted(samples)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


MIB = 1 << 20  # the unit of sizes and throughput here and in the loader: MiB, MiB/s
TAIL_FACTOR = 5.0  # a pair whose p99 is this many times its median has a tail worth a look


@dataclass(frozen=True)
class PairLatency:
    """Round trips of a no-op ``rpc_sync`` from ``caller`` to ``callee``: percentiles of the samples."""

    caller: str
    callee: str
    samples: int
    min_s: float
    median_s: float
    p90_s: float
    p99_s: float
    max_s: float

    @classmethod
    def from_samples(cls, caller: str, callee: str, samples: Sequence[float]) -> PairLatency:
        return cls(
            caller,
            callee,
            len(samples),
            min(samples),
            percentile(samples, 50),
            percentile(samples, 90),
            percentile(samples, 99),
            max(samples),
        )

    @property
    def tail_ratio(self) -> float:
        """p99 over the median: how far the slow calls stray from the typical one."""
        return self.p99_s / self.median_s if self.median_s > 0 else math.inf

    @property
    def has_tail(self) -> bool:
        """Whether the p99 is at least ``TAIL_FACTOR`` times the median."""
        return self.tail_ratio >= TAIL_FACTOR


@dataclass(frozen=True)
class RttMatrix:
    """Every ordered pair's latency; ``median_matrix()`` is rows = caller, columns = callee."""

    names: tuple[str, ...]
    pairs: tuple[PairLatency, ...]

    def get(self, caller: str, callee: str) -> PairLatency | None:
        return next((p for p in self.pairs if (p.caller, p.callee) == (caller, callee)), None)

    def median_matrix(self) -> list[list[float]]:
        """Median seconds per (caller, callee); NaN where a pair was not measured."""
        found = {(p.caller, p.callee): p.median_s for p in self.pairs}
        return [[found.get((a, b), math.nan) for b in self.names] for a in self.names]


def _mib_per_s(nbytes: int, seconds: float) -> float:
    return nbytes / MIB / seconds if seconds > 0 else math.inf


@dataclass(frozen=True)
class Bandwidth:
    """Sending an ``nbytes`` tensor from ``caller`` to ``callee`` (a small reply comes back).

    ``warmup`` sends went first and are not counted; the times are the fastest, median and
    slowest of ``repeats`` timed sends, so the throughputs are the best, median and worst.
    """

    caller: str
    callee: str
    nbytes: int
    repeats: int
    warmup: int
    min_s: float
    median_s: float
    max_s: float

    @classmethod
    def from_samples(cls, caller: str, callee: str, nbytes: int, warmup: int, samples: Sequence[float]) -> Bandwidth:
        return cls(caller, callee, nbytes, len(samples), warmup, min(samples), percentile(samples, 50), max(samples))

    @property
    def mib(self) -> float:
        return self.nbytes / MIB

    @property
    def mib_per_s(self) -> float:
        """Median throughput."""
        return _mib_per_s(self.nbytes, self.median_s)

    @property
    def best_mib_per_s(self) -> float:
        return _mib_per_s(self.nbytes, self.min_s)

    @property
    def worst_mib_per_s(self) -> float:
        return _mib_per_s(self.nbytes, self.max_s)


@dataclass(frozen=True)
class WorldSnapshot:
    """A world's workers with whatever has been measured so far."""

    workers: tuple[WorkerSnapshot, ...]
    start_seconds: float
    rtt: RttMatrix | None = None
    bandwidth: tuple[Bandwidth, ...] = field(default_factory=tuple)
