"""Sending queued requests to workers, from whichever thread frees a slot first.

NOTE [ Request flow ]
``load`` queues its request and wakes the I/O thread, which dispatches it when a worker has
room: the prelude and header are read and checked (``StorageFile``: every leaf against the data
region, before any segment is picked), a segment is found or made, and one message goes to the
worker. The caller's thread does nothing else, so an interrupt there cannot leave a request
half-sent (NOTE [ Interrupts while waiting ] in ``requests``). Requests that find no room wait
in the queue and are dispatched when a slot frees: by the I/O thread when a reply arrives, and
when a callback returns (the delivery thread wakes the I/O thread). One dispatch pass runs at a
time (a try-lock: a pass started while one runs, from a completion inside it, leaves a note and
the running pass goes round again), so each worker gets its requests in the order they were
taken from the queue.

Each worker holds up to ``depth`` requests, so it starts the next read the moment it finishes
one. At most ``max_outstanding`` requests hold a segment at once (in flight or waiting for their
callback), and once they hold ``outstanding_bytes`` no more than two per worker do: memory stays
bounded when the consumer is slow or payloads are large. A worker answers in order; its reply
goes to the I/O thread (``io_loop``), which completes the load there or hands it to the delivery
thread (``delivery``).
"""

from __future__ import annotations

import errno
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from inspector.loader.pool.channel import GONE
from inspector.loader.pool.delivery import Failed, InProcess, Item, Prebuilt
from inspector.loader.pool.messages import ReadFile
from inspector.loader.storage.reader import StorageFile, open_for_load

if TYPE_CHECKING:
    from inspector.loader.pool.config import PoolConfig
    from inspector.loader.pool.requests import Request
    from inspector.loader.pool.segments import SegmentPool
    from inspector.loader.pool.shared_segment import Segment
    from inspector.loader.pool.state import PoolState
    from inspector.loader.pool.worker_handles import WorkerHandle

SEGMENT_GRACE_BYTES = 16 << 20  # below this a new segment costs less than waiting for one
SEGMENT_GRACE_S = 0.02  # the longest wait (256 MiB); a new segment's page faults cost about a second per GiB


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
        self._pass = threading.Lock()
        self._again = False
        self.resume_at = 0.0  # a request waits for a segment to come back until then (``_worth_waiting``)

    def after_fork(self) -> None:
        """In a forked child: a fresh pass lock (a parent thread may have held this one at the fork)."""
        self._pass = threading.Lock()
        self._again = False
        self.resume_at = 0.0  # a request waits for a segment to come back until then (``_worth_waiting``)

    def kick(self) -> None:
        """Dispatch what can be dispatched now (on the I/O thread: it may make segments)."""
        self._again = True
        while self._again:
            if not self._pass.acquire(blocking=False):
                return  # the pass running sees ``_again`` after it releases, and runs another
            try:
                self._again = False
                self._run()
            finally:
                self._pass.release()

    def _run(self) -> None:
        """Dispatch until the queue is empty or the pool is full."""
        state = self._state
        while True:
            with state.lock:
                if not state.pending or state.exit:
                    return
                request = state.pending[0]
                worker = None
                if request.path is not None and request.prebuilt is None and state.broken is None:
                    worker = self._pick_worker()
                    if worker is None:
                        return
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
            elif request.prebuilt is not None:  # read on the caller's thread: only its callback is left
                self._route(Prebuilt(request))
            elif worker is None:
                self._route(Failed(request, state.broken or RuntimeError("no loader worker is available")))
            else:
                self._send(worker, request)

    def _pick_worker(self) -> WorkerHandle | None:
        state, config = self._state, self._config
        outstanding = 0 if state.delivery_waiting else state.undelivered
        best: WorkerHandle | None = None
        for w in state.workers:  # one pass: the count in flight, and the least loaded open worker
            held = len(w.in_flight)
            outstanding += held
            if (
                not w.dead
                and held < config.depth
                and (best is None or (held, w.index) < (len(best.in_flight), best.index))
            ):
                best = w
        if outstanding >= config.max_outstanding or (
            state.reserved >= config.outstanding_bytes and outstanding >= 2 * config.worker_num
        ):
            state.throttled = True  # whoever frees a slot dispatches again
            return None
        return best

    def _give_up(self, worker: WorkerHandle | None, request: Request) -> None:
        """A cancelled request: free its slot and forget it."""
        with self._state.lock:
            if worker is not None:
                worker.in_flight.pop(request.id, None)
            self._state.requests.pop(request.id, None)

    def _fail(self, worker: WorkerHandle, request: Request, error: BaseException) -> None:
        with self._state.lock:
            worker.in_flight.pop(request.id, None)
        self._route(Failed(request, error))

    def _send(self, worker: WorkerHandle, request: Request) -> None:
        """Open and check the file, find it a segment (a new one if none is free), hand both over.

        Whatever goes wrong fails this one load through its future, never the thread running the pass: an
        ``OSError`` or ``StorageCorruptError`` with its reason, anything unexpected as itself.
        """
        path = request.path
        assert path is not None
        file = open_for_load(path, self._config.why_missing)
        if isinstance(file, BaseException):  # this load fails, the pool carries on
            self._fail(worker, request, file)
            return
        with file:
            if not request.waited and self._worth_waiting(file.size, worker.key):
                request.waited = True  # once: then a new segment is made, as for any other load
                with self._state.lock:
                    worker.in_flight.pop(request.id, None)
                    self._state.pending.appendleft(request)
                    self._state.throttled = True  # no later request overtakes it meanwhile
                self.resume_at = time.monotonic() + min(SEGMENT_GRACE_S, file.size / 2**33)  # ~1% of a new one
                return
            try:
                segment = self._segments.acquire(file.size, worker.key)
            except Exception as exc:  # SharedMemoryError says why; anything else fails the load as itself
                self._fail(worker, request, exc)
                return
            try:
                self._hand_over(worker, request, file, segment)
            except Exception as exc:  # before the message left (the send is its last step): nothing was handed
                self._take_back(worker, request, segment, forget_mapping=True)  # mapped or not: hand it over again
                self._route(Failed(request, exc))

    def _worth_waiting(self, nbytes: int, worker: int) -> bool:
        """A large load that finds no free segment while the consumer holds payloads of that size: wait a moment (up
        to ``SEGMENT_GRACE_S``, a fraction of what a new one costs) rather than pay a new segment's page faults, for
        one may be let go now (a consumer keeping batch k while k+1 loads drops k right after asking for k+1)."""
        return (
            nbytes >= SEGMENT_GRACE_BYTES
            and self._segments.leased_like(nbytes)
            and (self._segments.take_free(nbytes, worker, peek=True) is None)
        )

    def _hand_over(self, worker: WorkerHandle, request: Request, file: StorageFile, segment: Segment) -> None:
        hand_over = worker.key not in segment.mapped_by
        if hand_over:
            self._segments.mark_mapped(segment, worker.key)
        request.segment = segment
        request.plan = file.plan
        request.worker, request.worker_key = worker.index, worker.key
        request.dispatched = time.perf_counter()
        with self._state.lock:
            request.reserved = segment.capacity
            self._state.reserved += request.reserved
        message = ReadFile(
            request.id, file.size, segment.id, segment.capacity if hand_over else 0, hand_over and not segment.reserved
        )
        try:
            worker.channel.send(message, (file.fileno(), segment.fd) if hand_over else (file.fileno(),))
        except OSError as exc:
            self._take_back(worker, request, segment, forget_mapping=hand_over)
            if exc.errno in GONE:  # the worker just died: its death is handled where it is noticed
                with self._state.lock:
                    worker.dead = True
                    self._state.pending.appendleft(request)
                return
            reason = exc.strerror or errno.errorcode.get(exc.errno or 0, str(exc))
            error = OSError(exc.errno, f"Could not hand {request.path!r} to loader worker {worker.index}: {reason}")
            self._route(Failed(request, error))

    def _take_back(self, worker: WorkerHandle, request: Request, segment: Segment, forget_mapping: bool) -> None:
        """Undo a hand-over whose message never left: the segment is free again and the slot is open."""
        if forget_mapping:  # the worker was to map it with this message: the next one hands it over again
            self._segments.forget_mapping(segment, worker.key)
        self._segments.release(segment)
        request.segment = None
        with self._state.lock:
            worker.in_flight.pop(request.id, None)
            self._state.unreserve(request)
