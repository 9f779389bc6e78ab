"""Small loads read on the caller's thread, into recycled private memory, when the page cache holds them.

NOTE [ Small loads in the caller ]
A load costs the worker path a fixed price whatever its size: a request to a worker and its
reply (two thread hand-offs and a round trip between processes), a segment handed over and
mapped, and the delivery. For a payload of a few KiB that is most of the time, and even at 1 MiB
it is several times the copy itself. So ``load`` first opens the file on the caller's thread
(the same checked ``StorageFile`` every reader uses) and, when it is at most ``inline_bytes``
and wholly in the page cache (``RWF_NOWAIT``: the caller never waits for a disk), reads it here
into a buffer of private memory and builds the payload over it. Without a callback the future is
answered before ``load`` returns. A load with a callback (or ``on_error``) is instead handed to
one of ``READERS`` reader threads of the pool and ``load`` returns at once: the reader does the
same (reads release the GIL, so two overlap), then hands the built payload to the delivery
thread, which runs the callback as for any load, or queues the load for a worker when it must.
Every such load is registered among the open requests as every load is, so ``shutdown`` waits
for it and fork fails it. A file that is larger, not cached, or a load for a device or a storage
that is not a file, takes the worker path, and so does one above ``ALWAYS_BYTES`` while other
loads are pending or at a worker: there the workers read in parallel. A callback's payload is
read here only while the delivery thread's backlog is within the pool's budget.

The buffers are recycled like segments (NOTE [ Segment ownership ]): a payload leases its buffer,
and the buffer comes back once every array of it is garbage-collected (a ``KeyedRef`` whose
callback is a deque's C-level ``append``), already faulted in, so a steady stream of small loads
pays no first-touch page faults. Private memory needs no fork epoch: a forked child's view of it
is copy-on-write. Nothing here takes a lock or changes the pool's books but one counter, so a
Ctrl-C on the caller's thread can at worst drop a buffer (freed like any object) or the load the
caller was making (NOTE [ Interrupts while waiting ] in ``requests``).
"""

from __future__ import annotations

import collections
import contextlib
import queue
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from inspector.loader._errors import StorageCorruptError
from inspector.loader.pool.requests import Request
from inspector.loader.pool.segments import capacity_for
from inspector.loader.storage.image import decode_image
from inspector.loader.storage.reader import open_for_load

READERS = 2  # threads that read loads with a callback: reads release the GIL, so two overlap on two cores
BACKLOG_POLL_S = 0.0005  # how often a reader looks again while the delivery thread's backlog is full
ALWAYS_BYTES = 256 << 10  # at most this, always read here; larger (to ``inline_bytes``) only when the pool is idle
FREE_BYTES_KEPT = 256 << 20  # free buffers kept for reuse, in bytes, beyond which they are let go


class Buffers:
    """Private uint8 buffers by size class, handed out as leases and taken back when their arrays die."""

    def __init__(self) -> None:
        self._free: dict[int, collections.deque[bytearray]] = {}
        self._returned: collections.deque[weakref.KeyedRef] = collections.deque()
        self._leases: dict[int, weakref.KeyedRef] = {}  # live leases by id (a weakref must outlive its referent)
        self.free_bytes = 0

    def lease(self, nbytes: int) -> np.ndarray:
        """A uint8 array of ``nbytes`` over a recycled buffer (or a new one); its death returns the buffer."""
        self._collect()
        capacity = capacity_for(nbytes)
        free = self._free.get(capacity)
        try:
            raw = free.pop()  # type: ignore[union-attr]
            self.free_bytes -= capacity
        except (AttributeError, IndexError):  # none of this size free (another thread may have taken the last)
            raw = bytearray(capacity)
        # Every leaf views ``base`` itself: numpy makes a view's base the first array that owns its memory or
        # wraps another object, so a slice of an array would hand the leaves ``raw`` and let ``base`` die early.
        base = np.frombuffer(raw, np.uint8, nbytes)
        lease = weakref.KeyedRef(base, self._returned.append, raw)
        self._leases[id(lease)] = lease
        return base

    def _collect(self) -> None:
        """Fold returned buffers back into the free lists (any thread; lock-free)."""
        while self._returned:
            try:
                ref = self._returned.popleft()
            except IndexError:
                return
            self._leases.pop(id(ref), None)
            raw = ref.key
            if self.free_bytes + len(raw) > FREE_BYTES_KEPT:
                continue  # let it go: enough are kept
            self._free.setdefault(len(raw), collections.deque()).append(raw)
            self.free_bytes += len(raw)

    def clear(self) -> None:
        self._free.clear()
        self.free_bytes = 0


class InlineReader:
    """``try_load``: complete a small file load here, or say it must take the worker path (see the NOTE)."""

    def __init__(
        self,
        limit: int,
        why_missing: Callable[[str], str | None],
        record: Callable[[tuple[Any, ...]], None],
        count: Callable[[bool], None],
        busy: Callable[[bool, bool], bool],
    ) -> None:
        self.limit = limit
        self._why_missing = why_missing
        self._record = record
        self._count = count
        self._busy = busy
        self.buffers = Buffers()
        self._jobs: queue.SimpleQueue[Request | None] = queue.SimpleQueue()
        self._readers: list[threading.Thread] = []

    def wants_reader(self, request: Request) -> bool:
        """A load with a callback that may be read here: a reader thread tries it, and the caller returns at once."""
        return bool(self._readers) and request.needs_delivery and request.path is not None and request.device is None

    @property
    def put_now(self) -> Callable[[Request | None], None]:
        """The reader queue's own ``put`` (a C function: an interrupt comes before it or after it)."""
        return self._jobs.put

    def start_readers(self, name: str, forward: Callable[[Request], None], backlog_full: Callable[[], bool]) -> None:
        """Start the reader threads (on the pool's start); each hands what it read, or could not, to ``forward``,
        and waits while ``backlog_full()``: the delivery thread has as many payloads as it may hold."""
        if self.limit <= 0:
            return
        for i in range(READERS):
            thread = threading.Thread(target=self._serve, args=(forward, backlog_full), name=f"{name}-reader-{i}",
                                      daemon=True)  # fmt: skip
            self._readers.append(thread)  # before it starts: an interrupt inside start() must not hide a live thread
            thread.start()

    def stop_readers(self, timeout: float) -> None:
        """Let the reader threads finish what is queued, then end (nothing more is queued once the pool stopped).

        Safe to call again after an interrupted call: the list is emptied only once every thread was told.
        """
        readers = list(self._readers)
        for _ in readers:
            self._jobs.put(None)  # one each; a thread told twice leaves a spare None, which nothing reads
        self._readers = []
        for thread in readers:
            if thread is not threading.current_thread():
                with contextlib.suppress(RuntimeError):  # never started: the interrupt came before start() began it
                    thread.join(timeout)

    def _serve(self, forward: Callable[[Request], None], backlog_full: Callable[[], bool]) -> None:
        while True:
            request = self._jobs.get()
            if request is None:
                return
            while backlog_full():  # a worker would only add to the same backlog: wait for room instead
                time.sleep(BACKLOG_POLL_S)
            try:
                self.try_load(request)  # leaves the outcome in ``request.prebuilt``, or None: for a worker
            except BaseException as exc:  # a bug of ours: that load fails, none hangs
                request.prebuilt = (None, exc, ())
            forward(request)
            del request

    def try_load(self, request: Request) -> bool:
        """True when ``request`` was answered here; False when it must be queued: for a worker, or (read here, in
        ``request.prebuilt``) for the delivery thread."""
        path = request.path
        if path is None or request.device is not None or self.limit <= 0:
            return False
        started = time.perf_counter()
        try:
            file = open_for_load(path, self._why_missing, nowait=True)
        except BlockingIOError:
            return False  # not in the page cache (or no way to tell): a worker waits for the disk instead
        if isinstance(file, BaseException):  # the same failure a worker would have met
            return self._finish(request, None, file, ())
        with file:
            size = file.size
            if size > self.limit or self._busy(size > ALWAYS_BYTES, request.needs_delivery):
                return False
            image = self.buffers.lease(size)
            read_start = time.perf_counter()
            try:
                if size <= len(file.head):
                    image[:] = np.frombuffer(file.head, np.uint8, size)
                    got = size
                else:
                    got = file.read_into(image.data, nowait=True)
            except BlockingIOError:
                return False
            except OSError as exc:
                return self._finish(request, None, OSError(exc.errno, f"Could not read {path!r}: {exc.strerror}"), ())
            read_end = time.perf_counter()
        try:
            if got != size:
                raise StorageCorruptError(path, f"truncated while being read: {got} of {size} bytes")
            plan = file.plan
            if plan.views is not None and plan.file_size == size:
                obj, leaves = plan.build(image), len(plan.leaves)
            else:
                obj, leaves, _h2d = decode_image(image, size, path, None, plan)
        except StorageCorruptError as exc:
            return self._finish(request, None, exc, ())
        built = time.perf_counter()
        marks = (request.id, path, None, size, leaves, None, True, request.submitted, started, read_start, read_end,
                 read_end, read_end, built)  # fmt: skip
        return self._finish(request, obj, None, marks)

    def _finish(self, request: Request, obj: Any, error: BaseException | None, marks: tuple[Any, ...]) -> bool:
        if request.needs_delivery:  # a callback or on_error runs on the delivery thread, as for any load
            request.prebuilt = (obj, error, marks)
            return False
        if marks:
            self._record((*marks, 0.0, time.perf_counter()))
        self._count(error is None)
        if error is None:
            request.future.set_result(obj)
        else:
            request.future.set_exception(error)
        return True
