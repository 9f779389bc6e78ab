"""The built-in TENSORPIPE backend: real ``TensorPipeRpcBackendOptions`` and torch's own agent start-up.

torch's options handler drops ``device_maps`` and ``devices`` (and any misspelt option)
without a word; this one takes them, and the registry refuses what it does not take. Starting
the agent is torch's ``_tensorpipe_init_backend_handler``, unchanged: it gathers every rank's
maps, validates them, and creates the ``TensorPipeAgent`` (a private name, looked up first: NOTE
[ Pinned torch internals ]). torch is imported only when called.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

DEFAULT_NUM_WORKER_THREADS = 16


def construct_tensorpipe_options(
    rpc_timeout: float,
    init_method: str,
    num_worker_threads: int = DEFAULT_NUM_WORKER_THREADS,
    device_maps: Mapping[str, Mapping[Any, Any]] | None = None,
    devices: Sequence[Any] | None = None,
    _transports: list[Any] | None = None,
    _channels: list[Any] | None = None,
) -> Any:
    """``TensorPipeRpcBackendOptions`` with every option honoured."""
    from torch.distributed.rpc import TensorPipeRpcBackendOptions

    return TensorPipeRpcBackendOptions(
        num_worker_threads=num_worker_threads,
        rpc_timeout=rpc_timeout,
        init_method=init_method,
        device_maps={target: dict(mapping) for target, mapping in (device_maps or {}).items()},
        devices=list(devices or []),
        _transports=_transports,
        _channels=_channels,
    )


def init_tensorpipe_backend(store: Any, name: str, rank: int, world_size: int | None, rpc_backend_options: Any) -> Any:
    """Start a real TensorPipe agent (torch's handler: gather, validate, create, sync)."""
    from torch.distributed.rpc import backend_registry

    from inspector.rpc._torch_internals import TENSORPIPE_INTERNALS, require_torch_internals

    require_torch_internals(TENSORPIPE_INTERNALS, "the TENSORPIPE backend's init handler")
    return backend_registry._tensorpipe_init_backend_handler(store, name, rank, world_size, rpc_backend_options)
