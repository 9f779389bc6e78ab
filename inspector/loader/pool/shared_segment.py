"""One shared-memory segment with no name on disk: its size class, its creation, and the fork epoch its
leases are counted in (NOTE [ Segment ownership ] in ``segments``)."""

from __future__ import annotations

import errno
import os
import time
import weakref
from typing import Any, Literal

from inspector.loader._errors import SharedMemoryError
from inspector.loader.pool.mapping import map_shared

MIN_CAPACITY = 64 * 1024
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


class ForkEpoch:
    """How many times this process has forked, and whether a fork is under way (see NOTE [ Segment ownership ])."""

    count = 0
    forking = False

    @classmethod
    def before(cls) -> None:
        cls.forking = True

    @classmethod
    def after_in_parent(cls) -> None:
        cls.count += 1  # first: a lease made during the fork is from the old epoch
        cls.forking = False

    @classmethod
    def after_in_child(cls) -> None:
        cls.forking = False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=ForkEpoch.before, after_in_parent=ForkEpoch.after_in_parent, after_in_child=ForkEpoch.after_in_child
    )


class Segment:
    """One shared-memory segment as the main process sees it."""

    __slots__ = ("buffer", "capacity", "epoch", "fd", "id", "last_used", "lease", "mapped_by", "reserved", "state")

    def __init__(self, seg_id: int, capacity: int, fd: int, buffer: Any) -> None:
        self.id = seg_id
        self.capacity = capacity
        self.fd = fd  # closed (-1) once leased: see NOTE [ Segment ownership ]
        self.buffer: Any = buffer
        self.mapped_by: set[int] = set()
        self.reserved = False  # its pages were reserved by a worker (``posix_fallocate``), which then filled it
        self.state: State = "busy"
        self.last_used = time.monotonic()
        self.lease: weakref.KeyedRef | None = None  # its key is this segment
        self.epoch = 0  # ForkEpoch.count when it was last leased

    def close_fd(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)


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


def create_segment(seg_id: int, capacity: int, name: str, reserve: bool = True) -> Segment:
    """A new anonymous segment of ``capacity`` bytes, its pages reserved here (``reserve``) or by the first worker
    it is handed to.

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
        if reserve and hasattr(os, "posix_fallocate"):
            os.posix_fallocate(fd, 0, capacity)
        buffer = map_shared(fd, capacity)
    except OSError as exc:
        os.close(fd)
        raise SharedMemoryError(capacity, exc) from exc
    return Segment(seg_id, capacity, fd, buffer)
