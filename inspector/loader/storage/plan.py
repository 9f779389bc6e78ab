"""A storage header checked once and compiled into a ``Plan``: what building the object over a file image needs.

NOTE [ Header plans ]
Every reader checks the whole header before it reads or reserves the data region (``reader``):
its CRC, its JSON, every token against the closed vocabulary (NOTE [ Payload tree tokens ] in
``encode``), every array leaf inside the data region, and the data region exactly as long as
its arrays need, so a file cannot make the loader reserve or read a byte that no leaf uses. The
checked header is compiled into a ``Plan``: the leaves in file order (dtype, shape, offset), the
scalars, and the containers in post-order, each as the slots of its items. Building the object
is then one array view per leaf and one constructor call per container, with no parsing and no
checks left to fail (dict keys are known to be hashable; ``requires_grad`` only on float and
complex tensors). Payloads of one structure share their header bytes exactly (the same tree,
dtypes, shapes and offsets: only the array bytes differ), so plans are kept by header bytes
(``plan_for``, a bounded cache): a header seen before costs its CRC and a dictionary lookup.
"""

from __future__ import annotations

import math
import os
import threading
from typing import Any

import numpy as np

from inspector.loader._errors import StorageCorruptError
from inspector.loader.storage.decode import numpy_dtype, parse_header, scalar
from inspector.loader.storage.dtypes import MAX_NDIM, MAX_SPAN, torch_dtype
from inspector.loader.storage.layout import Prelude, check_header_crc

PLANS_KEPT = 256
PLAN_BYTES_KEPT = 8 << 20  # header bytes held by the cache's keys
PLAN_LEAVES_KEPT = 1 << 16  # a plan with more leaves than this is used once and not kept
_LIST, _TUPLE, _DICT, _NAMED = 0, 1, 2, 3  # _NAMED: a dict whose keys are all scalars (kept as values)
_CONST, _LEAF, _CONTAINER = 0, 1, 2  # a reference while compiling is 3 * index + kind


class Plan:
    """A checked header (see NOTE [ Header plans ]); ``build`` makes the object over a file image."""

    __slots__ = ("consts", "containers", "data_len", "data_start", "leaves", "root", "tensor_span", "tokens", "views")

    def __init__(
        self,
        data_start: int,
        data_len: int,
        leaves: tuple[tuple[Any, ...], ...],
        consts: list[Any],
        containers: tuple[tuple[int, tuple[int, ...], tuple[Any, ...]], ...],
        root: int,
        tensor_span: tuple[int, int] | None,
        tokens: int,
    ) -> None:
        self.data_start = data_start
        self.data_len = data_len
        self.leaves = leaves  # (is_tensor, dtype, shape, offset, nbytes, requires_grad), in file order
        self.consts = consts
        self.containers = containers  # (kind, item slots, key slots or the keys themselves) in post-order
        self.root = root
        self.tensor_span = tensor_span
        self.tokens = tokens
        numpy_only = not any(leaf[0] for leaf in leaves)
        self.views = (
            tuple((shape, dtype, data_start + offset) for _t, dtype, shape, offset, _n, _g in leaves)
            if numpy_only
            else None
        )  # the arguments of each leaf's np.ndarray, when every leaf is a numpy array

    @property
    def file_size(self) -> int:
        return self.data_start + self.data_len

    @property
    def has_tensors(self) -> bool:
        return self.views is None

    def build(self, image: Any, factory: Any = None) -> Any:
        """The object over ``image`` (the whole file's bytes); leaves from ``factory`` (a ``LeafFactory``), or
        numpy views of ``image`` when it is None (only for plans without tensors)."""
        if factory is None:
            assert self.views is not None, "a plan with tensors needs a leaf factory"
            ndarray = np.ndarray
            leaves = [ndarray(shape, dtype, image, offset) for shape, dtype, offset in self.views]
        else:
            array, tensor = factory.array, factory.tensor
            leaves = [
                tensor(dtype, shape, offset, nbytes, grad) if is_tensor else array(dtype, shape, offset, nbytes)
                for is_tensor, dtype, shape, offset, nbytes, grad in self.leaves
            ]
        values = self.consts + leaves
        get, append = values.__getitem__, values.append
        for kind, items, keys in self.containers:
            if kind == _NAMED:
                append(dict(zip(keys, map(get, items))))  # noqa: B905 (lengths equal by construction)
            elif kind == _LIST:
                append(list(map(get, items)))
            elif kind == _TUPLE:
                append(tuple(map(get, items)))
            else:
                append(dict(zip(map(get, keys), map(get, items))))  # noqa: B905
        return values[self.root]


def compile_plan(doc: dict[str, Any], data_len: int, data_start: int, path: str) -> Plan:
    """Check a parsed header completely and compile it; ``StorageCorruptError`` naming the first fault."""
    consts: list[Any] = []
    leaves: list[tuple[Any, ...]] = []
    containers: list[tuple[int, list[int], list[int]]] = []
    unhashable: set[int] = set()
    layouts: dict[tuple[Any, ...], tuple[Any, tuple[int, ...], int]] = {}
    stack: list[list[Any]] = []  # frames: [tag, items needed, item references]
    extent = 0
    done = False
    root = 0
    for token in doc["tokens"]:
        kind = type(token)
        if kind is list and token and type(token[0]) is str:
            tag = token[0]
            if (tag == "A" and len(token) == 4) or (tag == "T" and len(token) == 5 and type(token[4]) is bool):
                dtype_token, shape_token = token[1], token[2]
                if type(dtype_token) is not str:  # checked before the lookup: a list is not even hashable
                    raise StorageCorruptError(path, f"bad dtype {dtype_token!r} (a dtype is named by a string)")
                if (
                    type(shape_token) is not list
                    or len(shape_token) > MAX_NDIM
                    or not all(type(d) is int and d >= 0 for d in shape_token)
                ):
                    raise StorageCorruptError(path, f"bad shape {shape_token!r}")
                key = (tag, dtype_token, tuple(shape_token))
                layout = layouts.get(key)
                if layout is None:
                    layout = layouts[key] = _leaf_layout(tag, dtype_token, shape_token, path)
                dtype, shape, nbytes = layout
                offset = token[3]
                if type(offset) is not int or offset < 0 or offset + nbytes > data_len:
                    raise StorageCorruptError(path, f"array bytes [{offset}, +{nbytes}) lie outside the data region")
                extent = max(extent, offset + nbytes)
                ref = 3 * len(leaves) + _LEAF
                if tag == "A":
                    leaves.append((False, dtype, shape, offset, nbytes, False))
                    unhashable.add(ref)
                else:
                    grad = token[4]
                    if grad and not (dtype.is_floating_point or dtype.is_complex):
                        raise StorageCorruptError(path, f"cannot build a leaf (requires_grad on a {dtype} tensor)")
                    leaves.append((True, dtype, shape, offset, nbytes, grad))
            elif tag in ("l", "t", "d") and len(token) == 2 and type(token[1]) is int and token[1] >= 0:
                need = token[1] * (2 if tag == "d" else 1)
                if need:
                    stack.append([tag, need, []])
                    continue
                ref = _close(tag, [], containers, unhashable, path)
            else:
                ref = 3 * len(consts) + _CONST
                consts.append(scalar(token, path))
        elif token is None or kind is str or kind is int or kind is bool:
            ref = 3 * len(consts) + _CONST
            consts.append(token)
        else:
            raise StorageCorruptError(path, f"unexpected token {token!r}")
        while stack:
            frame = stack[-1]
            items = frame[2]
            items.append(ref)
            if len(items) < frame[1]:
                break
            stack.pop()
            ref = _close(frame[0], items, containers, unhashable, path)
        else:
            if done:
                raise StorageCorruptError(path, "tokens continue after the tree is complete")
            done, root = True, ref
    if stack or not done:
        raise StorageCorruptError(path, "the token list ends before the tree is complete")
    if extent != data_len:
        raise StorageCorruptError(
            path, f"the header declares {data_len} bytes of array data, but its arrays end at byte {extent}"
        )
    span = doc.get("tensor_span")
    _check_tensor_span(span, leaves, data_len, path)
    bases = (0, len(consts), len(consts) + len(leaves))  # slots: constants, then leaves, then containers

    def slots(refs: list[int]) -> tuple[int, ...]:
        return tuple(bases[ref % 3] + ref // 3 for ref in refs)

    def compiled_keys(kind: int, keys: list[int]) -> tuple[Any, ...]:
        return tuple(consts[ref // 3] for ref in keys) if kind == _NAMED else slots(keys)

    compiled = tuple((kind, slots(items), compiled_keys(kind, keys)) for kind, items, keys in containers)
    return Plan(
        data_start,
        data_len,
        tuple(leaves),
        consts,
        compiled,
        slots([root])[0],
        tuple(span) if span is not None else None,
        len(doc["tokens"]),
    )


def _close(tag: str, items: list[int], containers: list[Any], unhashable: set[int], path: str) -> int:
    """Record a container whose items are all known; its reference."""
    ref = 3 * len(containers) + _CONTAINER
    if tag == "d":
        keys = items[0::2]
        if any(k in unhashable for k in keys):
            raise StorageCorruptError(path, "unusable dict key (a list, a dict or a numpy array)")
        named = all(k % 3 == _CONST for k in keys)
        containers.append((_NAMED if named else _DICT, items[1::2], keys))
        unhashable.add(ref)
    elif tag == "l":
        containers.append((_LIST, items, []))
        unhashable.add(ref)
    else:
        containers.append((_TUPLE, items, []))
        if any(i in unhashable for i in items):
            unhashable.add(ref)
    return ref


def _leaf_layout(tag: str, dtype_token: str, shape_token: list[int], path: str) -> tuple[Any, tuple[int, ...], int]:
    """(dtype, shape, byte count) of an array leaf whose shape is a list of non-negative ints."""
    dtype = numpy_dtype(dtype_token, path) if tag == "A" else torch_dtype(dtype_token, path)
    shape = tuple(shape_token)
    if math.prod(d for d in shape if d) * dtype.itemsize > MAX_SPAN:  # even with a zero among them
        raise StorageCorruptError(path, f"bad shape {shape_token!r} (no array can be that large)")
    return dtype, shape, math.prod(shape) * dtype.itemsize


def _check_tensor_span(span: Any, leaves: list[tuple[Any, ...]], data_len: int, path: str) -> None:
    """The one span of the data region that holds every tensor (a device copy moves it whole): checked here, so a
    device load has nothing left to refuse."""
    tensors = [(offset, nbytes) for is_tensor, _d, _s, offset, nbytes, _g in leaves if is_tensor]
    if span is None:
        if tensors:
            raise StorageCorruptError(path, "the header lists tensors but no tensor_span")
        return
    lo, hi = span
    if not lo <= hi <= data_len:
        raise StorageCorruptError(path, f"tensor_span {span} lies outside the data region")
    for offset, nbytes in tensors:
        if not lo <= offset <= offset + nbytes <= hi:
            raise StorageCorruptError(path, f"tensor bytes [{offset}, +{nbytes}) lie outside tensor_span {span}")


# ---- the cache --------------------------------------------------------------------------------
_plans: dict[tuple[bytes, int], Plan] = {}
_kept = [0, 0]  # header bytes and leaves held
_lock = threading.Lock()  # for adding and evicting; lookups take no lock


def plan_for(header: bytes, prelude: Prelude, path: str) -> Plan:
    """The plan of a header read from a file whose prelude is checked: CRC first, then the cache or a compile."""
    check_header_crc(header, prelude, path)
    key = (header, prelude.data_len)
    plan = _plans.get(key)
    if plan is None:
        plan = compile_plan(parse_header(header, path), prelude.data_len, prelude.data_start, path)
        if len(plan.leaves) <= PLAN_LEAVES_KEPT and len(header) <= PLAN_BYTES_KEPT // 4:
            _keep(key, plan)
    return plan


def _keep(key: tuple[bytes, int], plan: Plan) -> None:
    with _lock:
        if key in _plans:
            return
        _plans[key] = plan
        _kept[0] += len(key[0])
        _kept[1] += len(plan.leaves)
        while len(_plans) > PLANS_KEPT or _kept[0] > PLAN_BYTES_KEPT or _kept[1] > 4 * PLAN_LEAVES_KEPT:
            oldest = next(iter(_plans))
            dropped = _plans.pop(oldest)
            _kept[0] -= len(oldest[0])
            _kept[1] -= len(dropped.leaves)


def _reset_after_fork() -> None:
    global _lock
    _lock = threading.Lock()  # a parent thread may have held it at the fork


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)
