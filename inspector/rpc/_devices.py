"""Devices as plain values: parse ``"cuda:0"``, ``"cpu"`` or a ``torch.device`` without importing torch.

NOTE [ Device values ]
torch's validator compares ``torch.device`` objects, whose equality, hashing and repr are
done in C. Our ``Device`` is a ``NamedTuple`` so that equality and hashing are C-level tuple
operations too (the planner validates 64 x 64 maps as fast as torch does), and its repr is
torch's (``device(type='cuda', index=0)``), so the evidence lines of our messages are the
very lines torch prints. As in torch, ``cpu`` and ``cpu:0`` are different devices. A device
is parsed from a string with torch's grammar (a known type, then an optional ``:index`` with
no sign or leading zero), from anything with ``.type`` and ``.index`` (a ``torch.device``),
or from an int, which means ``cuda:<int>`` as in torch's documented ``{0: 1}`` form (torch
itself needs an accelerator to build that; the planner does not).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from numbers import Integral
from typing import Any, NamedTuple

from inspector.rpc._errors import DeviceCountError, RpcError, TopologyTypeError, short

# torch 2.13's device types, in the order its parser lists them.
DEVICE_TYPES = (
    "cpu",
    "cuda",
    "ipu",
    "xpu",
    "mkldnn",
    "opengl",
    "opencl",
    "ideep",
    "hip",
    "ve",
    "fpga",
    "maia",
    "xla",
    "lazy",
    "vulkan",
    "mps",
    "meta",
    "hpu",
    "mtia",
    "privateuseone",
)

MAX_INDEX = 127  # torch stores a device index in an int8
MAX_DEVICE_COUNT = MAX_INDEX + 1  # so no count above this can make another device valid
_SPEC = re.compile(r"(?P<type>[a-z]+)(?::(?P<index>0|[1-9][0-9]*))?")


class Device(NamedTuple):
    """A device as torch sees it: a type and an optional index (``cpu`` has none)."""

    type: str
    index: int | None = None  # type: ignore[assignment]  # torch's name; shadows tuple.index on purpose

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"


DeviceLike = str | int | Device | Any
"""A device string (``"cuda:0"``), an int (``cuda:<int>``), a ``Device`` or a ``torch.device``."""

CPU = Device("cpu")


class DeviceSpecError(RpcError, ValueError):
    """A device that torch would not parse; ``.spec`` is what was given."""

    def __init__(self, spec: object, reason: str) -> None:
        self.spec = spec
        self.reason = reason
        super().__init__(
            f"Invalid device {short(spec)}: {reason}\n"
            f"expected = 'type' or 'type:index', e.g. 'cuda:0' or 'cpu'\n"
            f"types = {list(DEVICE_TYPES)}"
        )


@functools.lru_cache(maxsize=4096)
def _parse(spec: str) -> Device:
    match = _SPEC.fullmatch(spec)
    if match is None:
        raise DeviceSpecError(spec, "not of the form type[:index]")
    if match["type"] not in DEVICE_TYPES:
        raise DeviceSpecError(spec, f"unknown device type {match['type']!r}")
    index = None if match["index"] is None else int(match["index"])
    if index is not None and index > MAX_INDEX:
        raise DeviceSpecError(spec, f"index {index} is above {MAX_INDEX}, the largest torch's DeviceIndex holds")
    return Device(match["type"], index)


def as_device(value: DeviceLike) -> Device:
    """The ``Device`` for ``value`` (see NOTE [ Device values ])."""
    if type(value) is Device:
        return value
    if isinstance(value, str):
        return _parse(value)
    if isinstance(value, bool):
        raise DeviceSpecError(value, "a bool is not a device")
    if isinstance(value, int):
        if not 0 <= value <= MAX_INDEX:
            raise DeviceSpecError(value, f"a device index must be within 0 .. {MAX_INDEX}")
        return Device("cuda", value)
    kind, index = getattr(value, "type", None), getattr(value, "index", "missing")
    if isinstance(kind, str) and (index is None or isinstance(index, int)):
        return Device(kind, index)
    raise DeviceSpecError(value, f"cannot make a device from {type(value).__name__}")


def as_device_map(mapping: Mapping[Any, Any] | Iterable[tuple[Any, Any]]) -> dict[Device, Device]:
    """A source -> target device map, in the given order (a later duplicate source wins, as in a dict)."""
    pairs = mapping.items() if isinstance(mapping, Mapping) else mapping
    return {as_device(source): as_device(target) for source, target in pairs}


def _checked_count(count: object, worker: str | None) -> int:
    if isinstance(count, bool) or not isinstance(count, Integral):  # numpy's integers count too
        raise TopologyTypeError(
            "a device count" + (f" (worker {short(worker)})" if worker is not None else ""),
            "an int or a mapping of device type to int",
            count,
        )
    if not 0 <= int(count) <= MAX_DEVICE_COUNT:
        raise DeviceCountError(count, MAX_DEVICE_COUNT, worker)
    return int(count)


def cuda_count(count: int | Mapping[str, int], worker: str | None = None) -> int:
    """The CUDA device count torch compares indices against (a per-type mapping gives its ``cuda``).

    Counts are checked against ``MAX_DEVICE_COUNT``: torch cannot index more devices of a type,
    so a larger count is a mistake (and would make nothing more valid).
    """
    if isinstance(count, Mapping):
        checked = {kind: _checked_count(value, worker) for kind, value in count.items()}
        return checked.get("cuda", 0)
    return _checked_count(count, worker)


def is_valid_device(device: Device, cuda_devices: int) -> bool:
    """torch's per-device rule: any cpu, or a cuda device with an index below the count.

    An index-less ``cuda`` is invalid here; torch crashes with a TypeError on it instead.
    """
    if device.type == "cpu":
        return True
    return device.type == "cuda" and device.index is not None and 0 <= device.index < cuda_devices
