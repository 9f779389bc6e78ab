"""The three parts of a job's view: each rank's SDPA backends, loader and environment, compared.

Each reads a comparison of ``_job_compare`` (NOTE [ What differs across a job ]) and shows
itself as a short ``repr``, as HTML (``_repr_html_``) and as a DataFrame (``to_frame()``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inspector._display import html_table
from inspector.rpc._job_compare import (
    EnvironmentDifference,
    LoaderSpread,
    SignatureBackends,
    environment_differences,
    environment_keys,
    loader_spread,
    ranks_text,
    sdpa_signatures,
    shown,
    signature_of,
    signature_text,
)

SDPA_COLUMNS = [
    "rank",
    "backend",
    "count",
    "dtype",
    "shapes",
    "causal",
    "dropout_p",
    "mask",
    "grad",
    "enabled",
    "module",
    "answered_by",
    "device",
    "capability",
    "differs",
]
LOADER_COLUMNS = [
    "rank",
    "loader",
    "batches",
    "batch_s_median",
    "wait_s_median",
    "data_wait_share",
    "verdict",
    "batches_per_s",
    "mb_per_s",
    "first_batch_s",
    "busy_machine",
    "role",
]


def duration(seconds: float) -> str:
    """Seconds as a person reads them: ``1.23 s``, ``82.1 ms``, ``5.2 µs``."""
    if seconds >= 1:
        return f"{seconds:.3g} s"
    return f"{seconds * 1e3:.3g} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.3g} µs"


def ratio_text(ratio: float) -> str:
    return "∞" if ratio == float("inf") else f"{ratio:,.1f}x" if ratio >= 10 else f"{ratio:.2f}x"


def to_frame(rows: list[dict[str, Any]], columns: list[str], what: str) -> Any:
    """``rows`` as a pandas DataFrame, for the parts' ``to_frame()`` (pandas is imported here only)."""
    try:
        import pandas as pd
    except ImportError as exc:
        raise ImportError(f"{what}.to_frame() needs pandas: pip install 'dispatch-inspector[ui]'") from exc
    return pd.DataFrame(rows, columns=columns)


class JobSdpa:
    """Which SDPA backend each rank ran for each call signature, and the ranks that ran another one."""

    def __init__(self, records: Mapping[int, Mapping[str, Any]]) -> None:
        self.records = dict(sorted(records.items()))
        self.signatures: tuple[SignatureBackends, ...] = sdpa_signatures(self.records)

    @property
    def ranks(self) -> tuple[int, ...]:
        return tuple(self.records)

    @property
    def differences(self) -> tuple[SignatureBackends, ...]:
        """The signatures for which some rank ran another backend than most ranks did."""
        return tuple(s for s in self.signatures if s.odd)

    @property
    def odd_ranks(self) -> tuple[int, ...]:
        """Every rank named in a difference."""
        return tuple(sorted({rank for s in self.differences for rank, _ in s.odd}))

    def findings(self) -> list[str]:
        lines = [line for s in self.differences for line in s.findings()]
        versions: dict[int, list[int]] = {}
        for rank, record in self.records.items():
            versions.setdefault(record["version"], []).append(rank)
        if len(versions) > 1:  # a version 1 record has no devices: its calls match only other version 1 records
            lines.append(
                "the ranks sent SDPA records of different versions ("
                + ", ".join(f"{version} from {ranks_text(ranks)}" for version, ranks in sorted(versions.items()))
                + "), so some "
                "calls may not be compared: run one inspector version on every rank"
            )
        for rank, record in self.records.items():
            if record["folded_groups"]:
                lines.append(
                    f"rank {rank} sent its first {len(record['groups'])} groups; {record['folded_groups']} "
                    f"more ({record['folded_calls']:,} calls) were counted, not compared"
                )
        return lines

    def rows(self) -> list[dict[str, Any]]:
        odd = {(rank, s.signature) for s in self.differences for rank, _ in s.odd}
        return [
            {
                "rank": rank,
                **{k: g.get(k, "") for k in SDPA_COLUMNS[1:-1]},
                "differs": (rank, signature_text(signature_of(g))) in odd,
            }
            for rank, record in self.records.items()
            for g in record["groups"]
        ]

    def to_frame(self) -> Any:
        """One row per rank and group of its watch; ``differs`` marks a rank that ran another backend."""
        return to_frame(self.rows(), SDPA_COLUMNS, "JobSdpa")

    def __repr__(self) -> str:
        head = f"<JobSdpa: {len(self.records)} rank(s), {len(self.signatures)} call signature(s)"
        found = self.findings()
        return head + (": " + "; ".join(found) if found else ", the same backends on every rank") + ">"

    def _repr_html_(self) -> str:
        rows = [
            (
                s.signature,
                s.usual_text,
                ", ".join(map(str, s.usual_ranks)),
                "; ".join(f"rank {r}: {'/'.join(b)}" for r, b in s.odd) or "—",
                ", ".join(f"{r}: {n:,}" for r, n in s.calls),
            )
            for s in self.signatures
        ]
        head = ["call signature", "backend (most ranks)", "those ranks", "other ranks ran", "calls by rank"]
        return html_table(head, rows, f"SDPA backends across {len(self.records)} rank(s)", css_class="inspector-job")


class JobLoader:
    """Each rank's loader profile, and the slowest and fastest ranks with their ratio."""

    def __init__(self, records: Mapping[int, Mapping[str, Any]]) -> None:
        self.records = dict(sorted(records.items()))
        self.spread: LoaderSpread | None = loader_spread(self.records)

    slowest = property(lambda self: None if self.spread is None else self.spread.slowest)
    fastest = property(lambda self: None if self.spread is None else self.spread.fastest)
    ratio = property(lambda self: None if self.spread is None else self.spread.ratio)
    straggler = property(lambda self: None if self.spread is None else self.spread.straggler)

    def findings(self) -> list[str]:
        s = self.spread
        if s is None:
            return []
        slow, fast = duration(s.figure(s.slowest)), duration(s.figure(s.fastest))
        if s.straggler is not None:
            return [
                f"rank {s.slowest} is the straggler: its {s.metric_text} is {slow}, {ratio_text(s.ratio)} "
                f"rank {s.fastest}'s ({fast})"
            ]
        return [
            f"the loaders agree: {s.metric_text} from {fast} (rank {s.fastest}) to {slow} (rank {s.slowest}), "
            f"{ratio_text(s.ratio)}"
        ]

    def rows(self) -> list[dict[str, Any]]:
        def role(rank: int) -> str:
            if self.spread is None:
                return ""
            return (
                "straggler"
                if rank == self.straggler
                else "slowest"
                if rank == self.slowest
                else ("fastest" if rank == self.fastest else "")
            )

        return [
            {"rank": rank, "loader": r["label"], **{k: r[k] for k in LOADER_COLUMNS[2:-1]}, "role": role(rank)}
            for rank, r in self.records.items()
        ]

    def to_frame(self) -> Any:
        """One row per rank: its loader's figures (seconds), verdict and role (straggler, slowest, fastest)."""
        return to_frame(self.rows(), LOADER_COLUMNS, "JobLoader")

    def __repr__(self) -> str:
        found = self.findings()
        return f"<JobLoader: {len(self.records)} rank(s)" + (": " + found[0] if found else "") + ">"

    def _repr_html_(self) -> str:
        def took(seconds: float | None) -> str:
            return "" if seconds is None else duration(seconds)

        rows = [
            (
                r["rank"],
                r["loader"],
                r["batches"],
                took(r["batch_s_median"]),
                took(r["wait_s_median"]),
                "" if r["data_wait_share"] is None else f"{r['data_wait_share']:.0%}",
                r["verdict"] or "",
                r["role"],
            )
            for r in self.rows()
        ]
        head = [
            "rank",
            "loader",
            "batches",
            "per batch (median)",
            "wait for data (median)",
            "waiting",
            "verdict",
            "role",
        ]
        caption = "; ".join(self.findings()) or f"loaders of {len(self.records)} rank(s)"
        return html_table(head, rows, caption, css_class="inspector-job")


class JobEnvironment:
    """Each rank's torch, CUDA, cuDNN, GPU, SDPA flags and ``INSPECTOR_OPS``, and the keys that differ."""

    def __init__(self, values: Mapping[int, Mapping[str, Any]]) -> None:
        self.values = {rank: dict(v) for rank, v in sorted(values.items())}
        self.differences: tuple[EnvironmentDifference, ...] = environment_differences(self.values)

    @property
    def differing_keys(self) -> tuple[str, ...]:
        return tuple(d.key for d in self.differences)

    def findings(self) -> list[str]:
        return [
            f"{d.key} differs: " + ", ".join(f"{value} on {ranks_text(ranks)}" for value, ranks in d.values)
            for d in self.differences
        ]

    def to_frame(self) -> Any:
        """One row per rank, one column per key; ``frame.attrs["differing"]`` lists the keys that differ."""
        keys = environment_keys(self.values)
        frame = to_frame([{"rank": rank, **v} for rank, v in self.values.items()], ["rank", *keys], "JobEnvironment")
        frame.attrs["differing"] = list(self.differing_keys)
        return frame

    def __repr__(self) -> str:
        found = self.findings()
        return (
            f"<JobEnvironment: {len(self.values)} rank(s)"
            + (": " + "; ".join(found) if found else ", the same on every rank")
            + ">"
        )

    def _repr_html_(self) -> str:
        ranks = list(self.values)
        differing = set(self.differing_keys)
        rows = [
            ((f"⚠ {key}" if key in differing else key), *(shown(self.values[r].get(key)) for r in ranks))
            for key in environment_keys(self.values)
        ]
        caption = f"environment of {len(ranks)} rank(s); ⚠ marks a key that differs"
        return html_table(["key", *(f"rank {r}" for r in ranks)], rows, caption, css_class="inspector-job")
