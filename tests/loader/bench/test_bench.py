"""The loader benchmark: every baseline measured in one run, progress reported, cancellable, nothing left behind."""

from __future__ import annotations

import os
import statistics
import threading
from pathlib import Path

import pytest
import torch

from inspector.loader import CudaUnavailableError, FileStorage
from inspector.loader.bench import (
    METHODS,
    BenchCancelled,
    BenchRow,
    loads_per_repeat,
    measure_startup,
    per_leaf_cost_us,
    run,
    small_load_latency,
    versus_sync,
)
from inspector.loader.bench.peers import BenchFiles
from inspector.loader.bench.targets import versus_sync_target


@pytest.mark.slow
def test_one_run_measures_every_method_on_both_layouts(tmp_path: Path) -> None:
    progress: list[tuple[int, int, str]] = []
    arrived: list[BenchRow] = []
    rows = run(
        sizes_mb=(0.25,),
        workers=(1,),
        layouts=("steps", "columnar"),
        repeats=1,
        progress=lambda *args: progress.append(args),
        on_row=arrived.append,
        directory=str(tmp_path),
    )
    assert arrived == rows
    assert {(r.layout, r.method) for r in rows} == {(lay, m) for lay in ("steps", "columnar") for m in METHODS}
    assert all(r.mb_s > 0 and r.mb_s_min <= r.mb_s <= r.mb_s_max and r.corrupt == 0 for r in rows)
    assert all(r.device == "cpu" and r.size_mb == 0.25 for r in rows)
    ours = [r for r in rows if r.method == "ours"]
    assert all(r.read_ms is not None and r.build_ms is not None for r in ours)
    assert {r.leaves for r in rows if r.layout == "columnar"} == {4}
    assert progress[-1] == (len(rows), len(rows), "done") and progress[0][0] == 0
    assert os.listdir(tmp_path) == []  # payload files and their directory are gone
    assert rows[0].as_dict()["method"] == rows[0].method


def test_a_set_cancel_event_stops_the_run_and_cleans_up(tmp_path: Path) -> None:
    cancel = threading.Event()
    seen: list[BenchRow] = []

    def stop_after_first(row: BenchRow) -> None:
        seen.append(row)
        cancel.set()

    with pytest.raises(BenchCancelled):
        run(
            sizes_mb=(0.25, 1),
            workers=(1,),
            methods=("memcpy", "sync"),
            repeats=1,
            on_row=stop_after_first,
            cancel=cancel,
            directory=str(tmp_path),
        )
    assert len(seen) == 1 and os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"methods": ("ours", "pickle")}, r"Unknown methods \['pickle'\]\. Known: \['ours'"),
        ({"layouts": ("rows",)}, r"Unknown layouts \['rows'\]\. Known: \['steps', 'columnar'\]"),
        ({"workers": (0,)}, "must be non-empty and positive"),
        ({"sizes_mb": ()}, "must be non-empty and positive"),
    ],
)
def test_bad_arguments_are_refused_with_what_is_known(kwargs: dict, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        run(**kwargs)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on machines without CUDA")
def test_a_device_benchmark_without_cuda_says_so() -> None:
    with pytest.raises(CudaUnavailableError):
        run(sizes_mb=(0.25,), device="cuda")


def test_each_repeat_keeps_every_worker_busy() -> None:
    assert loads_per_repeat(256, 2) == 4 and loads_per_repeat(1, 2) == 256 and loads_per_repeat(16, 8) == 16


def test_start_up_and_per_leaf_cost_are_measured(tmp_path: Path) -> None:
    startup = measure_startup(size_mb=1, workers=1, directory=str(tmp_path))
    assert startup.seconds > 0 and startup.target_s == pytest.approx(0.5 + 2**20 / 2e9)
    assert per_leaf_cost_us(workers=1, leaves=256, loads=3, directory=str(tmp_path)) >= 0
    assert os.listdir(tmp_path) == []


def test_a_check_that_raises_inside_a_callback_ends_the_run_at_once_with_that_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import inspector.loader.bench.ours as ours

    monkeypatch.setattr(ours, "WAIT_S", 20.0)  # without the fix the run sat out WAIT_S, then timed out
    files = BenchFiles(str(tmp_path), "steps", 0.25, tensors=False)
    try:
        FileStorage(files.paths[1]).save({"not": "a trajectory"})  # a valid file the checker cannot read
        with pytest.raises(KeyError, match="obs"):
            ours.ours_speeds(files, 1, None, loads=4, repeats=1, check=lambda: None)
    finally:
        files.remove()
    assert os.listdir(tmp_path) == []


def test_the_small_load_and_the_pipe_take_turns_and_the_ratio_is_the_median_round() -> None:
    result = small_load_latency(count=40, warmup=5, rounds=4)
    assert result.loader_us.count == result.pipe_us.count == 40 and len(result.round_ratios) == 4
    assert result.ratio == statistics.median(result.round_ratios)
    with pytest.raises(ValueError, match="rounds"):
        small_load_latency(count=4, rounds=5)


def test_ours_and_a_synchronous_load_take_turns_in_rounds(tmp_path: Path) -> None:
    result = versus_sync(0.25, "steps", workers=2, rounds=3, loads=8, directory=str(tmp_path))
    assert result.ours_mb_s.count == result.sync_mb_s.count == 3 and len(result.round_ratios) == 3
    assert result.ratio == statistics.median(result.round_ratios) > 0
    line = versus_sync_target(result).line()
    assert "interleaved rounds" in line and "median of 3 rounds" in line and ("PASS" in line or "MISS" in line)
    assert os.listdir(tmp_path) == []  # its files are gone
