"""Mistakes torch accepts at ``init_rpc`` and that bite later, found before any process starts."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from inspector.rpc._devices import CPU, Device, DeviceLike
from inspector.rpc._topology import Count, DeviceMap, DeviceMaps, Topology, normalize


class WarningKind(str, enum.Enum):
    """What a pre-flight warning is about."""

    SELF_MAP = "SELF_MAP"
    TARGET_NOT_JOINED = "TARGET_NOT_JOINED"
    INDEXED_CPU = "INDEXED_CPU"
    INDEXLESS_CUDA = "INDEXLESS_CUDA"
    NON_CUDA_IN_DEVICE_LIST = "NON_CUDA_IN_DEVICE_LIST"
    CPU_PAIR = "CPU_PAIR"
    ASYMMETRIC_MAP = "ASYMMETRIC_MAP"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class PreflightWarning:
    """One accepted-but-suspicious entry: which worker, which map target, which devices, and why."""

    kind: WarningKind
    worker: str
    target: str | None
    devices: tuple[Device, ...]
    message: str


def _maps_warnings(source: str, target: str, map_: DeviceMap, known: set[str], static: bool) -> list[PreflightWarning]:
    found = []
    if target == source:
        found.append(
            PreflightWarning(
                WarningKind.SELF_MAP,
                source,
                target,
                tuple(map_),
                f"{source} has a device map keyed by its own name. Maps are keyed by the callee: this one "
                f"only applies to calls {source} makes to itself. Key it by the worker it calls instead.",
            )
        )
    if not static and target not in known:
        found.append(
            PreflightWarning(
                WarningKind.TARGET_NOT_JOINED,
                source,
                target,
                (),
                f"{source} maps to {target!r}, which is not in the group yet. A dynamic group checks this map "
                f"only when {target} joins, and a join that fails the check surfaces as a store timeout.",
            )
        )
    pairs = list(map_.items())
    indexed_cpu = tuple(dict.fromkeys(d for pair in pairs for d in pair if d.type == "cpu" and d.index is not None))
    if indexed_cpu:
        found.append(
            PreflightWarning(
                WarningKind.INDEXED_CPU,
                source,
                target,
                indexed_cpu,
                f"{source}'s map for {target} uses {[str(d) for d in indexed_cpu]}: torch treats cpu:0 as "
                "different from cpu, so it is kept in the device list. Write 'cpu'.",
            )
        )
    indexless = tuple(dict.fromkeys(d for pair in pairs for d in pair if d.type == "cuda" and d.index is None))
    if indexless:
        found.append(
            PreflightWarning(
                WarningKind.INDEXLESS_CUDA,
                source,
                target,
                indexless,
                f"{source}'s map for {target} uses 'cuda' without an index: torch's check crashes with a "
                "TypeError on it. Write cuda:0, cuda:1, ...",
            )
        )
    if map_.get(CPU) == CPU:
        found.append(
            PreflightWarning(
                WarningKind.CPU_PAIR,
                source,
                target,
                (CPU,),
                f"{source}'s map for {target} has cpu -> cpu, which torch drops: cpu never enters the device "
                "list, and CPU tensors arrive on the CPU without a map. Remove the pair.",
            )
        )
    return found


def _asymmetric(topo: Topology, source: str, target: str, map_: DeviceMap) -> PreflightWarning | None:
    """A caller sends accelerator tensors to a callee that has no map back for its own calls."""
    if target == source or target not in topo.counts or source in topo.maps.get(target, {}):
        return None
    moved = tuple(dict.fromkeys(d for d in map_ if d.type != "cpu"))
    if not moved:
        return None
    return PreflightWarning(
        WarningKind.ASYMMETRIC_MAP,
        source,
        target,
        moved,
        f"{source} maps {[str(d) for d in moved]} to {target}, but {target} has no device map for {source}: "
        f"replies come back through the reversed map, yet {target}'s own calls to {source} can carry only CPU "
        f"tensors. Give {target} a map for {source} if it calls {source} with GPU tensors.",
    )


def preflight_topology(topo: Topology, is_static_group: bool = True) -> tuple[PreflightWarning, ...]:
    """The pre-flight warnings of a normalised topology (what ``preflight_warnings`` returns)."""
    known = set(topo.names)
    found: list[PreflightWarning] = []
    for name in topo.names:
        listed = topo.devices.get(name, ())
        non_cuda = tuple(dict.fromkeys(d for d in listed if d.type != "cuda"))
        if non_cuda:
            found.append(
                PreflightWarning(
                    WarningKind.NON_CUDA_IN_DEVICE_LIST,
                    name,
                    None,
                    non_cuda,
                    f"{name} lists {[str(d) for d in non_cuda]} in its devices: TensorPipeRpcBackendOptions "
                    "accepts only CUDA devices there, and torch's device-list sort crashes on cpu next to cuda.",
                )
            )
        indexless = tuple(d for d in listed if d.type == "cuda" and d.index is None)
        if indexless:
            found.append(
                PreflightWarning(
                    WarningKind.INDEXLESS_CUDA,
                    name,
                    None,
                    indexless,
                    f"{name} lists 'cuda' without an index in its devices: torch's check crashes with a "
                    "TypeError on it. Write cuda:0, cuda:1, ...",
                )
            )
        for target, map_ in topo.maps.get(name, {}).items():
            found.extend(_maps_warnings(name, target, map_, known, is_static_group))
            asymmetric = _asymmetric(topo, name, target, map_)
            if asymmetric is not None:
                found.append(asymmetric)
    return tuple(found)


def preflight_warnings(
    names: Sequence[str],
    device_counts: Mapping[str, Count],
    device_maps: DeviceMaps | None = None,
    devices: Mapping[str, Iterable[DeviceLike]] | None = None,
    is_static_group: bool = True,
) -> tuple[PreflightWarning, ...]:
    """Entries torch accepts but that are probably mistakes (self-keyed maps, ``cpu:0``, and more)."""
    return preflight_topology(normalize(names, device_counts, device_maps, devices), is_static_group)
