"""Scoped selections are visible only to the code they enclose: not to other threads or tasks."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import torch
from waiting import WAIT_S

from inspector.dispatch import CallContext, current_overrides, get_override, op_backend, resolve

F32 = torch.float32


def test_a_thread_does_not_see_the_callers_scope(toy: str) -> None:
    seen: dict[str, object] = {}
    with op_backend(toy="fp8"):
        worker = threading.Thread(target=lambda: seen.update(name=resolve(toy, CallContext(toy, dtype=F32)).name))
        worker.start()
        worker.join(WAIT_S)
        assert not worker.is_alive()
        assert resolve(toy, CallContext(toy, dtype=F32)).name == "fp8"
    assert seen["name"] == "beta"


def test_a_thread_scope_does_not_leak_into_the_main_thread(toy: str) -> None:
    inside = threading.Event()
    release = threading.Event()
    observed: list[object] = []

    def worker() -> None:
        with op_backend(toy="fp8"):
            inside.set()
            release.wait(5)

    thread = threading.Thread(target=worker)
    thread.start()
    assert inside.wait(5)
    observed.append(get_override(toy))
    release.set()
    thread.join(WAIT_S)
    assert not thread.is_alive()
    assert observed == [None]


def test_copy_context_carries_a_scope_into_a_thread(toy: str) -> None:
    seen: list[str] = []
    with op_backend(toy="fp8"):
        ctx = contextvars.copy_context()
    thread = threading.Thread(target=ctx.run, args=(lambda: seen.append(resolve(toy, CallContext(toy)).name),))
    thread.start()
    thread.join(WAIT_S)
    assert not thread.is_alive()
    assert seen == ["fp8"]


def test_asyncio_tasks_keep_their_own_scopes(toy: str) -> None:
    async def pick(name: str | None, gate: asyncio.Event, results: dict) -> None:
        with op_backend(toy=name):
            gate.set()
            await asyncio.sleep(0.01)  # interleave with the other task while inside the scope
            results[name] = resolve(toy, CallContext(toy, dtype=F32)).name

    async def main() -> dict:
        results: dict = {}
        gates = asyncio.Event(), asyncio.Event()
        await asyncio.gather(pick("fp8", gates[0], results), pick(None, gates[1], results))
        return results

    assert asyncio.run(main()) == {"fp8": "fp8", None: "beta"}
    assert dict(current_overrides()) == {}


def test_a_task_does_not_leak_its_scope_to_its_creator(toy: str) -> None:
    async def inner() -> None:
        op_backend(toy="fp8").__enter__()  # never exited: must still not leak out of the task

    async def main() -> object:
        await asyncio.create_task(inner())
        return get_override(toy)

    assert asyncio.run(main()) is None


def test_one_scope_object_can_be_shared_by_threads(toy: str) -> None:
    shared = op_backend(toy="fp8")
    barrier = threading.Barrier(4)
    results: list[object] = []

    def worker() -> None:
        try:
            with shared:
                barrier.wait(5)  # every thread is inside the same object's scope at once
                results.append(resolve(toy, CallContext(toy, dtype=F32)).name)
            results.append(get_override(toy))
        except Exception as exc:  # reported through the assertion below
            results.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    assert not any(thread.is_alive() for thread in threads)
    assert sorted(map(str, results)) == sorted(["fp8"] * 4 + ["None"] * 4)


def test_one_scope_object_can_be_shared_by_asyncio_tasks(toy: str) -> None:
    shared = op_backend(toy="fp8")

    async def step(delay: float) -> tuple[str, object]:
        with shared:
            await asyncio.sleep(delay)
            inside = resolve(toy, CallContext(toy, dtype=F32)).name
        return inside, get_override(toy)

    async def main() -> list[tuple[str, object]]:
        return list(await asyncio.gather(step(0.02), step(0.01)))

    assert asyncio.run(main()) == [("fp8", None), ("fp8", None)]
