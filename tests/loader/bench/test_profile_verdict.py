"""The verdict on a real loop: each step's wait for data and its compute, timed apart, on real DataLoaders.

The constructed loops make one side dominate by a factor of about 20 (a dataset that sleeps 20 ms per
item against a 1 ms step, and the reverse), so the verdict holds on a busy machine: sleeping costs
no CPU, and a busy core stretches both sides alike.
"""

from __future__ import annotations

import os
import time
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from loader_probes import shm_entries
from torch.utils.data import DataLoader, Dataset, IterableDataset

from inspector.loader import LoopProfiler, profile_loader
from inspector.loader.bench.verdict import COMPUTE_BOUND, LOADER_BOUND, verdict_of, wait_share

ITEM_S = 0.020
STEP_S = 0.020


class Sleepy(Dataset):
    """Items that take ``seconds`` each to make, numbered so a test can check what it got."""

    def __init__(self, seconds: float, size: int = 4096) -> None:
        self.seconds, self.size = seconds, size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, i: int) -> torch.Tensor:
        if self.seconds:
            time.sleep(self.seconds)
        return torch.full((8,), float(i))


class SleepyBatches(Sleepy):
    """The same, made a batch at a time through ``__getitems__``."""

    def __getitems__(self, indices: list[int]) -> list[torch.Tensor]:
        time.sleep(self.seconds * len(indices))
        return [torch.full((8,), float(i)) for i in indices]


class SleepyStream(IterableDataset):
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __iter__(self):  # type: ignore[no-untyped-def]
        for i in range(4096):
            time.sleep(self.seconds)
            yield torch.full((8,), float(i))


def quick_step(batch: Any) -> None:
    time.sleep(0.001)


def slow_step(batch: Any) -> None:
    time.sleep(STEP_S)


def torch_shm() -> set[str]:
    """torch's /dev/shm entries (``torch_<pid>_...``); other processes on a shared machine make ``sem.mp-*`` ones."""
    return {name for name in shm_entries() if name.startswith("torch_")}


@pytest.fixture
def nothing_left(new_processes):  # type: ignore[no-untyped-def]
    """No DataLoader worker and no torch /dev/shm entry outlives the test."""
    before = torch_shm()
    yield
    from waiting import wait_until

    wait_until(lambda: not new_processes(), what="DataLoader workers to exit")
    assert torch_shm() - before == set()


@pytest.mark.parametrize("workers", [0, 2])
def test_a_dataset_slower_than_the_step_is_loader_bound(workers: int, nothing_left: None) -> None:
    loader = DataLoader(Sleepy(ITEM_S), batch_size=1, num_workers=workers)
    profile = profile_loader(loader, step=quick_step, batches=20, warmup=2)
    share = profile.data_wait_share
    assert profile.verdict == "loader-bound" and share is not None and share.value >= LOADER_BOUND
    assert share.min <= share.value <= share.max and share.spans == 5
    free, step = profile.step_if_data_free, profile.step_time
    assert free is not None and step is not None and free.median < step.median
    text = profile.verdict_text()
    assert text.startswith("Loader-bound: ") and "With data free, a step would take" in text
    assert "your dataset's __getitem__" in text  # where the batch's time goes
    assert ("num_workers=2 or more" in text) == (workers == 0)
    assert "loader-bound (" in repr(profile) and "verdict" in profile._repr_html_()
    assert profile.summary()["verdict"] == "loader-bound"
    frame = profile.to_frame()
    assert {"wait_s", "compute_s"} <= set(frame.columns) and (frame["wait_s"] + frame["compute_s"]).sum() == (
        pytest.approx(profile.seconds)
    )


@pytest.mark.parametrize("workers", [0, 2])
def test_a_step_slower_than_the_dataset_is_compute_bound(workers: int, nothing_left: None) -> None:
    loader = DataLoader(Sleepy(0.001), batch_size=1, num_workers=workers)  # 1 ms per item, 20 ms per step
    profile = profile_loader(loader, step=slow_step, batches=20, warmup=2)
    share = profile.data_wait_share
    assert share is not None and share.value <= COMPUTE_BOUND, (share, os.getloadavg())
    assert profile.verdict == "compute-bound"
    assert profile.verdict_text().startswith("Compute-bound: ")


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("kind", ["getitem", "getitems", "iterable"])
def test_the_stage_split_adds_up_to_the_measured_time(workers: int, kind: str, nothing_left: None) -> None:
    dataset = {
        "getitem": Sleepy(ITEM_S / 4),
        "getitems": SleepyBatches(ITEM_S / 4),
        "iterable": SleepyStream(ITEM_S / 4),
    }[kind]

    def collate(items: list[torch.Tensor]) -> torch.Tensor:
        time.sleep(0.005)
        return torch.stack(items)

    loader = DataLoader(dataset, batch_size=4, num_workers=workers, collate_fn=collate)
    profile = profile_loader(loader, step=quick_step, batches=12, warmup=2)
    split = profile.stages
    assert split is not None and split.batches == 12 and split.workers == workers
    assert split.adds_up, split  # the stages' medians sum to within the spread of what was measured
    assert split.unexplained_share < 0.1, split
    assert split.stages["dataset"].median >= 4 * ITEM_S / 4 and split.stages["collate"].median >= 0.005
    assert ("transfer" in split.stages) == (workers > 0)
    assert split.largest() == "dataset"
    if workers:
        assert split.worker_busy_share is not None and 0 < split.worker_busy_share <= 1


def test_the_loop_profiler_watches_your_own_loop_and_gives_the_same_batches(nothing_left: None) -> None:
    loader = DataLoader(Sleepy(ITEM_S), batch_size=2, num_workers=2)
    profiler = LoopProfiler(warmup=1)
    seen = []
    for batch in profiler.iterate(loader):
        seen.append(batch)
        quick_step(batch)
        if len(seen) == 12:
            break  # leaving the loop early closes it: the last step is timed up to here
    assert torch.equal(torch.cat(seen), torch.cat(list(loader))[:24])  # unchanged, in order
    profile = profiler.result()
    assert profiler.steps == profile.batches == 12 - 2 and profile.verdict == "loader-bound"
    assert profile.stages is not None and profile.stages.workers == 2


def test_the_loop_profiler_is_a_context_manager_and_spans_epochs(nothing_left: None) -> None:
    loader = DataLoader(Sleepy(0.0, size=8), batch_size=2, num_workers=1, persistent_workers=True)
    with LoopProfiler(warmup=0) as profiler:
        for _epoch in range(3):
            for _batch in profiler.iterate(loader):
                time.sleep(3 * STEP_S)  # a new epoch's first batch waits for the workers: on a busy machine, tens of ms
    profile = profiler.result()
    assert profiler.seen == 12 and profile.batches == 11 and profile.exhausted
    assert profile.verdict == "compute-bound"


def test_a_loop_over_any_iterable_needs_no_dataloader() -> None:
    def batches():  # type: ignore[no-untyped-def]
        for i in range(30):
            time.sleep(0.005)
            yield [i]

    profiler = LoopProfiler(warmup=2, stages=True)
    for _batch in profiler.iterate(batches()):
        pass
    profile = profiler.result()
    assert profile.stages is None and profile.batches == 27 and profile.verdict == "loader-bound"


def test_the_profiler_keeps_only_its_last_steps() -> None:
    profiler = LoopProfiler(warmup=0, keep=5)
    for _ in profiler.iterate(range(100)):
        pass
    assert profiler.seen == 100 and profiler.steps == 5


@pytest.mark.parametrize(("kwargs", "message"), [({"warmup": -1}, "warmup"), ({"keep": 0}, "keep")])
def test_bad_profiler_arguments_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LoopProfiler(**kwargs)
    with pytest.raises(TypeError, match="needs an iterable"):
        LoopProfiler().iterate(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="step must be a callable"):
        profile_loader(range(5), step=3)  # type: ignore[arg-type]


shares = st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=60)


@given(
    st.lists(st.tuples(st.floats(0, 10, allow_nan=False), st.floats(0, 10, allow_nan=False)), min_size=1, max_size=80)
)
def test_the_wait_share_lies_in_its_spread_and_picks_one_verdict(steps: list[tuple[float, float]]) -> None:
    waits, computes = [w for w, _ in steps], [c for _, c in steps]
    share = wait_share(waits, computes)
    assert 0 <= share.min <= share.value <= share.max <= 1 or sum(waits) + sum(computes) == 0
    assert 1 <= share.spans <= 5
    verdict = verdict_of(share.value)
    assert verdict == (
        "loader-bound"
        if share.value >= LOADER_BOUND
        else "compute-bound"
        if share.value <= COMPUTE_BOUND
        else "balanced"
    )


def test_the_verdict_thresholds_are_a_third_and_a_sixth() -> None:
    assert [verdict_of(x) for x in (0.0, 1 / 6, 0.2, 1 / 3, 0.9)] == [
        "compute-bound",
        "compute-bound",
        "balanced",
        "loader-bound",
        "loader-bound",
    ]
    with pytest.raises(ValueError):
        wait_share([1.0], [])
    assert os.getpid()  # the module imports cleanly under every start method
