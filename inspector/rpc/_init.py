"""``inspector.rpc.init_rpc``: torch's ``init_rpc`` made safe as the entry point of a multi-node job.

NOTE [ Guarded init_rpc ]
torch's ``init_rpc`` waits in its rendezvous for every rank; a rank that never arrives (its
set-up crashed, its node was not scheduled, its address is wrong) keeps the others waiting for
torch's default of 30 minutes, and a rank that fails before the rendezvous tells nobody. For a
static group (``world_size`` given) with an ``env://`` or ``tcp://`` rendezvous this function
first runs each rank's local checks (worker name, backend, options, the devices and maps the
rank itself can judge against its own device count, the torch internals a registry-only backend
needs), then meets the other ranks in the rendezvous store (NOTE [ Sharing the rendezvous
store ], NOTE [ Join protocol ]): a failed check is published there, so every other rank raises
``RankFailedError`` at once with that rank's name and message (an invalid ``join_timeout`` or
``INSPECTOR_RPC_JOIN_TIMEOUT`` is such a failure too: that rank reaches the store within the
default bound to say so); a missing rank makes every arrived rank raise ``RpcJoinError`` at
``join_timeout``, naming it and the address, after "waiting for ranks [...]" lines at intervals.
When all have arrived, each rank builds the job's plan from the gathered options and checks it
with the planner (every problem, what torch would raise, the pre-flight warnings), so every rank
raises the same ``JobTopologyError`` before torch starts. Only then does torch start: its public
``torch.distributed.rpc.init_rpc`` for a backend torch knows, or, for a backend registered only
here, the same steps through our registry (NOTE [ Our init_rpc ]). Dynamic groups and other
rendezvous (``file://``) go to torch directly. One gap remains torch's: a rank that dies between
the gather and torch's own rendezvous, a moment later, is waited for with torch's bounds.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import numbers
import os
import time
import warnings
from collections.abc import Iterator
from typing import Any

from inspector._messages import Message
from inspector.rpc._errors import RendezvousConfigError, RpcJoinError, RpcUnavailableError, WorkerConfigError, short
from inspector.rpc._job import check_job, gathered_plan, worker_record
from inspector.rpc._job_state import remember
from inspector.rpc._join import JobStore, Waiter, arrival_record, log_interval, logger
from inspector.rpc._plan import TopologyPlan
from inspector.rpc._problems import DeviceMapError
from inspector.rpc._registry import BackendType, construct_rpc_backend_options, resolve_backend
from inspector.rpc._registry_init import init_through_registry
from inspector.rpc._rendezvous import open_store, resolve_rendezvous
from inspector.rpc._torch_internals import INIT_RPC_INTERNALS, require_torch_internals
from inspector.rpc._worker_plan import WORKER_NAME_RULE, WorkerPlan, worker_name_problem

DEFAULT_JOIN_TIMEOUT_S = 300.0
JOIN_TIMEOUT_ENV = "INSPECTOR_RPC_JOIN_TIMEOUT"

_generations = itertools.count()


def join_timeout_seconds(join_timeout: float | None) -> float:
    """The bound to use: the argument (any real number: ``np.int64(60)`` too), else ``INSPECTOR_RPC_JOIN_TIMEOUT``,
    else 300 s. A huge bound (``1e308``) is kept; only the store's own timeout is clamped (``store_timeout``)."""
    source, given = "join_timeout", short(join_timeout)
    if join_timeout is None:
        text = os.environ.get(JOIN_TIMEOUT_ENV)
        if text is None:
            return DEFAULT_JOIN_TIMEOUT_S
        source, given = JOIN_TIMEOUT_ENV, short(text)  # what was typed, not what it parsed to
        try:
            join_timeout = float(text)
        except ValueError:
            join_timeout = math.nan
    problem = "must be a positive number of seconds"
    seconds = math.nan
    if isinstance(join_timeout, numbers.Real) and not isinstance(join_timeout, bool):
        try:
            seconds = float(join_timeout)
        except OverflowError:  # an int such as 10**400: more than a float holds
            problem = "is too large to be a number of seconds (beyond what a float holds)"
    if not (math.isfinite(seconds) and seconds > 0):
        step = f"pass join_timeout=300 (or set {JOIN_TIMEOUT_ENV}=300)"
        raise RendezvousConfigError(Message(f"{source} {problem}, got {given}", next_step=step))
    return seconds


def _torch_knows(member: BackendType) -> bool:
    from torch.distributed.rpc import backend_registry

    return bool(backend_registry.backend_registered(member.name))


def _local_checks(name: object, backend: object, options: Any) -> tuple[str, BackendType, Any, WorkerPlan]:
    """What this rank can judge alone; raises what it finds (see NOTE [ Guarded init_rpc ])."""
    import torch
    import torch.distributed.rpc as rpc

    refused = worker_name_problem(name)
    if refused is not None or not isinstance(name, str):
        step = f"name each worker with {WORKER_NAME_RULE}"
        raise WorkerConfigError(Message(f"Invalid worker name: {refused}", next_step=step))
    member = resolve_backend("TENSORPIPE" if backend is None else backend)
    if not _torch_knows(member):
        require_torch_internals(INIT_RPC_INTERNALS, "inspector.rpc.init_rpc")
    if getattr(rpc, "_is_current_rpc_agent_set", lambda: False)():
        already = "RPC is already initialized in this process."
        raise WorkerConfigError(Message(already, next_step="call rpc.shutdown() first"))
    if options is None:
        options = construct_rpc_backend_options(member)
    elif _torch_knows(member) and not isinstance(options, rpc.RpcBackendOptions):
        raise WorkerConfigError(
            f"rpc_backend_options must be an RpcBackendOptions (e.g. TensorPipeRpcBackendOptions), "
            f"got {type(options).__name__}"
        )
    worker = TopologyPlan.from_options(name, options, device_count=torch.cuda.device_count()).workers[0]
    alone = TopologyPlan((worker,), static_group=False).check()
    if alone:
        raise DeviceMapError(alone[0])
    return name, member, options, worker


def start_unguarded(name: str, backend: object, rank: int, world_size: int | None, options: Any) -> None:
    """torch's own start-up with no join guard: for ``LocalWorld``, which supervises its workers itself
    and shows torch's own errors (a backend torch does not know goes through our registry)."""
    _start_torch(name, resolve_backend(backend), rank, world_size, options)


# NOTE [ The Gloo deprecation warning ]
# torch's TensorPipe start-up gathers every rank's maps with ``all_gather_object`` over a
# ``ProcessGroupGloo`` it builds itself, and torch then warns, on every rank, "You are using a
# Backend ... ProcessGroupGloo as a ProcessGroup. This usage is deprecated" (pytorch#149393):
# about torch's own code, which a user cannot change. That one warning, matched by its text, is
# ignored while our start-up runs; any other warning shows as usual. ``catch_warnings`` restores
# the process's filters afterwards (a filter another thread adds during that second is lost).
GLOO_BACKEND_WARNING = r"You are using a Backend .*ProcessGroupGloo.* as a ProcessGroup"


@contextlib.contextmanager
def without_gloo_backend_warning() -> Iterator[None]:
    """Ignore torch's warning about its own Gloo gather, and only it (NOTE [ The Gloo deprecation warning ])."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=GLOO_BACKEND_WARNING, category=UserWarning)
        yield


def _start_torch(name: str, member: BackendType, rank: int, world_size: int | None, options: Any) -> None:
    """torch's public ``init_rpc`` for a backend torch knows; our registry's steps for one only we know.

    Without torch's warning about its own gather (NOTE [ The Gloo deprecation warning ]).
    """
    import torch.distributed.rpc as rpc
    from torch.distributed.rpc import backend_registry

    with without_gloo_backend_warning():
        if _torch_knows(member):
            rpc.init_rpc(
                name,
                backend=backend_registry.BackendType[member.name],
                rank=rank,
                world_size=world_size,
                rpc_backend_options=options,
            )
        else:
            init_through_registry(name, member, rank, world_size, options)


def init_rpc(
    name: str,
    backend: object = None,
    rank: int = -1,
    world_size: int | None = None,
    rpc_backend_options: Any = None,
    join_timeout: float | None = None,
) -> None:
    """Start RPC in this process like torch's ``init_rpc``, but never wait unbounded for a rank that is not coming.

    Same arguments as ``torch.distributed.rpc.init_rpc`` (``backend`` may also be a member of
    this registry or a backend's name), plus ``join_timeout`` in seconds (default 300, or
    ``INSPECTOR_RPC_JOIN_TIMEOUT``). See NOTE [ Guarded init_rpc ] for what each rank raises.

    Example (one process per rank, ``MASTER_ADDR``/``MASTER_PORT``/``RANK`` set)::

        >>> inspector.rpc.init_rpc(f"worker{rank}", rank=rank, world_size=4, join_timeout=120)
        >>> torch.distributed.rpc.rpc_sync("worker1", torch.add, args=(torch.ones(2), 1))
        >>> torch.distributed.rpc.shutdown()
    """
    started = time.monotonic()
    local_error: Exception | None = None
    try:
        timeout = join_timeout_seconds(join_timeout)
    except RendezvousConfigError as exc:  # still told to the other ranks, reaching the store within the default
        local_error, timeout = exc, DEFAULT_JOIN_TIMEOUT_S
    import torch.distributed.rpc as rpc

    if not rpc.is_available():
        step = "install a torch build with distributed support (the default wheels have it)"
        raise RpcUnavailableError(Message("This torch was built without torch.distributed.rpc.", next_step=step))
    if world_size is not None and (isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1):
        raise RendezvousConfigError(
            f"world_size must be a positive int (or None for a dynamic group), got {world_size!r}"
        )
    if local_error is None:
        try:
            name, member, options, worker = _local_checks(name, backend, rpc_backend_options)
        except Exception as exc:  # published below so no other rank waits for this one
            local_error = exc
    init_method = getattr(rpc_backend_options if local_error else options, "init_method", None) or "env://"
    try:
        rdzv = None if world_size is None else resolve_rendezvous(init_method, rank, world_size)
    except RendezvousConfigError:
        if local_error is not None:  # this rank's own problem comes first; no peer can be told either way
            raise local_error from None
        raise
    if rdzv is None:
        if local_error is not None:
            raise local_error
        if world_size is not None:
            logger.warning(
                "inspector.rpc.init_rpc: no join guard for init_method %r (env:// and tcp:// have one)", init_method
            )
        _start_torch(name, member, rank, world_size, options)
        return

    interval = log_interval(timeout)
    next_log = [interval]

    def waiting_for_host(elapsed: float) -> None:
        if elapsed >= next_log[0]:
            logger.warning(
                "rank %d (%s) waiting for rank 0 to host the rendezvous store at %s (%.0f s of %g s)",
                rdzv.rank,
                name,
                rdzv.address,
                elapsed,
                timeout,
            )
            next_log[0] += interval

    try:
        store = open_store(rdzv, str(name), started, timeout, waiting_for_host)
    except RpcJoinError as exc:
        if local_error is not None:
            raise local_error from exc
        raise
    waiter = Waiter(JobStore(store, rdzv, next(_generations)), str(name), started, timeout)
    if local_error is not None:
        waiter.fail(local_error)
        raise local_error
    waiter.check_events()
    waiter.job.publish_arrival(arrival_record(name, member.name, worker_record(worker)))
    arrivals = waiter.wait_for_all()
    try:
        plan = gathered_plan(arrivals)
        remember(plan, rdzv)
        check_job(plan)
    except Exception:
        waiter.linger_for_reads()
        raise
    # ``waiter`` keeps our store, and so rank 0's server, alive until torch's own store shares it
    # (see NOTE [ Sharing the rendezvous store ]).
    _start_torch(name, member, rdzv.rank, world_size, options)
