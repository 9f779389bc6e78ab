"""What a storage file holds, read from its header alone (no array bytes are read)."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

from inspector.loader._codec import numpy_dtype, parse_header
from inspector.loader._errors import StorageCorruptError, StorageNotFoundError
from inspector.loader._format import PRELUDE_SIZE, check_header_crc, parse_prelude
from inspector.loader._storage import Storage


@dataclass(frozen=True)
class LeafInfo:
    """One array leaf: where it sits in the object, its type, and where its bytes sit in the file."""

    where: str
    kind: str  # "numpy" or "torch"
    dtype: str
    shape: tuple[int, ...]
    offset: int
    nbytes: int
    requires_grad: bool


@dataclass(frozen=True)
class StorageInfo:
    """A storage file's layout: header size, data size and every array leaf."""

    path: str
    file_bytes: int
    header_bytes: int
    data_start: int
    data_bytes: int
    leaves: tuple[LeafInfo, ...]
    tokens: int


def describe_storage(storage: Storage | str | os.PathLike[str]) -> StorageInfo:
    """The layout of a storage file, checked like a load checks it, without reading its arrays."""
    path = os.fspath(storage.path if isinstance(storage, Storage) else storage)
    try:
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            prelude = parse_prelude(file.read(PRELUDE_SIZE), size, path)
            header = file.read(prelude.header_len)
    except FileNotFoundError:
        raise StorageNotFoundError(path) from None
    check_header_crc(header, prelude, path)
    doc = parse_header(header, path)
    try:
        leaves = _leaves(doc["tokens"], path)
    except (TypeError, ValueError, IndexError) as exc:
        raise StorageCorruptError(path, f"malformed token ({exc})") from None
    return StorageInfo(path, size, prelude.header_len, prelude.data_start, prelude.data_len, leaves, len(doc["tokens"]))


class _Opaque:
    """Stands for a dict key that is not a plain value (a tuple, a float)."""

    def __repr__(self) -> str:
        return "…"


_OPAQUE = _Opaque()


def _leaves(tokens: list[Any], path: str) -> tuple[LeafInfo, ...]:
    """Every array token with its place in the object (``obj[0]['obs']``), walking the flat token list."""
    found: list[LeafInfo] = []
    frames: list[list[Any]] = []  # [tag, items needed, items seen, path, last key]
    for token in tokens:
        where = _where(frames)
        tag = token[0] if isinstance(token, list) and token and isinstance(token[0], str) else None
        if tag in ("l", "t", "d") and isinstance(token[1], int) and token[1] > 0:
            frames.append([tag, token[1] * (2 if tag == "d" else 1), 0, where, None])
            continue
        if tag in ("A", "T"):
            kind = "numpy" if tag == "A" else "torch"
            shape = tuple(token[2])
            nbytes = math.prod(shape) * _itemsize(kind, token[1], path)
            found.append(LeafInfo(where, kind, str(token[1]), shape, token[3], nbytes, bool(tag == "T" and token[4])))
        value: Any = token if tag is None else _OPAQUE
        while frames:
            frame = frames[-1]
            if frame[0] == "d" and frame[2] % 2 == 0:
                frame[4] = value
            frame[2] += 1
            if frame[2] < frame[1]:
                break
            frames.pop()
            value = _OPAQUE
    return tuple(found)


def _itemsize(kind: str, dtype: str, path: str) -> int:
    if kind == "numpy":
        return numpy_dtype(dtype, path).itemsize
    from inspector.loader._dtypes import torch_dtype

    return int(torch_dtype(dtype, path).itemsize)


def _where(frames: list[list[Any]]) -> str:
    if not frames:
        return "obj"
    tag, _need, seen, path, key = frames[-1]
    if tag == "d":
        return f"{path} (a key)" if seen % 2 == 0 else f"{path}[{key!r}]"
    return f"{path}[{seen}]"
