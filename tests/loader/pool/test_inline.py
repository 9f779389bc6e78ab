"""Small cached loads read on the caller's thread: callbacks, errors, the worker path when not cached, no aliasing."""

from __future__ import annotations

import ctypes
import gc
import json
import mmap
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from loader_probes import loader_threads, wait_gone
from waiting import PROCESS_WAIT_S, WAIT_S

from inspector.loader import FileStorageLoader, StorageCorruptError


def drop_from_page_cache(path: str) -> None:
    """Evict ``path`` from the page cache, and check with ``mincore`` that it is gone (a read would not do: even a
    ``RWF_NOWAIT`` read starts readahead); on a busy machine one request may not take."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        for _ in range(200):
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            if not any(resident_pages(fd)):  # wholly gone: a first read that misses starts no readahead race
                return
            time.sleep(0.01)
        raise AssertionError(f"the kernel kept {path} in the page cache through 200 requests to drop it")
    finally:
        os.close(fd)


def resident_pages(fd: int) -> list[bool]:
    """Which pages of the open file are in the page cache (``mincore`` over a private mapping; nothing is read)."""
    libc = ctypes.CDLL(None, use_errno=True)
    with mmap.mmap(fd, 0, access=mmap.ACCESS_COPY) as mapping:
        pages = -(-len(mapping) // mmap.PAGESIZE)
        vector = (ctypes.c_ubyte * pages)()
        start = ctypes.c_char.from_buffer(mapping)
        try:
            if libc.mincore(ctypes.c_void_p(ctypes.addressof(start)), ctypes.c_size_t(len(mapping)), vector):
                raise OSError(ctypes.get_errno(), "mincore failed")
        finally:
            del start  # the mapping cannot close while this views it
        return [bool(v & 1) for v in vector]


def worker_of(loader: FileStorageLoader, path: str) -> int | None:
    """The worker that read the last load of ``path`` (None: read on the caller's thread)."""
    return [t for t in loader.timings() if t.path == path][-1].worker


def test_a_small_cached_load_is_answered_before_load_returns_and_read_in_the_caller(tmp_path: Path) -> None:
    with FileStorageLoader(tmp_path, ttl=None, worker_num=1) as loader:
        storage = loader.save({"obs": np.arange(1000, dtype=np.float32), "meta": "x"})
        future = loader.load(storage)
        assert future.done()
        got = future.result(0)
        assert got["meta"] == "x" and got["obs"].tolist() == list(range(1000))
        assert got["obs"].flags.writeable and worker_of(loader, storage.path) is None
        assert loader.status().loads_done >= 1


def test_a_callback_of_a_small_load_runs_on_the_delivery_thread(tmp_path: Path) -> None:
    seen: list[tuple[str, Any]] = []
    done = threading.Event()

    def callback(obj: Any) -> None:
        seen.append((threading.current_thread().name, obj))
        done.set()

    with FileStorageLoader(tmp_path, ttl=None, worker_num=1) as loader:
        storage = loader.save({"a": np.arange(5)})
        future = loader.load(storage, callback)
        assert done.wait(WAIT_S)
        ((thread, obj),) = seen
        assert future.result(WAIT_S) is obj
        assert thread == f"{loader.name}-delivery" and obj["a"].tolist() == [0, 1, 2, 3, 4]
        assert worker_of(loader, storage.path) is None


def test_a_truncated_small_file_fails_its_load_and_reaches_on_error(tmp_path: Path) -> None:
    errors: list[tuple[str, BaseException]] = []
    with FileStorageLoader(tmp_path, ttl=None, worker_num=1) as loader:
        storage = loader.save({"a": np.arange(2000)})
        os.truncate(storage.path, os.path.getsize(storage.path) - 100)
        with pytest.raises(StorageCorruptError, match=r"truncated|expected"):
            loader.load(storage).result(WAIT_S)
        future = loader.load(
            storage, lambda _obj: None, on_error=lambda exc: errors.append((threading.current_thread().name, exc))
        )
        assert isinstance(future.exception(WAIT_S), StorageCorruptError)
        ((thread, error),) = errors
        assert thread == f"{loader.name}-delivery" and isinstance(error, StorageCorruptError)
        assert storage.path in str(error)
        assert loader.load(loader.save([1])).result(WAIT_S) == [1]  # the next load works


def test_a_corrupt_small_file_fails_with_a_clear_error(tmp_path: Path) -> None:
    with FileStorageLoader(tmp_path, ttl=None, worker_num=1) as loader:
        storage = loader.save({"a": np.arange(10)})
        with open(storage.path, "r+b") as file:
            file.write(b"not a storage file")
        error = loader.load(storage).exception(WAIT_S)
        assert isinstance(error, StorageCorruptError) and storage.path in str(error)


def test_a_missing_file_fails_on_the_inline_path_as_on_the_worker_path(tmp_path: Path) -> None:
    with (
        FileStorageLoader(tmp_path, ttl=None, worker_num=1) as loader,
        FileStorageLoader(tmp_path / "w", ttl=None, worker_num=1, inline_bytes=0) as workers,
    ):
        storage = loader.save([1])
        os.unlink(storage.path)
        inline_error, worker_error = loader.load(storage).exception(WAIT_S), workers.load(storage).exception(WAIT_S)
        assert type(inline_error) is type(worker_error) and storage.path in str(inline_error)


def test_a_file_not_in_the_page_cache_goes_to_a_worker(tmp_path: Path) -> None:
    with FileStorageLoader(tmp_path, ttl=None, worker_num=1) as loader:
        storage = loader.save({"a": np.arange(50_000)})
        drop_from_page_cache(storage.path)
        got = loader.load(storage).result(WAIT_S)
        assert got["a"][-1] == 49_999
        assert worker_of(loader, storage.path) == 0  # the caller never waits for the disk
        assert loader.load(storage).result(WAIT_S)["a"][-1] == 49_999  # cached now: read here
        assert worker_of(loader, storage.path) is None


def test_inline_bytes_zero_sends_every_load_to_a_worker(tmp_path: Path) -> None:
    with FileStorageLoader(tmp_path, ttl=None, worker_num=1, inline_bytes=0) as loader:
        storage = loader.save([1])
        assert loader.load(storage).result(WAIT_S) == [1] and worker_of(loader, storage.path) == 0


def test_a_load_above_inline_bytes_goes_to_a_worker(tmp_path: Path) -> None:
    with FileStorageLoader(tmp_path, ttl=None, worker_num=1, inline_bytes=4096) as loader:
        small, big = loader.save([1]), loader.save({"a": np.zeros(10_000)})
        assert loader.load(small).result(WAIT_S) == [1] and worker_of(loader, small.path) is None
        assert loader.load(big).result(WAIT_S)["a"].shape == (10_000,) and worker_of(loader, big.path) == 0


@pytest.mark.parametrize("bad", [-1, 1.5, "4M", None, True])
def test_a_bad_inline_bytes_is_refused_with_a_clear_error(tmp_path: Path, bad: Any) -> None:
    with pytest.raises(ValueError, match=r"inline_bytes must be an int >= 0(.|\n)*next step") as info:
        FileStorageLoader(tmp_path, ttl=None, worker_num=1, inline_bytes=bad)
    assert repr(bad) in str(info.value)
    assert os.listdir(tmp_path) == []  # nothing was left behind for the refused loader


def test_a_kept_payload_is_never_overwritten_by_later_loads(tmp_path: Path) -> None:
    with FileStorageLoader(tmp_path, ttl=None, worker_num=1) as loader:
        storages = [loader.save({"a": np.full(10_000, i, np.int64)}) for i in range(4)]
        kept = [loader.load(storages[0]).result(WAIT_S)]
        for round_ in range(50):  # same size class: recycled buffers, while the kept one stays leased
            i = round_ % 4
            got = loader.load(storages[i]).result(WAIT_S)
            assert (got["a"] == i).all()
            if round_ % 7 == 0:
                kept.append(got)  # some are kept, the rest dropped (their buffers come back)
        assert (kept[0]["a"] == 0).all()
        assert all((k["a"] == k["a"][0]).all() for k in kept)
        addresses = {k["a"].__array_interface__["data"][0] for k in kept}
        assert len(addresses) == len(kept)  # every kept payload has memory of its own


def test_a_dropped_payload_gives_its_buffer_to_a_later_load(tmp_path: Path) -> None:
    with FileStorageLoader(tmp_path, ttl=None, worker_num=1) as loader:
        storage = loader.save({"a": np.arange(10_000)})
        first = loader.load(storage).result(WAIT_S)
        address = first["a"].__array_interface__["data"][0]
        leaf = first["a"]
        del first
        gc.collect()
        second = loader.load(storage).result(WAIT_S)  # the leaf still holds the first buffer
        assert second["a"].__array_interface__["data"][0] != address
        leaf[:] = -1  # writing the kept leaf changes nothing delivered since
        assert second["a"].tolist() == list(range(10_000))
        del leaf, second
        gc.collect()
        third = loader.load(storage).result(WAIT_S)
        assert third["a"].tolist() == list(range(10_000))


FORK_AFTER_INLINE = """
import json, os, sys
sys.path[:0] = {path!r}
import numpy as np
from inspector.loader import FileStorageLoader

loader = FileStorageLoader(ttl=None, worker_num=1)
storage = loader.save({{"a": np.arange(1000)}})
kept = loader.load(storage).result(60)
assert [t.worker for t in loader.timings()] == [None]
pids = [w.pid for w in loader.status().workers]
child = os.fork()
if child == 0:
    ok = int(kept["a"].sum()) == 499500
    kept["a"][:] = 0  # the child's copy of the memory: the parent's payload is untouched
    got = loader.load(storage).result(60)
    ok = ok and int(got["a"].sum()) == 499500 and not set(w.pid for w in loader.status().workers) & set(pids)
    loader.shutdown()
    os._exit(0 if ok else 3)
_, status = os.waitpid(child, 0)
again = loader.load(storage).result(60)
print(json.dumps({{"child": os.waitstatus_to_exitcode(status), "kept": int(kept["a"].sum()),
                   "again": int(again["a"].sum()), "pids": pids}}), flush=True)
loader.shutdown()
"""


@pytest.mark.slow
def test_fork_after_inline_loads_leaves_both_sides_whole(tmp_path: Path) -> None:
    script = tmp_path / "fork.py"
    script.write_text(textwrap.dedent(FORK_AFTER_INLINE).format(path=sys.path))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=PROCESS_WAIT_S)
    assert result.returncode == 0, result.stderr[-3000:]
    info = json.loads(result.stdout.splitlines()[-1])
    assert info == {**info, "child": 0, "kept": 499500, "again": 499500}
    assert wait_gone(info["pids"]) == []


def test_many_small_loads_with_callbacks_from_threads_all_arrive_right(tmp_path: Path, clean_process: None) -> None:
    with FileStorageLoader(tmp_path, ttl=None, worker_num=2) as loader:
        storages = [loader.save({"i": np.full(100, i)}) for i in range(8)]
        bad: list[int] = []
        arrived = threading.Semaphore(0)

        def check(i: int) -> Any:
            def callback(obj: Any) -> None:
                if not (obj["i"] == i).all():
                    bad.append(i)
                arrived.release()

            return callback

        def caller() -> None:
            for n in range(200):
                loader.load(storages[n % 8], check(n % 8))

        threads = [threading.Thread(target=caller) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT_S)
        assert all(arrived.acquire(timeout=WAIT_S) for _ in range(600))
        assert bad == []
        status = loader.status()
        assert (status.pending, status.in_flight, status.loads_failed) == (0, 0, 0)


def test_a_load_with_a_callback_is_read_on_the_delivery_thread_and_load_returns_at_once(tmp_path: Path) -> None:
    read_on: list[str] = []
    with FileStorageLoader(tmp_path, ttl=None, worker_num=1) as loader:
        storage = loader.save({"a": np.arange(1000)})
        loader.start()
        assert not [n for n in loader_threads() if "-reader-" in n]  # no thread between the read and the callback
        gate = threading.Event()
        first = loader.load(storage, lambda _obj: gate.wait(WAIT_S))  # holds the delivery thread
        second = loader.load(storage, lambda obj: read_on.append(threading.current_thread().name))
        assert not second.done()  # queued behind the first callback, not read and delivered by the caller
        assert loader.status().loads_done == 0
        gate.set()
        assert first.result(WAIT_S)["a"][-1] == 999 and second.result(WAIT_S)["a"][-1] == 999
        assert [t.worker for t in loader.timings()] == [None, None] and read_on == [f"{loader.name}-delivery"]


def test_loads_with_callbacks_in_a_burst_are_all_read_here_never_sent_to_a_worker(tmp_path: Path) -> None:
    """Each finished load is briefly neither delivered nor forgotten: that must not look like a load at a worker,
    which sent the 1 MiB loads of a burst (above ``ALWAYS_BYTES``) to the workers one after another."""
    arrived = threading.Semaphore(0)
    bad: list[int] = []

    def check(index: int) -> Any:
        def callback(obj: Any) -> None:
            if not (obj["x"] == index).all():
                bad.append(index)
            arrived.release()

        return callback

    with FileStorageLoader(tmp_path, ttl=None, worker_num=2) as loader:
        storages = [loader.save({"x": np.full(1 << 18, i, np.float32)}) for i in range(4)]  # 1 MiB each
        loader.start()
        for n in range(200):
            loader.load(storages[n % 4], check(n % 4))
        assert all(arrived.acquire(timeout=WAIT_S) for _ in range(200))
        assert bad == [] and {t.worker for t in loader.timings()} == {None}
        assert [w.loads_done for w in loader.status().workers] == [0, 0]


def test_a_load_with_a_callback_not_in_the_page_cache_goes_to_a_worker(tmp_path: Path) -> None:
    got: list[Any] = []
    with FileStorageLoader(tmp_path, ttl=None, worker_num=1) as loader:
        storage = loader.save({"a": np.arange(50_000)})
        drop_from_page_cache(storage.path)
        loader.load(storage, got.append).result(WAIT_S)
        assert got[0]["a"][-1] == 49_999 and worker_of(loader, storage.path) == 0


def test_shutdown_answers_every_load_queued_unread_for_the_delivery_thread(tmp_path: Path, clean_process: None) -> None:
    loader = FileStorageLoader(tmp_path, ttl=None, worker_num=1)
    storages = [loader.save({"i": np.full(10, i)}) for i in range(4)]
    seen: list[int] = []
    futures = [loader.load(storages[n % 4], lambda obj: seen.append(int(obj["i"][0]))) for n in range(300)]
    loader.shutdown()
    assert all(f.done() for f in futures)
    assert all(f.exception() is None for f in futures) and len(seen) == 300  # shutdown waits for queued loads
    assert loader_threads() == []


def test_a_load_answered_but_not_yet_forgotten_is_not_at_a_worker() -> None:
    from inspector.loader.pool.requests import Request
    from inspector.loader.pool.state import PoolState
    from inspector.loader.storage.handles import FileStorage

    state = PoolState(worker_num=1)
    request = Request(1, FileStorage("/x.istore"), "/x.istore", print, None, None)
    state.requests[request.id] = request  # delivered and counted, its future answered, not yet forgotten
    assert not state.at_workers()
    state.pending.append(request)
    assert state.at_workers()
