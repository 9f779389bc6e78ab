"""The root of every RPC error, and the errors a job's start-up raises on its ranks.

Every error ``inspector.rpc`` raises on purpose is an ``RpcError`` and also the builtin it
would otherwise be (``ValueError``, ``KeyError``, ``TimeoutError``...), so ``except RpcError``
catches "anything RPC" while existing ``except ValueError`` clauses keep working.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from inspector._messages import Message
from inspector.errors import InspectorError

if TYPE_CHECKING:
    from inspector.rpc._plan import TopologyPlan
    from inspector.rpc._prediction import InitError
    from inspector.rpc._preflight import PreflightWarning
    from inspector.rpc._problems import DeviceMapProblem


class RpcError(InspectorError):
    """Anything ``inspector.rpc`` raises on purpose."""


class TopologyTypeError(RpcError, TypeError):
    """An argument of the device-map functions that has the wrong shape; ``.argument`` names it."""

    def __init__(self, argument: str, expected: str, got: object) -> None:
        self.argument = argument
        self.expected = expected
        self.got = type(got).__name__
        super().__init__(f"{argument} must be {expected}, got {self.got}: {short(got)}")


class DeviceCountError(RpcError, ValueError):
    """A device count that no machine has (negative, or more than torch can index); the range is in its first line."""

    def __init__(self, count: object, limit: int, worker: str | None = None) -> None:
        self.count = count
        self.limit = limit
        self.worker = worker
        where = f" for worker {short(worker)}" if worker is not None else ""
        message = Message(
            f"Device count {short(count)}{where} is outside 0 .. {limit}, the counts torch can index.",
            {"limit": f"0 .. {limit} (torch indexes a device type with an int8: cuda:0 .. cuda:{limit - 1})"},
            next_step="give the number of GPUs the worker really has (torch.cuda.device_count() there)",
        )
        super().__init__(message)


class RendezvousConfigError(RpcError, ValueError):
    """A job's rendezvous cannot be set up from what was given (no address, no rank...)."""


class RpcUnavailableError(RpcError, RuntimeError):
    """This torch was built without ``torch.distributed.rpc``."""


class WorkerConfigError(RpcError, ValueError):
    """A rank's own arguments to ``init_rpc`` that cannot start (its name, its options object)."""


class RpcJoinError(RpcError, TimeoutError):
    """Ranks that never arrived within the join timeout; raised on every rank that did arrive.

    ``.missing`` lists the missing ranks, ``.arrived`` maps the arrived ranks to their names,
    ``.address`` is the rendezvous address and ``.join_timeout`` the bound in seconds.
    """

    def __init__(
        self, missing: Sequence[int], arrived: dict[int, str], address: str, join_timeout: float, note: str = ""
    ) -> None:
        self.missing = list(missing)
        self.arrived = dict(arrived)
        self.address = address
        self.join_timeout = join_timeout
        message = Message(
            f"RPC join timed out after {join_timeout:g} s: ranks {self.missing} never arrived at {address}.",
            {"missing": self.missing, "arrived": sorted(self.arrived.items()), "rendezvous": address},
            notes=[note],
            next_step="look at the missing ranks' logs (did their set-up crash before init_rpc, was their node "
            "scheduled, do they use this MASTER_ADDR/MASTER_PORT?); raise join_timeout or "
            "INSPECTOR_RPC_JOIN_TIMEOUT if they are only slow",
        )
        super().__init__(message)


class RankFailedError(RpcError, RuntimeError):
    """Another rank failed inside ``init_rpc`` before joining; raised at once on every other rank."""

    def __init__(self, rank: int, name: str, exception: str, message: str, address: str) -> None:
        self.rank = rank
        self.name = name
        self.exception = exception
        self.message = message
        self.address = address
        explained = Message(
            f"Rank {rank} ({name}) failed before joining the RPC job: {exception}: {message}",
            {"failed rank": rank, "failed worker": name, "rendezvous": address},
            next_step=f"fix what {name} reports above and restart the job",
        )
        super().__init__(explained)


class JobTopologyError(RpcError, ValueError):
    """The job's gathered options, checked together, would be refused; the same report on every rank."""

    def __init__(
        self,
        plan: TopologyPlan | None,
        problems: Sequence[DeviceMapProblem],
        warnings: Sequence[PreflightWarning],
        predicted: InitError | None,
        text: str | Message,
    ) -> None:
        self.plan = plan
        self.problems = tuple(problems)
        self.warnings = tuple(warnings)
        self.predicted = predicted
        super().__init__(text)


SHOWN = 5  # entries of a long list that a message names; the rest are counted


def short(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters, for values a user gave (a message stays one readable line).

    An int too long for Python to print, or nesting too deep to print, is described instead.
    """
    try:
        text = repr(value)
    except ValueError:  # an int over sys.get_int_max_str_digits()
        digits = int(abs(value).bit_length() * 0.30103) + 1 if isinstance(value, int) else 0
        return f"<an integer of about {digits:,} digits>" if digits else f"<a {type(value).__name__}>"
    except RecursionError:
        return f"<a {type(value).__name__} nested too deeply to print>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def first_few(values: Sequence[Any], shown: int = SHOWN) -> str:
    """The first ``shown`` of ``values``, each short, then how many more: ``['a', 'b'] and 12,345 more``."""
    head = "[" + ", ".join(short(value, 40) for value in values[:shown]) + "]"
    rest = len(values) - shown
    return head + (f" and {rest:,} more" if rest > 0 else "")


class JobGatherError(RpcError, TimeoutError):
    """Ranks that did not call ``gather`` within its timeout; raised on every rank that did.

    ``.missing`` lists them, ``.arrived`` the ranks that called it, ``.timeout`` is the bound in
    seconds and ``.where`` says what the ranks met through (the job's store).
    """

    def __init__(
        self, missing: Sequence[int], arrived: Sequence[int], timeout: float, where: str, note: str = ""
    ) -> None:
        self.missing = list(missing)
        self.arrived = list(arrived)
        self.timeout = timeout
        self.where = where
        message = Message(
            f"gather timed out after {timeout:g} s: ranks {first_few(self.missing)} never called inspector.rpc.gather.",
            {"missing": first_few(self.missing), "arrived": first_few(self.arrived), "met through": where},
            notes=[note],
            next_step="call gather on every rank at the same point of the script (after the same loop, outside "
            "any `if rank == 0:`); look at the missing ranks' logs; raise timeout= if they are only slow",
        )
        super().__init__(message)


class JobViewError(RpcError, ValueError):
    """A job view (a file written by ``JobView.save``, or records gathered) that cannot be read; says why."""


class GatherUsageError(RpcError, ValueError):
    """``gather`` called in a way it cannot serve: with a subgroup, or while another gather runs in this process."""


class GatherFailedError(RpcError, RuntimeError):
    """Every rank came to ``gather``, then its collective failed (a rank died in between, a network fault).

    ``.gone`` lists the ranks that did not report back after the failure (``[0]`` when the store's
    host is gone), empty when every rank did.
    """

    gone: tuple[int, ...] = ()
