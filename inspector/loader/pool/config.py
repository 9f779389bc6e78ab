"""A pool's settings, fixed when it starts: one record handed to every part that needs one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from inspector._messages import Message

DEPTH = 4  # requests queued at each worker, so it starts the next read the moment it finishes one
OUTSTANDING_BYTES = 1 << 28  # past this, only two requests per worker hold segments at once (fewer new segments)
INLINE_BYTES = 4 << 20  # the default largest payload read on the caller's thread (NOTE [ Small loads in the caller ])


def no_reason(path: str) -> str | None:
    """The default ``why_missing``: nothing is known about files that are gone."""
    return None


def drop_timing(timing: tuple[Any, ...]) -> None:
    """The default ``record``: timings are not kept."""


@dataclass(frozen=True)
class PoolConfig:
    """What a ``WorkerPool`` is: its name, size and limits, and two hooks into its loader.

    ``why_missing(path)`` explains a file that is gone (expired after ``ttl``, removed at shutdown)
    and ``record(marks)`` receives each delivered load's clock readings as a plain tuple, the
    arguments of ``LoadTiming.from_marks`` (made into records only when asked for).
    """

    name: str
    worker_num: int
    why_missing: Callable[[str], str | None] = no_reason
    record: Callable[[tuple[Any, ...]], None] = drop_timing
    depth: int = DEPTH
    outstanding_bytes: int = OUTSTANDING_BYTES
    inline_bytes: int = INLINE_BYTES

    def __post_init__(self) -> None:
        if type(self.worker_num) is not int or self.worker_num < 1:
            headline = f"worker_num must be a positive int, got {self.worker_num!r}"
            step = "pass worker_num=1 or more (about one per core you can spare)"
            raise ValueError(str(Message(headline, next_step=step)))
        if type(self.depth) is not int or self.depth < 1:
            raise ValueError(f"depth must be a positive int, got {self.depth!r}")
        if type(self.inline_bytes) is not int or self.inline_bytes < 0:
            raise ValueError(
                f"inline_bytes must be an int >= 0, got {self.inline_bytes!r}\n"
                "next step = pass 0 to send every load to a worker, or a size in bytes"
            )

    @property
    def max_outstanding(self) -> int:
        """Requests that may hold a segment at once (in flight or awaiting their callback)."""
        return self.worker_num * (self.depth + 1)
