"""Shared-memory storage loader: save payloads synchronously, load them in worker processes.

``FileStorageLoader().save(obj)`` writes one pickle-free storage file and returns a
``FileStorage``; ``loader.load(storage, callback)`` reads it in a worker straight into shared
memory and delivers the rebuilt object (numpy arrays, torch tensors, nested dicts, lists and
tuples, plain Python values) to ``callback`` and to the returned ``Future``.
``inspector.loader.bench`` measures it against the usual alternatives, and
``profile_loader`` measures any iterable, your own ``DataLoader`` included. Every error the
loader raises on purpose is a ``LoaderError``.

The package has three sub-systems: ``storage`` (the file format: layout, checked reading,
encoding, handles), ``pool`` (worker processes, shared memory, the I/O and delivery threads)
and ``bench`` (benchmarks and profiling). Names are served lazily: a worker process imports
``inspector.loader.pool.worker_process``, which needs only the standard library, and must not
pay for numpy or the rest of this package on start-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    "CallbackDeadlockError",
    "CudaUnavailableError",
    "FileStorage",
    "FileStorageLoader",
    "LeafInfo",
    "LoadForkedError",
    "LoadTiming",
    "LoaderCrashedError",
    "LoaderError",
    "LoaderProfile",
    "LoaderShutdownError",
    "LoaderStatus",
    "LoopProfiler",
    "STAGES",
    "STAGE_LABELS",
    "SharedMemoryError",
    "Storage",
    "StorageCorruptError",
    "StorageInfo",
    "StorageLoader",
    "StorageNotFoundError",
    "SweepResult",
    "UnsupportedPayloadError",
    "WorkerDiedError",
    "WorkerSpawnError",
    "WorkerStartError",
    "WorkerStatus",
    "WorkersNotReadyError",
    "describe_storage",
    "loader_statuses",
    "profile_loader",
    "sweep_loader",
]

_HOMES = {
    "CallbackDeadlockError": "_errors",
    "CudaUnavailableError": "_errors",
    "LoadForkedError": "_errors",
    "LoaderCrashedError": "_errors",
    "LoaderError": "_errors",
    "LoaderShutdownError": "_errors",
    "SharedMemoryError": "_errors",
    "StorageCorruptError": "_errors",
    "StorageNotFoundError": "_errors",
    "UnsupportedPayloadError": "_errors",
    "WorkerDiedError": "_errors",
    "WorkerSpawnError": "_errors",
    "WorkerStartError": "_errors",
    "WorkersNotReadyError": "_errors",
    "LeafInfo": "storage.describe",
    "StorageInfo": "storage.describe",
    "describe_storage": "storage.describe",
    "loader_statuses": "_lifecycle",
    "FileStorageLoader": "_loaders",
    "StorageLoader": "_loaders",
    "LoaderProfile": "bench.profile",
    "profile_loader": "bench.profile",
    "LoopProfiler": "bench.loop",
    "SweepResult": "bench.sweep",
    "sweep_loader": "bench.sweep",
    "STAGES": "pool.records",
    "STAGE_LABELS": "pool.records",
    "LoadTiming": "pool.records",
    "LoaderStatus": "pool.records",
    "WorkerStatus": "pool.records",
    "FileStorage": "storage.handles",
    "Storage": "storage.handles",
}

if TYPE_CHECKING:
    from inspector.loader._errors import (
        CallbackDeadlockError,
        CudaUnavailableError,
        LoaderCrashedError,
        LoaderError,
        LoaderShutdownError,
        LoadForkedError,
        SharedMemoryError,
        StorageCorruptError,
        StorageNotFoundError,
        UnsupportedPayloadError,
        WorkerDiedError,
        WorkersNotReadyError,
        WorkerSpawnError,
        WorkerStartError,
    )
    from inspector.loader._lifecycle import loader_statuses
    from inspector.loader._loaders import FileStorageLoader, StorageLoader
    from inspector.loader.bench.loop import LoopProfiler
    from inspector.loader.bench.profile import LoaderProfile, profile_loader
    from inspector.loader.bench.sweep import SweepResult, sweep_loader
    from inspector.loader.pool.records import STAGE_LABELS, STAGES, LoaderStatus, LoadTiming, WorkerStatus
    from inspector.loader.storage.describe import LeafInfo, StorageInfo, describe_storage
    from inspector.loader.storage.handles import FileStorage, Storage


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'inspector.loader' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"inspector.loader.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
