"""What every verb of the command line shares: the usage error, progress lines, JSON conversion."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from typing import Any


class UsageError(Exception):
    """Bad usage of a verb: ``main`` prints it as one line on stderr and exits 2."""


def progress_bar(done: int, total: int, message: str) -> None:
    """A one-line progress bar on stderr, for the long verbs."""
    width = 30
    filled = width * done // max(total, 1)
    end = "\n" if done >= total else ""
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {message[:60]:<60}{end}")
    sys.stderr.flush()


def jsonable(value: Any) -> Any:
    """Dataclasses, tuples and mappings as plain JSON values; anything else as its short text."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    from inspector.dispatch.context import format_value

    return format_value(value)
