"""The live loaders as tables: one row per loader, one per worker, and one per leaf of a storage file."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from inspector.loader import LoaderStatus, StorageInfo


def workers_table(statuses: Sequence[LoaderStatus] | LoaderStatus) -> pd.DataFrame:
    """One row per worker of every loader: alive, busy, requests in flight, segments it has mapped."""
    statuses = [statuses] if isinstance(statuses, LoaderStatus) else list(statuses)
    columns = [
        "loader",
        "worker",
        "pid",
        "alive",
        "ready",
        "busy",
        "in_flight",
        "loads_done",
        "segments_mapped",
        "restarts",
    ]
    records = [
        {
            "loader": s.name,
            "worker": w.index,
            "pid": w.pid,
            "alive": w.alive,
            "ready": w.ready,
            "busy": w.busy,
            "in_flight": w.in_flight,
            "loads_done": w.loads_done,
            "segments_mapped": w.segments_mapped,
            "restarts": w.restarts,
        }
        for s in statuses
        for w in s.workers
    ]
    return pd.DataFrame.from_records(records, columns=columns)


def loaders_table(statuses: Sequence[LoaderStatus] | LoaderStatus) -> pd.DataFrame:
    """One row per loader: running, requests, and the shared-memory segments held (free, in use, leased out)."""
    statuses = [statuses] if isinstance(statuses, LoaderStatus) else list(statuses)
    columns = [
        "loader",
        "running",
        "workers",
        "pending",
        "in_flight",
        "loads_done",
        "loads_failed",
        "segments_free",
        "segments_busy",
        "segments_leased",
        "segment_mib",
    ]
    records: list[Mapping[str, Any]] = [
        {
            "loader": s.name,
            "running": s.running,
            "workers": f"{sum(w.alive for w in s.workers)}/{s.worker_num}",
            "pending": s.pending,
            "in_flight": s.in_flight,
            "loads_done": s.loads_done,
            "loads_failed": s.loads_failed,
            "segments_free": s.segments_free,
            "segments_busy": s.segments_busy,
            "segments_leased": s.segments_leased,
            "segment_mib": round(s.segment_bytes / 2**20, 1),
        }
        for s in statuses
    ]
    return pd.DataFrame.from_records(records, columns=columns)


def leaves_table(info: StorageInfo) -> pd.DataFrame:
    """Every array leaf of a storage file: where it sits in the object and where its bytes sit in the file."""
    columns = ["where", "kind", "dtype", "shape", "offset", "bytes", "requires_grad"]
    records = [
        {
            "where": leaf.where,
            "kind": leaf.kind,
            "dtype": leaf.dtype,
            "shape": leaf.shape,
            "offset": info.data_start + leaf.offset,
            "bytes": leaf.nbytes,
            "requires_grad": leaf.requires_grad,
        }
        for leaf in info.leaves
    ]
    return pd.DataFrame.from_records(records, columns=columns)
