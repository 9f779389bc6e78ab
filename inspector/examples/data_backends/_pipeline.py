"""From episode lists to a ``DataBundle``: train/val split, sharding by rank, DataLoaders."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch.utils.data import DataLoader, Dataset

from inspector.backends import BuildContext, DataBundle, TrainConfig


def split_episodes(count: int, val_fraction: float) -> tuple[list[int], list[int]]:
    """The last ``val_fraction`` of episodes (at least one when the fraction is positive) go to validation."""
    n_val = int(count * val_fraction)
    if val_fraction > 0 and n_val == 0 and count > 1:
        n_val = 1
    return list(range(count - n_val)), list(range(count - n_val, count))


def shard(episodes: Sequence[int], ctx: BuildContext, *, required: bool = True) -> list[int]:
    """This rank's share of ``episodes`` (round robin).

    An empty share of training episodes is an error naming the fix; validation may be empty.
    """
    mine = list(episodes[ctx.rank :: ctx.world_size])
    if required and not mine:
        raise ValueError(
            f"Rank {ctx.rank} of {ctx.world_size} gets no training episodes: {len(episodes)} cannot be "
            "split that many ways. Add episodes, lower val_fraction or lower world_size."
        )
    return mine


def make_bundle(train: Dataset, val: Dataset | None, cfg: TrainConfig) -> DataBundle:
    """DataLoaders over ``train``/``val`` with ``set_epoch`` reseeding the train shuffle."""
    generator = torch.Generator()
    generator.manual_seed(cfg.seed)

    def set_epoch(epoch: int) -> None:
        generator.manual_seed(cfg.seed + epoch)

    def loader(dataset: Dataset, shuffle: bool) -> DataLoader:
        return DataLoader(
            dataset,
            batch_size=cfg.data.batch_size,
            shuffle=shuffle,
            num_workers=cfg.data.num_workers,
            generator=generator if shuffle else None,
        )

    train_loader = loader(train, cfg.data.shuffle)
    val_loader = loader(val, False) if val is not None and len(val) > 0 else None  # type: ignore[arg-type]
    return DataBundle(
        dataset=train,
        train_loader=train_loader,
        val_loader=val_loader,
        train_iters=len(train_loader),
        val_iters=len(val_loader) if val_loader is not None else 0,
        set_epoch=set_epoch,
    )
