"""The I/O thread: one loop that feeds every worker, reads their replies and replaces the dead.

NOTE [ Request flow ]
One I/O thread in the main process owns every worker socket (see NOTE [ Worker protocol ] in
``_workers``): it waits on the sockets, on each worker's process sentinel and on a wake-up pipe;
it stats each file, picks a segment big enough for it, and keeps up to ``DEPTH`` requests queued
at each worker so a worker starts the next one the moment it finishes. Workers process their
requests in order, so a reply always answers the oldest request in flight at that worker. Replies
go to the delivery thread (``_delivery``), which builds the object and runs the callback, so a
slow callback never stalls reading. At most ``worker_num * (DEPTH + 1)`` requests hold a segment
at once (in flight or waiting for their callback), and once they hold ``OUTSTANDING_BYTES`` no
more than two per worker do (one being read, one queued behind it): memory stays bounded when
the consumer is slow or payloads are large.

*A worker that dies* (its sentinel fires) first has its remaining replies drained; the oldest
request still in flight is the one it was reading, and fails with ``WorkerDiedError`` naming
the worker; the rest had not started and go back to the front of the queue. Its segments return
to the pool (nothing writes them any more) and a replacement starts with the same index.
Workers that die before ever saying "ready" ``MAX_START_FAILURES`` times in a row mark the pool
broken (``WorkerStartError`` for every request) instead of restarting forever.

*If this thread itself fails* (say a replacement's ``Process.start()`` hits EMFILE), the pool
stops accepting requests at once, fails every request it holds with ``LoaderCrashedError``
naming the cause, stops its workers and releases its memory without waiting for ``shutdown``;
the loader's next ``load`` starts a fresh pool (``_lifecycle.Core.pool``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import threading
import time
from collections import deque
from collections.abc import Callable
from multiprocessing.context import BaseContext

from inspector.loader._delivery import Deliverer, Failed, InProcess, Item, Loaded, Request
from inspector.loader._errors import (
    LoaderCrashedError,
    SharedMemoryError,
    StorageNotFoundError,
    WorkerDiedError,
    WorkerStartError,
)
from inspector.loader._segments import SegmentPool
from inspector.loader._workers import WorkerHandle, reply_error, send_load

logger = logging.getLogger("inspector.loader")

DEPTH = 4
OUTSTANDING_BYTES = 1 << 30  # past this, only two requests per worker hold segments at once
POLL_INTERVAL_S = 0.25
MAX_START_FAILURES = 3


class IOLoop:
    """The I/O thread's half of ``WorkerPool`` (state is set up and shared by the pool)."""

    name: str
    worker_num: int
    start_method: str
    _ctx: BaseContext
    _why_missing: Callable[[str], str | None]
    _lock: threading.Lock
    _pending: deque[Request]
    _workers: list[WorkerHandle]
    _restarts: list[int]
    _undelivered: int
    _reserved: int
    _start_failures: int
    _broken: BaseException | None
    _exit: bool
    _stopped: bool
    _idle: threading.Condition
    _deliverer: Deliverer
    _max_outstanding: int
    _wake_r: int
    _wake_pending: bool
    _throttled: bool
    _segments: SegmentPool

    def _spawn(self, index: int) -> WorkerHandle:
        raise NotImplementedError

    def _enqueue(self, item: Item) -> None:
        raise NotImplementedError

    def _unreserve(self, request: Request) -> None:
        raise NotImplementedError

    def _finished(self, request: Request, ok: bool, delivered: bool = True) -> None:
        raise NotImplementedError

    def _teardown(self) -> None:
        raise NotImplementedError

    def _release(self) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        selector = selectors.DefaultSelector()
        crashed: LoaderCrashedError | None = None
        try:
            selector.register(self._wake_r, selectors.EVENT_READ, None)
            watched: set[WorkerHandle] = set()
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
            crashed = LoaderCrashedError(exc)
            with self._lock:  # from here on, submit() refuses and the loader starts a new pool
                self._broken = crashed
                self._stopped = True
                self._idle.notify_all()
        finally:
            selector.close()
            try:
                self._teardown()  # fails what it held with LoaderCrashedError (see NOTE [ Loader shutdown ])
            finally:
                if crashed is not None:  # nobody may call shutdown(): release what shutdown would
                    self._deliverer.stop(after=self._release)

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

    def _pick_worker(self) -> WorkerHandle | None:
        outstanding = sum(len(w.in_flight) for w in self._workers) + self._undelivered
        if outstanding >= self._max_outstanding or (
            self._reserved >= OUTSTANDING_BYTES and outstanding >= 2 * self.worker_num
        ):
            self._throttled = True  # the delivery thread wakes us when a slot frees up
            return None
        open_workers = [w for w in self._workers if not w.dead and len(w.in_flight) < DEPTH]
        return min(open_workers, key=lambda w: (len(w.in_flight), w.index), default=None)

    def _send(self, worker: WorkerHandle, request: Request) -> None:
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
            if send_load(worker, request, segment):
                self._segments.mark_mapped(segment, worker.key)
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

    def _drain(self, worker: WorkerHandle) -> None:
        try:
            while not worker.conn.closed and worker.conn.poll():
                self._handle(worker, worker.conn.recv())
        except (EOFError, OSError):
            pass  # the sentinel reports the death

    def _handle(self, worker: WorkerHandle, message: tuple) -> None:
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
            if op == "err" and message[2] == "unmapped":
                self._segments.forget_mapping(segment, worker.key)
            self._segments.release(segment)
        if op == "grow":  # the file grew after we looked at it: retry with a bigger segment
            request.size_hint = message[2]
            with self._lock:
                self._unreserve(request)
                self._pending.appendleft(request)
        else:
            error = reply_error(worker, request.label, message, self._why_missing(request.label))
            self._enqueue(Failed(request, error))

    def _on_death(self, worker: WorkerHandle) -> None:
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
        try:
            self._replace(worker, exitcode)  # first, so the pool looks whole when the failure arrives
        finally:  # even when the replacement cannot start: this request is in no list any more
            if failed is not None:
                error = WorkerDiedError(f"worker {worker.index}", worker.process.pid, exitcode, failed.label)
                self._enqueue(Failed(failed, error))

    def _replace(self, worker: WorkerHandle, exitcode: int | None) -> None:
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
