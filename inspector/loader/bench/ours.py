"""The inspector loader's own cells of the benchmark: throughput with stage timings, start-up, cost per leaf."""

from __future__ import annotations

import contextlib
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from inspector.loader._loaders import FileStorageLoader
from inspector.loader.bench.peers import WAIT_S, BenchFiles
from inspector.loader.bench.rows import Startup
from inspector.loader.storage.handles import FileStorage

STAGES_MS = ("read", "handoff", "wait", "build", "h2d", "callback")


@contextlib.contextmanager
def ours_once(files: BenchFiles, workers: int, device: Any) -> Iterator[tuple[Callable[[int], int], Any]]:
    """(``once``, the loader): ``once(n)`` makes ``n`` loads of ``files`` with a checking callback each and waits for
    them; the corrupt count. The loader (started) lives as long as the block."""
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
                def check_delivery(obj: Any) -> None:
                    try:
                        extra_bad = files.check(obj, index)
                    except BaseException as exc:  # the loader would only log it, and we would wait forever
                        on_error(exc)
                        return
                    count(extra_bad)

                return check_delivery

            for i in range(n):
                index = i % len(storages)
                loader.load(storages[index], checker(index), on_error=on_error, device=device)
            if not finished.wait(WAIT_S):
                raise TimeoutError("loader benchmark: deliveries did not arrive")
            if errors:
                raise errors[0]
            return bad[0]

        yield once, loader


def ours_speeds(
    files: BenchFiles, workers: int, device: Any, loads: int, repeats: int, check: Callable[[], None]
) -> tuple[list[float], int, dict[str, float | None]]:
    """MiB/s per timed repeat, corrupt deliveries, and the median stage times (ms) of our loader."""
    with ours_once(files, workers, device) as (once, loader):
        once(loads)  # warm-up, and the first fill of the segment pool: mapped once, recycled afterwards
        loader.clear_timings()
        speeds, corrupt = [], 0
        for _ in range(repeats):
            check()
            started = time.perf_counter()
            corrupt += once(loads)
            speeds.append(loads * files.nbytes / (time.perf_counter() - started) / 2**20)
        timings = [t for t in loader.timings() if t.ok]
    stages: dict[str, float | None] = {
        f"{stage}_ms": statistics.median(getattr(t, stage) for t in timings) * 1e3 if timings else None
        for stage in STAGES_MS
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
