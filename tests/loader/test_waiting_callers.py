"""A caller waiting in ``result()`` reads its own reply: timeouts hold, deaths reach it, and interrupts lose nothing."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from waiting import WAIT_S

from inspector.loader import FileStorageLoader, WorkerDiedError
from inspector.loader.pool.config import DEPTH


@contextlib.contextmanager
def paused(pid: int) -> Iterator[None]:
    """The worker ``pid`` stopped for real (SIGSTOP) until the block ends."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


@pytest.mark.parametrize("timeout", [0.05, 0.6])  # shorter and longer than one blocking read of replies
def test_a_waiting_caller_keeps_its_timeout_and_gets_the_reply_later(timeout: float) -> None:
    with FileStorageLoader(worker_num=1, ttl=None) as loader:
        storage = loader.save({"a": np.arange(5)})
        loader.start()
        (worker,) = loader.status().workers
        with paused(worker.pid):
            future = loader.load(storage)
            with pytest.raises(TimeoutError):
                future.result(timeout)
            assert not future.done()
        assert int(future.result(WAIT_S)["a"].sum()) == 10


def test_callers_waiting_on_one_worker_from_several_threads_all_get_their_loads() -> None:
    with FileStorageLoader(worker_num=1, ttl=None) as loader:
        storages = [loader.save({"i": np.full(3, i)}) for i in range(DEPTH)]
        loader.start()
        (worker,) = loader.status().workers
        got: dict[int, Any] = {}
        with paused(worker.pid):  # every request is at the one worker before anyone waits
            futures = [loader.load(s) for s in storages]
            threads = [threading.Thread(target=lambda i=i: got.update({i: futures[i].result(WAIT_S)}))
                       for i in range(DEPTH)]  # fmt: skip
            for thread in threads:
                thread.start()
        for thread in threads:
            thread.join(WAIT_S)
        assert sorted(got) == list(range(DEPTH)) and all(int(got[i]["i"][0]) == i for i in got)


def test_a_caller_waiting_while_its_worker_is_killed_gets_worker_died_error() -> None:
    with FileStorageLoader(worker_num=1, ttl=None) as loader:
        storage = loader.save({"a": np.arange(5)})
        loader.start()
        (worker,) = loader.status().workers
        os.kill(worker.pid, signal.SIGSTOP)  # it holds the request, then dies with it
        future = loader.load(storage)
        threading.Timer(0.2, os.kill, (worker.pid, signal.SIGKILL)).start()
        with pytest.raises(WorkerDiedError):
            future.result(WAIT_S)
        assert int(loader.load(storage).result(WAIT_S)["a"].sum()) == 10  # its replacement serves


def test_interrupts_striking_while_callers_read_their_replies_lose_no_load() -> None:
    def interrupt(_signum: int, frame: Any) -> None:  # Ctrl-C, only while a caller reads or handles replies
        codes = []
        while frame is not None:
            codes.append((frame.f_code.co_name, frame.f_code.co_filename))
            frame = frame.f_back
        names = {name for name, _ in codes}
        # not inside the standard library's locks, logging or finalizers (an interrupt there breaks them, not us)
        stdlib = any(f.endswith(("threading.py", "weakref.py")) or f"{os.sep}logging{os.sep}" in f for _, f in codes)
        if "receive_for" in names and not stdlib and not names & {"kick", "__del__", "released", "_munmap"}:
            raise KeyboardInterrupt

    with FileStorageLoader(worker_num=2, ttl=None) as loader:
        storage = loader.save({"a": np.arange(100)})
        loader.start()
        previous = signal.signal(signal.SIGALRM, interrupt)
        interrupted = rounds = 0
        try:
            while rounds < 2000 and (interrupted < 200 or rounds < 200):
                rounds += 1
                futures = [loader.load(storage) for _ in range(2 * DEPTH)]  # all in flight: none waits in the queue
                signal.setitimer(signal.ITIMER_REAL, 0.0005, 0.0005)
                try:
                    for future in futures:
                        while True:
                            try:
                                assert int(future.result(WAIT_S)["a"].sum()) == 4950
                                break
                            except KeyboardInterrupt:
                                interrupted += 1
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
        finally:
            signal.signal(signal.SIGALRM, previous)
        status = loader.status()
        assert interrupted > 0 and (status.pending, status.in_flight) == (0, 0)
        assert status.loads_done >= rounds * 2 * DEPTH and status.loads_failed == 0
