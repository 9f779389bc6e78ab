"""Device-map validation with torch's checks, in torch's order, over plain data.

NOTE [ Check order ]
torch's ``_validate_device_maps`` raises at the first failing check, visiting: for each
worker in ``names`` order, duplicated devices and then invalid device indices (so a bad
device list on a later worker hides a map error on an earlier one); then for each source
worker, unknown target names (static groups only), and for each of its maps in insertion
order: duplicated targets, then unexpected (explicit device list) or invalid-index source
devices, then unexpected or invalid-index target devices (the latter only for a target with
a known count, so a dynamic group's not-yet-joined target is not checked). ``_iter_problems``
walks the same path lazily and yields every failure instead of stopping, so
``validate_device_maps`` (the first problem) and ``check_device_maps`` (all of them) can
never disagree about what torch reports first. Where torch's ``0 <= d.index`` crashes on an
index-less ``cuda``, the same position yields the category's problem with the TypeError kept
as ``torch_message`` (see NOTE [ Device-map messages ]).
"""

from __future__ import annotations

import functools
import types
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence

from inspector.rpc._device_lists import unsortable_list_problem
from inspector.rpc._devices import Device, DeviceLike, is_valid_device
from inspector.rpc._errors import short
from inspector.rpc._problems import (
    INDEXLESS_TYPE_ERROR,
    DeviceMapCategory,
    DeviceMapError,
    DeviceMapProblem,
    make_problem,
    names_of,
    shown,
)
from inspector.rpc._topology import Count, DeviceMap, DeviceMaps, Topology, normalize

C = DeviceMapCategory
_NO_MAPS: Mapping[str, DeviceMap] = types.MappingProxyType({})


@functools.lru_cache(maxsize=256)
def _valid_cuda(count: int) -> frozenset[Device]:
    return frozenset(Device("cuda", index) for index in range(count))


def _all_valid(devices: Collection[Device], count: int) -> bool:
    unique = devices if isinstance(devices, (set, frozenset)) else set(devices)
    return unique <= _valid_cuda(count) or all(is_valid_device(d, count) for d in unique)


def _invalid(devices: Iterable[Device], count: int) -> tuple[list[Device], str | None]:
    """The invalid devices in order, and torch's TypeError when the first of them is index-less cuda."""
    bad = [d for d in devices if not is_valid_device(d, count)]
    crashes = bool(bad) and bad[0].type == "cuda" and bad[0].index is None
    return bad, INDEXLESS_TYPE_ERROR if crashes else None


def _count_hint(worker: str, count: int, bad: list[Device]) -> str:
    if any(d.type == "cuda" and d.index is None for d in bad):
        return "give every cuda device an index (cuda:0, cuda:1, ...); torch cannot check a bare 'cuda'"
    if count == 0:
        return f"{worker} has no CUDA devices: only cpu is valid there"
    if count == 1:
        return f"{worker} has 1 CUDA device: use cpu or cuda:0"
    return f"{worker} has {count} CUDA devices: use cpu or cuda:0 .. cuda:{count - 1}"


def _repeated(values: Iterable[Device]) -> list[Device]:
    """The values that occur more than once, in order of first occurrence (one pass)."""
    return [value for value, times in Counter(values).items() if times > 1]


def _device_list_problems(topo: Topology) -> Iterator[DeviceMapProblem]:
    for node in topo.names:
        devices = topo.devices.get(node, ())
        unique = set(devices)
        if len(unique) != len(devices):
            repeated = _repeated(devices)
            yield make_problem(
                C.DUPLICATED_DEVICES,
                node,
                None,
                [("devices", shown(list(devices)))],
                [("duplicated", names_of(repeated))],
                next_step=f"list each device once in {node}'s devices",
                devices=tuple(repeated),
            )
        count = topo.counts[node]
        if not _all_valid(unique, count):
            bad, type_error = _invalid(devices, count)
            yield make_problem(
                C.INVALID_DEVICE_INDEX,
                node,
                None,
                [("devices", shown(list(devices))), ("device count", count)],
                [("invalid", names_of(bad))],
                next_step=_count_hint(node, count, bad),
                devices=tuple(bad),
                device_count=count,
                torch_type_error=type_error,
            )


def _map_problems(topo: Topology, source: str, target: str, map_: DeviceMap) -> Iterator[DeviceMapProblem]:
    targets = set(map_.values())
    if len(targets) != len(map_):
        repeated = _repeated(map_.values())
        yield make_problem(
            C.DUPLICATED_TARGET,
            source,
            target,
            [("device map", shown(dict(map_)))],
            [("duplicated targets", names_of(repeated))],
            next_step="map each target device from one source only",
            devices=tuple(repeated),
            device_map=dict(map_),
        )
    source_devices = topo.devices.get(source, ())
    if source_devices:
        if not set(map_).issubset(source_devices):
            extra = [d for d in map_ if d not in source_devices]
            yield make_problem(
                C.UNEXPECTED_SOURCE,
                source,
                target,
                [("device map", shown(dict(map_))), ("devices", shown(list(source_devices)))],
                [("unexpected sources", names_of(extra))],
                next_step=f"add them to {source}'s devices or map from the devices it lists",
                devices=tuple(extra),
                device_map=dict(map_),
            )
    elif not _all_valid(map_.keys(), topo.counts[source]):
        count = topo.counts[source]
        bad, type_error = _invalid(map_.keys(), count)
        yield make_problem(
            C.INVALID_SOURCE_INDEX,
            source,
            target,
            [("device map", shown(dict(map_))), ("device count", count)],
            [("invalid sources", names_of(bad))],
            next_step=f"sources are the caller's devices; {_count_hint(source, count, bad)}",
            devices=tuple(bad),
            device_map=dict(map_),
            device_count=count,
            torch_type_error=type_error,
        )
    target_devices = topo.devices.get(target, ())
    if target_devices:
        if not targets.issubset(target_devices):
            extra = [d for d in map_.values() if d not in target_devices]
            yield make_problem(
                C.UNEXPECTED_TARGET,
                source,
                target,
                [("device map", shown(dict(map_))), ("devices", shown(list(target_devices)))],
                [("unexpected targets", names_of(extra))],
                next_step=f"targets must be among the devices {target} lists",
                devices=tuple(extra),
                device_map=dict(map_),
            )
    elif target in topo.counts and not _all_valid(targets, topo.counts[target]):
        count = topo.counts[target]
        bad, type_error = _invalid(map_.values(), count)
        yield make_problem(
            C.INVALID_TARGET_INDEX,
            source,
            target,
            [("device map", shown(dict(map_))), ("device count", count)],
            [("invalid targets", names_of(bad))],
            next_step=f"targets are the callee's devices; {_count_hint(target, count, bad)}",
            devices=tuple(bad),
            device_map=dict(map_),
            device_count=count,
            torch_type_error=type_error,
        )


def _iter_problems(topo: Topology, is_static_group: bool) -> Iterator[DeviceMapProblem]:
    """Every failed check, in torch's order (see NOTE [ Check order ])."""
    yield from _device_list_problems(topo)
    known = set(topo.names)
    for source in topo.names:
        per_target = topo.maps.get(source, _NO_MAPS)
        if is_static_group and not known.issuperset(per_target):
            for unknown in (name for name in per_target if name not in known):
                yield make_problem(
                    C.UNKNOWN_TARGET_NAME,
                    source,
                    unknown,
                    [("device maps", shown(per_target.keys())), ("node names", shown(list(topo.names)))],
                    [("unknown target", short(unknown))],
                    next_step="key maps by the callee's name, or use a dynamic group if it joins later",
                )
        for target, map_ in per_target.items():
            yield from _map_problems(topo, source, target, map_)


def check_topology(topo: Topology, is_static_group: bool = True) -> tuple[DeviceMapProblem, ...]:
    """Every problem of a normalised topology (first torch's, in its order; then unsortable device lists)."""
    problems = list(_iter_problems(topo, is_static_group))
    for name in topo.names:
        problem = unsortable_list_problem(topo.devices.get(name, ()), name)
        if problem is not None:
            problems.append(problem)
    return tuple(problems)


def first_topology_problem(topo: Topology, is_static_group: bool = True) -> DeviceMapProblem | None:
    """The problem torch reports first for a normalised topology, or None where it passes."""
    return next(_iter_problems(topo, is_static_group), None)


def check_device_maps(
    names: Sequence[str],
    device_counts: Mapping[str, Count],
    device_maps: DeviceMaps | None = None,
    devices: Mapping[str, Iterable[DeviceLike]] | None = None,
    is_static_group: bool = True,
) -> tuple[DeviceMapProblem, ...]:
    """Every problem torch's checks would find (first one first), then unsortable explicit device lists.

    Example::

        >>> [p.category.value for p in check_device_maps(["w0", "w1"], {"w0": 1, "w1": 1},
        ...                                               {"w0": {"w1": {"cuda:1": "cuda:0"}}})]
        ['INVALID_SOURCE_INDEX']
    """
    return check_topology(normalize(names, device_counts, device_maps, devices), is_static_group)


def validate_device_maps(
    names: Sequence[str],
    device_counts: Mapping[str, Count],
    device_maps: DeviceMaps | None = None,
    devices: Mapping[str, Iterable[DeviceLike]] | None = None,
    is_static_group: bool = True,
) -> None:
    """Raise ``DeviceMapError`` for the first problem torch's ``_validate_device_maps`` reports.

    Arguments of the wrong shape raise ``TopologyTypeError`` (a ``TypeError``) naming the argument.
    """
    first = first_problem(names, device_counts, device_maps, devices, is_static_group)
    if first is not None:
        raise DeviceMapError(first)


def first_problem(
    names: Sequence[str],
    device_counts: Mapping[str, Count],
    device_maps: DeviceMaps | None = None,
    devices: Mapping[str, Iterable[DeviceLike]] | None = None,
    is_static_group: bool = True,
) -> DeviceMapProblem | None:
    """The problem torch reports first, or None where torch's validation passes."""
    return first_topology_problem(normalize(names, device_counts, device_maps, devices), is_static_group)
