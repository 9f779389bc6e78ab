"""Small loads read on the caller's thread, into recycled private memory, when the page cache holds them.

NOTE [ Small loads in the caller ]
A load costs the worker path a fixed price whatever its size: a request to a worker and its
reply (two thread hand-offs and a round trip between processes), a segment handed over and
mapped, and the delivery. For a payload of a few KiB that is most of the time, and even at 1 MiB
it is several times the copy itself. So ``load`` first opens the file on the caller's thread
(the same checked ``StorageFile`` every reader uses) and, when it is at most ``inline_bytes``
and wholly in the page cache (``RWF_NOWAIT``: the caller never waits for a disk), reads it here
into a buffer of private memory and builds the payload over it. Without a callback the future is
answered before ``load`` returns; with one (or ``on_error``), the built payload goes straight to
the delivery thread, which runs the callback as for any load (registered among the open requests
as every load is, so ``shutdown`` and fork see it). A file that is larger,
not cached, or a load for a device or a storage that is not a file, takes the worker path, and
so does one above ``ALWAYS_BYTES`` while other loads are under way: there the workers read in
parallel, and a caller reading one payload after another would only hold them up. A callback's
payload is read here only while the delivery thread's backlog is within the pool's budget.

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
import time
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from inspector.loader._errors import StorageCorruptError, StorageNotFoundError
from inspector.loader.pool.requests import Request
from inspector.loader.pool.segments import capacity_for
from inspector.loader.storage.image import decode_image
from inspector.loader.storage.reader import StorageFile

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

    def try_load(self, request: Request) -> bool:
        """True when ``request`` was answered here; False when it must be queued: for a worker, or (read here, in
        ``request.prebuilt``) for the delivery thread."""
        path = request.path
        if path is None or request.device is not None or self.limit <= 0:
            return False
        started = time.perf_counter()
        try:
            file = StorageFile(path, nowait=True)
        except BlockingIOError:
            return False  # not in the page cache (or no way to tell): a worker waits for the disk instead
        except FileNotFoundError:
            return self._finish(request, None, StorageNotFoundError(path, self._why_missing(path)), ())
        except StorageCorruptError as exc:
            return self._finish(request, None, exc, ())
        except OSError as exc:
            return self._finish(request, None, OSError(exc.errno, f"Could not open {path!r} to load it: "
                                                                  f"{exc.strerror}"), ())  # fmt: skip
        except Exception as exc:  # a path the OS refuses as a value (a NUL byte): that load fails
            return self._finish(request, None, exc, ())
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
