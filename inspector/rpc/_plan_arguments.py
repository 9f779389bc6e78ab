"""What ``TopologyPlan``'s constructors accept: an argument of the wrong shape is a ``TopologyTypeError`` naming it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from numbers import Integral
from typing import Any

from inspector.rpc._errors import TopologyTypeError


def check_build_arguments(names: Any, device_count: Any, device_maps: Any, devices: Any, static_group: Any) -> None:
    """``TopologyTypeError`` naming the first argument of ``TopologyPlan.build`` that has the wrong shape."""
    if isinstance(names, bool) or not isinstance(names, (Integral, Sequence)) or isinstance(names, (str, bytes)):
        raise TopologyTypeError("names", "a worker count (int) or a sequence of worker names", names)
    if isinstance(names, Integral) and names < 0:
        raise TopologyTypeError("names", "a worker count of at least 0", names)
    if isinstance(device_count, bool) or not isinstance(device_count, (Integral, Mapping)):
        raise TopologyTypeError(
            "device_count", "a device count (int) for every worker, or a mapping per worker", device_count
        )
    for argument, value, example in (
        ("device_maps", device_maps, "{'worker0': {'worker1': {'cuda:0': 'cuda:1'}}}"),
        ("devices", devices, "{'worker0': ['cuda:0']}"),
    ):
        if value is not None and not isinstance(value, Mapping):
            raise TopologyTypeError(argument, f"a mapping from worker name, such as {example}, or None", value)
    if not isinstance(static_group, bool):
        raise TopologyTypeError("static_group", "True or False", static_group)


def is_backend_options(options: object) -> bool:
    """torch's ``RpcBackendOptions`` (any backend's), or an object that carries ``device_maps`` and ``devices``."""
    if all(hasattr(options, attribute) for attribute in ("device_maps", "devices")):
        return True
    import torch.distributed.rpc as rpc

    return rpc.is_available() and isinstance(options, rpc.RpcBackendOptions)
