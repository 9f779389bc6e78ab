"""Callers waiting for loads: timeouts hold, deaths reach them, interrupts (Ctrl-C) lose nothing, and a
callback that waits on another load either gets it or is refused at once, never deadlocked.

An interrupt is raised in the main thread at points where CPython runs signal handlers: the start
of a Python function, and right after a call into C returns (or, for a call that may block,
instead of it). The exhaustive tests raise one at each such point in turn, through
``sys.setprofile`` (deterministic: the n-th event of a round), the stress test from a real
signal timer. The timer is ``ITIMER_PROF``, never ``SIGALRM``/``ITIMER_REAL``, which
pytest-timeout's signal method needs; and these tests use its thread method, so a hang fails the
run instead of stopping it.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import numpy as np
import pytest
from loader_probes import worker_processes
from waiting import WAIT_S, wait_until

from inspector.loader import CallbackDeadlockError, FileStorageLoader, WorkerDiedError
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
    with FileStorageLoader(worker_num=1, ttl=None, inline_bytes=0) as loader:  # the load waits at the worker
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
    with FileStorageLoader(worker_num=1, ttl=None, inline_bytes=0) as loader:  # the load waits at the worker
        storages = [loader.save({"i": np.full(3, i)}) for i in range(DEPTH)]
        loader.start()
        (worker,) = loader.status().workers
        got: dict[int, Any] = {}
        with paused(worker.pid):  # every request is at the one worker before anyone waits
            futures = [loader.load(s) for s in storages]
            threads = [
                threading.Thread(target=lambda i=i: got.update({i: futures[i].result(WAIT_S)})) for i in range(DEPTH)
            ]
            for thread in threads:
                thread.start()
        for thread in threads:
            thread.join(WAIT_S)
        assert sorted(got) == list(range(DEPTH)) and all(int(got[i]["i"][0]) == i for i in got)


def test_a_caller_waiting_while_its_worker_is_killed_gets_worker_died_error() -> None:
    with FileStorageLoader(worker_num=1, ttl=None, inline_bytes=0) as loader:  # the load waits at the worker
        storage = loader.save({"a": np.arange(5)})
        loader.start()
        (worker,) = loader.status().workers
        os.kill(worker.pid, signal.SIGSTOP)  # it holds the request, then dies with it
        future = loader.load(storage)
        threading.Timer(0.2, os.kill, (worker.pid, signal.SIGKILL)).start()
        with pytest.raises(WorkerDiedError):
            future.result(WAIT_S)
        assert int(loader.load(storage).result(WAIT_S)["a"].sum()) == 10  # its replacement serves


# C functions that may block: a signal that arrives while one waits runs its handler inside it, and what the handler
# raises comes out of the call before it took effect. Any other C call runs its handlers only once it has returned.
BLOCKING = frozenset(
    {
        "acquire",
        "sleep",
        "join",
        "wait",
        "get",
        "put",
        "read",
        "readinto",
        "write",
        "pread",
        "preadv",
        "recv",
        "recv_into",
        "recvmsg",
        "recvmsg_into",
        "send",
        "sendall",
        "sendmsg",
        "poll",
        "select",
        "open",
        "waitpid",
        "wait4",
        "connect",
        "accept",
    }
)


class InterruptAt:
    """A profile function that raises ``KeyboardInterrupt`` at the ``nth`` point of this thread where a signal handler
    could run (see the module docstring); ``where`` says which, or stays None when the round had fewer."""

    def __init__(self, nth: int) -> None:
        self.nth, self.seen, self.where = nth, 0, None

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if frame.f_code is run_interrupted.__code__ or beyond_repair(frame):
            return
        if event == "call" or event == "c_return" or (event == "c_call" and getattr(arg, "__name__", "") in BLOCKING):
            self.seen += 1
            if self.seen == self.nth:
                self.where = (
                    f"{event} {getattr(arg, '__name__', '')} in {frame.f_code.co_name} "
                    f"({os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno})"
                )
                sys.setprofile(None)
                raise KeyboardInterrupt


def beyond_repair(frame: FrameType | None) -> bool:
    """Points no code of ours can guard: a finalizer or a garbage-collector callback (Python swallows what they
    raise, "Exception ignored in": hypothesis installs one), and CPython's ``Thread.start`` (it waits on an
    ``Event`` whose ``Condition`` an interrupt can leave held, and then the new thread never runs)."""
    gc_callbacks = {getattr(callback, "__code__", None) for callback in gc.callbacks}
    while frame is not None:
        code = frame.f_code
        if code.co_name == "__del__" or code.co_filename.endswith(("weakref.py", "_weakrefset.py")):
            return True
        if code in gc_callbacks:
            return True
        if code.co_name == "start" and code.co_filename.endswith("threading.py"):
            return True
        frame = frame.f_back
    return False


def run_interrupted(nth: int, fn: Callable[[], None]) -> InterruptAt:
    """Run ``fn`` with an interrupt raised at its ``nth`` point (0: none), and swallow what comes out of it.

    What comes out is usually the ``KeyboardInterrupt``, but the standard library may turn it into another error
    on its way (``threading.Condition.wait`` interrupted between giving up its lock and taking it back releases a
    lock it does not hold; ``shutil.rmtree`` interrupted in its ``finally`` closes a descriptor twice): what
    counts is what the loader looks like afterwards, which each test checks.
    """
    injector = InterruptAt(nth)
    sys.setprofile(injector)
    try:
        fn()
    except (KeyboardInterrupt, Exception):
        if injector.where is None:
            raise
    finally:
        sys.setprofile(None)
    return injector


def every_point(round_trip: Callable[[], None], limit: int = 20_000) -> list[str]:
    """Run ``round_trip`` once per interruption point, interrupted there, until a round ends with none left over."""
    where = []
    for nth in range(1, limit):
        injector = run_interrupted(nth, round_trip)
        if injector.where is None:
            return where
        where.append(injector.where)
    raise AssertionError(f"more than {limit} interruption points in one round")


def shut_down_within(loader: FileStorageLoader, bound: float) -> bool:
    """``loader.shutdown()`` on a helper thread; True if it returned within ``bound`` seconds."""
    thread = threading.Thread(target=loader.shutdown, daemon=True)
    thread.start()
    thread.join(bound)
    return not thread.is_alive()


@pytest.mark.timeout(600, method="thread")
def test_an_interrupt_at_any_point_of_save_load_and_result_loses_no_load(clean_process: None) -> None:
    loader = FileStorageLoader(worker_num=1, ttl=None)
    storages, futures = [loader.save({"a": np.arange(100)})], []  # its directory exists: the standard library's
    loader.start()  # tempfile takes a lock without guarding it on first use, which an interrupt would leave held

    def round_trip() -> None:
        # a key of its own each round: a header seen before is not parsed again, and a small load is read on this
        # thread, so the same header would leave later rounds with fewer points than the earlier ones
        storage = loader.save({"a": np.arange(100), f"round {len(storages)}": 0})
        storages.append(storage)
        future = loader.load(storage)
        futures.append(future)
        assert int(future.result(WAIT_S)["a"].sum()) == 4950

    points = every_point(round_trip)
    assert len(points) > 100 and any("result" in p for p in points) and any("submit" in p for p in points)
    for future in futures:  # every load the caller got a future for is answered, and right
        assert int(future.result(WAIT_S)["a"].sum()) == 4950
    for storage in storages:  # every file a save returned is whole
        assert int(loader.load(storage).result(WAIT_S)["a"].sum()) == 4950
    status = loader.status()
    assert (status.pending, status.in_flight, status.loads_failed) == (0, 0, 0)
    assert shut_down_within(loader, WAIT_S), f"shutdown hangs after interrupts at {len(points)} points"


@pytest.mark.timeout(600, method="thread")
def test_an_interrupt_anywhere_in_start_or_shutdown_leaves_nothing_running(clean_process: None) -> None:
    directories: list[str | None] = []
    loaders: list[FileStorageLoader] = []

    def lifetime() -> None:
        loader = FileStorageLoader(worker_num=1, ttl=None)
        loaders.append(loader)
        storage = loader.save({"a": np.arange(3)})
        directories.append(loader.dirname)
        loader.start()
        assert int(loader.load(storage).result(WAIT_S)["a"].sum()) == 3
        loader.shutdown()

    points = run_interrupted(0, lifetime).seen
    stride = max(1, points // 60)  # starting workers takes a while: about 60 points, spread over the whole
    for nth in range(1, points + 1, stride):
        run_interrupted(nth, lifetime)
        assert shut_down_within(loaders[-1], WAIT_S)  # again: it finishes what an interrupted one began
        assert not loaders[-1].running
    wait_until(lambda: not worker_processes(), what="every worker to exit")
    names = tuple(f"{loader.name}-" for loader in loaders)
    try:
        wait_until(lambda: not [t for t in threading.enumerate() if t.name.startswith(names) and t.is_alive()])
    except TimeoutError:
        left = [t.name for t in threading.enumerate() if t.name.startswith(names) and t.is_alive()]
        raise AssertionError(f"threads left running: {left}") from None
    assert not [d for d in directories if d is not None and os.path.exists(d)]


@pytest.mark.timeout(600, method="thread")
def test_interrupts_from_a_signal_timer_while_callers_load_and_wait_lose_no_load(clean_process: None) -> None:
    armed = False
    interrupted = 0

    def interrupt(_signum: int, _frame: Any) -> None:  # Ctrl-C, only while the test is inside load() or result()
        if armed:
            raise KeyboardInterrupt

    loader = FileStorageLoader(worker_num=2, ttl=None)
    storage = loader.save({"a": np.arange(100)})
    loader.start()
    previous = signal.signal(signal.SIGPROF, interrupt)
    # A garbage collection may start at any allocation, and an interrupt raised inside another library's gc
    # callback (hypothesis installs one) is ignored by Python and reported as unraisable: that is not the loader's.
    gc.disable()
    signal.setitimer(signal.ITIMER_PROF, 0.0002, 0.0002)  # every 0.2 ms of the process's CPU time
    answered = 0
    try:
        for _round in range(300):
            futures = []
            while len(futures) < 2 * DEPTH:
                try:
                    armed = True
                    future = loader.load(storage)
                    armed = False
                    futures.append(future)
                except KeyboardInterrupt:
                    armed = False
                    interrupted += 1
            for future in futures:
                while True:
                    try:
                        armed = True
                        value = future.result(WAIT_S)
                        armed = False
                        break
                    except KeyboardInterrupt:
                        armed = False
                        interrupted += 1
                assert int(value["a"].sum()) == 4950
                answered += 1
    finally:
        armed = False
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
        gc.enable()
    status = loader.status()
    assert interrupted > 0 and answered == 300 * 2 * DEPTH
    assert (status.pending, status.in_flight, status.loads_failed) == (0, 0, 0)
    assert status.loads_done >= answered
    assert shut_down_within(loader, WAIT_S)


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
