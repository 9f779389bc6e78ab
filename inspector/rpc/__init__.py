"""RPC on ``torch.distributed.rpc``: a backend registry, device-map planning, and local worlds.

The device-map functions are pure (no GPU, no torch needed) and follow torch's own checks, so
a plan predicts what ``init_rpc`` will say; ``LocalWorld`` starts real TensorPipe workers on
127.0.0.1 and measures them. torch's RPC package is imported only by the calls that need it.
"""

from __future__ import annotations

from inspector.rpc._device_lists import create_device_list, create_reverse_mapping
from inspector.rpc._devices import Device, DeviceSpecError, as_device
from inspector.rpc._init import init_rpc
from inspector.rpc._plan import DerivedDevices, PlanError, TopologyPlan, WorkerPlan
from inspector.rpc._prediction import InitError, predict_init_error
from inspector.rpc._preflight import PreflightWarning, WarningKind, preflight_warnings
from inspector.rpc._problems import DeviceMapCategory, DeviceMapError, DeviceMapProblem
from inspector.rpc._records import (
    Bandwidth,
    PairLatency,
    RttMatrix,
    WorkerFailure,
    WorkerSnapshot,
    WorldSnapshot,
)
from inspector.rpc._registry import (
    BackendInfo,
    BackendType,
    BackendValue,
    DuplicateBackendError,
    UnknownBackendOptionError,
    UnknownRpcBackendError,
    backend_registered,
    construct_rpc_backend_options,
    init_backend,
    register_backend,
    registered_backends,
    scoped_backends,
)
from inspector.rpc._topology import MissingDeviceCountError
from inspector.rpc._torch_internals import UnsupportedTorchError
from inspector.rpc._validation import check_device_maps, validate_device_maps
from inspector.rpc._world import LocalWorld, LocalWorldError

__all__ = [
    "BackendInfo",
    "BackendType",
    "BackendValue",
    "Bandwidth",
    "DerivedDevices",
    "Device",
    "DeviceMapCategory",
    "DeviceMapError",
    "DeviceMapProblem",
    "DeviceSpecError",
    "DuplicateBackendError",
    "InitError",
    "LocalWorld",
    "LocalWorldError",
    "MissingDeviceCountError",
    "PairLatency",
    "PlanError",
    "PreflightWarning",
    "RttMatrix",
    "TopologyPlan",
    "UnknownBackendOptionError",
    "UnknownRpcBackendError",
    "UnsupportedTorchError",
    "WarningKind",
    "WorkerFailure",
    "WorkerPlan",
    "WorkerSnapshot",
    "WorldSnapshot",
    "as_device",
    "backend_registered",
    "check_device_maps",
    "construct_rpc_backend_options",
    "create_device_list",
    "create_reverse_mapping",
    "init_backend",
    "init_rpc",
    "predict_init_error",
    "preflight_warnings",
    "register_backend",
    "registered_backends",
    "scoped_backends",
    "validate_device_maps",
]
