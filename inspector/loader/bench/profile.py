"""Profile your own data path: any iterable of batches, a ``torch.utils.data.DataLoader`` included.

``profile_loader`` times what a training loop sees: how long the first batch takes (worker start-up
included, as the first step of an epoch pays it), then, after ``warmup`` more batches, ``batches``
steps, and the bytes each batch holds, summed over every tensor and array at any depth of nesting.
Given your ``step`` (a callable taking one batch, e.g. your training step), it times each step's wait
for data and its compute apart and gives a verdict (NOTE [ Loader-bound or compute-bound ] in
``verdict``); ``LoopProfiler`` does the same inside your own loop. A plain DataLoader also reports
where a batch's time goes, stage by stage (``stage_split``). Where CUDA exists it times copying one
batch to the GPU from pageable and from pinned memory. Timings follow NOTE [ Numbers a researcher
can trust ] in ``stats``.
"""

from __future__ import annotations

import html
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from inspector._bench import Progress
from inspector.loader.bench.host_to_device import HostToDevice, host_to_device, leaves
from inspector.loader.bench.loop import LoopProfiler
from inspector.loader.bench.rows import BenchCancelled
from inspector.loader.bench.stage_split import STAGE_TITLES, StageSplit
from inspector.loader.bench.stats import MachineLoad, Spread
from inspector.loader.bench.verdict import WaitShare, speedup_if_data_free, verdict_of, verdict_words

OURS_LABEL = "inspector loader, I/O only: your dataset's work excluded"


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
    wait_seconds: tuple[float, ...] = ()  # per timed step: the wait for its batch
    compute_seconds: tuple[float, ...] = ()  # per timed step: the step's own time (empty without a step)
    stages: StageSplit | None = None  # where a DataLoader's batch spends its time

    # -- the verdict (NOTE [ Loader-bound or compute-bound ]) ------------------------------------
    @property
    def has_step(self) -> bool:
        return len(self.compute_seconds) == len(self.wait_seconds) > 0

    @property
    def data_wait_share(self) -> WaitShare | None:
        """The share of wall time spent waiting for the next batch, with its spread (None without a step)."""
        from inspector.loader.bench.verdict import wait_share

        return wait_share(self.wait_seconds, self.compute_seconds) if self.has_step else None

    @property
    def verdict(self) -> str | None:
        """``loader-bound``, ``compute-bound`` or ``balanced`` (None without a step to compare the waits with)."""
        share = self.data_wait_share
        return verdict_of(share.value) if share is not None else None

    @property
    def step_time(self) -> Spread | None:
        """Seconds per step, wait for data included."""
        return Spread.of(self.batch_seconds) if self.batch_seconds else None

    @property
    def step_if_data_free(self) -> Spread | None:
        """Seconds per step if every batch were there at once: the step's compute alone."""
        return Spread.of(self.compute_seconds) if self.has_step else None

    def verdict_text(self) -> str:
        """The verdict in words, with what to change next ("" without a step)."""
        share, step, free = self.data_wait_share, self.step_time, self.step_if_data_free
        if share is None or step is None or free is None:
            return ""
        stage = None
        if self.stages is not None and self.stages.stages:
            name = self.stages.largest()
            stage = (STAGE_TITLES[name], self.stages.stages[name].median)
        workers = self.stages.workers if self.stages is not None else self.extra.get("workers")
        return verdict_words(share, sum(self.batch_seconds) / self.batches, sum(self.compute_seconds) / self.batches,
                             workers, stage, self.machine.cores)  # fmt: skip

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
        share = self.data_wait_share
        free = self.step_if_data_free
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
            "verdict": self.verdict,
            "data_wait_share": share.value if share else None,
            "data_wait_share_min": share.min if share else None,
            "data_wait_share_max": share.max if share else None,
            "step_ms_if_data_free": free.median * 1e3 if free else None,
            "speedup_if_data_free": speedup_if_data_free(share.value) if share else None,
            "busy_machine": self.machine.busy,
        }

    def to_frame(self) -> Any:
        """One row per timed batch (``batch``, ``seconds``, ``bytes``, ``mb_per_s``; with a step also
        ``wait_s`` and ``compute_s``) as a pandas DataFrame.

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
        frame = pd.DataFrame({"batch": np.arange(1, self.batches + 1), "seconds": seconds,
                              "bytes": nbytes.astype(np.int64), "mb_per_s": rate})  # fmt: skip
        if self.has_step:
            frame["wait_s"] = np.asarray(self.wait_seconds, float)
            frame["compute_s"] = np.asarray(self.compute_seconds, float)
        return frame

    def __repr__(self) -> str:
        ended = ", iterable ended early" if self.exhausted else ""
        share = self.data_wait_share
        verdict = f", {self.verdict} ({share.value:.0%} waiting for data)" if share is not None else ""
        return (f"<LoaderProfile {self.label or self.name}: {self.batches} batches, first {self.first_batch_s:.3g} s, "
                f"{self.batches_per_s:,.1f} batches/s, {self.mb_per_s:,.1f} MiB/s{verdict}{ended}>")  # fmt: skip

    def _repr_html_(self) -> str:
        summary = self.summary()
        rows = []
        if self.has_step:
            rows.append(("verdict", self.verdict_text()))
        rows += [
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
        if self.stages is not None:
            shown = ", ".join(f"{name} {spread.median * 1e3:.3g}" for name, spread in self.stages.stages.items())
            rows.append(("ms per batch by stage", shown))
        note = self.machine.note()
        body = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
                       for k, v in rows)  # fmt: skip
        foot = f"<p><i>{html.escape(note)}</i></p>" if note else ""
        title = html.escape(self.label or self.name)
        return f"<div class='inspector-loader-profile'><b>{title}</b><table>{body}</table>{foot}</div>"


def batch_nbytes(batch: Any) -> int:
    """Bytes of every tensor and array in ``batch``, at any depth of nesting."""
    total = 0
    torch = sys.modules.get("torch")
    for leaf in leaves(batch):
        if isinstance(leaf, np.ndarray | np.generic):
            total += int(leaf.nbytes)
        elif torch is not None and isinstance(leaf, torch.Tensor):
            total += int(leaf.numel() * leaf.element_size())
    return total


def profile_loader(
    loader: Iterable[Any],
    *,
    step: Callable[[Any], Any] | None = None,
    batches: int = 50,
    warmup: int = 2,
    device: Any = "auto",
    label: str = "",
    stages: bool = True,
    cancel: threading.Event | None = None,
    progress: Progress | None = None,
) -> LoaderProfile:
    """Time ``batches`` steps of ``loader`` (any iterable) after ``warmup`` untimed ones; see the module docstring.

    ``step`` (your training step, taking one batch) is run on every batch, and each step's wait for
    data and its compute are timed apart: ``profile.verdict`` says whether the loop is loader-bound.
    ``device='auto'`` times host-to-device copies of one batch where CUDA exists (``None`` skips
    them). ``stages=False`` iterates a DataLoader as it is, without the per-stage split. ``cancel``
    (a ``threading.Event``) stops early with ``BenchCancelled``; a loader that ends early is
    profiled on what it gave (``exhausted``).

    >>> from torch.utils.data import DataLoader  # doctest: +SKIP
    >>> profile_loader(DataLoader(dataset, batch_size=32, num_workers=2), step=train_step, batches=20)  # doctest: +SKIP
    <LoaderProfile DataLoader: 20 batches, first 1.2 s, 41.3 batches/s, 9.6 MiB/s, loader-bound (72% waiting for data)>
    """
    if type(batches) is not int or batches < 1 or type(warmup) is not int or warmup < 0:
        raise ValueError(f"batches must be a positive int and warmup a non-negative int; got {batches!r}, {warmup!r}")
    if not hasattr(loader, "__iter__"):
        raise TypeError(f"profile_loader needs an iterable (a DataLoader, a generator...), got {type(loader).__name__}")
    if step is not None and not callable(step):
        raise TypeError(f"step must be a callable taking one batch (your training step), got {type(step).__name__}")
    profiler = LoopProfiler(warmup=warmup, label=label, stages=stages)
    total = warmup + batches + 1
    steps = profiler.iterate(loader)
    try:
        for done, batch in enumerate(steps, start=1):
            if cancel is not None and cancel.is_set():
                raise BenchCancelled()
            if step is not None:
                step(batch)
            if progress is not None:
                progress(done, total, f"batch {done} of {total}")
            if done >= total:
                break
    finally:
        steps.close()  # the loader's workers stop now (a generator's finally blocks run), not at exit
    last = profiler.last_batch
    h2d = host_to_device(last, device) if last is not None else None
    profiler.last_batch = None
    return profiler.result(h2d=h2d, has_step=step is not None)


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
    """What the inspector's loader would deliver for your batches, saved once: the first ``sample`` batches of
    ``source`` saved as storage files and streamed back in a loop (``FileStorageLoader.stream``).

    This is I/O only (``OURS_LABEL``): your dataset's work (decoding, augmenting, collating) is done once
    when the batches are saved and excluded from the timing, so compare it with your loader as the
    speed of replaying prepared batches, not as the same work done faster. Batches the storage format
    cannot hold raise ``UnsupportedPayloadError`` naming where.

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
                              label=OURS_LABEL)  # fmt: skip


def _to_host(batch: Any) -> Any:
    """``batch`` with tensors detached and on the CPU (what a storage file holds), same nesting."""
    torch = sys.modules.get("torch")
    if torch is None:
        return batch
    from torch.utils import _pytree

    return _pytree.tree_map(lambda leaf: leaf.detach().cpu() if isinstance(leaf, torch.Tensor) else leaf, batch)
