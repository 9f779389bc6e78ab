"""The loader's benchmarks and profiler: throughput against the usual alternatives, small-load latency, your loader.

``run`` measures throughput by payload size, layout and worker count against the baselines
(synchronous load, a multiprocessing queue, ``torch.utils.data.DataLoader``, a memcpy ceiling);
``small_load_latency`` times one small load against a bare pipe round trip; ``versus_sync`` takes
turns with a synchronous load in rounds of one run; ``profile_loader``
times any iterable, your own ``DataLoader`` included. Every figure follows NOTE [ Numbers a
researcher can trust ] (``stats``), and runs are kept in a history (``history``).
"""

from __future__ import annotations

from inspector.loader.bench.history import (
    history_path,
    keep_run,
    label_run,
    read_history,
    record_run,
    side_by_side,
)
from inspector.loader.bench.history_file import HistoryFileError, KeptRuns
from inspector.loader.bench.latency import LatencyResult, small_load_latency
from inspector.loader.bench.loop import LoopProfiler
from inspector.loader.bench.measure import measure
from inspector.loader.bench.ours import measure_startup, per_leaf_cost_us
from inspector.loader.bench.profile import LoaderProfile, profile_inspector_loader, profile_loader
from inspector.loader.bench.rows import (
    METHOD_LABELS,
    METHODS,
    WORKERLESS,
    BenchCancelled,
    BenchResults,
    BenchRow,
    Startup,
)
from inspector.loader.bench.stats import MachineLoad, Spread, machine_load
from inspector.loader.bench.sweep import SweepCancelled, SweepResult, SweepSetting, sweep_loader
from inspector.loader.bench.throughput import check_sizes, last_run, loads_per_repeat, run
from inspector.loader.bench.versus import VersusSync, versus_sync

__all__ = [
    "BenchCancelled",
    "BenchResults",
    "BenchRow",
    "HistoryFileError",
    "KeptRuns",
    "LatencyResult",
    "LoaderProfile",
    "LoopProfiler",
    "METHODS",
    "METHOD_LABELS",
    "MachineLoad",
    "Spread",
    "Startup",
    "SweepCancelled",
    "SweepResult",
    "SweepSetting",
    "VersusSync",
    "WORKERLESS",
    "check_sizes",
    "history_path",
    "keep_run",
    "label_run",
    "last_run",
    "loads_per_repeat",
    "machine_load",
    "measure",
    "measure_startup",
    "per_leaf_cost_us",
    "profile_inspector_loader",
    "profile_loader",
    "read_history",
    "record_run",
    "run",
    "side_by_side",
    "small_load_latency",
    "sweep_loader",
    "versus_sync",
]
