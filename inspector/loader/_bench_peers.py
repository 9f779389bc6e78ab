"""The baselines ``bench`` runs against, and the payload layouts it moves (top-level, so spawn can import them)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from inspector.loader._storage import FileStorage

STEP_SHAPE = (4, 84, 84)  # float32: 112,896 bytes, the ~100 KiB leaf of an Atari-style step
_STEP_BYTES = 2 * 4 * math.prod(STEP_SHAPE) + 4 + 8
LAYOUTS = ("steps", "columnar")


def payload(layout: str, size_mb: float, marker: float, tensors: bool = False) -> tuple[Any, int, int]:
    """(object, array bytes, array leaves) of about ``size_mb`` MiB; every leaf carries ``marker``."""
    count = max(1, round(size_mb * 2**20 / _STEP_BYTES))
    if layout == "steps":
        obj: Any = [
            {
                "obs": np.full(STEP_SHAPE, marker, np.float32),
                "next_obs": np.full(STEP_SHAPE, marker, np.float32),
                "reward": np.array([marker], np.float32),
                "action": np.array([i], np.int64),
                "done": i == count - 1,
            }
            for i in range(count)
        ]
        leaves = 4 * count
    elif layout == "columnar":
        obj = {
            "obs": np.full((count, *STEP_SHAPE), marker, np.float32),
            "next_obs": np.full((count, *STEP_SHAPE), marker, np.float32),
            "reward": np.full((count,), marker, np.float32),
            "action": np.arange(count, dtype=np.int64),
        }
        leaves = 4
    else:
        raise ValueError(f"Unknown layout {layout!r}. Known: {list(LAYOUTS)}")
    if tensors:
        obj = _to_tensors(obj)
    return obj, count * _STEP_BYTES, leaves


def _to_tensors(obj: Any) -> Any:
    import torch

    if isinstance(obj, np.ndarray):
        return torch.from_numpy(obj)
    if isinstance(obj, dict):
        return {k: _to_tensors(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_to_tensors(v) for v in obj]
    return obj


def markers(obj: Any) -> set[float]:
    """The marker values found at the first, middle and last leaves (one value when intact)."""
    if isinstance(obj, dict):
        probes = [obj["obs"], obj["next_obs"], obj["reward"]]
        return {float(p.reshape(-1)[i]) for p in probes for i in (0, -1)}
    middle = obj[len(obj) // 2]
    found = {float(step["reward"][0]) for step in (obj[0], middle, obj[-1])}
    return found | {float(obj[-1]["obs"].reshape(-1)[-1]), float(obj[0]["next_obs"].reshape(-1)[0])}


def queue_worker(paths: list[str], tasks: Any, results: Any) -> None:
    """The ``multiprocessing.Queue`` baseline: load in a worker, pickle the arrays back through a pipe."""
    while (index := tasks.get()) is not None:
        results.put(FileStorage(paths[index]).load())


class FileDataset:
    """The ``torch DataLoader`` baseline's dataset: item ``i`` is file ``i mod len(paths)``."""

    def __init__(self, paths: list[str], length: int) -> None:
        self.paths = paths
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> Any:
        return FileStorage(self.paths[index % len(self.paths)]).load()
