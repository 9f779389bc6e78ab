"""A planned RPC topology as a record, and its JSON file format.

NOTE [ Plan format ]
A plan file is one JSON object::

    {"format": "inspector.rpc.plan", "version": 1, "static_group": true,
     "workers": [{"name": "worker0", "device_count": 8, "devices": [],
                  "device_maps": {"worker1": {"cuda:0": "cuda:1"}}}, ...]}

``device_count`` is the worker's CUDA device count, or a per-type object such as
``{"cuda": 8}``; ``devices`` and ``device_maps`` may be left out. JSON objects keep their
order, and order matters (torch reports the first failing map in insertion order), so the
maps are stored as ordered pairs. Devices are written in canonical form (``"cuda:0"``).
A worker's map may not send one source device to two targets: torch's options refuse that
before any check runs, so a plan cannot express it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from inspector.rpc._device_lists import create_device_list, create_reverse_mapping
from inspector.rpc._devices import Device, DeviceSpecError, as_device, cuda_count
from inspector.rpc._preflight import PreflightWarning, preflight_warnings
from inspector.rpc._problems import DeviceMapError, DeviceMapProblem
from inspector.rpc._validation import check_device_maps, validate_device_maps

PLAN_FORMAT = "inspector.rpc.plan"
PLAN_VERSION = 1

Pairs = tuple[tuple[str, str], ...]


class PlanError(ValueError):
    """A plan that cannot be built or read; ``.path`` says where (``workers[1].device_maps``)."""

    def __init__(self, path: str, problem: str, expected: str = "") -> None:
        self.path = path
        self.problem = problem
        lines = [f"Invalid plan at {path}: {problem}"]
        if expected:
            lines.append(f"expected = {expected}")
        super().__init__("\n".join(lines))


def _pairs(path: str, mapping: Mapping[Any, Any] | Iterable[tuple[Any, Any]]) -> Pairs:
    items = list(mapping.items() if isinstance(mapping, Mapping) else mapping)
    seen: dict[Device, Device] = {}
    for source, target in items:
        try:
            src, dst = as_device(source), as_device(target)
        except DeviceSpecError as exc:
            raise PlanError(path, str(exc).partition("\n")[0], "devices such as 'cuda:0' or 'cpu'") from exc
        if src in seen and seen[src] != dst:
            raise PlanError(path, f"{src} is mapped to both {seen[src]} and {dst}", "one target per source")
        seen[src] = dst
    return tuple((str(src), str(dst)) for src, dst in seen.items())


@dataclass(frozen=True)
class WorkerPlan:
    """One worker: its name, CUDA device count, explicit devices and maps (callee -> pairs)."""

    name: str
    device_count: int = 0
    devices: tuple[str, ...] = ()
    device_maps: tuple[tuple[str, Pairs], ...] = ()

    @classmethod
    def build(
        cls,
        name: str,
        device_count: int | Mapping[str, int] = 0,
        devices: Iterable[Any] = (),
        device_maps: Mapping[str, Any] | None = None,
    ) -> WorkerPlan:
        """A worker from friendly values (device strings, ``torch.device``, dicts)."""
        path = f"worker {name!r}"
        try:
            count = cuda_count(device_count)
            listed = tuple(str(as_device(d)) for d in devices)
        except (TypeError, ValueError) as exc:
            raise PlanError(path, str(exc).partition("\n")[0]) from exc
        maps = tuple(
            (str(target), _pairs(f"{path}.device_maps[{target!r}]", mapping))
            for target, mapping in (device_maps or {}).items()
        )
        return cls(str(name), count, listed, maps)

    def maps_dict(self) -> dict[str, dict[str, str]]:
        return {target: dict(pairs) for target, pairs in self.device_maps}


@dataclass(frozen=True)
class DerivedDevices:
    """What a worker derives when the maps pass: reverse maps, its device list, or the problem."""

    worker: str
    reverse_device_maps: dict[str, dict[Device, Device]] = field(default_factory=dict)
    device_list: tuple[Device, ...] = ()
    problem: DeviceMapProblem | None = None


@dataclass(frozen=True)
class TopologyPlan:
    """Workers in rank order and whether the group is static (``world_size`` given)."""

    workers: tuple[WorkerPlan, ...]
    static_group: bool = True

    def __post_init__(self) -> None:
        names = [w.name for w in self.workers]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise PlanError("workers", f"names {repeated} appear more than once", "unique worker names")

    @classmethod
    def build(
        cls,
        names: int | Sequence[str],
        device_count: int | Mapping[str, int] | Mapping[str, int | Mapping[str, int]] = 0,
        device_maps: Mapping[str, Mapping[str, Any]] | None = None,
        devices: Mapping[str, Iterable[Any]] | None = None,
        static_group: bool = True,
    ) -> TopologyPlan:
        """A plan for ``names`` (or ``worker0..worker{n-1}``); one count for all, or one per worker."""
        name_list = [f"worker{i}" for i in range(names)] if isinstance(names, int) else list(names)
        per_worker = isinstance(device_count, Mapping) and any(n in device_count for n in name_list)

        def count_of(name: str) -> Any:
            return device_count.get(name, 0) if per_worker else device_count  # type: ignore[union-attr]

        workers = tuple(
            WorkerPlan.build(n, count_of(n), (devices or {}).get(n, ()), (device_maps or {}).get(n)) for n in name_list
        )
        return cls(workers, static_group)

    @classmethod
    def full_mesh(cls, workers: int, devices_per_worker: int, static_group: bool = True) -> TopologyPlan:
        """Every worker maps ``cuda:i -> cuda:i`` to every other worker (a common data-parallel layout)."""
        names = [f"worker{i}" for i in range(workers)]
        identity = {f"cuda:{i}": f"cuda:{i}" for i in range(devices_per_worker)}
        maps = {src: {dst: identity for dst in names if dst != src} for src in names}
        return cls.build(names, devices_per_worker, maps, static_group=static_group)

    # The four arguments torch gathers, ready for the device-map functions.
    @property
    def names(self) -> list[str]:
        return [w.name for w in self.workers]

    @property
    def device_counts(self) -> dict[str, int]:
        return {w.name: w.device_count for w in self.workers}

    @property
    def device_maps(self) -> dict[str, dict[str, dict[str, str]]]:
        return {w.name: w.maps_dict() for w in self.workers}

    @property
    def devices(self) -> dict[str, list[str]]:
        return {w.name: list(w.devices) for w in self.workers}

    def _args(self) -> tuple[Any, ...]:
        return (self.names, self.device_counts, self.device_maps, self.devices, self.static_group)

    def check(self) -> tuple[DeviceMapProblem, ...]:
        """Every problem, torch's first one first (``check_device_maps``)."""
        return check_device_maps(*self._args())

    def validate(self) -> None:
        """Raise ``DeviceMapError`` where torch's validation would (``validate_device_maps``)."""
        validate_device_maps(*self._args())

    def preflight(self) -> tuple[PreflightWarning, ...]:
        return preflight_warnings(*self._args())

    def derive(self) -> tuple[DerivedDevices, ...]:
        """Each worker's reverse maps and device list, as torch would compute them."""
        maps, derived = self.device_maps, []
        for worker in self.workers:
            reverse = create_reverse_mapping(worker.name, self.names, maps)
            try:
                listed = create_device_list(worker.devices, maps[worker.name], reverse, worker=worker.name)
            except DeviceMapError as exc:
                derived.append(DerivedDevices(worker.name, reverse, (), exc.problem))
            else:
                derived.append(DerivedDevices(worker.name, reverse, tuple(listed)))
        return tuple(derived)

    def cpu_only(self) -> tuple[TopologyPlan, int]:
        """This plan with every map pair that touches a non-cpu device removed, and how many went."""
        dropped, workers = 0, []
        for w in self.workers:
            maps = []
            for target, pairs in w.device_maps:
                kept = tuple(p for p in pairs if all(as_device(d).type == "cpu" for d in p))
                dropped += len(pairs) - len(kept)
                if kept:
                    maps.append((target, kept))
            workers.append(WorkerPlan(w.name, w.device_count, (), tuple(maps)))
        return TopologyPlan(tuple(workers), self.static_group), dropped

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": PLAN_FORMAT,
            "version": PLAN_VERSION,
            "static_group": self.static_group,
            "workers": [
                {"name": w.name, "device_count": w.device_count, "devices": list(w.devices),
                 "device_maps": w.maps_dict()}
                for w in self.workers
            ],
        }  # fmt: skip

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TopologyPlan:
        """Read a plan (see NOTE [ Plan format ]); ``PlanError`` names the offending entry."""
        if not isinstance(data, Mapping):
            raise PlanError("<root>", f"a {type(data).__name__}, not an object", '{"format": ..., "workers": [...]}')
        if data.get("format", PLAN_FORMAT) != PLAN_FORMAT or data.get("version", PLAN_VERSION) != PLAN_VERSION:
            raise PlanError("format", f"{data.get('format')!r} version {data.get('version')!r}",
                            f"{PLAN_FORMAT!r} version {PLAN_VERSION}")  # fmt: skip
        workers = data.get("workers")
        if not isinstance(workers, list):
            raise PlanError("workers", "missing or not a list", "a list of worker objects")
        built = []
        for i, entry in enumerate(workers):
            if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
                raise PlanError(f"workers[{i}]", "not an object with a string 'name'", '{"name": "worker0", ...}')
            unknown = sorted(set(entry) - {"name", "device_count", "devices", "device_maps"})
            if unknown:
                raise PlanError(f"workers[{i}]", f"unknown keys {unknown}", "name, device_count, devices, device_maps")
            maps = entry.get("device_maps") or {}
            if not isinstance(maps, Mapping) or not all(isinstance(m, Mapping) for m in maps.values()):
                raise PlanError(
                    f"workers[{i}].device_maps", "not an object of objects", '{"worker1": {"cuda:0": "cuda:1"}}'
                )
            built.append(
                WorkerPlan.build(entry["name"], entry.get("device_count", 0), entry.get("devices") or (), maps)
            )
        return cls(tuple(built), bool(data.get("static_group", True)))

    @classmethod
    def from_json(cls, text: str) -> TopologyPlan:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PlanError(f"line {exc.lineno} column {exc.colno}", exc.msg, "a JSON object") from exc
        return cls.from_dict(data)
