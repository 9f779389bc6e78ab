"""A watched decode loop's calls, checked and counted in one frame (NOTE [ A growing cache's check ]).

NOTE [ A growing cache's check ]
In a decode loop every step has a new key/value length, so no signature repeats for more calls
than the model has layers, fewer than a first-level matcher waits for (``watch.STREAK``), and
each call would build its signature in Python. On the CPU of a release where one relaxed key
gets one answer (NOTE [ Growing sequences ]), a call that joined a decision that way gets a
*decode handler*: the same C++ check as a matcher (``watch_guards``), with the key and value's
length and their strides but the last free, and in Python what the relaxed key keeps of the
lengths (the key/value length against the query's, zero, and the value's). A call it takes has
that relaxed key and the same query, so it gets that decision; its length widens the group's
range. It takes calls passing q, k and v by position with the same keyword arguments as the call
it was built from (what models do at every step), without a mask (whose shape follows the
lengths), once the calls kept in full are past and while no profiler records; any other call
goes on to the watch's own handler, unchanged. Inside a model, where each call runs on caches
the model's own work filled, every Python frame counts: this handler replaces the watch's own
in the interception (``interception.replace``), so a decode call costs one frame, not three.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import torch

from inspector.dispatch.torch_sdpa.flags import read_flash, read_math
from inspector.dispatch.torch_sdpa.watch_guards import available, guard_check
from inspector.dispatch.torch_sdpa.watch_keys import GRAD, MASK, OFF_CPU, OPTIONS, SHAPE_K, SHAPE_Q, SHAPE_V, STRIDE_Q

if TYPE_CHECKING:
    from collections.abc import Callable

    from inspector.dispatch.torch_sdpa.interception import Handler
    from inspector.dispatch.torch_sdpa.watch_records import Decision, WatchedCalls

_Tensor = torch.Tensor
_strided = torch.strided
_grad_enabled = torch.is_grad_enabled
_get_ident = threading.get_ident
_profiler_on = torch._C._autograd._profiler_enabled


def decode_handler(
    found: tuple[Any, ...],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    decision: Decision,
    calls: WatchedCalls,
    fallback: Handler,
    refused: Callable[[Decision, int, Exception], None],
) -> Handler | None:
    """For the call ``(args, kwargs)`` whose signature is ``found`` and whose decision is
    ``decision``: an interception handler that counts the calls of the same decode loop under
    ``decision`` and passes any other call to ``fallback`` (the watch's handler). ``refused``
    moves a call PyTorch raised on to a refusal's group. ``None`` where none can be built: not
    available here, off the CPU, a mask, q, k and v not passed by position, k or v being q,
    tensor subclasses, nested or sparse inputs, or a group without a length range."""
    lengths = decision.group.kv_lens  # type: ignore[union-attr]
    if len(args) != 3 or len(found) != OFF_CPU or found[MASK] is not None or len(lengths) != 2:
        return None
    query, key, value = args
    if key is query or value is query or any(isinstance(v, _Tensor) for v in kwargs.values()):
        return None
    same_kv = value is key
    tensors = (query, key) if same_kv else (query, key, value)
    if not available() or any(t.__class__ is not _Tensor or t.layout is not _strided or t.is_nested for t in tensors):
        return None
    shapes = [list(s) for s in found[SHAPE_Q : SHAPE_Q + len(tensors)]]
    strides = [list(s) for s in found[STRIDE_Q : STRIDE_Q + len(tensors)]]
    for dims, steps in zip(shapes[1:], strides[1:], strict=True):  # k, and v unless it is k: any length
        if len(dims) < 2:
            return None
        dims[-2] = None
        steps[:-1] = [None] * (len(steps) - 1)
    check = guard_check(tensors, shapes, strides)
    q_len, kv_len, v_len = found[SHAPE_Q][-2], found[SHAPE_K][-2], found[SHAPE_V][-2]
    equal, empty, v_same = q_len == kv_len, kv_len == 0, v_len == kv_len
    flash, math = found[OPTIONS][3:5]
    grad = found[GRAD]
    mode = any(t.requires_grad for t in tensors)  # then grad mode is part of the signature
    options = dict(kwargs)
    group, thread = decision.group, _get_ident()  # built by the watch's thread, for it alone

    def handler(call: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if len(args) == 3 and kwargs == options and _get_ident() == thread:
            query, key, value = args
            if (
                (value is key) is same_kv
                and key is not query
                and (check(query, key) if same_kv else check(query, key, value))
            ):
                kv = key.size(-2)
                index = calls.seen
                if (
                    (kv == q_len) is equal
                    and (kv == 0) is empty
                    and (value.size(-2) == kv) is v_same
                    and read_flash() == flash
                    and read_math() == math
                    and (not mode or _grad_enabled() == grad)
                    and index >= calls.keep
                    and not _profiler_on()
                ):
                    group.count += 1  # type: ignore[union-attr]
                    calls.seen = index + 1
                    if kv > lengths[1]:  # ``Group.widen``, inlined
                        lengths[1] = kv
                    elif kv < lengths[0]:
                        lengths[0] = kv
                    try:
                        return call(*args, **kwargs)
                    except Exception as exc:
                        refused(decision, index, exc)
                        raise
        return fallback(call, args, kwargs)

    return handler
