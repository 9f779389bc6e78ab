"""Real faults: a worker killed with -9 mid-load, workers that cannot start, memory that cannot be had."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from loader_probes import pid_alive
from waiting import WAIT_S

from inspector.loader import FileStorageLoader, SharedMemoryError, WorkerDiedError
from inspector.loader.pool.segments import create_segment


def wait_until_busy(loader: FileStorageLoader, load: Future[Any], timeout: float = 10.0) -> int | None:
    """The pid of a worker busy with ``load``; None when it finished before we saw it (try again)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not load.done():
        for worker in loader.status().workers:
            if worker.busy and worker.pid is not None:
                return worker.pid
        time.sleep(0.0005)
    return None


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
    script.write_text(textwrap.dedent(f"""
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
    """))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    lines = result.stdout.splitlines()
    assert lines[0] == "WorkerStartError 3 1", result.stderr[-2000:]
    assert lines[1].startswith("command = /bin/false -P -c ")
    assert "read the worker's stderr" in lines[2]


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
