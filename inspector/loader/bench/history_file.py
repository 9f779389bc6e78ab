"""Reading the benchmark history back: one reader, with every check, for every place that shows past runs.

NOTE [ Reading a history file ]
The history is a file anyone's process may have written or replaced, and it is read by
``inspector bench loader --compare``, ``inspector report --loader-results``, the Loader tab and
Python. Whatever it holds, a reader returns the runs it could check and a count of what it
skipped, or one ``HistoryFileError`` when the file itself cannot be read:

* it is opened non-blocking and must be a regular file (checked on the open descriptor, so a
  FIFO never blocks and a symlink to ``/dev/zero`` is never read);
* at most ``READ_LIMIT`` bytes are read: a longer history is read from its last ``READ_LIMIT``
  bytes (the newest runs), its first partial line skipped;
* each line is decoded, parsed (NaN, Infinity and nesting too deep for the parser refused) and
  checked field by field on its own (``row_check``): a bad line is skipped, with its line number
  and why, and never hides another run.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inspector._messages import Message
from inspector.loader._errors import LoaderError
from inspector.loader.bench.row_check import checked_measurement, checked_row, plain, printable

READ_LIMIT = 32 << 20
MAX_LINE_BYTES = 4 << 20
MAX_ROWS = 10_000
SHOWN_PROBLEMS = 3


class HistoryFileError(LoaderError, ValueError):
    """The history file itself cannot be read or written (not a regular file, unreadable); ``path``, ``reason``."""

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        step = "point INSPECTOR_CACHE_DIR at a folder of your own, or move that file away"
        super().__init__(Message(f"the benchmark history {self.path} {reason}", next_step=step).one_line())


@dataclass(frozen=True)
class SkippedLine:
    """A line of the history that was not used: its number (from 1) and why."""

    line: int
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}"


class KeptRuns(list[dict[str, Any]]):
    """Past runs, oldest first (a list of checked run records), with what the reader skipped."""

    def __init__(
        self,
        runs: Iterable[dict[str, Any]] = (),
        skipped: Iterable[SkippedLine] = (),
        path: Path | None = None,
        tail_only: bool = False,
    ) -> None:
        super().__init__(runs)
        self.skipped = tuple(skipped)
        self.path = path
        self.tail_only = tail_only

    def note(self) -> str:
        """One line saying what was skipped ("" when nothing was)."""
        parts = []
        if self.tail_only:
            parts.append(f"the history is over {READ_LIMIT >> 20} MiB: only its newest part was read")
        if self.skipped:
            count = len(self.skipped)
            shown = "; ".join(str(s) for s in self.skipped[:SHOWN_PROBLEMS]) + (
                "; ..." if count > SHOWN_PROBLEMS else ""
            )
            parts.append(
                f"{count} line{'s' if count != 1 else ''} of the history could not be read and "
                f"{'were' if count != 1 else 'was'} skipped ({shown})"
            )
        return "; ".join(parts)


def open_regular(path: str | os.PathLike[str], flags: int, mode: int = 0o644) -> int:
    """A descriptor on ``path`` opened without blocking, or ``HistoryFileError`` when it is not a regular file."""
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY, mode)
    except IsADirectoryError:
        raise HistoryFileError(path, "is a folder") from None
    except OSError as exc:
        if exc.errno is not None and exc.errno == getattr(os, "ENXIO", -1):  # a FIFO opened for writing
            raise HistoryFileError(path, "is not a regular file (a FIFO)") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file (a FIFO, device or socket)"
            raise HistoryFileError(path, f"is {kind}")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


class FileTooLargeError(HistoryFileError):
    """A file read whole (``read_bytes(..., tail=False)``) is larger than its limit; ``size`` in bytes."""

    def __init__(self, path: str | os.PathLike[str], size: int, limit: int) -> None:
        self.size = size
        super().__init__(path, f"is {size >> 20} MiB, more than the {limit >> 20} MiB read")


def read_bytes(path: str | os.PathLike[str], limit: int | None = None, *, tail: bool = True) -> tuple[bytes, bool]:
    """The last ``limit`` bytes of ``path`` (a regular file) and whether that was only its tail.

    With ``tail=False`` a larger file is refused (``FileTooLargeError``) before anything is read.
    """
    limit = READ_LIMIT if limit is None else limit
    try:
        fd = open_regular(path, os.O_RDONLY)
    except HistoryFileError:
        raise
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise HistoryFileError(path, f"cannot be read ({exc.strerror or exc})") from None
    try:
        size = os.fstat(fd).st_size
        tail_only = size > limit
        if tail_only and not tail:
            raise FileTooLargeError(path, size, limit)
        if tail_only:
            os.lseek(fd, size - limit, os.SEEK_SET)
        chunks, left = [], limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise HistoryFileError(path, f"cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if tail_only:
        data = data[data.find(b"\n") + 1 :] if b"\n" in data else b""
    return data, tail_only


def parse_history(
    data: bytes, part: str | None = None, first_line: int = 1
) -> tuple[list[dict[str, Any]], list[SkippedLine]]:
    """The checked runs in ``data`` (of ``part``, when given), oldest first, and the lines skipped; pure."""
    runs: list[dict[str, Any]] = []
    labels: dict[str, str] = {}
    skipped: list[SkippedLine] = []
    for number, raw in enumerate(data.split(b"\n"), start=first_line):
        if not raw.strip():
            continue
        try:
            entry = _decode(raw)
            if isinstance(entry, dict) and entry.get("kind") == "label":
                run_id, label = printable(entry.get("run")), plain(entry.get("label"))
                if not isinstance(label, str):
                    raise ValueError("label is not text")
                labels[run_id] = label
                continue
            run = checked_run(entry, _line_id(raw))
        except (ValueError, RecursionError) as exc:
            skipped.append(
                SkippedLine(number, str(exc) if not isinstance(exc, RecursionError) else "nested too deeply")
            )
            continue
        if part is None or run["part"] == part:
            runs.append(run)
    for run in runs:
        run["label"] = labels.get(run["id"], run["label"])
    return runs, skipped


def _decode(raw: bytes) -> Any:
    if len(raw) > MAX_LINE_BYTES:
        raise ValueError(f"longer than {MAX_LINE_BYTES >> 20} MiB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text (byte {exc.start})") from None
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise
    except ValueError as exc:
        raise ValueError(f"not JSON ({str(exc).split(':')[0]})") from None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _line_id(raw: bytes) -> str:
    """The id of a run kept before runs had one: from its line's bytes, so it stays the same."""
    return "line-" + hashlib.sha1(raw.strip(), usedforsecurity=False).hexdigest()[:10]


def checked_run(entry: Any, default_id: str = "") -> dict[str, Any]:
    """One run record with every field checked, or ``ValueError`` naming the field."""
    if not isinstance(entry, dict):
        raise ValueError("is not a JSON object")
    part = _field(entry, "part", printable)
    rows, measurements = entry.get("rows", []), entry.get("measurements", [])
    for name, value in (("rows", rows), ("measurements", measurements)):
        if not isinstance(value, list):
            raise ValueError(f"{name} is not a list")
        if len(value) > MAX_ROWS:
            raise ValueError(f"{name} holds more than {MAX_ROWS} records")
    check = checked_row if part == "loader" else _plain_record
    return {
        "id": _field(entry, "id", _text, default_id),
        "time": _field(entry, "time", _text, ""),
        "part": part,
        "label": _field(entry, "label", _text, ""),
        "cancelled": _field(entry, "cancelled", _flag, False),
        "settings": _field(entry, "settings", _settings, {}),
        "environment": _field(entry, "environment", _environment, {}),
        "rows": [_as_dict(_item(check, row, f"rows[{i}]")) for i, row in enumerate(rows)],
        "measurements": [
            _item(checked_measurement, m, f"measurements[{i}]").as_dict() for i, m in enumerate(measurements)
        ],
    }


_MISSING = object()


def _field(entry: Mapping[str, Any], name: str, parse: Any, default: Any = _MISSING) -> Any:
    if name not in entry or entry[name] is None:
        if default is _MISSING:
            raise ValueError(f"has no {name}")
        return default
    try:
        return parse(entry[name])
    except ValueError as exc:
        raise ValueError(f"{name} {exc}") from None


def _item(parse: Any, value: Any, where: str) -> Any:
    try:
        return parse(value)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def _as_dict(item: Any) -> dict[str, Any]:
    return item.as_dict() if hasattr(item, "as_dict") else dict(item)


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("is not text")
    return str(plain(value))


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("is not true or false")
    return value


def _settings(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError("is not an object")
    checked = {}
    for key, item in value.items():
        values = item if isinstance(item, list) else [item]
        checked[printable(key)] = [plain(v) for v in values] if isinstance(item, list) else plain(item)
        if len(values) > 1000:
            raise ValueError(f"{key} holds too many values")
    return checked


def _environment(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError("is not an object")
    return {_text(key): plain(item) for key, item in value.items()}


def _plain_record(value: Any) -> dict[str, Any]:
    """A row of a part other than the loader: an object of plain values."""
    if not isinstance(value, dict):
        raise ValueError("is not an object")
    return {
        printable(key): plain(item) if not isinstance(item, str) else printable(item) for key, item in value.items()
    }
