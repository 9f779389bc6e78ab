"""Turning a payload into header tokens plus raw array bytes, and back, without pickle.

NOTE [ Payload tree tokens ]
The object tree is written as a *flat* pre-order token list, so neither ``json`` nor our own
code recurses: payloads of any depth encode and decode, and a hostile file cannot blow the
stack. A token is one of

    "text", 12, true, null       str, int, bool and None as plain JSON values
    ["I", "-1f"]                 an int too large for JSON's comfort (hex)
    ["f", "<16 hex digits>"]     a float, its IEEE-754 bits (NaN payloads and -0.0 survive)
    ["c", "<hex>", "<hex>"]      a complex, real and imaginary bits
    ["b", "<hex>"]               bytes
    ["l", n] / ["t", n]          a list / tuple whose n items follow
    ["d", n]                     a dict: n (key, value) pairs follow, key first
    ["A", dtype, shape, offset]  a numpy array whose bytes sit at ``offset`` in the data region
    ["S", dtype, "<hex>"]        a numpy scalar, its bytes inline
    ["T", dtype, shape, offset, requires_grad]   a torch tensor (dtype is torch's name)

Only these exact types are accepted (subclasses such as ``OrderedDict`` or ``nn.Parameter``
would come back as their base type, so ``save`` refuses them and names where they sit).
"""

from __future__ import annotations

import json
import struct
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from inspector.loader._errors import UnsupportedPayloadError
from inspector.loader.storage.layout import align

SUPPORTED = (
    "dict",
    "list",
    "tuple",
    "numpy.ndarray",
    "numpy scalar",
    "torch.Tensor",
    "int",
    "float",
    "complex",
    "bool",
    "str",
    "bytes",
    "None",
)
_BIG = 1 << 63
_CLOSE = object()
_DOUBLE = struct.Struct("<d")


@dataclass(frozen=True)
class Encoded:
    """A payload ready to write: header JSON bytes and the array bytes with their offsets."""

    header: bytes
    chunks: tuple[tuple[int, memoryview], ...]
    data_len: int
    arrays: int


Path = tuple[Any, Any, str] | None  # (parent, key or index, "item" | "key"): built as the walk descends


def _refuse(path: Path, value: Any, reason: str) -> UnsupportedPayloadError:
    """The error for ``value`` at ``path``: its key path, and that place written as Python."""
    name = f"{type(value).__module__}.{type(value).__qualname__}".removeprefix("builtins.")
    steps: list[tuple[Any, str]] = []
    while path is not None:
        parent, step, kind = path
        steps.append((step, kind))
        path = parent
    steps.reverse()
    keys = tuple(step for step, _kind in steps)
    where = "obj" + "".join(f"[{s!r}]" if kind == "item" else f" (the dict key {s!r})" for s, kind in steps)
    return UnsupportedPayloadError(where, name, reason, SUPPORTED, keys)


def _numpy_dtype_token(dtype: np.dtype, path: Path, value: Any) -> str:
    if dtype.hasobject:
        raise _refuse(path, value, f"dtype {dtype} holds Python objects, which would need pickle")
    if dtype.names is not None or dtype.subdtype is not None:
        raise _refuse(path, value, f"structured dtype {dtype} is not supported; store its fields separately")
    token = dtype.str
    if np.dtype(token) != dtype or dtype.kind == "T":
        raise _refuse(path, value, f"dtype {dtype!r} has no exact raw-bytes form")
    return token


def _raw_numpy(array: np.ndarray) -> np.ndarray:
    flat = np.ascontiguousarray(array).reshape(-1)
    return flat.view(np.uint8) if flat.dtype.itemsize else np.empty(0, np.uint8)


def encode(obj: Any) -> Encoded:
    """Encode ``obj`` (see NOTE [ Payload tree tokens ]); raise ``UnsupportedPayloadError`` naming the path."""
    torch = sys.modules.get("torch")  # no torch imported means no tensor can be in obj
    tensor_type = torch.Tensor if torch is not None else None
    tokens: list[Any] = []
    chunks: list[tuple[int, memoryview]] = []
    offset = 0
    arrays = 0
    lo = hi = -1
    open_ids: set[int] = set()
    stack: list[tuple[Any, Path]] = [(obj, None)]
    while stack:
        value, path = stack.pop()
        if value is _CLOSE:
            open_ids.discard(path)
            continue
        kind = type(value)
        if value is None or kind is str or kind is bool:
            tokens.append(value)
        elif kind is int:
            tokens.append(value if -_BIG < value < _BIG else ["I", format(value, "x")])
        elif kind is float:
            tokens.append(["f", _DOUBLE.pack(value).hex()])
        elif kind is list or kind is tuple or kind is dict:
            if id(value) in open_ids:
                raise _refuse(path, value, "the structure contains itself (a reference cycle)")
            open_ids.add(id(value))
            stack.append((_CLOSE, id(value)))  # type: ignore[arg-type]
            if kind is dict:
                tokens.append(["d", len(value)])
                for key, item in reversed(list(value.items())):
                    stack.append((item, (path, key, "item")))
                    stack.append((key, (path, key, "key")))
            else:
                tokens.append(["l" if kind is list else "t", len(value)])
                stack.extend((value[i], (path, i, "item")) for i in range(len(value) - 1, -1, -1))
        elif kind is np.ndarray:
            dtype_token = _numpy_dtype_token(value.dtype, path, value)
            offset = align(offset)
            raw = _raw_numpy(value)
            tokens.append(["A", dtype_token, list(value.shape), offset])
            chunks.append((offset, raw.data))
            offset += raw.nbytes
            arrays += 1
        elif isinstance(value, np.generic):
            if type(value) is not value.dtype.type:
                raise _refuse(path, value, "numpy scalar subclasses are not supported")
            dtype_token = _numpy_dtype_token(value.dtype, path, value)
            raw_scalar = _raw_numpy(np.asarray(value)).tobytes() if value.dtype.itemsize else b""
            tokens.append(["S", dtype_token, raw_scalar.hex()])
        elif kind is complex:
            tokens.append(["c", _DOUBLE.pack(value.real).hex(), _DOUBLE.pack(value.imag).hex()])
        elif kind is bytes:
            tokens.append(["b", value.hex()])
        elif tensor_type is not None and kind is tensor_type:
            raw_t, name = _raw_tensor(value, path)
            offset = align(offset)
            tokens.append(["T", name, list(value.shape), offset, bool(value.requires_grad)])
            chunks.append((offset, raw_t.data))
            lo = offset if lo < 0 else lo
            offset += raw_t.nbytes
            hi = offset
            arrays += 1
        elif tensor_type is not None and isinstance(value, tensor_type):
            raise _refuse(path, value, "tensor subclasses are not supported; pass .detach() (a plain tensor)")
        else:
            raise _refuse(path, value, "this type has no pickle-free storage form")
    header = {"tokens": tokens, "arrays": arrays, "tensor_span": [lo, hi] if lo >= 0 else None}
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return Encoded(text.encode("ascii"), tuple(chunks), offset, arrays)


def _raw_tensor(value: Any, path: Path) -> tuple[np.ndarray, str]:
    import torch

    if value.layout != torch.strided or value.is_quantized or value.is_nested:
        raise _refuse(path, value, f"layout {value.layout} (only dense, non-quantized tensors)")
    if value.device.type == "meta":
        raise _refuse(path, value, "meta tensors have no data")
    from inspector.loader.storage.dtypes import MAX_NDIM, torch_dtypes

    if value.dim() > MAX_NDIM:
        raise _refuse(path, value, f"{value.dim()} dimensions: a stored array has at most {MAX_NDIM}")
    tensor = value.detach()
    if tensor.device.type != "cpu":
        tensor = tensor.cpu()
    tensor = tensor.resolve_conj().resolve_neg().contiguous()
    name = str(tensor.dtype).removeprefix("torch.")
    if name not in torch_dtypes():
        raise _refuse(path, value, f"dtype torch.{name} has no plain raw-bytes form")
    if tensor.dtype.itemsize == 0 or tensor.numel() == 0:
        return np.empty(0, np.uint8), name
    return tensor.reshape(-1).view(torch.uint8).numpy(), name
