"""The benchmark's bookkeeping: sizes checked first, spreads, the busy note, the history and cancelled runs."""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inspector.errors import Cancelled
from inspector.loader.bench import (
    BenchCancelled,
    BenchRow,
    LatencyResult,
    MachineLoad,
    Spread,
    check_sizes,
    history_path,
    read_history,
    record_run,
    run,
)
from inspector.loader.bench.targets import latency_target, throughput_targets


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_sizes_are_finite_positive_and_bounded_or_refused_with_a_next_step(size: float) -> None:
    if math.isfinite(size) and 0 < size <= 4096:
        assert check_sizes([size], available=1 << 50) == [size]
    else:
        with pytest.raises(ValueError, match="next step"):
            check_sizes([size], available=1 << 50)


def test_sizes_that_do_not_fit_in_memory_are_refused_before_anything_is_allocated() -> None:
    with pytest.raises(ValueError, match=r"only 1\.0 GiB of memory is available; next step = use smaller sizes"):
        check_sizes([1024], available=1 << 30)
    with pytest.raises(ValueError, match="not a number"):
        check_sizes(["1e"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="no payload sizes"):
        check_sizes([])
    with pytest.raises(ValueError, match="out of range"):
        run(sizes_mb=(1e9,), methods=("memcpy",))


def test_a_spread_keeps_median_min_max_and_count() -> None:
    spread = Spread.of([3.0, 1.0, 2.0, 10.0])
    assert (spread.median, spread.min, spread.max, spread.count) == (2.5, 1.0, 10.0, 4)
    assert spread.scaled(2).median == 5.0 and "n=4" in str(spread)
    with pytest.raises(ValueError):
        Spread.of([])


def test_the_machine_is_busy_when_the_load_exceeds_the_free_cores() -> None:
    assert not MachineLoad(0.9, 2).busy and MachineLoad(1.5, 2).busy
    assert MachineLoad(1.5, 2).note().startswith("busy machine: load average 1.5 on 2 cores")
    assert MachineLoad(0.5, 4).note() == ""


def test_runs_are_kept_with_their_environment_and_read_back_oldest_first(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    row = BenchRow("steps", 1, 2, "cpu", "ours", 100.0, 90.0, 110.0, 3, 8, 4, 0)
    for i in range(7):
        record_run("loader", [row], settings={"i": i}, path=path)
    record_run("dispatch", [{"name": "x"}], path=path)
    with open(path, "a") as file:
        file.write("{not json\n")  # a line cut short by a crash is skipped
    runs = read_history("loader", last=5, path=path)
    assert [r["settings"]["i"] for r in runs] == [2, 3, 4, 5, 6]
    env = runs[0]["environment"]
    assert {"torch", "numpy", "cpu", "cores", "gpu", "commit", "python"} <= set(env)
    assert runs[0]["rows"][0]["mb_s"] == 100.0 and runs[0]["cancelled"] is False
    assert read_history(path=tmp_path / "none.jsonl") == []


def test_the_history_lives_under_the_users_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("INSPECTOR_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert history_path() == tmp_path / "inspector" / "bench-history.jsonl"
    monkeypatch.setenv("INSPECTOR_CACHE_DIR", str(tmp_path / "x"))
    assert history_path() == tmp_path / "x" / "bench-history.jsonl"


def test_a_cancelled_run_keeps_what_it_measured(tmp_path: Path) -> None:
    cancel = threading.Event()
    seen: list[BenchRow] = []

    def stop_after_first(row: BenchRow) -> None:
        seen.append(row)
        cancel.set()

    with pytest.raises(BenchCancelled) as info:
        run(
            sizes_mb=(0.25, 1),
            workers=(1,),
            methods=("memcpy", "sync"),
            repeats=1,
            on_row=stop_after_first,
            cancel=cancel,
            directory=str(tmp_path),
        )
    assert isinstance(info.value, Cancelled) and info.value.rows == seen and len(seen) == 1
    kept = read_history("loader", last=1)[0]
    assert kept["cancelled"] is True and [r["method"] for r in kept["rows"]] == ["memcpy"]
    assert json.dumps(kept)  # plain JSON


def test_every_timed_target_line_shows_the_range_behind_its_median() -> None:
    loader_us, pipe_us = Spread(52.0, 40.5, 2390.0, 100), Spread(18.0, 16.5, 77.0, 100)
    latency = LatencyResult(loader_us, pipe_us, 1024, 2, MachineLoad(0.5, 2))
    line = latency_target(latency).line()
    assert "52 µs (min 40.5, max 2,390)" in line and "18 µs (min 16.5, max 77)" in line
    row = {
        "layout": "steps",
        "size_mb": 1,
        "workers": 2,
        "device": "cpu",
        "repeats": 3,
        "loads": 8,
        "leaves": 20,
        "corrupt": 0,
        "capped": False,
        "load_average": 0.1,
        "cores": 2,
    }
    rows = [
        BenchRow(method=m, mb_s=v, mb_s_min=v - 10, mb_s_max=v + 10, **row)
        for m, v in (("ours", 6000.0), ("sync", 5000.0), ("memcpy", 9000.0))
    ]
    lines = [m.line() for m in throughput_targets(rows)]
    assert any("vs sync" in ln and "(min 5,990, max 6,010)" in ln and "(min 4,990, max 5,010)" in ln for ln in lines)
