"""The job-wide comparisons, pure functions of the ranks' checked records: SDPA backends, loaders, environments.

NOTE [ What differs across a job ]
Rank 0 holds one checked record per kind from every rank (NOTE [ Job records ]); each
comparison reads only those plain records.

* SDPA: a call *signature* is what PyTorch's choice reads that the model fixes: the dtypes, each
  of q, k and v's heads and head dim, causal, whether there is dropout, the mask's kind (its
  dimensions and dtype), grad and the device type. Not the batch or the sequence lengths, which
  differ from rank to rank with the batches each one drew (a watch shows them as ranges), and not
  what the rank's machine or settings add: the enable flags and the GPU's capability. A rank
  steered to another backend (by ``sdpa_kernel``, ``op_backend`` or a flag) or on an older GPU
  makes the same call with other settings, and that rank is the one to name; its flags and GPU
  are shown beside it as the likely reason. For each signature, the set of backends each rank ran
  is compared: the set more than half of those ranks share is the usual one, and every other
  rank is named with what it ran; with no such majority (two ranks that differ, a three-way
  split) no rank can be blamed, and the finding says the ranks disagree and lists each one.
* Loader: ranks are ranked by their median wait for data per step when every rank timed a step
  (in a synchronised job every step waits for the slowest rank, so only the wait finds the rank
  that makes the others wait), else by their median time per batch. The slowest and fastest
  ranks are named with the ratio; the slowest is the *straggler* when the ratio reaches
  ``STRAGGLER_RATIO``.
* Environment: every key but the identity keys (host, process, local rank, visible devices)
  should agree; a key that does not is listed with each value and the ranks that had it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from inspector.rpc._job_environment import IDENTITY

STRAGGLER_RATIO = 1.25
MISSING = "(not reported)"


# -- SDPA -------------------------------------------------------------------------------------------
CALL = re.compile(r"([qkv])\(([^()]*)\)")
MASK = re.compile(r"\(([^()]*)\)\s*(.*)")


def _widths(shapes: str) -> tuple[Any, ...]:
    """q, k and v's sizes with the batch as ``N`` and the sequence lengths as ``L`` (q) and ``S`` (k, v),
    or the text as sent when it does not read as ``q(...) k(...) v(...)``."""
    found = CALL.findall(shapes)
    if len(found) != 3 or [name for name, _ in found] != ["q", "k", "v"]:
        return (shapes,)
    widths = []
    for name, inner in found:
        dims = [d.strip() for d in inner.split(",") if d.strip()]
        n = len(dims)
        widths.append(
            tuple(
                "N" if i == 0 and n >= 3 else ("L" if name == "q" else "S") if i == n - 2 else d
                for i, d in enumerate(dims)
            )
        )
    return tuple(widths)


def _mask_kind(mask: str) -> str:
    """A mask as its kind: dimensions and dtype (``4-D bool``), not its lengths."""
    shape = MASK.fullmatch(mask.strip())
    if shape is None:
        return mask
    dims = [d for d in shape.group(1).split(",") if d.strip()]
    return f"{len(dims)}-D {shape.group(2)}".strip()


def signature_of(group: Mapping[str, Any]) -> tuple[Any, ...]:
    """What a group's calls share across ranks (NOTE [ What differs across a job ])."""
    if not group["shapes"]:  # a native fast path, or calls the inspector could not read
        return ("other", group["backend"], group["module"])
    return (
        "call",
        group["dtype"],
        _widths(group["shapes"]),
        bool(group["causal"]),
        bool(group["dropout_p"]),
        _mask_kind(group["mask"]),
        bool(group["grad"]),
        group.get("device", ""),
    )


def signature_text(signature: tuple[Any, ...]) -> str:
    if signature[0] == "other":
        _, backend, module = signature
        return f"{backend} in {module}" if module else str(backend)
    _, dtype, widths, causal, dropout, mask, grad, device = signature
    shapes = str(widths[0])
    if len(widths) == 3:
        shapes = " ".join(f"{name}({', '.join(w)})" for name, w in zip("qkv", widths, strict=True))
    parts = [dtype, shapes, device]
    if causal:
        parts.append("causal")
    if dropout:
        parts.append("dropout")
    if mask:
        parts.append(f"mask {mask}")
    if grad:
        parts.append("grad")
    return " ".join(part for part in parts if part)


def _backends_text(ran: Sequence[str]) -> str:
    return "/".join(ran)


@dataclass(frozen=True)
class SignatureBackends:
    """One call signature: the backends each rank ran for it (most calls first) and its calls there.

    ``usual`` is what more than half of the ranks that made the call ran, and ``odd`` the other
    ranks with what they ran; with no such majority ``usual`` is empty and ``odd`` holds every rank
    (they disagree, and no rank can be blamed). ``settings`` is, per rank, the enable flags and GPU
    its calls ran with: the usual reason a rank ran something else.
    """

    signature: str
    backends: tuple[tuple[int, tuple[str, ...]], ...]
    calls: tuple[tuple[int, int], ...]
    usual: tuple[str, ...]
    odd: tuple[tuple[int, tuple[str, ...]], ...]
    settings: tuple[tuple[int, str], ...] = ()

    @property
    def usual_ranks(self) -> tuple[int, ...]:
        return tuple(rank for rank, ran in self.backends if self.usual and ran == self.usual)

    @property
    def disagree(self) -> bool:
        """Ranks ran different backends and no backend set has a majority."""
        return bool(self.odd) and not self.usual

    @property
    def usual_text(self) -> str:
        return _backends_text(self.usual) if self.usual else "(no majority)"

    def findings(self) -> list[str]:
        """The ranks that differ, in words, with their flags or GPU where those differ too."""
        setting = dict(self.settings)
        if self.disagree:
            each = [f"rank {rank} ran {_backends_text(ran)}" for rank, ran in self.odd]
            if len({setting.get(rank, "") for rank, _ in self.odd}) > 1:
                each = [f"{text} ({setting.get(rank, '')})" for text, (rank, _) in zip(each, self.odd, strict=True)]
            return [f"the ranks disagree, with no majority, for {self.signature}: " + "; ".join(each)]
        usual_settings = {setting.get(rank, "") for rank in self.usual_ranks}
        by_backends: dict[tuple[str, ...], list[int]] = {}
        for rank, ran in self.odd:
            by_backends.setdefault(ran, []).append(rank)
        lines = []
        for ran, ranks in by_backends.items():
            own = sorted({setting.get(rank, "") for rank in ranks} - usual_settings - {""})
            why = f" ({'; '.join(own)}, against {'; '.join(sorted(usual_settings))})" if own else ""
            lines.append(
                f"{ranks_text(ranks)} ran {_backends_text(ran)}{why} where {ranks_text(self.usual_ranks)} "
                f"ran {self.usual_text}, for {self.signature}"
            )
        return lines


def _setting(group: Mapping[str, Any]) -> str:
    gpu = group.get("capability") or ""
    return f"enabled {group['enabled']}" + (f" on {gpu}" if gpu else "")


def sdpa_signatures(records: Mapping[int, Mapping[str, Any]]) -> tuple[SignatureBackends, ...]:
    """Every signature any rank saw, the most-called first, with each rank's backends (ranks in order)."""
    ran: dict[tuple[Any, ...], dict[int, Counter[str]]] = {}
    settings: dict[tuple[Any, ...], dict[int, set[str]]] = {}
    for rank in sorted(records):
        for group in records[rank]["groups"]:
            key = signature_of(group)
            ran.setdefault(key, {}).setdefault(rank, Counter())[group["backend"]] += group["count"]
            settings.setdefault(key, {}).setdefault(rank, set()).add(_setting(group))
    found = []
    for key, by_rank in ran.items():
        backends = tuple((rank, tuple(sorted(c, key=lambda b: (-c[b], b)))) for rank, c in by_rank.items())
        shared = Counter(frozenset(names) for _, names in backends)
        top, most = shared.most_common(1)[0]
        majority = most * 2 > len(backends)
        usual = next(names for _, names in backends if frozenset(names) == top) if majority else ()
        odd = tuple((rank, names) for rank, names in backends if not majority or frozenset(names) != top)
        if len(shared) == 1:
            odd = ()
        calls = tuple((rank, sum(c.values())) for rank, c in by_rank.items())
        setting = tuple((rank, "; ".join(sorted(settings[key][rank]))) for rank in by_rank)
        found.append(SignatureBackends(signature_text(key), backends, calls, usual, odd, setting))
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
    figures = tuple(
        (rank, float(records[rank][metric])) for rank in sorted(records) if records[rank][metric] is not None
    )
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
