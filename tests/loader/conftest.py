"""Fixtures for the loader tests: one shared pool, and probes for processes and shared memory."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator

import psutil
import pytest

from inspector.loader import FileStorageLoader


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


@pytest.fixture(scope="module")
def loader() -> Iterator[FileStorageLoader]:
    """A two-worker loader shared by a test module (starting workers costs a fraction of a second)."""
    with FileStorageLoader(worker_num=2, ttl=None) as shared:
        shared.start()
        yield shared
    gc.collect()


@pytest.fixture
def clean_process() -> Iterator[None]:
    """Asserts a test leaves no worker process, no /dev/shm entry and no segment mapping behind."""
    gc.collect()
    shm_before, workers_before = shm_entries(), worker_processes()
    fds_before, maps_before = set(memfd_fds()), set(memfd_mappings())
    yield
    gc.collect()
    assert {n for n in shm_entries() - shm_before if n.startswith("inspector")} == set()
    assert worker_processes() - workers_before == set()
    assert set(memfd_fds()) - fds_before == set()
    assert set(memfd_mappings()) - maps_before == set()
