"""One rank of a real job that gathers its job view, started as its own process (env rendezvous on 127.0.0.1).

Usage: ``python job_view_rank.py MODE`` with ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``,
``MASTER_PORT`` set, as torchrun or SLURM would set them. The last line on stdout is one JSON
object: what ``inspector.rpc.gather`` returned or raised on this rank.

Modes:

* ``ddp``, ``ddp-math``, ``ddp-slow``: a job the user started (``init_process_group("gloo")``);
  each rank watches five causal SDPA calls and profiles a ``DataLoader``, then gathers. ``-math``
  runs its calls under ``op_backend(torch_sdpa="math")``; ``-slow`` has a dataset that sleeps
  ``SLOW_ITEM_S`` per item. Rank 0 saves the view to ``$JOB_VIEW_OUT``.
* ``split``: a job the user started whose ranks split three ways on three kinds of call:
  ``SPLIT_CALLS`` says which backend each rank runs for each head dim (``flash`` as PyTorch picks,
  ``math`` under ``op_backend``, ``both`` some of each), each rank with its own sequence lengths.
  Every rank gathers twice in a row; rank 0 saves the first view to ``$JOB_VIEW_OUT``.
* ``fault``: a job the user started in which the rank's ``$FAULT`` (if any) goes wrong on purpose,
  as another inspector version, something that is no inspector, or a crash would: ``version``
  sends an envelope of another version, ``oversized`` sends 256 KiB of bytes, ``die-gather`` and
  ``die-sizes`` and ``die-group`` exit the process inside the gather (in its ``gather``, its
  first ``all_gather``, or as it makes its gloo group, right after the ranks met), which has
  ``$GATHER_TIMEOUT`` seconds (default 60); ``hang-gather`` stays stuck in its ``gather`` for
  ``HANG_S``, then exits. Before that, every rank tries
  ``gather(group=<ranks 0 and 1>)``. Rank 0 saves the view (if any) to ``$JOB_VIEW_OUT``.
* ``rpc-fault``: the same faults in a job started by ``inspector.rpc.init_rpc`` (no subgroup).
* ``rpc``, ``rpc-abstain``: a job started by ``inspector.rpc.init_rpc``; every rank gathers once,
  then gathers again with ``$GATHER_TIMEOUT`` except the ``-abstain`` rank, which calls its second
  gather only once rank 0 wrote ``$GAVE_UP`` (after raising), then every rank shuts RPC down.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

SLOW_ITEM_S = 0.02
HANG_S = 40.0  # how long a ``hang-gather`` rank stays stuck: far past the others' bound
WAIT_FOR_MARK_S = 120.0


def _failure(exc: BaseException, started: float) -> dict[str, Any]:
    return {
        "outcome": "error",
        "exception": type(exc).__name__,
        "message": str(exc),
        "missing": getattr(exc, "missing", None),
        "arrived": getattr(exc, "arrived", None),
        "seconds": time.monotonic() - started,
    }


def ddp(rank: int, mode: str) -> dict[str, Any]:
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.utils.data import DataLoader, Dataset

    import inspector.rpc as irpc
    from inspector.dispatch import op_backend, torch_sdpa
    from inspector.loader import profile_loader

    class Items(Dataset):
        def __len__(self) -> int:
            return 64

        def __getitem__(self, index: int) -> torch.Tensor:
            if mode == "ddp-slow":
                time.sleep(SLOW_ITEM_S)
            return torch.full((8,), float(index))

    dist.init_process_group("gloo")
    q = torch.randn(2, 4, 64, 32)
    with torch_sdpa.watch() as calls:
        for _ in range(5):
            if mode == "ddp-math":
                with op_backend(torch_sdpa="math"):
                    F.scaled_dot_product_attention(q, q, q, is_causal=True)
            else:
                F.scaled_dot_product_attention(q, q, q, is_causal=True)
    profile = profile_loader(DataLoader(Items(), batch_size=4), step=lambda batch: batch.sum(), batches=6, warmup=1)
    started = time.monotonic()
    try:
        view = irpc.gather(calls, profile, timeout=120)
    finally:
        dist.destroy_process_group()
    result: dict[str, Any] = {"outcome": "ok", "seconds": time.monotonic() - started, "view": view is not None}
    if view is not None:
        view.save(os.environ["JOB_VIEW_OUT"])
        result.update(findings=view.findings(), kept=irpc.last_gather() is view)
    return result


SPLIT_CALLS = {32: ("flash", "flash", "flash"), 16: ("math", "flash", "flash"), 8: ("flash", "math", "both")}


def split(rank: int) -> dict[str, Any]:
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F

    import inspector.rpc as irpc
    from inspector.dispatch import op_backend, torch_sdpa

    dist.init_process_group("gloo")
    with torch_sdpa.watch() as calls:
        for head_dim, ran in SPLIT_CALLS.items():
            for step, length in enumerate((16 + 8 * rank, 20 + 8 * rank, 30 + 8 * rank)):  # lengths of its batches
                q = torch.randn(2, 4, length, head_dim)
                if ran[rank] == "math" or (ran[rank] == "both" and step == 0):
                    with op_backend(torch_sdpa="math"):
                        F.scaled_dot_product_attention(q, q, q, is_causal=True)
                else:
                    F.scaled_dot_product_attention(q, q, q, is_causal=True)
    try:
        view = irpc.gather(calls, timeout=120)
        again = irpc.gather(calls, timeout=120)  # at once, while rank 0 may still be cleaning up the first
    finally:
        dist.destroy_process_group()
    if view is not None:
        view.save(os.environ["JOB_VIEW_OUT"])
    return {"outcome": "ok", "view": view is not None, "same_again": again == view}


def _break(rank: int, what: str) -> None:
    """Make this rank's gather go wrong as ``$FAULT`` says (see the modes above)."""
    import torch.distributed as dist

    from inspector.rpc import _gather

    if what in ("version", "oversized"):
        made = _gather.encode

        def encode(rank: int, world_size: int, records: list[dict[str, Any]]) -> bytes:
            if what == "oversized":
                return b" " * (256 * 1024)
            return made(rank, world_size, records).replace(b'"version":1,"rank"', b'"version":99,"rank"', 1)

        _gather.encode = encode  # type: ignore[assignment]
    elif what == "hang-gather":  # alive but stuck, as a rank in a deadlock or swapping: it exits much later

        def hang(*args: Any, **kwargs: Any) -> None:
            time.sleep(HANG_S)
            print(json.dumps({"rank": rank, "outcome": "hung"}), flush=True)
            os._exit(4)

        dist.gather = hang
    elif what.startswith("die-"):
        name = {"die-gather": "gather", "die-sizes": "all_gather", "die-group": "new_group"}[what]

        def die(*args: Any, **kwargs: Any) -> None:
            print(json.dumps({"rank": rank, "outcome": "died", "in": name}), flush=True)
            os._exit(3)

        setattr(dist, name, die)


def _faulty_gather(result: dict[str, Any]) -> Any:
    """The gather of a ``fault`` mode: its view, or ``None`` with the error put in ``result``."""
    import inspector.rpc as irpc

    started = time.monotonic()
    try:
        view = irpc.gather(timeout=float(os.environ.get("GATHER_TIMEOUT", "60")))
    except irpc.RpcError as exc:
        result.update(_failure(exc, started), gone=getattr(exc, "gone", None))
        return None
    result.update(outcome="ok", view=view is not None, seconds=time.monotonic() - started)
    return view


def fault(rank: int) -> dict[str, Any]:
    import torch.distributed as dist

    import inspector.rpc as irpc

    dist.init_process_group("gloo")
    subgroup = dist.new_group([0, 1])  # every rank of the job makes it, members or not
    result: dict[str, Any] = {}
    try:
        irpc.gather(group=subgroup, timeout=60)
    except irpc.RpcError as exc:
        result["subgroup"] = _failure(exc, time.monotonic())
    _break(rank, os.environ.get("FAULT", ""))
    try:
        view = _faulty_gather(result)
    finally:
        dist.destroy_process_group()
    if view is not None:
        view.save(os.environ["JOB_VIEW_OUT"])
    return result


def rpc_fault(rank: int, world_size: int) -> dict[str, Any]:
    import torch.distributed.rpc as rpc

    import inspector.rpc as irpc

    options = rpc.TensorPipeRpcBackendOptions(num_worker_threads=4, rpc_timeout=120)
    irpc.init_rpc(f"worker{rank}", rank=rank, world_size=world_size, rpc_backend_options=options, join_timeout=120)
    _break(rank, os.environ.get("FAULT", ""))
    result: dict[str, Any] = {}
    try:
        _faulty_gather(result)
    finally:
        rpc.shutdown(graceful=False)  # a rank is gone: a graceful shutdown would wait for it
    return result


def rpc(rank: int, world_size: int, mode: str) -> dict[str, Any]:
    import torch.distributed.rpc as rpc

    import inspector.rpc as irpc

    options = rpc.TensorPipeRpcBackendOptions(num_worker_threads=4, rpc_timeout=120)
    irpc.init_rpc(f"worker{rank}", rank=rank, world_size=world_size, rpc_backend_options=options, join_timeout=120)
    result: dict[str, Any] = {}
    try:
        first = irpc.gather(timeout=120)
        result["first"] = (
            None if first is None else {"ranks": list(first.ranks), "how": first.how, "findings": first.findings()}
        )
        mark = Path(os.environ["GAVE_UP"])
        if mode == "rpc-abstain":  # this rank is busy elsewhere until the others have given up
            deadline = time.monotonic() + WAIT_FOR_MARK_S
            while not mark.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        started = time.monotonic()
        try:
            irpc.gather(timeout=float(os.environ["GATHER_TIMEOUT"]))
            result["second"] = {"outcome": "ok"}
        except irpc.RpcError as exc:
            result["second"] = _failure(exc, started)
            if rank == 0:
                mark.write_text("gave up")
    finally:
        rpc.shutdown()
    return result


def main(mode: str) -> int:
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    import torch

    torch.set_num_threads(1)
    started = time.monotonic()
    try:
        if mode == "split":
            result = split(rank)
        elif mode == "fault":
            result = fault(rank)
        elif mode == "rpc-fault":
            result = rpc_fault(rank, world_size)
        else:
            result = ddp(rank, mode) if mode.startswith("ddp") else rpc(rank, world_size, mode)
    except Exception as exc:
        result = _failure(exc, started)
    print(json.dumps({"rank": rank, **result}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
