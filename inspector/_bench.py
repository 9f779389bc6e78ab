"""Benchmark records shared by the engine parts (standard library only).

Speed lives in benchmarks, never in tests: each part measures itself against a named baseline
in the same run and reports a ``Measurement`` with its target, so ``make bench``, the
``inspector bench`` command and the report all print the same figures.
"""

from __future__ import annotations

import time
import timeit
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class Measurement:
    """One figure: ours, the baseline measured in the same run, their ratio and the target."""

    part: str
    name: str
    value: float
    unit: str
    baseline: str = ""
    baseline_value: float | None = None
    ratio: float | None = None
    ratio_label: str = ""
    target: str = ""
    ok: bool = True
    spread: tuple[float, float] | None = None  # (min, max) of the repeats ``value`` is the median of
    baseline_spread: tuple[float, float] | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __repr__(self) -> str:
        return f"<Measurement {self.line()}>"

    def _repr_html_(self) -> str:
        from inspector._display import html_table

        verdict = ("PASS" if self.ok else "MISS") if self.target else ""
        return html_table(
            ("figure", "ours", "baseline", "ratio", "target", ""),
            [
                (
                    self.name,
                    f"{_number(self.value)} {self.unit}",
                    self.baseline or "",
                    f"{self.ratio:.2f}x {self.ratio_label}" if self.ratio is not None else "",
                    self.target,
                    verdict,
                )
            ],
        )

    def line(self) -> str:
        """``resolve ...: 0.27 µs; plain Python call 0.030 µs; 9.0x a plain call [target <= 12x] PASS``.

        A figure that is the median of repeats shows their range: ``52.1 µs (40.3-2,390)``.
        """
        text = f"{self.name}: {_number(self.value)} {self.unit}{_range(self.spread)}"
        if self.baseline:
            shown = "" if self.baseline_value is None else f" {_number(self.baseline_value)} {self.unit}"
            text += f"; {self.baseline}{shown}{_range(self.baseline_spread)}"
        if self.ratio is not None:
            text += f"; {self.ratio:.2f}x {self.ratio_label}".rstrip()
        if self.target:
            text += f"  [target {self.target}] {'PASS' if self.ok else 'MISS'}"
        return text


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def _range(spread: tuple[float, float] | None) -> str:
    return "" if spread is None else f" (min {_number(spread[0])}, max {_number(spread[1])})"


def best_of(fn: Callable[[], object], rounds: int) -> float:
    """Seconds of the fastest of ``rounds`` calls."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


Step = tuple[str, str, int]  # (name, statement, calls per round)


def per_call_us(statement: str, namespace: dict[str, Any], number: int, rounds: int) -> float:
    """µs per call of ``statement`` (evaluated in ``namespace``), the best of ``rounds`` rounds."""
    return min(timeit.repeat(statement, globals=namespace, number=number, repeat=rounds)) / number * 1e6


def time_steps(
    steps: list[Step],
    namespace: dict[str, Any],
    rounds: int,
    progress: Progress | None,
    label: str,
    total: int | None = None,
) -> dict[str, float]:
    """µs per call of each step, reporting progress as ``label: name`` (``total`` counts later work too)."""
    count = total if total is not None else len(steps)
    times: dict[str, float] = {}
    for done, (name, statement, number) in enumerate(steps):
        if progress is not None:
            progress(done, count, f"{label}: {name}")
        times[name] = per_call_us(statement, namespace, number, rounds)
    if progress is not None and total is None:
        progress(count, count, f"{label}: done")
    return times
