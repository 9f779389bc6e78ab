"""The worker process: read storage files straight into shared-memory segments the parent owns.

This is the whole worker. It is a top-level function so the ``spawn`` and ``forkserver`` start
methods can import it; it needs no torch and keeps no state but its segment mappings. Messages
are small tuples (see NOTE [ Worker protocol ] in ``_pool``); array bytes never cross the pipe.
"""

from __future__ import annotations

import errno
import mmap
import os
import signal
import time
import traceback
from multiprocessing.connection import Connection
from multiprocessing.reduction import recv_handle

from inspector.loader._errors import StorageCorruptError
from inspector.loader._format import PRELUDE_SIZE, check_header_crc, parse_prelude
from inspector.loader._regular_file import RegularFile

# How often an idle worker checks that its parent is still alive.
POLL_INTERVAL_S = 0.5


def worker_main(conn: Connection, index: int, parent_pid: int) -> None:
    """Serve requests until told to stop, the pipe closes, or the parent dies."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the parent; it stops us cleanly
    maps: dict[int, mmap.mmap] = {}
    unmappable: dict[int, OSError] = {}
    try:
        conn.send(("ready", os.getpid()))  # inside: a parent that gave up on us has closed the socket
        while True:
            if not conn.poll(POLL_INTERVAL_S):
                if os.getppid() != parent_pid:
                    return
                continue
            message = conn.recv()
            op = message[0]
            if op == "load":
                if message[3] in maps:
                    conn.send(_load(maps, *message[1:]))
                else:  # the segment could not be mapped here: say so, the parent forgets the mapping
                    failed = unmappable.pop(message[3], None)
                    reason = failed.strerror if failed is not None else "unknown segment"
                    errno_value = (failed.errno or 0) if failed is not None else 0
                    conn.send(("err", message[1], "unmapped", f"cannot map the shared-memory segment: {reason}",
                               errno_value, "", 0.0, 0.0))  # fmt: skip
            elif op == "map":
                _, seg_id, capacity = message
                fd = recv_handle(conn)
                try:
                    maps[seg_id] = mmap.mmap(fd, capacity, flags=mmap.MAP_SHARED | _POPULATE)
                except OSError as exc:  # answered by the load that wanted it, not fatal to the worker
                    unmappable[seg_id] = exc
                finally:
                    os.close(fd)
            elif op == "unmap":
                segment = maps.pop(message[1], None)
                if segment is not None:
                    segment.close()
            elif op == "stop":
                return
    except (EOFError, OSError):
        return  # the parent is gone
    finally:
        for segment in maps.values():
            segment.close()


_POPULATE = getattr(mmap, "MAP_POPULATE", 0)


def _load(maps: dict[int, mmap.mmap], req_id: int, path: str, seg_id: int) -> tuple:
    started = time.perf_counter()
    try:
        size = _read_into(maps[seg_id], path)
    except _TooSmall as exc:
        return ("grow", req_id, exc.size)
    except StorageCorruptError as exc:
        return ("err", req_id, "corrupt", exc.reason, 0, "", started, time.perf_counter())
    except OSError as exc:
        kind = "missing" if exc.errno == errno.ENOENT else "os"
        return ("err", req_id, kind, exc.strerror or str(exc), exc.errno or 0, "", started, time.perf_counter())
    except Exception as exc:  # reported with where it happened, never swallowed
        text = traceback.format_exc()
        return ("err", req_id, "internal", f"{type(exc).__name__}: {exc}", 0, text, started, time.perf_counter())
    return ("ok", req_id, size, started, time.perf_counter())


class _TooSmall(Exception):
    def __init__(self, size: int) -> None:
        self.size = size


def _read_into(segment: mmap.mmap, path: str) -> int:
    """Read the whole file at ``path`` into ``segment``; check its prelude and header checksum."""
    with RegularFile(path) as file:
        if file.size > len(segment):
            raise _TooSmall(file.size)
        with memoryview(segment) as view:
            got = file.read_into(view[: file.size])
            prelude = parse_prelude(view[:PRELUDE_SIZE], got, path)
            check_header_crc(view[prelude.header_start : prelude.header_start + prelude.header_len], prelude, path)
        return got
