"""Joining a job: each rank publishes its arrival (or its failure), then waits, bounded and logged, for all.

NOTE [ Join protocol ]
Every key lives under ``inspector_rpc/<attempt>/<generation>/`` in the rendezvous store (NOTE
[ Sharing the rendezvous store ]); ``generation`` counts this process's guarded starts, as
torch's ``rpc_prefix_N`` does, and ``attempt`` is torchrun's restart count, so a restarted
job never reads a previous attempt's keys. A rank that arrives writes ``worker/<rank>`` (its
name, host, backend and planned devices and maps) and appends ``<rank>,`` to ``arrived``. A
rank that fails its local checks, or gives up waiting, writes ``event/<rank>`` and appends
to ``events`` instead. Waiting ranks poll two cheap keys, every 10 ms at first and backing off
to every ``POLL_MAX_S`` of ``_rendezvous`` (a thousand waiting ranks must not flood rank 0's store): whether
``events`` exists (then they read it, count themselves in ``acks`` and raise at once, with the
failed rank's name and message), and how many ranks arrived; every ``log_interval`` they log
who is still missing. At the deadline a rank raises ``RpcJoinError`` naming the missing ranks
and publishes that it gave up, so every other rank stops at once with the same verdict.
When everyone arrived, each rank reads every ``worker/<rank>`` and counts itself in ``read``.
The rank that hosts the store must outlive what its peers still have to read: before it
raises, it waits (bounded) until every other rank has acknowledged the event or read the
arrivals; a peer that lost the store raises ``RpcJoinError`` naming rank 0.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from inspector._messages import Message
from inspector.rpc._agreement import agreement_fields, disagreement
from inspector.rpc._errors import RankFailedError, RendezvousConfigError, RpcError, RpcJoinError, first_few
from inspector.rpc._rendezvous import Backoff, Rendezvous

logger = logging.getLogger("inspector.rpc")

LINGER_S = 30.0  # how long the store's host waits for peers to read a verdict that ends the job


def log_interval(join_timeout: float) -> float:
    """Seconds between "still waiting" lines: a thirtieth of the timeout, within 1 .. 10 s."""
    return min(10.0, max(1.0, join_timeout / 30))


class _StoreLost(Exception):
    """A store operation failed: the host of the store is gone."""


def _ranks(text: bytes) -> list[int]:
    return [int(part) for part in text.decode().split(",") if part]


class JobStore:
    """This job's keys in the rendezvous store (see NOTE [ Join protocol ])."""

    def __init__(self, store: Any, rdzv: Rendezvous, generation: int) -> None:
        import torch.distributed as dist

        attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
        self.store = dist.PrefixStore(f"inspector_rpc/{attempt}/{generation}/", store)
        self.rdzv = rdzv

    def _op(self, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except RpcError:
            raise
        except RuntimeError as exc:  # torch's DistError family
            raise _StoreLost(str(exc).partition("\n")[0]) from exc

    def _list(self, key: str) -> list[int]:
        if not self._op(self.store.check, [key]):
            return []
        return _ranks(self._op(self.store.get, key))

    def _publish(self, kind: str, rank: int, record: dict[str, Any]) -> None:
        self._op(self.store.set, f"{kind}/{rank}", json.dumps(record))
        self._op(self.store.append, kind + "s" if kind == "event" else "arrived", f"{rank},")  # type: ignore[attr-defined]  # in torch, not its stub
        if kind == "worker":
            self._op(self.store.add, "arrived_n", 1)

    def publish_arrival(self, record: dict[str, Any]) -> None:
        """This rank's arrival, with the settings every rank must agree on (``_agreement``)."""
        self._publish("worker", self.rdzv.rank, {**record, **agreement_fields(self.rdzv.world_size)})

    def publish_event(self, record: dict[str, Any]) -> None:
        """A failure or a give-up; best effort, since the store may already be gone."""
        try:
            self._publish("event", self.rdzv.rank, record)
        except _StoreLost:
            logger.warning("could not publish rank %d's failure: the rendezvous store is gone", self.rdzv.rank)

    def event_ranks(self) -> list[int]:
        return list(dict.fromkeys(self._list("events")))

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(self._op(self.store.get, f"event/{rank}")) for rank in self.event_ranks()]

    def arrived_count(self) -> int:
        return int(self._op(self.store.add, "arrived_n", 0))

    def arrived_ranks(self) -> list[int]:
        return self._list("arrived")

    def arrivals(self, ranks: list[int]) -> dict[int, dict[str, Any]]:
        """Every listed rank's arrival record, in one round trip."""
        if not ranks:
            return {}
        records = self._op(self.store.multi_get, [f"worker/{rank}" for rank in ranks])
        return {rank: json.loads(record) for rank, record in zip(ranks, records, strict=True)}

    def count(self, key: str, by: int = 0) -> int:
        return int(self._op(self.store.add, key, by))


def arrival_record(name: str, backend: str, worker: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "backend": backend, "host": socket.gethostname(), "pid": os.getpid(), **worker}


def _arrived(job: JobStore) -> dict[int, dict[str, Any]]:
    return job.arrivals(sorted(set(job.arrived_ranks())))


def _names(arrivals: dict[int, dict[str, Any]]) -> dict[int, str]:
    return {rank: str(record.get("name")) for rank, record in arrivals.items()}


def error_from_event(event: dict[str, Any], rdzv: Rendezvous, join_timeout: float) -> RpcError:
    """The error a rank raises on reading another rank's event."""
    if event.get("kind") == "config":  # the same message on every rank
        return RendezvousConfigError(str(event["message"]))
    if event.get("kind") == "timeout":
        note = f"note = rank {event['rank']} ({event['name']}) gave up first; every arrived rank stops with it"
        arrived = {int(k): v for k, v in event.get("arrived", {}).items()}
        return RpcJoinError(event.get("missing", []), arrived, rdzv.address, join_timeout, note)
    return RankFailedError(
        int(event["rank"]), str(event["name"]), str(event["exception"]), str(event["message"]), rdzv.address
    )


def _lost(rdzv: Rendezvous, join_timeout: float, why: str, arrived: dict[int, str]) -> RpcJoinError:
    return RpcJoinError(
        [0],
        arrived,
        rdzv.address,
        join_timeout,
        f"note = lost the rendezvous store that rank 0 hosts ({why}); rank 0 left the job",
    )


class Waiter:
    """One rank's wait for the others, bounded by ``deadline`` (see NOTE [ Join protocol ])."""

    def __init__(self, job: JobStore, name: str, started: float, join_timeout: float) -> None:
        self.job, self.name, self.started, self.join_timeout = job, name, started, join_timeout
        self.rdzv = job.rdzv
        self.deadline = started + join_timeout
        self.arrived: dict[int, str] = {}

    def fail(self, exc: BaseException) -> None:
        """Publish this rank's own failure so every other rank raises at once, then linger if hosting."""
        self.job.publish_event(
            {
                "kind": "failed",
                "rank": self.rdzv.rank,
                "name": self.name,
                "exception": type(exc).__name__,
                "message": str(exc),
            }
        )
        if self.rdzv.hosts_store:
            logger.warning(
                "rank 0 (%s) failed: %s: %s; it keeps the rendezvous store at %s up until the other ranks have "
                "read this (at most %.0f s more)",
                self.name,
                type(exc).__name__,
                str(exc).partition("\n")[0],
                self.rdzv.address,
                max(0.0, self.deadline - time.monotonic()),
            )
        self.linger_for_acks(self.deadline)

    def check_events(self) -> None:
        """Raise at once if another rank published a failure or gave up (the host lingers first)."""
        try:
            events = [e for e in self.job.events() if int(e["rank"]) != self.rdzv.rank]
            if not events:
                return
            if not self.rdzv.hosts_store:
                self.job.count("acks", 1)
        except _StoreLost as exc:
            raise _lost(self.rdzv, self.join_timeout, str(exc), self.arrived) from None
        event = events[0]
        error = error_from_event(event, self.rdzv, self.join_timeout)
        if event.get("kind") == "timeout":  # the missing ranks will never read it
            missing = set(event.get("missing", [])) - {self.rdzv.rank}
            until = time.monotonic() + min(LINGER_S, self.join_timeout)
            self.linger_for_acks(until, expected=self.rdzv.world_size - 1 - len(missing))
        elif event.get("kind") == "config":  # only the ranks that arrived can read it
            self._linger_for_arrived()
        else:
            self.linger_for_acks(self.deadline)
        raise error

    def wait_for_all(self) -> dict[int, dict[str, Any]]:
        """Every rank's arrival record, by rank; raises the first failure published, or at the deadline."""
        try:
            return self._wait()
        except _StoreLost as exc:
            raise _lost(self.rdzv, self.join_timeout, str(exc), self.arrived) from None

    def _wait(self) -> dict[int, dict[str, Any]]:
        world = self.rdzv.world_size
        interval = log_interval(self.join_timeout)
        next_log = self.started + interval
        backoff = Backoff()
        while True:
            self.check_events()
            if self.job.arrived_count() >= world:
                ranks = self.job.arrived_ranks()
                repeated = sorted(rank for rank, times in Counter(ranks).items() if times > 1)
                if repeated:
                    message = Message(
                        f"Ranks {first_few(repeated)} arrived more than once at {self.rdzv.address}: two processes "
                        "were given the same rank.",
                        next_step="give each process a distinct RANK below WORLD_SIZE",
                    )
                    self.refuse(str(message))
                arrivals = self.job.arrivals(sorted(ranks))
                self.refuse_disagreement(arrivals)
                self.job.count("read", 1)
                return arrivals
            now = time.monotonic()
            if now >= self.deadline:
                self._give_up()
            if now >= next_log:
                arrivals = _arrived(self.job)
                self.refuse_disagreement(arrivals)  # a rank with another world size may be why we wait
                self.arrived = _names(arrivals)
                missing = [r for r in range(world) if r not in self.arrived]
                logger.warning(
                    "rank %d (%s) waiting for ranks %s (%.0f s of %g s) at %s",
                    self.rdzv.rank,
                    self.name,
                    missing,
                    now - self.started,
                    self.join_timeout,
                    self.rdzv.address,
                )
                next_log += interval
            backoff.sleep()

    def refuse_disagreement(self, arrivals: dict[int, dict[str, Any]]) -> None:
        """Raise (after telling every rank) when the arrived ranks disagree on what must agree."""
        problem = disagreement(arrivals, self.rdzv.address)
        if problem is not None:
            self.refuse(problem)

    def refuse(self, message: str) -> None:
        """Publish a configuration error every rank raises as it is, then raise it here."""
        self.job.publish_event({"kind": "config", "rank": self.rdzv.rank, "name": self.name, "message": message})
        self._linger_for_arrived()
        raise RendezvousConfigError(message)

    def _linger_for_arrived(self) -> None:
        try:
            readers = len(set(self.job.arrived_ranks()))
        except _StoreLost:
            return
        until = time.monotonic() + min(LINGER_S, self.join_timeout)
        self.linger_for_acks(until, expected=max(0, readers - 1))

    def _give_up(self) -> None:
        arrivals = _arrived(self.job)
        self.refuse_disagreement(arrivals)
        self.arrived = _names(arrivals)
        missing = [r for r in range(self.rdzv.world_size) if r not in self.arrived]
        self.job.publish_event(
            {
                "kind": "timeout",
                "rank": self.rdzv.rank,
                "name": self.name,
                "missing": missing,
                "arrived": {str(k): v for k, v in self.arrived.items()},
            }
        )
        error = RpcJoinError(missing, self.arrived, self.rdzv.address, self.join_timeout)
        self.linger_for_acks(time.monotonic() + min(LINGER_S, self.join_timeout), expected=len(self.arrived) - 1)
        raise error

    def linger_for_acks(self, until: float, expected: int | None = None) -> None:
        """As the store's host, wait until the other ranks (or ``expected`` of them) acknowledged or failed too."""
        if not self.rdzv.hosts_store:
            return
        others = self.rdzv.world_size - 1 if expected is None else expected
        backoff = Backoff()
        try:
            while True:
                published = set(self.job.event_ranks()) - {self.rdzv.rank}
                if self.job.count("acks") + len(published) >= others:
                    return
                if time.monotonic() >= until:
                    break
                backoff.sleep()
        except _StoreLost:
            return
        logger.warning(
            "rank 0 stops hosting the rendezvous store at %s: not every rank read the verdict in time",
            self.rdzv.address,
        )

    def linger_for_reads(self) -> None:
        """As the store's host, wait (bounded) until every rank has read every arrival."""
        if not self.rdzv.hosts_store:
            return
        until = time.monotonic() + min(LINGER_S, self.join_timeout)
        backoff = Backoff()
        try:
            while time.monotonic() < until and self.job.count("read") < self.rdzv.world_size:
                backoff.sleep()
        except _StoreLost:
            return
