"""What a loader owns, kept apart from the loader object, plus the process-wide exit and fork hooks.

The ``Core`` never refers back to its loader, so a loader that is dropped without ``shutdown``
is garbage-collected; its finalizer then shuts the core down on a helper thread once the loads
already submitted are delivered. ``atexit`` shuts down every core still running (see
NOTE [ Loader shutdown ] in ``pool.worker_pool``).

NOTE [ Loaders across fork ]
A child made by ``os.fork()`` (or a ``DataLoader`` worker forked from a process that holds a
loader) inherits the loader objects but none of their threads. Right after the fork, in the
child, every core *abandons* its pool: it takes none of the locks it inherited (a parent
thread may have held one at the fork, and nothing in the child would ever release it; each
part gets fresh ones), closes the inherited descriptors and sends nothing, so the parent's
workers keep serving the parent. Every future the child inherited still pending fails at once
with ``LoadForkedError`` (the load belongs to the parent, which completes it there). The core
also stops being the owner of anything the parent made: a private directory is the parent's to
remove, and the exit hook and finalizers of the child touch only what the child itself created.
A ``load`` in the child then starts the child's own workers and works as in any process. In
the parent, the segments that arrays the child inherited may view are never recycled (NOTE
[ Segment ownership ]), so what the child inherited never changes under it.
"""

from __future__ import annotations

import atexit
import collections
import itertools
import logging
import os
import sys
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from inspector.loader.pool.config import INLINE_BYTES, PoolConfig, no_reason
from inspector.loader.pool.records import LoaderStatus
from inspector.loader.pool.worker_pool import WorkerPool

if TYPE_CHECKING:
    from inspector.loader.pool.requests import Request

logger = logging.getLogger("inspector.loader")

TIMINGS_KEPT = 4096
EXIT_TIMEOUT_S = 2.0  # at exit, how long submitted loads may still finish
EXIT_JOIN_S = 2.0  # then how long to wait for the delivery thread (a callback may never return)
_live: weakref.WeakSet[Core] = weakref.WeakSet()
_numbers = itertools.count(1)


class Core:
    """A loader's pool (started on demand, restartable), its timings, and its clean-up and fork steps."""

    def __init__(
        self,
        kind: str,
        worker_num: int,
        why_missing: Callable[[str], str | None] = no_reason,
        inline_bytes: int = INLINE_BYTES,
    ) -> None:
        self.name = f"{kind}-{next(_numbers)}"
        self.timings: collections.deque[tuple[Any, ...]] = collections.deque(maxlen=TIMINGS_KEPT)  # LoadTiming marks
        self.config = PoolConfig(self.name, worker_num, why_missing, self.timings.append, inline_bytes=inline_bytes)
        self.closers: list[Callable[[float | None], None]] = []  # each given how long it may wait (None: no bound)
        self.forkers: list[Callable[[], None]] = []  # run in a forked child (NOTE [ Loaders across fork ])
        self._lock = threading.Lock()
        self._pool: WorkerPool | None = None
        _live.add(self)

    @property
    def worker_num(self) -> int:
        return self.config.worker_num

    @property
    def running(self) -> bool:
        pool = self._pool
        return pool is not None and not pool.stopped

    def pool(self) -> WorkerPool:
        with self._lock:
            if self._pool is not None and self._pool.stopped:
                self._pool = None  # its I/O thread crashed: it failed its requests and cleaned up after itself
            if self._pool is None:
                self._pool = WorkerPool(self.config)
            return self._pool

    def submit(self, request: Request) -> None:
        pool = self._pool
        if pool is not None and pool.submit(request):
            return
        while not self.pool().submit(request):
            pass  # that pool began shutting down, or crashed, a moment ago: pool() makes a new one

    def status(self) -> LoaderStatus:
        pool = self._pool
        if pool is not None:
            return pool.status()
        return LoaderStatus(self.name, False, self.worker_num, (), 0, 0, 0, 0, 0, 0, 0, 0)

    def shutdown(self, timeout: float | None, join_timeout: float | None = None) -> None:
        """Shut the pool down and tidy the files; interrupted (Ctrl-C), it goes on to the end on a helper thread."""
        pool = self._pool  # let go of only once it is down: an interrupt must not leave it running and unreachable
        try:
            self._finish_shutdown(pool, timeout, join_timeout)
        except BaseException:
            threading.Thread(
                target=self._finish_shutdown, args=(pool, timeout, join_timeout), name=f"{self.name}-close", daemon=True
            ).start()
            raise

    def _finish_shutdown(self, pool: WorkerPool | None, timeout: float | None, join_timeout: float | None) -> None:
        if pool is not None:
            pool.shutdown(timeout, join_timeout)  # any number of times, from any thread: each goes on to the end
            with self._lock:
                if self._pool is pool:
                    self._pool = None
        for close in self.closers:
            close(join_timeout)

    def close_when_idle(self) -> None:
        """The loader object was dropped: finish what was submitted, then shut down."""
        if sys.is_finalizing():
            return
        if self._pool is None:  # nothing is running: only the files to tidy (idempotent, quick)
            self.shutdown(None)
            return
        threading.Thread(target=self.shutdown, args=(None,), name=f"{self.name}-close", daemon=True).start()

    def after_fork_in_child(self) -> None:
        """See NOTE [ Loaders across fork ]."""
        self._lock = threading.Lock()  # another thread may have held it at the fork
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.abandon()
        self.timings.clear()
        for forker in self.forkers:
            forker()


def loader_statuses() -> tuple[LoaderStatus, ...]:
    """A snapshot of every loader in this process that has not been garbage-collected."""
    return tuple(core.status() for core in sorted(list(_live), key=lambda c: c.name))


def _shutdown_all_at_exit() -> None:
    for core in list(_live):
        try:
            core.shutdown(EXIT_TIMEOUT_S, EXIT_JOIN_S)
        except Exception:
            logger.exception("inspector.loader: shutting down %s at exit failed", core.name)


def _after_fork_in_child() -> None:
    for core in list(_live):
        try:
            core.after_fork_in_child()
        except Exception:  # a forked child must come up whatever happened to one loader
            logger.exception("inspector.loader: resetting %s after fork failed", core.name)


atexit.register(_shutdown_all_at_exit)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
