"""Loading through the worker pool: exact deliveries, futures and callbacks, errors that reach the caller."""

from __future__ import annotations

import logging
import os
import stat
import threading
import time
from concurrent.futures import CancelledError
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from loader_payloads import assert_same, payloads, write_hostile
from waiting import WAIT_S, wait_until

from inspector.loader import (
    CudaUnavailableError,
    FileStorage,
    FileStorageLoader,
    Storage,
    StorageCorruptError,
    StorageNotFoundError,
    UnsupportedPayloadError,
)


def steps(n: int, marker: float) -> list[dict[str, Any]]:
    """An RL-style trajectory whose every leaf carries ``marker`` (to spot a mixed-up delivery)."""
    return [
        {"obs": np.full((4, 8, 8), marker, np.float32), "reward": np.array([marker], np.float32), "done": i == n - 1}
        for i in range(n)
    ]


def marker_of(trajectory: list[dict[str, Any]]) -> set[float]:
    return {float(v) for step in trajectory for v in (step["obs"].min(), step["obs"].max(), step["reward"][0])}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(obj=payloads)
def test_random_payloads_come_back_through_the_workers_bit_for_bit(obj: object, loader: FileStorageLoader) -> None:
    assert_same(obj, loader.load(loader.save(obj)).result(WAIT_S))


def test_callback_gets_the_object_and_the_future_completes_after_it(loader: FileStorageLoader) -> None:
    seen: list[Any] = []
    callback_done = threading.Event()

    def callback(obj: Any) -> None:
        time.sleep(0.05)
        seen.append(obj)
        callback_done.set()

    future = loader.load(loader.save({"a": torch.arange(3)}), callback)
    result = future.result(WAIT_S)
    assert callback_done.is_set() and seen[0] is result
    assert torch.equal(result["a"], torch.arange(3))


def test_slow_consumers_that_keep_what_they_got_see_no_corruption(loader: FileStorageLoader) -> None:
    files = [loader.save(steps(6, float(i))) for i in range(8)]
    kept: list[tuple[float, Any]] = []

    def slow_keeper(marker: float) -> Any:
        def callback(obj: Any) -> None:
            time.sleep(0.02)  # a slow consumer: a naive pool would refill this slot now
            kept.append((marker, obj))

        return callback

    futures = [loader.load(files[i % 8], slow_keeper(float(i % 8))) for i in range(40)]
    for future in futures:
        future.result(WAIT_S)
    loader.load(files[0]).result(WAIT_S)  # later loads must not overwrite what was kept
    assert len(kept) == 40
    assert all(marker_of(obj) == {marker} for marker, obj in kept)


def test_structures_may_change_between_loads(loader: FileStorageLoader) -> None:
    shapes = [steps(2, 1.0), steps(9, 2.0), {"obs": np.zeros((300, 300))}, [np.float16(1)] * 50, steps(1, 3.0)]
    for obj in shapes:
        assert_same(obj, loader.load(loader.save(obj)).result(WAIT_S))


def test_many_concurrent_loads_from_several_threads_lose_nothing(loader: FileStorageLoader) -> None:
    files = [loader.save(steps(3, float(i))) for i in range(5)]
    results: list[tuple[float, Any]] = []
    lock = threading.Lock()

    def producer(offset: int) -> None:
        futures = [(float((offset + i) % 5), loader.load(files[(offset + i) % 5])) for i in range(30)]
        for marker, future in futures:
            obj = future.result(WAIT_S)
            with lock:
                results.append((marker, obj))

    threads = [threading.Thread(target=producer, args=(k,)) for k in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    assert len(results) == 90 and all(marker_of(obj) == {m} for m, obj in results)


def test_a_missing_file_reaches_the_future_and_on_error(loader: FileStorageLoader, tmp_path: Path) -> None:
    errors: list[BaseException] = []
    called: list[Any] = []
    future = loader.load(FileStorage(tmp_path / "missing.istore"), called.append, on_error=errors.append)
    with pytest.raises(StorageNotFoundError, match="does not exist") as info:
        future.result(WAIT_S)
    assert errors == [info.value] and called == []
    assert info.value.path == str(tmp_path / "missing.istore")


def test_a_file_deleted_after_dispatch_is_reported_missing(loader: FileStorageLoader, tmp_path: Path) -> None:
    storage = FileStorage(tmp_path / "gone.istore")
    storage.save([1])
    os.unlink(storage.path)
    with pytest.raises(StorageNotFoundError):
        loader.load(storage).result(WAIT_S)


def test_truncated_and_corrupt_files_reach_the_caller(loader: FileStorageLoader, tmp_path: Path) -> None:
    truncated, corrupt, hostile = (FileStorage(tmp_path / n) for n in ("t.istore", "c.istore", "h.istore"))
    truncated.save({"a": np.arange(1000)})
    with open(truncated.path, "r+b") as file:
        file.truncate(os.path.getsize(truncated.path) - 10)
    corrupt.save({"abc": [1, 2, 3]})
    raw = bytearray(Path(corrupt.path).read_bytes())
    raw[40] ^= 0xFF
    Path(corrupt.path).write_bytes(bytes(raw))
    marker = tmp_path / "pwned"
    write_hostile(Path(hostile.path), marker)
    errors: list[BaseException] = []
    reasons = []
    for storage in (truncated, corrupt, hostile):
        with pytest.raises(StorageCorruptError) as info:
            loader.load(storage, on_error=errors.append).result(WAIT_S)
        reasons.append(info.value.reason)
    assert "truncated" in reasons[0] and "checksum" in reasons[1] and "bad magic" in reasons[2]
    assert len(errors) == 3 and not marker.exists()


def test_a_worker_reads_exactly_the_checked_size_and_says_so_when_the_file_is_shorter(tmp_path: Path) -> None:
    from inspector.loader.pool.messages import FileRead, ReadFailed
    from inspector.loader.pool.worker_process import read_into_segment

    storage = FileStorage(tmp_path / "grow.istore")
    storage.save({"now": np.zeros(100_000)})
    size = os.path.getsize(storage.path)
    segment = bytearray(1 << 20)
    fd = os.open(storage.path, os.O_RDONLY)
    try:
        reply = read_into_segment(fd, memoryview(segment), 1, size)
        assert isinstance(reply, FileRead) and (reply.request_id, reply.size) == (1, size)
        assert bytes(segment[:size]) == Path(storage.path).read_bytes()
        short = read_into_segment(fd, memoryview(segment), 2, size + 64)  # the file shrank after it was checked
        assert isinstance(short, ReadFailed) and short.kind == "truncated" and f"{size} of {size + 64}" in short.message
    finally:
        os.close(fd)


def test_a_callback_that_raises_is_logged_and_the_loader_keeps_going(
    loader: FileStorageLoader, caplog: pytest.LogCaptureFixture
) -> None:
    def explode(obj: Any) -> None:
        raise ValueError("consumer bug")

    with caplog.at_level(logging.ERROR, logger="inspector.loader"):
        first = loader.load(loader.save([1]), explode).result(WAIT_S)
    assert first == [1]
    record = next(r for r in caplog.records if "raised; the loader keeps going" in r.getMessage())
    assert record.exc_info is not None and "consumer bug" in str(record.exc_info[1])
    assert loader.load(loader.save([2])).result(WAIT_S) == [2]


def test_an_on_error_that_raises_is_logged_too(loader: FileStorageLoader, caplog: pytest.LogCaptureFixture) -> None:
    def explode(exc: BaseException) -> None:
        raise RuntimeError("handler bug")

    with caplog.at_level(logging.ERROR, logger="inspector.loader"):
        future = loader.load(FileStorage("/nonexistent/x.istore"), on_error=explode)
        assert isinstance(future.exception(WAIT_S), StorageNotFoundError)
    assert any("on_error" in r.getMessage() for r in caplog.records)


def test_storages_that_are_not_files_load_in_process(loader: FileStorageLoader) -> None:
    class Memory(Storage):
        def save(self, data: Any) -> None:
            self.data = data

        def load(self) -> Any:
            return self.data

    memory = Memory("mem://1")
    memory.save({"x": 1})
    assert loader.load(memory).result(WAIT_S) == {"x": 1}


def test_load_refuses_what_is_not_a_storage(loader: FileStorageLoader) -> None:
    with pytest.raises(TypeError, match="needs a Storage"):
        loader.load("/tmp/x.istore")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="callback must be callable"):
        loader.load(FileStorage("/tmp/x.istore"), 5)  # type: ignore[arg-type]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on machines without CUDA")
def test_cuda_delivery_without_cuda_raises_a_clear_runtime_error(loader: FileStorageLoader) -> None:
    with pytest.raises(CudaUnavailableError, match="needs a CUDA GPU") as info:
        loader.load(FileStorage("/tmp/x.istore"), device="cuda")
    assert isinstance(info.value, RuntimeError) and info.value.device == "cuda"
    assert "device=None" in str(info.value)


def test_unknown_devices_are_refused_with_the_supported_list(loader: FileStorageLoader) -> None:
    with pytest.raises(ValueError, match="Supported: None, 'cpu', 'cuda'"):
        loader.load(FileStorage("/tmp/x.istore"), device="meta")
    assert loader.load(loader.save([3]), device="cpu").result(WAIT_S) == [3]


def test_a_queued_load_can_be_cancelled(loader: FileStorageLoader) -> None:
    gate = threading.Event()
    blockers = [loader.load(loader.save([i]), lambda _obj: gate.wait(5)) for i in range(8)]
    queued = loader.load(loader.save(["late"]))
    cancelled = queued.cancel()
    gate.set()
    for blocker in blockers:
        blocker.result(WAIT_S)
    if cancelled:
        with pytest.raises(CancelledError):
            queued.result(WAIT_S)
    else:  # it had already started: then it completes normally
        assert queued.result(WAIT_S) == ["late"]


def test_delivered_arrays_lease_their_segment_until_dropped(worker_loader: FileStorageLoader) -> None:
    import gc

    loader = worker_loader
    gc.collect()
    leased_before = loader.status().segments_leased
    kept = loader.load(loader.save({"a": np.ones(1000)})).result(WAIT_S)
    assert loader.status().segments_leased == leased_before + 1
    leaf = kept["a"]
    del kept
    gc.collect()
    assert loader.status().segments_leased == leased_before + 1  # one leaf keeps the segment
    del leaf
    gc.collect()
    assert loader.status().segments_leased == leased_before


def test_timings_record_every_stage(loader: FileStorageLoader) -> None:
    loader.clear_timings()
    loader.load(loader.save({"a": np.ones(10_000), "b": [torch.ones(3)]})).result(WAIT_S)
    (timing,) = loader.timings()
    assert timing.ok and timing.leaves == 2 and timing.nbytes > 80_000 and timing.device == "cpu"
    assert timing.read > 0 and timing.build > 0 and timing.h2d == 0
    assert set(timing.stage_seconds()) == {"queued", "read", "handoff", "wait", "build", "h2d", "callback"}
    assert timing.total >= timing.read


def test_status_reports_workers_and_segments(loader: FileStorageLoader) -> None:
    storage = loader.save({"big": np.ones(5 << 20, np.uint8)})  # above inline_bytes: a worker reads it into a segment
    loader.load(storage).result(WAIT_S)
    status = loader.status()
    assert status.running and status.worker_num == 2
    assert [w.index for w in status.workers] == [0, 1]
    assert all(w.alive and w.ready and w.pid for w in status.workers)
    assert status.segments >= 1 and status.segment_bytes >= 65536


def test_save_refuses_unsupported_values_before_writing_anything(tmp_path: Path) -> None:
    with FileStorageLoader(tmp_path / "store", ttl=None, worker_num=1) as loader:
        with pytest.raises(UnsupportedPayloadError, match=r"obj\['obs'\]\[3\]"):
            loader.save({"obs": [1, 2, 3, lambda: 0]})
        assert not (tmp_path / "store").exists() or os.listdir(tmp_path / "store") == []


def test_without_a_directory_the_loader_uses_a_private_one_and_removes_it(tmp_path: Path) -> None:
    loader = FileStorageLoader(worker_num=1)
    assert loader.dirname is None
    storage = loader.save({"x": np.arange(3)})
    directory = loader.dirname
    assert directory is not None and stat.S_IMODE(os.stat(directory).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(storage.path).st_mode) == 0o600
    assert loader.load(storage).result(WAIT_S)["x"].tolist() == [0, 1, 2]
    loader.shutdown()
    assert not os.path.exists(directory)
    with pytest.raises(StorageNotFoundError, match="removed at shutdown"):
        loader.load(storage).result(WAIT_S)  # restarts the pool, which remembers why the file is gone
    loader.shutdown()


def test_a_given_directory_is_created_private_and_kept_at_shutdown(tmp_path: Path) -> None:
    target = tmp_path / "new" / "dir"
    with FileStorageLoader(target, ttl=None, worker_num=1) as loader:
        storage = loader.save([1])
    assert stat.S_IMODE(target.stat().st_mode) == 0o700 and os.path.exists(storage.path)


def test_bad_arguments_are_refused() -> None:
    for worker_num in (0, -1, True, 2.0, "2"):
        with pytest.raises(ValueError, match="worker_num must be a positive int") as info:
            FileStorageLoader(worker_num=worker_num)  # type: ignore[arg-type]
        assert "next step = pass worker_num=1 or more" in str(info.value)
    refused = (0, -1, float("nan"), float("inf"), True, "20", np.bool_(True), np.float64("nan"), np.int64(0), 10**400)
    for ttl in refused:
        with pytest.raises(ValueError, match="ttl must be a finite positive number"):
            FileStorageLoader(ttl=ttl)  # type: ignore[arg-type]


@pytest.mark.parametrize("ttl", [np.int64(5), np.int32(5), np.float32(5.0), np.float64(5.0), 5])
def test_a_ttl_may_be_any_real_number_numpy_scalars_included(ttl: object) -> None:
    loader = FileStorageLoader(ttl=ttl)  # type: ignore[arg-type]
    assert loader.ttl == 5.0 and type(loader.ttl) is float
    loader.shutdown()


def test_a_slow_consumer_bounds_the_segments_in_use(worker_loader: FileStorageLoader) -> None:
    import gc

    loader = worker_loader
    from inspector.loader.pool.config import DEPTH

    gc.collect()
    held_before = loader.status().segments_leased
    storage = loader.save({"a": np.ones(10_000)})
    gate = threading.Event()
    futures = [loader.load(storage, lambda _obj: gate.wait(10)) for _ in range(40)]
    queued = 40 - 2 * (DEPTH + 1)
    wait_until(
        lambda: loader.status().pending + loader.status().in_flight >= queued,
        what="the loads to queue up behind the blocked callbacks",
    )
    status = loader.status()
    gate.set()
    assert status.pending > 0  # the rest wait in the queue, holding no memory
    assert status.segments_busy + status.segments_leased - held_before <= 2 * (DEPTH + 1)
    assert all(f.result(WAIT_S)["a"].sum() == 10_000 for f in futures)


def test_a_failure_nobody_looks_at_is_logged_when_its_future_is_dropped(
    loader: FileStorageLoader, caplog: pytest.LogCaptureFixture
) -> None:
    import gc

    with caplog.at_level(logging.WARNING, logger="inspector.loader"):
        loader.load(FileStorage("/nonexistent/ignored.istore"))  # future dropped at once
        looked_at = loader.load(FileStorage("/nonexistent/looked-at.istore"))
        assert isinstance(looked_at.exception(WAIT_S), StorageNotFoundError)
        loader.load(loader.save([1])).result(WAIT_S)  # delivered after both failures
        del looked_at
        gc.collect()
    messages = [r.getMessage() for r in caplog.records if "nobody retrieved the error" in r.getMessage()]
    assert len(messages) == 1 and "ignored.istore" in messages[0]


def test_a_worker_asked_for_a_segment_it_does_not_have_answers_with_an_error(tmp_path: Path) -> None:
    from inspector.loader.pool.channel import Channel, socket_pair
    from inspector.loader.pool.messages import ReadFailed, ReadFile, StopWorker, WorkerReady
    from inspector.loader.pool.worker_process import serve

    storage = FileStorage(tmp_path / "x.istore")
    storage.save([1])
    ours, theirs = socket_pair()
    main, worker = Channel(ours), Channel(theirs)
    thread = threading.Thread(target=serve, args=(worker, os.getppid()), daemon=True)
    thread.start()
    try:
        assert isinstance(main.receive().message, WorkerReady)  # type: ignore[union-attr]
        fd = os.open(storage.path, os.O_RDONLY)
        main.send(ReadFile(7, os.path.getsize(storage.path), 99, 0, False), (fd,))
        os.close(fd)
        reply = main.receive().message  # type: ignore[union-attr]
        main.send(StopWorker())
        thread.join(10)
    finally:
        main.close()
        worker.close()
    assert isinstance(reply, ReadFailed) and (reply.request_id, reply.kind) == (7, "unmapped")
    assert "cannot map" in reply.message
