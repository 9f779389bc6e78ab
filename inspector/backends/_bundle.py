"""What a backend receives (``BuildContext``) and what it returns (``DataBundle``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from inspector.backends._errors import BuildContextError


@dataclass(frozen=True)
class BuildContext:
    """Where the data is being built: this process's rank among ``world_size`` readers."""

    rank: int = 0
    world_size: int = 1
    device: str = "cpu"

    def __post_init__(self) -> None:
        if isinstance(self.world_size, bool) or not isinstance(self.world_size, int) or self.world_size < 1:
            raise BuildContextError(f"BuildContext.world_size must be an int >= 1; got {self.world_size!r}.")
        if isinstance(self.rank, bool) or not isinstance(self.rank, int) or not 0 <= self.rank < self.world_size:
            raise BuildContextError(
                f"BuildContext.rank must be an int in [0, world_size); got rank={self.rank!r}, "
                f"world_size={self.world_size}."
            )


@dataclass(frozen=True)
class DataBundle:
    """A built data pipeline: the dataset, its loaders and how many batches an epoch has.

    ``set_epoch`` (when given) reseeds per-epoch shuffling, like ``DistributedSampler.set_epoch``.
    """

    dataset: Any
    train_loader: Iterable[Any]
    val_loader: Iterable[Any] | None = None
    train_iters: int = 0
    val_iters: int = 0
    set_epoch: Callable[[int], None] | None = None
