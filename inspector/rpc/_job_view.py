"""The job-wide view rank 0 gets from ``gather``: every rank's SDPA backends, loader and environment, side by side.

``JobView`` holds each rank's checked records (plain data) and reads three comparisons from
them (NOTE [ What differs across a job ] in ``_job_compare``): ``sdpa`` (the ranks that ran
another backend for the same call signature), ``loader`` (the slowest and fastest ranks, with
their ratio) and ``environment`` (the keys whose values differ). Each shows itself as a short
``repr``, as HTML (``_repr_html_``) and as a DataFrame (``to_frame()``); the RPC page and the
report show the same (``inspector.views.rpc``).
"""

from __future__ import annotations

import html
import os
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import Any

from inspector._display import html_table
from inspector._job_records import ENVIRONMENT, LOADER, SDPA, RecordProblem, count, fields, listed, text
from inspector._messages import Message
from inspector.rpc._errors import JobViewError
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
from inspector.rpc._job_payload import check_records, parse, read_bounded

VIEW_FORMAT = "inspector.job.view"
VIEW_VERSION = 1
MAX_WORLD = 1 << 20
MAX_VIEW_BYTES = 256 << 20  # 4,096 ranks of full records
VIEW_DEPTH = 10  # a view holds ranks, each holding what a payload does
SDPA_COLUMNS = ["rank", "backend", "count", "dtype", "shapes", "causal", "dropout_p", "mask", "grad", "enabled",
                "module", "answered_by", "device", "capability", "differs"]  # fmt: skip
LOADER_COLUMNS = ["rank", "loader", "batches", "batch_s_median", "wait_s_median", "data_wait_share", "verdict",
                  "batches_per_s", "mb_per_s", "first_batch_s", "busy_machine", "role"]  # fmt: skip


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
            lines.append("the ranks sent SDPA records of different versions (" + ", ".join(
                f"{version} from {ranks_text(ranks)}" for version, ranks in sorted(versions.items())) + "), so some "
                "calls may not be compared: run one inspector version on every rank")  # fmt: skip
        for rank, record in self.records.items():
            if record["folded_groups"]:
                lines.append(f"rank {rank} sent its first {len(record['groups'])} groups; {record['folded_groups']} "
                             f"more ({record['folded_calls']:,} calls) were counted, not compared")  # fmt: skip
        return lines

    def rows(self) -> list[dict[str, Any]]:
        odd = {(rank, s.signature) for s in self.differences for rank, _ in s.odd}
        return [{"rank": rank, **{k: g.get(k, "") for k in SDPA_COLUMNS[1:-1]},
                 "differs": (rank, signature_text(signature_of(g))) in odd}
                for rank, record in self.records.items() for g in record["groups"]]  # fmt: skip

    def to_frame(self) -> Any:
        """One row per rank and group of its watch; ``differs`` marks a rank that ran another backend."""
        return to_frame(self.rows(), SDPA_COLUMNS, "JobSdpa")

    def __repr__(self) -> str:
        head = f"<JobSdpa: {len(self.records)} rank(s), {len(self.signatures)} call signature(s)"
        found = self.findings()
        return head + (": " + "; ".join(found) if found else ", the same backends on every rank") + ">"

    def _repr_html_(self) -> str:
        rows = [(s.signature, s.usual_text, ", ".join(map(str, s.usual_ranks)),
                 "; ".join(f"rank {r}: {'/'.join(b)}" for r, b in s.odd) or "—",
                 ", ".join(f"{r}: {n:,}" for r, n in s.calls)) for s in self.signatures]  # fmt: skip
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
            return [f"rank {s.slowest} is the straggler: its {s.metric_text} is {slow}, {ratio_text(s.ratio)} "
                    f"rank {s.fastest}'s ({fast})"]  # fmt: skip
        return [f"the loaders agree: {s.metric_text} from {fast} (rank {s.fastest}) to {slow} (rank {s.slowest}), "
                f"{ratio_text(s.ratio)}"]  # fmt: skip

    def rows(self) -> list[dict[str, Any]]:
        def role(rank: int) -> str:
            if self.spread is None:
                return ""
            return "straggler" if rank == self.straggler else "slowest" if rank == self.slowest else (
                "fastest" if rank == self.fastest else "")

        return [{"rank": rank, "loader": r["label"], **{k: r[k] for k in LOADER_COLUMNS[2:-1]}, "role": role(rank)}
                for rank, r in self.records.items()]  # fmt: skip

    def to_frame(self) -> Any:
        """One row per rank: its loader's figures (seconds), verdict and role (straggler, slowest, fastest)."""
        return to_frame(self.rows(), LOADER_COLUMNS, "JobLoader")

    def __repr__(self) -> str:
        found = self.findings()
        return f"<JobLoader: {len(self.records)} rank(s)" + (": " + found[0] if found else "") + ">"

    def _repr_html_(self) -> str:
        def took(seconds: float | None) -> str:
            return "" if seconds is None else duration(seconds)

        rows = [(r["rank"], r["loader"], r["batches"], took(r["batch_s_median"]), took(r["wait_s_median"]),
                 "" if r["data_wait_share"] is None else f"{r['data_wait_share']:.0%}", r["verdict"] or "", r["role"])
                for r in self.rows()]  # fmt: skip
        head = ["rank", "loader", "batches", "per batch (median)", "wait for data (median)", "waiting", "verdict",
                "role"]  # fmt: skip
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
        return [f"{d.key} differs: " + ", ".join(f"{value} on {ranks_text(ranks)}" for value, ranks in d.values)
                for d in self.differences]  # fmt: skip

    def to_frame(self) -> Any:
        """One row per rank, one column per key; ``frame.attrs["differing"]`` lists the keys that differ."""
        keys = environment_keys(self.values)
        frame = to_frame([{"rank": rank, **v} for rank, v in self.values.items()], ["rank", *keys], "JobEnvironment")
        frame.attrs["differing"] = list(self.differing_keys)
        return frame

    def __repr__(self) -> str:
        found = self.findings()
        return f"<JobEnvironment: {len(self.values)} rank(s)" + (": " + "; ".join(found) if found else
                                                                  ", the same on every rank") + ">"  # fmt: skip

    def _repr_html_(self) -> str:
        ranks = list(self.values)
        differing = set(self.differing_keys)
        rows = [((f"⚠ {key}" if key in differing else key), *(shown(self.values[r].get(key)) for r in ranks))
                for key in environment_keys(self.values)]  # fmt: skip
        caption = f"environment of {len(ranks)} rank(s); ⚠ marks a key that differs"
        return html_table(["key", *(f"rank {r}" for r in ranks)], rows, caption, css_class="inspector-job")


class JobView:
    """What every rank of a job sent to ``gather``, compared: ``sdpa``, ``loader``, ``environment``.

    ``refused`` maps a rank whose records could not be read to why (they are left out of every
    comparison); ``how`` says what carried them.
    """

    def __init__(self, world_size: int, records: Mapping[int, Mapping[str, dict[str, Any]]],
                 refused: Mapping[int, str] | None = None, how: str = "") -> None:  # fmt: skip
        self.world_size = world_size
        self.records = {rank: dict(by_kind) for rank, by_kind in sorted(records.items())}
        self.refused = dict(sorted((refused or {}).items()))
        self.how = how

    def _of(self, kind: str) -> dict[int, dict[str, Any]]:
        return {rank: by_kind[kind] for rank, by_kind in self.records.items() if kind in by_kind}

    @cached_property
    def sdpa(self) -> JobSdpa | None:
        """The ranks' ``watch()`` results compared, or None when no rank sent one."""
        found = self._of(SDPA)
        return JobSdpa(found) if found else None

    @cached_property
    def loader(self) -> JobLoader | None:
        """The ranks' loader profiles compared, or None when no rank sent one."""
        found = self._of(LOADER)
        return JobLoader(found) if found else None

    @cached_property
    def environment(self) -> JobEnvironment:
        return JobEnvironment({rank: record["values"] for rank, record in self._of(ENVIRONMENT).items()})

    @property
    def ranks(self) -> tuple[int, ...]:
        return tuple(self.records)

    def findings(self) -> list[str]:
        """Every difference found, one line each (refused ranks first)."""
        lines = [f"rank {rank}'s records were refused: {why}" for rank, why in self.refused.items()]
        for part in (self.sdpa, self.loader, self.environment):
            if part is not None:
                lines += part.findings()
        return lines

    def to_frame(self) -> Any:
        """One row per rank: host, SDPA calls and backends, loader figure and verdict, the keys it differs on."""
        env = self.environment.values
        differing = self.environment.differences
        rows = []
        for rank, by_kind in self.records.items():
            sdpa, loader = by_kind.get(SDPA), by_kind.get(LOADER)
            backends: dict[str, int] = {}
            for g in (sdpa or {}).get("groups", []):
                backends[g["backend"]] = backends.get(g["backend"], 0) + g["count"]
            odd_keys = [d.key for d in differing if rank not in d.values[0][1]]
            rows.append({"rank": rank, "host": env.get(rank, {}).get("host"), "sdpa calls": sdpa and sdpa["seen"],
                         "sdpa backends": ", ".join(f"{b} x{n:,}" for b, n in backends.items()),
                         "loader s per batch": loader and loader["batch_s_median"],
                         "loader wait s": loader and loader["wait_s_median"],
                         "loader verdict": loader and loader["verdict"],
                         "environment differs on": ", ".join(odd_keys)})  # fmt: skip
        columns = ["rank", "host", "sdpa calls", "sdpa backends", "loader s per batch", "loader wait s",
                   "loader verdict", "environment differs on"]  # fmt: skip
        return to_frame(rows, columns, "JobView")

    def __repr__(self) -> str:
        found = self.findings()
        got = f"{len(self.records)} of {self.world_size} rank(s)"
        lines = [f"<JobView: {got}" + (f", {self.how}" if self.how else "")]
        lines += [f"  {line}" for line in found[:8]] or ["  no differences between the ranks"]
        if len(found) > 8:
            lines.append(f"  ... {len(found) - 8} more")
        return "\n".join(lines) + ">"

    def _repr_html_(self) -> str:
        found = self.findings() or ["no differences between the ranks"]
        items = "".join(f"<li>{html.escape(line)}</li>" for line in found)
        parts = [p._repr_html_() for p in (self.sdpa, self.loader, self.environment) if p is not None]
        title = html.escape(f"Job of {self.world_size} rank(s)" + (f" ({self.how})" if self.how else ""))
        return f"<div class='inspector-job-view'><b>{title}</b><ul>{items}</ul>{''.join(parts)}</div>"

    # -- a view as plain data, and as a file ----------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The view as plain data (what ``from_dict`` and ``load`` read back)."""
        return {"format": VIEW_FORMAT, "version": VIEW_VERSION, "world_size": self.world_size, "how": self.how,
                "ranks": [{"rank": rank, "records": list(by_kind.values())} for rank, by_kind in self.records.items()],
                "refused": [{"rank": rank, "why": why} for rank, why in self.refused.items()]}  # fmt: skip

    @classmethod
    def from_dict(cls, value: Any) -> JobView:
        """A view from plain data, every field and record checked as on receipt; ``JobViewError`` says what is wrong."""
        try:
            return cls._checked(value)
        except RecordProblem as exc:
            message = Message(f"Not a job view: {exc}", next_step="pass what JobView.to_dict() or save() wrote")
            raise JobViewError(message) from None

    @classmethod
    def _checked(cls, value: Any) -> JobView:
        if not isinstance(value, dict) or value.get("format") != VIEW_FORMAT or value.get("version") != VIEW_VERSION:
            raise RecordProblem("view", f"must be an {VIEW_FORMAT} object of version {VIEW_VERSION}")
        rank_entry = fields({"rank": count, "records": lambda v, _p: v})
        refusal = fields({"rank": count, "why": text()})
        view = fields({"format": text(), "version": count, "world_size": count, "how": text(),
                       "ranks": listed(rank_entry, MAX_WORLD), "refused": listed(refusal, MAX_WORLD)})(value, "view")
        world = view["world_size"]
        if not 1 <= world <= MAX_WORLD:
            raise RecordProblem("view.world_size", f"must be within 1 .. {MAX_WORLD}, got {world}")
        records: dict[int, dict[str, dict[str, Any]]] = {}
        for index, entry in enumerate(view["ranks"]):
            rank = entry["rank"]
            if rank >= world or rank in records:
                raise RecordProblem(f"view.ranks[{index}].rank", f"{rank} is a repeated rank or not below {world}")
            records[rank] = check_records(entry["records"], f"view.ranks[{index}].records")
        refused = {}
        for index, entry in enumerate(view["refused"]):
            if entry["rank"] >= world or entry["rank"] in records or entry["rank"] in refused:
                raise RecordProblem(f"view.refused[{index}].rank", "names a rank that is not below world_size, "
                                                                   "or one listed twice")  # fmt: skip
            refused[entry["rank"]] = entry["why"]
        return cls(world, records, refused, view["how"])

    def to_json(self) -> str:
        import json

        return json.dumps(self.to_dict(), allow_nan=False)

    @classmethod
    def from_json(cls, data: str | bytes) -> JobView:
        raw = data.encode() if isinstance(data, str) else data
        try:
            value = parse(raw, MAX_VIEW_BYTES, VIEW_DEPTH)
        except RecordProblem as exc:
            raise JobViewError(Message(f"Not a job view: {exc}", next_step="pass what JobView.save() wrote")) from None
        return cls.from_dict(value)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the view as JSON, atomically (``inspector report --job FILE`` and ``JobView.load`` read it)."""
        from inspector._files import atomic_write_text

        return atomic_write_text(path, self.to_json())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> JobView:
        """A view written by ``save``; a file that is not one (a FIFO, too large, altered) raises ``JobViewError``."""
        try:
            data = read_bounded(path, MAX_VIEW_BYTES)
        except RecordProblem as exc:
            raise JobViewError(Message(f"Cannot read {path}: it {exc.why}", next_step="pass a file JobView.save() "
                                                                                     "wrote")) from None  # fmt: skip
        return cls.from_json(data)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, JobView):
            return NotImplemented
        return (self.world_size, self.records, self.refused, self.how) == (
            other.world_size, other.records, other.refused, other.how)  # fmt: skip

    __hash__ = None  # type: ignore[assignment]
