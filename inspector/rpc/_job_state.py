"""What this process knows of the RPC job it is part of: the plan a guarded start gathered, or the
workers a running job reports now. ``TopologyPlan.from_job()`` reads it.

``inspector.rpc.init_rpc`` remembers the plan it gathered and checked (``_job.check_job``); a
job started with torch's own ``init_rpc`` remembered nothing, so its workers are asked over RPC
(torch's ``_get_device_infos``) instead. Nothing here builds a plan: the plan module does, from
what this module returns, so the two read bottom-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from inspector._messages import Message
from inspector.rpc._errors import RpcError
from inspector.rpc._torch_internals import require_torch_internals
from inspector.rpc._worker_plan import WorkerPlan

if TYPE_CHECKING:
    from inspector.rpc._job_view import JobView
    from inspector.rpc._plan import TopologyPlan
    from inspector.rpc._rendezvous import Rendezvous

JOB_INTERNALS = (
    "torch.distributed.rpc.api._get_current_rpc_agent",
    "torch.distributed.rpc.api._is_current_rpc_agent_set",
    "torch.distributed.rpc.backend_registry._get_device_infos",
)

_last_plan: list[TopologyPlan] = []  # the plan the last guarded start in this process gathered
_last_rendezvous: list[Rendezvous] = []  # where that start met its peers (gather meets there too)
_last_view: list[JobView] = []  # what the last gather on this rank returned (rank 0)


def remember(plan: TopologyPlan, rendezvous: Rendezvous | None = None) -> None:
    _last_plan[:] = [plan]
    _last_rendezvous[:] = [] if rendezvous is None else [rendezvous]


def remembered_rendezvous() -> Rendezvous | None:
    """Where the last guarded start in this process met its peers, if any."""
    return _last_rendezvous[0] if _last_rendezvous else None


def remember_view(view: JobView) -> None:
    _last_view[:] = [view]


def last_gather() -> JobView | None:
    """The job view the last ``gather`` returned in this process (on rank 0), if any."""
    return _last_view[0] if _last_view else None


def remembered() -> TopologyPlan | None:
    """The plan the last guarded start in this process gathered, if any."""
    return _last_plan[0] if _last_plan else None


def running_workers() -> set[str] | None:
    """The names of the running job's workers, or ``None`` when no RPC agent runs here."""
    import torch.distributed.rpc as rpc

    if not (rpc.is_available() and bool(getattr(rpc, "_is_current_rpc_agent_set", lambda: False)())):
        return None
    return {info.name for info in rpc.api._get_current_rpc_agent().get_worker_infos()}


def gather_live_workers() -> tuple[WorkerPlan, ...]:
    """Every worker of the running job, in rank order, as it reports itself over RPC."""
    import torch.distributed.rpc as rpc
    from torch.distributed.rpc import api, backend_registry

    require_torch_internals(JOB_INTERNALS, "TopologyPlan.from_job")
    infos = sorted(api._get_current_rpc_agent().get_worker_infos(), key=lambda info: info.id)
    workers = []
    for info in infos:
        count, maps, devices = rpc.rpc_sync(info.name, backend_registry._get_device_infos)
        workers.append(WorkerPlan.build(info.name, count, devices, maps))
    return tuple(workers)


def no_job() -> RpcError:
    """The error ``from_job`` raises where no job runs and none was gathered."""
    message = Message(
        "No RPC job in this process: nothing was gathered and no RPC agent is running.",
        next_step="start the job with inspector.rpc.init_rpc(...) (or torch's init_rpc), or plan one with "
        "TopologyPlan.from_options / TopologyPlan.build",
    )
    return RpcError(message)
