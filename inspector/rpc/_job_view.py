"""The job-wide view rank 0 gets from ``gather``: every rank's SDPA backends, loader and environment, side by side.

``JobView`` holds each rank's checked records (plain data) and reads its three parts from
them (``_job_parts``, NOTE [ What differs across a job ] in ``_job_compare``): ``sdpa`` (the
ranks that ran another backend for the same call signature), ``loader`` (the slowest and
fastest ranks, with their ratio) and ``environment`` (the keys whose values differ). It shows
itself as a short ``repr``, as HTML and as a DataFrame, and saves to and loads from a file;
the RPC page and the report show the same (``inspector.views.rpc``).
"""

from __future__ import annotations

import html
import os
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import Any

from inspector._job_records import ENVIRONMENT, LOADER, SDPA, RecordProblem, count, fields, listed, text
from inspector._messages import Message
from inspector.rpc._errors import JobViewError
from inspector.rpc._job_parts import JobEnvironment, JobLoader, JobSdpa, to_frame
from inspector.rpc._job_payload import check_records, parse, read_bounded

VIEW_FORMAT = "inspector.job.view"
VIEW_VERSION = 1
MAX_WORLD = 1 << 20
MAX_VIEW_BYTES = 256 << 20  # 4,096 ranks of full records
VIEW_DEPTH = 10  # a view holds ranks, each holding what a payload does


class JobView:
    """What every rank of a job sent to ``gather``, compared: ``sdpa``, ``loader``, ``environment``.

    ``refused`` maps a rank whose records could not be read to why (they are left out of every
    comparison); ``how`` says what carried them.
    """

    def __init__(
        self,
        world_size: int,
        records: Mapping[int, Mapping[str, dict[str, Any]]],
        refused: Mapping[int, str] | None = None,
        how: str = "",
    ) -> None:
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
            rows.append(
                {
                    "rank": rank,
                    "host": env.get(rank, {}).get("host"),
                    "sdpa calls": sdpa and sdpa["seen"],
                    "sdpa backends": ", ".join(f"{b} x{n:,}" for b, n in backends.items()),
                    "loader s per batch": loader and loader["batch_s_median"],
                    "loader wait s": loader and loader["wait_s_median"],
                    "loader verdict": loader and loader["verdict"],
                    "environment differs on": ", ".join(odd_keys),
                }
            )
        columns = [
            "rank",
            "host",
            "sdpa calls",
            "sdpa backends",
            "loader s per batch",
            "loader wait s",
            "loader verdict",
            "environment differs on",
        ]
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
        return {
            "format": VIEW_FORMAT,
            "version": VIEW_VERSION,
            "world_size": self.world_size,
            "how": self.how,
            "ranks": [{"rank": rank, "records": list(by_kind.values())} for rank, by_kind in self.records.items()],
            "refused": [{"rank": rank, "why": why} for rank, why in self.refused.items()],
        }

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
        view = fields(
            {
                "format": text(),
                "version": count,
                "world_size": count,
                "how": text(),
                "ranks": listed(rank_entry, MAX_WORLD),
                "refused": listed(refusal, MAX_WORLD),
            }
        )(value, "view")
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
                raise RecordProblem(
                    f"view.refused[{index}].rank", "names a rank that is not below world_size, or one listed twice"
                )
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
            raise JobViewError(
                Message(f"Cannot read {path}: it {exc.why}", next_step="pass a file JobView.save() wrote")
            ) from None
        return cls.from_json(data)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, JobView):
            return NotImplemented
        return (self.world_size, self.records, self.refused, self.how) == (
            other.world_size,
            other.records,
            other.refused,
            other.how,
        )

    __hash__ = None  # type: ignore[assignment]
