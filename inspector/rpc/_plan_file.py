"""Reading a plan file safely: a regular file of bounded size, JSON with finite numbers and sane depth.

A plan path may be anything a user types: a FIFO (opening it for reading would block until
a writer comes), a device, a file of gigabytes, JSON nested deeper than Python's parser can
recurse, numbers such as ``1e400`` that JSON parses to infinity, an integer of thousands of
digits (more than Python converts by default; no plan value needs more than a few), or an
object that gives a key twice (JSON keeps the last, so a second ``"workers"`` list would hide
the first from the check). Each becomes a
``PlanError`` with one clear line; nothing here blocks or materialises more than the limit.
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

from inspector._files import file_kind
from inspector.rpc._errors import short
from inspector.rpc._worker_plan import PlanError

MAX_PLAN_BYTES = 64 << 20  # a 64-worker x 8-GPU full mesh is about 2 MiB
MAX_INT_DIGITS = 20  # a plan's integers are device counts (0 .. 128) and versions


def read_plan_text(path: str | os.PathLike[str], limit: int = MAX_PLAN_BYTES) -> str:
    """The text of a plan file; refuses what is not a regular file and files over ``limit`` bytes.

    Opening with ``O_NONBLOCK`` returns at once even for a FIFO with no writer, and the
    check is on the opened descriptor, so the file cannot be swapped in between.
    """
    where = str(path)
    fd = os.open(Path(path), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = file_kind(info.st_mode)
            raise PlanError(where, f"{kind}, not a plan file", "a JSON file written by TopologyPlan.to_json")
        if info.st_size > limit:
            raise PlanError(where, f"{info.st_size:,} bytes, over the {limit:,}-byte limit for a plan file")
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise PlanError(where, f"over the {limit:,}-byte limit for a plan file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PlanError(where, f"not UTF-8 text (byte {exc.start})", "a JSON file") from exc


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise PlanError("<number>", f"{text} is not a finite number", "finite numbers (device counts are ints)")
    return value


def _int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise PlanError(
            "<number>",
            f"an integer of {digits:,} digits ({text[:12]}...) is not a plan value",
            "device counts within 0 .. 128",
        )
    return int(text)


def _constant(name: str) -> Any:
    raise PlanError("<number>", f"{name} is not a JSON number", "finite numbers (device counts are ints)")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """One JSON object; a key given twice is refused (``json`` would keep the last silently)."""
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise PlanError(
                f"key {short(key)}",
                "given twice in one object (JSON keeps only the last one silently)",
                "each key once per object: merge the two entries",
            )
        seen[key] = value
    return seen


def loads_plan_json(text: str) -> Any:
    """``json.loads`` that refuses duplicate keys, non-finite numbers, huge integers and depth Python cannot parse,
    as ``PlanError``."""
    try:
        return json.loads(
            text, parse_float=_finite, parse_int=_int, parse_constant=_constant, object_pairs_hook=_unique_keys
        )
    except json.JSONDecodeError as exc:
        raise PlanError(f"line {exc.lineno} column {exc.colno}", exc.msg, "a JSON object") from exc
    except RecursionError as exc:
        raise PlanError("<root>", "JSON nested too deeply to parse", "a plan is at most five levels deep") from exc
    except PlanError:
        raise
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise PlanError("<number>", str(exc).partition("\n")[0], "a JSON object") from exc
