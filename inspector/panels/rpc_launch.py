"""Launching a real ``LocalWorld`` from the RPC panel: which plan can run here, and the job that runs it.

The job starts the world, measures RTT for every ordered pair and the bandwidth around a ring
of workers, and always closes the world, reporting progress in one count from start to end;
the cancel button is honoured while starting and between the two measurements.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from inspector.panels._background import JobCancelled, Report
from inspector.rpc import LocalWorld, LocalWorldError, TopologyPlan, WorldSnapshot
from inspector.views.rpc import bandwidth_table, rtt_heatmap, rtt_table, workers_table

MAX_LOCAL_WORKERS = 8  # more processes than this would only measure an oversubscribed machine
WorldJob = Callable[[Report, threading.Event], WorldSnapshot]


def launchable(plan: TopologyPlan) -> tuple[TopologyPlan, str]:
    """The part of ``plan`` a local world can run on this machine, and a note on what was left out."""
    import torch

    if len(plan.workers) > MAX_LOCAL_WORKERS:
        raise ValueError(
            f"Launching {len(plan.workers)} local workers would only measure an oversubscribed "
            f"machine.\nlimit = {MAX_LOCAL_WORKERS}\nnext step = lower 'workers' to launch"
        )
    if torch.cuda.device_count() > 0:
        return plan, ""
    plan, dropped = plan.cpu_only()
    return plan, (f"No GPU here: {dropped} non-cpu map pair(s) left out. " if dropped else "")


def world_job(plan: TopologyPlan, samples: int, nbytes: int) -> WorldJob:
    """The background job: start ``plan``'s world, measure it, close it, return its snapshot."""
    names = plan.names
    ring = [(names[i], names[(i + 1) % len(names)]) for i in range(len(names))] if len(names) > 1 else []

    def job(report: Report, cancelled: threading.Event) -> WorldSnapshot:
        n = len(names)
        total = n + n * n + len(ring)
        try:
            world = LocalWorld.from_plan(plan, progress=lambda d, _t, m: report(d, total, m), cancel=cancelled)
        except LocalWorldError as exc:
            if exc.cancelled:
                raise JobCancelled("cancelled while starting") from exc
            raise
        with world:
            world.measure_rtt(samples, progress=lambda d, _t, m: report(n + d, total, f"RTT {m}"))
            if cancelled.is_set():
                raise JobCancelled("cancelled after the RTT measurement")
            report(n + n * n, total, "bandwidth")
            world.measure_bandwidth(nbytes, repeats=3, pairs=ring)
            return world.snapshot()

    return job


def world_objects(snapshot: WorldSnapshot) -> list[Any]:
    """What a finished launch shows: the workers, the RTT heatmap and table, the bandwidth table."""
    shown: list[Any] = [workers_table(snapshot.workers)]
    if snapshot.rtt is not None:
        shown += [rtt_heatmap(snapshot.rtt), rtt_table(snapshot.rtt)]
    if snapshot.bandwidth:
        shown.append(bandwidth_table(snapshot.bandwidth))
    return shown
