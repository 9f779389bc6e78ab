"""Small loads read on the caller's thread, into recycled private memory, when the page cache holds them.

NOTE [ Small loads in the caller ]
A load costs the worker path a fixed price whatever its size: a request to a worker and its
reply (two thread hand-offs and a round trip between processes), a segment handed over and
mapped, and the delivery. For a payload of a few KiB that is most of the time, and even at 1 MiB
it is several times the copy itself. So ``load`` first tries the file on the caller's thread:
when it is at most ``inline_bytes`` and wholly in the page cache (``RWF_NOWAIT``: the caller
never waits for a disk), it is read here into a buffer of private memory with one call (room
for the size it had last time: ``reader.read_whole``), checked as every reader checks it, and
the payload is built over it. Without a callback the future is
answered before ``load`` returns. A load with a callback (or ``on_error``) is instead queued for
the delivery thread itself and ``load`` returns at once: that thread reads it the same way when
its turn comes and runs the callback right after, with no hand-over between threads (or queues
the load for a worker when it must). A thread that only read and handed each payload on cost more
than the read it moved off the delivery thread: each hand-over wakes a thread, and every system
call of two threads that both run Python passes the GIL between them, which on a busy two-core
machine cost more than the read itself (``benchmarks/loader.py``, the 1 MiB ``versus_sync``
cell). Every such load is registered among the open requests as every load is, so ``shutdown``
waits for it and fork fails it. A file that is larger, not cached, or a load for a device or a
storage that is not a file, takes the worker path, and so does one above ``ALWAYS_BYTES`` while
other loads are pending or at a worker: there the workers read in parallel.

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
from typing import TYPE_CHECKING, Any

import numpy as np

from inspector.loader._errors import StorageCorruptError
from inspector.loader.pool.shared_segment import capacity_for
from inspector.loader.storage.image import decode_image
from inspector.loader.storage.reader import load_error, read_whole

if TYPE_CHECKING:
    from inspector.loader.pool.requests import Request

ALWAYS_BYTES = 256 << 10  # at most this, always read here; larger (to ``inline_bytes``) only when the pool is idle
SIZES_KEPT = 4096  # paths whose last size is remembered; all are forgotten when more are seen
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
        busy: Callable[[], bool],
    ) -> None:
        self.limit = limit
        self._why_missing = why_missing
        self._record = record
        self._count = count
        self._busy = busy
        self.buffers = Buffers()
        self._sizes: dict[str, int] = {}  # each path's size when last read here: the room of its next read

    def _admits(self, size: int) -> bool:
        """Whether a file of ``size`` bytes is read here (see the NOTE): larger ones go to a worker."""
        return size <= self.limit and (size <= ALWAYS_BYTES or not self._busy())

    def reads_later(self, request: Request) -> bool:
        """A load with a callback that may be read here: the delivery thread tries it; the caller returns at once."""
        return self.limit > 0 and request.needs_delivery and request.path is not None and request.device is None

    def try_load(self, request: Request) -> bool:
        """True when ``request`` was answered here; False when it was read here but its callback is left to run (the
        outcome in ``request.prebuilt``), or when it must go to a worker (``request.prebuilt`` is None)."""
        path = request.path
        if path is None or request.device is not None or self.limit <= 0:
            return False
        sizes = self._sizes
        expected = sizes.get(path, 0)
        if expected > self.limit or (expected > ALWAYS_BYTES and self._busy()):
            return False  # most likely still that large: a worker reads it
        started = time.perf_counter()
        try:
            whole = read_whole(path, self.buffers.lease, expected, self._admits)
        except BlockingIOError:
            return False  # not in the page cache (or no way to tell): a worker waits for the disk instead
        except Exception as exc:  # the same failure a worker would have met
            return self._finish(request, None, load_error(exc, path, self._why_missing), ())
        if whole is None:
            return False
        image, size, plan = whole
        if len(sizes) >= SIZES_KEPT:
            sizes.clear()
        sizes[path] = size
        read_end = time.perf_counter()
        try:
            if plan.views is not None:
                obj, leaves = plan.build(image), len(plan.leaves)
            else:
                obj, leaves, _h2d = decode_image(image, size, path, None, plan)
        except StorageCorruptError as exc:
            return self._finish(request, None, exc, ())
        built = time.perf_counter()
        marks = (
            request.id,
            path,
            None,
            size,
            leaves,
            None,
            True,
            request.submitted,
            started,
            started,
            read_end,
            read_end,
            read_end,
            built,
        )
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
