"""What a storage file holds, read from its header alone (no array bytes are read)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from inspector.loader._errors import StorageNotFoundError
from inspector.loader.storage.handles import Storage
from inspector.loader.storage.key_paths import KeyPath, format_key_path
from inspector.loader.storage.reader import StorageFile

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class LeafInfo:
    """One array leaf: where it sits in the object, its type, and where its bytes sit in the data region.

    ``key_path`` is the place as keys and indices (``('obs', 3)``), ready to index the loaded object
    with; ``where`` is the same place written as Python (``obj['obs'][3]``).
    """

    key_path: KeyPath
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
    """The layout of a storage file, checked like a load checks it, without reading its arrays.

    A path that is not a regular file (a FIFO, a directory) raises ``StorageCorruptError`` at once.

    >>> info = describe_storage(loader.save({"obs": np.zeros((3, 4))}))  # doctest: +SKIP
    >>> info.leaves[0].key_path, info.leaves[0].shape  # doctest: +SKIP
    (('obs',), (3, 4))
    """
    path = os.fspath(storage.path if isinstance(storage, Storage) else storage)
    try:
        with StorageFile(path) as file:
            size, prelude, plan = file.size, file.prelude, file.plan
    except FileNotFoundError:
        raise StorageNotFoundError(path) from None
    tree = plan.build(None, _Placeholders())
    return StorageInfo(path, size, prelude.header_len, prelude.data_start, prelude.data_len, _leaves(tree), plan.tokens)


@dataclass(frozen=True, eq=False)
class _Leaf:
    """Stands for an array while the tree is rebuilt from the header (its bytes are never read)."""

    kind: str
    dtype: str
    shape: tuple[int, ...]
    offset: int
    nbytes: int
    requires_grad: bool


class _Placeholders:
    """A leaf factory that records each array's facts instead of reading its bytes."""

    def array(self, dtype: np.dtype, shape: tuple[int, ...], offset: int, nbytes: int) -> _Leaf:
        return _Leaf("numpy", dtype.str, shape, offset, nbytes, False)

    def tensor(self, dtype: Any, shape: tuple[int, ...], offset: int, nbytes: int, grad: bool) -> _Leaf:
        return _Leaf("torch", str(dtype).removeprefix("torch."), shape, offset, nbytes, grad)


def _leaves(tree: Any) -> tuple[LeafInfo, ...]:
    """Every placeholder in ``tree`` with its key path, in the order a load builds them (no recursion)."""
    found: list[LeafInfo] = []
    stack: list[tuple[Any, KeyPath, bool]] = [(tree, (), False)]
    while stack:
        node, keys, in_key = stack.pop()
        if isinstance(node, _Leaf):
            where = format_key_path(keys) + (" (a dict key)" if in_key else "")
            found.append(
                LeafInfo(keys, where, node.kind, node.dtype, node.shape, node.offset, node.nbytes, node.requires_grad)
            )
        elif type(node) is dict:
            items = list(node.items())
            for key, value in reversed(items):
                stack.append((value, (*keys, key), in_key))
                stack.append((key, keys, True))
        elif type(node) in (list, tuple):
            stack.extend((node[i], (*keys, i), in_key) for i in range(len(node) - 1, -1, -1))
    return tuple(found)
