"""Real faults in the pool: workers killed, workers the OS will not start, an I/O thread that crashes,
descriptors and memory that run out, and user code that raises ``BaseException`` or never returns.

Every fault here is caused for real: a worker is killed with -9 or stopped with SIGSTOP; "the OS
refuses to start a process" is a descriptor table filled for real (``descriptors_exhausted``), so
creating the socket pair or the pipes a new process needs fails with EMFILE; a worker out of
descriptors has its own limit lowered for real (``prlimit`` through psutil). A mock is used only for
a shared-memory size no machine can be asked for.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import pytest
from loader_probes import (
    descriptors_exhausted,
    loader_threads,
    memfd_fds,
    open_fds,
    pid_alive,
    wait_gone,
    worker_processes,
)
from waiting import WAIT_S, wait_until

from inspector.loader import (
    FileStorage,
    FileStorageLoader,
    LoaderCrashedError,
    LoaderError,
    SharedMemoryError,
    Storage,
    WorkerDiedError,
    WorkerSpawnError,
)
from inspector.loader.pool.shared_segment import create_segment


def wait_until_busy(loader: FileStorageLoader, load: Future[Any], timeout: float = 10.0) -> int | None:
    """The pid of a worker busy with ``load``; None when it finished before we saw it (try again)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not load.done():
        for worker in loader.status().workers:
            if worker.busy and worker.pid is not None:
                return worker.pid
        time.sleep(0.0005)
    return None


def refill(held: list[int]) -> None:
    """Take every descriptor that was freed since the table was filled."""
    while True:
        try:
            held.append(os.open(os.devnull, os.O_RDONLY))
        except OSError:
            return


def finishes(fn: Callable[[], Any], timeout: float = WAIT_S) -> bool:
    """Run ``fn`` on a daemon thread; False when it is still running after ``timeout`` (it hangs)."""
    thread = threading.Thread(target=fn, daemon=True)
    thread.start()
    thread.join(timeout)
    return not thread.is_alive()


def crash_the_io_thread(loader: FileStorageLoader, storage: Any) -> list[Any]:
    """Three loads queued at a stopped worker, then kill it while no descriptor is left for its replacement.

    The I/O thread notices the death and starts the replacement, which fails with EMFILE on the
    I/O thread: the crash the pool must survive. Call inside ``descriptors_exhausted``.
    """
    victim = loader.status().workers[0].pid
    assert victim is not None
    os.kill(victim, signal.SIGSTOP)  # it cannot answer: the loads stay in flight at it
    futures = [loader.load(storage) for _ in range(3)]
    wait_until(lambda: loader.status().in_flight == 3)
    return futures


# ---- a worker that dies or cannot start ------------------------------------------------------
@pytest.mark.slow
def test_a_worker_killed_mid_load_fails_that_request_naming_the_worker_and_is_replaced(
    tmp_path: Path, clean_process: None
) -> None:
    with FileStorageLoader(tmp_path, ttl=None, worker_num=1) as loader:
        loader.start()
        big = loader.save({"obs": np.ones(128 << 20, np.uint8)})
        small = loader.save({"reward": np.float32(1.5)})
        for _attempt in range(5):
            first, second = loader.load(big), loader.load(small)
            victim = wait_until_busy(loader, first)
            if victim is None:  # the read was over before a poll saw it (a loaded machine): again
                first.result(WAIT_S)
                second.result(WAIT_S)
                continue
            os.kill(victim, signal.SIGKILL)
            error = first.exception(WAIT_S)
            if isinstance(error, WorkerDiedError):
                break
            second.result(WAIT_S)  # the kill landed after the big load; try again on the replacement
            loader.start()
        else:
            pytest.fail("could not kill the worker while it was reading")
        assert isinstance(error, RuntimeError)
        assert (error.worker, error.pid, error.exitcode, error.path) == ("worker 0", victim, -9, big.path)
        assert "worker 0 died while loading" in str(error) and "killed by signal 9" in str(error)
        assert f"pid = {victim}" in str(error)
        assert second.result(WAIT_S) == {"reward": np.float32(1.5)}  # it had not started: retried, not lost
        status = loader.status()
        assert status.workers[0].restarts >= 1 and status.workers[0].pid != victim
        assert status.workers[0].alive and status.loads_failed >= 1
        assert loader.load(big).result(WAIT_S)["obs"][-1] == 1  # later loads succeed
    assert not pid_alive(victim)


@pytest.mark.slow
def test_workers_that_cannot_start_stop_being_replaced_and_say_why(tmp_path: Path) -> None:
    script = tmp_path / "broken_interpreter.py"  # workers run an interpreter that exits at once
    script.write_text(
        textwrap.dedent(f"""
        import multiprocessing, sys
        sys.path[:0] = {sys.path!r}
        multiprocessing.set_executable("/bin/false")
        from inspector.loader import FileStorageLoader, WorkerStartError
        loader = FileStorageLoader({str(tmp_path)!r}, ttl=None, worker_num=1, inline_bytes=0)
        error = loader.load(loader.save([1])).exception(60)
        print(type(error).__name__, getattr(error, "failures", None), getattr(error, "exitcode", None))
        print(str(error).splitlines()[2])
        print(str(error).splitlines()[-1])
        loader.shutdown()
    """)
    )
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    lines = result.stdout.splitlines()
    assert lines[0] == "WorkerStartError 3 1", result.stderr[-2000:]
    assert lines[1].startswith("command = /bin/false -P -c ")
    assert "read the worker's stderr" in lines[2]


def test_a_worker_that_cannot_start_stops_the_ones_already_started_quietly(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], clean_process: None
) -> None:
    before = worker_processes()
    for keep_free in range(2, 24):  # find how many descriptors let one worker start but not the next
        loader = FileStorageLoader(tmp_path, ttl=None, worker_num=3)
        with descriptors_exhausted(keep_free), pytest.raises(OSError) as info:
            loader.start()
        error = info.value
        assert isinstance(error, WorkerSpawnError) and error.errno == errno.EMFILE, error
        assert "Could not start loader worker" in str(error) and "next step" in str(error)
        assert not loader.running and worker_processes() - before == set()  # stopped before the error reached us
        if error.index >= 1:
            break
    else:
        pytest.fail("no descriptor budget let the first worker start and stopped a later one")
    assert loader.load(loader.save([3])).result(WAIT_S) == [3]
    loader.shutdown()
    assert "Traceback" not in capfd.readouterr().err  # the stopped worker left no traceback behind


def test_a_worker_whose_parent_has_already_closed_the_socket_exits_quietly() -> None:
    from inspector.loader.pool.channel import Channel, socket_pair
    from inspector.loader.pool.worker_process import serve

    ours, theirs = socket_pair()
    ours.close()  # the parent gave up on this worker before it said it was ready
    worker = Channel(theirs)
    try:
        assert serve(worker, os.getppid()) is None
    finally:
        worker.close()


# ---- the I/O thread crashes ------------------------------------------------------------------
def test_after_an_io_thread_crash_every_request_fails_with_the_cause_and_the_next_load_starts_afresh(
    tmp_path: Path, clean_process: None
) -> None:
    loader = FileStorageLoader(tmp_path, ttl=None, worker_num=1, inline_bytes=0)  # loads wait at the worker
    storage = loader.save({"a": np.arange(10)})
    loader.start()
    try:
        futures = crash_the_io_thread(loader, storage)
        victim = loader.status().workers[0].pid or 0
        with descriptors_exhausted() as held:
            os.kill(victim, signal.SIGKILL)
            for future in futures:
                future.exception(WAIT_S)
            first, *queued = futures
            assert isinstance(first.exception(), WorkerDiedError)  # it was being read: the worker's death
            for future in queued:  # they were waiting for the replacement that could not start
                error = future.exception()
                assert isinstance(error, LoaderCrashedError) and isinstance(error, RuntimeError)
                assert error.path == storage.path and isinstance(error.cause, WorkerSpawnError)
                assert error.cause.errno == errno.EMFILE and error.cause.index == 0
                assert "I/O thread crashed before" in str(error) and "Too many open files" in str(error)
                assert "next step = load again" in str(error)
            wait_until(lambda: not loader.running)
            assert not loader.status().running
            wait_until(lambda: loader_threads() == [])  # the crashed pool released its descriptors: take them too
            refill(held)
            # While the OS still refuses, a load says so at once instead of queuing where nothing reads.
            with pytest.raises(WorkerSpawnError, match="Could not start loader worker 0") as info:
                loader.load(storage)
            assert info.value.errno == errno.EMFILE and "ulimit" in str(info.value)
        assert loader.load(storage).result(WAIT_S)["a"].tolist() == list(range(10))
        assert loader.running
    finally:
        assert finishes(loader.shutdown)
    wait_until(lambda: loader_threads() == [])


def test_shutdown_after_an_io_thread_crash_returns_and_answers_every_future(
    tmp_path: Path, clean_process: None
) -> None:
    loader = FileStorageLoader(tmp_path, ttl=None, worker_num=1, inline_bytes=0)  # loads wait at the worker
    loader.start()
    futures = crash_the_io_thread(loader, loader.save([1]))
    victim = loader.status().workers[0].pid or 0
    with descriptors_exhausted():
        os.kill(victim, signal.SIGKILL)
        wait_until(lambda: all(f.done() for f in futures))
        assert finishes(loader.shutdown)
    assert all(f.done() for f in futures) and not loader.running
    assert loader.load(loader.save([2])).result(WAIT_S) == [2]  # restarts as after any shutdown
    assert finishes(loader.shutdown)


# ---- descriptors and memory run out ----------------------------------------------------------
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


def test_a_worker_out_of_descriptors_fails_that_load_with_emfile_and_serves_again() -> None:
    with FileStorageLoader(worker_num=1, ttl=None, inline_bytes=0) as loader:
        small, big = loader.save({"a": np.arange(10)}), loader.save({"b": np.ones(3 << 20, np.uint8)})
        assert int(loader.load(small).result(WAIT_S)["a"].sum()) == 45
        (worker,) = loader.status().workers
        process = psutil.Process(worker.pid)
        soft, hard = process.rlimit(psutil.RLIMIT_NOFILE)
        folder = f"/proc/{worker.pid}/fd"
        kept = [n for n in os.listdir(folder) if not stat.S_ISREG(os.stat(os.path.join(folder, n)).st_mode)]
        process.rlimit(psutil.RLIMIT_NOFILE, (len(kept), hard))  # no room beyond its streams and socket
        try:
            with pytest.raises(OSError) as info:  # a new segment and the file: two descriptors it cannot take
                loader.load(big).result(WAIT_S)
            assert info.value.errno == errno.EMFILE and big.path in str(info.value)
        finally:
            process.rlimit(psutil.RLIMIT_NOFILE, (soft, hard))
        assert int(loader.load(big).result(WAIT_S)["b"].sum()) == 3 << 20  # the same worker, not a replacement
        (after,) = loader.status().workers
        assert (after.pid, after.alive, after.restarts) == (worker.pid, True, 0)


def test_memory_that_cannot_be_reserved_fails_early_with_a_clear_error() -> None:
    with pytest.raises(SharedMemoryError, match="Could not reserve") as info:
        create_segment(0, 1 << 62, "inspector-loader-test-huge")
    assert info.value.nbytes == 1 << 62 and isinstance(info.value, OSError)
    assert "next step" in str(info.value)


def test_an_impossible_segment_reaches_the_future_not_a_sigbus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import inspector.loader.pool.segments as segments

    with FileStorageLoader(tmp_path, ttl=None, worker_num=1, inline_bytes=0) as loader:  # a worker's segment
        storage = loader.save({"a": np.zeros(10)})
        monkeypatch.setattr(segments, "capacity_for", lambda n: 1 << 62)  # a limit we cannot hit for real
        with pytest.raises(SharedMemoryError):
            loader.load(storage).result(WAIT_S)
        monkeypatch.undo()
        assert loader.load(storage).result(WAIT_S)["a"].shape == (10,)


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


# ---- a callback that never returns -----------------------------------------------------------
EXIT_SCRIPT = """
import json, sys, threading
sys.path[:0] = {path!r}
from inspector.loader import FileStorageLoader
if __name__ == "__main__":
    loader = FileStorageLoader({dirname!r}, ttl=None, worker_num=1)
    entered = threading.Event()

    def block_forever(_obj):
        entered.set()
        threading.Event().wait()

    loader.load(loader.save([1]), block_forever)
    entered.wait(60)
    print(json.dumps([w.pid for w in loader.status().workers]), flush=True)
    sys.exit(0)
"""


@pytest.mark.slow
def test_the_interpreter_exits_even_while_a_callback_blocks_forever(tmp_path: Path) -> None:
    script = tmp_path / "blocked_exit.py"
    script.write_text(textwrap.dedent(EXIT_SCRIPT).format(path=sys.path, dirname=str(tmp_path / "files")))
    process = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stderr is not None
        pids = json.loads(process.stdout.readline() or "null")
        assert pids, process.stderr.read()
        try:
            code = process.wait(WAIT_S)
        except subprocess.TimeoutExpired:
            pytest.fail("the interpreter did not exit: the exit hook waited for the blocked callback")
        assert code == 0, process.stderr.read()
        assert wait_gone(pids) == []
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
