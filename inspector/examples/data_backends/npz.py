"""``npz``: a directory of ``.npz`` files, one episode per file, every array indexed by step.

Item ``i`` is one step: ``{array_name: tensor of array[step], "episode_index", "step_index"}``.
Array shapes are read from the ``.npy`` headers inside each archive, so ``describe`` and the
checks in ``build`` load no data. This module declares its verbs with ``__verbs__``, so the
public helper :func:`write_example_episodes` is not mistaken for one.
"""

from __future__ import annotations

import bisect
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from inspector.backends import BuildContext, ConfigError, DataBundle, TrainConfig
from inspector.examples.data_backends._options import read_options
from inspector.examples.data_backends._pipeline import (
    describe_episodes,
    episode_files,
    make_bundle,
    shard,
    split_episodes,
)

__verbs__ = ("build", "describe", "load_episode_indices")

OPTIONS: dict[str, Any] = {"keys": None}

ArraySpec = tuple[tuple[int, ...], str]


def _array_specs(path: Path) -> dict[str, ArraySpec]:
    """``{name: (shape, dtype)}`` from the archive's ``.npy`` headers, without reading the data."""
    readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
    specs: dict[str, ArraySpec] = {}
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            if not info.filename.endswith(".npy"):
                continue
            with archive.open(info) as handle:
                version = np.lib.format.read_magic(handle)
                read = readers.get(version)
                if read is None:  # a newer header format: read the array itself
                    array = np.load(handle, allow_pickle=False)
                    shape, dtype = array.shape, array.dtype
                else:
                    shape, _fortran, dtype = read(handle)
            specs[info.filename[: -len(".npy")]] = (tuple(shape), str(dtype))
    return specs


def _checked_specs(files: Sequence[Path], keys: Sequence[str] | None) -> tuple[list[str], list[int]]:
    """The array names to read and each file's step count; inconsistent files are a ValueError."""
    first = _array_specs(files[0])
    names = sorted(first) if keys is None else list(keys)
    missing = [k for k in names if k not in first]
    if missing:
        raise ConfigError(f"{files[0].name} has no array {missing[0]!r}.", key="data.options.keys", known=sorted(first))
    lengths = []
    for path in files:
        specs = _array_specs(path)
        steps = {name: specs[name][0][0] if name in specs and specs[name][0] else None for name in names}
        if len(set(steps.values())) != 1 or None in steps.values():
            raise ValueError(
                f"{path.name}: every array must exist and share its first (step) dimension.\nsteps_per_array = {steps}"
            )
        lengths.append(next(iter(steps.values())) or 0)
    return names, lengths


class NpzEpisodes(Dataset):
    """Steps of the episodes in ``files`` (only ``episodes`` of them); keeps one episode in memory."""

    def __init__(self, files: Sequence[Path], episodes: Sequence[int], keys: Sequence[str], lengths: Sequence[int]):
        self.files = [files[e] for e in episodes]
        self.episodes = list(episodes)
        self.keys = list(keys)
        self.offsets = [0]
        for e in episodes:
            self.offsets.append(self.offsets[-1] + lengths[e])
        self._cached: tuple[int, dict[str, np.ndarray]] | None = None

    def __len__(self) -> int:
        return self.offsets[-1]

    def _arrays(self, position: int) -> Mapping[str, np.ndarray]:
        if self._cached is None or self._cached[0] != position:
            with np.load(self.files[position], allow_pickle=False) as archive:
                self._cached = (position, {k: archive[k] for k in self.keys})
        return self._cached[1]

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        if not 0 <= index < len(self):
            raise IndexError(f"index {index} out of range for {len(self)} steps")
        position = bisect.bisect_right(self.offsets, index) - 1
        step = index - self.offsets[position]
        item = {k: torch.from_numpy(np.array(a[step])) for k, a in self._arrays(position).items()}
        item["episode_index"] = torch.tensor(self.episodes[position])
        item["step_index"] = torch.tensor(step)
        return item


def _plan(cfg: TrainConfig, ctx: BuildContext) -> tuple[list[Path], list[str], list[int], list[int], list[int]]:
    options = read_options(cfg, OPTIONS, "npz")
    keys = options["keys"]
    if keys is not None and (not isinstance(keys, list) or not all(isinstance(k, str) for k in keys)):
        raise ConfigError(f"data.options.keys must be a list of array names; got {keys!r}.", key="data.options.keys")
    files = episode_files(cfg, ".npz", "npz", "write_example_episodes")
    names, lengths = _checked_specs(files, keys)
    train_eps, val_eps = split_episodes(len(files), cfg.data.val_fraction)
    return files, names, lengths, shard(train_eps, ctx), shard(val_eps, ctx, required=False)


def build(cfg: TrainConfig, ctx: BuildContext) -> DataBundle:
    """One item per step of every ``.npz`` episode under ``data.path``, split, sharded by rank, batched.

    Option ``keys`` (``data.options.keys``) limits which arrays are read.
    """
    files, names, lengths, train_eps, val_eps = _plan(cfg, ctx)
    train = NpzEpisodes(files, train_eps, names, lengths)
    val = NpzEpisodes(files, val_eps, names, lengths)
    return make_bundle(train, val, cfg)


def describe(cfg: TrainConfig, ctx: BuildContext | None = None) -> dict[str, Any]:
    """Files, step counts and array shapes/dtypes under ``data.path``, read from headers only."""
    files, names, lengths, train_eps, val_eps = _plan(cfg, ctx or BuildContext())
    specs = _array_specs(files[0])
    return describe_episodes("npz", cfg, files, lengths, {k: specs[k] for k in names}, train_eps, val_eps)


def load_episode_indices(cfg: TrainConfig, ctx: BuildContext | None = None) -> list[int]:
    """Indices (into the sorted file list) of the training episodes this rank reads."""
    return _plan(cfg, ctx or BuildContext())[3]


def write_example_episodes(directory: str | Path, *, episodes: int = 4, steps: int = 12, seed: int = 0) -> list[Path]:
    """Write ``episodes`` small episode files (observation, action, reward) for demos and tests."""
    rng = np.random.default_rng(seed)
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for e in range(episodes):
        path = target / f"episode_{e:03d}.npz"
        np.savez(
            path,
            observation=rng.standard_normal((steps, 4)).cumsum(0).astype(np.float32),
            action=rng.uniform(-1, 1, (steps, 2)).astype(np.float32),
            reward=rng.random(steps).astype(np.float32),
        )
        written.append(path)
    return written
