"""Watch your own training loop: each step's wait for its batch and its compute, without restructuring the loop.

``LoopProfiler.iterate(loader)`` yields the loader's batches unchanged and times, per step, how long
``next`` took (the wait for data) and how long the loop body took before asking for the next batch
(compute). A plain ``torch.utils.data.DataLoader`` is iterated through an instrumented copy with the
same settings, so each batch also brings back where its time went (``stages``); pass
``stages=False`` to iterate the very loader given. When CUDA is in use, the step's queued GPU work is
waited for before its time is taken, so asynchronous kernels count as compute, not as the next wait.
The cost per step is a few clock reads and appends; the last ``keep`` steps are kept.

>>> profiler = LoopProfiler(warmup=2)
>>> for batch in profiler.iterate(range(10)):
...     pass
>>> profiler.result().batches
7
"""

from __future__ import annotations

import sys
import time
from collections import deque
from collections.abc import Generator, Iterable
from typing import Any

from inspector.loader.bench.stats import machine_load

KEEP = 10_000


class LoopProfiler:
    """Times the steps of a loop over a loader; usable as a context manager (``with LoopProfiler() as p:``)."""

    def __init__(self, *, warmup: int = 2, keep: int = KEEP, label: str = "", stages: bool = True) -> None:
        if type(warmup) is not int or warmup < 0 or type(keep) is not int or keep < 1:
            raise ValueError(f"warmup must be a non-negative int and keep a positive int; got {warmup!r}, {keep!r}")
        self.warmup, self.keep, self.label, self.stages = warmup, keep, label, stages
        self.machine = machine_load()
        self.name = ""
        self.workers = 0
        self.first_batch_s = float("nan")
        self.exhausted = False
        self.seen = 0  # steps seen, warm-up and first batch included
        self._waits: deque[float] = deque(maxlen=keep)
        self._computes: deque[float] = deque(maxlen=keep)
        self._bytes: deque[int] = deque(maxlen=keep)
        self._stamps: deque[Any] = deque(maxlen=keep)
        self._received: deque[float] = deque(maxlen=keep)
        self._asked: deque[float] = deque(maxlen=keep)
        self._pending: tuple[float, int, Any, float, float] | None = None  # a step whose compute is running
        self.last_batch: Any = None
        self._yielded = 0.0

    # -- the loop ------------------------------------------------------------------------------
    def iterate(self, loader: Iterable[Any]) -> Generator[Any, None, None]:
        """Yield ``loader``'s batches, timing each step (see the module docstring)."""
        if not hasattr(loader, "__iter__"):
            raise TypeError(f"iterate needs an iterable (a DataLoader, a generator...), got {type(loader).__name__}")
        return self._steps(loader)

    def _steps(self, loader: Iterable[Any]) -> Generator[Any, None, None]:
        from inspector.loader.bench.profile_record import batch_nbytes

        self.name = self.name or type(loader).__name__
        self.workers = int(getattr(loader, "num_workers", 0) or 0)
        source, unwrap = _source(loader, self.stages)
        started = time.perf_counter()
        iterator = iter(source)
        try:
            while True:
                _wait_for_gpu()
                resumed = time.perf_counter()
                self._close_step(resumed)
                asked = time.monotonic()
                try:
                    item = next(iterator)
                except StopIteration:
                    self.exhausted = True
                    return
                got = time.perf_counter()
                arrived = time.monotonic()
                batch, stamps = unwrap(item)
                if self.seen == 0:
                    self.first_batch_s = got - started
                elif self.seen > self.warmup:
                    self._pending = (got - resumed, batch_nbytes(batch), stamps, asked, arrived)
                self.seen += 1
                self.last_batch = batch
                del item
                self._yielded = time.perf_counter()
                yield batch
        finally:  # a loop left by break or an exception closes its generator now: the last step ends here
            self._close_step(time.perf_counter())
            close = getattr(iterator, "close", None)
            if callable(close) and iterator is not source:
                close()

    def _close_step(self, resumed: float) -> None:
        if self._pending is None:
            return
        wait, nbytes, stamps, asked, arrived = self._pending
        self._waits.append(wait)
        self._asked.append(asked)
        self._computes.append(resumed - self._yielded)
        self._bytes.append(nbytes)
        self._stamps.append(stamps)
        self._received.append(arrived)
        self._pending = None

    # -- results -------------------------------------------------------------------------------
    @property
    def steps(self) -> int:
        """Timed steps so far (after the first batch and the warm-up)."""
        return len(self._waits)

    def result(self, *, h2d: Any = None, has_step: bool = True) -> Any:
        """The ``LoaderProfile`` of the steps timed so far (its verdict needs at least one)."""
        from inspector.loader.bench.profile_record import LoaderProfile
        from inspector.loader.bench.stage_split import split_stages

        waits, computes = tuple(self._waits), tuple(self._computes)
        seconds = tuple(w + c for w, c in zip(waits, computes, strict=True))
        h2d_s = None if h2d is None else h2d.pinned_s.median if self.stages else h2d.pageable_s.median
        split = split_stages(
            tuple(self._stamps), tuple(self._asked), tuple(self._received), sum(seconds), self.workers, h2d_s
        )
        return LoaderProfile(
            self.name,
            self.first_batch_s,
            seconds,
            tuple(self._bytes),
            self.warmup,
            self.exhausted,
            self.machine,
            h2d,
            self.label,
            wait_seconds=waits,
            compute_seconds=computes if has_step else (),
            stages=split,
        )

    def __enter__(self) -> LoopProfiler:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pending is not None:  # a generator still open when the block ends: its last step ends here
            self._close_step(time.perf_counter())


def _wait_for_gpu() -> None:
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def _source(loader: Iterable[Any], stages: bool) -> tuple[Iterable[Any], Any]:
    """What to iterate, and how to unwrap its items: an instrumented copy of a plain DataLoader, else the loader."""
    torch = sys.modules.get("torch")
    if stages and torch is not None:
        from torch.utils.data import DataLoader

        if type(loader) is DataLoader:
            from inspector.loader.bench import stages as timed

            return _instrumented_once(loader, timed), timed.unwrap
    return loader, lambda item: (item, None)


_COPIES: dict[int, tuple[Any, Any]] = {}


def _instrumented_once(loader: Any, timed: Any) -> Any:
    """The instrumented copy of ``loader``, made once per loader (so persistent workers persist across epochs)."""
    import weakref

    entry = _COPIES.get(id(loader))
    if entry is not None and entry[0]() is loader:
        return entry[1]
    copy = timed.instrumented(loader)
    key = id(loader)
    _COPIES[key] = (weakref.ref(loader, lambda _ref: _COPIES.pop(key, None)), copy)
    return copy
