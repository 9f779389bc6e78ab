"""The payloads ``bench`` moves and the baselines it runs (top-level, so spawned workers can import them)."""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import queue
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from inspector._interrupts import interrupts_deferred
from inspector.loader.storage.handles import FileStorage

STEP_SHAPE = (4, 84, 84)  # float32: 112,896 bytes, the ~100 KiB leaf of an Atari-style step
_STEP_BYTES = 2 * 4 * math.prod(STEP_SHAPE) + 4 + 8
LAYOUTS = ("steps", "columnar")
WAIT_S = 300.0
QUEUE_POLL_S = 0.5  # how often an idle queue baseline worker checks that its parent still lives


def payload(layout: str, size_mb: float, marker: float, tensors: bool = False) -> tuple[Any, int, int]:
    """(object, array bytes, array leaves) of about ``size_mb`` MiB; every leaf carries ``marker``."""
    count = max(1, round(size_mb * 2**20 / _STEP_BYTES))
    if layout == "steps":
        obj: Any = [
            {
                "obs": np.full(STEP_SHAPE, marker, np.float32),
                "next_obs": np.full(STEP_SHAPE, marker, np.float32),
                "reward": np.array([marker], np.float32),
                "action": np.array([i], np.int64),
                "done": i == count - 1,
            }
            for i in range(count)
        ]
        leaves = 4 * count
    elif layout == "columnar":
        obj = {
            "obs": np.full((count, *STEP_SHAPE), marker, np.float32),
            "next_obs": np.full((count, *STEP_SHAPE), marker, np.float32),
            "reward": np.full((count,), marker, np.float32),
            "action": np.arange(count, dtype=np.int64),
        }
        leaves = 4
    else:
        raise ValueError(f"Unknown layout {layout!r}. Known: {list(LAYOUTS)}")
    if tensors:
        obj = _to_tensors(obj)
    return obj, count * _STEP_BYTES, leaves


def _to_tensors(obj: Any) -> Any:
    import torch

    if isinstance(obj, np.ndarray):
        return torch.from_numpy(obj)
    if isinstance(obj, dict):
        return {k: _to_tensors(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_to_tensors(v) for v in obj]
    return obj


def markers(obj: Any) -> set[float]:
    """The marker values found at the first, middle and last leaves (one value when intact)."""
    if isinstance(obj, dict):
        probes = [obj["obs"], obj["next_obs"], obj["reward"]]
        return {float(p.reshape(-1)[i]) for p in probes for i in (0, -1)}
    middle = obj[len(obj) // 2]
    found = {float(step["reward"][0]) for step in (obj[0], middle, obj[-1])}
    return found | {float(obj[-1]["obs"].reshape(-1)[-1]), float(obj[0]["next_obs"].reshape(-1)[0])}


class BenchFiles:
    """The storage files of one layout and size, written and read once (page cache hot)."""

    def __init__(self, tmp: str, layout: str, size_mb: float, tensors: bool) -> None:
        self.layout, self.size_mb = layout, size_mb
        count = 2 if size_mb >= 64 else 4
        self.paths: list[str] = []
        self.markers: list[float] = []
        for k in range(count):
            obj, self.nbytes, self.leaves = payload(layout, size_mb, float(k + 1), tensors)
            path = os.path.join(tmp, f"{layout}-{size_mb:g}-{k}.istore")
            FileStorage(path).save(obj)
            del obj
            with open(path, "rb") as file:
                while file.read(1 << 24):
                    pass
            self.paths.append(path)
            self.markers.append(float(k + 1))

    def check(self, obj: Any, index: int | None) -> int:
        """0 when ``obj`` is intact (and from file ``index`` when given), else 1."""
        found = markers(obj)
        if index is not None:
            return int(found != {self.markers[index % len(self.markers)]})
        return int(len(found) != 1 or not found <= set(self.markers))

    def remove(self) -> None:
        for path in self.paths:
            os.unlink(path)


Once = Callable[[int], int]  # load n payloads, return how many arrived corrupt


def memcpy_speeds(nbytes: int, repeats: int) -> list[float]:
    """The ceiling: one thread copying ``nbytes`` into memory already touched, MiB/s per repeat."""
    source = np.ones(nbytes, np.uint8)
    target = np.zeros(nbytes, np.uint8)  # touched: every page is mapped before timing
    speeds = []
    for _ in range(repeats):
        started = time.perf_counter()
        np.copyto(target, source)
        speeds.append(nbytes / (time.perf_counter() - started) / 2**20)
    return speeds


def h2d_speeds(nbytes: int, device: Any, repeats: int) -> list[float]:
    """The device ceiling: one pinned host-to-device copy of ``nbytes``, MiB/s per repeat."""
    import torch

    source = torch.ones(nbytes, dtype=torch.uint8).pin_memory()
    target = torch.empty(nbytes, dtype=torch.uint8, device=device)
    speeds = []
    for _ in range(repeats):
        torch.cuda.synchronize(device)
        started = time.perf_counter()
        target.copy_(source, non_blocking=True)
        torch.cuda.synchronize(device)
        speeds.append(nbytes / (time.perf_counter() - started) / 2**20)
    return speeds


def to_device(obj: Any, device: Any, non_blocking: bool = False) -> Any:
    """Every tensor in ``obj`` moved to ``device`` (what a user of the baselines would do), synchronized."""
    moved = _move(obj, device, non_blocking)
    if device is not None:
        import torch

        torch.cuda.synchronize(device)
    return moved


def _move(obj: Any, device: Any, non_blocking: bool) -> Any:
    if hasattr(obj, "to") and hasattr(obj, "is_cuda"):
        return obj.to(device, non_blocking=non_blocking)
    if isinstance(obj, dict):
        return {k: _move(v, device, non_blocking) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_move(v, device, non_blocking) for v in obj]
    return obj


def sync_peer(files: BenchFiles, device: Any) -> Once:
    """``FileStorage.load()`` in the calling thread, one payload after another."""

    def once(loads: int) -> int:
        corrupt = 0
        for i in range(loads):
            obj = FileStorage(files.paths[i % len(files.paths)]).load()
            if device is not None:
                obj = to_device(obj, device)
            corrupt += files.check(obj, i)
        return corrupt

    return once


@contextlib.contextmanager
def mp_queue_peer(files: BenchFiles, workers: int, device: Any) -> Iterator[Once]:
    """Worker processes load and put the arrays on a ``multiprocessing.Queue`` (pickled through a pipe)."""
    ctx = multiprocessing.get_context("spawn")
    with interrupts_deferred():  # a Ctrl-C inside a queue's construction would leak its semaphores
        tasks, results = ctx.Queue(), ctx.Queue()
    processes: list[Any] = []

    def once(loads: int) -> int:
        for i in range(loads):
            tasks.put(i % len(files.paths))
        corrupt = 0
        for _ in range(loads):
            obj = results.get(timeout=WAIT_S)
            if device is not None:
                obj = to_device(obj, device)
            corrupt += files.check(obj, None)  # results arrive in any order
        return corrupt

    try:
        with interrupts_deferred():  # so every started worker is listed, and told to stop below
            for _ in range(workers):
                process = ctx.Process(target=queue_worker, args=(files.paths, tasks, results, os.getpid()), daemon=True)
                process.start()
                processes.append(process)
        yield once
    finally:
        for _ in processes:
            tasks.put(None)
        for process in processes:
            process.join(10)
            if process.is_alive():
                process.kill()
                process.join(5)
        tasks.close()
        results.close()


@contextlib.contextmanager
def dataloader_peer(files: BenchFiles, workers: int, device: Any, total: int) -> Iterator[Once]:
    """``torch.utils.data.DataLoader`` with ``workers`` workers over one epoch of ``total`` payloads + 1.

    The first payload is taken here, untimed (it waits for the workers to start); each ``once(n)``
    then takes the next ``n``. The epoch must be used up (``finish``), as a training loop would:
    a worker stopped in the middle of a large payload is killed, and torch reports it as an error.
    """
    from torch.utils.data import DataLoader

    loader: DataLoader[Any] = DataLoader(
        FileDataset(files.paths, total + 1),  # type: ignore[arg-type]
        batch_size=None,
        num_workers=workers,
        multiprocessing_context="spawn",
        pin_memory=device is not None,
    )
    with interrupts_deferred():  # iter() makes the workers' queues: a Ctrl-C there would leak semaphores
        iterator = iter(loader)
    next(iterator)
    position = [1]

    def once(n: int) -> int:
        corrupt = 0
        for _ in range(n):
            obj = next(iterator)
            if device is not None:
                obj = to_device(obj, device, non_blocking=True)
            corrupt += files.check(obj, position[0])
            position[0] += 1
        return corrupt

    try:
        yield once
        for _ in iterator:  # whatever the caller did not take, so every worker ends its epoch cleanly
            pass
    finally:
        shutdown = getattr(iterator, "_shutdown_workers", None)
        if shutdown is not None:
            shutdown()


def queue_worker(paths: list[str], tasks: Any, results: Any, parent: int | None = None) -> None:
    """The ``multiprocessing.Queue`` baseline: load in a worker, pickle the arrays back through a pipe.

    It ends on ``None``, and on its own once ``parent`` (the benchmark's pid; default: this process's parent now) has
    gone: a benchmark killed before it sent the stops leaves no worker waiting on the queue forever.
    """
    parent = os.getppid() if parent is None else parent
    while True:
        try:
            index = tasks.get(timeout=QUEUE_POLL_S)
        except queue.Empty:
            if os.getppid() != parent:  # orphaned: nobody will ask for more, nor send the stop
                return
            continue
        if index is None:
            return
        results.put(FileStorage(paths[index]).load())


class FileDataset:
    """The ``torch DataLoader`` baseline's dataset: item ``i`` is file ``i mod len(paths)``."""

    def __init__(self, paths: list[str], length: int) -> None:
        self.paths = paths
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> Any:
        return FileStorage(self.paths[index % len(self.paths)]).load()
