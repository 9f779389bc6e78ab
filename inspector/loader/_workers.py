"""Worker processes as the main process sees them: start, send a load, read errors, stop.

NOTE [ Worker protocol ]
Each worker is a ``spawn`` (or ``forkserver``) process running ``_worker.worker_main`` with one
end of a Unix socket pair; no fork, so it is safe in Jupyter, under threads and after CUDA.
Messages are small tuples:

    main -> worker   ("map", seg_id, capacity) followed by the segment's fd (SCM_RIGHTS)
                     ("load", req_id, path, seg_id)     ("unmap", seg_id)     ("stop",)
    worker -> main   ("ready", pid)    ("ok", req_id, size, t_start, t_end)
                     ("grow", req_id, size)    ("err", req_id, kind, message, errno, traceback, ...)
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.context import BaseContext
from multiprocessing.process import BaseProcess
from multiprocessing.reduction import send_handle
from typing import Any

from inspector.loader._delivery import Request
from inspector.loader._errors import StorageCorruptError, StorageNotFoundError, WorkerSpawnError
from inspector.loader._segments import Segment
from inspector.loader._worker import worker_main

STOP_GRACE_S = 5.0


@dataclass(eq=False)
class WorkerHandle:
    """One worker process, its socket, and the requests it has been sent (oldest first)."""

    index: int
    key: int  # unique per process, so a replacement never inherits its predecessor's mappings
    process: BaseProcess
    conn: Connection
    ready: bool = False
    dead: bool = False
    loads_done: int = 0
    in_flight: deque[Request] = field(default_factory=deque)


def start_worker(ctx: BaseContext, index: int, key: int, start_method: str) -> WorkerHandle:
    """Start worker ``index``; it says ("ready", pid) once it runs. ``WorkerSpawnError`` if the OS refuses."""
    try:
        parent_end, child_end = ctx.Pipe(duplex=True)
    except OSError as exc:
        raise WorkerSpawnError(index, start_method, exc) from exc
    process = ctx.Process(  # type: ignore[attr-defined]
        target=worker_main,
        args=(child_end, index, os.getpid()),
        name=f"inspector-loader-worker-{index}",
        daemon=True,
    )
    try:
        process.start()
    except OSError as exc:  # EMFILE, EAGAIN, ENOMEM: nothing started
        parent_end.close()
        raise WorkerSpawnError(index, start_method, exc) from exc
    finally:
        child_end.close()
    return WorkerHandle(index, key, process, parent_end)


def send_load(worker: WorkerHandle, request: Request, segment: Segment) -> bool:
    """Ask ``worker`` to read ``request``'s file into ``segment`` (handing it the segment first if new to it).

    Returns True when ``send_handle`` passed the segment's descriptor, so the caller can record
    the mapping. Raises ``OSError`` when the worker has just died.
    """
    handed = False
    if worker.key not in segment.mapped_by:
        worker.conn.send(("map", segment.id, segment.capacity))
        send_handle(worker.conn, segment.fd, worker.process.pid or 0)
        handed = True
    worker.conn.send(("load", request.id, request.path, segment.id))
    return handed


def reply_error(worker: WorkerHandle, path: str, message: tuple[Any, ...], why_missing: str | None) -> BaseException:
    """The exception an ("err", ...) reply stands for, with the facts the worker sent."""
    _op, _id, kind, text, errno_value, trace = message[:6]
    if kind == "missing":
        return StorageNotFoundError(path, why_missing)
    if kind == "corrupt":
        return StorageCorruptError(path, text)
    if kind in ("os", "unmapped"):
        return OSError(errno_value, f"{text}: {path!r}")
    return RuntimeError(f"Loader worker {worker.index} failed while loading {path!r}: {text}\n{trace}")


def stop_workers(workers: list[WorkerHandle]) -> None:
    """Ask each worker to stop, join it, and terminate or kill what has not exited within ``STOP_GRACE_S``."""
    for w in workers:
        with contextlib.suppress(OSError):
            w.conn.send(("stop",))
    deadline = time.monotonic() + STOP_GRACE_S
    for w in workers:
        w.process.join(max(0.0, deadline - time.monotonic()))
        for stop in (w.process.terminate, w.process.kill):
            if w.process.is_alive():
                stop()
                w.process.join(1.0)
        w.conn.close()
