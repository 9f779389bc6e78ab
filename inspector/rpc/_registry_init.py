"""Starting RPC with a backend registered only here, which torch's own ``init_rpc`` would refuse.

NOTE [ Our init_rpc ]
torch's ``init_rpc`` insists on a member of its current ``BackendType`` (stale members and
our registry's members are refused), so ``inspector.rpc.init_rpc`` starts a backend torch knows
through torch's public ``init_rpc`` and only a backend registered through this registry alone
here. This function performs torch's steps with the backend resolved here: rendezvous (static
group, with ``world_size``) or a store from the options (dynamic group); the store timeout set
to the RPC timeout; a ``PrefixStore`` numbered from torch's own counter, so it interoperates with ranks
that call torch's ``init_rpc``; distributed autograd and the profiler node id; then the
backend's init handler and torch's RPC state. The torch internals it touches
(``_init_counter``, ``_set_profiler_node_id``, ``api._init_rpc_states``,
``_create_store_from_options``) are the ones torch's ``init_rpc`` calls in torch 2.13, and are
looked up before the first step (NOTE [ Pinned torch internals ]); a real-world test starts an
agent through this path.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from inspector._messages import Message
from inspector.rpc._errors import WorkerConfigError
from inspector.rpc._registry import BackendType, init_backend
from inspector.rpc._torch_internals import INIT_RPC_INTERNALS, require_torch_internals

# Keeps the rendezvous generator (and so its store) alive, as torch does with a module global.
_rendezvous_keepalive: list[Any] = []


def init_through_registry(name: str, member: BackendType, rank: int, world_size: int | None, options: Any) -> Any:
    """Start RPC in this process with ``member``'s handlers, as torch's ``init_rpc`` would; returns the agent."""
    import torch.distributed as dist
    import torch.distributed.rpc as rpc

    require_torch_internals(INIT_RPC_INTERNALS, "inspector.rpc.init_rpc")
    if rpc._is_current_rpc_agent_set():
        already = "RPC is already initialized in this process."
        raise WorkerConfigError(Message(already, next_step="call rpc.shutdown() first"))
    if not world_size:
        store = dist._create_store_from_options(options, rank)
    else:
        iterator = dist.rendezvous(options.init_method, rank=rank, world_size=world_size)
        store, _, _ = next(iterator)
        _rendezvous_keepalive[:] = [iterator]
    store.set_timeout(timedelta(seconds=options.rpc_timeout))
    with rpc._init_counter_lock:
        prefix = f"rpc_prefix_{rpc._init_counter}"
        rpc._init_counter += 1
    store = dist.PrefixStore(prefix, store)
    rpc.dist_autograd._init(rank)
    rpc._set_profiler_node_id(rank)
    agent = init_backend(member, store=store, name=name, rank=rank, world_size=world_size, rpc_backend_options=options)
    rpc.api._init_rpc_states(agent)
    return agent
