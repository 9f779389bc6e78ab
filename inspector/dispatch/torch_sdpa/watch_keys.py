"""The keys a ``watch()`` counts calls under: a call's exact signature, and the same without its lengths.

NOTE [ Growing sequences ]
A decode loop makes a call signature never seen before at every step: its KV cache grows by a
token, so the key and value lengths (and the strides that follow from them) change. Deciding
such a call from scratch (reading its facts, PyTorch's choice, grouping) costs tens of
microseconds, far more than a lookup. So a new signature is first looked up by its *relaxed*
key: the signature without the sequence lengths and the strides other than the last, keeping
what PyTorch's checks read of the lengths (zero lengths, equal lengths, one query token, how a
mask broadcasts over them). When a call with the same relaxed key was seen, only PyTorch's own
choice is asked (``torch._fused_sdp_choice``, about 1 µs, and ten times that inside a model); if
it names the same backend, the call joins that decision's group. On the CPU of a release the
tests cover (``LENGTH_FREE_RELEASES``) PyTorch is not asked: its CPU checks (flash, else math)
read the lengths only through what the relaxed key keeps (a zero length, how a mask broadcasts
over them), so every call of one relaxed key gets the same answer, and the length-grid test
holds the watch's answers to PyTorch's there. Its own facts (and so its own reasons) are derived
from its key only when a kept call is read. A signature that joined a group this way is not
remembered by itself (a decode step's lengths do not come back; the last signature is).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import torch

from inspector.dispatch.torch_sdpa.flags import READERS
from inspector.dispatch.torch_sdpa.names import CUDNN, EFFICIENT, FLASH, MATH, OVERRIDEABLE

if TYPE_CHECKING:
    from inspector.dispatch.torch_sdpa.facts import SdpaCall

LENGTH_FREE_RELEASES = ((2, 13),)  # (major, minor): CPU choices checked to be the same for one relaxed key
_grad_enabled = torch.is_grad_enabled
_flash, _efficient, _cudnn, _math, _overrideable = (READERS[n] for n in (FLASH, EFFICIENT, CUDNN, MATH, OVERRIDEABLE))
_order = torch._C._get_sdp_priority_order
_Tensor = torch.Tensor
_CPU = torch.device("cpu")

# Where each part sits in a signature.
CLASSES, DEVICES, SHAPES, STRIDES, DTYPES = slice(0, 3), slice(3, 6), slice(6, 9), slice(9, 12), slice(12, 15)
GRAD, MASK, OPTIONS, OFF_CPU = 15, 16, slice(17, 22), 22
SHAPE_Q, SHAPE_K, SHAPE_V, STRIDE_Q = 6, 7, 8, 9
# Where each part sits in a mask's part: class, device, shape, dtype, strides, requires_grad.
MASK_SHAPE, MASK_STRIDES = 2, 4


def signature(
    query: Any,
    key: Any,
    value: Any,
    attn_mask: Any = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> tuple[Any, ...]:
    """Everything PyTorch's choice reads for one call, as a hashable key (straight-line: it runs
    on every watched call). Raises for calls it cannot read (nested tensors, bad arguments)."""
    # ``is_cpu`` is a flag read; ``.device`` makes a new object and ``.device.type`` a new string
    if attn_mask is None:
        mask = None
        cpu = query.is_cpu and key.is_cpu and value.is_cpu
    else:
        cpu = query.is_cpu and key.is_cpu and value.is_cpu and attn_mask.is_cpu
        mask = (
            attn_mask.__class__,
            _CPU if cpu else attn_mask.device,
            attn_mask.shape,
            attn_mask.dtype,
            attn_mask.stride(),
            attn_mask.requires_grad,
        )
    if cpu:
        on_query = on_key = on_value = _CPU
    else:
        on_query, on_key, on_value = query.device, key.device, value.device
    found: tuple[Any, ...] = (
        query.__class__,
        key.__class__,
        value.__class__,
        on_query,
        on_key,
        on_value,
        query.shape,
        key.shape,
        value.shape,
        query.stride(),
        key.stride(),
        value.stride(),
        query.dtype,
        key.dtype,
        value.dtype,
        # PyTorch reads one autograd fact: grad mode on and any input requiring grad
        _grad_enabled() and (query.requires_grad or key.requires_grad or value.requires_grad),
        mask,
        dropout_p,
        is_causal,
        enable_gqa,
        _flash(),
        _math(),
    )
    if not cpu:
        found += off_cpu(query, key, value)
    return found


def off_cpu(query: Any, key: Any, value: Any) -> tuple[Any, ...]:
    """What a signature adds off the CPU: the other flags, alignment, determinism and the priority order."""
    return (
        _efficient(),
        _cudnn(),
        _overrideable(),
        query.storage_offset(),
        key.storage_offset(),
        value.storage_offset(),
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
        tuple(_order()),
    )


def _release() -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in torch.__version__.split(".")[:2])
    except ValueError:
        return ()


CPU_LENGTH_FREE = _release() in LENGTH_FREE_RELEASES


def relaxed(found: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """``found`` without its sequence lengths (NOTE [ Growing sequences ]); ``None`` for calls
    PyTorch cannot be asked about cheaply (tensor subclasses) or without a length dimension."""
    if found[0] is not _Tensor or found[1] is not _Tensor or found[2] is not _Tensor:
        return None
    q, k, v = found[6], found[7], found[8]  # found[SHAPES], without making the slice
    if len(q) < 2 or len(k) < 2 or len(v) < 2:
        return None
    q_len, kv_len = q[-2], k[-2]
    mask = found[MASK]
    if mask is not None:
        shape = mask[MASK_SHAPE]
        if mask[0] is not _Tensor or len(shape) < 2:
            return None
        mask = (
            mask[1],
            mask[3],
            mask[5],
            len(shape),
            shape[:-2],
            mask[MASK_STRIDES][-1],
            shape[-2] == 1,
            shape[-2] == q_len,
            shape[-1] == 1,
            shape[-1] == kv_len,
        )
    qs, ks, vs = found[9], found[10], found[11]
    # Straight-line (no helpers, no generators): a decode loop runs this once a step. Slicing a
    # torch.Size makes a new Size (about 0.3 µs), so 4-D shapes (nearly every call) are indexed.
    return (
        found[3:6],
        len(q),
        q[:-2] if len(q) != 4 else (q[0], q[1]),
        q[-1],
        len(k),
        k[:-2] if len(k) != 4 else (k[0], k[1]),
        k[-1],
        len(v),
        v[:-2] if len(v) != 4 else (v[0], v[1]),
        v[-1],
        qs[-1] if qs else None,
        ks[-1] if ks else None,
        vs[-1] if vs else None,
        found[12:16],
        mask,
        found[17:],
        q_len == kv_len,
        q_len == 0,
        kv_len == 0,
        q_len == 1,
        v[-2] == kv_len,
    )


def facts_for(facts: SdpaCall, found: tuple[Any, ...]) -> SdpaCall:
    """The facts of the call whose signature is ``found``, from those of a call that shares its
    relaxed key (``facts`` itself when nothing differs)."""
    shapes, strides, mask = found[SHAPES], found[STRIDES], found[MASK]
    mask_shape = None if mask is None else tuple(mask[MASK_SHAPE])
    if shapes == facts.shapes and strides == facts.strides and mask_shape == facts.mask_shape:
        return facts
    cuda = facts.cuda
    if cuda is not None:
        cuda = cuda._replace(numels=tuple(math.prod(s) for s in shapes))
    last_stride = None if mask is None or not mask[MASK_STRIDES] else mask[MASK_STRIDES][-1]
    return facts._replace(
        shapes=tuple(shapes), strides=tuple(strides), mask_shape=mask_shape, mask_last_stride=last_stride, cuda=cuda
    )
