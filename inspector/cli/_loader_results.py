"""Loader benchmark results from a file: the CSV ``inspector bench loader --out`` writes, or the history.

``inspector report --loader-results FILE`` reads either, so a report written in one process shows a
benchmark measured in another. The file is untrusted input: it must be a regular UTF-8 file of at
most ``MAX_BYTES``, every row must be a loader benchmark row whose values have their types, and
text that reaches the report (layouts, methods, devices, the history's environment) must be what
the benchmark writes, never markup. Anything else is a :class:`UsageError` naming the row and value.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from inspector._messages import Message
from inspector.cli._common import UsageError

MAX_BYTES = 64 << 20
MAX_ROWS = 10_000
HISTORY_RUNS = 5  # the runs shown side by side, as ``inspector bench loader --compare`` does


class LoaderResults(NamedTuple):
    """The rows the Loader section shows, the past runs (None for a CSV of one run), and what was skipped."""

    rows: tuple[Any, ...]
    history: tuple[dict[str, Any], ...] | None
    note: str = ""


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
    data = _read_data(path)
    text = data.decode("utf-8-sig", errors="replace")
    if not text.strip():
        raise UsageError(_explained(f"--loader-results {path} is empty"))
    if text.lstrip().startswith("{"):
        return _from_history(path, data)
    try:
        data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(_explained(f"--loader-results {path} is not UTF-8 text (byte {exc.start})")) from None
    return LoaderResults(tuple(_from_csv(path, text)), None)


NEXT_STEP = (
    "write one with `inspector bench loader --out results.csv`, or pass the history that `inspector bench loader` keeps"
)


def _explained(headline: str) -> str:
    """``headline`` with the next step every unreadable results file gets (one line on the command line)."""
    return Message(headline, next_step=NEXT_STEP).one_line()


def _read_data(path: str) -> bytes:
    """The whole file, read with the history's checks (NOTE [ Reading a history file ]): never a FIFO or device."""
    from inspector.loader.bench.history_file import FileTooLargeError, HistoryFileError, read_bytes

    where = f"--loader-results {path}"
    try:
        data, _ = read_bytes(path, MAX_BYTES, tail=False)
    except FileTooLargeError as exc:
        raise UsageError(
            f"{where} is {exc.size >> 20} MiB; a loader benchmark's results are far smaller "
            f"(at most {MAX_BYTES >> 20} MiB read)"
        ) from None
    except HistoryFileError as exc:
        if exc.reason == "is a folder":
            raise UsageError(f"{where} is a folder; give the CSV or history file") from None
        raise UsageError(f"{where} {exc.reason}; give the CSV or history file") from None
    except OSError as exc:
        raise UsageError(_explained(f"cannot read {where}: {exc.strerror or exc}")) from None
    return data


def bench_row(record: Mapping[Any, Any], where: str) -> Any:
    """A ``BenchRow`` from a CSV record (strings) or a history record (JSON values); ``where`` names it."""
    from inspector.loader.bench.row_check import checked_row

    try:
        return checked_row(record)
    except ValueError as exc:
        text = str(exc)
        raise UsageError(_explained(f"{where}: {text}") if text.startswith("no ") else f"{where}: {text}") from None


def _required() -> tuple[str, ...]:
    from inspector.loader.bench.row_check import required_fields

    return required_fields()


# -- a CSV of one run ------------------------------------------------------------------------
def _from_csv(path: str, text: str) -> list[Any]:
    where = f"--loader-results {path}"
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        header = [name for name in (reader.fieldnames or []) if name is not None]
        missing = [name for name in _required() if name not in header]
        if missing:
            hint = (
                " (it looks like the CSV of another part's benchmark: only `inspector bench loader --out` "
                "writes loader rows)"
                if {"name", "value", "baseline"} <= set(header)
                else ""
            )
            shown = ", ".join(header[:8]) + (", ..." if len(header) > 8 else "")
            columns = f"column{'s' if len(missing) > 1 else ''}"
            headline = f"{where} is not a loader benchmark CSV: no {', '.join(missing)} {columns}"
            raise UsageError(_explained(f"{headline} (its header: {shown or 'none'}){hint}"))
        rows: list[Any] = []
        for number, record in enumerate(reader, start=2):
            if len(rows) >= MAX_ROWS:
                raise UsageError(f"{where} has more than {MAX_ROWS} rows; a loader benchmark writes a few dozen")
            if None in record:
                raise UsageError(f"{where}: line {number} has more fields than the header")
            rows.append(bench_row(record, f"{where}, line {number}"))
    except csv.Error as exc:
        raise UsageError(_explained(f"{where} is not a readable CSV ({exc})")) from None
    if not rows:
        raise UsageError(_explained(f"{where} holds a header but no rows"))
    return rows


# -- the JSON-lines history ------------------------------------------------------------------
def _from_history(path: str, data: bytes) -> LoaderResults:
    """The history's last runs, read as ``inspector bench loader --compare`` reads them (one reader for both)."""
    from inspector.loader.bench.history_file import KeptRuns, parse_history

    where = f"--loader-results {path}"
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    runs, skipped = parse_history(data, "loader")
    if not runs:
        try:
            json.loads(data.decode("utf-8"))
        except (ValueError, RecursionError):
            pass
        else:
            if data.strip().count(b"\n"):
                shape = "one run per line, as `inspector bench loader` keeps them"
                headline = f"{where} is one JSON document, not a loader history ({shape})"
                raise UsageError(_explained(headline))
        kept = KeptRuns((), skipped)
        why = f" ({kept.note()})" if skipped else ""
        raise UsageError(_explained(f"{where} holds no loader runs{why}"))
    shown = runs[-HISTORY_RUNS:]
    if sum(len(run["rows"]) for run in shown) > MAX_ROWS:
        raise UsageError(f"{where} has more than {MAX_ROWS} rows in its last {len(shown)} runs")
    from inspector.loader.bench import BenchRow

    with_rows = [run for run in shown if run["rows"]]
    rows = tuple(BenchRow(**row) for row in with_rows[-1]["rows"]) if with_rows else ()
    return LoaderResults(rows, tuple(shown), KeptRuns((), skipped).note())
