"""RPC costs against torch, measured in the same run.

    python benchmarks/rpc.py

1. Validating a 64-worker x 8-GPU full-mesh plan (every worker maps cuda:i -> cuda:i to every
   other worker: 4,032 maps, 32,256 pairs): ``inspector.rpc.validate_device_maps`` from the
   plan's device strings (parsing included) against torch's ``_validate_device_maps`` on
   ready-made ``torch.device`` objects. Target: <= 1.0x. Best of several rounds.
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
import sys
import time
from collections.abc import Callable

import torch
from torch.distributed.rpc import backend_registry

from inspector.rpc import LocalWorld, TopologyPlan, validate_device_maps
from inspector.rpc._topology import normalize

VALIDATION_ROUNDS = 15
WORLD_ROUNDS = 5

BARE_WORKER = """
import os, sys
import torch
import torch.distributed.rpc as rpc
torch.set_num_threads(1)
rank = int(sys.argv[1])
options = rpc.TensorPipeRpcBackendOptions(num_worker_threads=8, rpc_timeout=30)
rpc.init_rpc(f"worker{rank}", rank=rank, world_size=2, rpc_backend_options=options)
print("ready", flush=True)
sys.stdin.readline()
rpc.shutdown()
"""


def best_ms(fn: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


def validation() -> dict[str, float]:
    plan = TopologyPlan.full_mesh(64, 8)
    names, counts, maps, devices = plan.names, plan.device_counts, plan.device_maps, plan.devices
    torch_maps = {
        s: {t: {torch.device(a): torch.device(b) for a, b in m.items()} for t, m in per.items()}
        for s, per in maps.items()
    }
    torch_devices = {n: [] for n in names}
    topo = normalize(names, counts, maps, devices)
    return {
        "torch": best_ms(
            lambda: backend_registry._validate_device_maps(names, counts, torch_maps, torch_devices), VALIDATION_ROUNDS
        ),
        "ours": best_ms(lambda: validate_device_maps(names, counts, maps, devices), VALIDATION_ROUNDS),
        "ours_normalized": best_ms(
            lambda: validate_device_maps(names, counts, topo.maps, topo.devices), VALIDATION_ROUNDS
        ),
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def bare_world_seconds() -> float:
    env = {
        **os.environ,
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(_free_port()),
        "GLOO_SOCKET_IFNAME": "lo",
        "TP_SOCKET_IFNAME": "lo",
        "OMP_NUM_THREADS": "1",
    }
    start = time.perf_counter()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", BARE_WORKER, str(rank)],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for rank in range(2)
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    elapsed = time.perf_counter() - start
    for proc in procs:  # tell both before waiting: the graceful shutdown is a barrier over them
        assert proc.stdin is not None
        proc.stdin.write("stop\n")
        proc.stdin.close()
    for proc in procs:
        proc.wait(timeout=60)
        assert proc.stdout is not None
        proc.stdout.close()
    return elapsed


def local_world_seconds() -> float:
    start = time.perf_counter()
    world = LocalWorld(2)
    elapsed = time.perf_counter() - start
    world.close()
    return elapsed


def worlds() -> dict[str, float]:
    bare, ours = [], []
    for round_ in range(WORLD_ROUNDS):  # interleaved, first one then the other, so both see the same machine
        if round_ % 2:
            ours.append(local_world_seconds())
            bare.append(bare_world_seconds())
        else:
            bare.append(bare_world_seconds())
            ours.append(local_world_seconds())
    return {"bare": statistics.median(bare), "ours": statistics.median(ours)}


def main() -> int:
    print(f"RPC (torch {torch.__version__}, Python {sys.version.split()[0]})")
    v = validation()
    ratio = v["ours"] / v["torch"]
    rows = [
        (f"validate 64 workers x 8 GPUs full mesh, torch _validate_device_maps: {v['torch']:.1f} ms", "-", True),
        (f"  inspector validate_device_maps from strings: {v['ours']:.1f} ms ({ratio:.2f}x)", "<= 1.0x", ratio <= 1.0),
        (
            f"  inspector, devices already parsed: {v['ours_normalized']:.1f} ms "
            f"({v['ours_normalized'] / v['torch']:.2f}x)",
            "-",
            True,
        ),
    ]
    w = worlds()
    world_ratio = w["ours"] / w["bare"]
    rows += [
        (f"2 workers ready, bare torch init_rpc processes: {w['bare']:.2f} s (median of {WORLD_ROUNDS})", "-", True),
        (f"  LocalWorld(2) start-to-ready: {w['ours']:.2f} s ({world_ratio:.2f}x)", "<= 1.2x", world_ratio <= 1.2),
    ]
    for line, target, ok in rows:
        print(f"  {line:<84} target {target:<8} {'PASS' if ok else 'MISS'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
