"""A running job's topology: the plan gathered from every rank's options, checked together, and remembered.

``inspector.rpc.init_rpc`` gathers each rank's arrival record (name, backend, device count,
devices, maps) and builds the job's plan from them in rank order; every rank builds the same
plan from the same records, so every rank reaches the same verdict and raises the same report.
``remember`` keeps it (``_job_state``), where ``TopologyPlan.from_job()`` finds it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from inspector._messages import Message
from inspector.rpc._errors import JobTopologyError
from inspector.rpc._plan import TopologyPlan
from inspector.rpc._prediction import predict_init_error
from inspector.rpc._worker_plan import PlanError, WorkerPlan

logger = logging.getLogger("inspector.rpc")


def worker_record(worker: WorkerPlan) -> dict[str, Any]:
    """The part of an arrival record that plans the worker (maps as ordered pairs)."""
    return {
        "device_count": worker.device_count,
        "devices": list(worker.devices),
        "device_maps": [[target, [list(pair) for pair in pairs]] for target, pairs in worker.device_maps],
    }


def _refused(
    plan: TopologyPlan | None, text: Message, problems: Any = (), warnings: Any = (), predicted: Any = None
) -> JobTopologyError:
    return JobTopologyError(plan, problems, warnings, predicted, text)


def gathered_plan(arrivals: Mapping[int, Mapping[str, Any]]) -> TopologyPlan:
    """The job's static plan from every rank's arrival record, in rank order; the same on every rank."""
    backends = {rank: record.get("backend") for rank, record in arrivals.items()}
    if len(set(backends.values())) > 1:
        message = Message(
            "The RPC job's ranks asked for different backends (checked on every rank before starting).",
            {"backends": dict(sorted(backends.items()))},
            next_step="start every rank with the same backend",
        )
        raise _refused(None, message)
    try:
        workers = [
            WorkerPlan.build(record["name"], record["device_count"], record["devices"], dict(record["device_maps"]))
            for _rank, record in sorted(arrivals.items())
        ]
        return TopologyPlan(tuple(workers), static_group=True)
    except PlanError as exc:
        names = {rank: record.get("name") for rank, record in sorted(arrivals.items())}
        message = Message(
            f"The RPC job's gathered options cannot form a plan (checked on every rank before starting): {exc}",
            {"names by rank": names},
            next_step="give every rank a distinct worker name",
        )
        raise _refused(None, message) from exc


def check_job(plan: TopologyPlan) -> None:
    """Raise ``JobTopologyError`` (every problem, what torch would raise, the warnings) or log the warnings."""
    problems, warnings, predicted = plan.check(), plan.preflight(), predict_init_error(plan)
    if not problems and predicted is None:
        for warning in warnings:
            logger.warning("RPC job pre-flight warning %s: %s", warning.kind, warning.message)
        return
    facts: list[tuple[str, object]] = []
    if predicted is not None:
        facts.append(("init_rpc would raise", predicted.text.partition(chr(10))[0]))
    for number, problem in enumerate(problems, 1):
        facts.append((f"problem {number}", f"{problem.category}: " + problem.message.replace("\n", "\n    ")))
    facts.extend(("warning", f"{w.kind}: {w.message}") for w in warnings)
    message = Message(
        f"The RPC job's topology would be refused (checked on every rank before torch starts): "
        f"{len(problems)} problem(s) among {len(plan.workers)} workers.",
        facts,
        next_step="fix the options of the workers named above; every rank raised this same report",
    )
    raise _refused(plan, message, problems, warnings, predicted)
