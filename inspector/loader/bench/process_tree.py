"""This process's descendants, read from ``/proc``: their memory while a loader runs, and stopping leftovers.

Linux only (elsewhere every reading is empty): ``descendants`` walks ``/proc/*/stat`` for parent
ids; ``resident_bytes`` sums ``VmRSS``; ``shared_bytes`` sums the shared-memory mappings
(``/dev/shm`` files and memfds, each counted once however many processes map it), which is where
a DataLoader's workers put the tensors they hand over. ``PeakSampler`` keeps the peaks of both
while a loader runs. ``stop_leftovers`` ends the descendants a run started and left running
(terminate, a bounded wait, then kill), so a sweep never leaves a worker behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterable

SAMPLE_S = 0.1
STOP_WAIT_S = 5.0


def descendants(pid: int | None = None) -> set[int]:
    """The live descendants of ``pid`` (this process by default), zombies excluded."""
    root = os.getpid() if pid is None else pid
    parents: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return set()
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields and fields[0] != b"Z":
            parents.setdefault(int(fields[1]), []).append(int(name))
    found: set[int] = set()
    stack = [root]
    while stack:
        for child in parents.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def resident_bytes(pids: Iterable[int]) -> int:
    """The sum of ``VmRSS`` over ``pids`` (those that exited count 0)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
                        break
        except (OSError, ValueError):
            continue
    return total


def shared_bytes(pids: Iterable[int]) -> int:
    """Bytes of shared memory (``/dev/shm`` files, memfds) mapped by ``pids``, each mapping's file once."""
    seen: dict[tuple[str, str], int] = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/maps") as maps:
                for line in maps:
                    if "/dev/shm/" not in line and "memfd:" not in line:
                        continue
                    parts = line.split(maxsplit=5)
                    start, end = (int(x, 16) for x in parts[0].split("-"))
                    key = (parts[3], parts[4])  # (device, inode)
                    seen[key] = max(seen.get(key, 0), end - start)
        except (OSError, ValueError, IndexError):
            continue
    return sum(seen.values())


class PeakSampler:
    """Samples the resident and shared memory of this process and the descendants it starts (those in
    ``exclude``, already running, are another loader's) every ``SAMPLE_S`` while in use; the peaks."""

    def __init__(self, exclude: Iterable[int] = ()) -> None:
        self.exclude = set(exclude)
        self.peak_rss = 0
        self.peak_shared = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="inspector-sweep-memory", daemon=True)

    def _sample(self) -> None:
        pids = {os.getpid(), *(descendants() - self.exclude)}
        self.peak_rss = max(self.peak_rss, resident_bytes(pids))
        self.peak_shared = max(self.peak_shared, shared_bytes(pids))

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self._sample()

    def __enter__(self) -> PeakSampler:
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        with contextlib.suppress(Exception):
            self._sample()


def wait_gone(pids: set[int], timeout: float) -> set[int]:
    """Wait up to ``timeout`` for ``pids`` to exit (or turn zombie); those still running."""
    deadline = time.monotonic() + timeout
    while True:
        alive = pids & descendants()
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.02)


def stop_leftovers(before: set[int], timeout: float = STOP_WAIT_S) -> list[int]:
    """Stop this process's descendants not in ``before`` still running after ``timeout``; the pids stopped."""
    left = wait_gone(descendants() - before, timeout)
    stopped = sorted(left)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not left:
            break
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        left = wait_gone(left, timeout)
    return stopped
