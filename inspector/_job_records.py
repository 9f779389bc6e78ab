"""The plain records one process sends to a job's rank 0: what each kind holds, its bounds, and the check on receipt.

NOTE [ Job records ]
A job-wide view compares what every rank measured (which SDPA backend ran for each call
signature, how fast the input pipeline delivered, which torch and flags the process saw). Each
rank turns its own results into records of plain data (str, int, float, bool, None, lists and
dicts of them), each with a ``kind`` and a ``version``: the part that measured turns its own
result into one (``WatchedCalls.job_record()``, ``LoaderProfile.job_record()``), so no engine
part reads another's objects. The schemas live here, once: a producer builds within them (the
bounds below: groups and counts, never one entry per call), and the receiver checks every record
against them as it would any input from outside, since a record comes from another process,
possibly another inspector version or something that is no inspector at all. Nothing received is
ever executed or unpickled; a record that does not fit is refused with the path of the first
field at fault, and the refusal names the rank that sent it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

SDPA = "torch_sdpa.watch"
LOADER = "loader.profile"
ENVIRONMENT = "environment"
KINDS = (SDPA, LOADER, ENVIRONMENT)
VERSION = 1
SDPA_VERSION = 2  # version 2 adds each group's device type and GPU capability; version 1 is still read

MAX_TEXT = 200  # characters in any string of a record
MAX_SDPA_GROUPS = 64  # groups a watch sends, most calls first; the rest are counted, not listed
MAX_ENVIRONMENT_KEYS = 48
MAX_KEY = 64  # characters of an environment key
KEY_PATTERN = re.compile(r"[A-Za-z0-9_. -]{1,64}")
MAX_COUNT = 2**62  # counts and sizes: far more than any run makes, well inside a float and JSON
LOADER_VERDICTS = ("loader-bound", "compute-bound", "balanced")


class RecordProblem(ValueError):
    """A record that does not fit its schema; ``path`` names the field at fault."""

    def __init__(self, path: str, why: str) -> None:
        self.path = path
        self.why = why
        super().__init__(f"{path}: {why}")


def clip(text: object, limit: int = MAX_TEXT) -> str:
    """``text`` as a string of at most ``limit`` characters (cut with an ellipsis)."""
    value = "" if text is None else str(text)
    return value if len(value) <= limit else value[: limit - 1] + "…"


def finite(value: object) -> float | None:
    """A finite, non-negative float, or None for anything else (nan, inf, None, negative)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) and number >= 0 else None


# -- field checkers: each returns the value, or raises RecordProblem -------------------------------
Checker = Callable[[Any, str], Any]


def text(optional: bool = False) -> Checker:
    def check(value: Any, path: str) -> Any:
        if value is None and optional:
            return value
        if not isinstance(value, str):
            raise RecordProblem(path, f"must be a string, got {type(value).__name__}")
        if len(value) > MAX_TEXT:
            raise RecordProblem(path, f"is {len(value):,} characters long, more than the {MAX_TEXT} allowed")
        return value

    return check


def count(value: Any, path: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecordProblem(path, f"must be a whole number, got {type(value).__name__}")
    if not 0 <= value <= MAX_COUNT:
        raise RecordProblem(path, f"must be within 0 .. 2**62, got {value}")
    return value


def real(optional: bool = False) -> Checker:
    def check(value: Any, path: str) -> Any:
        if value is None and optional:
            return value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise RecordProblem(path, f"must be a number, got {type(value).__name__}")
        if not (math.isfinite(value) and value >= 0):
            raise RecordProblem(path, f"must be a finite number >= 0, got {value!r}")
        return float(value)

    return check


def flag(optional: bool = False) -> Checker:
    def check(value: Any, path: str) -> Any:
        if (value is None and optional) or isinstance(value, bool):
            return value
        raise RecordProblem(path, f"must be true or false, got {type(value).__name__}")

    return check


def choice(values: tuple[str, ...], optional: bool = False) -> Checker:
    def check(value: Any, path: str) -> Any:
        if (value is None and optional) or (isinstance(value, str) and value in values):
            return value
        raise RecordProblem(path, f"must be one of {list(values)}, got {str(value)[:40]!r}")

    return check


def scalar(value: Any, path: str) -> Any:
    """An environment value: a short string, a number, true/false or null."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            raise RecordProblem(path, f"must be a finite number, got {value!r}")
        if isinstance(value, int) and abs(value) > MAX_COUNT:
            raise RecordProblem(path, "is an integer beyond 2**62")
        return value
    return text()(value, path)


def fields(spec: Mapping[str, Checker]) -> Checker:
    """A dict with exactly the keys of ``spec``, each checked by its checker."""

    def check(value: Any, path: str) -> Any:
        if not isinstance(value, dict):
            raise RecordProblem(path, f"must be an object, got {type(value).__name__}")
        missing = [key for key in spec if key not in value]
        extra = [str(key)[:40] for key in value if key not in spec]
        if missing or extra:
            raise RecordProblem(path, f"has missing fields {missing} and unknown fields {extra[:5]}")
        return {key: checker(value[key], f"{path}.{key}") for key, checker in spec.items()}

    return check


def listed(item: Checker, limit: int) -> Checker:
    def check(value: Any, path: str) -> Any:
        if not isinstance(value, list):
            raise RecordProblem(path, f"must be a list, got {type(value).__name__}")
        if len(value) > limit:
            raise RecordProblem(path, f"has {len(value):,} entries, more than the {limit} allowed")
        return [item(entry, f"{path}[{index}]") for index, entry in enumerate(value)]

    return check


def keyed(value: Any, path: str) -> Any:
    """The environment's values: at most ``MAX_ENVIRONMENT_KEYS`` short keys, each a scalar."""
    if not isinstance(value, dict):
        raise RecordProblem(path, f"must be an object, got {type(value).__name__}")
    if len(value) > MAX_ENVIRONMENT_KEYS:
        raise RecordProblem(path, f"has {len(value)} keys, more than the {MAX_ENVIRONMENT_KEYS} allowed")
    for key in value:
        if not (isinstance(key, str) and KEY_PATTERN.fullmatch(key)):
            raise RecordProblem(
                path, f"has a key that is not 1-{MAX_KEY} letters, digits, spaces or ._-: {str(key)[:40]!r}"
            )
    return {key: scalar(entry, f"{path}[{key!r}]") for key, entry in value.items()}


# -- the schemas, one per kind and version ----------------------------------------------------------
SDPA_GROUP_FIELDS: dict[str, Checker] = {
    "backend": text(),
    "count": count,
    "answered_by": text(),
    "dtype": text(),
    "shapes": text(),
    "causal": flag(True),
    "dropout_p": real(True),
    "mask": text(),
    "grad": flag(True),
    "enabled": text(),
    "module": text(),
}
SDPA_GROUP = fields(SDPA_GROUP_FIELDS)
SDPA_GROUP_2 = fields({**SDPA_GROUP_FIELDS, "device": text(), "capability": text()})


def _sdpa(group: Checker) -> Checker:
    return fields(
        {
            "kind": text(),
            "version": count,
            "seen": count,
            "groups": listed(group, MAX_SDPA_GROUPS),
            "folded_groups": count,
            "folded_calls": count,
        }
    )


SCHEMAS: dict[tuple[str, int], Checker] = {
    (SDPA, 1): _sdpa(SDPA_GROUP),
    (SDPA, 2): _sdpa(SDPA_GROUP_2),
    (LOADER, 1): fields(
        {
            "kind": text(),
            "version": count,
            "label": text(),
            "batches": count,
            "first_batch_s": real(True),
            "batch_s_median": real(True),
            "batch_s_min": real(True),
            "batch_s_max": real(True),
            "wait_s_median": real(True),
            "data_wait_share": real(True),
            "batches_per_s": real(True),
            "mb_per_s": real(True),
            "verdict": choice(LOADER_VERDICTS, True),
            "busy_machine": flag(),
        }
    ),
    (ENVIRONMENT, 1): fields({"kind": text(), "version": count, "values": keyed}),
}


def check_record(record: Any, path: str = "record") -> dict[str, Any]:
    """``record`` checked against the schema of its kind and version (NOTE [ Job records ]); a new dict.

    Raises ``RecordProblem`` for an unknown kind, a version this inspector cannot read, or any field
    that does not fit.
    """
    if not isinstance(record, dict):
        raise RecordProblem(path, f"must be an object, got {type(record).__name__}")
    kind, version = record.get("kind"), record.get("version")
    if kind not in KINDS:
        raise RecordProblem(f"{path}.kind", f"must be one of {list(KINDS)}, got {str(kind)[:40]!r}")
    schema = SCHEMAS.get((str(kind), version)) if isinstance(version, int) and not isinstance(version, bool) else None
    if schema is None:
        readable = sorted(v for k, v in SCHEMAS if k == kind)
        raise RecordProblem(
            f"{path}.version",
            f"{kind} version {str(version)[:20]} cannot be read here "
            f"(this inspector reads {readable}): run one inspector version "
            "on every rank",
        )
    checked: dict[str, Any] = schema(record, path)
    return checked
