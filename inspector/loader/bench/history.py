"""Benchmark results kept across runs: one JSON line per run, with its environment, under the user's cache.

The file is ``$INSPECTOR_CACHE_DIR/bench-history.jsonl``, else
``$XDG_CACHE_HOME/inspector/bench-history.jsonl``, else ``~/.cache/inspector/bench-history.jsonl``.
Each run keeps every row it measured (its baselines' rows included), its targets with their
baselines, its settings, an ``id`` and an optional ``label``. Each line is written with one
``write`` on a file opened for appending, so concurrent runs never interleave lines; a label
given later is one more line (``label_run``), so the file is only ever appended to. Reading
follows NOTE [ Reading a history file ] in ``history_file``.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import stat
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from inspector._environment import environment
from inspector._messages import Message
from inspector.loader.bench.history_file import (
    HistoryFileError,
    KeptRuns,
    open_regular,
    parse_history,
    read_bytes,
)
from inspector.loader.bench.row_check import is_plain

FILE_NAME = "bench-history.jsonl"


def history_path() -> Path:
    """Where runs are kept (see the module docstring)."""
    explicit = os.environ.get("INSPECTOR_CACHE_DIR")
    if explicit:
        return Path(explicit) / FILE_NAME
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "inspector" / FILE_NAME


def new_run_id() -> str:
    """A short id that names one run in the history: its start time and four random hex digits."""
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


def record_run(
    part: str,
    rows: Iterable[Any],
    measurements: Iterable[Any] = (),
    *,
    cancelled: bool = False,
    settings: Mapping[str, Any] | None = None,
    label: str = "",
    run_id: str | None = None,
    path: Path | None = None,
) -> dict[str, Any]:
    """Append one run (rows and measurements as dicts, with the environment) to the history; the entry.

    A history path that exists and is not a regular file (a FIFO, a device, a folder) is refused
    with ``HistoryFileError``, never opened for writing; other failures raise ``OSError``.
    """
    check_label(label)
    entry = {
        "id": run_id or new_run_id(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "part": part,
        "label": label,
        "cancelled": cancelled,
        "settings": dict(settings or {}),
        "environment": environment(),
        "rows": [_as_dict(row) for row in rows],
        "measurements": [_as_dict(m) for m in measurements],
    }
    _append(entry, path or history_path())
    return entry


def keep_run(part: str, rows: Iterable[Any], measurements: Iterable[Any] = (), **options: Any) -> str | None:
    """``record_run`` as best effort: None once kept, else one line saying why not (nothing raised).

    A measurement the user asked for must never be lost because the history cannot be written.
    """
    target = options.get("path") or history_path()
    try:
        record_run(part, rows, measurements, **options)
    except HistoryFileError as exc:
        return f"this run was not kept in the history: {exc}"
    except OSError as exc:
        headline = f"this run was not kept in the history ({target}: {exc.strerror or exc})"
        return Message(headline, next_step="point INSPECTOR_CACHE_DIR at a folder you can write to").one_line()
    return None


def label_run(run_id: str, label: str, path: Path | None = None) -> None:
    """Give the kept run ``run_id`` a label (shown with it everywhere); ``KeyError`` naming the ids kept."""
    check_label(label)
    target = path or history_path()
    ids = [run["id"] for run in read_history(last=0, path=target)]
    if run_id not in ids:
        raise KeyError(f"No run {run_id!r} in the history {target}. Known: {ids[-10:]}")
    _append({"kind": "label", "run": run_id, "label": label, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}, target)


def read_history(part: str | None = None, last: int = 5, path: Path | None = None) -> KeptRuns:
    """The last ``last`` runs (of ``part``, when given; all with ``last=0``), oldest first.

    An empty list without a history; lines that cannot be checked are skipped and counted
    (``.skipped``, ``.note()``); a file that cannot be read raises ``HistoryFileError``.
    """
    target = path or history_path()
    try:
        data, tail_only = read_bytes(target)
    except FileNotFoundError:
        return KeptRuns(path=target)
    runs, skipped = parse_history(data, part)
    return KeptRuns(runs[-last:] if last > 0 else runs, skipped, target, tail_only)


def side_by_side(runs: Sequence[Mapping[str, Any]], key: Sequence[str], value: str) -> list[dict[str, Any]]:
    """One record per ``key`` seen in any run, with ``value`` from each run (None where it was not measured).

    Columns are named by run: ``'#1 2026-11-30T10:02'`` (oldest first), with the run's label
    when it has one; pure data, for tables.
    """
    names = [run_name(i, run) for i, run in enumerate(runs)]
    table: dict[tuple[Any, ...], dict[str, Any]] = {}
    for name, run in zip(names, runs, strict=True):
        for row in run.get("rows", []):
            ident = tuple(row.get(k) for k in key)
            record = table.setdefault(ident, {**dict(zip(key, ident, strict=True)), **dict.fromkeys(names)})
            record[name] = row.get(value)
    return list(table.values())


def targets_side_by_side(runs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One record per target seen in any run: ``measurement``, then each run's ``'ours / baseline unit PASS'``
    under its name (``run_name``), empty where the run did not measure it; pure data, for tables."""
    names = [run_name(i, run) for i, run in enumerate(runs)]
    table: dict[str, dict[str, Any]] = {}
    for name, run in zip(names, runs, strict=True):
        for m in run.get("measurements", []):
            record = table.setdefault(m["name"], {"measurement": m["name"], **dict.fromkeys(names, "")})
            value = _short(m["value"])
            if m.get("baseline_value") is not None:
                value += f" / {_short(m['baseline_value'])}"
            verdict = (" PASS" if m.get("ok") else " MISS") if m.get("target") else ""
            record[name] = f"{value} {m['unit']}{verdict}"
    return list(table.values())


def _short(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def run_name(index: int, run: Mapping[str, Any]) -> str:
    """``'#2 2026-11-30T10:02 baseline'``: a run's place (from 1), start time, label, and whether it was cancelled."""
    label = f" {run['label']}" if run.get("label") else ""
    return f"#{index + 1} {str(run.get('time', ''))[:16]}{label}" + (" (cancelled)" if run.get("cancelled") else "")


def check_label(label: str) -> None:
    if not isinstance(label, str) or not is_plain(label):
        raise ValueError(
            f"a run's label is short plain text (at most 200 characters, no markup or quotes), got {label!r}"
        )


def _append(entry: Mapping[str, Any], target: Path) -> None:
    line = (json.dumps(_finite(entry), default=str, separators=(",", ":"), allow_nan=False) + "\n").encode("utf-8")
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):  # refused before it is opened (a FIFO would block)
        raise HistoryFileError(target, "is not a regular file (a FIFO, device, socket or folder)")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = open_regular(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT)  # checked again on the open descriptor
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinity replaced by None (JSON has neither)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def _as_dict(item: Any) -> dict[str, Any]:
    if isinstance(item, Mapping):
        return dict(item)
    as_dict = getattr(item, "as_dict", None)
    if callable(as_dict):
        return dict(as_dict())
    raise TypeError(f"cannot keep {type(item).__name__} in the history (needs as_dict() or a mapping)")
