"""The delivery thread: builds objects over leased segments, runs callbacks, completes futures.

Callbacks run here, one at a time and in completion order, never on the caller's thread and
never on the thread that talks to workers, so a slow callback delays later callbacks but not
reading. A callback that raises is logged with its traceback and the loader carries on; the
load itself still succeeded, so its future gets the object.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from typing import Any

from inspector.loader._image import decode_image
from inspector.loader._records import LoadTiming
from inspector.loader._segments import Segment, SegmentPool

logger = logging.getLogger("inspector.loader")


class LoadFuture(Future):
    """A ``Future`` that logs a failure nobody retrieved, when it is garbage-collected.

    A failed load always reaches its future and ``on_error``; when neither is looked at (no
    ``on_error``, and ``result()``/``exception()`` never called), the error is logged as a warning
    once the future is dropped, as asyncio does for tasks, so it is never lost silently.
    """

    _label = ""
    _observed = False

    def result(self, timeout: float | None = None) -> Any:
        self._observed = True
        return super().result(timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        self._observed = True
        return super().exception(timeout)

    def __del__(self) -> None:
        try:
            if not self._observed and not self.cancelled() and self.done() and self._exception is not None:
                logger.warning("inspector.loader: loading %s failed and nobody retrieved the error: %s",
                               self._label, self._exception)  # fmt: skip
        except Exception:  # never raise from a finalizer (e.g. at interpreter exit)
            pass


@dataclass(eq=False)
class Request:
    """One ``load`` call on its way through the pool (internal and mutable)."""

    id: int
    storage: Any
    path: str | None  # None: not a file storage, loaded in-process with storage.load()
    callback: Callable[[Any], Any] | None
    on_error: Callable[[BaseException], Any] | None
    device: Any  # None for host memory, else a torch.device
    future: LoadFuture = field(default_factory=LoadFuture)
    submitted: float = field(default_factory=time.perf_counter)
    dispatched: float = 0.0
    worker: int | None = None
    worker_key: int = -1
    segment: Segment | None = None
    size_hint: int = 0
    running: bool = False
    reserved: int = 0  # segment bytes counted against the pool's budget

    @property
    def label(self) -> str:
        return self.path if self.path is not None else repr(self.storage)


@dataclass(frozen=True)
class Loaded:
    """A worker read ``size`` bytes for ``request`` between ``read_start`` and ``read_end``."""

    request: Request
    size: int
    read_start: float
    read_end: float
    received: float


@dataclass(frozen=True)
class Failed:
    request: Request
    error: BaseException


@dataclass(frozen=True)
class InProcess:
    request: Request


Item = Loaded | Failed | InProcess


class Deliverer:
    """Owns the delivery thread; ``finished(request)`` is called after every item."""

    def __init__(
        self,
        segments: SegmentPool,
        finished: Callable[[Request, bool], None],
        record: Callable[[LoadTiming], None],
        staging: Any,
    ) -> None:
        self._segments = segments
        self._finished = finished
        self._record = record
        self._staging = staging
        self._queue: queue.SimpleQueue[Item | Callable[[], None]] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._run, name="inspector-loader-delivery", daemon=True)
        self.thread.start()

    def put(self, item: Item) -> None:
        self._queue.put(item)

    def stop(self, after: Callable[[], None]) -> None:
        """End the thread once every item queued so far is delivered; then run ``after`` on it."""
        self._queue.put(after)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if callable(item):
                item()
                return
            ok = False
            try:
                ok = self._deliver(item)
            except BaseException:  # the thread must survive anything a payload or user code does
                logger.exception("inspector.loader: delivery failed unexpectedly")
            finally:
                self._finished(item.request, ok)
                del item  # holding the last item would keep its object (and segment) alive

    def _deliver(self, item: Item) -> bool:
        request = item.request
        started = time.perf_counter()
        obj: Any = None
        error: BaseException | None = item.error if isinstance(item, Failed) else None
        leaves, h2d, size = 0, 0.0, 0
        if isinstance(item, Loaded):
            size = item.size
            try:
                obj, leaves, h2d = self._build(request, item.size)
            except Exception as exc:
                error = exc
        elif isinstance(item, InProcess):
            try:
                obj = request.storage.load()
            except Exception as exc:
                error = exc
        built = time.perf_counter()
        if error is None:
            _call(request.callback, obj, "callback", request)
        elif request.on_error is not None:
            request.future._observed = True  # handed to on_error: someone looked
            _call(request.on_error, error, "on_error", request)
        ended = time.perf_counter()
        if isinstance(item, Loaded):
            self._record(
                LoadTiming(
                    request_id=request.id,
                    path=request.label,
                    worker=request.worker,
                    nbytes=size,
                    leaves=leaves,
                    device=str(request.device) if request.device is not None else "cpu",
                    ok=error is None,
                    queued=max(request.dispatched - request.submitted, 0.0),
                    read=item.read_end - item.read_start,
                    handoff=max(item.received - item.read_end, 0.0),
                    wait=max(started - item.received, 0.0),
                    build=built - started - h2d,
                    h2d=h2d,
                    callback=ended - built,
                    total=ended - request.submitted,
                )
            )
        try:
            if error is None:
                request.future.set_result(obj)
            else:
                request.future._label = request.label
                request.future.set_exception(error)
        except InvalidStateError:
            pass
        return error is None

    def _build(self, request: Request, size: int) -> tuple[Any, int, float]:
        segment, request.segment = request.segment, None
        assert segment is not None and request.path is not None
        image = self._segments.lease(segment, size)
        maker = None if request.device is None else self._staging.factory_maker(request.device)
        obj, factory = decode_image(image, size, request.path, maker)
        return obj, factory.leaves, getattr(factory, "h2d_seconds", 0.0)


def _call(fn: Callable[[Any], Any] | None, arg: Any, what: str, request: Request) -> None:
    if fn is None:
        return
    try:
        fn(arg)
    except Exception:
        logger.exception("inspector.loader: %s %r for %s raised; the loader keeps going", what, fn, request.label)
