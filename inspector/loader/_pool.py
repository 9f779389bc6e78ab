"""The worker pool: its public face, the bookkeeping of requests, and a shutdown that leaves nothing.

The I/O thread's loop lives in ``_io_loop`` (NOTE [ Request flow ]), the worker processes in
``_workers`` (NOTE [ Worker protocol ]).

NOTE [ Loader shutdown ]
``shutdown(timeout)`` stops accepting work, waits (up to ``timeout``) until every submitted
request has been delivered or failed, then the I/O thread sends each worker "stop", joins it,
and terminates or kills what has not exited within ``_workers.STOP_GRACE_S``. Whatever was still queued
or in flight fails with ``LoaderShutdownError``, so no future stays pending. Then the delivery
thread drains and stops, and the segment pool drops every segment (those still leased to
delivered arrays live on, unnamed, until the arrays die). Workers also exit on their own when
the parent's socket closes or the parent pid changes, which covers a parent killed with -9; an
``atexit`` hook (``_lifecycle``) shuts down loaders still running at interpreter exit, with
bounded waits for our (daemon) threads, so a callback that never returns cannot hold the
interpreter open. Calling ``shutdown`` from inside a callback is allowed: it does not wait for
itself. A pool whose I/O thread crashed has already failed its requests (``LoaderCrashedError``)
and stopped its workers, so ``shutdown`` does not wait for them. If a worker cannot be started
while the pool starts, those already started are stopped before the ``WorkerSpawnError`` propagates.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import multiprocessing
import os
import threading
import time
from collections import deque
from collections.abc import Callable

from inspector.loader._cuda import StagingPool
from inspector.loader._delivery import Deliverer, Failed, Item, Request
from inspector.loader._errors import LoaderCrashedError, LoaderShutdownError
from inspector.loader._io_loop import DEPTH, POLL_INTERVAL_S, IOLoop
from inspector.loader._records import LoaderStatus, LoadTiming, WorkerStatus
from inspector.loader._segments import SegmentPool
from inspector.loader._workers import STOP_GRACE_S, WorkerHandle, start_worker, stop_workers

logger = logging.getLogger("inspector.loader")

_sessions = itertools.count()


class WorkerPool(IOLoop):
    """Workers, the I/O thread and the delivery thread of one running loader (see the NOTEs above)."""

    def __init__(
        self,
        name: str,
        worker_num: int,
        start_method: str,
        record: Callable[[LoadTiming], None],
        why_missing: Callable[[str], str | None],
    ) -> None:
        self.name = name
        self.worker_num = worker_num
        self.start_method = start_method
        self._ctx = multiprocessing.get_context(start_method)
        self._why_missing = why_missing
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._pending: deque[Request] = deque()
        self._workers: list[WorkerHandle] = []
        self._restarts = [0] * worker_num
        self._open = self._undelivered = self._done = self._failed = 0
        self._reserved = 0  # segment bytes held by requests in flight or awaiting delivery
        self._start_failures = 0
        self._broken: BaseException | None = None
        self._exit = False
        self._stopped = False  # submit() refuses: shutdown() was called or the I/O thread crashed
        self._shut = False  # shutdown() was called
        self._keys = itertools.count()
        self._max_outstanding = worker_num * (DEPTH + 1)
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self._wake_open = True
        self._wake_pending = False
        self._throttled = False
        prefix = f"inspector-loader-{os.getpid()}-{next(_sessions)}"
        self._segments = SegmentPool(prefix, max_free=self._max_outstanding + 2)
        self._staging = StagingPool()
        self._deliverer = Deliverer(self._segments, self._finished, record, self._staging)
        try:
            for i in range(worker_num):  # one at a time, so a failure can stop those already started
                self._workers.append(self._spawn(i))
        except BaseException:
            self._exit = True
            self._teardown()
            self._deliverer.stop(after=self._release)
            raise
        self._thread = threading.Thread(target=self._run, name=f"{name}-io", daemon=True)
        self._thread.start()

    # ---- called from any thread -------------------------------------------------------------
    def submit(self, request: Request) -> bool:
        """Queue ``request``; False when this pool is already shutting down (use a new one)."""
        with self._lock:
            if self._stopped:
                return False
            self._open += 1
            self._pending.append(request)
        self._wake()
        return True

    def status(self) -> LoaderStatus:
        counts = self._segments.counts()
        with self._lock:
            workers = tuple(
                WorkerStatus(
                    index=w.index,
                    pid=w.process.pid,
                    alive=not w.dead,
                    ready=w.ready,
                    busy=bool(w.in_flight),
                    in_flight=len(w.in_flight),
                    loads_done=w.loads_done,
                    segments_mapped=self._segments.mapped_count(w.key),
                    restarts=self._restarts[w.index],
                )
                for w in sorted(self._workers, key=lambda w: w.index)
            )
            return LoaderStatus(
                name=self.name,
                running=not self._stopped,
                worker_num=self.worker_num,
                start_method=self.start_method,
                workers=workers,
                pending=len(self._pending),
                in_flight=sum(s.in_flight for s in workers),
                loads_done=self._done,
                loads_failed=self._failed,
                segments_free=counts.free,
                segments_busy=counts.busy,
                segments_leased=counts.leased,
                segment_bytes=counts.bytes_total,
            )

    @property
    def stopped(self) -> bool:
        """True once this pool takes no more requests (shut down, or its I/O thread crashed)."""
        with self._lock:
            return self._stopped

    def wait_ready(self, timeout: float) -> bool:
        """Block until every worker has said "ready" (start-up measurements, tests)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if self._broken is not None:
                    raise self._broken
                if all(w.ready for w in self._workers) and len(self._workers) == self.worker_num:
                    return True
            time.sleep(0.005)
        return False

    def shutdown(self, timeout: float | None, join_timeout: float | None = None) -> None:
        """See NOTE [ Loader shutdown ]; ``join_timeout`` bounds the waits for our threads (at exit: a
        callback may never return, and the delivery thread that runs it is a daemon)."""
        with self._lock:
            if self._shut:
                return
            self._shut = self._stopped = True
        in_delivery = threading.current_thread() is self._deliverer.thread
        if not in_delivery:
            deadline = None if timeout is None else time.monotonic() + timeout
            with self._idle:  # a dead I/O thread answers nothing more: it failed what it held
                while self._open > 0 and self._thread.is_alive():
                    left = POLL_INTERVAL_S if deadline is None else min(deadline - time.monotonic(), POLL_INTERVAL_S)
                    if left <= 0:
                        break
                    self._idle.wait(left)
        with self._lock:
            self._exit = True
        self._wake()
        self._thread.join(None if join_timeout is None else join_timeout + STOP_GRACE_S)  # it stops the workers
        self._deliverer.stop(after=self._release)  # runs once the delivery queue is empty
        if not in_delivery:
            self._deliverer.thread.join(join_timeout)

    def _spawn(self, index: int) -> WorkerHandle:
        return start_worker(self._ctx, index, next(self._keys), self.start_method)

    def _enqueue(self, item: Item) -> None:
        with self._lock:
            self._undelivered += 1
        self._deliverer.put(item)

    # ---- called from the delivery thread ----------------------------------------------------
    def _unreserve(self, request: Request) -> None:
        """Stop counting a request's segment against ``OUTSTANDING_BYTES`` (call with the lock held)."""
        self._reserved -= request.reserved
        request.reserved = 0

    def _finished(self, request: Request, ok: bool, delivered: bool = True) -> None:
        with self._lock:
            self._unreserve(request)
            self._open -= 1
            if delivered:
                self._undelivered -= 1
                if ok:
                    self._done += 1
                else:
                    self._failed += 1
            if self._open == 0:
                self._idle.notify_all()
            throttled, self._throttled = self._throttled, False
        if throttled or not delivered:
            self._wake()

    # ---- teardown ---------------------------------------------------------------------------
    def _teardown(self) -> None:
        with self._lock:
            leftovers = list(self._pending)
            self._pending.clear()
            workers = list(self._workers)
            for w in workers:
                leftovers.extend(w.in_flight)
                w.in_flight.clear()
        try:
            stop_workers(workers)
        finally:
            crash = self._broken if isinstance(self._broken, LoaderCrashedError) else None
            for request in leftovers:
                if request.segment is not None:
                    self._segments.release(request.segment)
                    request.segment = None
                error = (
                    LoaderShutdownError(request.label)
                    if crash is None
                    else LoaderCrashedError(crash.cause, request.label)
                )
                self._enqueue(Failed(request, error))

    def _wake(self) -> None:
        """Make the I/O thread look at the queue again (one write per sleep, not one per request)."""
        with self._lock:  # held while writing, so _release cannot close the pipe under us
            if not self._wake_open or self._wake_pending:
                return
            self._wake_pending = True
            with contextlib.suppress(BlockingIOError):  # a full pipe is a pending wake-up too
                os.write(self._wake_w, b"x")

    def _release(self) -> None:
        self._segments.close()
        self._staging.close()
        with self._lock:
            if self._wake_open:
                self._wake_open = False
                os.close(self._wake_r)
                os.close(self._wake_w)
