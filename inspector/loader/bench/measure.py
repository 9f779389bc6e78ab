"""``measure``: the loader's headline figures with their targets, the way every part reports them.

A short grid (1 and 16 MiB, both layouts, 2 workers, against every baseline) and the small-load
latency against a pipe round trip, as ``Measurement`` records with PASS or MISS. The full grid
and its options are ``run`` and ``inspector bench loader``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from inspector.loader.bench.latency import small_load_latency
from inspector.loader.bench.targets import latency_target, throughput_targets
from inspector.loader.bench.throughput import run

if TYPE_CHECKING:
    from inspector._bench import Measurement, Progress


def measure(progress: Progress | None = None) -> list[Measurement]:
    """Throughput targets on a short grid, and the small-load latency target."""
    rows = run(
        sizes_mb=(1, 16), workers=(2,), layouts=("steps", "columnar"), repeats=2, progress=progress, keep_history=False
    )
    return [*throughput_targets(rows), latency_target(small_load_latency(count=500, warmup=50, workers=2))]
