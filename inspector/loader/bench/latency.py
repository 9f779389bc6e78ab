"""The round trip of one small load, against a bare ``multiprocessing`` pipe round trip measured in the same run.

The loader's time for a small payload is almost all fixed cost: the request to a worker, its
reply, and building the object. The floor for any design that reads in another process is one
message there and one back, so ``small_load_latency`` times, in one run and on the same machine:

    pipe     a ``multiprocessing.Pipe`` round trip to a child process that echoes a small tuple
    loader   ``loader.load(storage).result()`` of a 1 KiB payload, workers started and warm

and reports both as ``Spread``s of microseconds, after a warm-up, with their ratio (NOTE [ Numbers
a researcher can trust ] in ``stats``). Both stay up for the whole measurement and take turns in
short rounds (which goes first alternates), so a change in the machine's load or in its cores'
sleep states hits both alike; each round's ratio is kept too, so the spread of the ratio shows.
The echo child is a fresh interpreter, like the workers, so this also runs from a script without
a main guard.
"""

from __future__ import annotations

import contextlib
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from multiprocessing.connection import Connection, Pipe
from typing import Any

import numpy as np

from inspector._processes import wait_or_kill
from inspector.loader._loaders import FileStorageLoader
from inspector.loader.bench.stats import MachineLoad, Spread, machine_load

_ECHO = (
    "import sys\n"
    "from multiprocessing.connection import Connection\n"
    "c = Connection(int(sys.argv[1]))\n"
    "while (m := c.recv()) is not None:\n"
    "    c.send(m)\n"
)


@dataclass(frozen=True)
class LatencyResult:
    """Microseconds per round trip: the loader's small load and the bare pipe, and their ratio."""

    loader_us: Spread
    pipe_us: Spread
    payload_bytes: int
    workers: int
    machine: MachineLoad
    round_ratios: tuple[float, ...] = ()  # each round's median ratio, in the order measured

    @property
    def ratio(self) -> float:
        """The median of the rounds' ratios (each the loader's median over the pipe's in that round), or of all
        samples when there were no rounds; the target is at most 3."""
        if self.round_ratios:
            return statistics.median(self.round_ratios)
        return self.loader_us.median / self.pipe_us.median

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": self.ratio}


@contextlib.contextmanager
def pipe_round_trip() -> Iterator[Callable[[], None]]:
    """One round trip to an echoing child through a ``multiprocessing.Pipe`` (the baseline), while the child lives."""
    ours, theirs = Pipe(duplex=True)
    assert isinstance(theirs, Connection)
    child = subprocess.Popen(
        [sys.executable, "-c", _ECHO, str(theirs.fileno())], pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL
    )
    theirs.close()
    message = ("load", 1, "/a/storage/file.istore", 3)

    def round_trip() -> None:
        ours.send(message)
        ours.recv()

    try:
        yield round_trip
    finally:
        ours.send(None)
        ours.close()
        wait_or_kill(child, 10.0)


@contextlib.contextmanager
def loader_round_trip(workers: int, payload_bytes: int) -> Iterator[Callable[[], None]]:
    """``loader.load(storage).result()`` of a small storage file, workers started, while the loader lives."""
    with (
        tempfile.TemporaryDirectory(prefix="inspector-bench-") as tmp,
        FileStorageLoader(tmp, ttl=None, worker_num=workers) as loader,
    ):
        storage = loader.save({"payload": np.zeros(payload_bytes, np.uint8)})
        loader.start()
        yield lambda: loader.load(storage).result(60)


def small_load_latency(
    count: int = 2000, warmup: int = 200, workers: int = 2, payload_bytes: int = 1024, rounds: int = 10
) -> LatencyResult:
    """Both round trips, ``count`` of each after ``warmup`` untimed ones, taking turns in ``rounds`` rounds.

    >>> result = small_load_latency(count=500)  # doctest: +SKIP
    >>> f"{result.loader_us.median:.0f} us, {result.ratio:.1f}x a pipe round trip"  # doctest: +SKIP
    """
    if count < 2 or warmup < 0 or workers < 1 or payload_bytes < 0 or not 1 <= rounds <= count:
        raise ValueError("count must be >= 2, warmup >= 0, workers >= 1, payload_bytes >= 0 and 1 <= rounds <= count")
    machine = machine_load()
    pipe: list[float] = []
    loader: list[float] = []
    ratios = []
    with pipe_round_trip() as pipe_once, loader_round_trip(workers, payload_bytes) as loader_once:
        _timed(pipe_once, 0, warmup)
        _timed(loader_once, 0, warmup)
        for r in range(rounds):
            n = count // rounds + (1 if r < count % rounds else 0)
            if r % 2:
                ours, theirs = _timed(loader_once, n, 0), _timed(pipe_once, n, 0)
            else:
                theirs, ours = _timed(pipe_once, n, 0), _timed(loader_once, n, 0)
            ratios.append(statistics.median(ours) / statistics.median(theirs))
            loader += ours
            pipe += theirs
    return LatencyResult(
        Spread.of(loader).scaled(1e6), Spread.of(pipe).scaled(1e6), payload_bytes, workers, machine, tuple(ratios)
    )


def _timed(fn: Callable[[], Any], count: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(count):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return times
