"""Probes for what the loader leaves behind: processes, /dev/shm entries, segment mappings and fds."""

from __future__ import annotations

import contextlib
import errno
import os
import resource
import threading
import time
from collections.abc import Iterator

import psutil


def shm_entries() -> set[str]:
    """Names in /dev/shm (ours would start with 'inspector')."""
    return set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()


def memfd_mappings(pid: int | None = None) -> list[str]:
    """Lines of /proc/<pid>/maps that map one of our anonymous segments."""
    with open(f"/proc/{pid or os.getpid()}/maps") as maps:
        return [line for line in maps if "memfd:inspector-loader" in line]


def memfd_fds(pid: int | None = None) -> list[str]:
    """Open file descriptors of ``pid`` that point at one of our anonymous segments."""
    folder = f"/proc/{pid or os.getpid()}/fd"
    found = []
    for name in os.listdir(folder):
        try:
            target = os.readlink(os.path.join(folder, name))
        except OSError:
            continue
        if "memfd:inspector-loader" in target:
            found.append(target)
    return found


def worker_processes(root: int | None = None) -> set[int]:
    """Live loader workers below ``root`` (not multiprocessing's resource tracker or forkserver)."""
    root = root or os.getpid()
    found = set()
    for child in psutil.Process(root).children(recursive=True):
        try:
            cmdline = " ".join(child.cmdline())
            if child.status() == psutil.STATUS_ZOMBIE or "resource_tracker" in cmdline:
                continue
            if "forkserver" in cmdline and child.ppid() == root:
                continue  # the fork server itself; the workers are its children
        except psutil.NoSuchProcess:
            continue
        found.add(child.pid)
    return found


def pid_alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_gone(pids: list[int], timeout: float = 15.0) -> list[int]:
    """Wait until the processes ``pids`` have exited; those still alive after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(pid_alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if pid_alive(p)]


def loader_threads() -> list[str]:
    """Names of the loader threads alive in this process."""
    return [t.name for t in threading.enumerate() if t.name.startswith(("FileStorageLoader", "inspector-loader"))]


def open_fds() -> list[int]:
    """This process's open descriptors."""
    return [int(name) for name in os.listdir("/proc/self/fd")]


@contextlib.contextmanager
def descriptors_exhausted(keep_free: int = 0) -> Iterator[list[int]]:
    """Fill this process's descriptor table for real, but for ``keep_free`` slots; restore it afterwards.

    Yields the list of descriptors held, so a test can free more while inside.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(open_fds()) + 64, hard))
    held: list[int] = []
    try:
        while True:
            try:
                held.append(os.open(os.devnull, os.O_RDONLY))
            except OSError as exc:
                assert exc.errno == errno.EMFILE
                break
        for _ in range(keep_free):
            os.close(held.pop())
        yield held
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
