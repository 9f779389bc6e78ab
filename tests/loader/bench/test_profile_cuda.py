"""The profiler's CUDA stages: pinning, host to device, and GPU work counted as compute (skipped without a GPU)."""

from __future__ import annotations

import time

import pytest
import torch
from torch.utils.data import DataLoader, Dataset

from inspector.loader import LoopProfiler, profile_loader

pytestmark = pytest.mark.cuda


class Items(Dataset):
    def __len__(self) -> int:
        return 4096

    def __getitem__(self, i: int) -> torch.Tensor:
        time.sleep(0.002)
        return torch.full((256, 256), float(i))


@pytest.mark.parametrize("workers", [0, 2])
def test_pinning_and_the_copy_to_the_gpu_are_stages_of_their_own(workers: int) -> None:
    loader = DataLoader(Items(), batch_size=8, num_workers=workers, pin_memory=True)
    profile = profile_loader(loader, step=lambda batch: batch.to("cuda", non_blocking=True), batches=10)
    split = profile.stages
    assert split is not None and split.stages["pin"].median > 0 and split.adds_up, split
    assert profile.h2d is not None and profile.h2d.nbytes == 8 * 256 * 256 * 4
    assert "h2d" in split.stages and split.stages["h2d"].median == profile.h2d.pinned_s.median


def test_queued_gpu_work_counts_as_the_steps_compute_not_as_the_next_wait() -> None:
    torch.cuda.init()
    loader = DataLoader(Items(), batch_size=1, num_workers=2)

    def gpu_step(batch: torch.Tensor) -> None:
        batch.to("cuda")
        torch.cuda._sleep(100_000_000)  # tens of milliseconds of GPU time, queued and returned at once

    profiler = LoopProfiler(warmup=2)
    for batch in profiler.iterate(loader):
        gpu_step(batch)
        if profiler.seen == 20:
            break
    profile = profiler.result()
    assert profile.verdict == "compute-bound", profile.data_wait_share
    assert profile.step_if_data_free is not None and profile.step_if_data_free.median > 0.01
