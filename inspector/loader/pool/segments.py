"""The pool that recycles shared-memory segments (``shared_segment``) through leases.

NOTE [ Segment ownership ]
*Anonymous segments.* The main process creates every segment with ``memfd_create`` (or, where
that is missing, ``shm_open`` immediately followed by ``shm_unlink``), checks that the memory is
there to be had, and hands the file descriptor to a worker with the first request that uses it
(``SCM_RIGHTS``, NOTE [ Worker protocol ]). That worker reserves its pages with
``posix_fallocate`` before it maps and fills it, so a new segment's page cost (zeroing, about
1.5 GB/s) is paid by the worker that needs it, in parallel with the others, never by the thread
that reads every worker's replies; and "shared memory is full" is still a clear
``SharedMemoryError`` for that load instead of a ``SIGBUS`` on first write (the main process
never writes a segment). No segment ever has a name in ``/dev/shm``, so nothing can be left
behind there by a crash, a ``kill -9`` or an exit without ``shutdown``: the memory goes away with
the last mapping, and no ``resource_tracker`` registration is involved.

*Hand-over by lease.* A worker reads a whole storage file into a segment; the main process
then builds the delivered arrays as views over that segment, with no copy. From that moment
the segment is *leased*: it belongs to the arrays just delivered, and the pool will not give
it to a worker again until every one of them has been garbage-collected (a ``weakref``
callback on the one uint8 array all leaves are views of). So a delivered array never aliases
memory a worker may write again, consumers may keep what they got for as long as they like,
and recycled segments stay mapped, avoiding the first-touch page-fault cost a fresh buffer per
load would pay. The price: a consumer that keeps one small leaf keeps the whole segment; copy
it (``leaf.copy()``) to let the rest go.

*What a kept payload costs.* Its whole segment: at least ``MIN_CAPACITY`` (64 KiB, so a kept
1 KiB payload holds 64 KiB) and otherwise its size class (``capacity_for``, at most 12.5% over
the file's size); one memory mapping of it in this process and one in the worker that read into
it (until the segment is dropped), so ``vm.max_map_count`` (65,530 by default) bounds how many
payloads a process can keep at once; and **no file descriptor**: mappings are made without
keeping a descriptor (``mapping``), and a segment's own descriptor is closed when it is leased.
A segment that comes back from a lease can then only go to a worker that has mapped it
already; one that no live worker has mapped is dropped.

*Across fork.* A child made by ``os.fork()`` inherits every mapping, so the arrays it inherits
view the very pages the parent's segments hold. A segment leased when a fork happens is
therefore never recycled by the parent: once its arrays die in the parent it is dropped, not
given to a worker again, and the child's view of what it inherited never changes (the pages
live on as long as the child maps them). Each lease records the fork epoch it was made in
(``ForkEpoch``: counted after each fork in the parent, and marked as forking from just before
the fork until then), and a released segment from an older epoch, or one released while a fork
is under way, is dropped. Segments free or busy at the fork have no arrays to inherit.

The callback may run on any thread, even inside garbage collection while this pool's lock is
held, so it only appends to a deque (atomic, lock-free); the pool folds released segments back
in the next time it is used. The callback *is* that deque's ``append`` (a C function; the
weakref, a ``KeyedRef``, carries its segment), so no Python code runs when an array dies, and a
Ctrl-C striking then cannot lose the segment. The pool never unmaps a segment a lease may still export: it drops
its reference and the mapping disappears with the last array.
"""

from __future__ import annotations

import collections
import threading
import time
import weakref
from dataclasses import dataclass

import numpy as np

from inspector.loader._errors import SharedMemoryError
from inspector.loader.pool.shared_segment import ForkEpoch, Segment, capacity_for, create_segment

MAX_FREE_BYTES = 1 << 30  # free bytes kept for reuse: at least this, or five of the largest segments
IDLE_DROP_S = 10.0  # a free segment unused this long is unmapped


@dataclass(frozen=True)
class PoolCounts:
    """How many segments the pool holds, by state, and their bytes."""

    free: int
    busy: int
    leased: int
    bytes_total: int


class SegmentPool:
    """Segments by state; see NOTE [ Segment ownership ]."""

    def __init__(self, name_prefix: str, max_free: int) -> None:
        self._prefix = name_prefix
        self._max_free = max_free
        self._lock = threading.Lock()
        self._segments: dict[int, Segment] = {}
        self._free: list[Segment] = []
        self._released: collections.deque[Segment | weakref.KeyedRef] = collections.deque()  # a dead lease's key
        self._unmaps: collections.deque[tuple[int, int]] = collections.deque()
        self._next_id = 0
        self._closed = False
        self._peak = 0  # the most bytes in use (busy or leased) lately: free ones are kept up to this much
        self._peak_at = time.monotonic()

    def leased_like(self, nbytes: int) -> bool:
        """Whether a leased segment would fit ``nbytes`` once its arrays die."""
        limit = 2 * capacity_for(nbytes)
        with self._lock:
            return any(s.state == "leased" and nbytes <= s.capacity <= limit for s in self._segments.values())

    def take_free(self, nbytes: int, worker: int, peek: bool = False) -> Segment | None:
        """A free segment of at least ``nbytes`` that ``worker`` can use (preferring one it has mapped), or None;
        with ``peek`` it stays free."""
        limit = 2 * capacity_for(nbytes)
        with self._lock:
            if self._released:
                self._collect_released()
            best: Segment | None = None
            best_rank = (True, 0)
            for seg in self._free:
                if nbytes <= seg.capacity <= limit:
                    mapped = worker in seg.mapped_by
                    if mapped or seg.fd >= 0:
                        rank = (not mapped, seg.capacity)
                        if best is None or rank < best_rank:
                            best, best_rank = seg, rank
            if best is None or peek:
                return best
            self._free.remove(best)
            best.state = "busy"
            self._note_in_use()
            return best

    def acquire(self, nbytes: int, worker: int) -> Segment:
        """A busy segment of at least ``nbytes`` for ``worker``: a free one, else a new one (may be slow)."""
        seg = self.take_free(nbytes, worker)
        if seg is not None:
            return seg
        with self._lock:
            seg_id = self._next_id
            self._next_id += 1
        name = f"{self._prefix}-{seg_id}"
        try:
            seg = create_segment(seg_id, capacity_for(nbytes), name, reserve=False)  # the worker reserves it
        except SharedMemoryError:  # short of memory: the free segments go first, then it is tried once more
            with self._lock:
                if not self._free:
                    raise
                for free in self._free:
                    self._drop(free)
                self._free.clear()
            seg = create_segment(seg_id, capacity_for(nbytes), name, reserve=False)
        with self._lock:
            self._segments[seg_id] = seg
            self._note_in_use()
            self._trim()
        return seg

    def lease(self, seg: Segment, nbytes: int) -> np.ndarray:
        """The uint8 array over ``seg`` that every delivered leaf will view; its death frees ``seg``."""
        base = np.frombuffer(seg.buffer, np.uint8, count=nbytes)
        seg.state = "leased"
        seg.epoch = ForkEpoch.count
        seg.close_fd()  # a kept payload holds no descriptor
        seg.lease = weakref.KeyedRef(base, self._released.append, seg)  # kept on seg so it can fire
        return base

    def release(self, seg: Segment) -> None:
        """Return a busy segment nobody views (a failed or abandoned load)."""
        self._released.append(seg)

    def mark_mapped(self, seg: Segment, worker: int) -> None:
        with self._lock:
            seg.mapped_by.add(worker)

    def discard(self, seg: Segment) -> None:
        """Drop a busy segment that cannot be used (its pages could not be reserved)."""
        with self._lock:
            if seg.id in self._segments:
                self._drop(seg)

    def forget_mapping(self, seg: Segment, worker: int) -> None:
        """``worker`` could not map ``seg``: hand it over again next time."""
        with self._lock:
            seg.mapped_by.discard(worker)

    def forget_worker(self, worker: int) -> None:
        """A worker died: its mappings are gone with it."""
        with self._lock:
            for seg in self._segments.values():
                seg.mapped_by.discard(worker)

    def take_unmaps(self) -> list[tuple[int, int]]:
        """(worker, segment id) pairs whose worker should drop its mapping."""
        if not self._unmaps and not self._released:
            return []
        with self._lock:
            self._collect_released()
            taken = list(self._unmaps)
            self._unmaps.clear()
        return taken

    def counts(self) -> PoolCounts:
        with self._lock:
            self._collect_released()
            states = collections.Counter(s.state for s in self._segments.values())
            total = sum(s.capacity for s in self._segments.values())
        return PoolCounts(states["free"], states["busy"], states["leased"], total)

    def mapped_count(self, worker: int) -> int:
        with self._lock:
            return sum(worker in s.mapped_by for s in self._segments.values())

    def descriptors(self) -> list[int]:
        """The descriptors the pool holds open (free and busy segments not leased yet)."""
        with self._lock:
            return [s.fd for s in self._segments.values() if s.fd >= 0]

    def close(self) -> None:
        """Drop every segment; mappings a lease still exports live on until its arrays die."""
        with self._lock:
            self._closed = True
            self._collect_released()
            for seg in list(self._segments.values()):
                self._drop(seg)
            self._free.clear()

    def abandon(self) -> None:
        """In a forked child: close the inherited descriptors and forget every segment, telling nobody.

        The lock is not taken but replaced: a parent thread may have held it at the fork.
        """
        self._lock = threading.Lock()
        self._closed = True
        for seg in list(self._segments.values()):
            seg.close_fd()
        self._segments.clear()
        self._free.clear()
        self._released.clear()
        self._unmaps.clear()

    def trim_idle(self) -> None:
        """Unmap free segments nobody has used for ``IDLE_DROP_S`` (the pool shrinks when idle)."""
        with self._lock:
            self._collect_released()
            stale = time.monotonic() - IDLE_DROP_S
            if self._peak_at < stale:  # the working set of a while ago no longer counts
                self._peak, self._peak_at = self._in_use(), time.monotonic()
            for seg in [s for s in self._free if s.last_used < stale]:
                self._free.remove(seg)
                self._drop(seg)

    def drop_unreachable(self, live_workers: set[int]) -> None:
        """Drop free segments without a descriptor that no live worker has mapped: nobody could use them."""
        with self._lock:
            for seg in [s for s in self._free if s.fd < 0 and not (s.mapped_by & live_workers)]:
                self._free.remove(seg)
                self._drop(seg)

    def _collect_released(self) -> None:
        if not self._released:
            return
        while self._released:
            item = self._released.popleft()
            seg: Segment = item.key if isinstance(item, weakref.KeyedRef) else item
            if self._closed or seg.id not in self._segments:
                continue
            if seg.state == "leased" and (ForkEpoch.forking or seg.epoch != ForkEpoch.count):
                self._drop(seg)  # a forked child may still view it: never write it again
                continue
            seg.state = "free"
            seg.lease = None
            seg.last_used = time.monotonic()
            self._free.append(seg)
        self._trim()

    def _in_use(self) -> int:
        return sum(s.capacity for s in self._segments.values() if s.state != "free")

    def _note_in_use(self) -> None:
        """Track the working set (hold the lock): a consumer that keeps n payloads while n more load needs 2n."""
        in_use = self._in_use() if len(self._segments) < 4096 else self._peak  # bounded cost per acquire
        if in_use >= self._peak:
            self._peak, self._peak_at = in_use, time.monotonic()

    def _trim(self) -> None:
        if len(self._free) <= 1:
            return
        free_bytes = sum(s.capacity for s in self._free)
        budget = max(MAX_FREE_BYTES, self._peak)  # recycling beats first-touch page faults: keep the working set
        if len(self._free) <= self._max_free and free_bytes <= budget:
            return  # the common case, decided without looking at every segment
        largest = max((s.capacity for s in self._segments.values()), default=0)
        budget = max(budget, 5 * largest)
        while len(self._free) > self._max_free or (
            len(self._free) > 1 and sum(s.capacity for s in self._free) > budget
        ):
            oldest = min(self._free, key=lambda s: s.last_used)
            self._free.remove(oldest)
            self._drop(oldest)

    def _drop(self, seg: Segment) -> None:
        self._segments.pop(seg.id, None)
        seg.close_fd()
        seg.buffer = None  # unmapped here once no lease exports it
        if not self._closed:
            self._unmaps.extend((worker, seg.id) for worker in seg.mapped_by)
        seg.mapped_by = set()
