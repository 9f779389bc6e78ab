"""The job-wide comparisons, pure functions of the ranks' checked records: SDPA backends, loaders, environments.

NOTE [ What differs across a job ]
Rank 0 holds one checked record per kind from every rank (NOTE [ Job records ]); each
comparison reads only those plain records.

* SDPA: a call *signature* is what PyTorch's choice reads that a model fixes (dtype, shapes,
  causal, dropout, mask, grad), not the enable flags: a rank steered to another backend (by
  ``sdpa_kernel``, ``op_backend`` or a flag) has different flags for the same call, and that rank
  is the one to name. For each signature seen on two ranks or more, the set of backends each rank
  ran is compared; the set most ranks share is the usual one (the lowest rank's on a tie) and
  every other rank is named with what it ran.
* Loader: ranks are ranked by their median wait for data per step when every rank timed a step
  (in a synchronised job every step waits for the slowest rank, so only the wait finds the rank
  that makes the others wait), else by their median time per batch. The slowest and fastest
  ranks are named with the ratio; the slowest is the *straggler* when the ratio reaches
  ``STRAGGLER_RATIO``.
* Environment: every key but the identity keys (host, process, local rank, visible devices)
  should agree; a key that does not is listed with each value and the ranks that had it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from inspector.rpc._job_environment import IDENTITY

STRAGGLER_RATIO = 1.25
MISSING = "(not reported)"


# -- SDPA -------------------------------------------------------------------------------------------
def signature_of(group: Mapping[str, Any]) -> tuple[Any, ...]:
    """What a group's calls share across ranks (NOTE [ What differs across a job ])."""
    if not group["shapes"]:  # a native fast path, or calls the inspector could not read
        return ("other", group["backend"], group["module"])
    return ("call", group["dtype"], group["shapes"], group["causal"], group["dropout_p"], group["mask"], group["grad"])


def signature_text(signature: tuple[Any, ...]) -> str:
    if signature[0] == "other":
        _, backend, module = signature
        return f"{backend} in {module}" if module else str(backend)
    _, dtype, shapes, causal, dropout, mask, grad = signature
    parts = [dtype, shapes]
    if causal:
        parts.append("causal")
    if dropout:
        parts.append(f"dropout {dropout:g}")
    if mask:
        parts.append(f"mask {mask}")
    if grad:
        parts.append("grad")
    return " ".join(part for part in parts if part)


@dataclass(frozen=True)
class SignatureBackends:
    """One call signature: the backends each rank ran for it (most calls first) and its calls there."""

    signature: str
    backends: tuple[tuple[int, tuple[str, ...]], ...]
    calls: tuple[tuple[int, int], ...]
    usual: tuple[str, ...]
    odd: tuple[tuple[int, tuple[str, ...]], ...]  # the ranks that ran something else, with what

    @property
    def usual_ranks(self) -> tuple[int, ...]:
        return tuple(rank for rank, ran in self.backends if ran == self.usual)


def sdpa_signatures(records: Mapping[int, Mapping[str, Any]]) -> tuple[SignatureBackends, ...]:
    """Every signature any rank saw, the most-called first, with each rank's backends (ranks in order)."""
    ran: dict[tuple[Any, ...], dict[int, Counter[str]]] = {}
    for rank in sorted(records):
        for group in records[rank]["groups"]:
            ran.setdefault(signature_of(group), {}).setdefault(rank, Counter())[group["backend"]] += group["count"]
    found = []
    for key, by_rank in ran.items():
        backends = tuple((rank, tuple(sorted(c, key=lambda b: (-c[b], b)))) for rank, c in by_rank.items())
        shared = Counter(frozenset(names) for _, names in backends)
        top = max(shared.values())
        usual = next(names for _, names in backends if shared[frozenset(names)] == top)
        odd = tuple((rank, names) for rank, names in backends if frozenset(names) != frozenset(usual))
        calls = tuple((rank, sum(c.values())) for rank, c in by_rank.items())
        found.append(SignatureBackends(signature_text(key), backends, calls, usual, odd))
    return tuple(sorted(found, key=lambda s: -sum(n for _, n in s.calls)))


# -- loader ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LoaderSpread:
    """The slowest and fastest ranks' loaders: by which figure, each rank's figure, and the ratio."""

    metric: str  # "wait_s_median" or "batch_s_median"
    figures: tuple[tuple[int, float], ...]
    slowest: int
    fastest: int
    ratio: float

    @property
    def metric_text(self) -> str:
        return "median wait for data per step" if self.metric == "wait_s_median" else "median time per batch"

    @property
    def straggler(self) -> int | None:
        """The slowest rank, when it is at least ``STRAGGLER_RATIO`` times the fastest; else None."""
        return self.slowest if self.ratio >= STRAGGLER_RATIO else None

    def figure(self, rank: int) -> float:
        return dict(self.figures)[rank]


def loader_spread(records: Mapping[int, Mapping[str, Any]]) -> LoaderSpread | None:
    """The spread of the ranks' loaders (NOTE [ What differs across a job ]); None with fewer than two figures."""
    waits = all(r["wait_s_median"] is not None for r in records.values())
    metric = "wait_s_median" if waits else "batch_s_median"
    figures = tuple((rank, float(records[rank][metric])) for rank in sorted(records)
                    if records[rank][metric] is not None)  # fmt: skip
    if len(figures) < 2:
        return None
    slowest = max(figures, key=lambda f: (f[1], -f[0]))
    fastest = min(figures, key=lambda f: (f[1], f[0]))
    ratio = slowest[1] / fastest[1] if fastest[1] > 0 else (1.0 if slowest[1] == 0 else float("inf"))
    return LoaderSpread(metric, figures, slowest[0], fastest[0], ratio)


# -- environment -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EnvironmentDifference:
    """A key the ranks do not agree on: each value (as shown) with the ranks that had it, most ranks first."""

    key: str
    values: tuple[tuple[str, tuple[int, ...]], ...]


def shown(value: Any) -> str:
    return MISSING if value is MISSING else repr(value) if isinstance(value, str) else str(value)


def environment_keys(values: Mapping[int, Mapping[str, Any]]) -> list[str]:
    """Every key any rank reported, in the order first seen."""
    return list(dict.fromkeys(key for rank in sorted(values) for key in values[rank]))


def environment_differences(values: Mapping[int, Mapping[str, Any]]) -> tuple[EnvironmentDifference, ...]:
    """Every compared key whose value is not the same on every rank (identity keys are not compared)."""
    found = []
    for key in environment_keys(values):
        if key in IDENTITY:
            continue
        by_value: dict[str, list[int]] = {}
        for rank in sorted(values):
            by_value.setdefault(shown(values[rank].get(key, MISSING)), []).append(rank)
        if len(by_value) > 1:
            ordered = sorted(by_value.items(), key=lambda item: (-len(item[1]), item[1][0]))
            found.append(EnvironmentDifference(key, tuple((text, tuple(ranks)) for text, ranks in ordered)))
    return tuple(found)


def ranks_text(ranks: Sequence[int]) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {list(ranks)}"
