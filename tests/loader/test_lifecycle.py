"""Start, shutdown, restart and exit: no worker, thread, segment or file of ours is left behind."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from loader_probes import loader_threads, memfd_mappings, pid_alive, shm_entries, wait_gone, worker_processes
from waiting import WAIT_S, wait_until

from inspector.loader import (
    FileStorage,
    FileStorageLoader,
    LoaderError,
    LoaderShutdownError,
    WorkersNotReadyError,
    loader_statuses,
)


def test_shutdown_leaves_no_worker_thread_segment_or_shm_entry(tmp_path: Path, clean_process: None) -> None:
    shm_before = shm_entries()
    loader = FileStorageLoader(tmp_path, ttl=5, worker_num=2, inline_bytes=0)  # a worker's segment
    obj = loader.load(loader.save({"a": np.arange(100_000)})).result(WAIT_S)
    pids = [w.pid for w in loader.status().workers]
    assert memfd_mappings() and set(pids) <= worker_processes()
    del obj
    loader.shutdown()
    gc.collect()
    assert not loader.running and loader.status().workers == ()
    assert wait_gone([p for p in pids if p]) == []
    assert loader_threads() == []
    assert memfd_mappings() == [] and shm_entries() == shm_before


def test_arrays_kept_after_shutdown_stay_valid_and_their_memory_goes_with_them(
    tmp_path: Path, clean_process: None
) -> None:
    with FileStorageLoader(tmp_path, ttl=None, worker_num=1, inline_bytes=0) as loader:  # a worker's segment
        kept = loader.load(loader.save({"a": np.arange(50_000)})).result(WAIT_S)
    assert kept["a"][-1] == 49_999 and memfd_mappings() != []  # still mapped: the array is alive
    kept["a"][0] = -1  # and still writable, owned by us alone
    del kept
    gc.collect()
    assert memfd_mappings() == []


def test_a_loader_restarts_after_shutdown_and_shutdown_is_idempotent(tmp_path: Path, clean_process: None) -> None:
    loader = FileStorageLoader(tmp_path, ttl=None, worker_num=1)
    storage = loader.save([1])
    for round_ in range(3):
        assert loader.load(storage).result(WAIT_S) == [1], round_
        first_pid = loader.status().workers[0].pid
        loader.shutdown()
        loader.shutdown()
        assert not pid_alive(first_pid or 0) or wait_gone([first_pid or 0]) == []


def test_shutdown_finishes_submitted_loads_by_default(tmp_path: Path, clean_process: None) -> None:
    with FileStorageLoader(tmp_path, ttl=None, worker_num=2) as loader:
        storage = loader.save({"a": np.ones(1 << 20)})
        futures = [loader.load(storage) for _ in range(20)]
        loader.shutdown()
        assert all(f.done() and f.exception() is None for f in futures)


def test_shutdown_with_a_timeout_answers_every_request_even_unfinished_ones(
    tmp_path: Path, clean_process: None
) -> None:
    gate = threading.Event()
    with FileStorageLoader(tmp_path, ttl=None, worker_num=1) as loader:
        storage = loader.save([1])
        futures = [loader.load(storage, lambda _obj: gate.wait(0.5)) for _ in range(12)]
        loader.shutdown(timeout=0.1)
        gate.set()
        outcomes = [f.exception(WAIT_S) for f in futures]
    assert all(f.done() for f in futures)  # zero lost requests
    assert any(isinstance(e, LoaderShutdownError) for e in outcomes)
    error = next(e for e in outcomes if isinstance(e, LoaderShutdownError))
    assert error.path == storage.path and "load again" in str(error)


def test_shutdown_from_inside_a_callback_does_not_deadlock(tmp_path: Path, clean_process: None) -> None:
    loader = FileStorageLoader(tmp_path, ttl=None, worker_num=1)
    done = threading.Event()

    def stop(_obj: Any) -> None:
        loader.shutdown()
        done.set()

    loader.load(loader.save([1]), stop).result(WAIT_S)
    assert done.wait(WAIT_S) and not loader.running
    wait_until(lambda: not loader_threads(), what="the loader's threads to end")


def test_a_dropped_loader_finishes_its_loads_then_shuts_itself_down(tmp_path: Path, clean_process: None) -> None:
    got: list[Any] = []
    loader = FileStorageLoader(tmp_path, ttl=None, worker_num=1)
    storage = loader.save([7])
    future = loader.load(storage, got.append)
    pid = loader.status().workers[0].pid
    del loader
    gc.collect()
    assert future.result(WAIT_S) == [7] and got == [[7]]
    assert wait_gone([pid or 0]) == []
    wait_until(lambda: not loader_threads(), what="the loader's threads to end")


def test_start_that_runs_out_of_time_raises_a_loader_timeout_and_the_loader_still_starts(tmp_path: Path) -> None:
    with FileStorageLoader(tmp_path, ttl=None, worker_num=1) as loader:
        with pytest.raises(WorkersNotReadyError, match="workers not ready after 0 s") as info:
            loader.start(timeout=0)  # no worker process is ready the instant it is spawned
        assert isinstance(info.value, LoaderError) and isinstance(info.value, TimeoutError)
        assert "next step" in str(info.value)
        assert loader.start(timeout=WAIT_S).running  # the workers kept starting
        assert loader.load(loader.save([1])).result(WAIT_S) == [1]


def test_loader_statuses_lists_live_loaders(tmp_path: Path) -> None:
    with FileStorageLoader(tmp_path, ttl=None, worker_num=1) as loader:
        loader.start()
        names = {s.name: s for s in loader_statuses()}
        assert names[loader.name].running and names[loader.name].worker_num == 1


EXIT_SCRIPT = """
import json, os, sys, time
sys.path[:0] = {path!r}
import numpy as np
from inspector.loader import FileStorageLoader
if __name__ == "__main__":
    loader = FileStorageLoader({dirname}, ttl=None, worker_num=2)
    kept = loader.load(loader.save({{"a": np.arange(10)}})).result(60)
    pending = [loader.load(loader.save({{"b": np.ones(1000)}})) for _ in range(5)]
    print(json.dumps({{"pids": [w.pid for w in loader.status().workers], "dir": loader.dirname}}), flush=True)
    {ending}
"""


def run_exit_script(tmp_path: Path, ending: str, dirname: str | None = None) -> tuple[subprocess.Popen[str], dict]:
    script = tmp_path / "exit_script.py"
    script.write_text(textwrap.dedent(EXIT_SCRIPT).format(path=sys.path, dirname=dirname or "None", ending=ending))
    process = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line, process.stderr.read() if process.stderr else ""
    return process, json.loads(line)


@pytest.mark.slow
def test_interpreter_exit_without_shutdown_leaves_nothing_behind(tmp_path: Path) -> None:
    shm_before = shm_entries()
    process, info = run_exit_script(tmp_path, ending="sys.exit(0)")
    assert process.wait(WAIT_S) == 0, process.stderr.read() if process.stderr else ""
    assert wait_gone(info["pids"]) == []
    assert not os.path.exists(info["dir"])  # the private directory went too
    assert {n for n in shm_entries() - shm_before if n.startswith("inspector")} == set()


@pytest.mark.slow
def test_workers_exit_on_their_own_when_the_parent_is_killed(tmp_path: Path) -> None:
    shm_before = shm_entries()
    process, info = run_exit_script(tmp_path, ending="time.sleep(60)", dirname=repr(str(tmp_path / "files")))
    os.kill(process.pid, signal.SIGKILL)
    process.wait(WAIT_S)
    assert wait_gone(info["pids"]) == []
    assert {n for n in shm_entries() - shm_before if n.startswith("inspector")} == set()


@pytest.mark.slow
def test_a_worker_crash_then_shutdown_leaves_nothing_behind(tmp_path: Path, clean_process: None) -> None:
    with FileStorageLoader(tmp_path, ttl=None, worker_num=2, inline_bytes=0) as loader:  # the loads go to the workers
        storage = loader.save({"a": np.arange(1000)})
        loader.load(storage).result(WAIT_S)
        victims = [w.pid or 0 for w in loader.status().workers]
        for pid in victims:
            os.kill(pid, signal.SIGKILL)
        assert wait_gone(victims) == []
        assert loader.load(storage).result(WAIT_S)["a"][-1] == 999
        replacements = [w.pid or 0 for w in loader.status().workers]
        assert set(replacements).isdisjoint(victims)
    assert wait_gone(replacements) == []


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
