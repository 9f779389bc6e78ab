"""Loader benchmark results from a file: the CSV ``inspector bench loader --out`` writes, or the history.

``inspector report --loader-results FILE`` reads either, so a report written in one process shows a
benchmark measured in another. The file is untrusted input: it must be a regular UTF-8 file of at
most ``MAX_BYTES``, every row must be a loader benchmark row whose values have their types, and
text that reaches the report (layouts, methods, devices, the history's environment) must be what
the benchmark writes, never markup. Anything else is a :class:`UsageError` naming the row and value.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import io
import json
import math
import os
import re
import stat
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from inspector.cli._common import UsageError

MAX_BYTES = 64 << 20
MAX_ROWS = 10_000
HISTORY_RUNS = 5  # the runs shown side by side, as ``inspector bench loader --compare`` does
DEVICE = re.compile(r"cpu|cuda(:\d{1,3})?|mps")
MAX_INTEGER = 2**31 - 1
# What the history's text may not hold: markup, quotes or control characters (a report shows it as is).
NOT_PLAIN = re.compile(r"[<>&\"'\x00-\x1f\x7f]")
MAX_TEXT = 200


class LoaderResults(NamedTuple):
    """The rows the Loader section shows, and the past runs (None when the file was a CSV of one run)."""

    rows: tuple[Any, ...]
    history: tuple[dict[str, Any], ...] | None


def csv_text(rows: Iterable[Mapping[str, Any]]) -> str:
    """Rows (dicts with the same keys) as CSV text, as ``inspector bench --out`` writes them."""
    records = list(rows)
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(records[0]) if records else ["empty"])
    writer.writeheader()
    writer.writerows(records)
    return text.getvalue()


def read_loader_results(path: str) -> LoaderResults:
    """The loader benchmark results in ``path`` (CSV or JSON lines, told apart by the first character)."""
    text = _read_text(path)
    if not text.strip():
        raise UsageError(f"--loader-results {path} is empty; {NEXT_STEP}")
    if text.lstrip().startswith("{"):
        return _from_history(path, text)
    return LoaderResults(tuple(_from_csv(path, text)), None)


NEXT_STEP = ("next step = write one with `inspector bench loader --out results.csv`, or pass the history "
             "that `inspector bench loader` keeps")  # fmt: skip


def _read_text(path: str) -> str:
    where = f"--loader-results {path}"
    try:
        info = os.stat(path)
    except OSError as exc:
        raise UsageError(f"cannot read {where}: {exc.strerror or exc}; {NEXT_STEP}") from None
    if stat.S_ISDIR(info.st_mode):
        raise UsageError(f"{where} is a folder; give the CSV or history file")
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(f"{where} is not a regular file (a device, FIFO or socket); give the CSV or history file")
    if info.st_size > MAX_BYTES:
        raise UsageError(f"{where} is {info.st_size >> 20} MiB; a loader benchmark's results are far smaller "
                         f"(at most {MAX_BYTES >> 20} MiB read)")  # fmt: skip
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"cannot read {where}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{where} is not UTF-8 text (byte {exc.start}); {NEXT_STEP}") from None


# -- one row ---------------------------------------------------------------------------------
def _number(value: Any, *, integer: bool = False) -> float | int:
    if isinstance(value, bool):
        raise ValueError("is a boolean, not a number")
    if isinstance(value, str):
        value = value.strip()
        parsed: float | int = int(value) if integer and re.fullmatch(r"[+-]?\d{1,18}", value) else float(value)
    elif isinstance(value, (int, float)):
        parsed = value
    else:
        raise ValueError("is not a number")
    if not math.isfinite(parsed):
        raise ValueError("is not a finite number")
    if parsed < 0:
        raise ValueError("is negative")
    if integer:
        if parsed != int(parsed):
            raise ValueError("is not a whole number")
        if parsed > MAX_INTEGER:
            raise ValueError(f"is larger than {MAX_INTEGER}")
        return int(parsed)
    return float(parsed)


def _optional_number(value: Any) -> float | None:
    return None if value is None or value == "" else float(_number(value))


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0"):
        return value.strip().lower() in ("true", "1")
    raise ValueError("is not True or False")


def _text(allowed: Callable[[str], bool], known: str) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        if not isinstance(value, str) or not allowed(value.strip()):
            raise ValueError(f"is not one of {known}")
        return value.strip()

    return parse


@functools.cache
def _row_parsers() -> dict[str, Callable[[Any], Any]]:
    from inspector.loader.bench import METHOD_LABELS
    from inspector.loader.bench.peers import LAYOUTS

    by_type: dict[str, Callable[[Any], Any]] = {
        "float": _number, "int": lambda v: _number(v, integer=True), "float | None": _optional_number,
        "bool": _boolean,
    }  # fmt: skip
    text = {
        "layout": _text(lambda v: v in LAYOUTS, ", ".join(LAYOUTS)),
        "method": _text(lambda v: v in METHOD_LABELS, ", ".join(METHOD_LABELS)),
        "device": _text(lambda v: DEVICE.fullmatch(v) is not None, "cpu, cuda or cuda:N"),
    }
    from inspector.loader.bench import BenchRow

    parsers = {}
    for field in dataclasses.fields(BenchRow):
        parser = text.get(field.name) or by_type.get(str(field.type))
        if parser is None:  # a new kind of field: teach this reader before it can mislead anyone
            raise TypeError(f"no reader for BenchRow.{field.name}: {field.type}")
        parsers[field.name] = parser
    return parsers


@functools.cache
def _required() -> tuple[str, ...]:
    from inspector.loader.bench import BenchRow

    return tuple(f.name for f in dataclasses.fields(BenchRow)
                 if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)  # fmt: skip


def bench_row(record: Mapping[Any, Any], where: str) -> Any:
    """A ``BenchRow`` from a CSV record (strings) or a history record (JSON values); ``where`` names it."""
    from inspector.loader.bench import BenchRow

    values = {}
    for name, parse in _row_parsers().items():
        if name not in record:
            continue  # a missing optional field keeps its default; required ones are checked by the caller
        value = record[name]
        if value is None and name in _required():
            raise UsageError(f"{where}: {name} is missing (the row has fewer fields than the header)")
        try:
            values[name] = parse(value)
        except (ValueError, OverflowError) as exc:
            shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
            raise UsageError(f"{where}: {name} {shown} {exc}") from None
    missing = [name for name in _required() if name not in values]
    if missing:
        raise UsageError(f"{where}: no {', '.join(missing)}; {NEXT_STEP}")
    return BenchRow(**values)


# -- a CSV of one run ------------------------------------------------------------------------
def _from_csv(path: str, text: str) -> list[Any]:
    where = f"--loader-results {path}"
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        header = [name for name in (reader.fieldnames or []) if name is not None]
        missing = [name for name in _required() if name not in header]
        if missing:
            hint = (" (it looks like the CSV of another part's benchmark: only `inspector bench loader --out` "
                    "writes loader rows)" if {"name", "value", "baseline"} <= set(header) else "")  # fmt: skip
            shown = ", ".join(header[:8]) + (", ..." if len(header) > 8 else "")
            raise UsageError(f"{where} is not a loader benchmark CSV: no {', '.join(missing)} column"
                             f"{'s' if len(missing) > 1 else ''} (its header: {shown or 'none'}){hint}; "
                             f"{NEXT_STEP}")  # fmt: skip
        rows: list[Any] = []
        for number, record in enumerate(reader, start=2):
            if len(rows) >= MAX_ROWS:
                raise UsageError(f"{where} has more than {MAX_ROWS} rows; a loader benchmark writes a few dozen")
            if None in record:
                raise UsageError(f"{where}: line {number} has more fields than the header")
            rows.append(bench_row(record, f"{where}, line {number}"))
    except csv.Error as exc:
        raise UsageError(f"{where} is not a readable CSV ({exc}); {NEXT_STEP}") from None
    if not rows:
        raise UsageError(f"{where} holds a header but no rows; {NEXT_STEP}")
    return rows


# -- the JSON-lines history ------------------------------------------------------------------
def _from_history(path: str, text: str) -> LoaderResults:
    where = f"--loader-results {path}"
    runs, unreadable = [], 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            entry = json.loads(line, parse_constant=_refuse_constant)
        except (ValueError, RecursionError):  # a line cut short by a crash mid-write is skipped, as the history does
            unreadable += 1
            continue
        if isinstance(entry, dict) and entry.get("part") == "loader" and isinstance(entry.get("rows"), list):
            runs.append(entry)
    if not runs and unreadable:
        try:
            json.loads(text, parse_constant=_refuse_constant)
        except (ValueError, RecursionError):
            pass
        else:
            raise UsageError(f"{where} is one JSON document, not a loader history (one run per line, as "
                             f"`inspector bench loader` keeps them); {NEXT_STEP}")  # fmt: skip
    if not runs:
        lines = f"{unreadable} line{'s' if unreadable != 1 else ''}"
        skipped = f" ({lines} could not be read as JSON)" if unreadable else ""
        raise UsageError(f"{where} holds no loader runs{skipped}; {NEXT_STEP}")
    kept = [_run(entry, f"{where}, run {i + 1} of {len(runs)}") for i, entry in enumerate(runs)][-HISTORY_RUNS:]
    with_rows = [run for run in kept if run["rows"]]
    if sum(len(run["rows"]) for run in kept) > MAX_ROWS:
        raise UsageError(f"{where} has more than {MAX_ROWS} rows in its last {len(kept)} runs")
    from inspector.loader.bench import BenchRow

    rows = tuple(BenchRow(**row) for row in with_rows[-1]["rows"]) if with_rows else ()
    return LoaderResults(rows, tuple(kept))


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _run(entry: Mapping[str, Any], where: str) -> dict[str, Any]:
    """One run of the history, checked: its rows as plain dicts, its time and environment as plain text."""
    rows = entry["rows"]
    if len(rows) > MAX_ROWS:
        raise UsageError(f"{where} has more than {MAX_ROWS} rows")
    checked = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise UsageError(f"{where}, row {i + 1} is not an object")
        checked.append(bench_row(row, f"{where}, row {i + 1}").as_dict())
    given = entry.get("environment")
    environment = {key: _plain(value, f"{where}: environment.{key}")
                   for key, value in (given.items() if isinstance(given, dict) else ()) if _is_plain(key)}  # fmt: skip
    return {"time": _plain(entry.get("time"), f"{where}: time"), "part": "loader",
            "cancelled": entry.get("cancelled") is True, "environment": environment, "rows": checked}  # fmt: skip


def _plain(value: Any, where: str) -> Any:
    """A value shown in the report as it is: a number, a flag, nothing, or short plain text (never markup)."""
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str) and _is_plain(value):
        return value
    raise UsageError(f"{where} is not plain text as inspector writes it; is this a history inspector wrote?")


def _is_plain(text: str) -> bool:
    return len(text) <= MAX_TEXT and NOT_PLAIN.search(text) is None
