"""Benchmark results kept across runs: one JSON line per run, with its environment, under the user's cache.

The file is ``$INSPECTOR_CACHE_DIR/bench-history.jsonl``, else
``$XDG_CACHE_HOME/inspector/bench-history.jsonl``, else ``~/.cache/inspector/bench-history.jsonl``.
Each line is written with one ``write`` on a file opened for appending, so concurrent runs never
interleave lines; a line that cannot be parsed (a crash mid-write) is skipped when reading.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from inspector._environment import environment

FILE_NAME = "bench-history.jsonl"


def history_path() -> Path:
    """Where runs are kept (see the module docstring)."""
    explicit = os.environ.get("INSPECTOR_CACHE_DIR")
    if explicit:
        return Path(explicit) / FILE_NAME
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "inspector" / FILE_NAME


def record_run(
    part: str,
    rows: Iterable[Any],
    measurements: Iterable[Any] = (),
    *,
    cancelled: bool = False,
    settings: Mapping[str, Any] | None = None,
    path: Path | None = None,
) -> dict[str, Any]:
    """Append one run (rows and measurements as dicts, with the environment) to the history; the entry."""
    entry = {
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "part": part,
        "cancelled": cancelled,
        "settings": dict(settings or {}),
        "environment": environment(),
        "rows": [_as_dict(row) for row in rows],
        "measurements": [_as_dict(m) for m in measurements],
    }
    target = path or history_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(entry, default=str, separators=(",", ":")) + "\n").encode("utf-8")
    fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)
    return entry


def read_history(part: str | None = None, last: int = 5, path: Path | None = None) -> list[dict[str, Any]]:
    """The last ``last`` runs (of ``part``, when given), oldest first; an empty list without a history."""
    target = path or history_path()
    try:
        lines = target.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    runs = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and (part is None or entry.get("part") == part):
            runs.append(entry)
    return runs[-last:] if last > 0 else runs


def side_by_side(runs: Sequence[Mapping[str, Any]], key: Sequence[str], value: str) -> list[dict[str, Any]]:
    """One record per ``key`` seen in any run, with ``value`` from each run (None where it was not measured).

    Columns are named by run: ``'#1 2026-11-30T10:02'`` (oldest first); pure data, for tables.
    """
    names = [f"#{i + 1} {str(run.get('time', ''))[:16]}" + (" (cancelled)" if run.get("cancelled") else "")
             for i, run in enumerate(runs)]  # fmt: skip
    table: dict[tuple[Any, ...], dict[str, Any]] = {}
    for name, run in zip(names, runs, strict=True):
        for row in run.get("rows", []):
            ident = tuple(row.get(k) for k in key)
            record = table.setdefault(ident, {**dict(zip(key, ident, strict=True)), **dict.fromkeys(names)})
            record[name] = row.get(value)
    return list(table.values())


def _as_dict(item: Any) -> dict[str, Any]:
    if isinstance(item, Mapping):
        return dict(item)
    as_dict = getattr(item, "as_dict", None)
    if callable(as_dict):
        return dict(as_dict())
    raise TypeError(f"cannot keep {type(item).__name__} in the history (needs as_dict() or a mapping)")
