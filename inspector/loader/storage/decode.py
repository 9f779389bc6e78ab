"""Reading a header: its JSON, its dtypes and its scalar tokens (see NOTE [ Payload tree tokens ] in ``encode``).

The tree itself is checked and rebuilt through a compiled ``plan`` (NOTE [ Header plans ]).
"""

from __future__ import annotations

import json
import struct
from typing import Any, Protocol

import numpy as np

from inspector.loader._errors import StorageCorruptError

_DOUBLE = struct.Struct("<d")


class LeafFactory(Protocol):
    """Builds array leaves over a data region while a token list is decoded."""

    def array(self, dtype: np.dtype, shape: tuple[int, ...], offset: int, nbytes: int) -> Any: ...

    def tensor(self, dtype: Any, shape: tuple[int, ...], offset: int, nbytes: int, grad: bool) -> Any: ...


def parse_header(header: bytes | memoryview, path: str) -> dict[str, Any]:
    """The header document, checked for shape (not content); ``StorageCorruptError`` otherwise."""
    try:
        doc = json.loads(bytes(header).decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
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
    if type(token) is not str:  # before any lookup: a list or an object is not even hashable
        raise StorageCorruptError(path, f"bad dtype {token!r} (a dtype is named by a string)")
    cached = _NUMPY_DTYPES.get(token)
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


def scalar(token: list[Any], path: str) -> Any:
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
