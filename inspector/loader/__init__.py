"""Shared-memory storage loader: save payloads synchronously, load them in worker processes.

``FileStorageLoader().save(obj)`` writes one pickle-free storage file and returns a
``FileStorage``; ``loader.load(storage, callback)`` reads it in a worker straight into shared
memory and delivers the rebuilt object (numpy arrays, torch tensors, nested dicts, lists and
tuples, plain Python values) to ``callback`` and to the returned ``Future``.
``inspector.loader.bench`` measures it against the usual alternatives.
"""

from __future__ import annotations

from inspector.loader._errors import (
    CudaUnavailableError,
    LoaderShutdownError,
    SharedMemoryError,
    StorageCorruptError,
    StorageNotFoundError,
    UnsupportedPayloadError,
    WorkerDiedError,
    WorkerStartError,
)
from inspector.loader._lifecycle import loader_statuses
from inspector.loader._loader import FileStorageLoader, StorageLoader
from inspector.loader._records import STAGE_LABELS, STAGES, LoaderStatus, LoadTiming, WorkerStatus
from inspector.loader._storage import FileStorage, Storage

__all__ = [
    "CudaUnavailableError",
    "FileStorage",
    "FileStorageLoader",
    "LoadTiming",
    "LoaderShutdownError",
    "LoaderStatus",
    "STAGES",
    "STAGE_LABELS",
    "SharedMemoryError",
    "Storage",
    "StorageCorruptError",
    "StorageLoader",
    "StorageNotFoundError",
    "UnsupportedPayloadError",
    "WorkerDiedError",
    "WorkerStartError",
    "WorkerStatus",
    "loader_statuses",
]
