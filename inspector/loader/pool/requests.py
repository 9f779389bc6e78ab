"""One ``load`` call on its way through the pool, and the future its caller holds.

NOTE [ Callbacks that wait ]
Callbacks (and ``on_error``, custom ``Storage.load`` and CUDA copies) run on the pool's one
delivery thread, one at a time; a load with none of them completes on the I/O thread without
that hop. A callback that waits on another load's future therefore works when that load has no
callback, and would wait forever when it has one (its callback is queued behind the one that is
waiting). ``LoadFuture.result``/``exception`` tell the two apart: the second raises
``CallbackDeadlockError`` at once; for the first, the pool stops counting callbacks queued
behind the waiting one against its in-flight budget while the wait lasts, so the awaited load
is dispatched even when that queue is full.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Protocol

from inspector.loader._errors import CallbackDeadlockError

logger = logging.getLogger("inspector.loader")

DELIVERY_TOKEN = "inspector_loader_token"  # attribute naming the pool a delivery thread belongs to


class WaitHooks(Protocol):
    """What a future needs from its pool while a callback waits on it."""

    token: object

    def delivery_waits(self) -> contextlib.AbstractContextManager[None]: ...


class LoadFuture(Future):
    """A ``Future`` that refuses a wait that could never end and logs failures nobody retrieved.

    A failed load always reaches its future and ``on_error``; when neither is looked at (no
    ``on_error``, and ``result()``/``exception()`` never called), the error is logged as a warning
    once the future is dropped, as asyncio does for tasks, so it is never lost silently.
    """

    _label = ""
    _observed = False
    _needs_delivery = False
    _pool: weakref.ref[Any] | None = None

    def result(self, timeout: float | None = None) -> Any:
        self._observed = True
        pool = self._waiting_pool()
        if pool is None:
            return super().result(timeout)
        with pool.delivery_waits():
            return super().result(timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        self._observed = True
        pool = self._waiting_pool()
        if pool is None:
            return super().exception(timeout)
        with pool.delivery_waits():
            return super().exception(timeout)

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

    def __del__(self) -> None:
        try:
            if not self._observed and not self.cancelled() and self.done() and self._exception is not None:
                logger.warning("inspector.loader: loading %s failed and nobody retrieved the error: %s",
                               self._label, self._exception)  # fmt: skip
        except Exception:  # never raise from a finalizer (e.g. at interpreter exit)
            pass


class Request:
    """One ``load`` call on its way through the pool (internal and mutable; a plain class: one per load)."""

    __slots__ = ("callback", "device", "dispatched", "future", "id", "needs_delivery", "on_error", "path",
                 "prelude", "queued", "reserved", "running", "segment", "storage", "submitted", "worker",
                 "worker_key")  # fmt: skip

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
        self.prelude: Any = None  # checked when the file was opened for the worker
        self.running = False
        self.reserved = 0  # segment bytes counted against the pool's budget
        self.queued = False  # went through the delivery thread's queue
        # completing it runs code on the delivery thread (see NOTE [ Callbacks that wait ])
        self.needs_delivery = callback is not None or on_error is not None or device is not None or path is None
        self.future._label = self.label
        self.future._needs_delivery = self.needs_delivery

    @property
    def label(self) -> str:
        return self.path if self.path is not None else repr(self.storage)
