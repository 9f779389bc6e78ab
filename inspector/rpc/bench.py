"""RPC costs against torch, measured in the same run.

1. Validating a 64-worker x 8-GPU full-mesh plan (every worker maps cuda:i -> cuda:i to every
   other worker: 4,032 maps, 32,256 pairs): ``validate_device_maps`` from the plan's device
   strings (parsing included) against torch's ``_validate_device_maps`` on ready-made
   ``torch.device`` objects. Target: <= 1.0x. Best of several rounds.
2. ``LocalWorld(2)`` from construction until both workers are ready (processes started, torch
   imported, ``init_rpc`` done, every worker's maps gathered) against a bare world: two
   processes started the same way that call ``torch.distributed.rpc.init_rpc`` and report.
   Target: <= 1.2x. Median of interleaved rounds.
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import time
from collections.abc import Callable
from typing import Any

from inspector._bench import Measurement, Progress, best_of
from inspector._child_python import child_command
from inspector._processes import stop_processes
from inspector.rpc._plan import TopologyPlan
from inspector.rpc._validation import validate_device_maps
from inspector.rpc._world import LocalWorld

VALIDATION_ROUNDS = 15
WORLD_ROUNDS = 5

BARE_WORKER = """
import os, sys
import torch
import torch.distributed.rpc as rpc
torch.set_num_threads(1)
rank = int(sys.argv[1])
options = rpc.TensorPipeRpcBackendOptions(num_worker_threads=8, rpc_timeout=30)
if sys.argv[2] == "guarded":
    import inspector.rpc
    print("imported", flush=True)
    inspector.rpc.init_rpc(f"worker{rank}", rank=rank, world_size=2, rpc_backend_options=options, join_timeout=60)
else:
    print("imported", flush=True)
    rpc.init_rpc(f"worker{rank}", rank=rank, world_size=2, rpc_backend_options=options)
print("ready", flush=True)
sys.stdin.readline()
rpc.shutdown()
"""


def best_ms(fn: Callable[[], object], rounds: int) -> float:
    return best_of(fn, rounds) * 1e3


def validation(rounds: int = VALIDATION_ROUNDS) -> dict[str, float]:
    """Milliseconds to validate a 64 x 8 full mesh: torch's validator, ours from strings, ours pre-parsed."""
    import torch
    from torch.distributed.rpc import backend_registry

    plan = TopologyPlan.full_mesh(64, 8)
    names, counts, maps, devices = plan.names, plan.device_counts, plan.device_maps, plan.devices
    torch_maps = {
        s: {t: {torch.device(a): torch.device(b) for a, b in m.items()} for t, m in per.items()}
        for s, per in maps.items()
    }
    torch_devices: dict[str, list[Any]] = {n: [] for n in names}
    return {
        "torch": best_ms(
            lambda: backend_registry._validate_device_maps(names, counts, torch_maps, torch_devices), rounds
        ),
        "ours": best_ms(lambda: validate_device_maps(names, counts, maps, devices), rounds),
        "ours_plan": best_ms(plan.validate, rounds),
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def two_rank_job_seconds(mode: str = "bare") -> float:
    """Seconds from both ranks having imported everything until both are ready (``bare`` or ``guarded``)."""
    env = {
        **os.environ,
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(_free_port()),
        "GLOO_SOCKET_IFNAME": "lo",
        "TP_SOCKET_IFNAME": "lo",
        "OMP_NUM_THREADS": "1",
    }
    procs = [
        subprocess.Popen(
            child_command(BARE_WORKER, str(rank), mode),
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for rank in range(2)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "imported"
        start = time.perf_counter()
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        elapsed = time.perf_counter() - start
        for proc in procs:  # tell both before waiting: the graceful shutdown is a barrier over them
            assert proc.stdin is not None
            proc.stdin.write("stop\n")
            proc.stdin.close()
        for proc in procs:
            proc.wait(timeout=60)
    finally:
        stop_processes(procs, 5.0)  # type: ignore[arg-type]
        for proc in procs:
            if proc.stdout is not None:
                proc.stdout.close()
    return elapsed


def bare_world_seconds() -> float:
    """Two processes calling torch's ``init_rpc``: spawn to both ready."""
    start = time.perf_counter()
    two_rank_job_seconds("bare")
    return time.perf_counter() - start


def local_world_seconds() -> float:
    start = time.perf_counter()
    world = LocalWorld(2)
    elapsed = time.perf_counter() - start
    world.close()
    return elapsed


def worlds(rounds: int = WORLD_ROUNDS, progress: Progress | None = None) -> dict[str, float]:
    """Median seconds until two workers are ready: bare init_rpc processes vs ``LocalWorld(2)``."""
    bare, ours = [], []
    for round_ in range(rounds):
        if progress is not None:
            progress(round_, rounds, f"rpc: two-worker world, round {round_ + 1} of {rounds}")
        # interleaved, one first and then the other, so both see the same machine
        if round_ % 2:
            ours.append(local_world_seconds())
            bare.append(bare_world_seconds())
        else:
            bare.append(bare_world_seconds())
            ours.append(local_world_seconds())
    return {"bare": statistics.median(bare), "ours": statistics.median(ours)}


def jobs(rounds: int = WORLD_ROUNDS) -> dict[str, float]:
    """Median seconds from imported to ready for a two-rank job: torch's ``init_rpc`` vs the guarded one."""
    bare: list[float] = []
    guarded: list[float] = []
    for round_ in range(rounds):
        order = ("guarded", "bare") if round_ % 2 else ("bare", "guarded")
        for mode in order:
            (guarded if mode == "guarded" else bare).append(two_rank_job_seconds(mode))
    return {"bare": statistics.median(bare), "guarded": statistics.median(guarded)}


def measure(progress: Progress | None = None, world_rounds: int = WORLD_ROUNDS) -> list[Measurement]:
    """Every RPC figure with its target."""
    steps = 2 * world_rounds + 1
    if progress is not None:
        progress(0, steps, "rpc: validating a 64 x 8 full mesh")
    v = validation()
    w = worlds(world_rounds, progress=None if progress is None else lambda d, t, m: progress(d + 1, steps, m))
    if progress is not None:
        progress(world_rounds + 1, steps, "rpc: two-rank jobs, torch's init_rpc and the guarded one")
    j = jobs(world_rounds)
    ratio, world_ratio, job_ratio = v["ours"] / v["torch"], w["ours"] / w["bare"], j["guarded"] / j["bare"]
    if progress is not None:
        progress(steps, steps, "rpc: done")
    return [
        Measurement(
            "rpc",
            "validate a 64-worker x 8-GPU full mesh (from device strings)",
            v["ours"],
            "ms",
            "torch _validate_device_maps",
            v["torch"],
            ratio,
            "torch's time",
            "<= 1.0x",
            ratio <= 1.0,
        ),
        Measurement(
            "rpc",
            "validate, plan parsed once (plan.validate())",
            v["ours_plan"],
            "ms",
            "torch _validate_device_maps",
            v["torch"],
            v["ours_plan"] / v["torch"],
            "torch's time",
        ),
        Measurement(
            "rpc",
            f"LocalWorld(2) start-to-ready (median of {world_rounds})",
            w["ours"],
            "s",
            "bare init_rpc processes",
            w["bare"],
            world_ratio,
            "the bare world",
            "<= 1.2x",
            world_ratio <= 1.2,
        ),
        Measurement(
            "rpc",
            f"two-rank job, inspector.rpc.init_rpc (median of {world_rounds})",
            j["guarded"],
            "s",
            "torch's init_rpc, same processes",
            j["bare"],
            job_ratio,
            "torch's start",
            "<= 1.2x",
            job_ratio <= 1.2,
        ),
    ]
