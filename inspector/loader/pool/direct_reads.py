"""Callers that read their own replies, and the sweep that finds a request an interrupt stranded.

NOTE [ Waiting callers read their own replies ]
A thread that blocks in ``future.result()`` (or ``exception()``) on a load that runs no code of
the user's when it completes, already sent to a worker, does not wait to be woken by the I/O
thread: it reads that worker's socket itself (``receive_for``) and completes whatever replies
arrive there, its own included, on its own thread, saving a thread hand-off per load. Each
worker's socket has one reader at a time (``WorkerHandle.rx``: a caller waits its turn, briefly,
and finds its reply already read if the holder read it); while it reads, the I/O thread's epoll
stops reporting that socket (``modify(fd, 0)``, restored after; level-triggered, so a reply left
unread is reported at once), and the I/O thread skips an event for a socket whose reader is
taken. The caller blocks in one ``recv`` (the socket's
receive timeout, ``READ_WAIT_S``, bounds it), or polls for a deadline nearer than that, and stops
as soon as its own future is done, at its timeout, or when the worker's socket closes (a death is
the I/O thread's to handle).

A caller may be interrupted (Ctrl-C: Python raises it between any two steps), and no request may
be lost to it. A reply read but not yet handled stays in the channel's buffer, marked, and is
handled before the interrupt goes on (``Channel.leftover``); one interrupted while it is handled
goes back to the front of the queue (``IOLoop.retry``: the worker is done with its segment), and
is loaded again. For the few steps where neither can know (and the same steps anywhere else a
caller's thread moves a request, such as a dispatch), the I/O thread sweeps every
``POLL_INTERVAL_S`` for open requests that are in no queue, at no worker and handled by no one
(``sweep_orphans``: one whose reply began to be handled counts only after ``HANDLING_STUCK_S``);
one found so twice in a row is put back in the queue (its books opened again if an interrupt
closed them before its future was answered). A reply read and lost
leaves its request at the worker, which will not answer it again: a worker in flight since the
last sweep gets a ``Ping``, and since a worker answers in order, whatever was in flight there when
the Ping went out and is still there when its ``Pong`` comes back lost its reply and goes back to
the queue. The sweep also watches again the socket of every worker nobody reads (a caller
interrupted while it gave it back).
"""

from __future__ import annotations

import contextlib
import logging
import select
import time
from collections.abc import Callable
from typing import Any

from inspector.loader.pool.messages import Ping
from inspector.loader.pool.worker_handles import READ_WAIT_S, WorkerHandle

logger = logging.getLogger("inspector.loader")

HANDLING_STUCK_S = 2.0  # a reply whose handling began this long ago, and is not answered, was interrupted


def receive_for(loop: Any, worker: WorkerHandle, done: Callable[[], bool], deadline: float | None) -> None:
    """On a caller's thread: read ``worker``'s replies here until ``done()``, the ``deadline`` (monotonic) or the
    socket's end; it may also return at once (the I/O thread reads them then)."""
    epoll = loop.epoll
    if epoll is None or worker.dead:
        return
    with worker.rx:  # a ``with`` takes and gives back the lock with no gap an interrupt could fall into
        if done() or worker.dead:  # whoever held it may have read this very reply
            return
        fd = worker.channel.fileno()
        try:
            epoll.modify(fd, 0)  # the I/O thread stops watching it meanwhile
            _read_until(loop, worker, fd, done, deadline)
        except (OSError, ValueError):  # not watched yet (a worker just started), or gone: the I/O thread reads it
            return
        except BaseException:  # an interrupt: a reply read but not handled yet is handled first
            late = worker.channel.leftover()
            if late is not None:
                loop.handle(worker, late, recovering=True)
            raise
        finally:
            with contextlib.suppress(OSError, ValueError):
                epoll.modify(fd, select.EPOLLIN)  # level-triggered: a reply left unread is reported at once


def _read_until(loop: Any, worker: WorkerHandle, fd: int, done: Callable[[], bool], deadline: float | None) -> None:
    channel = worker.channel
    while not done():
        left = READ_WAIT_S if deadline is None else deadline - time.monotonic()
        if left <= 0:
            return
        try:
            if left >= READ_WAIT_S:  # one blocking read, which gives up after READ_WAIT_S
                message = channel.receive_message(block=True)
            else:
                if worker.poller is None:
                    worker.poller = select.poll()
                    worker.poller.register(fd, select.POLLIN)
                message = channel.receive_message() if worker.poller.poll(left * 1000) else None
        except EOFError:
            return  # its socket closed: the I/O thread handles the death
        except ValueError as exc:  # a garbled message: a bug, logged
            logger.error("inspector.loader: worker %d sent %s", worker.index, exc)
            continue
        if message is not None:
            loop.handle(worker, message)


def answered_before(loop: Any, worker: WorkerHandle) -> None:
    """A ``Pong``: requests in flight at ``worker`` when its Ping went out that are still there lost their reply."""
    state = loop.state
    pinged, worker.pinged = worker.pinged or [], None
    with state.lock:
        lost = [worker.in_flight.pop(rid) for rid in pinged if rid in worker.in_flight]
    for request in lost:
        logger.warning("inspector.loader: the reply to %s was lost to an interrupt; loading it again", request.label)
        loop.retry(request)


def sweep_orphans(loop: Any) -> None:
    """On the I/O thread, now and then: put back (or fail) open requests nobody holds, seen so twice in a row."""
    state = loop.state
    with state.lock:
        held = {r.id for r in state.pending}
        for w in state.workers:
            held.update(w.in_flight)
        candidates = [r for r in list(state.requests.values()) if r.id not in held and not r.queued]
    # a reply is handled in microseconds: one whose handling began long ago was interrupted
    now = time.monotonic()
    stranded = [r for r in candidates if not r.future.done() and now - r.handling > HANDLING_STUCK_S]
    loop.sweeps += 1
    with state.lock:  # a worker with requests in flight since the last sweep, sent: is it done with them?
        to_ping = [(w, [rid for rid, r in w.in_flight.items() if r.sent and rid in loop.in_flight_before])
                   for w in state.workers if w.pinged is None or loop.sweeps - w.pinged_at > 2]  # a Pong lost too
        loop.in_flight_before = {rid for w in state.workers for rid in w.in_flight}
    to_ping = [(w, ids) for w, ids in to_ping if ids]
    for w, ids in to_ping:
        w.pinged, w.pinged_at = ids, loop.sweeps
        with contextlib.suppress(OSError):
            w.channel.send(Ping())
    epoll = loop.epoll
    for w in list(state.workers):
        if epoll is not None and not w.dead and w.rx.acquire(blocking=False):
            try:
                with contextlib.suppress(OSError, ValueError):
                    epoll.modify(w.channel.fileno(), select.EPOLLIN)
            finally:
                w.rx.release()
    orphans = [r for r in stranded if r.id in loop.suspects]
    loop.suspects = {r.id for r in stranded} - {r.id for r in orphans}
    for request in orphans:
        logger.warning("inspector.loader: the load of %s was stranded by an interrupt; loading it again",
                       request.label)  # fmt: skip
        if request.finished:
            loop.reopen(request)
        else:
            loop.retry(request)
