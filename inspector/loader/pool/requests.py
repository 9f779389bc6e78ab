"""One ``load`` call on its way through the pool, and the future its caller holds.

NOTE [ Callbacks that wait ]
Callbacks (and ``on_error``, custom ``Storage.load`` and CUDA copies) run on the pool's one
delivery thread, one at a time; a load with none of them completes on the I/O thread without
that hop. Functions given to ``future.add_done_callback`` run on the delivery thread too (never
on the I/O thread, whatever completed the future): anything they raise, ``SystemExit``
included, is logged and the loader carries on. A callback that waits on another load's future
therefore works when that load has no callback, and would wait forever when it has one (its
callback is queued behind the one that is waiting). ``LoadFuture`` tells the two apart, for
``result``/``exception`` and for ``concurrent.futures.wait``/``as_completed`` alike (they add a
waiter to each future): the second raises ``CallbackDeadlockError`` at once, whatever the
timeout; for the first, the pool stops counting callbacks queued behind the waiting one against
its in-flight budget while the wait lasts, so the awaited load is dispatched even when that
queue is full. A wait on the delivery thread through anything else (a ``threading.Event`` set
by another callback) is not seen and waits as the user wrote it.

NOTE [ Interrupts while waiting ]
Python raises a Ctrl-C (``KeyboardInterrupt``, or whatever a signal handler raises) in the main
thread between two bytecodes: at the start of any Python function and right after any call into
C, so anywhere in Python-level code, the standard library's included. The caller's thread
therefore does nothing a half-done step could spoil: ``load`` puts its request in the queue and
registers it (the queue first, so an interrupt in between leaves a request that is served, never
one that is waited for and never served) and wakes the I/O thread; the pool's own threads, which
no signal interrupts, do everything else. A wait holds no lock while it blocks: a future's lock
(``FutureLock``) is a C-level ``RLock`` whose ``with`` an interrupt cannot split (a
``threading.Condition``'s ``__enter__`` and ``__exit__`` are Python functions: an interrupt
inside one leaves its lock held, and the I/O thread answering that future would block on it
forever), and ``result()`` blocks on a separate latch the future's completion opens, re-checking
the future's state every ``WAIT_SLICE_S`` in case an interrupted waiter kept the latch.
"""

from __future__ import annotations

import _thread
import contextlib
import functools
import logging
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from concurrent.futures._base import CANCELLED, CANCELLED_AND_NOTIFIED, FINISHED, PENDING
from typing import Any

from inspector.loader._errors import CallbackDeadlockError

logger = logging.getLogger("inspector.loader")

DELIVERY_TOKEN = "inspector_loader_token"  # attribute naming the pool a delivery thread belongs to
WAIT_SLICE_S = 0.05  # a waiter looks at its future's state at least this often (NOTE [ Interrupts while waiting ])
_FINAL = (FINISHED, CANCELLED, CANCELLED_AND_NOTIFIED)


class FutureLock(_thread.RLock):  # type: ignore[misc]  # a C-level RLock, with a condition's waits
    """A future's lock and condition: ``with`` is C-level (no interrupt can split it), and a wait blocks on a latch
    that opens once, when the future is answered or cancelled (NOTE [ Interrupts while waiting ])."""

    __slots__ = ("_latch", "opened")

    def __init__(self) -> None:
        self._latch = _thread.allocate_lock()
        self._latch.acquire()
        self.opened = False

    def notify_all(self) -> None:
        """``Future`` calls this, holding the lock, once its state is final: open the latch for good."""
        if not self.opened:
            self.opened = True
            self._latch.release()

    notify = notify_all

    def wait_opened(self, timeout: float | None) -> bool:
        """Block, holding nothing, until the latch opens (True) or ``timeout`` passes (False)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        latch = self._latch
        while not self.opened:
            left = WAIT_SLICE_S if deadline is None else min(deadline - time.monotonic(), WAIT_SLICE_S)
            if left <= 0:
                return False
            if latch.acquire(True, left):
                latch.release()  # pass it on to the next waiter
                return True
        return True

    def wait(self, timeout: float | None = None) -> bool:
        """``threading.Condition.wait``: give up the lock while waiting for the latch, take it back after."""
        saved = self._release_save()  # type: ignore[attr-defined]
        try:
            return self.wait_opened(timeout)
        finally:
            self._acquire_restore(saved)  # type: ignore[attr-defined]


class _Waiters(list[Any]):
    """A future's waiter list: ``concurrent.futures.wait`` and ``as_completed`` add to it and remove from it, so a
    wait inside a callback is seen here as it is by ``result`` (see NOTE [ Callbacks that wait ]). It holds its
    future by a weak reference: no cycle, so a dropped future goes at once, never later in a garbage collection
    that a Ctrl-C could strike inside."""

    __slots__ = ("future", "pools")
    future: weakref.ref[LoadFuture]
    pools: dict[int, Any] | None  # waiter id -> the pool whose callback waits

    def append(self, waiter: Any) -> None:
        future = self.future()
        pool = None if future is None else future._waiting_pool()  # CallbackDeadlockError: it could never end
        if pool is not None:
            pool.delivery_wait(1)
            if self.pools is None:
                self.pools = {}
            self.pools[id(waiter)] = pool
        super().append(waiter)

    def remove(self, waiter: Any) -> None:
        super().remove(waiter)
        pool = self.pools.pop(id(waiter), None) if self.pools else None
        if pool is not None:
            pool.delivery_wait(-1)


class LoadFuture(Future):
    """A ``Future`` that refuses a wait that could never end, runs done-callbacks off the I/O thread, and logs
    failures nobody retrieved.

    A failed load always reaches its future and ``on_error``; when neither is looked at (no
    ``on_error``, and ``result()``/``exception()`` never called), the error is logged as a warning
    once the future is dropped, as asyncio does for tasks, so it is never lost silently.
    """

    _label = ""
    _observed = False
    _needs_delivery = False
    _pool: weakref.ref[Any] | None = None

    def __init__(self) -> None:  # Future.__init__'s fields, set here: one load makes one future, on the hot path
        self._condition: FutureLock = FutureLock()  # type: ignore[assignment]
        self._state = PENDING
        self._result = None
        self._exception = None
        self._done_callbacks: list[Callable[[Future[Any]], object]] = []
        waiters = self._waiter_list = self._waiters = _Waiters()
        waiters.future, waiters.pools = weakref.ref(self), None

    def result(self, timeout: float | None = None) -> Any:
        self._observed = True
        pool = self._waiting_pool()
        if pool is None:
            self._wait(timeout)
            return super().result(0)
        with pool.delivery_waits():
            self._wait(timeout)
            return super().result(0)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        self._observed = True
        pool = self._waiting_pool()
        if pool is None:
            self._wait(timeout)
            return super().exception(0)
        with pool.delivery_waits():
            self._wait(timeout)
            return super().exception(0)

    def _wait(self, timeout: float | None) -> None:
        """Until answered or cancelled, holding no lock (NOTE [ Interrupts while waiting ]); ``TimeoutError``."""
        if self._state not in _FINAL and not self._condition.wait_opened(timeout):
            raise TimeoutError()

    def _waiting_pool(self) -> Any:
        """The pool, when this wait happens inside one of its callbacks (see NOTE [ Callbacks that wait ])."""
        thread_token = getattr(threading.current_thread(), DELIVERY_TOKEN, None)
        if thread_token is None or self._pool is None or self.done():
            return None
        pool = self._pool()
        if pool is None or thread_token is not pool.token:
            return None
        if self._needs_delivery:
            raise CallbackDeadlockError(self._label)
        return pool

    def add_done_callback(self, fn: Callable[[Future[Any]], object]) -> None:
        """``Future.add_done_callback``, but ``fn`` runs on the pool's delivery thread, also when the future is done
        already (a small load is answered before ``load`` returns), and whatever it raises is logged (NOTE
        [ Callbacks that wait ])."""
        pool = self._pool() if self._pool is not None else None
        super().add_done_callback(
            functools.partial(pool.run_done_callback, fn) if pool is not None else functools.partial(call_guarded, fn)
        )

    def fail_after_fork(self, error: BaseException) -> None:
        """In a child made by ``os.fork()``: fail this future at once, taking no lock a parent thread may have held."""
        latch_open = self._condition.opened
        self._condition = FutureLock()
        if latch_open:
            self._condition.notify_all()
        self._waiters.clear()  # they belong to the parent's threads, which the child does not have
        self._pool = None  # no delivery thread here: done-callbacks run on this thread
        self._observed = True  # the parent has the real load; nothing is lost here
        with contextlib.suppress(InvalidStateError):  # finished or cancelled before the fork
            self.set_exception(error)

    def __del__(self) -> None:
        try:
            if self._exception is not None and not self._observed and self._state == FINISHED:  # no lock: dropped
                logger.warning(
                    "inspector.loader: loading %s failed and nobody retrieved the error: %s",
                    self._label,
                    self._exception,
                )
        except Exception:  # never raise from a finalizer (e.g. at interpreter exit)
            pass


def call_guarded(fn: Callable[[Future[Any]], object], future: Future[Any]) -> None:
    """Call a done-callback here; whatever it raises is logged (the future is answered already)."""
    try:
        fn(future)
    except Exception:
        logger.exception("inspector.loader: a done-callback %r raised; the loader keeps going", fn)
    except BaseException as exc:  # SystemExit, KeyboardInterrupt: the future is already answered
        logger.error(
            "inspector.loader: a done-callback %r raised %s; ignored, the future was already complete",
            fn,
            type(exc).__name__,
        )


class Request:
    """One ``load`` call on its way through the pool (internal and mutable; a plain class: one per load)."""

    __slots__ = (
        "callback",
        "device",
        "dispatched",
        "finished",
        "future",
        "id",
        "needs_delivery",
        "on_error",
        "path",
        "plan",
        "prebuilt",
        "queued",
        "reserved",
        "running",
        "segment",
        "storage",
        "submitted",
        "waited",
        "worker",
        "worker_key",
    )

    def __init__(
        self,
        request_id: int,
        storage: Any,
        path: str | None,
        callback: Callable[[Any], Any] | None,
        on_error: Callable[[BaseException], Any] | None,
        device: Any,
    ) -> None:
        self.id = request_id
        self.storage = storage
        self.path = path  # None: not a file storage, loaded in-process with storage.load()
        self.callback = callback
        self.on_error = on_error
        self.device = device  # None for host memory, else a torch.device
        self.future = LoadFuture()
        self.submitted = time.perf_counter()
        self.dispatched = 0.0
        self.worker: int | None = None
        self.worker_key = -1
        self.segment: Any = None
        self.plan: Any = None  # the header, checked when the file was opened for the worker
        self.waited = False  # waited once for a segment to come back (``scheduler._worth_waiting``)
        self.prebuilt: tuple[Any, ...] | None = None  # (object, error, marks): read on the caller's thread (inline)
        self.running = False
        self.finished = 0  # its books are closed (counts, budget), by the pool: 1 delivered, 2 failed
        self.reserved = 0  # segment bytes counted against the pool's budget
        self.queued = False  # went through the delivery thread's queue
        # completing it runs code on the delivery thread (see NOTE [ Callbacks that wait ])
        self.needs_delivery = callback is not None or on_error is not None or device is not None or path is None
        self.future._label = self.label
        self.future._needs_delivery = self.needs_delivery

    @property
    def label(self) -> str:
        return self.path if self.path is not None else repr(self.storage)
