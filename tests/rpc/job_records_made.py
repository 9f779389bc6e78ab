"""Job records built by hand, as ranks would send them, for tests of the comparisons (no processes needed)."""

from __future__ import annotations

from typing import Any

SHAPES = "q(2, 4, 64, 32) k(2, 4, 64, 32) v(2, 4, 64, 32)"


def group(backend: str = "flash_attention", count: int = 5, **fields: Any) -> dict[str, Any]:
    return {
        "backend": backend,
        "count": count,
        "answered_by": "pytorch",
        "dtype": "float32",
        "shapes": SHAPES,
        "causal": True,
        "dropout_p": 0.0,
        "mask": "",
        "grad": False,
        "enabled": "flash, math",
        "module": "",
        "device": "cpu",
        "capability": "",
        **fields,
    }


def sdpa(*groups: dict[str, Any], folded: tuple[int, int] = (0, 0)) -> dict[str, Any]:
    groups = groups or (group(),)
    return {
        "kind": "torch_sdpa.watch",
        "version": 2,
        "seen": sum(g["count"] for g in groups) + folded[1],
        "groups": list(groups),
        "folded_groups": folded[0],
        "folded_calls": folded[1],
    }


def loader(batch_s: float = 0.01, wait_s: float | None = 0.001, **fields: Any) -> dict[str, Any]:
    return {
        "kind": "loader.profile",
        "version": 1,
        "label": "DataLoader",
        "batches": 10,
        "first_batch_s": 0.1,
        "batch_s_median": batch_s,
        "batch_s_min": batch_s,
        "batch_s_max": batch_s,
        "wait_s_median": wait_s,
        "data_wait_share": None if wait_s is None else wait_s / batch_s,
        "batches_per_s": 1 / batch_s,
        "mb_per_s": 1.0,
        "verdict": None if wait_s is None else "compute-bound",
        "busy_machine": False,
        **fields,
    }


def environment(**values: Any) -> dict[str, Any]:
    base = {
        "host": "node0",
        "pid": 100,
        "local rank": "0",
        "CUDA_VISIBLE_DEVICES": None,
        "torch": "2.13.0",
        "GPU": None,
        "sdpa flash enabled": True,
        "INSPECTOR_OPS": None,
    }
    return {"kind": "environment", "version": 1, "values": {**base, **values}}


def by_kind(*records: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {record["kind"]: record for record in records}
