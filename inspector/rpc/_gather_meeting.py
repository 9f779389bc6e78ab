"""Meeting for a gather: every rank counts itself in the job's store, bounded; a rank that never comes is named.

NOTE [ Gather protocol ]
A collective waits for every rank of its group, and when one never calls it, the others fail
at the group's timeout (torch's default: 30 minutes) with an error that does not say who
is missing. So before any collective, the ranks meet in the job's store (the default process
group's, or the rendezvous store of ``inspector.rpc.init_rpc``), under
``inspector_gather/<attempt>/<n>/``: ``n`` counts this process's gathers, so the n-th gather of
every rank meets the n-th of the others, and ``attempt`` is torchrun's restart count. A rank
appends ``<rank>,`` to ``arrived`` and adds one to ``arrived_n``; then it polls (every 10 ms at
first, backing off to 250 ms: ``_rendezvous.Backoff``) whether everyone came or a verdict was
written. At the deadline a rank writes the verdict, which ranks never came, with
``compare_set``, so the first verdict written is the one every rank raises, and raises it as
``JobGatherError``; every rank polling sees it and raises the same at once; a rank that comes
late finds it before waiting and raises it too. Rank 0 (which hosts the store in a job started
without an agent) waits, bounded, until the other ranks that came have read the verdict, so its
exit cannot cut them off. Only non-blocking store calls are used (``check``, ``add``,
``append``, ``compare_set``; ``get`` of a key known to exist), so a store whose host is gone
fails at once. Once the collective has finished on rank 0, every rank is past the meeting and
rank 0 deletes its keys. When the collective fails instead (a rank died or hung after the
meeting), every rank that is still there reports in (``failed``, ``failed_n``) and waits up to
``REPORT_S`` for the others; the ranks that never report are the ones named as gone, and rank 0
waits, bounded, until the others have read the reports.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any

from inspector.rpc._errors import JobGatherError
from inspector.rpc._rendezvous import Backoff

LINGER_S = 10.0  # how long rank 0 waits for the others to read a verdict
REPORT_S = 5.0  # after a failed collective, how long the ranks wait for each other to report in
KEYS = ("arrived", "arrived_n", "verdict", "acks")


class _StoreLost(Exception):
    """A store call failed: the host of the store is gone."""


class Meeting:
    """One gather's meeting of ``world_size`` ranks in ``store`` (NOTE [ Gather protocol ])."""

    def __init__(self, store: Any, rank: int, world_size: int, number: int, timeout: float, where: str) -> None:
        import torch.distributed as dist

        attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
        self.prefix = f"inspector_gather/{attempt}/{number}/"
        self.store = dist.PrefixStore(self.prefix, store)
        self.rank, self.world_size, self.timeout, self.where = rank, world_size, timeout, where

    def _op(self, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except RuntimeError as exc:  # torch's DistError family
            raise _StoreLost(str(exc).partition("\n")[0]) from exc

    def _arrived(self) -> list[int]:
        if not self._op(self.store.check, ["arrived"]):
            return []
        text = self._op(self.store.get, "arrived").decode()
        return sorted({int(part) for part in text.split(",") if part.strip().isdigit()})

    def _verdict(self) -> dict[str, Any] | None:
        if not self._op(self.store.check, ["verdict"]):
            return None
        return dict(json.loads(self._op(self.store.get, "verdict")))

    def meet(self, deadline: float) -> None:
        """Return once every rank came; raise ``JobGatherError`` naming the ranks that did not by ``deadline``."""
        try:
            self._meet(deadline)
        except _StoreLost as exc:
            note = f"note = lost {self.where} ({exc}): the process that hosts it (rank 0, or torchrun's agent) is gone"
            raise JobGatherError([0], [self.rank], self.timeout, self.where, note) from None

    def _meet(self, deadline: float) -> None:
        verdict = self._verdict()
        if verdict is not None:  # this rank comes after the others gave up
            self._raise(verdict, late=True)
        self._op(self.store.append, "arrived", f"{self.rank},")  # type: ignore[attr-defined]  # in torch, not its stub
        self._op(self.store.add, "arrived_n", 1)
        backoff = Backoff()
        while True:
            verdict = self._verdict()
            if verdict is not None:
                self._raise(verdict)
            if int(self._op(self.store.add, "arrived_n", 0)) >= self.world_size:
                return
            if time.monotonic() >= deadline:
                arrived = self._arrived()
                missing = [rank for rank in range(self.world_size) if rank not in arrived]
                mine = json.dumps({"rank": self.rank, "missing": missing, "arrived": arrived})
                self._raise(json.loads(self._op(self.store.compare_set, "verdict", "", mine)))
            backoff.sleep()

    def _raise(self, verdict: dict[str, Any], late: bool = False) -> None:
        missing, arrived = list(verdict.get("missing", [])), list(verdict.get("arrived", []))
        if late:
            note = (
                f"note = this rank (rank {self.rank}) called gather after rank {verdict.get('rank')} had given up "
                "waiting for the ranks above"
            )
        else:
            note = f"note = rank {verdict.get('rank')} gave up first; every rank that called gather raised this"
            self._op(self.store.add, "acks", 1)
            if self.rank == 0:
                self._linger(len(arrived))
        raise JobGatherError(missing, arrived, self.timeout, self.where, note)

    def _linger(self, arrived: int) -> None:
        """As rank 0, wait (bounded) until the other ranks that came have read the verdict."""
        until = time.monotonic() + min(LINGER_S, self.timeout)
        backoff = Backoff()
        while int(self._op(self.store.add, "acks", 0)) < arrived and time.monotonic() < until:
            backoff.sleep()

    def gone_after_failure(self, wait_s: float = REPORT_S) -> list[int] | None:
        """After a failed collective, the ranks that did not report in within ``wait_s``; ``None`` when the
        store is gone with its host (NOTE [ Gather protocol ])."""
        try:
            self._op(self.store.append, "failed", f"{self.rank},")  # type: ignore[attr-defined]
            self._op(self.store.add, "failed_n", 1)
            until = time.monotonic() + wait_s
            backoff = Backoff()
            while int(self._op(self.store.add, "failed_n", 0)) < self.world_size and time.monotonic() < until:
                backoff.sleep()
            text = self._op(self.store.get, "failed").decode()
            reported = sorted({int(part) for part in text.split(",") if part.strip().isdigit()})
            self._op(self.store.add, "failed_read", 1)
            if self.rank == 0:
                until = time.monotonic() + 2 * wait_s
                while int(self._op(self.store.add, "failed_read", 0)) < len(reported) and time.monotonic() < until:
                    backoff.sleep()
        except _StoreLost:
            return None
        return [rank for rank in range(self.world_size) if rank not in reported]

    def forget(self) -> None:
        """Delete this meeting's keys (rank 0, once the collective has finished: no rank reads them any more)."""
        for key in KEYS:
            try:
                self.store.delete_key(key)
            except RuntimeError:
                return
