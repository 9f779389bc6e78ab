"""Shared-memory storage loader: save payloads synchronously, load them in worker processes.

``FileStorageLoader().save(obj)`` writes one pickle-free storage file and returns a
``FileStorage``; ``loader.load(storage, callback)`` reads it in a worker straight into shared
memory and delivers the rebuilt object (numpy arrays, torch tensors, nested dicts, lists and
tuples, plain Python values) to ``callback`` and to the returned ``Future``.
``inspector.loader.bench`` measures it against the usual alternatives.

Names are served lazily: a spawned worker imports ``inspector.loader._worker``, which needs only
the standard library, and must not pay for numpy or the rest of this package on start-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    "CudaUnavailableError",
    "FileStorage",
    "FileStorageLoader",
    "LeafInfo",
    "LoadTiming",
    "LoaderCrashedError",
    "LoaderShutdownError",
    "LoaderStatus",
    "STAGES",
    "STAGE_LABELS",
    "SharedMemoryError",
    "Storage",
    "StorageCorruptError",
    "StorageInfo",
    "StorageLoader",
    "StorageNotFoundError",
    "UnsupportedPayloadError",
    "WorkerDiedError",
    "WorkerSpawnError",
    "WorkerStartError",
    "WorkerStatus",
    "describe_storage",
    "loader_statuses",
]

_HOMES = {
    "CudaUnavailableError": "_errors",
    "LoaderCrashedError": "_errors",
    "LoaderShutdownError": "_errors",
    "SharedMemoryError": "_errors",
    "StorageCorruptError": "_errors",
    "StorageNotFoundError": "_errors",
    "UnsupportedPayloadError": "_errors",
    "WorkerDiedError": "_errors",
    "WorkerSpawnError": "_errors",
    "WorkerStartError": "_errors",
    "LeafInfo": "_describe",
    "StorageInfo": "_describe",
    "describe_storage": "_describe",
    "loader_statuses": "_lifecycle",
    "FileStorageLoader": "_loader",
    "StorageLoader": "_loader",
    "STAGES": "_records",
    "STAGE_LABELS": "_records",
    "LoadTiming": "_records",
    "LoaderStatus": "_records",
    "WorkerStatus": "_records",
    "FileStorage": "_storage",
    "Storage": "_storage",
}

if TYPE_CHECKING:
    from inspector.loader._describe import LeafInfo, StorageInfo, describe_storage
    from inspector.loader._errors import (
        CudaUnavailableError,
        LoaderCrashedError,
        LoaderShutdownError,
        SharedMemoryError,
        StorageCorruptError,
        StorageNotFoundError,
        UnsupportedPayloadError,
        WorkerDiedError,
        WorkerSpawnError,
        WorkerStartError,
    )
    from inspector.loader._lifecycle import loader_statuses
    from inspector.loader._loader import FileStorageLoader, StorageLoader
    from inspector.loader._records import STAGE_LABELS, STAGES, LoaderStatus, LoadTiming, WorkerStatus
    from inspector.loader._storage import FileStorage, Storage


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'inspector.loader' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"inspector.loader.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
