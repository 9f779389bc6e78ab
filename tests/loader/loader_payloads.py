"""Hypothesis strategies for payloads and a bit-exact, type-exact comparison."""

from __future__ import annotations

import os
import pickle
import struct
from pathlib import Path
from typing import Any

import hypothesis.extra.numpy as npst
import numpy as np
import torch
from hypothesis import strategies as st

NUMPY_DTYPES = st.one_of(
    npst.boolean_dtypes(),
    npst.integer_dtypes(endianness="?"),
    npst.unsigned_integer_dtypes(endianness="?"),
    npst.floating_dtypes(endianness="?", sizes=(16, 32, 64)),
    npst.complex_number_dtypes(endianness="?"),
    npst.datetime64_dtypes(endianness="?"),
    npst.timedelta64_dtypes(endianness="?"),
    npst.byte_string_dtypes(endianness="?", min_len=1, max_len=4),
    npst.unicode_string_dtypes(endianness="?", min_len=1, max_len=4),
)
SHAPES = npst.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
numpy_arrays = NUMPY_DTYPES.flatmap(lambda dtype: npst.arrays(dtype, SHAPES))
numpy_scalars = npst.arrays(NUMPY_DTYPES, ()).map(lambda a: a[()])

TORCH_FROM = {
    "float16": torch.float16,
    "float32": torch.float32,
    "float64": torch.float64,
    "bfloat16": torch.bfloat16,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
    "bool": torch.bool,
    "complex64": torch.complex64,
    "complex128": torch.complex128,
    "float8_e4m3fn": torch.float8_e4m3fn,
    "float8_e5m2": torch.float8_e5m2,
}


@st.composite
def torch_tensors(draw: st.DrawFn) -> torch.Tensor:
    name = draw(st.sampled_from(sorted(TORCH_FROM)))
    dtype = TORCH_FROM[name]
    shape = draw(SHAPES)
    raw = draw(npst.arrays(np.uint8, (int(np.prod(shape, dtype=np.int64)) * dtype.itemsize,)))
    if raw.size == 0:
        tensor = torch.empty(shape, dtype=dtype)
    else:
        tensor = torch.from_numpy(raw.copy()).view(dtype).reshape(shape)  # arbitrary bits, NaNs included
    if tensor.ndim >= 2 and draw(st.booleans()):
        tensor = tensor.transpose(0, 1)  # not contiguous
    if dtype.is_floating_point and dtype.itemsize >= 2 and draw(st.booleans()):
        tensor = tensor.clone().requires_grad_(True)
    return tensor


python_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**200), max_value=2**200),
    st.floats(allow_nan=True, allow_infinity=True),
    st.complex_numbers(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.binary(max_size=8),
)
leaves = st.one_of(python_scalars, numpy_arrays, numpy_scalars, torch_tensors())
keys = st.one_of(st.text(max_size=6), st.integers(), st.tuples(st.integers(), st.text(max_size=3)), st.none())
payloads = st.recursive(
    leaves,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.tuples(children, children),
        st.dictionaries(keys, children, max_size=4),
    ),
    max_leaves=12,
)

_DOUBLE = struct.Struct("<d")


def _tensor_bytes(tensor: torch.Tensor) -> bytes:
    flat = tensor.detach().contiguous().reshape(-1)
    return flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""


def assert_same(expected: Any, got: Any, where: str = "obj") -> None:
    """Same types all the way down and the same bits in every leaf."""
    assert type(got) is type(expected), f"{where}: {type(got)} != {type(expected)}"
    if isinstance(expected, dict):
        assert list(got) == list(expected), f"{where}: keys differ"
        for key in expected:
            assert_same(expected[key], got[key], f"{where}[{key!r}]")
    elif isinstance(expected, list | tuple):
        assert len(got) == len(expected), f"{where}: length differs"
        for i, (e, g) in enumerate(zip(expected, got, strict=True)):
            assert_same(e, g, f"{where}[{i}]")
    elif isinstance(expected, np.ndarray):
        assert (got.dtype, got.shape) == (expected.dtype, expected.shape), where
        assert got.tobytes() == expected.tobytes(), f"{where}: bytes differ"
    elif isinstance(expected, np.generic):
        assert got.dtype == expected.dtype and got.tobytes() == expected.tobytes(), where
    elif isinstance(expected, torch.Tensor):
        assert (got.dtype, tuple(got.shape), got.requires_grad) == (
            expected.dtype,
            tuple(expected.shape),
            expected.requires_grad,
        ), where
        assert _tensor_bytes(got) == _tensor_bytes(expected), f"{where}: bytes differ"
    elif isinstance(expected, float):
        assert _DOUBLE.pack(got) == _DOUBLE.pack(expected), where
    elif isinstance(expected, complex):
        assert (_DOUBLE.pack(got.real), _DOUBLE.pack(got.imag)) == (
            _DOUBLE.pack(expected.real),
            _DOUBLE.pack(expected.imag),
        ), where
    else:
        assert got == expected, where


class Hostile:
    """Unpickling this runs code: it creates the marker file."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (os.mkdir, (self.marker,))


def write_hostile(path: Path, marker: Path) -> None:
    path.write_bytes(pickle.dumps({"obs": Hostile(str(marker))}, protocol=pickle.HIGHEST_PROTOCOL))
    assert not marker.exists()
