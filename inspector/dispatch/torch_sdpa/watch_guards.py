"""The first-level check of ``watch()``: does a call have a signature seen before, asked of PyTorch in C++.

NOTE [ The first-level check ]
Building a call's signature in Python (``watch_keys.signature``) reads a dozen tensor
attributes, each a C++ getter that makes a new object (``shape``, ``stride()``): about 1.5 µs,
and several times that inside a model, where each read misses the caches the model's own work
filled. PyTorch has a C++ check of exactly these facts of tensors: the one ``torch.compile``
guards a compiled graph with (``torch._C._dynamo.guards.TensorGuards``: Python class, dispatch
keys (device type included), dtype, device index, requires_grad, sizes and strides), about
0.3 µs for q, k and v together. So once a signature repeats (``watch.STREAK`` calls in a row),
a watch builds a matcher for it: that check over the call's tensors, and the rest of the
signature (options, enable flags, grad mode where an input requires grad, and off the CPU what
``watch_keys.off_cpu`` adds) compared as values. A call it matches has exactly that signature,
so it gets that signature's decision; any other call takes the dictionary path, so a matcher
can make a call cheaper but never change its decision.

The check is PyTorch's private API, its constructor has changed between releases and crashes
when called the wrong way, so matchers are built only on the PyTorch versions the tests cover
(``TESTED``) and only after the check passed a test of its own on this build (``available``,
free sizes and strides included: NOTE [ A growing cache's check ]);
elsewhere every call takes the dictionary path, as before. The check is stricter than the
signature in places (it also compares dispatch keys, and it fails when one tensor object is
passed twice, so a call such as ``(x, x, x)`` is checked with ``x`` once): a stricter check only
sends a call to the dictionary path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from inspector.dispatch.torch_sdpa.flags import read_flash, read_math
from inspector.dispatch.torch_sdpa.watch_keys import (
    GRAD,
    MASK,
    MASK_SHAPE,
    MASK_STRIDES,
    OFF_CPU,
    OPTIONS,
    SHAPES,
    STRIDES,
    off_cpu,
)

TESTED = ((2, 13),)  # (major, minor) releases whose TensorGuards the tests cover
Matcher = Callable[..., bool]  # called with a call's own (*args, **kwargs)

_Tensor = torch.Tensor
_strided = torch.strided
_grad_enabled = torch.is_grad_enabled
_works: list[bool] = []  # the self-test's verdict, once it ran


def _tensor_guards() -> Any:
    """PyTorch's ``TensorGuards`` class on a tested release, else ``None``."""
    try:
        release = tuple(int(part) for part in torch.__version__.split(".")[:2])
    except ValueError:
        return None
    if release not in TESTED:
        return None
    guards = getattr(getattr(torch._C, "_dynamo", None), "guards", None)
    return getattr(guards, "TensorGuards", None)


_TensorGuards = _tensor_guards()


def guard_check(
    tensors: Sequence[torch.Tensor],
    shapes: Sequence[Sequence[int | None]] | None = None,
    strides: Sequence[Sequence[int | None]] | None = None,
) -> Callable[..., bool]:
    """PyTorch's C++ check that tensors have exactly these tensors' facts (static sizes and
    strides: ``shapes`` and ``strides`` where the caller read them already; ``None`` for a size
    or stride any value of which passes, as ``watch_decode`` asks for a cache's length)."""
    return _TensorGuards(
        *tensors,
        dynamic_dims_sizes=[list(s) for s in shapes or [t.shape for t in tensors]],
        dynamic_dims_strides=[list(s) for s in strides or [t.stride() for t in tensors]],
    ).check


def available() -> bool:
    """Whether matchers can be built here: a tested release whose check says what this module needs
    of it (the same facts match; another size, stride, dtype, requires_grad, class or non-tensor does not)."""
    if not _works:
        ok = False
        if _TensorGuards is not None:
            try:
                t = torch.zeros(2, 3, 4)
                check = guard_check((t, torch.zeros(2, 3, 4)))
                others = (
                    torch.zeros(2, 3, 5),
                    torch.zeros(2, 4, 3).transpose(1, 2),
                    torch.zeros(2, 3, 4, dtype=torch.float64),
                    torch.zeros(2, 3, 4, requires_grad=True),
                    torch.nn.Parameter(torch.zeros(2, 3, 4)),
                    torch.zeros(2, 12),
                    1.0,
                )
                ok = check(t, torch.zeros(2, 3, 4)) is True and not any(check(t, o) for o in others)
                free = guard_check((t,), [[2, None, 4]], [[None, None, 1]])  # any length, the same last stride
                ok = ok and free(torch.zeros(2, 7, 4)) is True
                ok = ok and not any(free(o) for o in (torch.zeros(2, 7, 5), torch.zeros(2, 4, 7).transpose(1, 2)))
            except Exception:  # another build's API: every call takes the dictionary path
                ok = False
        _works.append(ok)
    return _works[0]


def _parts(
    query: Any,
    key: Any,
    value: Any,
    attn_mask: Any = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> tuple[Any, Any, Any, Any]:
    return query, key, value, attn_mask


def matcher(found: tuple[Any, ...], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Matcher | None:
    """For the call ``(args, kwargs)`` whose signature is ``found``: a function that says, from
    another call's own arguments, whether its signature is ``found`` too (NOTE [ The first-level
    check ]). ``None`` where none can be built: not available here, tensor subclasses, nested or
    sparse inputs, a mask passed as one of q, k and v, or q passed again as v alone."""
    if not available():
        return None
    query, key, value, attn_mask = _parts(*args, **kwargs)
    same_qk, same_kv = key is query, value is key
    if value is query and not same_qk:
        return None
    picked = (0,) + (() if same_qk else (1,)) + (() if same_kv or value is query else (2,))  # q, k, v once each
    unique = tuple((query, key, value)[i] for i in picked)
    shapes = [found[SHAPES][i] for i in picked]
    strides = [found[STRIDES][i] for i in picked]
    has_mask = attn_mask is not None
    if has_mask:
        if any(attn_mask is t for t in unique):
            return None
        unique += (attn_mask,)
        shapes.append(found[MASK][MASK_SHAPE])
        strides.append(found[MASK][MASK_STRIDES])
    if any(t.__class__ is not _Tensor or t.layout is not _strided or t.is_nested for t in unique):
        return None
    check = guard_check(unique, shapes, strides)
    dropout, causal, gqa, flash, math = found[OPTIONS]
    grad = found[GRAD]
    mode = query.requires_grad or key.requires_grad or value.requires_grad  # then grad mode is part of it
    tail = found[OFF_CPU:]
    count = len(unique) - has_mask

    def matches(
        query: Any,
        key: Any,
        value: Any,
        attn_mask: Any = None,
        dropout_p: float = 0.0,
        is_causal: bool = False,
        scale: float | None = None,
        enable_gqa: bool = False,
    ) -> bool:
        if (key is query) is not same_qk or (value is key) is not same_kv or (attn_mask is not None) is not has_mask:
            return False
        if count == 3:
            tensors_match = check(query, key, value, attn_mask) if has_mask else check(query, key, value)
        elif count == 2:
            other = value if same_qk else key
            tensors_match = check(query, other, attn_mask) if has_mask else check(query, other)
        else:
            tensors_match = check(query, attn_mask) if has_mask else check(query)
        return bool(
            tensors_match
            and dropout_p == dropout
            and is_causal == causal
            and enable_gqa == gqa
            and read_flash() == flash
            and read_math() == math
            and (not mode or _grad_enabled() == grad)
            and (not tail or off_cpu(query, key, value) == tail)
        )

    return matches
