"""End-to-end loader throughput against the usual alternatives, all measured in one run.

``run`` writes payloads of each layout and size as storage files, reads them once so the page
cache is hot, then times loading them until the consumer holds valid arrays (saving excluded;
worker start-up excluded and measured separately by ``measure_startup``) with:

    ours        FileStorageLoader: workers read into shared memory, arrays handed over by lease
    sync        FileStorage.load() in the calling thread
    mp_queue    worker processes load and put numpy arrays on a multiprocessing.Queue
    dataloader  torch.utils.data.DataLoader with the same number of workers
    memcpy      one single-thread copy of the same bytes into memory already touched (the ceiling)
    h2d         (with a device) one pinned host-to-device copy of the same bytes

Each row gives the median MB/s (MB = 2**20 bytes) and its spread over the timed repeats, and
counts deliveries whose marker values did not match the file they came from (always 0 for
ours). Rows are plain frozen records; ``BenchRow.as_dict`` feeds a DataFrame in the views.
"""

from __future__ import annotations

import math
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from inspector.loader._bench_peers import (
    LAYOUTS,
    WAIT_S,
    BenchFiles,
    dataloader_peer,
    h2d_speeds,
    memcpy_speeds,
    mp_queue_peer,
    sync_peer,
)
from inspector.loader._cuda import resolve_device
from inspector.loader._loader import FileStorageLoader
from inspector.loader._storage import FileStorage

METHODS = ("ours", "sync", "mp_queue", "dataloader", "memcpy")
METHOD_LABELS = {
    "ours": "inspector loader",
    "sync": "FileStorage.load (sync)",
    "mp_queue": "multiprocessing.Queue",
    "dataloader": "torch DataLoader",
    "memcpy": "memcpy (ceiling)",
    "h2d": "pinned H2D copy",
}
WORKERLESS = ("sync", "memcpy", "h2d")  # measured once per size, reported with workers=1
CELL_BUDGET_S = 6.0  # fewer timed repeats when one repeat of a slow baseline takes longer than this

Progress = Callable[[int, int, str], None]


class BenchCancelled(Exception):
    """Raised by ``run`` when its ``cancel`` event is set."""


@dataclass(frozen=True)
class BenchRow:
    """One measured cell: a method moving one layout and size with a number of workers."""

    layout: str
    size_mb: float
    workers: int
    device: str
    method: str
    mb_s: float
    mb_s_min: float
    mb_s_max: float
    repeats: int
    loads: int
    leaves: int
    corrupt: int
    read_ms: float | None = None
    handoff_ms: float | None = None
    wait_ms: float | None = None
    build_ms: float | None = None
    h2d_ms: float | None = None
    callback_ms: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Startup:
    """Seconds from creating a loader to the first payload delivered, and the target for that size."""

    seconds: float
    size_mb: float
    workers: int

    @property
    def target_s(self) -> float:
        return 0.5 + self.size_mb * 2**20 / 2e9


def loads_per_repeat(size_mb: float, workers: int) -> int:
    """Enough loads to keep every worker busy and to move about 256 MiB per repeat."""
    return max(2 * workers, min(256, math.ceil(256 / max(size_mb, 1e-3))))


def run(
    sizes_mb: Sequence[float] = (1, 16, 64),
    workers: Sequence[int] = (2,),
    device: Any = None,
    repeats: int = 3,
    layouts: Sequence[str] = ("steps",),
    methods: Sequence[str] = METHODS,
    progress: Progress | None = None,
    on_row: Callable[[BenchRow], None] | None = None,
    cancel: threading.Event | None = None,
    directory: str | None = None,
) -> list[BenchRow]:
    """Measure every method on every layout, size and worker count; see the module docstring."""
    unknown = [m for m in methods if m not in (*METHODS, "h2d")]
    if unknown:
        raise ValueError(f"Unknown methods {unknown}. Known: {[*METHODS, 'h2d']}")
    bad_layouts = [layout for layout in layouts if layout not in LAYOUTS]
    if bad_layouts:
        raise ValueError(f"Unknown layouts {bad_layouts}. Known: {list(LAYOUTS)}")
    if repeats < 1 or not sizes_mb or not workers or any(w < 1 for w in workers):
        raise ValueError("repeats, sizes_mb and workers must be non-empty and positive")
    target = resolve_device(device)
    methods = list(methods) + (["h2d"] if target is not None and "h2d" not in methods else [])
    plan = [
        (layout, size, w, method)
        for layout in layouts
        for size in sizes_mb
        for method in methods
        for w in (workers[:1] if method in WORKERLESS else workers)
    ]
    rows: list[BenchRow] = []
    done = 0
    with tempfile.TemporaryDirectory(prefix="inspector-bench-", dir=directory) as tmp:
        for layout in layouts:
            for size in sizes_mb:
                files = BenchFiles(tmp, layout, size, tensors=target is not None)
                try:
                    for cell_layout, cell_size, w, method in plan:
                        if (cell_layout, cell_size) != (layout, size):
                            continue
                        _check(cancel)
                        if progress is not None:
                            progress(done, len(plan), f"{layout} {size:g} MiB: {METHOD_LABELS[method]}, {w} workers")
                        row = _measure(method, files, w if method not in WORKERLESS else 1, target, repeats, cancel)
                        rows.append(row)
                        done += 1
                        if on_row is not None:
                            on_row(row)
                finally:
                    files.remove()
    if progress is not None:
        progress(done, len(plan), "done")
    global _last_run
    _last_run = tuple(rows)
    return rows


_last_run: tuple[BenchRow, ...] = ()


def last_run() -> tuple[BenchRow, ...]:
    """The rows of the latest completed ``run`` in this process (empty before the first)."""
    return _last_run


def _check(cancel: threading.Event | None) -> None:
    if cancel is not None and cancel.is_set():
        raise BenchCancelled("benchmark cancelled")


def _measure(method: str, files: BenchFiles, workers: int, device: Any, repeats: int, cancel: Any) -> BenchRow:
    loads = loads_per_repeat(files.size_mb, workers)
    extra: dict[str, float | None] = {}
    if method == "memcpy":
        speeds, corrupt, loads = memcpy_speeds(files.nbytes, max(5, 3 * repeats)), 0, 1
    elif method == "h2d":
        speeds, corrupt, loads = h2d_speeds(files.nbytes, device, max(5, 3 * repeats)), 0, 1
    elif method == "ours":
        speeds, corrupt, extra = _ours(files, workers, device, loads, repeats, cancel)
    elif method == "sync":
        loads = max(2, loads // workers)
        speeds, corrupt = _repeat(sync_peer(files, device), files.nbytes, loads, repeats, cancel)
    elif method == "mp_queue":
        with mp_queue_peer(files, workers, device) as once:
            speeds, corrupt = _repeat(once, files.nbytes, loads, repeats, cancel)
    else:
        with dataloader_peer(files, workers, loads, device) as once:
            speeds, corrupt = _repeat(once, files.nbytes, loads, repeats, cancel)
    return BenchRow(
        layout=files.layout,
        size_mb=files.size_mb,
        workers=workers,
        device=str(device) if device is not None else "cpu",
        method=method,
        mb_s=statistics.median(speeds),
        mb_s_min=min(speeds),
        mb_s_max=max(speeds),
        repeats=len(speeds),
        loads=loads,
        leaves=files.leaves,
        corrupt=corrupt,
        **extra,
    )


def _repeat(
    once: Callable[[int], int], nbytes: int, loads: int, repeats: int, cancel: Any
) -> tuple[list[float], int]:
    """Warm up once, then time up to ``repeats`` repeats (fewer when one is slower than the budget)."""
    started = time.perf_counter()
    once(loads)
    warm = time.perf_counter() - started
    speeds, corrupt = [], 0
    for _ in range(max(1, min(repeats, int(CELL_BUDGET_S / max(warm, 1e-9))))):
        _check(cancel)
        started = time.perf_counter()
        corrupt += once(loads)
        speeds.append(loads * nbytes / (time.perf_counter() - started) / 2**20)
    return speeds, corrupt


def _ours(
    files: BenchFiles, workers: int, device: Any, loads: int, repeats: int, cancel: Any
) -> tuple[list[float], int, dict[str, float | None]]:
    storages = [FileStorage(p) for p in files.paths]
    with FileStorageLoader(ttl=None, worker_num=workers) as loader:
        loader.start()

        def once(n: int) -> int:
            left, bad, errors = [n], [0], []
            finished = threading.Event()

            def count(extra_bad: int) -> None:
                bad[0] += extra_bad
                left[0] -= 1
                if left[0] == 0:
                    finished.set()

            def on_error(exc: BaseException) -> None:
                errors.append(exc)
                finished.set()  # one failure ends the repeat: no need to wait for the rest

            def checker(index: int) -> Callable[[Any], None]:
                def check(obj: Any) -> None:
                    try:
                        extra_bad = files.check(obj, index)
                    except BaseException as exc:  # the loader would only log it, and we would wait forever
                        on_error(exc)
                        return
                    count(extra_bad)

                return check

            for i in range(n):
                index = i % len(storages)
                loader.load(storages[index], checker(index), on_error=on_error, device=device)
            if not finished.wait(WAIT_S):
                raise TimeoutError("loader benchmark: deliveries did not arrive")
            if errors:
                raise errors[0]
            return bad[0]

        once(loads)  # first fill of the segment pool: mapped once, recycled afterwards
        loader.clear_timings()
        speeds, corrupt = _repeat(once, files.nbytes, loads, repeats, cancel)
        timings = [t for t in loader.timings() if t.ok]
    stages: dict[str, float | None] = {
        f"{stage}_ms": statistics.median(getattr(t, stage) for t in timings) * 1e3 if timings else None
        for stage in ("read", "handoff", "wait", "build", "h2d", "callback")
    }
    return speeds, corrupt, stages


def measure_startup(
    size_mb: float = 256, workers: int = 2, layout: str = "steps", directory: str | None = None
) -> Startup:
    """Seconds from ``FileStorageLoader(...)`` to the first payload of ``size_mb`` delivered (cache hot)."""
    with tempfile.TemporaryDirectory(prefix="inspector-bench-", dir=directory) as tmp:
        files = BenchFiles(tmp, layout, size_mb, tensors=False)
        storage = FileStorage(files.paths[0])
        started = time.perf_counter()
        with FileStorageLoader(ttl=None, worker_num=workers) as loader:
            obj = loader.load(storage).result(WAIT_S)
            seconds = time.perf_counter() - started
        if files.check(obj, 0):
            raise AssertionError("start-up measurement delivered a corrupt payload")
        del obj
        files.remove()
    return Startup(seconds, size_mb, workers)


def per_leaf_cost_us(workers: int = 2, leaves: int = 4096, loads: int = 40, directory: str | None = None) -> float:
    """Extra microseconds a load pays per array leaf: ``leaves`` tiny leaves versus one leaf of the same bytes."""
    with tempfile.TemporaryDirectory(prefix="inspector-bench-", dir=directory) as tmp:
        many, one = FileStorage(os.path.join(tmp, "many.istore")), FileStorage(os.path.join(tmp, "one.istore"))
        many.save([np.full(4, i, np.float32) for i in range(leaves)])
        one.save([np.zeros(4 * leaves, np.float32)])
        with FileStorageLoader(ttl=None, worker_num=workers) as loader:
            loader.start()
            medians = []
            for storage in (many, one, many, one):
                times = []
                for _ in range(loads):
                    started = time.perf_counter()
                    loader.load(storage).result(WAIT_S)
                    times.append(time.perf_counter() - started)
                medians.append(statistics.median(times))
    return max(0.0, (min(medians[0], medians[2]) - min(medians[1], medians[3])) / leaves * 1e6)
