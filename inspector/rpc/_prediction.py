"""The first error torch's ``init_rpc`` would raise for a plan, verbatim, and which ranks raise it.

NOTE [ What init_rpc raises, and where ]
Each rank builds ``TensorPipeRpcBackendOptions(device_maps=..., devices=...)`` before any
rendezvous; that constructor refuses a map sending two sources to one target and any
non-CUDA device in ``devices``. Such a rank fails alone, and its peers wait in rendezvous
until its timeout. In a static group every rank then gathers all workers' maps and runs the
same validation, so every rank raises the same error naming the worker at fault. In a
dynamic group each worker validates the workers joined so far when it joins, so the first
joiner whose check fails raises, and what its user sees is a store timeout that hides the
``ValueError`` (it survives as ``__context__``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from inspector.rpc._topology import Topology
from inspector.rpc._validation import first_topology_problem

if TYPE_CHECKING:
    from inspector.rpc._plan import TopologyPlan
    from inspector.rpc._problems import DeviceMapProblem


@dataclass(frozen=True)
class InitError:
    """An error ``init_rpc`` raises: at which stage, the worker at fault, the ranks raising it."""

    stage: str
    worker: str | None
    exception: str
    message: str
    raised_by: tuple[str, ...]
    note: str = ""

    @property
    def text(self) -> str:
        """``Type: message`` as Python prints it."""
        return f"{self.exception}: {self.message}"


def _options_error(topo: Topology) -> InitError | None:
    for name in topo.names:
        for map_ in topo.maps.get(name, {}).values():
            reverse: dict[object, object] = {}
            for source, target in map_.items():
                if target in reverse:
                    message = (
                        "`device_map` only supports 1-to-1 mapping, "
                        f"trying to map {source} and {reverse[target]} to {target}"
                    )
                    return _rank_alone(name, message)
                reverse[target] = source
        for listed in topo.devices.get(name, ()):
            if listed.type != "cuda":
                message = f"`set_devices` expect a list of CUDA devices, but got device type {listed.type}."
                return _rank_alone(name, message)
    return None


def _rank_alone(worker: str, message: str) -> InitError:
    return InitError(
        "options",
        worker,
        "ValueError",
        message,
        (worker,),
        f"{worker} fails while building its TensorPipeRpcBackendOptions; the other ranks wait in "
        "rendezvous until its timeout.",
    )


def _from_problem(stage: str, problem: DeviceMapProblem, raised_by: tuple[str, ...], note: str) -> InitError:
    return InitError(stage, problem.worker, problem.torch_exception, problem.torch_message, raised_by, note)


def predict_init_error(plan: TopologyPlan) -> InitError | None:
    """The first error ``init_rpc`` raises for ``plan`` (see NOTE [ What init_rpc raises, and where ]).

    Reads the plan's parsed topology (NOTE [ Parse once ] in ``_plan``); parses nothing.
    """
    topo = plan.topology
    early = _options_error(topo)
    if early is not None:
        return early
    names = topo.names
    if plan.static_group:
        problem = first_topology_problem(topo)
        if problem is not None:
            return _from_problem("validation", problem, tuple(names), "Every rank raises this same error.")
        return None
    failing = _first_failing_join(topo)
    if failing is None:
        return None
    joined, problem = failing
    joiner = names[joined - 1]
    note = (
        f"{joiner} raises it when it joins; its user sees a DistStoreError (store timeout) with this "
        "error as __context__."
    )
    return _from_problem("join", problem, (joiner,), note)


def _joined(topo: Topology, joined: int) -> Topology:
    """What the first ``joined`` workers of a dynamic group see: themselves, not those still to come."""
    group = topo.names[:joined]
    return Topology(
        group,
        {n: topo.counts[n] for n in group},
        {n: topo.maps[n] for n in group if n in topo.maps},
        {n: topo.devices[n] for n in group if n in topo.devices},
    )


def _first_failing_join(topo: Topology) -> tuple[int, DeviceMapProblem] | None:
    """How many workers have joined when a dynamic group's check first fails, and its problem; None if never.

    Joining only adds checks (a worker's own devices and maps, and the target checks of maps
    to it), so "the first ``k`` fail" is monotonic in ``k`` and a bisection finds the first
    failing ``k`` with a logarithmic number of checks, not one per joiner.
    """
    problem = first_topology_problem(topo, is_static_group=False)
    if problem is None:
        return None
    low, high = 1, len(topo.names)  # ``high`` workers fail with ``problem``; find the fewest that do
    while low < high:
        middle = (low + high) // 2
        found = first_topology_problem(_joined(topo, middle), is_static_group=False)
        if found is None:
            low = middle + 1
        else:
            high, problem = middle, found
    return high, problem
