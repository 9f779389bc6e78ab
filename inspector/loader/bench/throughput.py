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

Each row gives the median MiB/s and its spread over the timed repeats, and
counts deliveries whose marker values did not match the file they came from (always 0 for
ours); timings follow NOTE [ Numbers a researcher can trust ] in ``stats``. Every run, and
every cancelled run with what it measured, is appended to the history (``history``).
"""

from __future__ import annotations

import math
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from inspector._messages import Message
from inspector.loader.bench.history import keep_run
from inspector.loader.bench.ours import ours_speeds
from inspector.loader.bench.peers import (
    LAYOUTS,
    BenchFiles,
    Once,
    dataloader_peer,
    h2d_speeds,
    memcpy_speeds,
    mp_queue_peer,
    sync_peer,
)
from inspector.loader.bench.rows import METHOD_LABELS, METHODS, WORKERLESS, BenchCancelled, BenchResults, BenchRow
from inspector.loader.bench.stats import Spread, machine_load
from inspector.loader.bench.time_left import bench_plan, time_left_reporter
from inspector.loader.pool.cuda import resolve_device
from inspector.loader.pool.shared_segment import available_memory

if TYPE_CHECKING:
    from inspector._bench import Progress

RUN_CAP_S = 2.0  # one timed repeat of a slow baseline moves fewer payloads so it takes about this long
CELL_BUDGET_S = 6.0  # and a cell stops repeating once its repeats have taken this long
MAX_SIZE_MB = 4096.0
SIZES_STEP = "pass sizes such as 1,16,64"
MEMORY_FACTOR = 12  # a run holds about this many payloads of its largest size at once (files, segments, copies)


def check_sizes(sizes_mb: Sequence[float], available: int | None = None) -> list[float]:
    """The payload sizes as floats, or ``ValueError`` naming the next step: each finite, positive and affordable."""
    sizes = []
    for size in sizes_mb:
        try:
            value = float(size)
        except (TypeError, ValueError):
            message = Message(f"size {size!r} is not a number of MiB", next_step=SIZES_STEP)
            raise ValueError(message.one_line()) from None
        if not math.isfinite(value) or value <= 0 or value > MAX_SIZE_MB:
            headline = f"size {size!r} MiB is out of range: each size must be > 0 and <= {MAX_SIZE_MB:g} MiB"
            raise ValueError(Message(headline, next_step=SIZES_STEP).one_line())
        sizes.append(value)
    if not sizes:
        raise ValueError(Message("no payload sizes given", next_step=SIZES_STEP).one_line())
    room = available_memory() if available is None else available
    need = max(sizes) * 2**20 * MEMORY_FACTOR
    if room is not None and need > room:
        headline = (
            f"a {max(sizes):g} MiB payload needs about {need / 2**30:.1f} GiB for this benchmark but "
            f"only {room / 2**30:.1f} GiB of memory is available"
        )
        raise ValueError(Message(headline, next_step="use smaller sizes").one_line())
    return sizes


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
    keep_history: bool = True,
    label: str = "",
) -> BenchResults:
    """Measure every method on every layout, size and worker count; see the module docstring.

    Raises ``BenchCancelled`` (with ``.rows``, what was measured) when ``cancel`` is set; that run, or one
    stopped by ``KeyboardInterrupt``, is kept in the history as cancelled, with the rows measured so far.
    A finished run is kept with its targets (and their baselines) and ``label``.

    >>> rows = run(sizes_mb=(1,), workers=(2,), methods=("ours", "sync", "memcpy"))  # doctest: +SKIP
    """
    unknown = [m for m in methods if m not in (*METHODS, "h2d")]
    if unknown:
        raise ValueError(f"Unknown methods {unknown}. Known: {[*METHODS, 'h2d']}")
    bad_layouts = [layout for layout in layouts if layout not in LAYOUTS]
    if bad_layouts:
        raise ValueError(f"Unknown layouts {bad_layouts}. Known: {list(LAYOUTS)}")
    if repeats < 1 or not sizes_mb or not workers or any(w < 1 for w in workers):
        raise ValueError("repeats, sizes_mb and workers must be non-empty and positive")
    sizes = check_sizes(sizes_mb)
    target = resolve_device(device)
    methods = list(methods) + (["h2d"] if target is not None and "h2d" not in methods else [])
    plan = bench_plan(layouts, sizes, workers, methods, WORKERLESS)
    settings = {
        "sizes_mb": sizes,
        "workers": list(workers),
        "device": str(target) if target else "cpu",
        "repeats": repeats,
        "layouts": list(layouts),
        "methods": list(methods),
    }
    report = time_left_reporter(progress, plan)
    rows: list[BenchRow] = []
    try:
        with tempfile.TemporaryDirectory(prefix="inspector-bench-", dir=directory) as tmp:
            for layout in layouts:
                for size in sizes:
                    files = BenchFiles(tmp, layout, size, tensors=target is not None)
                    try:
                        for cell_layout, cell_size, w, method in plan:
                            if (cell_layout, cell_size) != (layout, size):
                                continue
                            _check(cancel, rows)
                            report(len(rows), f"{layout} {size:g} MiB: {METHOD_LABELS[method]}, {w} workers")
                            cell_workers = w if method not in WORKERLESS else 1
                            row = _measure(method, files, cell_workers, target, repeats, cancel, rows)
                            rows.append(row)
                            if on_row is not None:
                                on_row(row)
                    finally:
                        files.remove()
    except (BenchCancelled, KeyboardInterrupt):  # Ctrl-C keeps what was measured, as Cancel does
        if keep_history:
            _keep(rows, cancelled=True, settings=settings, label=label)
        raise
    report(len(rows), "done")
    if keep_history:
        _keep(rows, settings=settings, label=label)
    global _last_run
    _last_run = tuple(rows)
    return BenchResults(rows)


_last_run: tuple[BenchRow, ...] = ()


def _keep(rows: Sequence[BenchRow], **options: Any) -> None:
    """Keep the run in the history as best effort: a history that cannot be written loses no result."""
    from inspector.loader.bench.targets import throughput_targets

    targets = throughput_targets(rows) if any(r.method == "memcpy" for r in rows) else []
    problem = keep_run("loader", rows, targets, **options)
    if problem:
        warnings.warn(problem, RuntimeWarning, stacklevel=3)


def last_run() -> tuple[BenchRow, ...]:
    """The rows of the latest completed ``run`` in this process (empty before the first)."""
    return _last_run


def _check(cancel: threading.Event | None, rows: Sequence[BenchRow]) -> None:
    if cancel is not None and cancel.is_set():
        raise BenchCancelled(rows)


def _measure(
    method: str, files: BenchFiles, workers: int, device: Any, repeats: int, cancel: Any, rows: Sequence[BenchRow]
) -> BenchRow:
    machine = machine_load()
    loads = loads_per_repeat(files.size_mb, workers)
    extra: dict[str, float | None] = {}
    capped = False
    check = lambda: _check(cancel, rows)
    if method == "memcpy":
        speeds, corrupt, loads = memcpy_speeds(files.nbytes, max(5, 3 * repeats)), 0, 1
    elif method == "h2d":
        speeds, corrupt, loads = h2d_speeds(files.nbytes, device, max(5, 3 * repeats)), 0, 1
    elif method == "ours":
        speeds, corrupt, extra = ours_speeds(files, workers, device, loads, repeats, check)
    elif method == "sync":
        loads = max(2, loads // workers)
        speeds, corrupt, loads, capped = _repeat(sync_peer(files, device), files.nbytes, loads, repeats, check)
    elif method == "mp_queue":
        with mp_queue_peer(files, workers, device) as once:
            speeds, corrupt, loads, capped = _repeat(once, files.nbytes, loads, repeats, check)
    else:
        speeds, corrupt, loads, capped = _dataloader(files, workers, device, loads, repeats, check)
    spread = Spread.of(speeds)
    return BenchRow(
        layout=files.layout,
        size_mb=files.size_mb,
        workers=workers,
        device=str(device) if device is not None else "cpu",
        method=method,
        mb_s=spread.median,
        mb_s_min=spread.min,
        mb_s_max=spread.max,
        repeats=spread.count,
        loads=loads,
        leaves=files.leaves,
        corrupt=corrupt,
        capped=capped,
        load_average=machine.load_average,
        cores=machine.cores,
        **extra,
    )


def _fitted(per_load: float, warm: int, loads: int) -> int:
    """Payloads per timed repeat: ``loads``, or fewer so one repeat takes about ``RUN_CAP_S``."""
    return max(warm, min(loads, int(RUN_CAP_S / max(per_load, 1e-9))))


def _dataloader(
    files: BenchFiles, workers: int, device: Any, loads: int, repeats: int, check: Callable[[], None]
) -> tuple[list[float], int, int, bool]:
    """Like ``_repeat``, for a DataLoader: a short epoch sizes the repeats, then one epoch holds them all."""
    warm = 2  # the slowest baseline: its repeats may be as short as two payloads
    with dataloader_peer(files, workers, device, warm) as once:
        started = time.perf_counter()
        once(warm)
        per_load = (time.perf_counter() - started) / warm
    fitted = _fitted(per_load, warm, loads)
    speeds, corrupt = [], 0
    with dataloader_peer(files, workers, device, fitted * repeats) as once:
        for _ in range(repeats):
            check()
            started = time.perf_counter()
            corrupt += once(fitted)
            speeds.append(fitted * files.nbytes / (time.perf_counter() - started) / 2**20)
    return speeds, corrupt, fitted, fitted < loads


def _repeat(
    once: Once, nbytes: int, loads: int, repeats: int, check: Callable[[], None]
) -> tuple[list[float], int, int, bool]:
    """Warm up, then time up to ``repeats`` repeats: (MiB/s per repeat, corrupt, loads per repeat, capped).

    The warm-up moves a few payloads and sizes the repeats: a slow method moves fewer payloads per
    repeat (about ``RUN_CAP_S`` each) and stops repeating after ``CELL_BUDGET_S``.
    """
    warm = max(2, min(loads, 8))
    started = time.perf_counter()
    once(warm)
    per_load = (time.perf_counter() - started) / warm
    fitted = _fitted(per_load, warm, loads)
    capped = fitted < loads
    speeds, corrupt = [], 0
    cell_started = time.perf_counter()
    for i in range(repeats):
        if i and time.perf_counter() - cell_started > CELL_BUDGET_S:
            capped = True
            break
        check()
        started = time.perf_counter()
        corrupt += once(fitted)
        speeds.append(fitted * nbytes / (time.perf_counter() - started) / 2**20)
    return speeds, corrupt, fitted, capped
