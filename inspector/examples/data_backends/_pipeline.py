"""From episode lists to a ``DataBundle``: train/val split, sharding by rank, DataLoaders."""

from __future__ import annotations

import errno
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset

from inspector.backends import BuildContext, ConfigError, DataBundle, TrainConfig


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


def episode_files(cfg: TrainConfig, suffix: str, backend: str, writer: str) -> list[Path]:
    """The ``*suffix`` files under ``data.path``, sorted; a missing or empty directory names ``writer``."""
    if cfg.data.path is None:
        raise ConfigError(f"The {backend} backend reads a directory of {suffix} files: set data.path.", key="data.path")
    directory = Path(cfg.data.path)
    if not directory.is_dir():
        raise FileNotFoundError(
            errno.ENOENT, f"data.path is not a directory of {suffix} files (write one with {writer})", str(directory)
        )
    files = sorted(directory.glob(f"*{suffix}"))
    if not files:
        present = sorted(p.name for p in directory.iterdir())[:5]
        raise FileNotFoundError(errno.ENOENT, f"no {suffix} files in data.path (it holds {present})", str(directory))
    return files


def describe_episodes(
    backend: str,
    cfg: TrainConfig,
    files: Sequence[Path],
    lengths: Sequence[int],
    arrays: Mapping[str, tuple[tuple[int, ...], str]],
    train_eps: Sequence[int],
    val_eps: Sequence[int],
) -> dict[str, Any]:
    """What a directory-of-episodes backend's ``describe`` verb returns (from file headers only)."""
    return {
        "backend": backend,
        "directory": str(Path(str(cfg.data.path))),
        "episodes": [{"file": f.name, "steps": n} for f, n in zip(files, lengths, strict=True)],
        "arrays": {k: {"shape": list(shape[1:]), "dtype": dtype} for k, (shape, dtype) in arrays.items()},
        "train_episodes": list(train_eps),
        "val_episodes": list(val_eps),
    }
