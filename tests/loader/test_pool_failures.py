"""The pool's own failures: a worker the OS will not start, an I/O thread that crashes, a callback that never returns.

Every fault here is real: "the OS refuses to start a process" is a descriptor table filled for
real (``descriptors_exhausted``), so creating the socket pair or the pipes a new process needs
fails with EMFILE; a worker out of descriptors has its own limit lowered for real (``prlimit``
through psutil), so the descriptors sent with a request never reach it.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import pytest
from loader_probes import descriptors_exhausted, loader_threads, wait_gone, worker_processes
from waiting import WAIT_S

from inspector.loader import FileStorageLoader, LoaderCrashedError, WorkerDiedError, WorkerSpawnError


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


def wait_for(condition: Callable[[], bool], timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.01)


def crash_the_io_thread(loader: FileStorageLoader, storage: Any) -> list[Any]:
    """Three loads queued at a stopped worker, then kill it while no descriptor is left for its replacement.

    The I/O thread notices the death and starts the replacement, which fails with EMFILE on the
    I/O thread: the crash the pool must survive. Call inside ``descriptors_exhausted``.
    """
    victim = loader.status().workers[0].pid
    assert victim is not None
    os.kill(victim, signal.SIGSTOP)  # it cannot answer: the loads stay in flight at it
    futures = [loader.load(storage) for _ in range(3)]
    wait_for(lambda: loader.status().in_flight == 3)
    return futures


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
            wait_for(lambda: not loader.running)
            assert not loader.status().running
            wait_for(lambda: loader_threads() == [])  # the crashed pool released its descriptors: take them too
            refill(held)
            # While the OS still refuses, a load says so at once instead of queuing where nothing reads.
            with pytest.raises(WorkerSpawnError, match="Could not start loader worker 0") as info:
                loader.load(storage)
            assert info.value.errno == errno.EMFILE and "ulimit" in str(info.value)
        assert loader.load(storage).result(WAIT_S)["a"].tolist() == list(range(10))
        assert loader.running
    finally:
        assert finishes(loader.shutdown)
    wait_for(lambda: loader_threads() == [])


def test_shutdown_after_an_io_thread_crash_returns_and_answers_every_future(
    tmp_path: Path, clean_process: None
) -> None:
    loader = FileStorageLoader(tmp_path, ttl=None, worker_num=1, inline_bytes=0)  # loads wait at the worker
    loader.start()
    futures = crash_the_io_thread(loader, loader.save([1]))
    victim = loader.status().workers[0].pid or 0
    with descriptors_exhausted():
        os.kill(victim, signal.SIGKILL)
        wait_for(lambda: all(f.done() for f in futures))
        assert finishes(loader.shutdown)
    assert all(f.done() for f in futures) and not loader.running
    assert loader.load(loader.save([2])).result(WAIT_S) == [2]  # restarts as after any shutdown
    assert finishes(loader.shutdown)


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
