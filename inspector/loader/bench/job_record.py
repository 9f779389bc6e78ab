"""A ``LoaderProfile`` as a job record: its headline figures and verdict, plain and versioned.

``inspector.rpc.gather`` sends it from every rank to rank 0 (NOTE [ Job records ] in
``inspector._job_records``), where the ranks' loaders are compared: the median time per batch
(the wait for data included), the median wait for data per step when a step was timed, the
verdict and the share of time spent waiting. Never the per-batch times themselves.
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Any

from inspector._job_records import LOADER, VERSION, check_record, clip, finite

if TYPE_CHECKING:
    from inspector.loader.bench.profile_record import LoaderProfile


def job_record(profile: LoaderProfile) -> dict[str, Any]:
    """The figures of ``profile`` a job-wide comparison reads (seconds, not milliseconds)."""
    spread = profile.per_batch
    share = profile.data_wait_share
    waits = profile.wait_seconds if profile.has_step else ()
    record = {
        "kind": LOADER,
        "version": VERSION,
        "label": clip(profile.label or profile.name),
        "batches": int(profile.batches),
        "first_batch_s": finite(profile.first_batch_s),
        "batch_s_median": finite(spread.median) if spread else None,
        "batch_s_min": finite(spread.min) if spread else None,
        "batch_s_max": finite(spread.max) if spread else None,
        "wait_s_median": finite(statistics.median(waits)) if waits else None,
        "data_wait_share": finite(share.value) if share else None,
        "batches_per_s": finite(profile.batches_per_s),
        "mb_per_s": finite(profile.mb_per_s),
        "verdict": profile.verdict,
        "busy_machine": bool(profile.machine.busy),
    }
    return check_record(record)
