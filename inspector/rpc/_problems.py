"""What can be wrong with a topology's device maps: categories, problem records and the error.

NOTE [ Device-map messages ]
Each category is one of torch's checks in ``_validate_device_maps`` (plus one for the device
list that torch's ``_create_device_list`` cannot sort). A problem's message starts with the
exact text of torch's ``ValueError`` (headline and its ``key = value`` lines, with devices
printed as torch prints them), then adds our evidence (which devices are at fault) and a
``next step`` line, built as a ``Message`` (NOTE [ Messages ]; the problem keeps ``next_step``).
``torch_exception``/``torch_message`` hold what torch itself raises at that point, verbatim: a
``ValueError`` with the text above, or the ``TypeError`` torch crashes with on an index-less
``cuda`` or on a device list that mixes index-less devices in.
One difference is deliberate: a list or map of more than ``MAX_LISTED`` entries is printed with
its first ``MAX_LISTED`` and a count of the rest (``shown``), where torch would print all of a
90,000-device list on one line.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import KeysView
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from inspector._messages import Message
from inspector.rpc._errors import RpcError

if TYPE_CHECKING:
    from inspector.rpc._devices import Device


class DeviceMapCategory(str, enum.Enum):
    """One check of torch's device-map validation, in torch's order (then ours for the device list)."""

    DUPLICATED_DEVICES = "DUPLICATED_DEVICES"
    INVALID_DEVICE_INDEX = "INVALID_DEVICE_INDEX"
    UNKNOWN_TARGET_NAME = "UNKNOWN_TARGET_NAME"
    DUPLICATED_TARGET = "DUPLICATED_TARGET"
    UNEXPECTED_SOURCE = "UNEXPECTED_SOURCE"
    INVALID_SOURCE_INDEX = "INVALID_SOURCE_INDEX"
    UNEXPECTED_TARGET = "UNEXPECTED_TARGET"
    INVALID_TARGET_INDEX = "INVALID_TARGET_INDEX"
    UNSORTABLE_DEVICE_LIST = "UNSORTABLE_DEVICE_LIST"

    def __str__(self) -> str:
        return self.value


HEADLINES = {
    DeviceMapCategory.DUPLICATED_DEVICES: "Node {worker} has duplicated devices",
    DeviceMapCategory.INVALID_DEVICE_INDEX: "Node {worker} has devices with invalid indices",
    DeviceMapCategory.UNKNOWN_TARGET_NAME: "Node {worker} has invalid target node names in its device maps",
    DeviceMapCategory.DUPLICATED_TARGET: ("Node {worker} has duplicated target devices in its device map for {target}"),
    DeviceMapCategory.UNEXPECTED_SOURCE: ("Node {worker} has unexpected source devices in its device map for {target}"),
    DeviceMapCategory.INVALID_SOURCE_INDEX: (
        "Node {worker} has source devices with invalid indices in its device map for {target}"
    ),
    DeviceMapCategory.UNEXPECTED_TARGET: ("Node {worker} has unexpected target devices in its device map for {target}"),
    DeviceMapCategory.INVALID_TARGET_INDEX: (
        "Node {worker} has target devices with invalid indices in its device map for {target}"
    ),
    DeviceMapCategory.UNSORTABLE_DEVICE_LIST: "Node {worker} has a device list that cannot be sorted by index",
}

# What torch's ``0 <= d.index`` says about an index-less cuda device.
INDEXLESS_TYPE_ERROR = "'<=' not supported between instances of 'int' and 'NoneType'"


@dataclass(frozen=True)
class DeviceMapProblem:
    """One failed check: where (worker, target), which devices, and the full message."""

    category: DeviceMapCategory
    worker: str | None
    target: str | None
    devices: tuple[Device, ...]
    message: str
    torch_exception: str = "ValueError"
    torch_message: str = ""
    device_map: tuple[tuple[Device, Device], ...] = ()
    device_count: int | None = None
    next_step: str = ""  # what to do about it (the message's last line, kept so nobody parses it)

    @property
    def headline(self) -> str:
        """The message's first line (torch's own, for torch's checks)."""
        return self.message.partition("\n")[0]

    @property
    def torch_error(self) -> str:
        """What torch raises here, as ``Type: message``."""
        return f"{self.torch_exception}: {self.torch_message}"


class DeviceMapError(RpcError, ValueError):
    """A topology torch would refuse; the attributes say where and which devices."""

    def __init__(self, problem: DeviceMapProblem) -> None:
        self.problem = problem
        self.category = problem.category
        self.worker = problem.worker
        self.target = problem.target
        self.devices = problem.devices
        self.device_map = dict(problem.device_map)
        self.device_count = problem.device_count
        self.torch_exception = problem.torch_exception
        self.torch_message = problem.torch_message
        super().__init__(problem.message)


MAX_LISTED = 8  # entries of a list or map a message prints; the rest are counted


def shown(value: list[Any] | dict[Any, Any] | KeysView[Any], limit: int = MAX_LISTED) -> str:
    """``repr(value)`` as torch prints it, or its first ``limit`` entries and how many more (NOTE above)."""
    if len(value) <= limit:
        return repr(value)
    more = f"... ({len(value) - limit:,} more)"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in itertools.islice(value.items(), limit)) + f", {more}}}"
    body = "[" + ", ".join(repr(v) for v in itertools.islice(value, limit)) + f", {more}]"
    return f"dict_keys({body})" if isinstance(value, KeysView) else body


def names_of(devices: tuple[Device, ...] | list[Device]) -> str:
    """Devices as short strings for evidence lines (``['cuda:0', 'cpu']``), long lists shortened."""
    return shown([str(device) for device in devices])


def make_problem(
    category: DeviceMapCategory,
    worker: str | None,
    target: str | None,
    torch_details: list[tuple[str, object]],
    evidence: list[tuple[str, object]],
    *,
    next_step: str,
    devices: tuple[Device, ...] = (),
    device_map: dict[Device, Device] | None = None,
    device_count: int | None = None,
    torch_type_error: str | None = None,
) -> DeviceMapProblem:
    """A problem whose message is torch's text, then ``evidence`` (see NOTE [ Device-map messages ])."""
    torch_message = Message(HEADLINES[category].format(worker=worker, target=target), torch_details)
    facts = [*torch_message.facts, *evidence]
    if torch_type_error is not None:
        facts.append(("torch raises", f"TypeError: {torch_type_error}"))
    return DeviceMapProblem(
        category=category,
        worker=worker,
        target=target,
        devices=devices,
        message=str(Message(torch_message.headline, facts, next_step=next_step)),
        torch_exception="ValueError" if torch_type_error is None else "TypeError",
        torch_message=str(torch_message) if torch_type_error is None else torch_type_error,
        device_map=tuple((device_map or {}).items()),
        device_count=device_count,
        next_step=next_step,
    )
