"""torch dtypes by name, and which of them numpy can view directly (imports torch only when asked)."""

from __future__ import annotations

import functools
import re
from typing import Any

import numpy as np

from inspector.loader._errors import StorageCorruptError

# Quantized, bit-packed and sub-byte dtypes have no plain raw-bytes meaning; save refuses them too.
_EXCLUDED = re.compile(r"q?u?int\d+x?\d*$|bits|quint|qint")


def _max_ndim() -> int:
    """The most dimensions a numpy array may have here (32 before numpy 2, 64 since)."""
    try:
        np.empty((1,) * 64, np.uint8)
    except ValueError:
        return 32
    return 64


MAX_NDIM = _max_ndim()
MAX_SPAN = (1 << 63) - 1  # numpy refuses an array whose non-zero dimensions times its itemsize exceed this
_TWINS = (
    "bool",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
)


@functools.cache
def torch_dtypes() -> dict[str, Any]:
    """Every plain torch dtype by the name ``str(dtype)`` gives after ``torch.``."""
    import torch

    table: dict[str, Any] = {}
    for value in vars(torch).values():
        if isinstance(value, torch.dtype):
            name = str(value).removeprefix("torch.")
            if name in _TWINS or not _EXCLUDED.match(name):
                table[name] = value
    return table


def torch_dtype(name: Any, path: str) -> Any:
    """The torch dtype a header names; ``StorageCorruptError`` for anything else."""
    dtype = torch_dtypes().get(name) if type(name) is str else None
    if dtype is None:
        raise StorageCorruptError(path, f"unknown torch dtype {name!r}")
    return dtype


@functools.cache
def numpy_twin(dtype: Any) -> np.dtype | None:
    """The numpy dtype ``torch.from_numpy`` maps onto ``dtype``, or None (bfloat16, float8, ...)."""
    name = str(dtype).removeprefix("torch.")
    return np.dtype(name) if name in _TWINS else None
