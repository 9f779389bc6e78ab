"""Completing a load: build the object over its leased segment, run the user's code, answer the future.

Loads whose completion runs user code (a callback, ``on_error``, a custom ``Storage.load``) or a
CUDA copy are completed on the delivery thread, one at a time and in completion order, never on
the caller's thread nor on the thread that talks to workers, so a slow callback delays later
callbacks but not the workers' reads. A small cached load with a callback is queued here unread
and read by this thread when its turn comes, then its callback runs (NOTE [ Small loads in the
caller ] in ``inline``). Every other load is completed where its reply is read, without that hop
(NOTE [ Callbacks that wait ] in ``requests``).

A callback that raises an ``Exception`` is logged with its traceback and the loader carries on;
the load itself succeeded, so its future gets the object. Anything else a callback, ``on_error``
or ``Storage.load`` raises (``SystemExit``, ``KeyboardInterrupt``: any ``BaseException``) goes to
the future, which is always answered, and the thread keeps serving. The thread also runs the
functions given to ``future.add_done_callback`` (NOTE [ Callbacks that wait ] in ``requests``).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import InvalidStateError
from typing import TYPE_CHECKING, Any

from inspector.loader.pool.requests import DELIVERY_TOKEN, Request
from inspector.loader.storage.image import decode_image

if TYPE_CHECKING:
    from inspector.loader.pool.segments import SegmentPool

logger = logging.getLogger("inspector.loader")


class Loaded:
    """A worker read ``size`` bytes for ``request`` between ``read_start`` and ``read_end``."""

    __slots__ = ("read_end", "read_start", "received", "request", "size")

    def __init__(self, request: Request, size: int, read_start: float, read_end: float, received: float) -> None:
        self.request, self.size, self.read_start, self.read_end, self.received = (
            request,
            size,
            read_start,
            read_end,
            received,
        )


class Failed:
    """``request`` failed with ``error``."""

    __slots__ = ("error", "request")

    def __init__(self, request: Request, error: BaseException) -> None:
        self.request, self.error = request, error


class InProcess:
    """``request`` names a storage that is not a file: its own ``load`` runs on the delivery thread."""

    __slots__ = ("request",)

    def __init__(self, request: Request) -> None:
        self.request = request


class Prebuilt:
    """``request`` was read on the caller's thread (``request.prebuilt``): its callback is left to run."""

    __slots__ = ("request",)

    def __init__(self, request: Request) -> None:
        self.request = request


Item = Loaded | Failed | InProcess | Prebuilt


class _Stop:
    """The last thing the delivery thread takes: run ``after``, then end."""

    __slots__ = ("after",)

    def __init__(self, after: Callable[[], None]) -> None:
        self.after = after


class Deliverer:
    """Completes loads: ``deliver_here`` on the calling thread, ``put`` on the delivery thread.

    ``finished(request, ok, forget)`` is called after every item (with ``forget`` once its future is answered: it
    leaves the open ones in the same step; else ``forget(request)`` does that); ``read(request)`` is called, on the
    delivery thread, for a ``Request`` queued unread (``put_now(request)``), and completes it (or sends it to a
    worker).
    """

    def __init__(
        self,
        segments: SegmentPool,
        finished: Callable[[Request, bool, bool], None],
        record: Callable[[tuple[Any, ...]], None],
        staging: Any,
        token: object,
        name: str,
        forget: Callable[[Request], None],
        read: Callable[[Request], None],
    ) -> None:
        self._segments = segments
        self._finished = finished
        self._record = record
        self._staging = staging
        self._forget = forget  # a request leaves the open ones once its future is answered
        self._read = read
        self._queue: queue.SimpleQueue[Item | Request | _Stop | Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()  # orders call_soon against the end of the thread
        self._closed = False
        self.thread = threading.Thread(target=self._run, name=f"{name}-delivery", daemon=True)
        setattr(self.thread, DELIVERY_TOKEN, token)

    def start(self) -> None:
        self.thread.start()

    def after_fork(self) -> None:
        """In a forked child: no delivery thread runs here, so nothing is handed to it (a fresh lock: a parent
        thread may have held this one at the fork)."""
        self._lock = threading.Lock()
        self._closed = True

    def put(self, item: Item) -> None:
        self._queue.put(item)

    @property
    def put_now(self) -> Callable[[Any], None]:
        """The queue's own ``put`` (a C function: no Python frame an interrupt could strike in before it runs)."""
        return self._queue.put

    def call_soon(self, fn: Callable[[], None]) -> bool:
        """Run ``fn`` on the delivery thread after what is queued; False once the thread has ended (run it yourself)."""
        with self._lock:
            if self._closed:
                return False
            self._queue.put(fn)
        return True

    def deliver_here(self, item: Item) -> None:
        """Complete ``item`` on this thread (it runs no user code)."""
        request = item.request
        obj: Any = None
        outcome: BaseException | None = None
        try:
            obj, outcome = self._complete(item)
        except Exception as exc:  # a bug of ours must not take the calling thread down with it
            logger.exception("inspector.loader: delivery failed unexpectedly")
            outcome = RuntimeError(f"the loader could not deliver this load ({exc!r}; see the log)")
        # The books first, the future last: whoever waits on it runs as soon as it is answered.
        self._finished(request, outcome is None, False)
        _answer(request, obj, outcome)
        self._forget(request)

    def stop(self, after: Callable[[], None]) -> None:
        """End the thread once every item queued so far is delivered; then run ``after`` on it."""
        self._queue.put(_Stop(after))

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if type(item) is _Stop:
                with self._lock:
                    self._closed = True
                while True:  # done-callbacks queued before the door closed still run
                    try:
                        late = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if callable(late):
                        _run_guarded(late)
                item.after()
                return
            if type(item) is Request:  # queued unread: read it here, then its callback runs (see the module)
                try:
                    self._read(item)
                except BaseException:  # a bug of ours: that load fails, none hangs, the thread keeps serving
                    logger.exception("inspector.loader: reading a load on the delivery thread failed unexpectedly")
                    self.deliver_queued(Failed(item, RuntimeError("the loader could not read this load (see the log)")))
                del item
                continue
            if callable(item):
                _run_guarded(item)
                continue
            assert not isinstance(item, (_Stop, Request))
            self.deliver_queued(item)
            del item  # holding the last item would keep its object (and segment) alive

    def deliver_queued(self, item: Item) -> None:
        """Complete ``item`` on the delivery thread (it may run user code), whatever that raises."""
        ok = False
        try:
            ok = self._deliver(item)
        except BaseException:  # the thread must survive anything a payload or user code does
            logger.exception("inspector.loader: delivery failed unexpectedly")
            _answer(item.request, None, RuntimeError("the loader could not deliver this load (see the log)"))
        finally:
            self._finished(item.request, ok, True)  # and forgets it

    def _deliver(self, item: Item) -> bool:
        obj, outcome = self._complete(item)
        _answer(item.request, obj, outcome)
        return outcome is None

    def _complete(self, item: Item) -> tuple[Any, BaseException | None]:
        """Build the object and run the user's code; (object, the error the future gets, or None)."""
        request = item.request
        started = time.perf_counter()
        obj: Any = None
        error: BaseException | None = item.error if isinstance(item, Failed) else None
        marks: tuple[Any, ...] = ()
        leaves, h2d, size = 0, 0.0, 0
        if isinstance(item, Loaded):
            size = item.size
            try:
                obj, leaves, h2d = self._build(request, item.size)
            except Exception as exc:  # our code only: an interrupt of the caller's thread is not the load's fault
                error = exc
        elif isinstance(item, InProcess):
            try:
                obj = request.storage.load()
            except BaseException as exc:  # a custom Storage.load may raise anything; the future hears of it
                error = exc
        elif isinstance(item, Prebuilt):
            assert request.prebuilt is not None
            obj, error, marks = request.prebuilt
            request.prebuilt = None
        built = time.perf_counter()
        outcome = error
        if error is None:
            outcome = _call(request.callback, obj, "callback", request)
        elif request.on_error is not None:
            request.future._observed = True  # handed to on_error: someone looked
            raised = _call(request.on_error, error, "on_error", request)
            if raised is not None and raised.__context__ is None:
                raised.__context__ = error  # the traceback shows what on_error was handling
            outcome = raised or error
        ended = time.perf_counter()
        if isinstance(item, Prebuilt) and marks:
            self._record((*marks, 0.0, ended))
        if isinstance(item, Loaded):  # the raw marks here; LoadTiming records are made from them when asked for
            self._record(
                (
                    request.id,
                    request.path,
                    request.worker,
                    size,
                    leaves,
                    request.device,
                    outcome is None,
                    request.submitted,
                    request.dispatched,
                    item.read_start,
                    item.read_end,
                    item.received,
                    started,
                    built,
                    h2d,
                    ended,
                )
            )
        return obj, outcome

    def _build(self, request: Request, size: int) -> tuple[Any, int, float]:
        segment, request.segment = request.segment, None
        assert segment is not None and request.path is not None
        image = self._segments.lease(segment, size)
        plan = request.plan
        if request.device is None and plan.views is not None and plan.file_size == size:
            return plan.build(image), len(plan.leaves), 0.0  # numpy leaves only: views, nothing that can fail
        maker = None if request.device is None else self._staging.factory_maker(request.device)
        return decode_image(image, size, request.path, maker, plan)


def _answer(request: Request, obj: Any, error: BaseException | None) -> None:
    try:
        if error is None:
            request.future.set_result(obj)
        else:
            request.future.set_exception(error)
    except InvalidStateError:
        pass


def _run_guarded(fn: Callable[[], None]) -> None:
    try:
        fn()
    except BaseException:  # call_guarded guards each done-callback; this is for a bug of ours
        logger.exception("inspector.loader: running done-callbacks failed unexpectedly")


def _call(fn: Callable[[Any], Any] | None, arg: Any, what: str, request: Request) -> BaseException | None:
    """Run user code: an ``Exception`` is logged and swallowed; any other ``BaseException`` is returned."""
    if fn is None:
        return None
    try:
        fn(arg)
    except Exception:
        logger.exception("inspector.loader: %s %r for %s raised; the loader keeps going", what, fn, request.label)
    except BaseException as exc:
        logger.error(
            "inspector.loader: %s %r for %s raised %s; its future gets it", what, fn, request.label, type(exc).__name__
        )
        return exc
    return None
