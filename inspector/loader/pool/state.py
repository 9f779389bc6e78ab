"""The bookkeeping a pool's threads share, behind one lock: requests, workers and counters."""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from inspector.loader.pool.requests import Request
    from inspector.loader.pool.worker_handles import WorkerHandle


@dataclass(eq=False)
class PoolState:
    """Everything the caller, I/O and delivery threads of one pool read and write; hold ``lock`` to touch it.

    ``requests`` holds every request submitted and not yet answered: ``shutdown`` waits until it is
    empty. Only the pool's own threads change anything but ``pending`` and ``requests`` (NOTE
    [ Interrupts while waiting ] in ``requests``).
    """

    worker_num: int
    lock: threading.Lock = field(default_factory=threading.Lock)
    pending: deque[Request] = field(default_factory=deque)
    requests: dict[int, Request] = field(default_factory=dict)  # not yet answered, by id: a fork fails them
    workers: list[WorkerHandle] = field(default_factory=list)
    restarts: list[int] = field(default_factory=list)
    undelivered: int = 0  # waiting for (or in) the delivery thread
    done: int = 0
    failed: int = 0
    reserved: int = 0  # segment bytes held by requests in flight or awaiting delivery
    delivery_waiting: int = 0  # callbacks blocked on a future (see NOTE [ Callbacks that wait ])
    broken: BaseException | None = None  # why no worker can be had (WorkerStartError, LoaderCrashedError)
    exit: bool = False  # the I/O thread should stop
    stopped: bool = False  # submit() refuses: shutdown() was called or the I/O thread crashed
    shut: bool = False  # shutdown() was called
    throttled: bool = False  # a request waits for a slot; whoever frees one dispatches it

    def __post_init__(self) -> None:
        self.restarts = [0] * self.worker_num

    def after_fork(self) -> None:
        """In a forked child: a fresh lock (a parent thread may have held this one at the fork)."""
        self.lock = threading.Lock()

    def unreserve(self, request: Request) -> None:
        """Stop counting ``request``'s segment against the budget (hold ``lock``)."""
        self.reserved -= request.reserved
        request.reserved = 0

    def at_workers(self) -> bool:
        """Some load is queued for a worker or at one (read without ``lock``: a hint, never a count to keep).

        A load whose future is answered but not yet forgotten, or one queued for the delivery thread, is neither.
        """
        return bool(self.pending) or any([w.in_flight for w in self.workers])

    def all_ready(self) -> bool:
        """Every worker has said it is ready (hold ``lock``)."""
        return len(self.workers) == self.worker_num and all([w.ready for w in self.workers])
