"""Benchmark records read back from a file, checked field by field (a CSV row, a history line).

Whatever wrote the file, a row becomes a ``BenchRow`` (or a ``Measurement``) whose every value has
its type, or ``ValueError`` naming the field and value: ``mb_s 'nan' is not a finite number``.
Text that ends up on a page (layouts, methods, devices, a run's environment and label) is only ever
what the benchmark writes: short, printable, never markup.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

DEVICE = re.compile(r"cpu|cuda(:\d{1,3})?|mps")
MAX_INTEGER = 2**31 - 1
MAX_TEXT = 200
# What plain text may not hold: markup, quotes or control characters (a page may show it as is).
NOT_PLAIN = re.compile(r"[<>&\"'\x00-\x1f\x7f]")
# What a measurement's text may not hold: control characters (its targets read ">= 0.20x").
NOT_PRINTABLE = re.compile(r"[\x00-\x1f\x7f]")


def number(value: Any, *, integer: bool = False) -> float | int:
    """A finite, non-negative number from a JSON value or CSV text (``integer``: a whole one, 32-bit)."""
    if isinstance(value, bool):
        raise ValueError("is a boolean, not a number")
    if isinstance(value, str):
        value = value.strip()
        try:
            parsed: float | int = int(value) if integer and re.fullmatch(r"[+-]?\d{1,18}", value) else float(value)
        except ValueError:
            raise ValueError("is not a number") from None
    elif isinstance(value, int | float):
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


def optional_number(value: Any) -> float | None:
    return None if value is None or value == "" else float(number(value))


def boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0"):
        return value.strip().lower() in ("true", "1")
    raise ValueError("is not True or False")


def is_plain(text: str) -> bool:
    """Short text with no markup, quotes or control characters."""
    return len(text) <= MAX_TEXT and NOT_PLAIN.search(text) is None


def plain(value: Any) -> Any:
    """A value a page shows as it is: a number, a flag, nothing, or plain text (``is_plain``)."""
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str) and is_plain(value):
        return value
    raise ValueError("is not plain text as inspector writes it")


def printable(value: Any) -> str:
    """Short text without control characters (a measurement's name, unit or target)."""
    if not isinstance(value, str) or len(value) > MAX_TEXT or NOT_PRINTABLE.search(value):
        raise ValueError(f"is not short printable text (at most {MAX_TEXT} characters)")
    return value


def _choice(allowed: Callable[[str], bool], known: str) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        if not isinstance(value, str) or not allowed(value.strip()):
            raise ValueError(f"is not one of {known}")
        return value.strip()

    return parse


@functools.cache
def _row_parsers() -> dict[str, Callable[[Any], Any]]:
    from inspector.loader.bench.peers import LAYOUTS
    from inspector.loader.bench.rows import METHOD_LABELS, BenchRow

    by_type: dict[str, Callable[[Any], Any]] = {
        "float": number,
        "int": lambda v: number(v, integer=True),
        "float | None": optional_number,
        "bool": boolean,
    }
    text = {
        "layout": _choice(lambda v: v in LAYOUTS, ", ".join(LAYOUTS)),
        "method": _choice(lambda v: v in METHOD_LABELS, ", ".join(METHOD_LABELS)),
        "device": _choice(lambda v: DEVICE.fullmatch(v) is not None, "cpu, cuda or cuda:N"),
    }
    parsers = {}
    for field in dataclasses.fields(BenchRow):
        parser = text.get(field.name) or by_type.get(str(field.type))
        if parser is None:  # a new kind of field: teach this reader before it can mislead anyone
            raise TypeError(f"no reader for BenchRow.{field.name}: {field.type}")
        parsers[field.name] = parser
    return parsers


@functools.cache
def required_fields() -> tuple[str, ...]:
    """The ``BenchRow`` fields without a default: a row lacking one is refused."""
    from inspector.loader.bench.rows import BenchRow

    return tuple(
        f.name
        for f in dataclasses.fields(BenchRow)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    )


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def checked_row(record: Mapping[Any, Any]) -> Any:
    """A ``BenchRow`` from a CSV record (strings) or a history record (JSON values), or ``ValueError``.

    A missing optional field keeps its default; ``None`` for a required one (a CSV line with fewer
    fields than its header) says so.
    """
    from inspector.loader.bench.rows import BenchRow

    if not isinstance(record, Mapping):
        raise ValueError("is not an object")
    values = {}
    for name, parse in _row_parsers().items():
        if name not in record:
            continue
        value = record[name]
        if value is None and name in required_fields():
            raise ValueError(f"{name} is missing (the row has fewer fields than the header)")
        try:
            values[name] = parse(value)
        except (ValueError, OverflowError) as exc:
            raise ValueError(f"{name} {_shown(value)} {exc}") from None
    missing = [name for name in required_fields() if name not in values]
    if missing:
        raise ValueError(f"no {', '.join(missing)}")
    return BenchRow(**values)


def _pair(value: Any) -> tuple[float, float] | None:
    if value is None:
        return None
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise ValueError("is not a (min, max) pair")
    low, high = (float(number(v)) for v in value)
    return (low, high)


MEASUREMENT_FIELDS: dict[str, Callable[[Any], Any]] = {
    "part": printable,
    "name": printable,
    "value": lambda v: float(number(v)),
    "unit": printable,
    "baseline": printable,
    "baseline_value": optional_number,
    "ratio": optional_number,
    "ratio_label": printable,
    "target": printable,
    "ok": boolean,
    "spread": _pair,
    "baseline_spread": _pair,
}


def checked_measurement(record: Any) -> Any:
    """A ``Measurement`` from a history record, or ``ValueError`` naming the field."""
    from inspector._bench import Measurement

    if not isinstance(record, Mapping):
        raise ValueError("is not an object")
    values = {}
    for name, parse in MEASUREMENT_FIELDS.items():
        if name not in record:
            continue
        try:
            values[name] = parse(record[name])
        except (ValueError, OverflowError) as exc:
            raise ValueError(f"{name} {_shown(record[name])} {exc}") from None
    missing = [name for name in ("part", "name", "value", "unit") if name not in values]
    if missing:
        raise ValueError(f"no {', '.join(missing)}")
    return Measurement(**values)
