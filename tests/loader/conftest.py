"""Fixtures for the loader tests: one shared pool, and probes for processes and shared memory."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from loader_probes import memfd_fds, memfd_mappings, shm_entries, worker_processes

from inspector.loader import FileStorageLoader


@pytest.fixture(scope="module")
def loader() -> Iterator[FileStorageLoader]:
    """A two-worker loader shared by a test module (starting workers costs a fraction of a second)."""
    with FileStorageLoader(worker_num=2, ttl=None) as shared:
        shared.start()
        yield shared
    gc.collect()


@pytest.fixture(scope="module")
def worker_loader() -> Iterator[FileStorageLoader]:
    """A two-worker loader that sends every load to a worker (``inline_bytes=0``), for the worker path's steps."""
    with FileStorageLoader(worker_num=2, ttl=None, inline_bytes=0) as shared:
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


@pytest.fixture(autouse=True)
def _private_bench_history(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Benchmarks keep their history in a folder of the test run, never in the user's cache."""
    monkeypatch.setenv("INSPECTOR_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
