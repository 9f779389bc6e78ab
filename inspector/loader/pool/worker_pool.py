"""The worker pool: its public face, how its parts are wired, and a shutdown that leaves nothing.

The parts: ``scheduler`` sends requests (NOTE [ Request flow ]), ``io_loop`` reads replies and
replaces dead workers (NOTE [ Worker deaths ]), ``delivery`` completes loads, ``requests`` is a
load's future and what a waiting caller may be interrupted in (NOTE [ Interrupts while waiting ]),
``segments`` holds the shared memory (NOTE [ Segment ownership ]), ``worker_handles`` starts
worker processes (NOTE [ Starting workers ]); ``state`` is the bookkeeping they share.

NOTE [ Loader shutdown ]
``shutdown(timeout)`` stops accepting work, waits (up to ``timeout``) until every submitted
request has been delivered or failed, then the I/O thread sends each worker "stop", waits for
it, and kills what has not exited within ``worker_handles.STOP_GRACE_S``. Whatever was still
queued or in flight fails with ``LoaderShutdownError``, so no future stays pending. Then the
delivery thread drains and stops, and the segment pool drops every segment (those still leased
to delivered arrays live on, unnamed, until the arrays die). Workers also exit on their own when
the parent's socket closes or the parent pid changes, which covers a parent killed with -9; an
``atexit`` hook (``_lifecycle``) shuts down loaders still running at interpreter exit, with
bounded waits for our (daemon) threads, so a callback that never returns cannot hold the
interpreter open. A ``shutdown`` interrupted by Ctrl-C goes on to the end on a helper thread
(``_lifecycle``), and calling it again finishes it too: nothing is left running. Calling
``shutdown`` from inside a callback is allowed: it does not wait for itself. A pool whose I/O
thread crashed has already failed its requests (``LoaderCrashedError``) and stopped its workers,
so ``shutdown`` does not wait for them. If a worker cannot be started while the pool starts,
those already started are stopped before the ``WorkerSpawnError`` propagates. In a child made by
``os.fork()`` the pool is *abandoned* (``abandon``): its descriptors are closed and nothing is
sent, so the parent's workers and memory are untouched.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from inspector.loader._errors import LoaderCrashedError, LoaderShutdownError, LoadForkedError, WorkerSpawnError
from inspector.loader.pool.cuda import StagingPool
from inspector.loader.pool.delivery import Deliverer, Failed, Item, Prebuilt
from inspector.loader.pool.inline import InlineReader
from inspector.loader.pool.io_loop import IOLoop
from inspector.loader.pool.records import LoaderStatus, WorkerStatus
from inspector.loader.pool.requests import Request, call_guarded
from inspector.loader.pool.scheduler import Dispatcher
from inspector.loader.pool.segments import SegmentPool
from inspector.loader.pool.state import PoolState
from inspector.loader.pool.worker_handles import STOP_GRACE_S, WorkerHandle, start_worker, stop_workers

if TYPE_CHECKING:
    from inspector.loader.pool.config import PoolConfig

logger = logging.getLogger("inspector.loader")

MAX_FREE_SEGMENTS = 4096  # each costs two mappings (here and in a worker): far below vm.max_map_count
WAIT_POLL_S = 0.005  # how often a caller waiting for the pool looks again (sleeping: nothing an interrupt can break)
_sessions = itertools.count()


class WorkerPool:
    """Workers, the I/O thread and the delivery thread of one running loader (see the NOTEs above)."""

    def __init__(self, config: PoolConfig) -> None:
        self.config = config
        self.token = object()  # names this pool to its futures (NOTE [ Callbacks that wait ])
        self._pid = os.getpid()  # in a forked child: the parent, which started the loads it inherits
        self._weak_self = weakref.ref(self)
        self._state = PoolState(config.worker_num)
        self._keys = itertools.count()
        prefix = f"inspector-loader-{os.getpid()}-{next(_sessions)}"
        self._segments = SegmentPool(prefix, max_free=MAX_FREE_SEGMENTS)
        self._staging = StagingPool()
        self._dispatcher = Dispatcher(config, self._state, self._segments, self._route, self._wake)
        try:
            self._loop = IOLoop(
                config,
                self._state,
                self._segments,
                self._dispatcher,
                self._route,
                self._spawn,
                self._teardown,
                self._stop_delivery,
            )
        except OSError as exc:  # no descriptor left for the wake-up pipe: nothing has started yet
            raise WorkerSpawnError(0, exc) from exc
        self._inline = InlineReader(
            config.inline_bytes, config.why_missing, config.record, self._count_inline, self._busy
        )
        self._deliverer = Deliverer(
            self._segments,
            self._finished,
            config.record,
            self._staging,
            self.token,
            config.name,
            self._forget,
            self._read_here,
        )
        try:
            self._deliverer.start()
            for i in range(config.worker_num):  # one at a time, so a failure can stop those already started
                self._state.workers.append(self._spawn(i))
            self._loop.start()
        except BaseException:  # no worker, or an interrupt (maybe inside a thread's start): stop all that began
            self._state.exit = True
            self._wake()  # an I/O thread that did start tears down when it sees ``exit``; this does it too
            with contextlib.suppress(RuntimeError):  # "cannot join thread before it is started"
                self._loop.thread.join(STOP_GRACE_S)
            self._teardown()
            self._stop_delivery()  # a delivery thread that did start releases the memory; this does it too
            self._release()
            raise

    @property
    def name(self) -> str:
        return self.config.name

    # ---- called from any thread -------------------------------------------------------------
    def submit(self, request: Request) -> bool:
        """Queue ``request`` for the I/O thread; False when this pool is shutting down (use a new one)."""
        request.future._pool = self._weak_self
        state = self._state
        if state.stopped:
            return False
        inline = self._inline
        if inline.reads_later(request):  # NOTE [ Small loads in the caller ] in ``inline``
            put = self._deliverer.put_now
            with state.lock:
                if state.stopped:
                    return False
                put(request)  # the only call in here: an interrupt comes before it or after it
                state.requests[request.id] = request  # the deliverer forgets it under this lock: never before
            return True
        if inline.try_load(request):
            return True
        with state.lock:
            if state.stopped:
                return False
            state.pending.append(request)  # first: see NOTE [ Interrupts while waiting ] in ``requests``
            state.requests[request.id] = request
        self._loop.wake()
        return True

    @contextlib.contextmanager
    def delivery_waits(self) -> Iterator[None]:
        """While a callback waits on a future, callbacks queued behind it do not hold up dispatching."""
        self.delivery_wait(1)
        try:
            yield
        finally:
            self.delivery_wait(-1)

    def delivery_wait(self, change: int) -> None:
        """A callback starts (1) or stops (-1) waiting on a future (NOTE [ Callbacks that wait ])."""
        with self._state.lock:
            self._state.delivery_waiting += change
        if change > 0:
            self._wake()

    def run_done_callback(self, fn: Callable[[Future[Any]], object], future: Future[Any]) -> None:
        """Run a done-callback of ``future`` on the delivery thread (here, once that thread has ended)."""
        deliverer = self._deliverer
        if threading.current_thread() is deliverer.thread or not deliverer.call_soon(
            functools.partial(call_guarded, fn, future)
        ):
            call_guarded(fn, future)

    def status(self) -> LoaderStatus:
        counts = self._segments.counts()
        state = self._state
        with state.lock:
            workers = tuple(
                WorkerStatus(
                    index=w.index,
                    pid=w.pid,
                    alive=not w.dead,
                    ready=w.ready,
                    busy=bool(w.in_flight),
                    in_flight=len(w.in_flight),
                    loads_done=w.loads_done,
                    segments_mapped=self._segments.mapped_count(w.key),
                    restarts=state.restarts[w.index],
                )
                for w in sorted(state.workers, key=lambda w: w.index)
            )
            return LoaderStatus(
                name=self.name,
                running=not state.stopped,
                worker_num=self.config.worker_num,
                workers=workers,
                pending=len(state.pending),
                in_flight=sum(s.in_flight for s in workers),
                loads_done=state.done,
                loads_failed=state.failed,
                segments_free=counts.free,
                segments_busy=counts.busy,
                segments_leased=counts.leased,
                segment_bytes=counts.bytes_total,
            )

    @property
    def stopped(self) -> bool:
        """True once this pool takes no more requests (shut down, or its I/O thread crashed)."""
        with self._state.lock:
            return self._state.stopped

    def wait_ready(self, timeout: float) -> bool:
        """Block until every worker has said it is ready (start-up measurements, tests)."""
        deadline = time.monotonic() + timeout
        state = self._state
        while True:
            with state.lock:
                ready, broken = state.all_ready(), state.broken
            if broken is not None:
                raise broken
            if ready:
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(left, WAIT_POLL_S))

    def shutdown(self, timeout: float | None, join_timeout: float | None = None) -> None:
        """See NOTE [ Loader shutdown ]; ``join_timeout`` bounds the waits for our threads (at exit: a
        callback may never return, and the delivery thread that runs it is a daemon)."""
        state = self._state
        with state.lock:
            state.shut = state.stopped = True
        in_delivery = threading.current_thread() is self._deliverer.thread
        if not in_delivery:
            deadline = None if timeout is None else time.monotonic() + timeout
            while state.requests and self._loop.thread.is_alive():  # a dead I/O thread failed what it held
                left = WAIT_POLL_S if deadline is None else min(deadline - time.monotonic(), WAIT_POLL_S)
                if left <= 0:
                    break
                time.sleep(left)
        with state.lock:
            state.exit = True
        self._wake()
        self._loop.thread.join(None if join_timeout is None else join_timeout + STOP_GRACE_S)  # it stops the workers
        self._stop_delivery()  # runs once the delivery queue is empty
        if not in_delivery:
            self._deliverer.thread.join(join_timeout)

    def abandon(self) -> None:
        """In a child made by ``os.fork()``: close what was inherited, tell nobody (the parent owns it all), and fail
        the futures of loads the parent started (NOTE [ Loaders across fork ] in ``_lifecycle``).

        No lock is taken: one of the parent's threads may have held any of them at the fork, and that thread
        does not exist here to release it. Each part gets fresh locks before it is touched.
        """
        state = self._state
        state.after_fork()
        state.stopped = state.shut = state.exit = True
        self._dispatcher.after_fork()
        self._deliverer.after_fork()
        for worker in list(state.workers):
            with contextlib.suppress(OSError):
                worker.close()
        self._segments.abandon()
        self._loop.abandon()
        for request in list(state.requests.values()):
            request.future.fail_after_fork(LoadForkedError(request.label, self._pid))
        state.requests.clear()

    # ---- wiring -----------------------------------------------------------------------------
    def _spawn(self, index: int) -> WorkerHandle:
        return start_worker(index, next(self._keys))

    def _wake(self) -> None:
        self._loop.wake()

    def _route(self, item: Item) -> None:
        """Complete ``item`` here, or queue it for the delivery thread when that runs user code."""
        request = item.request
        if request.needs_delivery:
            request.queued = True
            with self._state.lock:
                self._state.undelivered += 1
            self._deliverer.put(item)
        else:
            self._deliverer.deliver_here(item)

    def _finished(self, request: Request, ok: bool, forget: bool = False) -> None:
        state = self._state
        with state.lock:
            if forget:  # its future is answered: it leaves the open ones in the same step
                state.requests.pop(request.id, None)
            if request.finished:
                return
            request.finished = 1 if ok else 2
            state.unreserve(request)
            if request.queued:
                state.undelivered -= 1
            if ok:
                state.done += 1
            else:
                state.failed += 1
            throttled, state.throttled = state.throttled, False
        if threading.current_thread() is self._loop.thread:
            if throttled or state.pending:
                self._dispatcher.kick()
        elif throttled:  # only then can a queued request be waiting for this slot: else a reply frees the next one
            self._wake()

    def _read_here(self, request: Request) -> None:
        """On the delivery thread: read a load queued unread and run its callback now, or queue it for a worker (or
        fail it: shutdown's wait is over, and what is still queued fails) (NOTE [ Small loads in the caller ] in
        ``inline``, NOTE [ Loader shutdown ])."""
        state = self._state
        if not state.exit:
            try:
                self._inline.try_load(request)  # leaves the outcome in ``request.prebuilt``, or None: for a worker
            except BaseException as exc:  # a bug of ours: that load fails, none hangs
                request.prebuilt = (None, exc, ())
        if request.prebuilt is not None:  # read here: its books close under the lock ``submit`` registered it under
            self._deliverer.deliver_queued(Prebuilt(request))
            return
        with state.lock:  # taken after ``submit`` let go of it: the request is registered by now
            crash = state.broken if isinstance(state.broken, LoaderCrashedError) else None  # no I/O thread any more
            for_worker = not state.exit and crash is None
            if for_worker:
                state.pending.append(request)
            else:
                request.queued = True
                state.undelivered += 1
        if for_worker:
            self._wake()
        else:
            label = request.label
            error = LoaderShutdownError(label) if crash is None else LoaderCrashedError(crash.cause, label)
            self._deliverer.deliver_queued(Failed(request, error))

    def _forget(self, request: Request) -> None:
        with self._state.lock:
            self._state.requests.pop(request.id, None)

    def _busy(self) -> bool:
        """Whether loads are queued for or at the workers, which read a large payload in parallel (NOTE [ Small loads
        in the caller ] in ``inline``)."""
        return self._state.at_workers()

    def _count_inline(self, ok: bool) -> None:
        with self._state.lock:
            if ok:
                self._state.done += 1
            else:
                self._state.failed += 1

    def _teardown(self) -> None:
        state = self._state
        with state.lock:
            leftovers = list(state.pending)
            state.pending.clear()
            workers = list(state.workers)
            for w in workers:
                leftovers.extend(w.in_flight.values())
                w.in_flight.clear()
        try:
            stop_workers(workers)
        finally:
            crash = state.broken if isinstance(state.broken, LoaderCrashedError) else None
            for request in leftovers:
                if request.segment is not None:
                    self._segments.release(request.segment)
                    request.segment = None
                error = (
                    LoaderShutdownError(request.label)
                    if crash is None
                    else LoaderCrashedError(crash.cause, request.label)
                )
                self._route(Failed(request, error))

    def _stop_delivery(self) -> None:
        self._deliverer.stop(after=self._release)

    def _release(self) -> None:
        self._segments.close()
        self._staging.close()
        self._loop.close()
