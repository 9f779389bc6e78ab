"""RPC on ``torch.distributed.rpc``: a backend registry, device-map planning, local worlds, and a safe ``init_rpc``.

The device-map functions are pure (no GPU, no torch needed) and follow torch's own checks, so
a plan predicts what ``init_rpc`` will say; ``LocalWorld`` starts real TensorPipe workers on
127.0.0.1 and measures them; ``init_rpc`` starts a real multi-node job with every wait
bounded and every rank told why the job did not start; ``gather`` compares what every rank of a
job measured (SDPA backends, loader, environment) on rank 0. Every error is an ``RpcError``.
torch's RPC package is imported only by the calls that need it.
"""

from __future__ import annotations

from inspector.rpc._device_lists import DerivedDevices, create_device_list, create_reverse_mapping
from inspector.rpc._devices import Device, DeviceSpecError, as_device
from inspector.rpc._errors import (
    DeviceCountError,
    GatherFailedError,
    GatherUsageError,
    JobGatherError,
    JobTopologyError,
    JobViewError,
    RankFailedError,
    RendezvousConfigError,
    RpcError,
    RpcJoinError,
    RpcUnavailableError,
    TopologyTypeError,
    WorkerConfigError,
)
from inspector.rpc._gather import gather
from inspector.rpc._init import init_rpc
from inspector.rpc._job_parts import JobEnvironment, JobLoader, JobSdpa
from inspector.rpc._job_state import last_gather
from inspector.rpc._job_view import JobView
from inspector.rpc._plan import PlanError, TopologyPlan, WorkerPlan
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
from inspector.rpc._world import LocalWorld, LocalWorldError, WorldCancelled

__all__ = [
    "BackendInfo",
    "BackendType",
    "BackendValue",
    "Bandwidth",
    "DerivedDevices",
    "Device",
    "DeviceCountError",
    "DeviceMapCategory",
    "DeviceMapError",
    "DeviceMapProblem",
    "DeviceSpecError",
    "DuplicateBackendError",
    "GatherFailedError",
    "GatherUsageError",
    "InitError",
    "JobEnvironment",
    "JobGatherError",
    "JobLoader",
    "JobSdpa",
    "JobTopologyError",
    "JobView",
    "JobViewError",
    "LocalWorld",
    "LocalWorldError",
    "MissingDeviceCountError",
    "PairLatency",
    "PlanError",
    "PreflightWarning",
    "RankFailedError",
    "RendezvousConfigError",
    "RpcError",
    "RpcJoinError",
    "RpcUnavailableError",
    "RttMatrix",
    "TopologyPlan",
    "TopologyTypeError",
    "UnknownBackendOptionError",
    "UnknownRpcBackendError",
    "UnsupportedTorchError",
    "WarningKind",
    "WorkerConfigError",
    "WorkerFailure",
    "WorkerPlan",
    "WorkerSnapshot",
    "WorldCancelled",
    "WorldSnapshot",
    "as_device",
    "backend_registered",
    "check_device_maps",
    "construct_rpc_backend_options",
    "create_device_list",
    "create_reverse_mapping",
    "gather",
    "init_backend",
    "init_rpc",
    "last_gather",
    "predict_init_error",
    "preflight_warnings",
    "register_backend",
    "registered_backends",
    "scoped_backends",
    "validate_device_maps",
]
