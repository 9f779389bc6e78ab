"""``future.add_done_callback``: runs off the I/O thread, cannot break the pool, and waits in it are judged as in
callbacks."""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from waiting import WAIT_S, wait_until

from inspector.loader import CallbackDeadlockError, FileStorageLoader


@pytest.fixture(scope="module")
def loader(worker_loader: FileStorageLoader) -> FileStorageLoader:
    """Every load here goes to a worker, so pausing the workers keeps it pending."""
    return worker_loader


@contextlib.contextmanager
def workers_paused(loader: FileStorageLoader) -> Iterator[None]:
    """Stop every worker (SIGSTOP) so a load sent now stays pending until the block ends; then continue them."""
    pids = [w.pid for w in loader.status().workers if w.pid is not None]
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)


@contextlib.contextmanager
def pending_load(loader: FileStorageLoader, obj: Any) -> Iterator[Any]:
    """A load without a callback (completed on the I/O thread) that has a done-callback added while pending."""
    storage = loader.save(obj)
    with workers_paused(loader):
        future = loader.load(storage)
        yield future
        assert not future.done()


def test_a_done_callback_runs_on_the_delivery_thread_never_the_io_thread(loader: FileStorageLoader) -> None:
    ran_on: list[str] = []
    with pending_load(loader, [1]) as future:
        future.add_done_callback(lambda _f: ran_on.append(threading.current_thread().name))
    assert future.result(WAIT_S) == [1]
    wait_until(lambda: ran_on, WAIT_S)
    assert ran_on[0].endswith("-delivery")


def test_a_done_callback_on_a_load_answered_in_the_caller_runs_on_the_delivery_thread(tmp_path: Path) -> None:
    ran_on: list[str] = []
    with FileStorageLoader(tmp_path, worker_num=1, ttl=None) as loader:
        future = loader.load(loader.save([1]))  # small and cached: answered before load returns
        assert future.done()
        future.add_done_callback(lambda _f: ran_on.append(threading.current_thread().name))
        wait_until(lambda: ran_on, WAIT_S)
    assert ran_on == [f"{loader.name}-delivery"]


@pytest.mark.parametrize("exc_type", [SystemExit, KeyboardInterrupt, ValueError])
def test_a_done_callback_that_raises_fails_no_other_load(exc_type: type[BaseException]) -> None:
    with FileStorageLoader(worker_num=1, ttl=None, inline_bytes=0) as loader:
        storage = loader.save({"a": [1, 2, 3]})
        loader.start()
        ran = threading.Event()

        def explode(_future: Any) -> None:
            ran.set()
            raise exc_type("from a done-callback")

        with workers_paused(loader):
            futures = [loader.load(storage) for _ in range(8)]
            futures[3].add_done_callback(explode)
        assert [f.result(WAIT_S) for f in futures] == [{"a": [1, 2, 3]}] * 8
        assert ran.wait(WAIT_S)
        assert loader.load(storage).result(WAIT_S) == {"a": [1, 2, 3]}
        status = loader.status()
        assert status.running and status.loads_failed == 0


def test_a_done_callback_may_wait_on_another_load_without_a_callback(loader: FileStorageLoader) -> None:
    inner = loader.save(["inner"])
    seen: list[Any] = []
    with pending_load(loader, ["outer"]) as future:
        future.add_done_callback(lambda _f: seen.append(loader.load(inner).result(WAIT_S)))
    assert future.result(WAIT_S) == ["outer"]
    wait_until(lambda: seen, WAIT_S)
    assert seen == [["inner"]]


def test_a_done_callback_waiting_on_a_load_with_a_callback_is_refused_at_once(loader: FileStorageLoader) -> None:
    inner = loader.save(["inner"])
    seen: list[BaseException] = []

    def wait_for_other(_future: Any) -> None:
        other = loader.load(inner, lambda _obj: None)
        try:
            other.result(WAIT_S)
        except CallbackDeadlockError as exc:
            seen.append(exc)

    with pending_load(loader, ["outer"]) as future:
        future.add_done_callback(wait_for_other)
    future.result(WAIT_S)
    wait_until(lambda: seen, WAIT_S)  # a wait that could never end is refused, not timed out
    assert "add_done_callback" in str(seen[0])


WAITS = {
    "wait": lambda futures: concurrent.futures.wait(futures, timeout=WAIT_S),
    "first_completed": lambda futures: concurrent.futures.wait(futures, WAIT_S, concurrent.futures.FIRST_COMPLETED),
    "as_completed": lambda futures: list(concurrent.futures.as_completed(futures, timeout=WAIT_S)),
}


@pytest.mark.parametrize("how", sorted(WAITS))
def test_concurrent_futures_waits_in_a_callback_on_a_load_with_a_callback_are_refused_at_once(
    loader: FileStorageLoader, how: str
) -> None:
    inner = loader.save(["inner"])
    seen: list[BaseException] = []

    def wait_for_other(_obj: Any) -> None:
        other = loader.load(inner, lambda _o: None)
        try:
            WAITS[how]([other])
        except CallbackDeadlockError as exc:
            seen.append(exc)

    loader.load(loader.save(["outer"]), wait_for_other).result(WAIT_S)  # returns: the wait did not hang
    assert len(seen) == 1


@pytest.mark.parametrize("how", sorted(WAITS))
def test_concurrent_futures_waits_in_a_callback_on_loads_without_one_work_even_with_the_queue_full(
    loader: FileStorageLoader, how: str
) -> None:
    inner = loader.save(["inner"])
    started, go, release = threading.Event(), threading.Event(), threading.Event()
    seen: list[Any] = []

    def first(_obj: Any) -> None:
        started.set()
        go.wait(WAIT_S)  # until the loads queued behind this callback fill the budget
        others = [loader.load(inner) for _ in range(3)]
        WAITS[how](others)
        seen.append([f.result(0) for f in others if f.done()])

    blocker = loader.save(["queued"])
    futures = [loader.load(loader.save(["first"]), first)]
    try:
        assert started.wait(WAIT_S)
        futures += [loader.load(blocker, lambda _obj: release.wait(WAIT_S)) for _ in range(30)]
        go.set()
        assert futures[0].result(WAIT_S) == ["first"] and len(seen) == 1
        assert len(seen[0]) >= (1 if how == "first_completed" else 3) and all(v == ["inner"] for v in seen[0])
    finally:
        go.set()
        release.set()
    assert all(f.result(WAIT_S) for f in futures)
