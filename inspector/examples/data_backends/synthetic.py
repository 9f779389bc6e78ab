"""``synthetic``: trajectory-like batches generated from a seed, with no files and no downloads.

Each episode is a smooth random walk per field; an item is a window of ``horizon`` steps, so
a batch is a dict of tensors shaped ``(batch, horizon, *field_shape)``. Its verbs are found
the default way (public functions defined here): ``build``, ``describe`` and ``stats``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch.utils.data import Dataset

from inspector.backends import BuildContext, ConfigError, DataBundle, TrainConfig
from inspector.examples.data_backends._options import positive_int, read_options, shape_map
from inspector.examples.data_backends._pipeline import make_bundle, shard, split_episodes

OPTIONS: dict[str, Any] = {
    "episodes": 8,
    "episode_length": 32,
    "horizon": 4,
    "fields": {"observation": [4], "action": [2], "reward": []},
}


class SyntheticTrajectories(Dataset):
    """Windows of ``horizon`` steps from seeded random-walk episodes; item ``i`` is always the same."""

    def __init__(
        self,
        episodes: Sequence[int],
        *,
        episode_length: int,
        horizon: int,
        fields: Mapping[str, tuple[int, ...]],
        seed: int,
    ) -> None:
        self.episodes = list(episodes)
        self.episode_length = episode_length
        self.horizon = horizon
        self.fields = dict(fields)
        self.seed = seed
        self.windows = episode_length - horizon + 1

    def __len__(self) -> int:
        return len(self.episodes) * self.windows

    def episode(self, episode: int) -> dict[str, torch.Tensor]:
        """Every field of one whole episode, shaped ``(episode_length, *shape)``."""
        generator = torch.Generator().manual_seed(self.seed * 1_000_003 + episode)
        return {
            name: torch.randn((self.episode_length, *shape), generator=generator).cumsum(0) * 0.1
            for name, shape in self.fields.items()
        }

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        if not 0 <= index < len(self):
            raise IndexError(f"index {index} out of range for {len(self)} windows")
        episode = self.episodes[index // self.windows]
        start = index % self.windows
        item = {name: walk[start : start + self.horizon] for name, walk in self.episode(episode).items()}
        item["episode_index"] = torch.tensor(episode)
        item["step_index"] = torch.tensor(start)
        return item


def _datasets(cfg: TrainConfig, ctx: BuildContext) -> tuple[SyntheticTrajectories, SyntheticTrajectories]:
    options = read_options(cfg, OPTIONS, "synthetic")
    episodes = positive_int(options, "episodes")
    length = positive_int(options, "episode_length")
    horizon = positive_int(options, "horizon")
    if horizon > length:
        raise ConfigError(
            f"data.options.horizon ({horizon}) must not exceed data.options.episode_length ({length}).",
            key="data.options.horizon",
            value=horizon,
        )
    fields = shape_map(options, "fields")
    train_eps, val_eps = split_episodes(episodes, cfg.data.val_fraction)

    def make(eps: list[int]) -> SyntheticTrajectories:
        return SyntheticTrajectories(eps, episode_length=length, horizon=horizon, fields=fields, seed=cfg.seed)

    return make(shard(train_eps, ctx)), make(shard(val_eps, ctx, required=False))


def build(cfg: TrainConfig, ctx: BuildContext) -> DataBundle:
    """Seeded random-walk episodes, split into train/validation, sharded by rank, batched.

    Options (``data.options``): ``episodes``, ``episode_length``, ``horizon`` and ``fields``
    (field name -> per-step shape).
    """
    train, val = _datasets(cfg, ctx)
    return make_bundle(train, val, cfg)


def describe(cfg: TrainConfig, ctx: BuildContext | None = None) -> dict[str, Any]:
    """What ``build`` would produce for this rank, without building loaders."""
    train, val = _datasets(cfg, ctx or BuildContext())
    return {
        "backend": "synthetic",
        "train_episodes": train.episodes,
        "val_episodes": val.episodes,
        "items": {"train": len(train), "val": len(val)},
        "item_shapes": {name: [train.horizon, *shape] for name, shape in train.fields.items()},
    }


def stats(cfg: TrainConfig, ctx: BuildContext | None = None) -> dict[str, dict[str, float]]:
    """Mean and standard deviation of every field over this rank's training episodes."""
    train, _ = _datasets(cfg, ctx or BuildContext())
    result: dict[str, dict[str, float]] = {}
    for name in train.fields:
        values = torch.cat([train.episode(e)[name].reshape(-1) for e in train.episodes])
        result[name] = {"mean": float(values.mean()), "std": float(values.std(correction=0))}
    return result
