"""A ``watch()`` result as a job record: plain, versioned and bounded, for a job-wide comparison.

``inspector.rpc.gather`` sends it from every rank to rank 0 (NOTE [ Job records ] in
``inspector._job_records``): one entry per group of the watch's table (backend, count, dtype,
shapes, causal, dropout, mask, grad, enabled flags, module, device type, GPU capability), the
``MAX_SDPA_GROUPS`` groups with
the most calls; the others are counted (``folded_groups``, ``folded_calls``), never listed.
"""

from __future__ import annotations

from typing import Any

from inspector._job_records import MAX_SDPA_GROUPS, SDPA, SDPA_VERSION, check_record, clip, finite


def _group(g: Any, device: str, capability: str) -> dict[str, Any]:
    """One ``WatchGroup`` (a line of the watch's table) as plain data, with where its calls ran."""
    return {
        "backend": clip(g.backend),
        "count": int(g.count),
        "answered_by": clip(g.answered_by),
        "dtype": clip(g.dtype),
        "shapes": clip(g.shapes),
        "causal": g.causal,
        "dropout_p": finite(g.dropout_p),
        "mask": clip(g.mask),
        "grad": g.grad,
        "enabled": clip(g.enabled),
        "module": clip(g.module),
        "device": clip(device),
        "capability": clip(capability),
    }


def job_record(calls: Any) -> dict[str, Any]:
    """What ``calls`` (a ``WatchedCalls``) saw, as a plain record (most-called groups first, at most
    ``MAX_SDPA_GROUPS``). Typed loosely: ``watch_records`` imports this module, not the other way round."""
    groups = calls.groups_on_devices()  # most calls first
    kept, folded = groups[:MAX_SDPA_GROUPS], groups[MAX_SDPA_GROUPS:]
    record = {
        "kind": SDPA,
        "version": SDPA_VERSION,
        "seen": int(calls.seen),
        "groups": [_group(*g) for g in kept],
        "folded_groups": len(folded),
        "folded_calls": sum(int(g.count) for g, _, _ in folded),
    }
    return check_record(record)
