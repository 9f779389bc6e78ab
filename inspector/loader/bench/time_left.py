"""How long a benchmark run has left, from how long its cells took so far; the model is pure.

NOTE [ Time left ]
The cells of one run cost very different amounts: a DataLoader cell starts worker processes
twice and runs near its time cap (tens of seconds on a busy 2-core machine), a memcpy cell takes
milliseconds. So the average cell so far, times the cells left, reads several times low early in
a run. Instead, each cell left is predicted from cells of the same method already measured:

* the same cell at another worker count when this one has not run yet at its own;
* the same layout at the nearest size, scaled along the power law through its two nearest
  measured sizes (``SIZE_EXPONENTS`` while it has only one: bigger payloads take longer for
  the baselines that move every byte through a pipe);
* the other layout at the same size, scaled by ``LAYOUT_FACTORS``: a DataLoader pays per leaf,
  so its cells on the 4-leaf ``columnar`` layout take about two thirds as long as on ``steps`` on
  the recorded runs, while the other methods take about the same;

and when both of the last two apply, their geometric mean (two noisy guesses beat one).

Until every method of the run has been measured once there is no estimate ("estimating the
time left"), rather than a guess that reads low; with the benchmark's order (layout, then
size, then method) that is after the first size. Checked on four recorded runs
(``tests/loader/bench/test_bench_time_left.py``): 96 of 111 estimates within 1.5x of the time that
was really left, the worst 1.7x, where a single DataLoader cell took twice as long as the ones
before it (each starts worker processes twice, which on a busy machine varies by half either
way).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from inspector._bench import Progress

LAYOUT_FACTORS = {("dataloader", "columnar"): 0.65}  # against the same method on ``steps``
# How a method's cell time grows with payload size (t ~ size**e) until two sizes are measured.
SIZE_EXPONENTS = {"ours": 0.1, "sync": 0.3, "mp_queue": 0.2, "dataloader": 0.0, "memcpy": 0.9, "h2d": 0.9}


class Cell(NamedTuple):
    """One cell of a benchmark run: a method moving one layout and size with a number of workers."""

    layout: str
    size_mb: float
    workers: int
    method: str


def bench_plan(
    layouts: Sequence[str],
    sizes: Sequence[float],
    workers: Sequence[int],
    methods: Sequence[str],
    workerless: Sequence[str] = (),
) -> list[Cell]:
    """The cells of a run in the order they are measured (a method in ``workerless`` once per size)."""
    return [
        Cell(layout, size, w, method)
        for layout in layouts
        for size in sizes
        for method in methods
        for w in (workers[:1] if method in workerless else workers)
    ]


def seconds_left(plan: Sequence[Cell], took: Sequence[float]) -> float | None:
    """Seconds the cells ``plan[len(took):]`` will take, given that ``plan[i]`` took ``took[i]``; None
    while a method of the cells left has not been measured (NOTE [ Time left ])."""
    seen: dict[Cell, float] = dict(zip(plan, took, strict=False))
    total = 0.0
    for cell in plan[len(took) :]:
        guess = _cell_seconds(cell, seen)
        if guess is None:
            return None
        total += guess
    return total


def _cell_seconds(cell: Cell, seen: dict[Cell, float]) -> float | None:
    mine = {c: t for c, t in seen.items() if c.method == cell.method}
    if not mine:
        return None
    same_workers = {c: t for c, t in mine.items() if c.workers == cell.workers} or mine
    by_place = {(c.layout, c.size_mb): t for c, t in same_workers.items()}
    if (cell.layout, cell.size_mb) in by_place:
        return by_place[cell.layout, cell.size_mb]
    factor = lambda layout: (
        LAYOUT_FACTORS.get((cell.method, cell.layout), 1.0) / LAYOUT_FACTORS.get((cell.method, layout), 1.0)
    )
    here = [(size, t) for (layout, size), t in by_place.items() if layout == cell.layout]
    guesses = [_along(here, cell.size_mb, cell.method)] if here else []
    guesses += [
        t * factor(layout) for (layout, size), t in by_place.items() if layout != cell.layout and size == cell.size_mb
    ]
    if not guesses:
        layout = next(iter(by_place))[0]
        there = [(size, t) for (other, size), t in by_place.items() if other == layout]
        guesses.append(_along(there, cell.size_mb, cell.method) * factor(layout))
    return math.exp(sum(math.log(max(g, 1e-6)) for g in guesses) / len(guesses))


def _along(points: list[tuple[float, float]], size: float, method: str) -> float:
    """A method's seconds at ``size`` from its seconds at other sizes of one layout: the nearest measured
    size, scaled by the power law through the two nearest (or ``SIZE_EXPONENTS`` with one point)."""
    nearest = sorted(points, key=lambda point: _distance(point[0], size))
    near_size, near_t = nearest[0]
    exponent = SIZE_EXPONENTS.get(method, 0.3)
    if len(nearest) > 1:
        (s1, t1), (s2, t2) = sorted(nearest[:2])
        exponent = min(max(math.log(max(t2, 1e-6) / max(t1, 1e-6)) / math.log(s2 / s1), 0.0), 1.0)
    return near_t * (size / near_size) ** exponent


def _distance(a: float, b: float) -> float:
    return abs(math.log2(max(a, 1e-9)) - math.log2(max(b, 1e-9)))


def duration(seconds: float) -> str:
    """``'40 s'`` or ``'3 min'``."""
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def time_left_reporter(progress: Progress | None, plan: Sequence[Cell]) -> Callable[[int, str], None]:
    """``report(done, message)``: calls ``progress(done, len(plan), message)``, the time left put first.

    ``report`` is called as cell ``done`` starts (``done`` cells finished), so the time between two
    calls is what a cell took, its payload files' set-up included.
    """
    total = len(plan)
    took: list[float] = []
    last = [time.perf_counter()]

    def report(done: int, message: str) -> None:
        now = time.perf_counter()
        while len(took) < min(done, total):
            took.append((now - last[0]) / max(done - len(took), 1))
        last[0] = now
        if progress is None:
            return
        if 0 < done < total:  # first, so a progress bar that cuts long lines still shows it
            left = seconds_left(plan, took)
            message = (
                f"about {duration(left)} left · {message}"
                if left is not None
                else f"estimating the time left · {message}"
            )
        progress(done, total, message)

    return report
