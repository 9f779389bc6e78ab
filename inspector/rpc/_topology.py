"""The gathered view of a group, normalised: names, CUDA counts, device maps and device lists.

Every device-map function takes the same four arguments torch gathers at ``init_rpc``
(``names``, ``device_counts``, ``device_maps``, ``devices``); this module turns what a user
gives (device strings, ``torch.device``, ints, per-type counts, missing entries) into one
plain shape the checks then read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from inspector.rpc._devices import Device, DeviceLike, as_device, as_device_map, cuda_count

Count = int | Mapping[str, int]
DeviceMaps = Mapping[str, Mapping[str, Any]]
"""``{caller: {callee: {source device: target device}}}``; inner maps may also be lists of pairs."""


class MissingDeviceCountError(KeyError):
    """A worker in ``names`` has no entry in ``device_counts``."""

    def __init__(self, worker: str, known: list[str]) -> None:
        self.worker = worker
        self.known = known
        super().__init__(
            f"No device count for worker {worker!r}.\n"
            f"known = {known}\n"
            f"next step = give every worker in names a count (0 for a CPU-only worker)"
        )

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class Topology:
    """Plain data for the checks: ``counts`` are CUDA counts; maps and lists keep their order."""

    names: list[str]
    counts: dict[str, int]
    maps: dict[str, dict[str, dict[Device, Device]]]
    devices: dict[str, list[Device]]


def as_device_list(devices: Iterable[DeviceLike] | None) -> list[Device]:
    return [] if devices is None else [as_device(device) for device in devices]


def normalize(
    names: Sequence[str],
    device_counts: Mapping[str, Count],
    device_maps: DeviceMaps | None = None,
    devices: Mapping[str, Iterable[DeviceLike]] | None = None,
) -> Topology:
    """The ``Topology`` for user-given data; a worker without maps or devices has none."""
    name_list = [str(name) for name in names]
    counts = {name: cuda_count(count) for name, count in device_counts.items()}
    for name in name_list:
        if name not in counts:
            raise MissingDeviceCountError(name, sorted(counts))
    maps = {
        str(source): {str(target): as_device_map(mapping) for target, mapping in per_target.items()}
        for source, per_target in (device_maps or {}).items()
    }
    lists = {str(name): as_device_list(listed) for name, listed in (devices or {}).items()}
    return Topology(name_list, counts, maps, lists)
