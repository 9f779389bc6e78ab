"""A planned RPC topology: workers in rank order, parsed once, and its JSON file format.

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

NOTE [ Parse once ]
A ``TopologyPlan`` parses its workers' devices once, when it is built, into an immutable
``Topology`` (``plan.topology``). ``check``, ``validate``, ``preflight``, ``derive`` and
``predict_init_error`` all read that object; none of them parses a device string or walks
a user's dicts again, so a panel that shows all of them per keystroke pays one parse.
"""

from __future__ import annotations

import html
import json
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral
from typing import Any

from inspector.rpc import _job_state, _templates
from inspector.rpc._device_lists import DerivedDevices, derive_topology
from inspector.rpc._devices import as_device, cuda_count
from inspector.rpc._errors import TopologyTypeError, first_few, short
from inspector.rpc._plan_arguments import check_build_arguments, is_backend_options
from inspector.rpc._plan_file import loads_plan_json, read_plan_text
from inspector.rpc._preflight import PreflightWarning, preflight_topology
from inspector.rpc._problems import DeviceMapError, DeviceMapProblem
from inspector.rpc._topology import Topology, from_parsed
from inspector.rpc._validation import check_topology, first_topology_problem
from inspector.rpc._worker_plan import WORKER_NAME_RULE, PlanError, WorkerPlan, worker_name_problem

__all__ = ["PlanError", "TopologyPlan", "WorkerPlan"]

PLAN_FORMAT = "inspector.rpc.plan"
PLAN_VERSION = 1
WORKER_KEYS = ("name", "device_count", "devices", "device_maps")


def _topology_of(workers: tuple[WorkerPlan, ...]) -> Topology:
    """The parsed form of ``workers`` (canonical strings parse from a cache)."""
    return from_parsed(
        [w.name for w in workers],
        {w.name: cuda_count(w.device_count, w.name) for w in workers},
        {w.name: {t: {as_device(s): as_device(d) for s, d in pairs} for t, pairs in w.device_maps} for w in workers},
        {w.name: [as_device(d) for d in w.devices] for w in workers},
    )


@dataclass(frozen=True)
class TopologyPlan:
    """Workers in rank order and whether the group is static (``world_size`` given).

    Example::

        >>> plan = TopologyPlan.full_mesh(4, 8)       # 4 workers x 8 GPUs, cuda:i -> cuda:i
        >>> plan.check(), plan.preflight()
        ((), ())
    """

    workers: tuple[WorkerPlan, ...]
    static_group: bool = True
    topology: Topology = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        workers = self.workers
        if isinstance(workers, (str, bytes)) or not isinstance(workers, Iterable):
            raise TopologyTypeError("workers", "a sequence of WorkerPlan", workers)
        workers = tuple(workers)
        if not all(isinstance(w, WorkerPlan) for w in workers):
            raise TopologyTypeError("workers", "a sequence of WorkerPlan", workers)
        for index, worker in enumerate(workers):
            refused = worker_name_problem(worker.name)
            if refused is not None:  # torch's WorkerInfo refuses it when the agent starts
                raise PlanError(f"workers[{index}].name", refused, WORKER_NAME_RULE)
        repeated = sorted(name for name, times in Counter(w.name for w in workers).items() if times > 1)
        if repeated:
            raise PlanError("workers", f"names {first_few(repeated)} appear more than once", "unique worker names")
        object.__setattr__(self, "workers", workers)
        object.__setattr__(self, "topology", _topology_of(workers))  # see NOTE [ Parse once ]

    # -- building --------------------------------------------------------------------------------
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
        check_build_arguments(names, device_count, device_maps, devices, static_group)
        name_list = [f"worker{i}" for i in range(int(names))] if isinstance(names, Integral) else list(names)  # type: ignore[arg-type]
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
        names = _templates.worker_names(workers)
        return cls.build(
            names, devices_per_worker, _templates.full_mesh_maps(names, devices_per_worker), static_group=static_group
        )

    @classmethod
    def ring(cls, workers: int, devices_per_worker: int, static_group: bool = True) -> TopologyPlan:
        """Every worker maps ``cuda:i -> cuda:i`` to its two neighbours on a ring."""
        names = _templates.worker_names(workers)
        return cls.build(
            names, devices_per_worker, _templates.ring_maps(names, devices_per_worker), static_group=static_group
        )

    @classmethod
    def parameter_server(cls, trainers: int, devices_per_worker: int, static_group: bool = True) -> TopologyPlan:
        """A server ``ps`` and ``trainer0..``: each trainer maps ``cuda:i -> cuda:i`` to ``ps`` and back."""
        names = _templates.parameter_server_names(trainers)
        return cls.build(
            names,
            devices_per_worker,
            _templates.parameter_server_maps(names, devices_per_worker),
            static_group=static_group,
        )

    @classmethod
    def from_options(
        cls, name_or_rank: str | int, options: Any, device_count: int | Mapping[str, int] | None = None
    ) -> TopologyPlan:
        """A one-worker plan from real ``TensorPipeRpcBackendOptions`` (its ``device_maps`` and ``devices``).

        ``name_or_rank`` is the worker's name, or its rank (named ``worker<rank>``);
        ``device_count`` defaults to this machine's ``torch.cuda.device_count()``. The plan is a
        dynamic group, since the peers its maps name are not in it; ``combine`` joins the
        plans of every rank into the job's static plan (what ``init_rpc`` does after gathering).

        Example::

            >>> opts = torch.distributed.rpc.TensorPipeRpcBackendOptions(device_maps={"worker1": {"cpu": "cpu"}})
            >>> TopologyPlan.from_options(0, opts, device_count=2).workers[0].device_maps
            (('worker1', (('cpu', 'cpu'),)),)
        """
        if isinstance(name_or_rank, bool) or not isinstance(name_or_rank, (str, int)):
            raise TopologyTypeError("name_or_rank", "a worker name (str) or a rank (int)", name_or_rank)
        name = name_or_rank if isinstance(name_or_rank, str) else f"worker{name_or_rank}"
        if not is_backend_options(options):
            raise TopologyTypeError(
                "options",
                "RPC backend options (e.g. TensorPipeRpcBackendOptions, or any object with device_maps and devices)",
                options,
            )
        if device_count is not None and (
            isinstance(device_count, bool) or not isinstance(device_count, (Integral, Mapping))
        ):
            raise TopologyTypeError(
                "device_count", "a device count (int), a mapping of counts per type, or None", device_count
            )
        if device_count is None:
            import torch

            device_count = torch.cuda.device_count()
        maps = getattr(options, "device_maps", None) or {}  # options of a backend without device maps have none
        devices = getattr(options, "devices", None) or ()
        return cls((WorkerPlan.build(name, device_count, devices, maps),), static_group=False)

    @classmethod
    def combine(cls, plans: Iterable[TopologyPlan | WorkerPlan], static_group: bool = True) -> TopologyPlan:
        """One plan of every worker of ``plans``, in order (a job's ranks, each planned on its own)."""
        workers: list[WorkerPlan] = []
        for plan in plans:
            workers.extend(plan.workers if isinstance(plan, TopologyPlan) else (plan,))
        return cls(tuple(workers), static_group)

    @classmethod
    def from_job(cls) -> TopologyPlan:
        """The plan of the RPC job this process is part of (see ``inspector.rpc.init_rpc``).

        Inside a job started with ``inspector.rpc.init_rpc`` this is the plan gathered from every
        rank's options at start-up; in a job started with torch's own ``init_rpc`` it is gathered
        now, over RPC, from every worker. Raises ``RpcError`` when no job is running here.
        """
        names, last = _job_state.running_workers(), _job_state.remembered()
        if names is not None:
            if last is not None and set(last.names) == names:
                return last
            return cls(_job_state.gather_live_workers(), static_group=True)
        if last is not None:
            return last
        raise _job_state.no_job()

    # -- what torch gathers, as plain values ------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return list(self.topology.names)

    @property
    def device_counts(self) -> dict[str, int]:
        return dict(self.topology.counts)

    @property
    def device_maps(self) -> dict[str, dict[str, dict[str, str]]]:
        return {w.name: w.maps_dict() for w in self.workers}

    @property
    def devices(self) -> dict[str, list[str]]:
        return {w.name: list(w.devices) for w in self.workers}

    @property
    def pair_count(self) -> int:
        return sum(w.pair_count for w in self.workers)

    # -- display -------------------------------------------------------------------------------
    def __repr__(self) -> str:
        kind = "static" if self.static_group else "dynamic"
        shown = ", ".join(self.names[:4]) + (", ..." if len(self.workers) > 4 else "")
        return (
            f"<TopologyPlan: {len(self.workers)} workers ({shown}), {self.pair_count} mapped pairs, {kind}; "
            ".check() for problems>"
        )

    def _repr_html_(self) -> str:
        """Each worker's devices and maps, then what init_rpc would say."""
        from inspector._display import html_table
        from inspector.rpc._prediction import predict_init_error

        rows = [
            (
                w.name,
                w.device_count,
                ", ".join(w.devices) or "(derived)",
                "; ".join(f"→ {callee}: {', '.join(f'{a}→{b}' for a, b in pairs)}" for callee, pairs in w.device_maps),
            )
            for w in self.workers[:64]
        ]
        error = predict_init_error(self)
        verdict = "init_rpc would accept this plan" if error is None else f"init_rpc would refuse: {error.text}"
        more = f" (first 64 of {len(self.workers)})" if len(self.workers) > 64 else ""
        return (
            html_table(
                ("worker", "GPUs", "devices", "device maps (caller device → callee device)"),
                rows,
                f"TopologyPlan{more}",
            )
            + f"<pre>{html.escape(verdict)}</pre>"
        )

    # -- checks (all read self.topology: NOTE [ Parse once ]) --------------------------------------
    def check(self) -> tuple[DeviceMapProblem, ...]:
        """Every problem, torch's first one first (``check_device_maps``)."""
        return check_topology(self.topology, self.static_group)

    def validate(self) -> None:
        """Raise ``DeviceMapError`` where torch's validation would (``validate_device_maps``)."""
        first = first_topology_problem(self.topology, self.static_group)
        if first is not None:
            raise DeviceMapError(first)

    def preflight(self) -> tuple[PreflightWarning, ...]:
        """Entries torch accepts that are probably mistakes (``preflight_warnings``)."""
        return preflight_topology(self.topology, self.static_group)

    def derive(self) -> tuple[DerivedDevices, ...]:
        """Each worker's reverse maps and device list, as torch would compute them."""
        return derive_topology(self.topology)

    def cpu_only(self) -> tuple[TopologyPlan, int]:
        """This plan with every map pair that touches a non-cpu device removed, and how many went."""
        dropped, workers = 0, []
        for w in self.workers:
            maps = []
            for target, pairs in w.device_maps:
                kept = tuple(p for p in pairs if all(d.partition(":")[0] == "cpu" for d in p))
                dropped += len(pairs) - len(kept)
                if kept:
                    maps.append((target, kept))
            workers.append(WorkerPlan(w.name, w.device_count, (), tuple(maps)))
        return TopologyPlan(tuple(workers), self.static_group), dropped

    # -- the file format (NOTE [ Plan format ]) ----------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "format": PLAN_FORMAT,
            "version": PLAN_VERSION,
            "static_group": self.static_group,
            "workers": [
                {
                    "name": w.name,
                    "device_count": w.device_count,
                    "devices": list(w.devices),
                    "device_maps": w.maps_dict(),
                }
                for w in self.workers
            ],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TopologyPlan:
        """Read a plan (see NOTE [ Plan format ]); ``PlanError`` names the offending entry."""
        if not isinstance(data, Mapping):
            raise PlanError("<root>", f"a {type(data).__name__}, not an object", '{"format": ..., "workers": [...]}')
        if data.get("format", PLAN_FORMAT) != PLAN_FORMAT or data.get("version", PLAN_VERSION) != PLAN_VERSION:
            raise PlanError(
                "format",
                f"{short(data.get('format'))} version {short(data.get('version'))}",
                f"{PLAN_FORMAT!r} version {PLAN_VERSION}",
            )
        static = data.get("static_group", True)
        if not isinstance(static, bool):
            raise PlanError("static_group", short(static), "true or false")
        workers = data.get("workers")
        if not isinstance(workers, list):
            raise PlanError("workers", "missing or not a list", "a list of worker objects")
        built = []
        for i, entry in enumerate(workers):
            if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
                raise PlanError(f"workers[{i}]", "not an object with a string 'name'", '{"name": "worker0", ...}')
            unknown = sorted(set(entry) - set(WORKER_KEYS))
            if unknown:
                raise PlanError(f"workers[{i}]", f"unknown keys {unknown}", ", ".join(WORKER_KEYS))
            maps = entry.get("device_maps") or {}
            if not isinstance(maps, Mapping) or not all(isinstance(m, Mapping) for m in maps.values()):
                raise PlanError(
                    f"workers[{i}].device_maps", "not an object of objects", '{"worker1": {"cuda:0": "cuda:1"}}'
                )
            built.append(
                WorkerPlan.build(entry["name"], entry.get("device_count", 0), entry.get("devices") or (), maps)
            )
        return cls(tuple(built), static)

    @classmethod
    def from_json(cls, text: str) -> TopologyPlan:
        """Read a plan from JSON text; non-finite numbers and absurd nesting are ``PlanError`` too."""
        return cls.from_dict(loads_plan_json(text))

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> TopologyPlan:
        """Read a plan file: a regular file (never blocks on a FIFO) of bounded size."""
        return cls.from_json(read_plan_text(path))
