"""The structure of one batch (keys, shapes, dtypes) and its values' statistics, as plain records.

A sample batch is read for what it holds as much as for its shapes: a leaf of real numbers also
records its smallest, mean and largest value (NaNs left out) and how many NaNs it holds, so a
batch of all zeros or of NaNs shows at a glance. The statistics do not take part in equality:
two batches of the same structure compare equal.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ValueStats:
    """A numeric leaf's values: min, mean and max over its non-NaN values (None when all are NaN), NaN count."""

    minimum: float | None
    mean: float | None
    maximum: float | None
    nans: int


@dataclass(frozen=True)
class FieldInfo:
    """One leaf of a batch: its dotted key, what it is, its shape and dtype, and its values' statistics."""

    key: str
    kind: str
    shape: tuple[int, ...] | None
    dtype: str | None
    stats: ValueStats | None = field(default=None, compare=False)


def value_stats(value: Any) -> ValueStats | None:
    """Min, mean, max and NaN count of a real-valued tensor or array (None for anything else or no values).

    Neither torch nor numpy is imported for it: a tensor or an array means its library is loaded.
    """
    torch, np = sys.modules.get("torch"), sys.modules.get("numpy")
    if np is None:
        return None
    if torch is not None and isinstance(value, torch.Tensor):
        if (
            value.is_complex()
            or value.dtype == torch.bool
            or value.numel() == 0
            or value.layout != torch.strided
            or value.device.type == "meta"
        ):
            return None
        values = value.detach().to("cpu", torch.float64).numpy()
    elif isinstance(value, np.ndarray):
        if (
            value.size == 0
            or value.dtype == np.bool_
            or not np.issubdtype(value.dtype, np.number)
            or np.issubdtype(value.dtype, np.complexfloating)
        ):
            return None
        values = value.astype(np.float64, copy=False)
    else:
        return None
    missing = np.isnan(values)
    nans = int(missing.sum())
    kept = values[~missing] if nans else values
    if kept.size == 0:
        return ValueStats(None, None, None, nans)
    with np.errstate(over="ignore", invalid="ignore"):
        return ValueStats(float(kept.min()), float(kept.mean()), float(kept.max()), nans)


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
        stats=value_stats(value),
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
