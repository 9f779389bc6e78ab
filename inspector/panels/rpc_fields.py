"""The RPC panel's two text fields read as plan pieces: GPUs per worker, and each worker's explicit devices.

Each reader is a pure function of the field's text and the workers' names, so a typo is a
``PlanError`` naming the field (and the line), shown beside it.
"""

from __future__ import annotations

from inspector.rpc import PlanError
from inspector.rpc._errors import short


def read_counts(text: str, names: list[str]) -> dict[str, int]:
    """``"8"`` (one count for all) or ``"8, 8, 4"`` (one per worker) as each worker's GPU count."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    expected = f"one count for all workers, or {len(names)} comma-separated counts"
    if not all(p.isdigit() for p in parts) or len(parts) not in (1, len(names)):
        raise PlanError("GPUs per worker", short(text), expected)
    try:
        counts = [int(p) for p in parts] * (len(names) if len(parts) == 1 else 1)
    except ValueError:  # digits int() refuses: thousands of them, or '²'
        raise PlanError("GPUs per worker", short(text), f"{expected}, each within 0 .. 128") from None
    return dict(zip(names, counts, strict=True))


def read_devices(text: str, names: list[str]) -> dict[str, list[str]]:
    """Lines ``"<worker>: cuda:0, cuda:1"`` as each listed worker's explicit devices."""
    listed: dict[str, list[str]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        name, colon, rest = line.partition(":")
        if not colon or name.strip() not in names:
            expected = f"'<worker>: cuda:0, cuda:1' with a worker in {names}"
            raise PlanError(f"devices line {number}", repr(line), expected)
        listed[name.strip()] = [d.strip() for d in rest.split(",") if d.strip()]
    return listed
