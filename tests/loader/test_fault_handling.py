"""Faults found by probing the loader as an adversary: each one is caused for real and must end in an answer."""

from __future__ import annotations

import errno
import os
import resource
import struct
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from loader_probes import descriptors_exhausted, memfd_fds, open_fds
from waiting import WAIT_S

from inspector.loader import (
    CallbackDeadlockError,
    FileStorage,
    FileStorageLoader,
    LoaderError,
    SharedMemoryError,
    Storage,
    StorageCorruptError,
)


# ---- BaseException from user code -------------------------------------------------------------
@pytest.mark.parametrize("exc_type", [SystemExit, KeyboardInterrupt, GeneratorExit])
def test_a_base_exception_from_a_callback_reaches_the_future_and_the_pool_keeps_serving(
    loader: FileStorageLoader, exc_type: type[BaseException]
) -> None:
    def explode(_obj: Any) -> None:
        raise exc_type("from the callback")

    future = loader.load(loader.save([1]), explode)
    assert isinstance(future.exception(WAIT_S), exc_type)
    assert loader.load(loader.save([2])).result(WAIT_S) == [2]
    assert loader.load(loader.save([3]), lambda _obj: None).result(WAIT_S) == [3]


def test_a_base_exception_from_on_error_reaches_the_future(loader: FileStorageLoader, tmp_path: Path) -> None:
    def explode(_exc: BaseException) -> None:
        raise SystemExit("from on_error")

    future = loader.load(FileStorage(tmp_path / "missing.istore"), on_error=explode)
    error = future.exception(WAIT_S)
    assert isinstance(error, SystemExit) and isinstance(error.__context__, FileNotFoundError)
    assert loader.load(loader.save([4])).result(WAIT_S) == [4]


def test_a_base_exception_from_a_custom_storage_load_reaches_the_future(loader: FileStorageLoader) -> None:
    class Interrupting(Storage):
        def save(self, data: Any) -> None:
            pass

        def load(self) -> Any:
            raise KeyboardInterrupt("from Storage.load")

    seen: list[BaseException] = []
    future = loader.load(Interrupting("mem://x"), on_error=seen.append)
    assert isinstance(future.exception(WAIT_S), KeyboardInterrupt) and isinstance(seen[0], KeyboardInterrupt)
    assert loader.load(loader.save([5])).result(WAIT_S) == [5]


# ---- descriptors ------------------------------------------------------------------------------
def test_a_transient_emfile_fails_that_one_load_clearly_and_the_pool_recovers(tmp_path: Path) -> None:
    with FileStorageLoader(tmp_path, ttl=None, worker_num=1, inline_bytes=0) as loader:  # the worker path's steps
        small = loader.save({"a": np.arange(10)})
        big = loader.save({"b": np.ones(3 << 20, np.uint8)})  # a size class no segment exists for yet
        loader.load(small).result(WAIT_S)
        pids = [w.pid for w in loader.status().workers]
        with descriptors_exhausted(keep_free=0):
            error = loader.load(big).exception(WAIT_S)
        assert isinstance(error, OSError) and error.errno == errno.EMFILE
        assert "Could not open" in str(error) and big.path in str(error)
        with descriptors_exhausted(keep_free=1):  # the file opens; reserving shared memory does not
            error = loader.load(big).exception(WAIT_S)
        assert isinstance(error, SharedMemoryError) and error.errno == errno.EMFILE
        assert isinstance(error, LoaderError) and "next step" in str(error)
        assert loader.load(big).result(WAIT_S)["b"].sum() == 3 << 20  # recovered: the next load works
        status = loader.status()
        assert [w.pid for w in status.workers] == pids and status.workers[0].restarts == 0 and status.workers[0].alive


def test_kept_payloads_hold_no_descriptor(tmp_path: Path) -> None:
    with FileStorageLoader(tmp_path, ttl=None, worker_num=2, inline_bytes=0) as loader:  # payloads over segments
        storage = loader.save({"a": np.arange(100)})
        loader.load(storage).result(WAIT_S)
        before = len(open_fds())
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(open_fds()) + 100, hard))
        try:  # with two descriptors per kept payload this would hit EMFILE long before the end
            kept = [loader.load(storage).result(WAIT_S) for _ in range(300)]
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        assert len(open_fds()) - before <= 40 and len(memfd_fds()) <= 40
        assert loader.status().segments_leased >= 300 and all(k["a"][-1] == 99 for k in kept)
        del kept


# ---- the header is checked before the body is read --------------------------------------------
def test_a_huge_sparse_file_is_refused_without_reserving_its_size(loader: FileStorageLoader, tmp_path: Path) -> None:
    sparse = tmp_path / "huge.istore"
    with open(sparse, "wb") as file:
        file.write(b"\x89ISTORE\n" + struct.pack("<HHIQQ", 1, 0, 0, 100, 100))  # a good start, tiny sizes
        file.truncate(2 << 30)
    bytes_before = loader.status().segment_bytes
    with pytest.raises(StorageCorruptError, match=r"expected \d+ bytes, file has 2147483648"):
        loader.load(FileStorage(sparse)).result(WAIT_S)
    assert loader.status().segment_bytes - bytes_before < 1 << 20
    tracemalloc.start()
    try:
        with pytest.raises(StorageCorruptError):
            FileStorage(sparse).load()
        assert tracemalloc.get_traced_memory()[1] < 1 << 20  # nothing the size of the file was allocated
    finally:
        tracemalloc.stop()


def test_a_fifo_planted_at_a_storage_path_fails_at_once(loader: FileStorageLoader, tmp_path: Path) -> None:
    fifo = tmp_path / "planted.istore"
    os.mkfifo(fifo)
    with pytest.raises(StorageCorruptError, match="a FIFO"):
        loader.load(FileStorage(fifo)).result(WAIT_S)
    with pytest.raises(StorageCorruptError, match="a FIFO"):
        FileStorage(fifo).load()


# ---- construction and shutdown ----------------------------------------------------------------
def test_a_relative_dirname_is_made_absolute_so_a_chdir_changes_nothing(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    previous = os.getcwd()
    os.chdir(tmp_path / "a")
    try:
        with FileStorageLoader("store", ttl=None, worker_num=1) as loader:
            assert loader.dirname == str(tmp_path / "a" / "store")
            os.chdir(tmp_path / "b")
            storage = loader.save([1])
            assert storage.path.startswith(str(tmp_path / "a" / "store"))
            assert loader.load(storage).result(WAIT_S) == [1]
    finally:
        os.chdir(previous)


def test_a_ttl_far_in_the_future_keeps_the_ttl_thread_alive(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with FileStorageLoader(tmp_path, ttl=1e12, worker_num=1) as loader:
        storage = loader.save([1])
        assert loader.load(storage).result(WAIT_S) == [1]
        threads = [t for t in threading.enumerate() if t.name == "inspector-loader-ttl"]
        assert threads and all(t.is_alive() for t in threads)


def private_dirs() -> set[str]:
    return {name for name in os.listdir(tempfile.gettempdir()) if name.startswith("inspector-loader-")}


def test_save_racing_shutdown_leaves_no_directory_behind() -> None:
    before = private_dirs()
    for _trial in range(20):
        loader = FileStorageLoader(ttl=None, worker_num=1)
        start = threading.Barrier(2)
        outcome: list[Any] = []

        def save(
            target: FileStorageLoader = loader, barrier: threading.Barrier = start, outcome: list[Any] = outcome
        ) -> None:
            barrier.wait()
            try:
                outcome.append(target.save({"a": np.ones(1000)}))
            except OSError as exc:
                outcome.append(exc)

        thread = threading.Thread(target=save)
        thread.start()
        start.wait()
        loader.shutdown()
        thread.join(WAIT_S)
        stored = outcome[0]
        if isinstance(stored, FileStorage) and os.path.exists(stored.path):  # saved after the shutdown
            assert loader.dirname is not None and stored.path.startswith(loader.dirname)
        loader.shutdown()  # what any later shutdown (or exit) does: nothing may be left
    assert private_dirs() - before == set()


# ---- callbacks that wait on other loads -------------------------------------------------------
def test_a_callback_may_wait_on_a_load_without_a_callback(loader: FileStorageLoader) -> None:
    inner = loader.save(["inner"])
    seen: list[Any] = []
    outer = loader.load(loader.save(["outer"]), lambda _obj: seen.append(loader.load(inner).result(WAIT_S)))
    assert outer.result(WAIT_S) == ["outer"] and seen == [["inner"]]


def test_a_callback_waiting_on_a_load_whose_callback_would_run_after_it_is_refused_at_once(
    loader: FileStorageLoader,
) -> None:
    inner = loader.save(["inner"])
    seen: list[BaseException] = []

    def wait_for_other(_obj: Any) -> None:
        other = loader.load(inner, lambda _o: None)
        try:
            other.result(WAIT_S)
        except CallbackDeadlockError as exc:
            seen.append(exc)
            other.cancel()

    started = time.monotonic()
    loader.load(loader.save(["outer"]), wait_for_other).result(WAIT_S)
    assert time.monotonic() - started < WAIT_S and len(seen) == 1
    assert isinstance(seen[0], RuntimeError) and "add_done_callback" in str(seen[0])


def test_a_waiting_callback_is_not_blocked_by_the_callbacks_queued_behind_it(loader: FileStorageLoader) -> None:
    inner = loader.save(["inner"])
    first_seen: list[Any] = []
    started, go, release = threading.Event(), threading.Event(), threading.Event()

    def first(_obj: Any) -> None:
        started.set()
        go.wait(WAIT_S)  # until the loads queued behind this callback fill the budget
        first_seen.append(loader.load(inner).result(WAIT_S))

    blocker = loader.save(["queued"])
    futures = [loader.load(loader.save(["first"]), first)]
    try:
        assert started.wait(WAIT_S)
        futures += [loader.load(blocker, lambda _obj: release.wait(WAIT_S)) for _ in range(30)]  # fill the budget
        go.set()
        assert futures[0].result(WAIT_S) == ["first"] and first_seen == [["inner"]]
    finally:
        go.set()
        release.set()
    assert all(f.result(WAIT_S) for f in futures)
