"""The I/O thread: reads every worker's replies, creates segments, replaces the dead.

NOTE [ Worker deaths ]
A worker that dies (its pidfd becomes readable, or its socket closes) first has its remaining
replies read; the oldest request still in flight at it is the one it was reading, and fails
with ``WorkerDiedError`` naming the worker; the rest had not started and go back to the front
of the queue. Its segments return to the pool (nothing writes them any more) and a replacement
starts with the same index. Workers that die before ever saying "ready" ``MAX_START_FAILURES``
times in a row mark the pool broken (``WorkerStartError`` for every request) instead of
restarting forever.

*If this thread itself fails* (say a replacement cannot start: EMFILE), the pool stops accepting
requests at once, fails every request it holds with ``LoaderCrashedError`` naming the cause,
stops its workers and releases its memory without waiting for ``shutdown``; the loader's next
``load`` starts a fresh pool (``_lifecycle.Core.pool``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from inspector._processes import wait_or_kill
from inspector.loader._errors import (
    LoaderCrashedError,
    SharedMemoryError,
    StorageCorruptError,
    WorkerDiedError,
    WorkerStartError,
)
from inspector.loader.pool.delivery import Failed, Item, Loaded
from inspector.loader.pool.messages import DropSegment, FileRead, ReadFailed, WorkerReady
from inspector.loader.pool.worker_handles import WorkerHandle, describe_command

if TYPE_CHECKING:
    from inspector.loader.pool.config import PoolConfig
    from inspector.loader.pool.scheduler import Dispatcher
    from inspector.loader.pool.segments import SegmentPool
    from inspector.loader.pool.state import PoolState

logger = logging.getLogger("inspector.loader")

POLL_INTERVAL_S = 0.25
MAX_START_FAILURES = 3


class IOLoop:
    """The I/O thread of one pool, with its own selector, watch list and start-failure count."""

    def __init__(
        self,
        config: PoolConfig,
        state: PoolState,
        segments: SegmentPool,
        dispatcher: Dispatcher,
        route: Callable[[Item], None],
        spawn: Callable[[int], WorkerHandle],
        teardown: Callable[[], None],
        on_crash: Callable[[], None],
    ) -> None:
        self._config = config
        self._state = state
        self._segments = segments
        self._dispatcher = dispatcher
        self._route = route
        self._spawn = spawn
        self._teardown = teardown
        self._on_crash = on_crash
        self._start_failures = 0
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self._wake_lock = threading.Lock()
        self._wake_open = True
        self._wake_pending = False
        self._epoll: select.epoll | None = None  # the thread's, kept here so a forked child can close it
        self.thread = threading.Thread(target=self._run, name=f"{config.name}-io", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def fail(self, request: Any, error: BaseException) -> None:
        """Answer ``request`` with ``error`` through the usual route."""
        self._route(Failed(request, error))

    def wake(self) -> None:
        """Make the I/O thread look around again (one write per sleep, not one per call)."""
        with self._wake_lock:  # held while writing, so close() cannot close the pipe under us
            if not self._wake_open or self._wake_pending:
                return
            self._wake_pending = True
            with contextlib.suppress(BlockingIOError):  # a full pipe is a pending wake-up too
                os.write(self._wake_w, b"x")

    def close(self) -> None:
        """Close the wake-up pipe (after the thread has stopped)."""
        with self._wake_lock:
            self._close_pipe()

    def abandon(self) -> None:
        """In a forked child: close the inherited pipe and epoll descriptors without the lock (the parent's thread
        may have held it at the fork, and is not here to release it)."""
        self._wake_lock = threading.Lock()
        epoll, self._epoll = self._epoll, None
        if epoll is not None:
            epoll.close()
        with contextlib.suppress(OSError):
            self._close_pipe()

    def _close_pipe(self) -> None:
        if self._wake_open:
            self._wake_open = False
            os.close(self._wake_r)
            os.close(self._wake_w)

    # ---- the thread ---------------------------------------------------------------------------
    def _run(self) -> None:
        epoll = self._epoll = select.epoll()
        crashed = False
        try:
            epoll.register(self._wake_r, select.EPOLLIN)
            replies: dict[int, WorkerHandle] = {}  # socket fd -> worker
            deaths_by_fd: dict[int, WorkerHandle] = {}  # pidfd -> worker
            next_chores = time.monotonic()
            state = self._state
            while not state.exit:
                with self._wake_lock:
                    self._wake_pending = False  # from here on, a wake() must write again
                if len(replies) != len(state.workers):
                    self._watch(epoll, replies, deaths_by_fd)
                now = time.monotonic()
                if now >= next_chores:
                    self._segments.trim_idle()
                    self._segments.drop_unreachable({w.key for w in replies.values()})
                    next_chores = now + POLL_INTERVAL_S
                    state.throttled = False  # a safety net: look at the queue again now and then
                self._flush_unmaps(replies.values())
                resume_at = self._dispatcher.resume_at
                if resume_at and now >= resume_at:
                    self._dispatcher.resume_at = 0.0
                    state.throttled = False
                if state.pending and not state.throttled:
                    self._dispatcher.kick()
                deaths: list[WorkerHandle] = []
                resume_at = self._dispatcher.resume_at
                wait = POLL_INTERVAL_S if not resume_at else min(POLL_INTERVAL_S, max(resume_at - now, 0.0005))
                for fd, _events in epoll.poll(wait):
                    worker = replies.get(fd)
                    if worker is not None:  # every reply waiting there
                        if not self._drain(worker):
                            deaths.append(worker)
                    elif fd == self._wake_r:
                        with contextlib.suppress(BlockingIOError):
                            os.read(self._wake_r, 4096)
                    elif fd in deaths_by_fd:
                        deaths.append(deaths_by_fd[fd])
                for w in dict.fromkeys(deaths):
                    if replies.pop(w.channel.fileno(), None) is not None:
                        epoll.unregister(w.channel.fileno())
                        if w.death_fd >= 0:
                            deaths_by_fd.pop(w.death_fd, None)
                            epoll.unregister(w.death_fd)
                        self._on_death(w)
        except BaseException as exc:  # keep every future answered even if this thread breaks
            logger.exception("inspector.loader: the I/O thread of %s crashed", self._config.name)
            crashed = True
            with self._state.lock:  # from here on, submit() refuses and the loader starts a new pool
                self._state.broken = LoaderCrashedError(exc)
                self._state.stopped = True
        finally:
            self._epoll = None
            epoll.close()
            try:
                self._teardown()  # fails what it held (see NOTE [ Loader shutdown ] in ``worker_pool``)
            finally:
                if crashed:  # nobody may call shutdown(): release what shutdown would
                    self._on_crash()

    def _watch(self, epoll: select.epoll, replies: dict[int, WorkerHandle], deaths: dict[int, WorkerHandle]) -> None:
        """Watch workers started since the last look."""
        with self._state.lock:
            workers = [w for w in self._state.workers if not w.dead]
        for w in workers:
            if w.channel.fileno() not in replies:
                epoll.register(w.channel.fileno(), select.EPOLLIN)
                replies[w.channel.fileno()] = w
                if w.death_fd >= 0:
                    epoll.register(w.death_fd, select.EPOLLIN)
                    deaths[w.death_fd] = w

    def _drain(self, worker: WorkerHandle, limit: int | None = None) -> bool:
        """Handle the replies waiting on ``worker``'s socket (up to ``limit``); False once the socket is closed."""
        handled = 0
        while limit is None or handled < limit:
            handled += 1
            try:
                message = worker.channel.receive_message()  # workers never send descriptors
            except EOFError:
                return False
            except ValueError as exc:  # a garbled message: a bug, logged; the request times out as lost otherwise
                logger.error("inspector.loader: worker %d sent %s", worker.index, exc)
                continue
            if message is None:
                return True
            self._handle(worker, message)
        return True

    def _handle(self, worker: WorkerHandle, message: Any) -> None:
        """Handle one reply from ``worker``."""
        state = self._state
        if type(message) is WorkerReady:
            with state.lock:
                worker.ready = True
            self._start_failures = 0
            return
        with state.lock:
            request = worker.in_flight.pop(message.request_id, None)
        if request is None:
            logger.error("inspector.loader: unexpected reply %r from worker %d", message, worker.index)
            return
        self._complete(worker, request, message)

    def _complete(self, worker: WorkerHandle, request: Any, message: Any) -> None:
        if type(message) is FileRead:
            worker.loads_done += 1
            if request.segment is not None:
                request.segment.reserved = True
            self._route(Loaded(request, message.size, message.read_start, message.read_end, time.perf_counter()))
            return
        segment, request.segment = request.segment, None
        if segment is not None:
            if isinstance(message, ReadFailed) and message.kind == "unmapped":
                self._segments.forget_mapping(segment, worker.key)
            if isinstance(message, ReadFailed) and message.kind == "nomem":
                self._segments.discard(segment)
            else:
                self._segments.release(segment)
        capacity = 0 if segment is None else segment.capacity
        self._route(Failed(request, self._reply_error(worker, request.label, message, capacity)))

    def _reply_error(self, worker: WorkerHandle, path: str, reply: ReadFailed, capacity: int) -> BaseException:
        """The exception a ``ReadFailed`` reply stands for, with the facts the worker sent."""
        if reply.kind == "truncated":
            return StorageCorruptError(path, reply.message)
        if reply.kind == "nomem":
            return SharedMemoryError(capacity, OSError(reply.errno, reply.message))
        if reply.kind in ("os", "unmapped"):
            return OSError(reply.errno, f"{reply.message}: {path!r}")
        return RuntimeError(
            f"Loader worker {worker.index} failed while loading {path!r}: {reply.message}\n{reply.traceback}"
        )

    def _on_death(self, worker: WorkerHandle) -> None:
        """See NOTE [ Worker deaths ]."""
        self._drain(worker)
        with contextlib.suppress(Exception):  # its socket closed; if it lingers, make sure it is gone
            wait_or_kill(worker.process, 1.0)
        exitcode = worker.process.returncode
        state = self._state
        with state.lock:
            worker.dead = True
            if worker in state.workers:
                state.workers.remove(worker)
            orphans = list(worker.in_flight.values())
            worker.in_flight.clear()
            state.throttled = False  # its slots are free again
        self._segments.forget_worker(worker.key)
        worker.close()
        for request in orphans:
            if request.segment is not None:
                self._segments.release(request.segment)
                request.segment = None
        # It handles requests in order: the oldest was being read; the rest had not started (nor
        # had any, if it never said "ready"), so they go back to the front of the queue.
        failed = orphans[0] if orphans and worker.ready else None
        retry = orphans[1:] if failed is not None else orphans
        with state.lock:
            for request in retry:
                state.unreserve(request)
            state.pending.extendleft(reversed(retry))
        try:
            self._replace(worker, exitcode)  # first, so the pool looks whole when the failure arrives
        finally:  # even when the replacement cannot start: this request is in no list any more
            if failed is not None:
                error = WorkerDiedError(f"worker {worker.index}", worker.pid, exitcode, failed.label)
                self._route(Failed(failed, error))

    def _replace(self, worker: WorkerHandle, exitcode: int | None) -> None:
        state = self._state
        if state.exit:
            return
        if not worker.ready:
            self._start_failures += 1
            if self._start_failures >= MAX_START_FAILURES:
                with state.lock:
                    state.broken = WorkerStartError(self._start_failures, exitcode, describe_command())
                logger.error("inspector.loader: %s", state.broken)
                return
        logger.warning(
            "inspector.loader: worker %d (pid %s) exited with %s; starting a replacement",
            worker.index,
            worker.pid,
            exitcode,
        )
        replacement = self._spawn(worker.index)
        with state.lock:
            state.restarts[worker.index] += 1
            state.workers.append(replacement)

    def _flush_unmaps(self, workers: Iterable[WorkerHandle]) -> None:
        for key, seg_id in self._segments.take_unmaps():
            for w in workers:
                if w.key == key and not w.dead:
                    with contextlib.suppress(OSError):
                        w.channel.send(DropSegment(seg_id))
