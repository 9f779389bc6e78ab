"""The structure of one batch (keys, shapes, dtypes), as plain records a view can tabulate."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FieldInfo:
    """One leaf of a batch: its dotted key, what it is, and its shape and dtype if it has them."""

    key: str
    kind: str
    shape: tuple[int, ...] | None
    dtype: str | None


def _dtype_text(dtype: Any) -> str:
    text = str(dtype)
    return text[6:] if text.startswith("torch.") else text


def _leaf(key: str, value: Any) -> FieldInfo:
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    module = type(value).__module__.split(".")[0]
    kind = {"torch": "tensor", "numpy": "ndarray"}.get(module, type(value).__name__)
    return FieldInfo(
        key=key,
        kind=kind,
        shape=tuple(int(n) for n in shape) if shape is not None else None,
        dtype=_dtype_text(dtype) if dtype is not None else None,
    )


def describe_batch(batch: Any, prefix: str = "") -> tuple[FieldInfo, ...]:
    """Walk mappings, lists and tuples down to their leaves; keys join with ``.``."""
    if isinstance(batch, Mapping):
        items = [(str(k), v) for k, v in batch.items()]
    elif isinstance(batch, (list, tuple)):
        items = [(str(i), v) for i, v in enumerate(batch)]
    else:
        return (_leaf(prefix or "<batch>", batch),)
    fields: list[FieldInfo] = []
    for key, value in items:
        fields.extend(describe_batch(value, f"{prefix}.{key}" if prefix else key))
    return tuple(fields)
