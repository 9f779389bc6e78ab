"""Where a ``torch.utils.data.DataLoader``'s batch spends its time, through the seams the DataLoader offers.

Imported only for a DataLoader (it imports torch); ``profile`` asks ``is_plain_dataloader`` first.

NOTE [ Stage timings through public seams ]
Nothing of torch is patched. ``instrumented(loader)`` builds a second ``DataLoader`` with the same
settings (sampler, workers, pinning, prefetch, worker start method...) over two wrappers:

* the dataset, whose ``__getitem__`` (or ``__getitems__``, or ``__iter__`` for an iterable one)
  adds its time to a clock of the process it runs in (a worker's, or the main process's with
  ``num_workers=0``);
* the ``collate_fn``, which runs next in that same process: it reads and resets that clock, times
  the user's collate function, and returns the batch inside a ``TimedBatch`` carrying the stamps.

A ``TimedBatch`` travels back to the main process like any batch (pickled through the worker's
queue), and the DataLoader's pinning calls its ``pin_memory()`` method (the documented hook of
custom batch types), which pins the batch inside and times that too. The main process then unwraps
it (``unwrap``), noting when it arrived. Clocks are ``time.monotonic()``, one clock for every
process of the machine, so the time from a worker's last stamp to the main process's arrival is the
transfer to the main process and the wait in its queue.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from torch.utils.data import DataLoader, Dataset, IterableDataset

_clock = {"fetch_s": 0.0, "items": 0, "started": 0.0}  # this process's dataset time since the last collate


def _tick(started: float, items: int) -> None:
    if not _clock["items"]:
        _clock["started"] = started
    _clock["fetch_s"] += time.monotonic() - started
    _clock["items"] += items


@dataclass
class TimedBatch:
    """A batch with the stamps of how it was made (NOTE [ Stage timings through public seams ])."""

    batch: Any
    fetch_s: float  # in the dataset's __getitem__/__getitems__/__iter__, for this batch
    items: int
    started: float  # time.monotonic() when the first item was asked for
    collate_s: float
    collated: float  # time.monotonic() when collate_fn returned
    pid: int
    pin_s: float = 0.0
    pinned: float = 0.0  # time.monotonic() when pinning ended (0: not pinned)

    def pin_memory(self, device: Any = None) -> TimedBatch:
        """Pin the batch inside, as the DataLoader would pin it, and time it."""
        from torch.utils.data._utils.pin_memory import pin_memory

        began = time.monotonic()
        self.batch = pin_memory(self.batch, device)
        self.pinned = time.monotonic()
        self.pin_s = self.pinned - began
        return self


class TimedCollate:
    """The user's ``collate_fn``, timed, returning a ``TimedBatch`` (picklable for worker processes)."""

    def __init__(self, collate_fn: Callable[[Any], Any]) -> None:
        self.collate_fn = collate_fn

    def __call__(self, items: Any) -> TimedBatch:
        import os

        fetch_s, count, started = float(_clock["fetch_s"]), int(_clock["items"]), float(_clock["started"])
        _clock.update(fetch_s=0.0, items=0, started=0.0)
        began = time.monotonic()
        batch = self.collate_fn(items)
        done = time.monotonic()
        return TimedBatch(batch, fetch_s, count, started or began, done - began, done, os.getpid())


class TimedDataset(Dataset):
    """A map-style dataset whose ``__getitem__`` is timed."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __len__(self) -> int:
        return len(self.inner)

    def __getitem__(self, index: Any) -> Any:
        started = time.monotonic()
        item = self.inner[index]
        _tick(started, 1)
        return item


class TimedBatchedDataset(TimedDataset):
    """A map-style dataset with ``__getitems__`` (one call per batch), timed."""

    def __getitems__(self, indices: Any) -> Any:
        started = time.monotonic()
        items = self.inner.__getitems__(indices)
        _tick(started, len(indices))
        return items


class TimedIterable(IterableDataset):
    """An iterable dataset whose every ``next`` is timed."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __iter__(self) -> Iterator[Any]:
        iterator = iter(self.inner)
        while True:
            started = time.monotonic()
            try:
                item = next(iterator)
            except StopIteration:
                return
            _tick(started, 1)
            yield item


def instrumented(loader: Any) -> Any:
    """A ``DataLoader`` like ``loader`` whose batches come as ``TimedBatch`` (NOTE [ Stage timings ... ])."""
    inner = loader.dataset
    dataset: Dataset[Any]
    if isinstance(inner, IterableDataset):
        dataset = TimedIterable(inner)
    else:
        dataset = TimedBatchedDataset(inner) if getattr(inner, "__getitems__", None) else TimedDataset(inner)
    options: dict[str, Any] = dict(
        num_workers=loader.num_workers,
        collate_fn=TimedCollate(loader.collate_fn),
        pin_memory=loader.pin_memory,
        timeout=loader.timeout,
        worker_init_fn=loader.worker_init_fn,
        multiprocessing_context=loader.multiprocessing_context,
        generator=loader.generator,
        prefetch_factor=loader.prefetch_factor if loader.num_workers > 0 else None,
        persistent_workers=loader.persistent_workers,
        pin_memory_device=loader.pin_memory_device,
    )
    if hasattr(loader, "in_order"):
        options["in_order"] = loader.in_order
    if isinstance(inner, IterableDataset):
        return DataLoader(dataset, batch_size=loader.batch_size, drop_last=loader.drop_last, **options)
    if loader.batch_sampler is not None:
        return DataLoader(dataset, batch_sampler=loader.batch_sampler, **options)
    return DataLoader(dataset, batch_size=None, sampler=loader.sampler, **options)


def unwrap(item: Any) -> tuple[Any, TimedBatch | None]:
    """The user's batch and its stamps (None for a batch that did not come through ``instrumented``)."""
    if isinstance(item, TimedBatch):
        return item.batch, item
    return item, None
