"""One rank of a real multi-node-style RPC job, started as its own process (env rendezvous on 127.0.0.1).

Usage: ``python job_rank.py MODE`` with ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``
set, as torchrun or SLURM would set them on each node. The last line on stdout is one JSON
object: what ``inspector.rpc.init_rpc`` (and what followed) did on this rank.

Modes: ``ok`` (start, call the next rank, gather the job's plan, shut down), ``die`` (exit
before RPC, as a rank whose set-up crashed), ``bad-device`` (ask for a GPU this machine does
not have), ``bad-backend`` (an unregistered backend), ``ghost-map`` (a map to a worker that is
not in the job: a problem only the gathered options show), ``bad-timeout`` (an
``INSPECTOR_RPC_JOIN_TIMEOUT`` that is not a number), ``int-timeout`` (a ``join_timeout`` of
``10**400``, more than a float holds), ``bigger-world`` (a ``world_size`` one larger than the
others'), ``torch-init`` (start with torch's own ``init_rpc``, then gather the job's plan over RPC).
Without ``JOB_JOIN_TIMEOUT`` no
``join_timeout`` is passed, so only ``INSPECTOR_RPC_JOIN_TIMEOUT`` (or the default) bounds the join.
"""

from __future__ import annotations

import json
import os
import sys
import time


def main(mode: str) -> int:
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    given = os.environ.get("JOB_JOIN_TIMEOUT")
    join_timeout = None if given is None else float(given)
    if mode == "die":
        print(json.dumps({"rank": rank, "outcome": "died"}), flush=True)
        return 3

    import torch
    import torch.distributed.rpc as rpc

    import inspector.rpc as irpc

    torch.set_num_threads(1)
    backend: object = None
    options = rpc.TensorPipeRpcBackendOptions(num_worker_threads=4, rpc_timeout=60)
    if mode == "bad-device":
        options = rpc.TensorPipeRpcBackendOptions(num_worker_threads=4, rpc_timeout=60, devices=["cuda:7"])
    elif mode == "bad-backend":
        backend = "NO_SUCH_BACKEND"
    elif mode == "ghost-map":
        options.set_device_map("ghost", {"cpu": "cpu"})
    elif mode == "bad-timeout":
        os.environ["INSPECTOR_RPC_JOIN_TIMEOUT"], join_timeout = "abc", None
    elif mode == "int-timeout":
        join_timeout = 10**400  # type: ignore[assignment]
    elif mode == "bigger-world":
        world_size += 1
    elif mode == "torch-init":
        return torch_init(rank, world_size)
    started = time.monotonic()
    result: dict[str, object] = {"rank": rank}
    try:
        irpc.init_rpc(
            f"worker{rank}",
            backend=backend,
            rank=rank,
            world_size=world_size,
            rpc_backend_options=options,
            join_timeout=join_timeout,
        )
    except Exception as exc:
        result.update(
            outcome="error",
            exception=type(exc).__name__,
            message=str(exc),
            rpc_error=isinstance(exc, irpc.RpcError),
            seconds=time.monotonic() - started,
            missing=getattr(exc, "missing", None),
            address=getattr(exc, "address", None),
            failed_rank=getattr(exc, "rank", None),
            failed_name=getattr(exc, "name", None),
        )
        print(json.dumps(result), flush=True)
        return 1
    peer = f"worker{(rank + 1) % world_size}"
    total = rpc.rpc_sync(peer, torch.add, args=(torch.ones(2), rank))
    plan = irpc.TopologyPlan.from_job()
    result.update(outcome="ok", sum=total.tolist(), plan=plan.to_dict(), seconds=time.monotonic() - started)
    rpc.shutdown()
    print(json.dumps(result), flush=True)
    return 0


def torch_init(rank: int, world_size: int) -> int:
    """A job started by torch's own ``init_rpc``: ``TopologyPlan.from_job`` gathers its plan over RPC."""
    import torch.distributed.rpc as rpc

    import inspector.rpc as irpc

    peer = f"worker{(rank + 1) % world_size}"
    options = rpc.TensorPipeRpcBackendOptions(num_worker_threads=4, rpc_timeout=60, device_maps={peer: {"cpu": "cpu"}})
    rpc.init_rpc(f"worker{rank}", rank=rank, world_size=world_size, rpc_backend_options=options)
    try:
        plan = irpc.TopologyPlan.from_job()
    finally:
        rpc.shutdown()
    print(json.dumps({"rank": rank, "outcome": "ok", "plan": plan.to_dict()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
