"""The one helper that stops child processes: terminate, wait (bounded), then kill."""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Iterable

KILL_WAIT_S = 5.0


def wait_or_kill(popen: subprocess.Popen[bytes], timeout: float) -> bool:
    """Wait up to ``timeout`` for an exit, else kill and wait again (bounded); True if it exited by itself."""
    try:
        popen.wait(max(0.0, timeout))
        return True
    except subprocess.TimeoutExpired:
        popen.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            popen.wait(KILL_WAIT_S)
        return False


def stop_processes(popens: Iterable[subprocess.Popen[bytes]], grace: float = KILL_WAIT_S) -> None:
    """Terminate every process still running, give them ``grace`` seconds together, then kill the rest."""
    running = [popen for popen in popens if popen.poll() is None]
    for popen in running:
        with contextlib.suppress(ProcessLookupError):
            popen.terminate()
    deadline = time.monotonic() + grace
    for popen in running:
        wait_or_kill(popen, deadline - time.monotonic())
