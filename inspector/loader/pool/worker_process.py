"""The code that runs inside a worker process: read storage files straight into shared-memory segments.

The main process starts this module in a fresh interpreter (NOTE [ Starting workers ] in
``worker_handles``), so a worker never imports the user's ``__main__`` and needs no
``if __name__ == "__main__":`` guard anywhere. It imports the standard library only, keeps no
state but its segment mappings (which hold no descriptor, see ``mapping``), and exits when told
to, when its socket closes, or when its parent changes (the parent died). Each file arrives as
a descriptor the main process has opened and checked (NOTE [ Worker protocol ] in ``messages``).
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import sys
import time
import traceback
from collections.abc import Sequence
from typing import Any

from inspector.loader.pool.channel import Channel, Received, set_receive_timeout
from inspector.loader.pool.mapping import map_shared
from inspector.loader.pool.messages import (
    MAX_TRACEBACK,
    DropSegment,
    FileRead,
    ReadFailed,
    ReadFile,
    StopWorker,
    WorkerReady,
)

POLL_INTERVAL_S = 0.5  # how often an idle worker checks that its parent is still alive


def serve(channel: Channel, parent_pid: int) -> None:
    """Answer requests on ``channel`` until told to stop, the socket closes, or the parent dies."""
    maps: dict[int, Any] = {}
    set_receive_timeout(channel.sock, POLL_INTERVAL_S)
    try:
        channel.send(WorkerReady(os.getpid()))  # inside: a parent that gave up on us has closed the socket
        while True:
            received = channel.receive()
            if received is None:  # a quiet interval: is the parent still there?
                if os.getppid() != parent_pid:
                    return
                continue
            message = received.message
            if type(message) is ReadFile:
                reply, file_fd = handle_read(maps, message, received)
                try:
                    channel.send(reply)
                finally:  # after the reply: the main process is not kept waiting for a close
                    if file_fd >= 0:
                        os.close(file_fd)
            elif isinstance(message, DropSegment):
                maps.pop(message.segment_id, None)  # unmapped once no view is left
            elif isinstance(message, StopWorker):
                return
            else:
                _close_all(received.fds)
    except (EOFError, OSError):
        return  # the parent is gone
    finally:
        maps.clear()


def handle_read(maps: dict[int, memoryview], request: ReadFile, received: Received) -> tuple[Any, int]:
    """Map the segment if it came along, then read the file into it; the reply, and the file's descriptor for the
    caller to close once the reply is sent (-1: closed already)."""
    fds = received.fds
    expected = 2 if request.capacity > 0 else 1
    if received.fds_lost or len(fds) != expected:
        _close_all(fds)
        code = errno.EMFILE if received.fds_lost else errno.EBADF
        kind = "unmapped" if request.capacity > 0 else "os"
        return ReadFailed(
            request.request_id, kind, f"a descriptor did not reach the worker ({os.strerror(code)})", code, "", 0.0, 0.0
        ), -1
    file_fd = fds[0]
    if request.capacity > 0:
        try:
            if request.reserve and hasattr(os, "posix_fallocate"):
                os.posix_fallocate(fds[1], 0, request.capacity)  # out of memory is an error here, not a SIGBUS
        except OSError as exc:
            os.close(fds[1])
            return ReadFailed(
                request.request_id,
                "nomem",
                f"cannot reserve the segment's pages: {exc.strerror}",
                exc.errno or 0,
                "",
                0.0,
                0.0,
            ), file_fd
        try:
            # pages that exist (another worker filled them) are mapped in one go; new ones fault in as they are read
            populate = not request.reserve
            maps[request.segment_id] = memoryview(map_shared(fds[1], request.capacity, populate=populate)).cast("B")
        except OSError as exc:
            return ReadFailed(
                request.request_id,
                "unmapped",
                f"cannot map the shared-memory segment: {exc.strerror}",
                exc.errno or 0,
                "",
                0.0,
                0.0,
            ), file_fd
        finally:
            os.close(fds[1])
    segment = maps.get(request.segment_id)
    if segment is None:  # the main process forgets the mapping and hands the segment over again
        return ReadFailed(
            request.request_id, "unmapped", "cannot map the shared-memory segment: unknown segment", 0, "", 0.0, 0.0
        ), file_fd
    return read_into_segment(file_fd, segment, request.request_id, request.size), file_fd


def read_into_segment(fd: int, view: memoryview, request_id: int, size: int) -> Any:
    """Read ``size`` bytes of the open file ``fd`` (its header already checked) into the segment ``view``; the
    reply."""
    started = time.perf_counter()
    try:
        if size > len(view):
            raise ValueError(f"{size} bytes do not fit a segment of {len(view)}")
        got = 0
        while got < size:
            n = os.preadv(fd, [view[got:size]], got)
            if n == 0:
                return ReadFailed(
                    request_id,
                    "truncated",
                    f"truncated while being read: {got} of {size} bytes",
                    0,
                    "",
                    started,
                    time.perf_counter(),
                )
            got += n
    except OSError as exc:
        return ReadFailed(request_id, "os", exc.strerror or str(exc), exc.errno or 0, "", started, time.perf_counter())
    except Exception as exc:  # reported with where it happened, never swallowed
        text = traceback.format_exc()[-MAX_TRACEBACK:]
        return ReadFailed(request_id, "internal", f"{type(exc).__name__}: {exc}", 0, text, started, time.perf_counter())
    return FileRead(request_id, got, started, time.perf_counter())


def _close_all(fds: tuple[int, ...]) -> None:
    for fd in fds:
        os.close(fd)


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m inspector.loader.pool.worker_process FD INDEX PARENT_PID``: serve on the socket ``FD``."""
    fd, _index, parent_pid = (int(arg) for arg in (sys.argv[1:] if argv is None else argv))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the parent; it stops us cleanly
    channel = Channel(socket.socket(fileno=fd))
    try:
        serve(channel, parent_pid)
    finally:
        channel.close()


if __name__ == "__main__":
    main()
