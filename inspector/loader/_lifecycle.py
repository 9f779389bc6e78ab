"""What a loader owns, kept apart from the loader object, plus the process-wide exit hook.

The ``Core`` never refers back to its loader, so a loader that is dropped without ``shutdown``
is garbage-collected; its finalizer then shuts the core down on a helper thread once the loads
already submitted are delivered. ``atexit`` shuts down every core still running (see
NOTE [ Loader shutdown ] in ``_pool``); it is registered after ``multiprocessing`` so it runs
before multiprocessing's own exit hook terminates the workers under our feet.
"""

from __future__ import annotations

import atexit
import collections
import itertools
import logging
import sys
import threading
import weakref
from collections.abc import Callable

from inspector.loader._delivery import Request
from inspector.loader._pool import WorkerPool
from inspector.loader._records import LoaderStatus, LoadTiming

logger = logging.getLogger("inspector.loader")

TIMINGS_KEPT = 4096
EXIT_TIMEOUT_S = 2.0  # at exit, how long submitted loads may still finish
EXIT_JOIN_S = 2.0  # then how long to wait for the delivery thread (a callback may never return)
_live: weakref.WeakSet[Core] = weakref.WeakSet()
_numbers = itertools.count(1)


class Core:
    """A loader's pool (started on demand, restartable), its timings and its clean-up steps."""

    def __init__(self, kind: str, worker_num: int, start_method: str, why_missing: Callable[[str], str | None]):
        self.name = f"{kind}-{next(_numbers)}"
        self.worker_num = worker_num
        self.start_method = start_method
        self.timings: collections.deque[LoadTiming] = collections.deque(maxlen=TIMINGS_KEPT)
        self.closers: list[Callable[[], None]] = []
        self._why_missing = why_missing
        self._lock = threading.Lock()
        self._pool: WorkerPool | None = None
        _live.add(self)

    @property
    def running(self) -> bool:
        pool = self._pool
        return pool is not None and not pool.stopped

    def pool(self) -> WorkerPool:
        with self._lock:
            if self._pool is not None and self._pool.stopped:
                self._pool = None  # its I/O thread crashed: it failed its requests and cleaned up after itself
            if self._pool is None:
                self._pool = WorkerPool(
                    self.name, self.worker_num, self.start_method, self.timings.append, self._why_missing
                )
            return self._pool

    def submit(self, request: Request) -> None:
        while not self.pool().submit(request):
            pass  # that pool began shutting down, or crashed, a moment ago: pool() makes a new one

    def status(self) -> LoaderStatus:
        pool = self._pool
        if pool is not None:
            return pool.status()
        return LoaderStatus(self.name, False, self.worker_num, self.start_method, (), 0, 0, 0, 0, 0, 0, 0, 0)

    def shutdown(self, timeout: float | None, join_timeout: float | None = None) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(timeout, join_timeout)
        for close in self.closers:
            close()

    def close_when_idle(self) -> None:
        """The loader object was dropped: finish what was submitted, then shut down."""
        if sys.is_finalizing():
            return
        if self._pool is None:  # nothing is running: only the files to tidy (idempotent, quick)
            self.shutdown(None)
            return
        threading.Thread(target=self.shutdown, args=(None,), name=f"{self.name}-close", daemon=True).start()


def loader_statuses() -> tuple[LoaderStatus, ...]:
    """A snapshot of every loader in this process that has not been garbage-collected."""
    return tuple(core.status() for core in sorted(list(_live), key=lambda c: c.name))


def _shutdown_all_at_exit() -> None:
    for core in list(_live):
        try:
            core.shutdown(EXIT_TIMEOUT_S, EXIT_JOIN_S)
        except Exception:
            logger.exception("inspector.loader: shutting down %s at exit failed", core.name)


atexit.register(_shutdown_all_at_exit)
