"""Frozen snapshots the loader hands out: per-load stage timings and live pool status."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

STAGES = ("queued", "read", "handoff", "wait", "build", "h2d", "callback")
STAGE_LABELS = {
    "queued": "waiting for a worker",
    "read": "read into shared memory",
    "handoff": "hand-off (worker to main)",
    "wait": "waiting behind earlier callbacks",
    "build": "copy out: build arrays (views, no copy)",
    "h2d": "host to device",
    "callback": "callback",
}


@dataclass(frozen=True)
class LoadTiming:
    """Where one load spent its time, in seconds (see ``STAGE_LABELS``)."""

    request_id: int
    path: str
    worker: int | None
    nbytes: int
    leaves: int
    device: str
    ok: bool
    queued: float
    read: float
    handoff: float
    wait: float
    build: float
    h2d: float
    callback: float
    total: float

    @classmethod
    def from_marks(
        cls,
        request_id: int,
        path: str,
        worker: int | None,
        nbytes: int,
        leaves: int,
        device: Any,
        ok: bool,
        submitted: float,
        dispatched: float,
        read_start: float,
        read_end: float,
        received: float,
        started: float,
        built: float,
        h2d: float,
        ended: float,
    ) -> LoadTiming:
        """The record of one load from the clock readings the pool takes as it goes (``perf_counter`` seconds)."""
        return cls(
            request_id,
            path,
            worker,
            nbytes,
            leaves,
            "cpu" if device is None else str(device),
            ok,
            max(dispatched - submitted, 0.0),
            read_end - read_start,
            max(received - read_end, 0.0),
            max(started - received, 0.0),
            built - started - h2d,
            h2d,
            ended - built,
            ended - submitted,
        )

    def stage_seconds(self) -> dict[str, float]:
        return {stage: getattr(self, stage) for stage in STAGES}


@dataclass(frozen=True)
class WorkerStatus:
    """One worker process as the pool last saw it."""

    index: int
    pid: int | None
    alive: bool
    ready: bool
    busy: bool
    in_flight: int
    loads_done: int
    segments_mapped: int
    restarts: int


@dataclass(frozen=True)
class LoaderStatus:
    """A loader's pool at one moment: workers, requests and shared-memory segments."""

    name: str
    running: bool
    worker_num: int
    workers: tuple[WorkerStatus, ...]
    pending: int
    in_flight: int
    loads_done: int
    loads_failed: int
    segments_free: int
    segments_busy: int
    segments_leased: int
    segment_bytes: int

    @property
    def segments(self) -> int:
        return self.segments_free + self.segments_busy + self.segments_leased

    def __repr__(self) -> str:
        alive = sum(w.alive for w in self.workers)
        state = "running" if self.running else "stopped"
        return (
            f"<LoaderStatus {self.name!r}: {state}, {alive}/{self.worker_num} workers alive, "
            f"{self.pending} pending, {self.loads_done} loads done, {self.loads_failed} failed, "
            f"{self.segments} segments>"
        )

    def _repr_html_(self) -> str:
        from inspector._display import html_table

        rows = [
            (w.index, w.pid, w.alive, w.ready, w.busy, w.in_flight, w.loads_done, w.segments_mapped, w.restarts)
            for w in self.workers
        ]
        head = ("worker", "pid", "alive", "ready", "busy", "in flight", "loads", "segments", "restarts")
        return html_table(head, rows, repr(self)[1:-1])
