"""What each worker derives once the maps pass: reverse maps and the device list its agent uses.

torch computes both in ``_create_reverse_mapping`` and ``_create_device_list``; these are the
same computations over plain data, so a plan shows every worker's result before any process
starts. One difference is deliberate: torch sorts the device list by index alone, so a list
holding an index-less device next to another device crashes with a ``TypeError``; here that is
a ``DeviceMapError`` (``UNSORTABLE_DEVICE_LIST``) carrying torch's exact TypeError text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from inspector.rpc._devices import CPU, Device, DeviceLike, as_device, as_device_map
from inspector.rpc._problems import (
    DeviceMapCategory,
    DeviceMapError,
    DeviceMapProblem,
    make_problem,
    names_of,
    shown,
)

if TYPE_CHECKING:
    from inspector.rpc._topology import Topology


def _sort_type_error(devices: Sequence[Device]) -> str | None:
    """The TypeError message torch's ``sorted(devices, key=lambda d: d.index)`` raises, if any."""
    try:
        sorted(device.index for device in devices)  # type: ignore[type-var]
    except TypeError as exc:
        return str(exc)
    return None


def unsortable_list_problem(devices: Sequence[Device], worker: str | None) -> DeviceMapProblem | None:
    """A problem when torch could not sort ``devices`` by index (an index-less device among others)."""
    type_error = _sort_type_error(devices)
    if type_error is None:
        return None
    indexless = [d for d in devices if d.index is None]
    return make_problem(
        DeviceMapCategory.UNSORTABLE_DEVICE_LIST,
        worker,
        None,
        [("devices", shown(list(devices)))],
        [("without index", names_of(indexless))],
        next_step="list CUDA devices with an index (torch's set_devices refuses cpu)",
        devices=tuple(indexless),
        torch_type_error=type_error,
    )


def reverse_maps(my_name: str, names: Sequence[str], maps: Mapping[str, Mapping[str, Mapping[Device, Device]]]):
    """``create_reverse_mapping`` over parsed maps (a plan's topology): nothing is parsed again."""
    reverse: dict[str, dict[Device, Device]] = {}
    for node in names:
        per_target = maps.get(node, {})
        if my_name in per_target:
            reverse[node] = {target: source for source, target in per_target[my_name].items()}
    return reverse


def device_list(
    listed: Sequence[Device], mapped: Iterable[Mapping[Device, Device]], worker: str | None = None
) -> list[Device]:
    """``create_device_list`` over parsed devices: ``mapped`` are my maps and the reverse maps."""
    if listed:
        candidates = list(listed)
    else:
        derived: set[Device] = set()
        for mapping in mapped:
            derived.update(mapping)
        derived.discard(CPU)
        candidates = sorted(derived, key=lambda d: (d.index is None, d.index or 0, str(d)))
    problem = unsortable_list_problem(candidates, worker)
    if problem is not None:
        raise DeviceMapError(problem)
    return sorted(candidates, key=lambda d: d.index or 0)


def create_reverse_mapping(
    my_name: str, names: Sequence[str], device_maps: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[Device, Device]]:
    """For each worker whose maps target ``my_name``: that map inverted (an empty map stays, empty)."""
    parsed = {
        node: {my_name: as_device_map(per_target[my_name])}
        for node, per_target in device_maps.items()
        if my_name in per_target
    }
    return reverse_maps(my_name, names, parsed)


def create_device_list(
    my_devices: Iterable[DeviceLike] | None,
    my_device_maps: Mapping[str, Any],
    reverse_device_maps: Mapping[str, Any],
    *,
    worker: str | None = None,
) -> list[Device]:
    """The devices an agent handles: its explicit list, else every mapped local device but ``cpu``.

    Sorted by index as torch sorts them; derived devices with the same index (``cpu:0`` and
    ``cuda:0``), whose order torch leaves to set iteration, come in type order.
    """
    listed = [as_device(device) for device in my_devices or ()]
    mapped = [as_device_map(m) for m in (*my_device_maps.values(), *reverse_device_maps.values())]
    return device_list(listed, mapped, worker)


@dataclass(frozen=True)
class DerivedDevices:
    """What a worker derives when the maps pass: reverse maps, its device list, or the problem."""

    worker: str
    reverse_device_maps: dict[str, dict[Device, Device]] = field(default_factory=dict)
    device_list: tuple[Device, ...] = ()
    problem: DeviceMapProblem | None = None


def derive_topology(topology: Topology) -> tuple[DerivedDevices, ...]:
    """Each worker's reverse maps and device list, as torch would compute them (``TopologyPlan.derive``)."""
    derived = []
    for name in topology.names:
        reverse = reverse_maps(name, topology.names, topology.maps)
        mine = topology.maps.get(name, {})
        try:
            listed = device_list(topology.devices.get(name, ()), (*mine.values(), *reverse.values()), name)
        except DeviceMapError as exc:
            derived.append(DerivedDevices(name, reverse, (), exc.problem))
        else:
            derived.append(DerivedDevices(name, reverse, tuple(listed)))
    return tuple(derived)
