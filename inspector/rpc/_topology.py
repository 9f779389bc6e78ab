"""The gathered view of a group, normalised once: names, CUDA counts, device maps and device lists.

Every device-map function takes the same four arguments torch gathers at ``init_rpc``
(``names``, ``device_counts``, ``device_maps``, ``devices``); ``normalize`` turns what a user
gives (device strings, ``torch.device``, ints, per-type counts, missing entries) into one
immutable ``Topology`` the checks then read. A ``TopologyPlan`` builds its ``Topology`` once,
so checking, pre-flight warnings, prediction and derivation never parse a device again.
Arguments of the wrong shape raise ``TopologyTypeError`` (a ``TypeError``) naming the argument.
"""

from __future__ import annotations

import types
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from inspector._messages import Message
from inspector.rpc._devices import Device, DeviceLike, as_device, as_device_map, cuda_count
from inspector.rpc._errors import RpcError, TopologyTypeError, short

Count = int | Mapping[str, int]
DeviceMaps = Mapping[str, Mapping[str, Any]]
"""``{caller: {callee: {source device: target device}}}``; inner maps may also be lists of pairs."""

DeviceMap = Mapping[Device, Device]


class MissingDeviceCountError(RpcError, KeyError):
    """A worker in ``names`` has no entry in ``device_counts``."""

    def __init__(self, worker: str, known: list[str]) -> None:
        self.worker = worker
        self.known = known
        step = "give every worker in names a count (0 for a CPU-only worker)"
        super().__init__(Message(f"No device count for worker {short(worker)}.", {"known": known}, next_step=step))

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class Topology:
    """Read-only data for the checks: ``counts`` are CUDA counts; maps and lists keep their order.

    Messages print ``list(...)``/``dict(...)`` of these, which is what torch prints.
    """

    names: tuple[str, ...]
    counts: Mapping[str, int]
    maps: Mapping[str, Mapping[str, DeviceMap]]
    devices: Mapping[str, tuple[Device, ...]]


def _frozen(mapping: dict[Any, Any]) -> Mapping[Any, Any]:
    return types.MappingProxyType(mapping)


def _names(names: object) -> tuple[str, ...]:
    if isinstance(names, (str, bytes)) or not isinstance(names, Iterable):
        raise TopologyTypeError("names", "a list of worker names", names)
    listed = tuple(names)
    if not all(isinstance(name, str) for name in listed):  # torch's names are str; 1 and "1" would merge here
        raise TopologyTypeError("names", "a list of worker names (str)", listed)
    return listed


def _mapping(argument: str, value: object, expected: str) -> Mapping[Any, Any]:
    if not isinstance(value, Mapping):
        raise TopologyTypeError(argument, expected, value)
    return value


def _device_map(argument: str, mapping: object) -> DeviceMap:
    if isinstance(mapping, Mapping):
        return _frozen(as_device_map(mapping))
    if isinstance(mapping, (str, bytes)) or not isinstance(mapping, Iterable):
        raise TopologyTypeError(argument, "a mapping of source device to target device", mapping)
    pairs = list(mapping)
    if not all(isinstance(pair, (tuple, list)) and len(pair) == 2 for pair in pairs):
        raise TopologyTypeError(argument, "a mapping of source device to target device (or a list of pairs)", mapping)
    return _frozen(as_device_map(pairs))


def normalize_maps(device_maps: object) -> dict[str, Mapping[str, DeviceMap]]:
    """``{caller: {callee: {Device: Device}}}`` with each level checked for its shape."""
    if device_maps is None:
        return {}
    outer = _mapping("device_maps", device_maps, "a mapping of caller name to {callee: device map}")
    maps: dict[str, Mapping[str, DeviceMap]] = {}
    for source, per_target in outer.items():
        where = f"device_maps[{short(source)}]"
        inner = _mapping(where, per_target, "a mapping of callee name to device map")
        maps[str(source)] = _frozen(
            {str(target): _device_map(f"{where}[{short(target)}]", mapping) for target, mapping in inner.items()}
        )
    return maps


def as_device_list(devices: Iterable[DeviceLike] | None, argument: str = "devices") -> tuple[Device, ...]:
    if devices is None:
        return ()
    if isinstance(devices, (str, bytes)) or not isinstance(devices, Iterable):
        raise TopologyTypeError(argument, "a list of devices", devices)
    return tuple(as_device(device) for device in devices)


def normalize(
    names: Sequence[str],
    device_counts: Mapping[str, Count],
    device_maps: DeviceMaps | None = None,
    devices: Mapping[str, Iterable[DeviceLike]] | None = None,
) -> Topology:
    """The ``Topology`` for user-given data; a worker without maps or devices has none."""
    name_list = _names(names)
    counts_in = _mapping("device_counts", device_counts, "a mapping of worker name to device count")
    counts = {str(name): cuda_count(count, str(name)) for name, count in counts_in.items()}
    for name in name_list:
        if name not in counts:
            raise MissingDeviceCountError(name, sorted(counts))
    listed_in = {} if devices is None else _mapping("devices", devices, "a mapping of worker name to a device list")
    lists = {str(name): as_device_list(listed, f"devices[{short(name)}]") for name, listed in listed_in.items()}
    return Topology(name_list, _frozen(counts), _frozen(normalize_maps(device_maps)), _frozen(lists))


def from_parsed(
    names: Sequence[str],
    counts: Mapping[str, int],
    maps: Mapping[str, Mapping[str, Mapping[Device, Device]]],
    devices: Mapping[str, Sequence[Device]],
) -> Topology:
    """A ``Topology`` from values already parsed and checked (a plan's own); copies, parses nothing."""
    return Topology(
        tuple(names),
        _frozen(dict(counts)),
        _frozen({s: _frozen({t: _frozen(dict(m)) for t, m in per.items()}) for s, per in maps.items()}),
        _frozen({name: tuple(listed) for name, listed in devices.items()}),
    )
