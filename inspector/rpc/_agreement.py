"""What every rank of a job must agree on before it starts, checked over the ranks' arrival records.

Each rank publishes, with its arrival, the settings that must be the same on every rank:
the join protocol's version and the world size. A rank given a smaller ``WORLD_SIZE``
than the others would otherwise see "everyone arrived" early, leave the join guard and wait
in torch's own rendezvous for torch's full bound, while the others wait for ranks that do not
exist. ``disagreement`` words what differs, the same way on every rank, so every rank can
raise the same ``RendezvousConfigError``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from inspector._messages import Message
from inspector.rpc._errors import SHOWN, first_few

PROTOCOL = 1  # the join protocol's version: records of another version are not read field by field

# (record key, what it is called in the message, the next step when ranks differ on it)
AGREED = (
    ("protocol", "the inspector's join protocol", "install the same inspector version on every node"),
    ("world_size", "the world size", "give every process the same WORLD_SIZE (world_size=) and start that many"),
)


def agreement_fields(world_size: int) -> dict[str, Any]:
    """The fields a rank adds to its arrival record."""
    return {"protocol": PROTOCOL, "world_size": world_size}


def disagreement(arrivals: Mapping[int, Mapping[str, Any]], address: str) -> str | None:
    """The message every rank raises when the arrived ranks disagree, or more ranks arrived than the world holds."""
    ranks = sorted(arrivals)
    for key, label, next_step in AGREED:
        said: dict[str, list[int]] = {}
        for rank in ranks:
            said.setdefault(json.dumps(arrivals[rank].get(key)), []).append(rank)
        if len(said) > 1:
            parts = [
                f"ranks {first_few(group)} ({_names(arrivals, group)}) say {value}"
                for value, group in sorted(said.items(), key=lambda item: item[1])
            ]
            return str(Message(f"The ranks at {address} disagree on {label}: {'; '.join(parts)}.", next_step=next_step))
    world = arrivals[ranks[0]].get("world_size") if ranks else None
    beyond = [rank for rank in ranks if isinstance(world, int) and rank >= world]
    if beyond:
        message = Message(
            f"{len(ranks)} ranks arrived at {address} for world size {world}: ranks {first_few(beyond)} "
            f"({_names(arrivals, beyond)}) are beyond it.",
            next_step="give each process a distinct RANK below WORLD_SIZE, and start WORLD_SIZE processes",
        )
        return str(message)
    return None


def _names(arrivals: Mapping[int, Mapping[str, Any]], ranks: list[int]) -> str:
    names = [str(arrivals[rank].get("name")) for rank in ranks]
    more = len(names) - SHOWN
    return ", ".join(names[:SHOWN]) + (f" and {more:,} more" if more > 0 else "")
