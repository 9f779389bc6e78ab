"""Shared-memory segments with no name on disk, and the pool that recycles them through leases.

NOTE [ Segment ownership ]
*Anonymous segments.* The main process creates every segment with ``memfd_create`` (or, where
that is missing, ``shm_open`` immediately followed by ``shm_unlink``), reserves its pages with
``posix_fallocate`` and hands the file descriptor to a worker over its Unix socket
(``SCM_RIGHTS``). No segment ever has a name in ``/dev/shm``, so nothing can be left behind
there by a crash, a ``kill -9`` or an exit without ``shutdown``: the memory goes away with
the last mapping. Reserving up front turns "shared memory is full" into a clear
``SharedMemoryError`` at creation instead of a ``SIGBUS`` on first write, and no
``resource_tracker`` registration is involved.

*Hand-over by lease.* A worker reads a whole storage file into a segment; the main process
then builds the delivered arrays as views over that segment, with no copy. From that moment
the segment is *leased*: it belongs to the arrays just delivered, and the pool will not give
it to a worker again until every one of them has been garbage-collected (a ``weakref``
callback on the one uint8 array all leaves are views of). So a delivered array never aliases
memory a worker may write again, consumers may keep what they got for as long as they like,
and recycled segments stay mapped, avoiding the first-touch page-fault cost a fresh buffer per
load would pay. The price: a consumer that keeps one small leaf keeps the whole segment; copy
it (``leaf.copy()``) to let the rest go.

The callback may run on any thread, even inside garbage collection while this pool's lock is
held, so it only appends to a deque (atomic, lock-free); the pool folds released segments back
in the next time it is used. The pool never calls ``mmap.close()`` on a segment a lease may
still export: it drops its reference and the mapping disappears with the last array.
"""

from __future__ import annotations

import collections
import errno
import mmap
import os
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Literal

import numpy as np

from inspector.loader._errors import SharedMemoryError

MIN_CAPACITY = 64 * 1024
MAX_FREE_BYTES = 1 << 30  # free bytes kept for reuse: at least this, or five of the largest segments
IDLE_DROP_S = 10.0  # a free segment unused this long is unmapped
HEADROOM = 0.10  # share of available memory a new segment must leave free
State = Literal["free", "busy", "leased"]


def capacity_for(nbytes: int) -> int:
    """The segment size used for ``nbytes``: eight size classes per doubling (at most 12.5% slack)."""
    if nbytes <= MIN_CAPACITY:
        return MIN_CAPACITY
    step = 1 << max((nbytes - 1).bit_length() - 4, 12)
    return (nbytes + step - 1) // step * step


def _anonymous_fd(name: str) -> int:
    if hasattr(os, "memfd_create"):
        return os.memfd_create(name, os.MFD_CLOEXEC)
    import _posixshmem

    shm_name = "/" + name
    fd = _posixshmem.shm_open(shm_name, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    _posixshmem.shm_unlink(shm_name)
    return fd


class Segment:
    """One shared-memory segment as the main process sees it."""

    __slots__ = ("capacity", "fd", "id", "last_used", "lease", "mapped_by", "mm", "state")

    def __init__(self, seg_id: int, capacity: int, fd: int, mm: mmap.mmap) -> None:
        self.id = seg_id
        self.capacity = capacity
        self.fd = fd
        self.mm: mmap.mmap | None = mm
        self.mapped_by: set[int] = set()
        self.state: State = "busy"
        self.last_used = time.monotonic()
        self.lease: weakref.ref[np.ndarray] | None = None


def available_memory() -> int | None:
    """Bytes this process could still get: MemAvailable, capped by a cgroup v2 limit (None if unknown)."""
    found: list[int] = []
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    found.append(int(line.split()[1]) * 1024)
                    break
        with open("/sys/fs/cgroup/memory.max") as limit_file:
            limit = limit_file.read().strip()
        if limit != "max":
            with open("/sys/fs/cgroup/memory.current") as current_file:
                found.append(int(limit) - int(current_file.read()))
    except (OSError, ValueError):
        pass
    return min(found) if found else None


def create_segment(seg_id: int, capacity: int, name: str) -> Segment:
    """A new anonymous segment of ``capacity`` bytes, its pages reserved.

    An anonymous segment is limited by memory, not by the size of ``/dev/shm``, and reserving
    more than the machine has would summon the OOM killer rather than return an error; so the
    size is checked against the memory still available (keeping ``HEADROOM`` of it free) first.
    """
    room = available_memory()
    if room is not None and capacity > room * (1 - HEADROOM):
        shortage = OSError(errno.ENOMEM, f"only {room / 2**20:.0f} MiB of memory are available")
        raise SharedMemoryError(capacity, shortage)
    try:
        fd = _anonymous_fd(name)
    except OSError as exc:
        raise SharedMemoryError(capacity, exc) from exc
    try:
        os.ftruncate(fd, capacity)
        if hasattr(os, "posix_fallocate"):
            os.posix_fallocate(fd, 0, capacity)
        mm = mmap.mmap(fd, capacity, flags=mmap.MAP_SHARED)
    except OSError as exc:
        os.close(fd)
        raise SharedMemoryError(capacity, exc) from exc
    return Segment(seg_id, capacity, fd, mm)


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
        self._released: collections.deque[Segment] = collections.deque()
        self._unmaps: collections.deque[tuple[int, int]] = collections.deque()
        self._next_id = 0
        self._closed = False

    def acquire(self, nbytes: int, worker: int) -> Segment:
        """A busy segment of at least ``nbytes``, preferring one ``worker`` has mapped already."""
        wanted = capacity_for(nbytes)
        with self._lock:
            self._collect_released()
            fits = [s for s in self._free if nbytes <= s.capacity <= 2 * wanted]
            if fits:
                seg = min(fits, key=lambda s: (worker not in s.mapped_by, s.capacity))
                self._free.remove(seg)
                seg.state = "busy"
                return seg
            seg_id = self._next_id
            self._next_id += 1
        seg = create_segment(seg_id, wanted, f"{self._prefix}-{seg_id}")
        with self._lock:
            self._segments[seg_id] = seg
            self._trim()
        return seg

    def lease(self, seg: Segment, nbytes: int) -> np.ndarray:
        """The uint8 array over ``seg`` that every delivered leaf will view; its death frees ``seg``."""
        assert seg.mm is not None
        base = np.frombuffer(seg.mm, np.uint8, count=nbytes)
        seg.state = "leased"
        released = self._released
        seg.lease = weakref.ref(base, lambda _ref: released.append(seg))  # kept on seg so it can fire
        return base

    def release(self, seg: Segment) -> None:
        """Return a busy segment nobody views (a failed or abandoned load)."""
        self._released.append(seg)

    def mark_mapped(self, seg: Segment, worker: int) -> None:
        with self._lock:
            seg.mapped_by.add(worker)

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

    def close(self) -> None:
        """Drop every segment; mappings a lease still exports live on until its arrays die."""
        with self._lock:
            self._closed = True
            self._collect_released()
            for seg in list(self._segments.values()):
                self._drop(seg)
            self._free.clear()

    def _collect_released(self) -> None:
        while self._released:
            seg = self._released.popleft()
            if self._closed or seg.id not in self._segments:
                continue
            seg.state = "free"
            seg.last_used = time.monotonic()
            self._free.append(seg)
        self._trim()

    def trim_idle(self) -> None:
        """Unmap free segments nobody has used for ``IDLE_DROP_S`` (the pool shrinks when idle)."""
        with self._lock:
            self._collect_released()
            stale = time.monotonic() - IDLE_DROP_S
            for seg in [s for s in self._free if s.last_used < stale]:
                self._free.remove(seg)
                self._drop(seg)

    def _trim(self) -> None:
        largest = max((s.capacity for s in self._segments.values()), default=0)
        budget = max(MAX_FREE_BYTES, 5 * largest)
        while len(self._free) > self._max_free or (
            len(self._free) > 1 and sum(s.capacity for s in self._free) > budget
        ):
            oldest = min(self._free, key=lambda s: s.last_used)
            self._free.remove(oldest)
            self._drop(oldest)

    def _drop(self, seg: Segment) -> None:
        self._segments.pop(seg.id, None)
        if seg.fd >= 0:
            os.close(seg.fd)
            seg.fd = -1
        seg.mm = None  # unmapped here once no lease exports it (never mmap.close() under a lease)
        if not self._closed:
            self._unmaps.extend((worker, seg.id) for worker in seg.mapped_by)
        seg.mapped_by = set()
