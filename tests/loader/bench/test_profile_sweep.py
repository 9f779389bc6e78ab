"""sweep_loader on real DataLoaders and workers: figures per setting, a recommendation, and nothing left behind.

Each test checks, after the sweep, that no process it started still runs and that no torch entry is
left in /dev/shm, also when the factory raises, when a worker crashes, on Cancel and on Ctrl-C.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
import torch
from loader_probes import shm_entries
from torch.utils.data import DataLoader, Dataset, get_worker_info
from waiting import PROCESS_WAIT_S

from inspector.errors import Cancelled
from inspector.loader import SweepResult, sweep_loader
from inspector.loader.bench import SweepCancelled, SweepSetting
from inspector.loader.bench.sweep import recommend


class Sleepy(Dataset):
    def __init__(self, seconds: float = 0.004, size: int = 100_000) -> None:
        self.seconds, self.size = seconds, size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, i: int) -> torch.Tensor:
        time.sleep(self.seconds)
        return torch.full((16,), float(i))


class CrashesInWorkers(Sleepy):
    """Its worker processes die (as a segfault or the OOM killer would end them) on their third item."""

    def __getitem__(self, i: int) -> torch.Tensor:
        if get_worker_info() is not None and i >= 2:
            os._exit(1)
        return super().__getitem__(i)


def torch_shm() -> set[str]:
    return {name for name in shm_entries() if name.startswith("torch_")}


@pytest.fixture
def nothing_left(new_processes):  # type: ignore[no-untyped-def]
    before = torch_shm()
    yield
    assert new_processes() == []  # checked at once: the sweep itself waits for its workers
    assert torch_shm() - before == set()


def make(num_workers: int, batch_size: int = 4) -> DataLoader:
    return DataLoader(Sleepy(), batch_size=batch_size, num_workers=num_workers)


def test_a_sweep_times_every_setting_and_recommends_the_smallest_near_the_best(nothing_left: None) -> None:
    seen: list[tuple[int, int, str]] = []
    result = sweep_loader(
        make, num_workers=[0, 1, 2], batch_size=[4, 8], batches=8, warmup=1, progress=lambda *a: seen.append(a)
    )
    assert isinstance(result, SweepResult) and len(result.settings) == 6
    assert [s.setting for s in result.settings][:2] == [
        {"num_workers": 0, "batch_size": 4},
        {"num_workers": 0, "batch_size": 8},
    ]
    for s in result.settings:
        assert s.ok and s.batches == 8 and s.batches_per_s > 0 and s.first_batch_s > 0
        assert s.samples_per_s == pytest.approx(s.batches_per_s * s.setting["batch_size"])
        assert s.peak_rss_bytes > 0 and s.stopped_workers == ()
    with_workers = [s for s in result.settings if s.setting["num_workers"] > 0]
    assert all(s.peak_shared_bytes > 0 for s in with_workers)  # batches come back through shared memory
    best = max(s.samples_per_s for s in result.settings)
    chosen = result.recommended
    assert chosen is not None and chosen.samples_per_s >= 0.95 * best
    smaller = [
        s
        for s in result.settings
        if s.samples_per_s >= 0.95 * best and s.setting["num_workers"] < chosen.setting["num_workers"]
    ]
    assert smaller == [] and "samples/s" in result.reason and chosen.name() in result.reason
    frame = result.to_frame()
    assert list(frame.columns[:2]) == ["num_workers", "batch_size"] and frame["recommended"].sum() == 1
    assert {"samples_per_s", "first_batch_s", "peak_rss_mib", "peak_shared_mib", "error"} <= set(frame.columns)
    assert seen[0][:2] == (0, 6) and seen[-1] == (6, 6, "done") and "left)" in seen[2][2]
    assert "recommended" in repr(result) and "recommended" in result._repr_html_()


def test_a_factory_that_raises_and_workers_that_crash_are_kept_as_errors(nothing_left: None) -> None:
    def factory(num_workers: int) -> DataLoader:
        if num_workers == 1:
            raise ValueError("no such dataset split\nsecond line")
        dataset = CrashesInWorkers() if num_workers == 2 else Sleepy()
        return DataLoader(dataset, batch_size=2, num_workers=num_workers)

    result = sweep_loader(factory, num_workers=[0, 1, 2], batches=5, warmup=1)
    ok, raised, crashed = result.settings
    assert ok.ok and not raised.ok and not crashed.ok
    assert raised.error == "make_loader(num_workers=1) raised ValueError: no such dataset split"
    assert crashed.error.startswith("RuntimeError: DataLoader worker (pid") and "exited unexpectedly" in crashed.error
    assert result.recommended is ok


def test_cancel_stops_the_sweep_and_keeps_what_it_measured(nothing_left: None) -> None:
    cancel = threading.Event()

    def after_first(done: int, total: int, message: str) -> None:
        if done == 1:
            cancel.set()

    with pytest.raises(SweepCancelled) as caught:
        sweep_loader(make, num_workers=[2, 2, 2], batches=200, warmup=1, cancel=cancel, progress=after_first)
    assert isinstance(caught.value, Cancelled)
    kept = caught.value.result
    assert kept.cancelled and len(kept.settings) == 1 and kept.settings[0].ok


def test_workers_a_loader_keeps_alive_are_stopped_and_named() -> None:
    kept: list[object] = []

    def leaky(num_workers: int) -> DataLoader:  # holds its loader and an iterator: workers stay alive
        loader = DataLoader(Sleepy(), batch_size=2, num_workers=num_workers, persistent_workers=True)
        kept.append(loader)
        return loader

    result = sweep_loader(leaky, num_workers=[1], batches=3, warmup=0)
    (setting,) = result.settings
    assert setting.ok and len(setting.stopped_workers) == 1
    kept.clear()


def test_ctrl_c_during_a_sweep_leaves_no_worker(nothing_left: None) -> None:
    """A real SIGINT, sent while the workers of the first setting are busy, reaches the sweep as Ctrl-C does."""
    running = threading.Event()

    def step(batch: torch.Tensor) -> None:
        running.set()
        time.sleep(0.01)

    def press_ctrl_c() -> None:
        running.wait(PROCESS_WAIT_S)
        os.kill(os.getpid(), signal.SIGINT)

    presser = threading.Thread(target=press_ctrl_c)
    presser.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            sweep_loader(make, num_workers=[2, 2], step=step, batches=10**6, time_cap_s=600)
    finally:
        presser.join()


def test_the_recommendation_is_the_smallest_setting_within_five_percent() -> None:
    def ran(workers: int, rate: float, pin: bool = False) -> SweepSetting:
        return SweepSetting({"num_workers": workers, "pin_memory": pin}, rate / 32, rate, 0.1, 10)

    chosen, why = recommend(
        ("num_workers", "pin_memory"), [ran(0, 500.0), ran(2, 960.0), ran(4, 1000.0), ran(2, 990.0, True)]
    )
    assert chosen is not None and chosen.setting == {"num_workers": 2, "pin_memory": False}
    assert why.startswith("num_workers=2, pin_memory=False: 960 samples/s, 96% of the best (num_workers=4")
    chosen, why = recommend(("num_workers",), [ran(0, 500.0), ran(4, 1000.0)])
    assert chosen is not None and chosen.setting["num_workers"] == 4 and "the fastest" in why
    chosen, why = recommend(("num_workers",), [SweepSetting({"num_workers": 0}, error="boom")])
    assert chosen is None and why.startswith("no setting ran (boom)")


@pytest.mark.parametrize(
    ("grid", "message"),
    [({}, "needs a grid"), ({"num_workers": []}, "non-empty list"), ({"num_workers": 2}, "non-empty list")],
)
def test_a_bad_grid_is_refused_before_anything_runs(grid: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        sweep_loader(make, **grid)
    with pytest.raises(TypeError, match="make_loader must be a callable"):
        sweep_loader(3, num_workers=[0])  # type: ignore[arg-type]
