"""The join guard in one process: ranks as threads over a real TCPStore on 127.0.0.1, every wait bounded.

The same protocol runs in separate processes in ``test_rpc_job.py``; here each behaviour is
driven directly (arrive, fail, give up, lose the host) and checked on every rank.
"""

from __future__ import annotations

import gc
import logging
import socket
import threading
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inspector.rpc import (
    JobTopologyError,
    RankFailedError,
    RendezvousConfigError,
    RpcJoinError,
    TopologyPlan,
)
from inspector.rpc._agreement import PROTOCOL, disagreement
from inspector.rpc._init import DEFAULT_JOIN_TIMEOUT_S, JOIN_TIMEOUT_ENV, join_timeout_seconds
from inspector.rpc._job import check_job, gathered_plan, worker_record
from inspector.rpc._join import JobStore, Waiter, log_interval
from inspector.rpc._rendezvous import MAX_STORE_TIMEOUT_S, Rendezvous, open_store, resolve_rendezvous, store_timeout

THREAD_WAIT_S = 60.0
_generation = iter(range(10**6))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Rank:
    """One rank on a thread: connect, then run ``body(waiter)``; keeps its result or its error."""

    def __init__(self, rank: int, world: int, port: int, generation: int, join_timeout: float) -> None:
        import time

        self.rdzv = Rendezvous("127.0.0.1", port, rank, world)
        self.started = time.monotonic()
        self.join_timeout = join_timeout
        self.generation = generation
        self.result: Any = None
        self.error: BaseException | None = None
        self.store: Any = None
        self.thread: threading.Thread | None = None

    def waiter(self) -> Waiter:
        if self.store is None:
            self.store = open_store(self.rdzv, f"w{self.rdzv.rank}", self.started, self.join_timeout)
        return Waiter(
            JobStore(self.store, self.rdzv, self.generation), f"w{self.rdzv.rank}", self.started, self.join_timeout
        )

    def start(self, body: Callable[[Waiter], Any]) -> Rank:
        def run() -> None:
            try:
                self.result = body(self.waiter())
            except BaseException as exc:
                self.error = exc

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        return self

    def join(self) -> Rank:
        assert self.thread is not None
        self.thread.join(THREAD_WAIT_S)
        assert not self.thread.is_alive(), f"rank {self.rdzv.rank} is still waiting"
        return self


def job(world: int, join_timeout: float = 60.0) -> list[Rank]:
    port, generation = free_port(), next(_generation)
    return [Rank(rank, world, port, generation, join_timeout) for rank in range(world)]


def arrive(waiter: Waiter) -> dict[int, dict[str, Any]]:
    waiter.check_events()
    waiter.job.publish_arrival({"name": waiter.name, "rank": waiter.rdzv.rank})
    return waiter.wait_for_all()


def test_every_rank_gets_every_arrival_once_all_have_arrived() -> None:
    ranks = job(3)
    ranks[0].waiter()  # the host's store is up before the others connect
    for rank in ranks:
        rank.start(arrive)
    for rank in ranks:
        rank.join()
    assert [r.error for r in ranks] == [None, None, None]
    expected = {i: {"name": f"w{i}", "rank": i, "protocol": PROTOCOL, "world_size": 3} for i in range(3)}
    assert all(r.result == expected for r in ranks)


def test_a_missing_rank_makes_every_arrived_rank_raise_naming_it_and_the_address(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="inspector.rpc")
    ranks = job(3, join_timeout=3.0)
    ranks[0].waiter()
    for rank in (ranks[0], ranks[2]):
        rank.start(arrive)
    for rank in (ranks[0], ranks[2]):
        rank.join()
    for rank in (ranks[0], ranks[2]):
        error = rank.error
        assert isinstance(error, RpcJoinError) and isinstance(error, TimeoutError)
        assert error.missing == [1] and error.arrived == {0: "w0", 2: "w2"}
        assert error.address == f"127.0.0.1:{rank.rdzv.port}" and error.join_timeout == 3.0
        assert str(error).startswith(f"RPC join timed out after 3 s: ranks [1] never arrived at {error.address}.")
        assert "next step = look at the missing ranks' logs" in str(error)
    waiting = [r.getMessage() for r in caplog.records if "waiting for ranks [1]" in r.getMessage()]
    assert waiting and all("s of 3 s) at 127.0.0.1:" in line for line in waiting)


def test_a_published_failure_reaches_every_waiting_rank_at_once() -> None:
    ranks = job(3, join_timeout=THREAD_WAIT_S * 10)  # far beyond the thread wait: only the event can end it
    ranks[0].waiter()
    for rank in (ranks[0], ranks[2]):
        rank.start(arrive)
    ranks[1].start(lambda w: w.fail(ValueError("Node w1 has devices with invalid indices"))).join()
    for rank in (ranks[0], ranks[2]):
        error = rank.join().error
        assert isinstance(error, RankFailedError) and isinstance(error, RuntimeError)
        assert (error.rank, error.name, error.exception) == (1, "w1", "ValueError")
        assert error.message == "Node w1 has devices with invalid indices"
        assert str(error).startswith("Rank 1 (w1) failed before joining the RPC job: ValueError: Node w1 has")


def test_the_host_that_fails_keeps_its_store_up_until_every_rank_has_read_why() -> None:
    ranks = job(3, join_timeout=THREAD_WAIT_S * 10)
    host = ranks[0].start(lambda w: w.fail(RuntimeError("rank 0's set-up is broken")))
    late = [rank.start(arrive) for rank in ranks[1:]]  # they connect after the host has failed
    for rank in late:
        error = rank.join().error
        assert isinstance(error, RankFailedError) and (error.rank, error.message) == (0, "rank 0's set-up is broken")
    assert host.join().error is None  # fail() returned once both had read it


def test_two_processes_given_the_same_rank_are_named() -> None:
    ranks = job(3, join_timeout=THREAD_WAIT_S * 10)
    ranks[0].waiter()
    twin = Rank(1, 3, ranks[0].rdzv.port, ranks[0].generation, ranks[0].join_timeout)
    for rank in (ranks[0], ranks[1], twin):
        rank.start(arrive)
    for rank in (ranks[0], ranks[1], twin):
        error = rank.join().error
        assert isinstance(error, RendezvousConfigError) and "Ranks [1] arrived more than once" in str(error)


def test_losing_the_host_store_ends_the_wait_naming_rank_0() -> None:
    ranks = job(2, join_timeout=THREAD_WAIT_S * 10)
    ranks[0].waiter()
    waiting = ranks[1].start(arrive)
    while not ranks[0].waiter().job.arrived_count():  # until rank 1 is waiting on the store
        threading.Event().wait(0.05)
    ranks[0].store = None
    gc.collect()  # rank 0's process is gone: its server with it
    error = waiting.join().error
    assert isinstance(error, RpcJoinError) and error.missing == [0]
    assert "lost the rendezvous store that rank 0 hosts" in str(error)


def test_a_client_waits_for_the_host_with_progress_then_names_it() -> None:
    (_host, client) = job(2, join_timeout=2.0)
    waited: list[float] = []
    with pytest.raises(RpcJoinError) as caught:
        open_store(client.rdzv, "w1", client.started, client.join_timeout, waited.append)
    assert caught.value.missing == [0] and caught.value.arrived == {1: "w1"}
    assert "nothing answered at 127.0.0.1:" in str(caught.value) and waited == sorted(waited) and waited


def test_log_interval_is_a_thirtieth_of_the_timeout_within_one_and_ten_seconds() -> None:
    assert [log_interval(t) for t in (3, 60, 300, 3000)] == [1.0, 2.0, 10.0, 10.0]


# -- where the job meets -------------------------------------------------------------------------
def test_env_rendezvous_reads_master_addr_port_and_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MASTER_ADDR", "10.0.0.7")
    monkeypatch.setenv("MASTER_PORT", "29500")
    monkeypatch.setenv("RANK", "3")
    monkeypatch.delenv("TORCHELASTIC_USE_AGENT_STORE", raising=False)
    rdzv = resolve_rendezvous("env://", -1, 4)
    assert rdzv == Rendezvous("10.0.0.7", 29500, 3, 4) and rdzv.address == "10.0.0.7:29500"
    assert not rdzv.hosts_store and resolve_rendezvous("env://", 0, 4).hosts_store  # type: ignore[union-attr]
    monkeypatch.setenv("TORCHELASTIC_USE_AGENT_STORE", "True")
    assert not resolve_rendezvous("env://", 0, 4).hosts_store  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("env", "url", "rank", "fragment"),
    [
        ({"MASTER_PORT": "1"}, "env://", 0, "needs the environment variable MASTER_ADDR"),
        ({"MASTER_ADDR": "h"}, "env://", 0, "needs the environment variable MASTER_PORT"),
        ({"MASTER_ADDR": "h", "MASTER_PORT": "x"}, "env://", 0, "MASTER_PORT must be an integer, got 'x'"),
        ({"MASTER_ADDR": "h", "MASTER_PORT": "1"}, "env://", -1, "needs the environment variable RANK"),
        ({"MASTER_ADDR": "h", "MASTER_PORT": "1"}, "env://", 2, "rank 2 is outside 0 .. 1 for world_size 2"),
        ({}, "tcp://hostonly", 0, "needs a host and a port"),
        ({}, "tcp://h:0", 0, "port must be within 1 .. 65535"),
    ],
)
def test_a_rendezvous_that_cannot_work_says_what_to_set(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], url: str, rank: int, fragment: str
) -> None:
    for name in ("MASTER_ADDR", "MASTER_PORT", "RANK"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(RendezvousConfigError, match=fragment):
        resolve_rendezvous(url, rank, 2)


def test_tcp_is_guarded_and_file_is_left_to_torch() -> None:
    assert resolve_rendezvous("tcp://127.0.0.1:4000", 1, 2) == Rendezvous("127.0.0.1", 4000, 1, 2)
    assert resolve_rendezvous("file:///tmp/x", 0, 2) is None


def test_join_timeout_comes_from_the_argument_the_variable_or_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(JOIN_TIMEOUT_ENV, raising=False)
    assert join_timeout_seconds(None) == DEFAULT_JOIN_TIMEOUT_S == 300.0
    monkeypatch.setenv(JOIN_TIMEOUT_ENV, "45")
    assert join_timeout_seconds(None) == 45.0 and join_timeout_seconds(7) == 7.0
    for typed in ("soon", "", "nan", "inf", "-5", "0"):  # the message shows what was typed, not what it parsed to
        monkeypatch.setenv(JOIN_TIMEOUT_ENV, typed)
        with pytest.raises(RendezvousConfigError) as caught:
            join_timeout_seconds(None)
        assert str(caught.value).startswith(f"{JOIN_TIMEOUT_ENV} must be a positive number of seconds, got {typed!r}\n")
    for bad in (0, -1, float("inf"), float("nan"), True, "60", object()):
        with pytest.raises(RendezvousConfigError, match="join_timeout must be a positive number"):
            join_timeout_seconds(bad)


def test_any_real_join_timeout_is_accepted_and_only_the_stores_timeout_is_clamped(monkeypatch) -> None:
    import numpy as np

    assert join_timeout_seconds(np.int64(60)) == 60.0 and join_timeout_seconds(np.float32(0.5)) == 0.5
    assert join_timeout_seconds(1e308) == 1e308 and join_timeout_seconds(10**300) == 1e300
    monkeypatch.setenv(JOIN_TIMEOUT_ENV, "1e308")
    assert join_timeout_seconds(None) == 1e308
    assert store_timeout(1e308).total_seconds() == MAX_STORE_TIMEOUT_S and store_timeout(0.2).total_seconds() == 1.0
    with pytest.raises(RendezvousConfigError, match=r"^join_timeout is too large to be a number of seconds"):
        join_timeout_seconds(10**400)


def test_ranks_given_different_world_sizes_all_raise_the_same_error_at_once() -> None:
    port, generation = free_port(), next(_generation)
    ranks = [Rank(0, 2, port, generation, THREAD_WAIT_S * 10), Rank(1, 3, port, generation, THREAD_WAIT_S * 10)]
    ranks[0].waiter()
    for rank in ranks:
        rank.start(arrive)
    for rank in ranks:
        rank.join()
    errors = [r.error for r in ranks]
    assert all(isinstance(e, RendezvousConfigError) for e in errors), errors
    assert str(errors[0]) == str(errors[1])
    assert str(errors[0]).startswith(
        f"The ranks at 127.0.0.1:{port} disagree on the world size: ranks [0] (w0) say 2; ranks [1] (w1) say 3.\n"
    )


def record(name: str, world: int, protocol: int = PROTOCOL) -> dict[str, Any]:
    return {"name": name, "world_size": world, "protocol": protocol}


def test_disagreement_names_what_differs_and_who_says_what() -> None:
    assert disagreement({0: record("a", 2), 1: record("b", 2)}, "h:1") is None
    assert disagreement({}, "h:1") is None
    beyond = disagreement({0: record("a", 2), 1: record("b", 2), 2: record("c", 2)}, "h:1")
    assert beyond is not None and beyond.startswith("3 ranks arrived at h:1 for world size 2: ranks [2] (c) are beyond")
    older = disagreement({0: record("a", 2), 1: record("b", 2, protocol=0)}, "h:1")
    assert older is not None and older.startswith("The ranks at h:1 disagree on the inspector's join protocol: ")
    assert "next step = install the same inspector version on every node" in older


@given(
    st.dictionaries(
        st.integers(0, 12), st.tuples(st.integers(1, 12), st.sampled_from([PROTOCOL, PROTOCOL + 1])), max_size=12
    )
)
def test_disagreement_is_none_exactly_when_every_rank_agrees_and_fits_the_world(ranks) -> None:
    arrivals = {rank: record(f"w{rank}", world, protocol) for rank, (world, protocol) in ranks.items()}
    agree = len({(w, p) for w, p in ranks.values()}) <= 1 and all(rank < w for rank, (w, _p) in ranks.items())
    problem = disagreement(arrivals, "h:1")
    assert (problem is None) == agree
    assert problem is None or "\nnext step = " in problem


# -- the gathered plan ---------------------------------------------------------------------------
def records(plan: TopologyPlan, backend: str = "TENSORPIPE") -> dict[int, dict[str, Any]]:
    return {rank: {"name": w.name, "backend": backend, **worker_record(w)} for rank, w in enumerate(plan.workers)}


def test_the_gathered_plan_is_every_ranks_options_in_rank_order() -> None:
    plan = TopologyPlan.ring(3, 2)
    assert gathered_plan(records(plan)) == plan


def test_gathered_options_torch_would_refuse_raise_one_report_with_every_problem_and_warning() -> None:
    plan = TopologyPlan.build(2, 1, {"worker0": {"ghost": {"cpu": "cpu"}, "worker1": {"cuda:3": "cuda:0"}}})
    with pytest.raises(JobTopologyError) as caught:
        check_job(gathered_plan(records(plan)))
    error = caught.value
    assert isinstance(error, ValueError) and error.plan == plan and len(error.problems) == 2
    text = str(error)
    assert text.startswith("The RPC job's topology would be refused (checked on every rank before torch starts)")
    assert "init_rpc would raise = ValueError: Node worker0 has invalid target node names in its device maps" in text
    assert "problem 1 = UNKNOWN_TARGET_NAME" in text and "problem 2 = INVALID_SOURCE_INDEX" in text
    assert "warning = CPU_PAIR" in text and "every rank raised this same report" in text


def test_warnings_alone_are_logged_and_the_job_starts(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="inspector.rpc")
    check_job(TopologyPlan.build(2, 2, {"worker0": {"worker1": {"cuda:0": "cuda:1"}}}))
    assert any("ASYMMETRIC_MAP" in r.getMessage() for r in caplog.records)


def test_ranks_asking_for_different_backends_or_sharing_a_name_are_refused_on_every_rank() -> None:
    mixed = {**records(TopologyPlan.build(1)), 1: {**records(TopologyPlan.build(["worker1"]))[0], "backend": "X"}}
    with pytest.raises(JobTopologyError, match=r"(?s)different backends.*\{0: 'TENSORPIPE', 1: 'X'\}"):
        gathered_plan(mixed)
    twins = {0: records(TopologyPlan.build(1))[0], 1: records(TopologyPlan.build(1))[0]}
    with pytest.raises(JobTopologyError, match=r"names \['worker0'\] appear more than once"):
        gathered_plan(twins)
