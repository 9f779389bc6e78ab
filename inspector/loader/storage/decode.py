"""Rebuilding a payload from header tokens over a data region (see NOTE [ Payload tree tokens ] in ``encode``)."""

from __future__ import annotations

import json
import math
import struct
from typing import Any, Protocol

import numpy as np

from inspector.loader._errors import StorageCorruptError
from inspector.loader.storage.dtypes import torch_dtype

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


_LAYOUTS: dict[tuple[Any, ...], tuple[Any, tuple[int, ...], int]] = {}  # leaves repeat their dtype and shape
_LAYOUTS_KEPT = 4096


def decode(doc: dict[str, Any], factory: LeafFactory, data_len: int, path: str) -> Any:
    """Rebuild the object from a parsed header; every array leaf comes from ``factory``."""
    stack: list[list[Any]] = []  # frames: [tag, items needed, items]
    layouts = _LAYOUTS
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
                    layout = _leaf_layout(tag, token[1], shape_token, path)
                    if len(layouts) < _LAYOUTS_KEPT:
                        layouts[key] = layout
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
                value = scalar(token, path)
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
