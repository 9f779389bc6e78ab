"""Sending queued requests to workers, from whichever thread frees a slot first.

NOTE [ Request flow ]
``load`` queues its request and dispatches it on the caller's thread when a worker has room
and a recycled segment fits: the prelude and header are read and checked (``StorageFile``:
every leaf against the data region, before any segment is picked), and one message goes to the
worker; the caller never waits for another thread. Requests that find no room wait in the
queue and are dispatched by whichever thread frees a slot: the I/O thread when a reply arrives,
the delivery thread when a callback returns. A request that needs a new segment waits for the
I/O thread, the only one that creates segments (reserving hundreds of MiB takes a while, and
``load`` must not block). One dispatch pass runs at a time (a try-lock; a thread that finds it
taken leaves a note, and the holder runs another pass), so each worker gets its requests in the
order they were taken from the queue.

Each worker holds up to ``depth`` requests, so it starts the next read the moment it finishes
one. At most ``max_outstanding`` requests hold a segment at once (in flight or waiting for their
callback), and once they hold ``outstanding_bytes`` no more than two per worker do: memory stays
bounded when the consumer is slow or payloads are large. A worker answers in order; its reply
goes to the I/O thread (``io_loop``), which completes the load there or hands it to the delivery
thread (``delivery``).
"""

from __future__ import annotations

import errno
import functools
import threading
import time
from collections.abc import Callable

from inspector.loader._errors import SharedMemoryError, StorageCorruptError, StorageNotFoundError
from inspector.loader.pool.channel import GONE
from inspector.loader.pool.config import PoolConfig
from inspector.loader.pool.delivery import Failed, InProcess, Item
from inspector.loader.pool.messages import ReadFile
from inspector.loader.pool.requests import Request
from inspector.loader.pool.segments import Segment, SegmentPool
from inspector.loader.pool.state import PoolState
from inspector.loader.pool.worker_handles import WorkerHandle
from inspector.loader.storage.reader import StorageFile


class Dispatcher:
    """One dispatch pass at a time over the shared queue (see NOTE [ Request flow ])."""

    def __init__(
        self,
        config: PoolConfig,
        state: PoolState,
        segments: SegmentPool,
        route: Callable[[Item], None],
        wake_io: Callable[[], None],
    ) -> None:
        self._config = config
        self._state = state
        self._segments = segments
        self._route = route
        self._wake_io = wake_io
        self.read_replies: Callable[..., None] = lambda worker, done, deadline: None  # direct_reads, once wired
        self._pass = threading.Lock()
        self._again = False

    def after_fork(self) -> None:
        """In a forked child: a fresh pass lock (a parent thread may have held this one at the fork)."""
        self._pass = threading.Lock()
        self._again = False

    def kick(self, create: bool = False) -> None:
        """Dispatch what can be dispatched now; ``create`` only on the I/O thread (it may make segments)."""
        self._again = True
        while self._again:
            if not self._pass.acquire(blocking=False):
                return  # the thread running a pass sees ``_again`` after it releases, and runs another
            try:
                self._again = False
                needs_io = self._run(create)
            finally:
                self._pass.release()
            if needs_io:
                self._wake_io()

    def _run(self, create: bool) -> bool:
        """Dispatch until the queue is empty or full; True when the rest waits for a new segment."""
        state = self._state
        while True:
            with state.lock:
                if not state.pending or state.exit:
                    return False
                request = state.pending[0]
                worker = None
                if request.path is not None and state.broken is None:
                    worker = self._pick_worker()
                    if worker is None:
                        return False
                state.pending.popleft()
                if worker is not None:
                    worker.in_flight[request.id] = request  # holds the slot; keeps the order of sends
            if not request.running:
                if not request.future.set_running_or_notify_cancel():  # cancelled while it waited
                    self._give_up(worker, request)
                    continue
                request.running = True
            if request.path is None:
                self._route(InProcess(request))
            elif worker is None:
                self._route(Failed(request, state.broken or RuntimeError("no loader worker is available")))
            elif not self._send(worker, request, create):
                return True

    def _pick_worker(self) -> WorkerHandle | None:
        state, config = self._state, self._config
        outstanding = 0 if state.delivery_waiting else state.undelivered
        best: WorkerHandle | None = None
        for w in state.workers:  # one pass: the count in flight, and the least loaded open worker
            held = len(w.in_flight)
            outstanding += held
            if not w.dead and held < config.depth and (
                best is None or (held, w.index) < (len(best.in_flight), best.index)
            ):
                best = w
        if outstanding >= config.max_outstanding or (
            state.reserved >= config.outstanding_bytes and outstanding >= 2 * config.worker_num
        ):
            state.throttled = True  # whoever frees a slot dispatches again
            return None
        return best

    def _give_up(self, worker: WorkerHandle | None, request: Request) -> None:
        """A cancelled request: free its slot and count it finished."""
        with self._state.lock:
            if worker is not None:
                worker.in_flight.pop(request.id, None)
            self._state.requests.pop(request.id, None)
            self._state.open -= 1
            if self._state.open == 0:
                self._state.changed.notify_all()

    def _fail(self, worker: WorkerHandle, request: Request, error: BaseException) -> None:
        with self._state.lock:
            worker.in_flight.pop(request.id, None)
        self._route(Failed(request, error))

    def _send(self, worker: WorkerHandle, request: Request, create: bool) -> bool:
        """Open and check the file, find it a segment, hand both over; False when it must wait for a new segment."""
        path = request.path
        assert path is not None
        try:
            file = StorageFile(path)
        except FileNotFoundError:
            self._fail(worker, request, StorageNotFoundError(path, self._config.why_missing(path)))
            return True
        except StorageCorruptError as exc:
            self._fail(worker, request, exc)
            return True
        except OSError as exc:  # EMFILE, EACCES...: this load fails, the pool carries on
            self._fail(worker, request, OSError(exc.errno, f"Could not open {path!r} to load it: {exc.strerror}"))
            return True
        with file:
            # A request that found no free segment gets a new one, even if one was freed since: the pool then
            # has one more, and the next caller finds it free instead of waiting for the I/O thread again.
            segment = None if request.bounced and create else self._segments.take_free(file.size, worker.key)
            if segment is None:
                if not create:
                    request.bounced = True
                    with self._state.lock:
                        worker.in_flight.pop(request.id, None)
                        self._state.pending.appendleft(request)
                    return False
                try:
                    segment = self._segments.acquire(file.size, worker.key, fresh=request.bounced)
                except SharedMemoryError as exc:
                    self._fail(worker, request, exc)
                    return True
            self._hand_over(worker, request, file, segment)
        return True

    def _hand_over(self, worker: WorkerHandle, request: Request, file: StorageFile, segment: Segment) -> None:
        hand_over = worker.key not in segment.mapped_by
        if hand_over:
            self._segments.mark_mapped(segment, worker.key)
        request.segment = segment
        request.plan = file.plan
        request.worker, request.worker_key, request.at, request.sent = worker.index, worker.key, worker, False
        request.dispatched = time.perf_counter()
        if not request.needs_delivery:  # whoever reads the reply completes it: the waiting caller may (io_loop)
            if worker.reader is None:
                worker.reader = functools.partial(self.read_replies, worker)
            request.future._reader = worker.reader
        with self._state.lock:
            request.reserved = segment.capacity
            self._state.reserved += request.reserved
        message = ReadFile(request.id, file.size, segment.id, segment.capacity if hand_over else 0)
        try:
            worker.channel.send(message, (file.fileno(), segment.fd) if hand_over else (file.fileno(),))
        except OSError as exc:
            if hand_over:
                self._segments.forget_mapping(segment, worker.key)
            self._segments.release(segment)
            request.segment = None
            with self._state.lock:
                worker.in_flight.pop(request.id, None)
                self._state.unreserve(request)
                if exc.errno in GONE:  # the worker just died: its death is handled where it is noticed
                    worker.dead = True
                    self._state.pending.appendleft(request)
                    return
            reason = exc.strerror or errno.errorcode.get(exc.errno or 0, str(exc))
            error = OSError(exc.errno, f"Could not hand {request.path!r} to loader worker {worker.index}: {reason}")
            self._route(Failed(request, error))
            return
        request.sent = True  # its ReadFile is on the worker's socket (a later Ping queues behind it: direct_reads)
