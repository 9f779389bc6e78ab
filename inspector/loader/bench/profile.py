"""Profile your own data path: any iterable of batches, a ``torch.utils.data.DataLoader`` included.

``profile_loader`` times what a training loop sees: how long the first batch takes (worker start-up
included, as the first step of an epoch pays it), then, after ``warmup`` more batches, the time
between consecutive batches for ``batches`` batches, and the bytes each batch holds, summed over
every tensor and array at any depth of nesting (``torch.utils._pytree``). Where CUDA exists it
also times copying one batch to the GPU from pageable memory and from pinned memory.
Timings follow NOTE [ Numbers a researcher can trust ] in ``stats``.
"""

from __future__ import annotations

import html
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from inspector._bench import Progress
from inspector.loader.bench.rows import BenchCancelled
from inspector.loader.bench.stats import MachineLoad, Spread, machine_load

H2D_REPEATS = 5


@dataclass(frozen=True)
class HostToDevice:
    """Seconds to copy one batch (``nbytes``) to ``device``: pageable, pinned, and pinning it first."""

    device: str
    nbytes: int
    pageable_s: Spread
    pinned_s: Spread
    pin_s: Spread


@dataclass(frozen=True)
class LoaderProfile:
    """What ``profile_loader`` measured: first batch, per-batch times and bytes, and H2D copies where CUDA exists.

    It shows itself as a table (``repr``, ``_repr_html_``, ``to_frame()``); its chart is drawn on the view side,
    ``inspector.views.loader.profile_figure(profile)`` (several profiles side by side, too), because the engine
    imports no plotting library.
    """

    name: str
    first_batch_s: float
    batch_seconds: tuple[float, ...]
    batch_bytes: tuple[int, ...]
    warmup: int
    exhausted: bool  # the iterable ended before ``batches`` batches were timed
    machine: MachineLoad
    h2d: HostToDevice | None = None
    label: str = ""  # what the profile is of, for tables that compare profiles
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def batches(self) -> int:
        return len(self.batch_seconds)

    @property
    def seconds(self) -> float:
        return float(sum(self.batch_seconds))

    @property
    def batches_per_s(self) -> float:
        return self.batches / self.seconds if self.seconds > 0 else float("nan")

    @property
    def mb_per_s(self) -> float:
        """MiB (2**20 bytes) of tensors and arrays delivered per second."""
        return sum(self.batch_bytes) / 2**20 / self.seconds if self.seconds > 0 else float("nan")

    @property
    def per_batch(self) -> Spread | None:
        return Spread.of(self.batch_seconds) if self.batch_seconds else None

    def summary(self) -> dict[str, Any]:
        """The headline figures as one flat record (for tables and JSON)."""
        spread = self.per_batch
        return {
            "loader": self.label or self.name,
            "batches": self.batches,
            "first_batch_s": self.first_batch_s,
            "batches_per_s": self.batches_per_s,
            "mb_per_s": self.mb_per_s,
            "batch_ms_median": spread.median * 1e3 if spread else None,
            "batch_ms_min": spread.min * 1e3 if spread else None,
            "batch_ms_max": spread.max * 1e3 if spread else None,
            "mb_per_batch": (sum(self.batch_bytes) / len(self.batch_bytes) / 2**20) if self.batch_bytes else 0.0,
            "h2d_pageable_ms": self.h2d.pageable_s.median * 1e3 if self.h2d else None,
            "h2d_pinned_ms": self.h2d.pinned_s.median * 1e3 if self.h2d else None,
            "busy_machine": self.machine.busy,
        }

    def to_frame(self) -> Any:
        """One row per timed batch (``batch``, ``seconds``, ``bytes``, ``mb_per_s``) as a pandas DataFrame.

        Needs pandas (the ``[ui]`` extra); the engine itself does not.
        """
        try:
            import pandas as pd
        except ImportError as exc:  # the engine installs without pandas
            raise ImportError("LoaderProfile.to_frame() needs pandas: pip install 'dispatch-inspector[ui]'") from exc
        seconds = np.asarray(self.batch_seconds, float)
        nbytes = np.asarray(self.batch_bytes, float)
        with np.errstate(divide="ignore", invalid="ignore"):
            rate = nbytes / 2**20 / seconds
        return pd.DataFrame({"batch": np.arange(1, self.batches + 1), "seconds": seconds,
                             "bytes": nbytes.astype(np.int64), "mb_per_s": rate})  # fmt: skip

    def __repr__(self) -> str:
        ended = ", iterable ended early" if self.exhausted else ""
        return (f"<LoaderProfile {self.label or self.name}: {self.batches} batches, first {self.first_batch_s:.3g} s, "
                f"{self.batches_per_s:,.1f} batches/s, {self.mb_per_s:,.1f} MiB/s{ended}>")  # fmt: skip

    def _repr_html_(self) -> str:
        summary = self.summary()
        rows = [
            ("batches timed", f"{self.batches} (after {self.warmup} warm-up)" + (" — the iterable ended early"
                                                                                 if self.exhausted else "")),
            ("first batch", f"{self.first_batch_s:.3g} s (start-up included)"),
            ("batches/s", f"{self.batches_per_s:,.1f}"),
            ("MiB/s", f"{self.mb_per_s:,.1f} ({summary['mb_per_batch']:.3g} MiB per batch)"),
        ]
        spread = self.per_batch
        if spread is not None:
            rows.append(("ms per batch", f"median {spread.median * 1e3:.3g} [min {spread.min * 1e3:.3g}, "
                                         f"max {spread.max * 1e3:.3g}]"))  # fmt: skip
        if self.h2d is not None:
            rows.append((f"to {self.h2d.device}", f"pageable {self.h2d.pageable_s.median * 1e3:.3g} ms, pinned "
                                                  f"{self.h2d.pinned_s.median * 1e3:.3g} ms (pinning "
                                                  f"{self.h2d.pin_s.median * 1e3:.3g} ms)"))  # fmt: skip
        note = self.machine.note()
        body = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
                       for k, v in rows)  # fmt: skip
        foot = f"<p><i>{html.escape(note)}</i></p>" if note else ""
        title = html.escape(self.label or self.name)
        return f"<div class='inspector-loader-profile'><b>{title}</b><table>{body}</table>{foot}</div>"


def batch_nbytes(batch: Any) -> int:
    """Bytes of every tensor and array in ``batch``, at any depth of nesting."""
    leaves = _leaves(batch)
    total = 0
    torch = sys.modules.get("torch")
    for leaf in leaves:
        if isinstance(leaf, np.ndarray | np.generic):
            total += int(leaf.nbytes)
        elif torch is not None and isinstance(leaf, torch.Tensor):
            total += int(leaf.numel() * leaf.element_size())
    return total


def _leaves(batch: Any) -> list[Any]:
    torch = sys.modules.get("torch")
    if torch is not None:
        from torch.utils import _pytree

        return list(_pytree.tree_leaves(batch))
    found, stack = [], [batch]
    while stack:  # no torch loaded: a plain walk of dicts, lists and tuples
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list | tuple):
            stack.extend(node)
        else:
            found.append(node)
    return found


def profile_loader(
    loader: Iterable[Any],
    *,
    batches: int = 50,
    warmup: int = 2,
    device: Any = "auto",
    label: str = "",
    cancel: threading.Event | None = None,
    progress: Progress | None = None,
) -> LoaderProfile:
    """Time ``batches`` batches of ``loader`` (any iterable) after ``warmup`` untimed ones; see the module docstring.

    ``device='auto'`` times host-to-device copies of one batch where CUDA exists (``None`` skips
    them). ``cancel`` (a ``threading.Event``) stops early with ``BenchCancelled``; a loader that
    ends early is profiled on what it gave (``exhausted``).

    >>> from torch.utils.data import DataLoader  # doctest: +SKIP
    >>> profile_loader(DataLoader(dataset, batch_size=32, num_workers=2), batches=20)  # doctest: +SKIP
    <LoaderProfile DataLoader: 20 batches, first 1.2 s, 410.3 batches/s, 96.1 MiB/s>
    """
    if type(batches) is not int or batches < 1 or type(warmup) is not int or warmup < 0:
        raise ValueError(f"batches must be a positive int and warmup a non-negative int; got {batches!r}, {warmup!r}")
    if not hasattr(loader, "__iter__"):
        raise TypeError(f"profile_loader needs an iterable (a DataLoader, a generator...), got {type(loader).__name__}")
    machine = machine_load()
    name = type(loader).__name__
    total = warmup + batches + 1
    started = time.perf_counter()
    iterator = iter(loader)
    seconds: list[float] = []
    nbytes: list[int] = []
    first_s = float("nan")
    last: Any = None
    exhausted = False
    try:
        for step in range(total):
            if cancel is not None and cancel.is_set():
                raise BenchCancelled()
            try:
                batch = next(iterator)
            except StopIteration:
                exhausted = True
                break
            now = time.perf_counter()
            if step == 0:
                first_s = now - started
            elif step > warmup:
                seconds.append(now - started)
                nbytes.append(batch_nbytes(batch))
            last = batch
            del batch
            if progress is not None:
                progress(step + 1, total, f"batch {step + 1} of {total}")
            started = time.perf_counter()
    finally:
        close = getattr(iterator, "close", None)  # our generator's finally blocks run now, not at exit
        if callable(close) and not exhausted and iterator is not loader:
            close()
    h2d = _host_to_device(last, device) if last is not None else None
    return LoaderProfile(name, first_s, tuple(seconds), tuple(nbytes), warmup, exhausted, machine, h2d, label)


def _host_to_device(batch: Any, device: Any) -> HostToDevice | None:
    """Time copying ``batch``'s tensors to the GPU, pageable and pinned (None without CUDA or tensors)."""
    if device is None:
        return None
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return None
    target = torch.device("cuda" if device == "auto" else device)
    tensors = [leaf for leaf in _leaves(batch) if isinstance(leaf, torch.Tensor) and leaf.device.type == "cpu"]
    if not tensors:
        return None

    def timed(fn: Any) -> Spread:
        times = []
        fn()  # warm-up
        for _ in range(H2D_REPEATS):
            torch.cuda.synchronize(target)
            began = time.perf_counter()
            fn()
            torch.cuda.synchronize(target)
            times.append(time.perf_counter() - began)
        return Spread.of(times)

    pinned = [t.pin_memory() for t in tensors]
    pageable_s = timed(lambda: [t.to(target, non_blocking=True) for t in tensors])
    pinned_s = timed(lambda: [t.to(target, non_blocking=True) for t in pinned])
    pin_s = timed(lambda: [t.pin_memory() for t in tensors])
    size = sum(int(t.numel() * t.element_size()) for t in tensors)
    return HostToDevice(str(target), size, pageable_s, pinned_s, pin_s)



def profile_inspector_loader(
    source: Iterable[Any],
    *,
    batches: int = 50,
    warmup: int = 2,
    sample: int = 8,
    workers: int = 2,
    cancel: threading.Event | None = None,
    progress: Progress | None = None,
) -> LoaderProfile:
    """Profile the inspector's loader on the same bytes ``source`` delivers: its first ``sample`` batches,
    saved as storage files and streamed back in a loop (``FileStorageLoader.stream``).

    Batches the storage format cannot hold raise ``UnsupportedPayloadError`` naming where.

    >>> ours = profile_inspector_loader(my_dataloader, batches=30)  # doctest: +SKIP
    """
    import itertools

    from inspector.loader._loaders import FileStorageLoader

    if type(sample) is not int or sample < 1:
        raise ValueError(f"sample must be a positive int, got {sample!r}")
    with FileStorageLoader(ttl=None, worker_num=workers) as loader:
        storages = []
        for batch in itertools.islice(iter(source), sample):
            if cancel is not None and cancel.is_set():
                raise BenchCancelled()
            storages.append(loader.save(_to_host(batch)))
        if not storages:
            raise ValueError("the source gave no batch to compare with; next step = pass a loader that yields batches")
        loader.start()
        count = warmup + batches + 1
        stream = loader.stream(itertools.islice(itertools.cycle(storages), count))
        return profile_loader(stream, batches=batches, warmup=warmup, device=None, cancel=cancel, progress=progress,
                              label="inspector loader (same bytes)")  # fmt: skip


def _to_host(batch: Any) -> Any:
    """``batch`` with tensors detached and on the CPU (what a storage file holds), same nesting."""
    torch = sys.modules.get("torch")
    if torch is None:
        return batch
    from torch.utils import _pytree

    return _pytree.tree_map(lambda leaf: leaf.detach().cpu() if isinstance(leaf, torch.Tensor) else leaf, batch)
