"""The worker pool: processes, the I/O thread that feeds them, and a shutdown that leaves nothing.

NOTE [ Worker protocol ]
Each worker is a ``spawn`` (or ``forkserver``) process running ``_worker.worker_main`` with one
end of a Unix socket pair; no fork, so it is safe in Jupyter, under threads and after CUDA.
Messages are small tuples:

    main -> worker   ("map", seg_id, capacity) followed by the segment's fd (SCM_RIGHTS)
                     ("load", req_id, path, seg_id)     ("unmap", seg_id)     ("stop",)
    worker -> main   ("ready", pid)    ("ok", req_id, size, t_start, t_end)
                     ("grow", req_id, size)    ("err", req_id, kind, message, errno, traceback, ...)

One I/O thread in the main process owns every socket: it waits on the sockets, on each
worker's process sentinel and on a wake-up pipe; it stats each file, picks a segment big enough
for it, and keeps up to ``DEPTH`` requests queued at each worker so a worker starts the next one
the moment it finishes. Workers process their requests in order, so a reply always answers the
oldest request in flight at that worker. Replies go to the delivery thread (``_delivery``),
which builds the object and runs the callback, so a slow callback never stalls reading. At most
``worker_num * (DEPTH + 1)`` requests hold a segment at once (in flight or waiting for their
callback), and once they hold ``OUTSTANDING_BYTES`` no more than two per worker do (one being
read, one queued behind it): memory stays bounded when the consumer is slow or payloads are large.

*A worker that dies* (its sentinel fires) first has its remaining replies drained; the oldest
request still in flight is the one it was reading, and fails with ``WorkerDiedError`` naming
the worker; the rest had not started and go back to the front of the queue. Its segments return
to the pool (nothing writes them any more) and a replacement starts with the same index.
Workers that die before ever saying "ready" ``MAX_START_FAILURES`` times in a row mark the pool
broken (``WorkerStartError`` for every request) instead of restarting forever.

NOTE [ Loader shutdown ]
``shutdown(timeout)`` stops accepting work, waits (up to ``timeout``) until every submitted
request has been delivered or failed, then the I/O thread sends each worker "stop", joins it,
and terminates or kills what has not exited within ``STOP_GRACE_S``. Whatever was still queued
or in flight fails with ``LoaderShutdownError``, so no future stays pending. Then the delivery
thread drains and stops, and the segment pool drops every segment (those still leased to
delivered arrays live on, unnamed, until the arrays die). Workers also exit on their own when
the parent's socket closes or the parent pid changes, which covers a parent killed with -9; an
``atexit`` hook (``_lifecycle``) shuts down loaders still running at interpreter exit. Calling
``shutdown`` from inside a callback is allowed: it does not wait for itself.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import multiprocessing
import os
import selectors
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from multiprocessing.reduction import send_handle

from inspector.loader._cuda import StagingPool
from inspector.loader._delivery import Deliverer, Failed, InProcess, Item, Loaded, Request
from inspector.loader._errors import (
    LoaderShutdownError,
    SharedMemoryError,
    StorageCorruptError,
    StorageNotFoundError,
    WorkerDiedError,
    WorkerStartError,
)
from inspector.loader._records import LoaderStatus, LoadTiming, WorkerStatus
from inspector.loader._segments import SegmentPool
from inspector.loader._worker import worker_main

logger = logging.getLogger("inspector.loader")

DEPTH = 4
OUTSTANDING_BYTES = 1 << 30  # past this, only two requests per worker hold segments at once
POLL_INTERVAL_S = 0.25
STOP_GRACE_S = 5.0
MAX_START_FAILURES = 3
_sessions = itertools.count()


@dataclass(eq=False)
class _Worker:
    index: int
    key: int
    process: BaseProcess
    conn: Connection
    ready: bool = False
    dead: bool = False
    loads_done: int = 0
    in_flight: deque[Request] = field(default_factory=deque)


class WorkerPool:
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
        self._workers: list[_Worker] = []
        self._restarts = [0] * worker_num
        self._open = self._undelivered = self._done = self._failed = 0
        self._reserved = 0  # segment bytes held by requests in flight or awaiting delivery
        self._start_failures = 0
        self._broken: BaseException | None = None
        self._exit = False
        self._stopped = False
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
            self._workers = [self._spawn(i) for i in range(worker_num)]
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

    def shutdown(self, timeout: float | None) -> None:
        """See NOTE [ Loader shutdown ]."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        in_delivery = threading.current_thread() is self._deliverer.thread
        if not in_delivery:
            deadline = None if timeout is None else time.monotonic() + timeout
            with self._idle:
                while self._open > 0:
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        break
                    self._idle.wait(left if left is not None else POLL_INTERVAL_S)
        with self._lock:
            self._exit = True
        self._wake()
        self._thread.join()
        self._deliverer.stop(after=self._release)  # runs once the delivery queue is empty
        if not in_delivery:
            self._deliverer.thread.join()

    # ---- the I/O thread ---------------------------------------------------------------------
    def _run(self) -> None:
        selector = selectors.DefaultSelector()
        try:
            selector.register(self._wake_r, selectors.EVENT_READ, None)
            watched: set[_Worker] = set()
            next_trim = time.monotonic()
            while not self._exit:
                with self._lock:
                    self._wake_pending = False  # from here on, a submit must wake us again
                    workers = list(self._workers)
                for w in workers:
                    if w not in watched and not w.dead:
                        selector.register(w.conn, selectors.EVENT_READ, ("reply", w))
                        selector.register(w.process.sentinel, selectors.EVENT_READ, ("death", w))
                        watched.add(w)
                if time.monotonic() >= next_trim:
                    self._segments.trim_idle()
                    next_trim = time.monotonic() + POLL_INTERVAL_S
                self._flush_unmaps()
                self._dispatch()
                deaths = []
                for key, _events in selector.select(POLL_INTERVAL_S):
                    if key.data is None:
                        with contextlib.suppress(BlockingIOError):
                            os.read(self._wake_r, 4096)
                    elif key.data[0] == "reply":
                        self._drain(key.data[1])
                    else:
                        deaths.append(key.data[1])
                for w in deaths:
                    selector.unregister(w.conn)
                    selector.unregister(w.process.sentinel)
                    watched.discard(w)
                    self._on_death(w)
        except BaseException as exc:  # keep every future answered even if this thread breaks
            logger.exception("inspector.loader: the I/O thread of %s crashed", self.name)
            self._broken = RuntimeError(f"The loader's I/O thread crashed: {exc!r}")
        finally:
            selector.close()
            self._teardown()

    def _dispatch(self) -> None:
        while True:
            with self._lock:
                if not self._pending or self._exit:
                    return
                request = self._pending[0]
                worker = None
                if request.path is not None and self._broken is None:
                    worker = self._pick_worker()
                    if worker is None:
                        return
                self._pending.popleft()
            if not request.running:
                if not request.future.set_running_or_notify_cancel():
                    self._finished(request, False, delivered=False)
                    continue
                request.running = True
            if request.path is None:
                self._enqueue(InProcess(request))
            elif worker is None:
                self._enqueue(Failed(request, self._broken or RuntimeError("no worker")))
            else:
                self._send(worker, request)

    def _pick_worker(self) -> _Worker | None:
        outstanding = sum(len(w.in_flight) for w in self._workers) + self._undelivered
        if outstanding >= self._max_outstanding or (
            self._reserved >= OUTSTANDING_BYTES and outstanding >= 2 * self.worker_num
        ):
            self._throttled = True  # the delivery thread wakes us when a slot frees up
            return None
        open_workers = [w for w in self._workers if not w.dead and len(w.in_flight) < DEPTH]
        return min(open_workers, key=lambda w: (len(w.in_flight), w.index), default=None)

    def _send(self, worker: _Worker, request: Request) -> None:
        assert request.path is not None
        try:
            size = max(os.stat(request.path).st_size, request.size_hint)
        except FileNotFoundError:
            self._enqueue(Failed(request, StorageNotFoundError(request.path, self._why_missing(request.path))))
            return
        except OSError as exc:
            self._enqueue(Failed(request, exc))
            return
        try:
            segment = self._segments.acquire(size, worker.key)
        except SharedMemoryError as exc:
            self._enqueue(Failed(request, exc))
            return
        try:
            if worker.key not in segment.mapped_by:
                worker.conn.send(("map", segment.id, segment.capacity))
                send_handle(worker.conn, segment.fd, worker.process.pid or 0)
                self._segments.mark_mapped(segment, worker.key)
            worker.conn.send(("load", request.id, request.path, segment.id))
        except OSError:  # the worker just died; its sentinel will report it
            self._segments.release(segment)
            with self._lock:
                worker.dead = True
                self._pending.appendleft(request)
            return
        request.segment = segment
        request.reserved = segment.capacity
        request.worker, request.worker_key = worker.index, worker.key
        request.dispatched = time.perf_counter()
        with self._lock:
            worker.in_flight.append(request)
            self._reserved += request.reserved

    def _drain(self, worker: _Worker) -> None:
        try:
            while not worker.conn.closed and worker.conn.poll():
                self._handle(worker, worker.conn.recv())
        except (EOFError, OSError):
            pass  # the sentinel reports the death

    def _handle(self, worker: _Worker, message: tuple) -> None:
        op = message[0]
        if op == "ready":
            worker.ready = True
            self._start_failures = 0
            return
        with self._lock:
            if not worker.in_flight or worker.in_flight[0].id != message[1]:
                logger.error("inspector.loader: unexpected reply %r from worker %d", message[:2], worker.index)
                return
            request = worker.in_flight.popleft()
        if op == "ok":
            worker.loads_done += 1
            self._enqueue(Loaded(request, message[2], message[3], message[4], time.perf_counter()))
            return
        segment, request.segment = request.segment, None
        if segment is not None:
            self._segments.release(segment)
        if op == "grow":  # the file grew after we looked at it: retry with a bigger segment
            request.size_hint = message[2]
            with self._lock:
                self._unreserve(request)
                self._pending.appendleft(request)
        else:
            self._enqueue(Failed(request, self._error(worker, request, message)))

    def _error(self, worker: _Worker, request: Request, message: tuple) -> BaseException:
        path = request.label
        _op, _id, kind, text, errno_value, trace = message[:6]
        if kind == "missing":
            return StorageNotFoundError(path, self._why_missing(path))
        if kind == "corrupt":
            return StorageCorruptError(path, text)
        if kind == "os":
            return OSError(errno_value, f"{text}: {path!r}")
        return RuntimeError(f"Loader worker {worker.index} failed while loading {path!r}: {text}\n{trace}")

    def _on_death(self, worker: _Worker) -> None:
        self._drain(worker)
        worker.process.join(timeout=1.0)
        exitcode = worker.process.exitcode
        with self._lock:
            worker.dead = True
            if worker in self._workers:
                self._workers.remove(worker)
            orphans = list(worker.in_flight)
            worker.in_flight.clear()
        self._segments.forget_worker(worker.key)
        worker.conn.close()
        for request in orphans:
            if request.segment is not None:
                self._segments.release(request.segment)
                request.segment = None
        # It handles requests in order: the oldest was being read; the rest had not started (nor
        # had any, if it never said "ready"), so they go back to the front of the queue.
        failed = orphans[0] if orphans and worker.ready else None
        retry = orphans[1:] if failed is not None else orphans
        with self._lock:
            for request in retry:
                self._unreserve(request)
            self._pending.extendleft(reversed(retry))
        self._replace(worker, exitcode)  # first, so the pool looks whole when the failure arrives
        if failed is not None:
            error = WorkerDiedError(f"worker {worker.index}", worker.process.pid, exitcode, failed.label)
            self._enqueue(Failed(failed, error))

    def _replace(self, worker: _Worker, exitcode: int | None) -> None:
        if self._exit:
            return
        if not worker.ready:
            self._start_failures += 1
            if self._start_failures >= MAX_START_FAILURES:
                self._broken = WorkerStartError(self._start_failures, exitcode, self.start_method)
                logger.error("inspector.loader: %s", self._broken)
                return
        logger.warning(
            "inspector.loader: worker %d (pid %s) exited with %s; starting a replacement",
            worker.index, worker.process.pid, exitcode,
        )  # fmt: skip
        replacement = self._spawn(worker.index)
        with self._lock:
            self._restarts[worker.index] += 1
            self._workers.append(replacement)

    def _flush_unmaps(self) -> None:
        for key, seg_id in self._segments.take_unmaps():
            for w in self._workers:
                if w.key == key and not w.dead:
                    with contextlib.suppress(OSError):
                        w.conn.send(("unmap", seg_id))

    def _spawn(self, index: int) -> _Worker:
        parent_end, child_end = self._ctx.Pipe(duplex=True)
        process = self._ctx.Process(  # type: ignore[attr-defined]
            target=worker_main,
            args=(child_end, index, os.getpid()),
            name=f"inspector-loader-worker-{index}",
            daemon=True,
        )
        try:
            process.start()
        finally:
            child_end.close()
        return _Worker(index, next(self._keys), process, parent_end)

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
        for w in workers:
            with contextlib.suppress(OSError):
                w.conn.send(("stop",))
        deadline = time.monotonic() + STOP_GRACE_S
        for w in workers:
            w.process.join(max(0.0, deadline - time.monotonic()))
            for stop in (w.process.terminate, w.process.kill):
                if w.process.is_alive():
                    stop()
                    w.process.join(1.0)
            w.conn.close()
        for request in leftovers:
            if request.segment is not None:
                self._segments.release(request.segment)
                request.segment = None
            self._enqueue(Failed(request, LoaderShutdownError(request.label)))

    def _wake(self) -> None:
        """Make the I/O thread look at the queue again (one write per sleep, not one per request)."""
        with self._lock:
            if not self._wake_open or self._wake_pending:
                return
            self._wake_pending = True
        with contextlib.suppress(BlockingIOError, OSError):  # a full pipe is a pending wake-up too
            os.write(self._wake_w, b"x")

    def _release(self) -> None:
        self._segments.close()
        self._staging.close()
        with self._lock:
            if self._wake_open:
                self._wake_open = False
                os.close(self._wake_r)
                os.close(self._wake_w)
