"""Delivery to a CUDA device (skipped without a GPU; see tests/conftest.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from loader_payloads import assert_same, payloads
from waiting import PROCESS_WAIT_S

from inspector.loader import CudaUnavailableError, FileStorageLoader

pytestmark = pytest.mark.cuda


def to_host(obj: object) -> object:
    if isinstance(obj, torch.Tensor):
        assert obj.is_cuda
        return obj.detach().cpu().requires_grad_(obj.requires_grad) if obj.requires_grad else obj.cpu()
    if isinstance(obj, dict):
        return {k: to_host(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [to_host(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(to_host(v) for v in obj)
    return obj


def test_tensors_arrive_on_the_gpu_bit_for_bit_and_numpy_stays_in_host_memory(loader: FileStorageLoader) -> None:
    obj = {
        "obs": np.arange(10, dtype=np.float32),
        "t": torch.randn(3, 4),
        "bf": torch.randn(5).to(torch.bfloat16),
        "mask": torch.tensor([True, False]),
        "grad": torch.randn(2).requires_grad_(),
        "steps": [torch.full((4, 84, 84), float(i)) for i in range(3)],
        "reward": 1.5,
    }
    loader.clear_timings()
    got = loader.load(loader.save(obj), device="cuda").result(PROCESS_WAIT_S)
    assert isinstance(got["obs"], np.ndarray)
    assert all(t.device.type == "cuda" for t in (got["t"], got["bf"], got["mask"], got["grad"], *got["steps"]))
    assert got["grad"].requires_grad and got["grad"].is_leaf
    assert_same(obj, to_host(got))
    (timing,) = loader.timings()
    assert timing.h2d > 0 and timing.device.startswith("cuda")


def test_staging_buffers_are_reused_not_pinned_per_load(loader: FileStorageLoader) -> None:
    storage = loader.save({"x": torch.ones(1 << 20)})
    for _ in range(12):
        loader.load(storage, device="cuda").result(PROCESS_WAIT_S)
    staging = loader._core.pool()._staging
    assert staging.held() <= 4


def test_an_explicit_device_index_works_and_a_missing_one_is_refused(loader: FileStorageLoader) -> None:
    storage = loader.save({"x": torch.arange(4)})
    assert loader.load(storage, device="cuda:0").result(PROCESS_WAIT_S)["x"].device == torch.device("cuda", 0)
    with pytest.raises(CudaUnavailableError, match="CUDA device"):
        loader.load(storage, device=f"cuda:{torch.cuda.device_count()}")


def test_payloads_without_tensors_need_no_device_copy(loader: FileStorageLoader) -> None:
    loader.clear_timings()
    got = loader.load(loader.save({"a": np.ones(3)}), device="cuda").result(PROCESS_WAIT_S)
    assert isinstance(got["a"], np.ndarray) and loader.timings()[-1].h2d == 0


def test_tensors_saved_from_the_gpu_come_back_where_asked(loader: FileStorageLoader) -> None:
    source = torch.randn(8, device="cuda")
    storage = loader.save({"x": source})
    assert torch.equal(loader.load(storage, device="cuda").result(PROCESS_WAIT_S)["x"], source)
    assert torch.equal(loader.load(storage).result(PROCESS_WAIT_S)["x"], source.cpu())


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(obj=payloads)
def test_random_payloads_round_trip_through_the_gpu(obj: object, loader: FileStorageLoader) -> None:
    assert_same(obj, to_host(loader.load(loader.save(obj), device="cuda").result(PROCESS_WAIT_S)))


def test_bench_measures_device_delivery_and_the_h2d_ceiling() -> None:
    from inspector.loader import bench

    rows = bench.run(sizes_mb=(4,), workers=(1,), device="cuda", repeats=1, methods=("ours", "sync", "memcpy"))
    methods = {r.method: r for r in rows}
    assert set(methods) == {"ours", "sync", "memcpy", "h2d"}
    assert methods["ours"].device.startswith("cuda") and methods["ours"].corrupt == 0
    assert methods["ours"].h2d_ms is not None and methods["ours"].h2d_ms > 0
