"""Real TensorPipe worlds on 127.0.0.1: start, gather, measure, shut down, and fail in bounded time."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import psutil
import pytest
from waiting import WAIT_S, wait_until

from inspector.rpc import LocalWorld, LocalWorldError, TopologyPlan, _processes, _world, predict_init_error

pytestmark = pytest.mark.slow


def test_two_workers_gather_maps_measure_rtt_and_bandwidth_and_shut_down_cleanly(new_processes) -> None:
    plan = TopologyPlan.build(2, 0, {"worker0": {"worker1": {"cpu": "cpu"}}, "worker1": {"worker0": {"cpu": "cpu"}}})
    steps: list[tuple[int, int, str]] = []
    with LocalWorld.from_plan(plan, rpc_timeout=20.0, progress=lambda d, t, m: steps.append((d, t, m))) as world:
        pids = [w.pid for w in world.workers]
        assert [w.name for w in world.workers] == ["worker0", "worker1"] and world.start_seconds > 0
        first = world.workers[0]
        assert first.rank == 0 and first.device_count >= 0 and first.init_seconds > 0
        assert first.device_maps == {"worker1": {"cpu": "cpu"}} and first.devices == ()
        assert first.reverse_device_maps == {"worker1": {"cpu": "cpu"}} and first.device_list == ()
        assert steps[-1][:2] == (2, 2)

        rtt = world.measure_rtt(count=20, warmup=2)
        assert rtt.names == ("worker0", "worker1") and len(rtt.pairs) == 4
        pair = rtt.get("worker0", "worker1")
        assert pair is not None and pair.samples == 20 and 0 < pair.median_s <= pair.p90_s
        assert all(value > 0 for row in rtt.median_matrix() for value in row)

        assert pair.min_s <= pair.median_s <= pair.p90_s <= pair.p99_s <= pair.max_s

        steps.clear()
        sent = world.measure_bandwidth(
            repeats=3,
            pairs=[("worker1", "worker0")],
            sizes=[1 << 16, 1 << 20],
            warmup=2,
            progress=lambda d, t, m: steps.append((d, t, m)),
        )
        assert [(b.caller, b.callee, b.nbytes, b.repeats, b.warmup) for b in sent] == [
            ("worker1", "worker0", 1 << 16, 3, 2),
            ("worker1", "worker0", 1 << 20, 3, 2),
        ]
        assert all(b.worst_mib_per_s <= b.mib_per_s <= b.best_mib_per_s for b in sent)
        assert steps[-1] == (2, 2, "worker1 -> worker0, 1 MiB")
        snap = world.snapshot()
        assert snap.rtt is rtt and snap.bandwidth == sent
    assert world.closed and world.exit_codes == {"worker0": 0, "worker1": 0}
    assert not any(psutil.pid_exists(pid) for pid in pids) and new_processes() == []
    with pytest.raises(RuntimeError, match="closed"):
        world.measure_rtt()


def test_a_cuda_map_without_gpus_fails_on_every_rank_with_torchs_error_and_leaves_nothing_behind(new_processes) -> None:
    import torch

    source = f"cuda:{torch.cuda.device_count()}"  # one past the last GPU: invalid on any machine
    plan = TopologyPlan.build(2, torch.cuda.device_count(), {"worker0": {"worker1": {source: "cpu"}}})
    with pytest.raises(LocalWorldError, match="did not start") as caught:
        LocalWorld.from_plan(plan, rpc_timeout=20.0)
    failures = caught.value.failures
    assert [(f.name, f.stage, f.exception) for f in failures] == [
        ("worker0", "init_rpc", "ValueError"),
        ("worker1", "init_rpc", "ValueError"),
    ]
    predicted = predict_init_error(plan)
    assert predicted is not None
    assert all(f.message == predicted.message for f in failures)
    assert failures[0].message.startswith(
        "Node worker0 has source devices with invalid indices in its device map for worker1"
    )
    assert "worker1 = init_rpc: ValueError: Node worker0 has source devices" in str(caught.value)
    assert new_processes() == []


def test_a_rank_failing_before_rendezvous_stops_its_waiting_peers_in_bounded_time(new_processes) -> None:
    plan = TopologyPlan.build(2, 1, devices={"worker1": ["cpu"]})
    with pytest.raises(LocalWorldError) as caught:
        LocalWorld.from_plan(plan, rpc_timeout=20.0)
    by_name = {f.name: f for f in caught.value.failures}
    assert by_name["worker1"].stage == "options"
    assert by_name["worker1"].message == predict_init_error(plan).message  # type: ignore[union-attr]
    assert by_name["worker0"].stage == "waiting" and by_name["worker0"].exception == "TimeoutError"
    assert new_processes() == []


def test_cancelling_a_start_stops_every_worker(new_processes) -> None:
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(LocalWorldError, match="Cancelled") as caught:
        LocalWorld(2, cancel=cancel)
    assert caught.value.cancelled and new_processes() == []


def test_a_custom_backend_starts_a_real_agent_through_our_init_rpc_and_stale_members_still_work(
    tmp_path: Path,
) -> None:
    script = tmp_path / "custom_backend.py"
    script.write_text(
        textwrap.dedent("""
        import os, socket
        s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        os.environ.update(GLOO_SOCKET_IFNAME="lo", TP_SOCKET_IFNAME="lo")
        import torch
        import torch.distributed.rpc as torch_rpc
        from torch.distributed.rpc import backend_registry as torch_registry
        from inspector.rpc import BackendType, construct_rpc_backend_options, init_backend, init_rpc, register_backend

        stale_torch, stale_ours = torch_rpc.BackendType.TENSORPIPE, BackendType.TENSORPIPE
        calls = []
        def construct(timeout, method, **kw):
            calls.append("construct")
            return construct_rpc_backend_options(stale_ours, timeout, method, **kw)
        def init(*args, **kwargs):
            calls.append("init")
            return init_backend(stale_ours, *args, **kwargs)
        torch_registry.register_backend("TORCH_SIDE", construct, init)
        try:
            torch_rpc.init_rpc("worker0", backend=stale_torch, rank=0, world_size=1)
        except TypeError as exc:
            print("torch refuses its stale member:", exc)
        member = register_backend("LOGGING_TP", construct, init)
        options = construct_rpc_backend_options(member, rpc_timeout=20, num_worker_threads=2)
        init_rpc("worker0", member, rank=0, world_size=1, rpc_backend_options=options, join_timeout=60)
        agent = torch_rpc.api._get_current_rpc_agent()
        print("agent:", type(agent).__name__, agent.get_worker_info().name)
        print("rpc_sync:", torch_rpc.rpc_sync("worker0", torch.add, args=(torch.ones(2), 2)).tolist())
        print("calls:", calls)
        torch_rpc.shutdown()
    """)
    )
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "torch refuses its stale member: Argument backend must be a member of BackendType" in out
    assert "agent: TensorPipeAgent worker0" in out and "rpc_sync: [3.0, 3.0]" in out
    assert "calls: ['construct', 'init']" in out


def test_a_command_that_times_out_breaks_the_world_so_its_late_answer_is_never_read_as_another(new_processes) -> None:
    with LocalWorld(2, rpc_timeout=20.0, command_timeout=0.5) as world:
        broke = r"worker0 did not answer 'rtt' within 0\.5 s; this world is now broken"
        with pytest.raises(LocalWorldError, match=broke):
            world.measure_rtt(count=10**8, warmup=0)  # still running when the answer is due
        assert world.broken is not None and "late answer would be read as the next command's" in world.broken
        assert "broken" in repr(world)
        with pytest.raises(LocalWorldError, match="broken and takes no more commands") as refused:
            world.measure_bandwidth(nbytes=1024, repeats=1)
        assert "reason = worker0 did not answer 'rtt' within 0.5 s" in str(refused.value)
        assert "next step = close() it (or leave its with block) and start a new LocalWorld" in str(refused.value)
    assert world.closed and set(world.exit_codes) == {"worker0", "worker1"} and new_processes() == []


def test_a_worker_that_closes_its_pipe_but_keeps_running_is_killed_within_the_bound(
    monkeypatch: pytest.MonkeyPatch, new_processes
) -> None:
    silent = (
        "import os, time; from multiprocessing.connection import Connection; "
        "c = Connection(int(os.environ['INSPECTOR_RPC_FD'])); c.recv(); c.close(); time.sleep(300)"
    )
    monkeypatch.setattr(_processes, "WORKER_CODE", silent)
    with pytest.raises(LocalWorldError, match="did not start") as caught:
        LocalWorld(1)
    (failure,) = caught.value.failures
    assert (failure.name, failure.stage, failure.exception) == ("worker0", "start", "ProcessExit")
    assert failure.message == (
        f"closed its pipe without reporting and was still running after {_processes.KILL_WAIT_S} s; killed"
    )
    assert new_processes() == []


def test_close_from_another_thread_stops_a_measurement_before_its_next_pair_and_shuts_down_gracefully(
    new_processes,
) -> None:
    world = LocalWorld(2, rpc_timeout=20.0)
    closer = threading.Thread(target=world.close)

    def after_each_pair(done: int, _total: int, _message: str) -> None:
        if done == 1:
            closer.start()
            assert world._closing.wait(30)  # close() has begun; it waits for this measurement's lock

    with pytest.raises(LocalWorldError, match="closed") as caught:
        world.measure_rtt(count=5, warmup=1, progress=after_each_pair)
    assert caught.value.cancelled and world.rtt is None
    closer.join(60)
    assert not closer.is_alive() and world.closed
    assert world.exit_codes == {"worker0": 0, "worker1": 0} and new_processes() == []


def test_close_is_bounded_while_another_thread_is_inside_one_long_rpc_batch(
    monkeypatch: pytest.MonkeyPatch, new_processes
) -> None:
    monkeypatch.setattr(_world, "LOCK_WAIT_S", 1.0)
    world = LocalWorld(2, rpc_timeout=20.0)
    errors: list[BaseException] = []

    def measure() -> None:
        try:
            world.measure_rtt(count=10**8, warmup=0)  # one batch far longer than the test
        except LocalWorldError as exc:
            errors.append(exc)

    asked, ask = threading.Event(), world._ask

    def asking(*args: object) -> object:  # called while the measurement holds the world
        asked.set()
        return ask(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(world, "_ask", asking)
    busy = psutil.Process(world.workers[0].pid)
    before = busy.cpu_times().user
    measurer = threading.Thread(target=measure)
    measurer.start()
    assert asked.wait(WAIT_S), "the measurement never sent its batch"
    wait_until(lambda: busy.cpu_times().user >= before + 0.2, what="worker0 running its batch")
    closer = threading.Thread(target=world.close)
    closer.start()
    closer.join(60)
    measurer.join(60)
    assert not closer.is_alive() and not measurer.is_alive() and world.closed
    assert len(errors) == 1 and "closed" in str(errors[0]) and errors[0].cancelled  # type: ignore[attr-defined]
    assert all(code is not None for code in world.exit_codes.values()) and new_processes() == []


@pytest.mark.cuda
def test_a_cuda_map_on_a_gpu_machine_starts_and_derives_the_planned_device_lists(new_processes) -> None:
    import torch

    count = torch.cuda.device_count()
    last = f"cuda:{count - 1}"
    plan = TopologyPlan.build(
        2, count, {"worker0": {"worker1": {"cuda:0": last}}, "worker1": {"worker0": {last: "cuda:0"}}}
    )
    assert predict_init_error(plan) is None
    with LocalWorld.from_plan(plan, rpc_timeout=60.0) as world:
        assert [w.device_count for w in world.workers] == [count, count]
        planned = {d.worker: tuple(str(x) for x in d.device_list) for d in plan.derive()}
        assert {w.name: w.device_list for w in world.workers} == planned
        pair = world.measure_rtt(count=5, warmup=1).get("worker0", "worker1")
        assert pair is not None and pair.median_s > 0
    assert world.exit_codes == {"worker0": 0, "worker1": 0} and new_processes() == []


def test_a_worker_blocked_in_rendezvous_exits_when_its_parent_is_killed(tmp_path: Path) -> None:
    # worker1 fails while building its options, so worker0 waits in rendezvous (for 30 min, left alone)
    script = tmp_path / "parent.py"
    script.write_text(
        textwrap.dedent("""
        import os, signal, sys, threading
        import psutil
        sys.path.insert(0, TESTS_DIR)  # for waiting.wait_until
        from waiting import wait_until
        from inspector.rpc import LocalWorld

        def worker1_failed():
            children = psutil.Process().children()
            if len(children) == 2 and any(c.status() == psutil.STATUS_ZOMBIE for c in children):
                return children
            return None

        threading.Thread(target=lambda: LocalWorld(2, devices={"worker1": ["cpu"]}), daemon=True).start()
        try:  # a world that never gets there fails the test, its workers killed, never goes on silently
            children = wait_until(worker1_failed, interval=0.05, what="worker1 to fail, leaving worker0 waiting")
        except TimeoutError:
            for child in psutil.Process().children(recursive=True):
                child.kill()
            raise
        print(" ".join(str(p.pid) for p in children if p.status() != psutil.STATUS_ZOMBIE), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)  # no close(), no atexit: the workers are on their own
    """).replace("TESTS_DIR", repr(str(Path(__file__).parents[1])))
    )
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    workers = [p for p in map(_process, (int(pid) for pid in result.stdout.split())) if p is not None]
    assert result.stdout.split(), result.stderr[-2000:]
    _gone, alive = psutil.wait_procs(workers, timeout=15)
    assert alive == []


def _process(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.NoSuchProcess:
        return None
