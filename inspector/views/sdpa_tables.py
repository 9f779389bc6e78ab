"""PyTorch's own attention as tables: what a ``watch()`` block saw, and what ``compare`` measured."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from inspector.dispatch.torch_sdpa import SdpaComparison, WatchTable

WATCH_COLUMNS = [
    "backend",
    "calls",
    "module",
    "dtype",
    "shapes",
    "causal",
    "dropout_p",
    "mask",
    "grad",
    "enabled",
    "next step",
    "rejected",
]
COMPARE_COLUMNS = [
    "backend",
    "status",
    "pick",
    "forward ms",
    "forward range",
    "backward ms",
    "runs",
    "memory",
    "abs error",
    "rel error",
    "grad error",
    "reason",
]


def watch_table(table: WatchTable) -> pd.DataFrame:
    """What a ``torch_sdpa.watch()`` block saw, one line per group; ``attrs`` hold the calls seen and kept."""
    frame = pd.DataFrame.from_records(
        [
            {
                "backend": g.backend,
                "calls": g.count,
                "module": g.module,
                "dtype": g.dtype,
                "shapes": g.shapes,
                "causal": g.causal,
                "dropout_p": g.dropout_p,
                "mask": g.mask,
                "grad": g.grad,
                "enabled": g.enabled,
                "next step": g.next_step,
                "rejected": g.rejected,
            }
            for g in table.groups
        ],
        columns=WATCH_COLUMNS,
    )
    frame.attrs.update(seen=table.seen, kept=table.kept, why_nothing=table.why_nothing)
    return frame


def watch_caption(table: WatchTable) -> str:
    """``1,000,000 SDPA call(s) seen, the first 1,000 kept in full``."""
    return f"{table.seen:,} SDPA call(s) seen, the first {table.kept:,} kept in full"


def sdpa_comparison_table(comparison: SdpaComparison) -> pd.DataFrame:
    """Every backend of one call: median times (ms) with the forward's range, memory, errors against math in
    float64, or why it did not run (``comparison.to_frame()`` has every figure as its own column)."""
    records: list[dict[str, Any]] = []
    for run in comparison.runs:
        forward, backward = run.forward, run.backward
        memory = "" if run.memory_bytes is None else f"{run.memory_bytes / 2**20:.3g} MiB {run.memory_kind}"
        records.append(
            {
                "backend": run.backend,
                "status": run.status,
                "pick": run.backend == comparison.pick,
                "forward ms": None if forward is None else forward.median_ms,
                "forward range": "" if forward is None else f"{forward.min_ms:.3g}–{forward.max_ms:.3g}",
                "backward ms": None if backward is None else backward.median_ms,
                "runs": None if forward is None else forward.runs,
                "memory": memory,
                "abs error": run.max_abs_error,
                "rel error": run.max_rel_error,
                "grad error": run.grad_max_abs_error,
                "reason": run.reason,
            }
        )
    frame = pd.DataFrame.from_records(records, columns=COMPARE_COLUMNS)
    frame["runs"] = frame["runs"].astype("Int64")
    frame.attrs.update(call=comparison.call, pick=comparison.pick, summary=comparison.summary())
    return frame
