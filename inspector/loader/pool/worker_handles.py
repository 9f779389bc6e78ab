"""Worker processes as the main process sees them: start one, stop them all.

NOTE [ Starting workers ]
A worker is a fresh interpreter, ``python -P -c <bootstrap> inspector-dir FD INDEX PARENT_PID``,
started with ``subprocess.Popen`` (NOTE [ Child interpreters ] in ``inspector._child_python``: no
working directory on ``sys.path``, this very package found after the standard library), running
``worker_process.main``. Unlike a
``multiprocessing`` spawn it never imports the user's ``__main__``, so the loader works the same
from a script without an ``if __name__ == "__main__":`` guard, code piped on stdin, ``python -c``,
Jupyter, pytest and ``torchrun``; and unlike ``fork`` it copies none of the user's threads, locks
or CUDA state. The only descriptor it inherits is its end of the socket pair (``pass_fds``);
stdin is ``/dev/null`` and stdout/stderr are the parent's, so a worker that cannot start says why
where the user looks. The main process learns of a worker's death from a pidfd (Linux) or, where
there is none, from the socket closing.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from inspector._child_python import child_command, module_main
from inspector._processes import wait_or_kill
from inspector.loader._errors import WorkerSpawnError
from inspector.loader.pool.channel import Channel, socket_pair
from inspector.loader.pool.messages import StopWorker

STOP_GRACE_S = 5.0
WORKER_MODULE = "inspector.loader.pool.worker_process"


@dataclass(eq=False)
class WorkerHandle:
    """One worker process, its socket, and the requests it has been sent (by id, oldest first)."""

    index: int
    key: int  # unique per process, so a replacement never inherits its predecessor's mappings
    process: subprocess.Popen[bytes]
    channel: Channel
    death_fd: int  # readable once the process has exited (a pidfd), or -1: the socket closing says it
    ready: bool = False
    dead: bool = False
    loads_done: int = 0
    in_flight: dict[int, Any] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.process.pid

    def close(self) -> None:
        """Close our descriptors for this worker (after it has exited or been abandoned)."""
        self.channel.close()
        if self.death_fd >= 0:
            fd, self.death_fd = self.death_fd, -1
            os.close(fd)


def worker_command(fd: int, index: int) -> list[str]:
    """The command line that starts worker ``index`` serving on socket ``fd``."""
    return child_command(module_main(WORKER_MODULE), str(fd), str(index), str(os.getpid()), executable=_executable())


def describe_command() -> str:
    """The worker command line as a user would type it (for error messages)."""
    return shlex.join(worker_command(3, 0))


def _executable() -> str:
    import multiprocessing.spawn  # honours multiprocessing.set_executable() (embedded interpreters, venvs)

    return os.fsdecode(multiprocessing.spawn.get_executable() or sys.executable)


def start_worker(index: int, key: int) -> WorkerHandle:
    """Start worker ``index``; it says ``WorkerReady`` once it runs. ``WorkerSpawnError`` if the OS refuses."""
    try:
        ours, theirs = socket_pair()
    except OSError as exc:
        raise WorkerSpawnError(index, exc) from exc
    try:
        process = subprocess.Popen(
            worker_command(theirs.fileno(), index), pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL
        )
    except OSError as exc:  # EMFILE, EAGAIN, ENOMEM: nothing started
        ours.close()
        raise WorkerSpawnError(index, exc) from exc
    finally:
        theirs.close()
    try:
        death_fd = os.pidfd_open(process.pid) if hasattr(os, "pidfd_open") else -1
    except OSError:
        death_fd = -1  # an old kernel, or no descriptor left: the socket closing will tell us
    return WorkerHandle(index, key, process, Channel(ours), death_fd)


def stop_workers(workers: list[WorkerHandle]) -> None:
    """Ask each worker to stop, wait for it (``STOP_GRACE_S`` in all), kill what has not exited, close our ends."""
    for w in workers:
        with contextlib.suppress(OSError):
            w.channel.send(StopWorker())
    deadline = time.monotonic() + STOP_GRACE_S
    for w in workers:
        wait_or_kill(w.process, deadline - time.monotonic())
        w.close()
