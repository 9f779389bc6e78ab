"""``hdf5``: robomimic-style HDF5 episodes; needs the optional dependency ``h5py``.

The file at ``data.path`` holds a group ``data`` with one group per episode (``demo_0``,
``demo_1``, ...); every dataset inside an episode (nested groups allowed, keys joined with
``/``) is indexed by step. Importing this module raises ``ImportError`` when h5py is missing,
which the example package records, so the inspector shows the "failed to import" shape.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import h5py  # the optional dependency: without it this module cannot be imported
import numpy as np
import torch
from torch.utils.data import Dataset

from inspector.backends import BuildContext, ConfigError, DataBundle, TrainConfig
from inspector.examples.data_backends._pipeline import make_bundle, shard, split_episodes

__verbs__ = ("build", "describe")


def _natural(name: str) -> tuple[Any, ...]:
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name))


def _layout(path: Path) -> tuple[list[str], dict[str, tuple[tuple[int, ...], str]], list[int]]:
    """Episode group names, ``{dataset key: (per-step shape, dtype)}`` and steps per episode."""
    with h5py.File(path, "r") as handle:
        if "data" not in handle:
            raise ValueError(f"{path.name} has no top-level 'data' group (expected data/demo_0, ...).")
        episodes = sorted(handle["data"].keys(), key=_natural)
        if not episodes:
            raise ValueError(f"{path.name}: the 'data' group holds no episodes.")
        specs: dict[str, tuple[tuple[int, ...], str]] = {}
        handle["data"][episodes[0]].visititems(
            lambda key, obj: (
                specs.__setitem__(key, (obj.shape[1:], str(obj.dtype))) if isinstance(obj, h5py.Dataset) else None
            )
        )
        if not specs:
            raise ValueError(f"{path.name}: episode {episodes[0]!r} holds no datasets.")
        lengths = [int(handle["data"][e][next(iter(specs))].shape[0]) for e in episodes]
    return episodes, specs, lengths


class Hdf5Episodes(Dataset):
    """Steps of some episodes of one HDF5 file; the file is opened lazily in each worker process."""

    def __init__(self, path: Path, episodes: list[int], groups: list[str], keys: list[str], lengths: list[int]):
        self.path, self.episodes, self.groups, self.keys = path, episodes, groups, keys
        self.offsets = np.cumsum([0, *lengths]).tolist()
        self._handle: Any = None

    def __len__(self) -> int:
        return int(self.offsets[-1])

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        if not 0 <= index < len(self):
            raise IndexError(f"index {index} out of range for {len(self)} steps")
        if self._handle is None:
            self._handle = h5py.File(self.path, "r")
        position = int(np.searchsorted(self.offsets, index, side="right")) - 1
        step = index - int(self.offsets[position])
        group = self._handle["data"][self.groups[position]]
        item = {key: torch.from_numpy(np.asarray(group[key][step])) for key in self.keys}
        item["episode_index"] = torch.tensor(self.episodes[position])
        item["step_index"] = torch.tensor(step)
        return item

    def __getstate__(self) -> dict[str, Any]:  # h5py handles cannot cross process boundaries
        return {**self.__dict__, "_handle": None}


def _plan(cfg: TrainConfig, ctx: BuildContext) -> tuple[Path, list[str], Any, list[int], list[int], list[int]]:
    if cfg.data.path is None:
        raise ConfigError("The hdf5 backend reads one .hdf5 file: set data.path.", key="data.path")
    path = Path(cfg.data.path)
    episodes, specs, lengths = _layout(path)
    train_eps, val_eps = split_episodes(len(episodes), cfg.data.val_fraction)
    return path, episodes, specs, lengths, shard(train_eps, ctx), shard(val_eps, ctx, required=False)


def build(cfg: TrainConfig, ctx: BuildContext) -> DataBundle:
    """One item per step of every episode group in ``data.path``, split, sharded by rank, batched."""
    path, episodes, specs, lengths, train_eps, val_eps = _plan(cfg, ctx)
    keys = sorted(specs)

    def dataset(eps: list[int]) -> Hdf5Episodes:
        return Hdf5Episodes(path, eps, [episodes[e] for e in eps], keys, [lengths[e] for e in eps])

    return make_bundle(dataset(train_eps), dataset(val_eps), cfg)


def describe(cfg: TrainConfig, ctx: BuildContext | None = None) -> dict[str, Any]:
    """Episode groups, step counts and per-step dataset shapes, read from the file's metadata."""
    path, episodes, specs, lengths, train_eps, val_eps = _plan(cfg, ctx or BuildContext())
    return {
        "backend": "hdf5",
        "file": str(path),
        "episodes": [{"group": g, "steps": n} for g, n in zip(episodes, lengths, strict=True)],
        "datasets": {k: {"shape": list(s), "dtype": d} for k, (s, d) in sorted(specs.items())},
        "train_episodes": train_eps,
        "val_episodes": val_eps,
    }
