"""``storage``: a directory of storage files, one episode each, read through the shared-memory loader.

The loader is imported when this backend is used, not when it is registered, so registering the
demo backends (opening the Inspector, say) loads none of it.

Each file holds ``{array_name: array[steps, ...]}`` written with ``inspector.loader`` (for example
``FileStorage(path).save(episode)``, or :func:`write_example_storage`). Iterating a loader has a
``FileStorageLoader`` read the next ``prefetch`` episodes in worker processes, straight into
shared memory, while the current one is consumed; the workers stop when the iteration ends or
is abandoned. Items are steps, as in ``npz``. The files are never modified or deleted (the
loader runs with ``ttl=None``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset

from inspector.backends import BuildContext, ConfigError, DataBundle, TrainConfig
from inspector.examples.data_backends._options import positive_int, read_options
from inspector.examples.data_backends._pipeline import describe_episodes, episode_files, shard, split_episodes

__verbs__ = ("build", "describe", "load_episode_indices")

SUFFIX = ".istore"
OPTIONS: dict[str, Any] = {"workers": 2, "prefetch": 2}


def _arrays(path: Path) -> dict[str, tuple[tuple[int, ...], str]]:
    """``{name: (shape, dtype)}`` of a file's top-level arrays, from its header alone."""
    from inspector.loader import describe_storage

    specs = {}
    for leaf in describe_storage(path).leaves:
        if len(leaf.key_path) == 1 and isinstance(leaf.key_path[0], str) and leaf.shape:
            specs[leaf.key_path[0]] = (leaf.shape, leaf.dtype)
    return specs


def _plan(cfg: TrainConfig, ctx: BuildContext) -> tuple[list[Path], list[str], list[int], list[int], list[int]]:
    options = read_options(cfg, OPTIONS, "storage")
    positive_int(options, "workers")
    positive_int(options, "prefetch")
    if cfg.data.num_workers:
        raise ConfigError(
            "The storage backend reads with the shared-memory loader's own worker processes "
            "(data.options.workers); set data.num_workers to 0.",
            key="data.num_workers",
            value=cfg.data.num_workers,
        )
    files = episode_files(cfg, SUFFIX, "storage", "write_example_storage")
    first = _arrays(files[0])
    names = sorted(first)
    lengths = []
    for path in files:
        specs = _arrays(path)
        steps = {name: specs[name][0][0] if name in specs else None for name in names}
        if len(set(steps.values())) != 1 or None in steps.values():
            raise ValueError(
                f"{path.name}: every episode must hold the same arrays, sharing their first (step) dimension.\n"
                f"steps_per_array = {steps}"
            )
        lengths.append(next(iter(steps.values())) or 0)
    train_eps, val_eps = split_episodes(len(files), cfg.data.val_fraction)
    return files, names, lengths, shard(train_eps, ctx), shard(val_eps, ctx, required=False)


class StorageEpisodes(IterableDataset):
    """Steps of the given episodes, read ahead through a ``FileStorageLoader`` while iterating."""

    def __init__(
        self,
        files: Sequence[Path],
        episodes: Sequence[int],
        lengths: Sequence[int],
        *,
        workers: int,
        prefetch: int,
        shuffle: bool,
        seed: int,
    ) -> None:
        self.files = list(files)
        self.episodes = list(episodes)
        self.lengths = list(lengths)
        self.workers, self.prefetch, self.shuffle, self.seed = workers, prefetch, shuffle, seed
        self.epoch = 0

    def __len__(self) -> int:
        return sum(self.lengths[e] for e in self.episodes)

    def set_epoch(self, epoch: int) -> None:
        """Reshuffle the episode order for ``epoch`` (when shuffling)."""
        self.epoch = epoch

    def order(self) -> list[int]:
        if not self.shuffle:
            return list(self.episodes)
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        return [self.episodes[i] for i in torch.randperm(len(self.episodes), generator=generator).tolist()]

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        if not self.episodes:
            return
        from inspector.loader import FileStorage, FileStorageLoader

        directory = self.files[0].parent
        order = self.order()
        with FileStorageLoader(directory, ttl=None, worker_num=self.workers) as loader:
            storages = (FileStorage(self.files[episode]) for episode in order)
            for episode, arrays in zip(order, loader.stream(storages, prefetch=self.prefetch), strict=True):
                for step in range(self.lengths[episode]):
                    # np.array copies the step out of shared memory, so the lease ends with the episode.
                    item = {name: torch.from_numpy(np.array(values[step])) for name, values in arrays.items()}
                    item["episode_index"] = torch.tensor(episode)
                    item["step_index"] = torch.tensor(step)
                    yield item
                del arrays


def build(cfg: TrainConfig, ctx: BuildContext) -> DataBundle:
    """Steps of every episode under ``data.path``, split, sharded by rank, batched, read ahead in workers.

    Options: ``workers`` (loader processes, default 2) and ``prefetch`` (episodes read ahead, default 2).
    """
    files, _names, lengths, train_eps, val_eps = _plan(cfg, ctx)
    options = read_options(cfg, OPTIONS, "storage")

    def episodes(chosen: list[int], shuffle: bool) -> StorageEpisodes:
        return StorageEpisodes(
            files,
            chosen,
            lengths,
            workers=options["workers"],
            prefetch=options["prefetch"],
            shuffle=shuffle,
            seed=cfg.seed,
        )

    train = episodes(train_eps, cfg.data.shuffle)
    train_loader = DataLoader(train, batch_size=cfg.data.batch_size)
    val = episodes(val_eps, False)
    val_loader = DataLoader(val, batch_size=cfg.data.batch_size) if len(val) else None
    return DataBundle(
        dataset=train,
        train_loader=train_loader,
        val_loader=val_loader,
        train_iters=len(train_loader),
        val_iters=len(val_loader) if val_loader is not None else 0,
        set_epoch=train.set_epoch,
    )


def describe(cfg: TrainConfig, ctx: BuildContext | None = None) -> dict[str, Any]:
    """Files, step counts and array shapes/dtypes under ``data.path``, read from the file headers only."""
    files, names, lengths, train_eps, val_eps = _plan(cfg, ctx or BuildContext())
    specs = _arrays(files[0])
    return describe_episodes("storage", cfg, files, lengths, {k: specs[k] for k in names}, train_eps, val_eps)


def load_episode_indices(cfg: TrainConfig, ctx: BuildContext | None = None) -> list[int]:
    """Indices (into the sorted file list) of the training episodes this rank reads."""
    return _plan(cfg, ctx or BuildContext())[3]


def write_example_storage(directory: str | Path, *, episodes: int = 4, steps: int = 12, seed: int = 0) -> list[Path]:
    """Write ``episodes`` small storage files (observation, action, reward) for demos and tests."""
    from inspector.loader import FileStorage

    rng = np.random.default_rng(seed)
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for e in range(episodes):
        path = target / f"episode_{e:03d}{SUFFIX}"
        FileStorage(path).save(
            {
                "observation": rng.standard_normal((steps, 4)).cumsum(0).astype(np.float32),
                "action": rng.uniform(-1, 1, (steps, 2)).astype(np.float32),
                "reward": rng.random(steps).astype(np.float32),
            }
        )
        written.append(path)
    return written
