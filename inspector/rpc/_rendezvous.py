"""Where a job's ranks meet: the rendezvous address from ``init_method``, and the store there, reached in bounded time.

NOTE [ Sharing the rendezvous store ]
``init_rpc`` meets its peers in a ``TCPStore`` at ``MASTER_ADDR:MASTER_PORT`` (``env://``)
or at the address of a ``tcp://`` URL, hosted by rank 0. Before torch starts, the join guard
opens a store at that same address: rank 0 hosts it with ``multi_tenant=True`` and without a
world size, so when torch's own rendezvous then opens its store on that port in the same
process, it shares the running server instead of failing to bind; torch's keys (``init/``,
``rpc_prefix_N/...``) and ours (under ``inspector_rpc/``) never meet. Under torchrun
(``TORCHELASTIC_USE_AGENT_STORE=True``) the agent hosts the store and every rank is a client,
as in torch. A client first probes the port with a plain socket, so waiting for a host that
is not up yet stays silent (c10d logs a stack trace on every failed connect), and each wait is
bounded by the join deadline.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlparse

from inspector._messages import Message
from inspector.rpc._errors import RendezvousConfigError, RpcJoinError

PROBE_TIMEOUT_S = 1.0
MAX_STORE_TIMEOUT_S = 365 * 24 * 3600.0  # a year: waits beyond it are "forever", and far below what c10d holds
POLL_MIN_S = 0.01
POLL_MAX_S = 0.25
GUARDED_SCHEMES = ("env", "tcp")


class Backoff:
    """Sleeps that start at ``POLL_MIN_S`` and grow by half each time, up to ``POLL_MAX_S``."""

    def __init__(self) -> None:
        self.delay = POLL_MIN_S

    def sleep(self) -> None:
        time.sleep(self.delay)
        self.delay = min(POLL_MAX_S, self.delay * 1.5)


@dataclass(frozen=True)
class Rendezvous:
    """A static group's meeting point: address, this rank, the world size, and who hosts the store."""

    host: str
    port: int
    rank: int
    world_size: int
    agent_store: bool = False
    use_libuv: bool = True

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def hosts_store(self) -> bool:
        """Whether this process runs the store server (rank 0, unless an elastic agent hosts it)."""
        return self.rank == 0 and not self.agent_store


def _env(name: str, next_step: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        headline = f"init_rpc with env:// needs the environment variable {name}."
        raise RendezvousConfigError(Message(headline, next_step=next_step))
    return value


def _int(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise RendezvousConfigError(f"{what} must be an integer, got {text!r}") from None


def resolve_rendezvous(init_method: str, rank: int, world_size: int) -> Rendezvous | None:
    """The rendezvous of a static group, or None for an init method the join guard does not cover (``file://``)."""
    url = urlparse(init_method)
    if url.scheme not in GUARDED_SCHEMES:
        return None
    query = {key: values[-1] for key, values in parse_qs(url.query).items()}
    if rank == -1 and "rank" in query:
        rank = _int(query["rank"], "the rank in init_method")
    if url.scheme == "env":
        if rank == -1:
            rank = _int(_env("RANK", "pass rank= to init_rpc or set RANK for each process"), "RANK")
        host = _env("MASTER_ADDR", "set MASTER_ADDR to the address of the node that runs rank 0")
        port = _int(_env("MASTER_PORT", "set MASTER_PORT to a free port on the node that runs rank 0"), "MASTER_PORT")
    else:
        if url.hostname is None or url.port is None:
            raise RendezvousConfigError(f"init_method {init_method!r} needs a host and a port: tcp://HOST:PORT")
        host, port = url.hostname, url.port
    if not 0 < port < 65536:
        raise RendezvousConfigError(f"The rendezvous port must be within 1 .. 65535, got {port}")
    if not 0 <= rank < world_size:
        headline = f"rank {rank} is outside 0 .. {world_size - 1} for world_size {world_size}"
        raise RendezvousConfigError(Message(headline, next_step="give each process a distinct rank below world_size"))
    agent = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == str(True)
    libuv = query.get("use_libuv", os.environ.get("USE_LIBUV", "1")) == "1"
    return Rendezvous(host, port, rank, world_size, agent, libuv)


def store_timeout(join_timeout: float) -> timedelta:
    """The store's per-operation timeout for a join bound: at least 1 s, at most ``MAX_STORE_TIMEOUT_S``
    (``timedelta`` and c10d's milliseconds overflow long before ``1e308`` seconds)."""
    return timedelta(seconds=min(MAX_STORE_TIMEOUT_S, max(1.0, join_timeout)))


def _reachable(host: str, port: int, timeout: float) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def open_store(
    rdzv: Rendezvous, name: str, started: float, join_timeout: float, on_wait: Callable[[float], None] | None = None
) -> Any:
    """The rendezvous ``TCPStore`` (see NOTE [ Sharing the rendezvous store ]); ``RpcJoinError`` at the deadline.

    ``on_wait(elapsed)`` is called while a client waits for the store's host to be up.
    """
    import torch.distributed as dist

    deadline = started + join_timeout

    op_timeout = store_timeout(join_timeout)
    if rdzv.hosts_store:
        try:
            return dist.TCPStore(
                rdzv.host,
                rdzv.port,
                None,
                True,
                op_timeout,
                wait_for_workers=False,
                multi_tenant=True,
                use_libuv=rdzv.use_libuv,
            )
        except RuntimeError as exc:
            message = Message(
                f"Rank 0 cannot host the rendezvous store at {rdzv.address}: {str(exc).partition(chr(10))[0]}",
                next_step="pick a free MASTER_PORT on this node (a previous job may still hold this one)",
            )
            raise RendezvousConfigError(message) from exc
    backoff = Backoff()
    while not _reachable(rdzv.host, rdzv.port, min(PROBE_TIMEOUT_S, max(0.05, deadline - time.monotonic()))):
        now = time.monotonic()
        if now >= deadline:
            host = "the torchrun agent" if rdzv.agent_store else "rank 0"
            raise RpcJoinError(
                [0] if not rdzv.agent_store else [],
                {rdzv.rank: name},
                rdzv.address,
                join_timeout,
                f"note = nothing answered at {rdzv.address}, where {host} hosts the rendezvous store; "
                "without it no other rank's arrival can be seen",
            )
        if on_wait is not None:
            on_wait(now - started)
        backoff.sleep()
    try:
        return dist.TCPStore(
            rdzv.host, rdzv.port, None, False, op_timeout, wait_for_workers=False, use_libuv=rdzv.use_libuv
        )
    except RuntimeError as exc:
        raise RpcJoinError(
            [0],
            {rdzv.rank: name},
            rdzv.address,
            join_timeout,
            f"note = the rendezvous store at {rdzv.address} went away while connecting: {exc}",
        ) from exc
