"""What the main process and a worker say to each other: small named records (standard library only).

NOTE [ Worker protocol ]
Each worker is a fresh interpreter running ``worker_process`` (see ``worker_handles``), joined
to the main process by one ``SOCK_SEQPACKET`` Unix socket pair, so every message arrives whole
and descriptors sent with a message arrive with it (``SCM_RIGHTS``). The messages are:

    main -> worker   ReadFile(request_id, size, segment_id, capacity, reserve)
                         carries the storage file's descriptor, opened and checked by the main
                         process; capacity > 0: the segment's descriptor rides along too (map it,
                         after reserving its pages first when ``reserve``: a new segment)
                     DropSegment(segment_id)            StopWorker()
    worker -> main   WorkerReady(pid)
                     FileRead(request_id, size, read_start, read_end)
                     ReadFailed(request_id, kind, message, errno, traceback, read_start, read_end)

The main process opens each file and checks its prelude and header against its real size
(``storage.reader.StorageFile``, NOTE [ Header plans ]) before it picks a segment, then hands
the open descriptor over, so the worker reads exactly the file that was checked, a FIFO or a
file that only claims to be huge never reaches it, and it needs no path lookup of its own (each
costs a system call). A worker answers
its requests in the order it got them, one reply each, matched by ``request_id``. Array bytes
never cross the socket: a worker reads a whole storage file straight into the shared-memory
segment named by the request (NOTE [ Segment ownership ]). On the wire a record is
``marshal``-encoded as ``(tag, *fields)``: both ends are this package, and neither ever
unpickles anything.
"""

from __future__ import annotations

import marshal
from typing import Any, NamedTuple

MAX_TRACEBACK = 16 * 1024  # characters of a worker traceback sent back (a message must fit MAX_MESSAGE)
MAX_MESSAGE = 64 * 1024


class ReadFile(NamedTuple):
    """Read ``size`` bytes of the file whose descriptor comes along into segment ``segment_id``.

    With ``capacity`` > 0 the segment's descriptor comes along too (second): map it first, and with ``reserve``
    reserve its pages before that (``posix_fallocate``: the main process makes new segments without touching
    their memory, so the worker that first fills one pays for its pages, in parallel with the others).
    """

    request_id: int
    size: int
    segment_id: int
    capacity: int
    reserve: bool


class DropSegment(NamedTuple):
    """Unmap segment ``segment_id``: the main process dropped it."""

    segment_id: int


class StopWorker(NamedTuple):
    """Exit now."""


class WorkerReady(NamedTuple):
    """The worker runs and waits for requests."""

    pid: int


class FileRead(NamedTuple):
    """``size`` bytes of the request's file are in its segment, checked."""

    request_id: int
    size: int
    read_start: float
    read_end: float


class ReadFailed(NamedTuple):
    """The request failed; ``kind`` is truncated, os, unmapped, nomem (a new segment's pages) or internal."""

    request_id: int
    kind: str
    message: str
    errno: int
    traceback: str
    read_start: float
    read_end: float


Message = ReadFile | DropSegment | StopWorker | WorkerReady | FileRead | ReadFailed
_KINDS: tuple[type[Any], ...] = (ReadFile, DropSegment, StopWorker, WorkerReady, FileRead, ReadFailed)
_TAGS = {kind: tag for tag, kind in enumerate(_KINDS)}


def encode(message: Message) -> bytes:
    """The wire form of ``message``."""
    return marshal.dumps((_TAGS[type(message)], *message))


def decode(data: bytes | memoryview) -> Message:
    """The record ``data`` encodes; ``ValueError`` for anything else."""
    try:
        fields = marshal.loads(data)
        message: Message = _KINDS[fields[0]]._make(fields[1:])
    except (EOFError, TypeError, IndexError, ValueError) as exc:
        raise ValueError(f"not a loader message ({exc})") from None
    return message
