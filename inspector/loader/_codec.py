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
import math
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from inspector.loader._errors import StorageCorruptError, UnsupportedPayloadError
from inspector.loader._format import align

SUPPORTED = (
    "dict", "list", "tuple", "numpy.ndarray", "numpy scalar", "torch.Tensor",
    "int", "float", "complex", "bool", "str", "bytes", "None",
)  # fmt: skip
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


class LeafFactory(Protocol):
    """Builds array leaves over a data region while a token list is decoded."""

    def array(self, dtype: np.dtype, shape: tuple[int, ...], offset: int, nbytes: int) -> Any: ...

    def tensor(self, dtype: Any, shape: tuple[int, ...], offset: int, nbytes: int, grad: bool) -> Any: ...


Path = tuple[Any, Any, str] | None


def format_path(path: Path) -> str:
    """``obj['obs'][3]`` for the place ``path`` points at."""
    parts: list[str] = []
    while path is not None:
        parent, step, kind = path
        parts.append(f"[{step!r}]" if kind == "item" else f" (the dict key {step!r})")
        path = parent
    return "obj" + "".join(reversed(parts))


def _refuse(path: Path, value: Any, reason: str) -> UnsupportedPayloadError:
    name = f"{type(value).__module__}.{type(value).__qualname__}".removeprefix("builtins.")
    return UnsupportedPayloadError(format_path(path), name, reason, SUPPORTED)


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
    tensor = value.detach()
    if tensor.device.type != "cpu":
        tensor = tensor.cpu()
    tensor = tensor.resolve_conj().resolve_neg().contiguous()
    name = str(tensor.dtype).removeprefix("torch.")
    from inspector.loader._dtypes import torch_dtypes

    if name not in torch_dtypes():
        raise _refuse(path, value, f"dtype torch.{name} has no plain raw-bytes form")
    if tensor.dtype.itemsize == 0 or tensor.numel() == 0:
        return np.empty(0, np.uint8), name
    return tensor.reshape(-1).view(torch.uint8).numpy(), name


def parse_header(header: bytes | memoryview, path: str) -> dict[str, Any]:
    """The header document, checked for shape (not content); ``StorageCorruptError`` otherwise."""
    try:
        doc = json.loads(bytes(header))
    except (ValueError, RecursionError) as exc:
        raise StorageCorruptError(path, f"header is not valid JSON ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("tokens"), list):
        raise StorageCorruptError(path, "header has no token list")
    span = doc.get("tensor_span")
    if span is not None and not (
        isinstance(span, list) and len(span) == 2 and all(type(v) is int and v >= 0 for v in span)
    ):
        raise StorageCorruptError(path, f"bad tensor_span {span!r}")
    return doc


_NUMPY_DTYPES: dict[str, np.dtype] = {}


def numpy_dtype(token: Any, path: str) -> np.dtype:
    """The dtype a header names, refusing anything that is not plain raw bytes."""
    cached = _NUMPY_DTYPES.get(token) if type(token) is str else None
    if cached is not None:
        return cached
    try:
        dtype = np.dtype(token)
    except (TypeError, ValueError, SyntaxError) as exc:
        raise StorageCorruptError(path, f"unknown dtype {token!r} ({exc})") from None
    if dtype.hasobject or dtype.names is not None or dtype.subdtype is not None or dtype.kind == "T":
        raise StorageCorruptError(path, f"dtype {token!r} is not a raw-bytes dtype")
    if len(_NUMPY_DTYPES) < 4096:
        _NUMPY_DTYPES[token] = dtype
    return dtype


def _shape(value: Any, path: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(type(d) is int and d >= 0 for d in value):
        raise StorageCorruptError(path, f"bad shape {value!r}")
    return tuple(value)


Scalar = Callable[[list[Any], str], Any]


def _scalar(token: list[Any], path: str) -> Any:
    tag = token[0]
    try:
        if tag == "f":
            return _DOUBLE.unpack(bytes.fromhex(token[1]))[0]
        if tag == "I":
            return int(token[1], 16)
        if tag == "c":
            return complex(_DOUBLE.unpack(bytes.fromhex(token[1]))[0], _DOUBLE.unpack(bytes.fromhex(token[2]))[0])
        if tag == "b":
            return bytes.fromhex(token[1])
        if tag == "S":
            dtype = numpy_dtype(token[1], path)
            raw = bytes.fromhex(token[2])
            if len(raw) != dtype.itemsize:
                raise StorageCorruptError(path, f"numpy scalar of {dtype} with {len(raw)} bytes")
            return np.frombuffer(raw, dtype)[0] if dtype.itemsize else dtype.type()
    except StorageCorruptError:
        raise
    except (TypeError, ValueError, IndexError, struct.error) as exc:
        raise StorageCorruptError(path, f"bad {tag!r} token {token!r} ({exc})") from None
    raise StorageCorruptError(path, f"unknown token tag {tag!r}")


def decode(doc: dict[str, Any], factory: LeafFactory, data_len: int, path: str) -> Any:
    """Rebuild the object from a parsed header; every array leaf comes from ``factory``."""
    stack: list[list[Any]] = []  # frames: [tag, items needed, items]
    layouts: dict[tuple[Any, ...], tuple[Any, tuple[int, ...], int]] = {}  # leaves repeat their dtype/shape
    make_array, make_tensor = factory.array, factory.tensor
    done = False
    result: Any = None
    for token in doc["tokens"]:
        kind = type(token)
        if kind is list and token and type(token[0]) is str:
            tag = token[0]
            if (tag == "A" and len(token) == 4) or (tag == "T" and len(token) == 5 and type(token[4]) is bool):
                shape_token = token[2]
                key = (tag, token[1], tuple(shape_token) if type(shape_token) is list else shape_token)
                layout = layouts.get(key)
                if layout is None:
                    layout = layouts[key] = _leaf_layout(tag, token[1], shape_token, path)
                dtype, shape, nbytes = layout
                offset = token[3]
                if type(offset) is not int or offset < 0 or offset + nbytes > data_len:
                    raise StorageCorruptError(path, f"array bytes [{offset}, +{nbytes}) lie outside the data region")
                if tag == "A":
                    value: Any = make_array(dtype, shape, offset, nbytes)
                else:
                    value = make_tensor(dtype, shape, offset, nbytes, token[4])
            elif tag in ("l", "t", "d") and len(token) == 2 and type(token[1]) is int and token[1] >= 0:
                need = token[1] * (2 if tag == "d" else 1)
                if need:
                    stack.append([tag, need, []])
                    continue
                value = [] if tag == "l" else () if tag == "t" else {}
            else:
                value = _scalar(token, path)
        elif token is None or kind is str or kind is int or kind is bool:
            value = token
        else:
            raise StorageCorruptError(path, f"unexpected token {token!r}")
        while stack:
            frame = stack[-1]
            items = frame[2]
            items.append(value)
            if len(items) < frame[1]:
                break
            stack.pop()
            value = _build(frame, path)
        else:
            if done:
                raise StorageCorruptError(path, "tokens continue after the tree is complete")
            done, result = True, value
    if stack or not done:
        raise StorageCorruptError(path, "the token list ends before the tree is complete")
    return result


def _leaf_layout(tag: str, dtype_token: Any, shape_token: Any, path: str) -> tuple[Any, tuple[int, ...], int]:
    """(dtype, shape, byte count) of an array leaf, checked once per distinct (dtype, shape)."""
    from inspector.loader._dtypes import torch_dtype

    dtype = numpy_dtype(dtype_token, path) if tag == "A" else torch_dtype(dtype_token, path)
    shape = _shape(shape_token, path)
    return dtype, shape, math.prod(shape) * dtype.itemsize


def _build(frame: list[Any], path: str) -> Any:
    tag, _need, items = frame
    if tag == "l":
        return items
    if tag == "t":
        return tuple(items)
    try:
        return dict(zip(items[0::2], items[1::2], strict=True))
    except TypeError as exc:
        raise StorageCorruptError(path, f"unusable dict key ({exc})") from None
