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

import sys
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from inspector._messages import Message
from inspector.loader.bench.host_to_device import HostToDevice, host_to_device  # noqa: F401 (re-exported)
from inspector.loader.bench.loop import LoopProfiler
from inspector.loader.bench.profile_record import OURS_LABEL, LoaderProfile, batch_nbytes  # noqa: F401 (re-exported)
from inspector.loader.bench.rows import BenchCancelled

if TYPE_CHECKING:
    from inspector._bench import Progress


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
            step = "pass a loader that yields batches"
            raise ValueError(Message("the source gave no batch to compare with", next_step=step).one_line())
        loader.start()
        count = warmup + batches + 1
        stream = loader.stream(itertools.islice(itertools.cycle(storages), count))
        return profile_loader(
            stream, batches=batches, warmup=warmup, device=None, cancel=cancel, progress=progress, label=OURS_LABEL
        )


def _to_host(batch: Any) -> Any:
    """``batch`` with tensors detached and on the CPU (what a storage file holds), same nesting."""
    torch = sys.modules.get("torch")
    if torch is None:
        return batch
    from torch.utils import _pytree

    return _pytree.tree_map(lambda leaf: leaf.detach().cpu() if isinstance(leaf, torch.Tensor) else leaf, batch)
