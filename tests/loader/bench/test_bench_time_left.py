"""The time-left estimate's model, checked on recorded runs (never on this machine's clock).

``data/recorded_runs.json`` holds four real runs of ``inspector.loader.bench.run``: each cell in
order with the seconds it took. At the points of each run where the model gives an estimate and
more than a few seconds are left, the estimates must be within 1.5x of the time that was left
(at least 85% of them over all runs, each run's median within 1.3x), and never off by more than
1.75x: on a
busy machine one DataLoader cell can take twice as long as the one before it, and no model sees
that coming.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inspector.loader.bench.rows import METHODS, WORKERLESS
from inspector.loader.bench.time_left import Cell, bench_plan, seconds_left, time_left_reporter

RUNS = json.loads((Path(__file__).parent / "data" / "recorded_runs.json").read_text())["runs"]
MIN_LEFT_S = 5.0  # below this a ratio says little: the last cell alone decides it


def ratios_of(recorded: list[list]) -> list[float]:
    """Truth over estimate at each point of a recorded run where the model gives one and enough is left."""
    plan = [Cell(layout, size, workers, method) for layout, size, workers, method, _ in recorded]
    took = [seconds for *_, seconds in recorded]
    ratios = []
    for done in range(1, len(plan)):
        estimate, truth = seconds_left(plan, took[:done]), sum(took[done:])
        if estimate is not None and truth > MIN_LEFT_S:
            ratios.append(truth / estimate)
    return ratios


def test_the_time_left_is_within_1_5x_of_what_was_left_at_most_points() -> None:
    ratios = [r for recorded in RUNS.values() for r in ratios_of(recorded)]
    assert len(ratios) > 100 and sum(1 / 1.5 <= r <= 1.5 for r in ratios) >= 0.85 * len(ratios)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_the_time_left_is_never_far_off_on_a_recorded_run(name: str) -> None:
    recorded = RUNS[name]
    plan = [Cell(layout, size, workers, method) for layout, size, workers, method, _ in recorded]
    took = [seconds for *_, seconds in recorded]
    layouts = list(dict.fromkeys(c.layout for c in plan))
    sizes = list(dict.fromkeys(c.size_mb for c in plan))
    workers = sorted({c.workers for c in plan})
    assert bench_plan(layouts, sizes, workers, METHODS, WORKERLESS) == plan  # the order run() measures in
    ratios = []
    for done in range(1, len(plan)):
        estimate, truth = seconds_left(plan, took[:done]), sum(took[done:])
        if estimate is None:
            assert len({c.method for c in plan[:done]}) < len(METHODS)  # only before every method has run
            continue
        if truth > MIN_LEFT_S:
            ratios.append(truth / estimate)
    shown = [round(r, 2) for r in ratios]
    assert ratios == ratios_of(recorded) and all(1 / 1.75 <= r <= 1.75 for r in ratios), shown
    assert 1 / 1.3 <= sorted(ratios)[len(ratios) // 2] <= 1.3, shown
    # the old model (the average cell so far, times the cells left) was far off on the same runs
    naive = [sum(took[done:]) / (sum(took[:done]) / done * (len(plan) - done)) for done in range(1, 6)]
    assert max(naive) > 3


def test_the_estimate_waits_until_every_method_has_run_once() -> None:
    plan = bench_plan(["steps"], [1, 16], [2], ["ours", "dataloader"])
    assert seconds_left(plan, [1.0]) is None  # no DataLoader cell seen: no guess that reads low
    assert seconds_left(plan, [1.0, 20.0]) == pytest.approx(1.0 * 16**0.1 + 20.0)
    assert seconds_left(plan, [1.0, 20.0, 2.0, 30.0]) == 0


def test_a_columnar_dataloader_cell_is_expected_faster_than_a_steps_one() -> None:
    plan = bench_plan(["steps", "columnar"], [4], [2], ["dataloader"])
    assert seconds_left(plan, [20.0]) == pytest.approx(20.0 * 0.65)


def test_the_reporter_counts_cells_and_says_the_time_left() -> None:
    seen: list[tuple[int, int, str]] = []
    report = time_left_reporter(lambda *a: seen.append(a), bench_plan(["steps"], [1, 4], [2], ["ours", "sync"]))
    for done in range(5):
        report(done, f"cell {done}")
    assert [s[:2] for s in seen] == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)]
    assert seen[1][2] == "estimating the time left · cell 1"
    assert seen[2][2].startswith("about ") and seen[2][2].endswith(" left · cell 2") and seen[4][2] == "cell 4"
    time_left_reporter(None, [])(0, "no progress callback: nothing to do")
