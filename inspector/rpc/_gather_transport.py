"""How a gather reaches the job's other ranks: the job's store, and a gloo group for the bytes.

NOTE [ Gather transport ]
Everything travels through ``torch.distributed``'s own pieces. Which job this process is in, in
order: the default process group (``init_process_group``: DDP with NCCL or gloo, under torchrun
or SLURM), whose store the meeting uses (torch has no public call for it:
``distributed_c10d._get_default_store``, looked up first, and without it the ``env://``
rendezvous the launcher set, as below); else the rendezvous ``inspector.rpc.init_rpc`` met in;
else an ``env://`` rendezvous from ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT``
(a job started by torch's own ``init_rpc``); else no job (one process). The bytes go through a
gloo group, whatever the job's backend: NCCL moves only GPU tensors, and the records are host
data. With a default process group the group is ``new_group(backend="gloo")``; without one,
``init_process_group("gloo")`` on the meeting's prefixed store, destroyed afterwards, so the
process is left as it was found. Either group is made after the meeting (every rank is there,
so its set-up cannot wait for a missing one) with the gather's remaining time as its timeout,
and destroyed after. The records are bytes in uint8 tensors: ``all_gather`` of the sizes, then
``gather`` to rank 0 of ``width`` bytes from each, where ``width`` is the largest size, capped
one past ``MAX_PAYLOAD_BYTES`` (the same on every rank, so the collective's shapes agree and a
rank that claims more is refused, not allocated for), then a barrier, so a rank that dies or
hangs at any point fails every other rank, and each of them can name it (NOTE [ Gather
protocol ]). No ``all_gather_object``: it pickles.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from inspector._job_records import clip
from inspector._messages import Message
from inspector.rpc._errors import (
    GatherFailedError,
    JobGatherError,
    RendezvousConfigError,
    RpcJoinError,
    RpcUnavailableError,
)
from inspector.rpc._gather_meeting import REPORT_S, Meeting
from inspector.rpc._job_payload import MAX_PAYLOAD_BYTES
from inspector.rpc._job_state import remembered_rendezvous
from inspector.rpc._rendezvous import Rendezvous, open_store, resolve_rendezvous
from inspector.rpc._torch_internals import _resolves

DEFAULT_STORE = "torch.distributed.distributed_c10d._get_default_store"
SOURCE_LOCATION = re.compile(r"^\[[^\]]*\.(?:cc|cpp|h|hpp):\d+\]\s*")  # gloo's "[.../pair.cc:553] " prefix
MIN_COLLECTIVE_S = 5.0  # the collective's timeout, at least: the meeting may have used most of the bound


@dataclass
class Job:
    """The job this process is in: its rank and size, the store the ranks meet in, and how the bytes go."""

    rank: int
    world_size: int
    store: Any  # None for one process
    where: str
    default_group: bool  # the job has a default process group (else one is made for the gather)
    how: str


JOB_VARIABLES = ("WORLD_SIZE", "RANK", "MASTER_ADDR", "MASTER_PORT")


def no_job_found(why: str) -> RendezvousConfigError:
    """The error for a process whose environment says "job" where gather finds none to gather over."""
    found = ", ".join(
        f"{name}={os.environ[name][:40]!r}" if os.environ.get(name) else f"{name} unset" for name in JOB_VARIABLES
    )
    message = Message(
        f"gather found job variables ({found}) but no process group in this process and no job started by "
        f"inspector.rpc.init_rpc, and cannot meet the other ranks from the variables alone: {why}",
        next_step="in a torchrun or DDP job, call torch.distributed.init_process_group(...) on every rank before "
        "gather; in an RPC job, start it with inspector.rpc.init_rpc(...); in a single process, unset WORLD_SIZE",
    )
    return RendezvousConfigError(message)


def _env_rendezvous() -> Rendezvous | None:
    world = os.environ.get("WORLD_SIZE", "")
    if not world.strip():
        return None
    if not world.strip().isdigit():
        raise no_job_found(f"WORLD_SIZE must be a whole number, got {world[:40]!r}")
    if int(world) < 2:
        return None
    unset = [name for name in JOB_VARIABLES[1:] if not os.environ.get(name)]
    if unset:
        raise no_job_found(f"{' and '.join(unset)} {'is' if len(unset) == 1 else 'are'} not set")
    try:
        return resolve_rendezvous("env://", -1, int(world))
    except RendezvousConfigError as exc:
        raise no_job_found(str(exc).partition("\n")[0]) from None


def _store_at(rdzv: Rendezvous, started: float, timeout: float) -> Any:
    try:
        return open_store(rdzv, f"rank {rdzv.rank}", started, timeout)
    except RpcJoinError as exc:
        where = f"the rendezvous store at {rdzv.address}"
        raise JobGatherError(
            exc.missing,
            [rdzv.rank],
            timeout,
            where,
            f"note = nothing answered at {rdzv.address}, where the job's store should be",
        ) from None


def job_here(started: float, timeout: float) -> Job:
    """The job this process is part of (NOTE [ Gather transport ]); a one-process ``Job`` outside any."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        rank, world, backend = dist.get_rank(), dist.get_world_size(), str(dist.get_backend())
        how = f"over a gloo group beside the job's {backend} process group"
        if world == 1:
            return Job(0, 1, None, "", True, "one rank")
        if _resolves(DEFAULT_STORE):
            return Job(
                rank, world, dist.distributed_c10d._get_default_store(), "the job's process-group store", True, how
            )
        rdzv = _env_rendezvous()
        if rdzv is None:
            message = Message(
                f"gather cannot find this job's store: this torch ({dist.__name__}) lacks {DEFAULT_STORE}, and "
                "MASTER_ADDR/MASTER_PORT/WORLD_SIZE are not set.",
                next_step="start the job with an env:// rendezvous (torchrun does), or use torch 2.13",
            )
            raise RpcUnavailableError(message)
        return Job(rank, world, _store_at(rdzv, started, timeout), f"the rendezvous store at {rdzv.address}", True, how)
    rdzv = remembered_rendezvous() or _env_rendezvous()
    if rdzv is None:
        return Job(0, 1, None, "", False, "one process, not in a job")
    if not dist.is_available():
        step = "install a torch build with distributed support (the default wheels have it)"
        raise RpcUnavailableError(Message("This torch was built without torch.distributed.", next_step=step))
    where = f"the rendezvous store at {rdzv.address}"
    return Job(
        rdzv.rank,
        rdzv.world_size,
        _store_at(rdzv, started, timeout),
        where,
        False,
        f"over a gloo group on the job's rendezvous store at {rdzv.address}",
    )


def _group(job: Job, prefixed_store: Any, seconds: float) -> Any:
    """A gloo group of every rank (NOTE [ Gather transport ]); ``None`` means the default group made here."""
    import torch.distributed as dist

    timeout = timedelta(seconds=max(MIN_COLLECTIVE_S, seconds))
    if job.default_group:
        return dist.new_group(backend="gloo", timeout=timeout)
    dist.init_process_group(
        "gloo",
        store=dist.PrefixStore("group/", prefixed_store),
        rank=job.rank,
        world_size=job.world_size,
        timeout=timeout,
    )
    return None


def exchange(job: Job, meeting: Meeting, payload: bytes, seconds: float) -> list[tuple[int, bytes]] | None:
    """Every rank's payload on rank 0 as (claimed size, bytes received); ``None`` on the other ranks.

    Raises ``GatherFailedError`` naming the ranks that are gone when the collective fails (a rank
    died or hung after the meeting). It ends with a barrier, so a rank that dies at any point of
    the exchange fails every other rank, not only rank 0, and every rank can say which one it was.
    """
    import torch
    import torch.distributed as dist

    try:
        group = _group(job, meeting.store, seconds)
        try:
            sizes = [torch.zeros(1, dtype=torch.int64) for _ in range(job.world_size)]
            dist.all_gather(sizes, torch.tensor([len(payload)], dtype=torch.int64), group=group)
            claimed = [int(size.item()) for size in sizes]
            width = max(0, min(max(claimed), MAX_PAYLOAD_BYTES + 1))
            mine = torch.zeros(width, dtype=torch.uint8)
            if width:
                mine[: min(len(payload), width)] = torch.frombuffer(bytearray(payload[:width]), dtype=torch.uint8)
            received = [torch.zeros(width, dtype=torch.uint8) for _ in range(job.world_size)] if job.rank == 0 else None
            dist.gather(mine, received, dst=0, group=group)
            dist.barrier(group=group)
        finally:
            dist.destroy_process_group(group)
    except RuntimeError as exc:  # torch's DistError family: a peer's connection closed, a timeout
        raise failed(job, meeting, exc) from exc
    if received is None:
        return None
    return [
        (size, bytes(t[: max(0, min(size, width))].numpy().tobytes()))
        for size, t in zip(claimed, received, strict=True)
    ]


def first_line(exc: BaseException) -> str:
    return str(exc).partition("\n")[0]


def failed(job: Job, meeting: Meeting, exc: BaseException) -> GatherFailedError:
    """The error for a collective that failed after the meeting, naming the ranks that did not report back."""
    gone = meeting.gone_after_failure()
    if gone is None:
        gone, what = [0], f"{job.where} is gone too: rank 0 (or torchrun's agent), which hosts it, died or was killed"
    elif gone:
        what = f"ranks {gone} did not report back within {REPORT_S:g} s after it: they died, hung or were killed"
    else:
        what = "every rank reported back after it, so no rank is missing: a network fault between the ranks"
    step = (
        f"look at the log of {'rank' if len(gone) == 1 else 'ranks'} {', '.join(map(str, gone))} (its exit code, "
        "an out-of-memory kill); restart the job once it is whole"
        if gone
        else "check the network between the ranks (GLOO_SOCKET_IFNAME), then call gather again on every rank"
    )
    message = Message(
        f"gather failed after every rank had come ({clip(SOURCE_LOCATION.sub('', first_line(exc)), 160)}); {what}",
        {"rank": job.rank, "world size": job.world_size, "gone": gone, "met through": job.where},
        next_step=step,
    )
    error = GatherFailedError(message)
    error.gone = tuple(gone)
    return error
