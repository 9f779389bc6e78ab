"""One planned worker as a record: its name, CUDA device count, explicit devices and device maps.

Values are parsed and checked once, when the record is built, and kept in canonical form
(``"cuda:0"``), so a plan compares, hashes and writes itself without parsing again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from inspector.rpc._devices import Device, DeviceSpecError, as_device, cuda_count
from inspector.rpc._errors import RpcError, short

Pairs = tuple[tuple[str, str], ...]

WORKER_NAME = re.compile(r"[A-Za-z0-9_:\-]{1,127}")  # torch's rule for worker names (its WorkerInfo's)
WORKER_NAME_RULE = "1 to 127 letters, digits, '_', ':' or '-' (e.g. 'worker0')"


def worker_name_problem(name: object) -> str | None:
    """torch's refusal of a worker name, in its words (``WorkerInfo``), or None for a name it accepts."""
    if isinstance(name, str) and WORKER_NAME.fullmatch(name):
        return None
    return (
        "Worker name must match ^[A-Za-z0-9-_:]*$, and must be non-empty and shorter than 128 chars, "
        f"but got {short(name)}"
    )


class PlanError(RpcError, ValueError):
    """A plan that cannot be built or read; ``.path`` says where (``workers[1].device_maps``)."""

    def __init__(self, path: str, problem: str, expected: str = "") -> None:
        self.path = path
        self.problem = problem
        self.expected = expected
        lines = [f"Invalid plan at {path}: {problem}"]
        if expected:
            lines.append(f"expected = {expected}")
        super().__init__("\n".join(lines))

    @property
    def one_line(self) -> str:
        """The message on one line (for a command line's error)."""
        return f"Invalid plan at {self.path}: {self.problem}" + (
            f" (expected {self.expected})" if self.expected else ""
        )


def _pairs(path: str, mapping: Mapping[Any, Any] | Iterable[tuple[Any, Any]]) -> Pairs:
    if isinstance(mapping, (str, bytes)) or not isinstance(mapping, (Mapping, Iterable)):
        raise PlanError(path, f"a {type(mapping).__name__}, not a device map", "{'cuda:0': 'cuda:1'}")
    items = list(mapping.items() if isinstance(mapping, Mapping) else mapping)
    seen: dict[Device, Device] = {}
    for item in items:
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise PlanError(path, f"{short(item)} is not a (source, target) pair", "{'cuda:0': 'cuda:1'}")
        source, target = item
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
        """A worker from friendly values (device strings, ``torch.device``, dicts); ``PlanError`` says what is wrong."""
        path = f"worker {short(name)}"
        try:
            count = cuda_count(device_count, str(name))
            if isinstance(devices, (str, bytes)) or not isinstance(devices, Iterable):
                raise TypeError(f"devices must be a list of devices, got {type(devices).__name__}")
            listed = tuple(str(as_device(d)) for d in devices)
        except (TypeError, ValueError) as exc:
            raise PlanError(path, str(exc).partition("\n")[0]) from exc
        if device_maps is not None and not isinstance(device_maps, Mapping):
            raise PlanError(
                f"{path}.device_maps", f"a {type(device_maps).__name__}", '{"worker1": {"cuda:0": "cuda:1"}}'
            )
        maps = tuple(
            (str(target), _pairs(f"{path}.device_maps[{short(target)}]", mapping))
            for target, mapping in (device_maps or {}).items()
        )
        return cls(str(name), count, listed, maps)

    def maps_dict(self) -> dict[str, dict[str, str]]:
        return {target: dict(pairs) for target, pairs in self.device_maps}

    @property
    def pair_count(self) -> int:
        return sum(len(pairs) for _, pairs in self.device_maps)
