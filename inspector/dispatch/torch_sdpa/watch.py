"""``watch()``: which SDPA backend PyTorch actually ran for each call in a block, cheap enough to leave on.

    with torch_sdpa.watch() as calls:
        model(x)
    calls.table()        # grouped by backend, module, dtype and shapes, with counts and next steps

Each call is counted under its call signature (shapes, strides, dtypes, devices, mask, options,
grad mode and the enable flags): the first call of a signature asks PyTorch itself which
backend it runs (``torch._fused_sdp_choice``; the ported rules where PyTorch cannot answer),
every later one is a dictionary lookup and a count (NOTE [ Bounded watching ]). The call itself
runs unchanged; while a profiler records, inside a ``torch.profiler.record_function(
"torch_sdpa:<backend>")`` range, so the choice shows in its trace. Only calls made by the thread
that entered the block are recorded.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from inspector.dispatch.torch_sdpa import interception
from inspector.dispatch.torch_sdpa.facts import facts_from_call
from inspector.dispatch.torch_sdpa.flags import READERS
from inspector.dispatch.torch_sdpa.modules import ModulePaths
from inspector.dispatch.torch_sdpa.names import CUDNN, EFFICIENT, FLASH, MATH, OVERRIDEABLE
from inspector.dispatch.torch_sdpa.prediction import pytorch_choice
from inspector.dispatch.torch_sdpa.tables import choose
from inspector.dispatch.torch_sdpa.watch_records import (
    MAX_GROUPS,
    NATIVE,
    UNKNOWN,
    Decision,
    Group,
    WatchedCall,
    WatchedCalls,
    WatchGroup,
    WatchTable,
    coarse_key,
)

__all__ = ["WatchGroup", "WatchTable", "WatchedCall", "WatchedCalls", "last_watch", "watch"]

MAX_SIGNATURES = 4096
_last: list[WatchedCalls] = []
_get_ident = threading.get_ident
_grad_enabled = torch.is_grad_enabled
_profiler_on = torch._C._autograd._profiler_enabled
_flash, _efficient, _cudnn, _math, _overrideable = (READERS[n] for n in (FLASH, EFFICIENT, CUDNN, MATH, OVERRIDEABLE))
_order = torch._C._get_sdp_priority_order


def signature(
    query: Any, key: Any, value: Any, attn_mask: Any = None, dropout_p: float = 0.0, is_causal: bool = False,
    scale: float | None = None, enable_gqa: bool = False,
) -> tuple[Any, ...]:
    """Everything PyTorch's choice reads for one call, as a hashable key (straight-line: it runs
    on every watched call). Raises for calls it cannot read (nested tensors, bad arguments)."""
    device, key_device, value_device = query.device, key.device, value.device
    mask = None if attn_mask is None else (
        attn_mask.__class__, attn_mask.device, attn_mask.shape, attn_mask.dtype, attn_mask.stride(),
        attn_mask.requires_grad,
    )
    found: tuple[Any, ...] = (
        query.__class__, key.__class__, value.__class__, device, key_device, value_device,
        query.shape, key.shape, value.shape, query.stride(), key.stride(), value.stride(),
        query.dtype, key.dtype, value.dtype, query.requires_grad, key.requires_grad, value.requires_grad,
        _grad_enabled(), mask, dropout_p, is_causal, enable_gqa, _flash(), _math(),
    )
    if device.type != "cpu" or key_device != device or value_device != device or (
        mask is not None and mask[1] != device
    ):  # off the CPU, the other flags, alignment, determinism and the priority order matter too
        found += (_efficient(), _cudnn(), _overrideable(), query.storage_offset(), key.storage_offset(),
                  value.storage_offset(), torch.are_deterministic_algorithms_enabled(),
                  torch.is_deterministic_algorithms_warn_only_enabled(), tuple(_order()))
    return found


def _decide(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Decision:
    """PyTorch's choice for a call seen for the first time (the ported rules where it cannot say)."""
    facts = facts_from_call(*args, **kwargs)
    pytorch = pytorch_choice(*args, **kwargs)
    if pytorch is not None:
        return Decision(pytorch.name.lower(), "pytorch", facts)
    return Decision(choose(facts).name.lower(), "inspector", facts)


class _PreboundCalls(TorchFunctionMode):
    """Sends calls of the SDPA builtin that bypass the module attribute (references taken before
    the block) to the watch; calls through the attribute are already seen by the wrapper."""

    def __init__(self, around: Any) -> None:
        super().__init__()
        self.around = around

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if func is interception.BUILTIN_SDPA and not interception.inside_wrapper():
            return self.around(func, tuple(args), dict(kwargs))
        return func(*args, **kwargs)


class watch:  # lower-case: used like a function, ``with watch() as calls:``
    """Record every ``F.scaled_dot_product_attention`` call made inside the block (results unchanged).

    Every call is counted; the first ``keep`` calls are also kept in full (``calls[i]``), so a
    watched training run or a long ``generate()`` uses bounded memory. ``prebound=True`` also
    records calls made through a reference to the function taken before the block (``from
    torch.nn.functional import scaled_dot_product_attention``), through a ``TorchFunctionMode``;
    while a torch function mode is active, ``nn.TransformerEncoderLayer`` and
    ``nn.MultiheadAttention`` skip their native fast paths and run their Python code (the same
    results, through the SDPA calls this records).
    """

    def __init__(self, *, keep: int = 1000, prebound: bool = False) -> None:
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
            raise ValueError(f"watch(keep=...) is how many calls to keep in full: a whole number >= 0, got {keep!r}")
        self.keep = keep
        self.prebound = bool(prebound)
        self.calls = WatchedCalls(keep)
        self._thread = 0
        self._mode: _PreboundCalls | None = None
        self._slots: dict[tuple[Any, ...], Decision] = {}
        self._paths = ModulePaths()

    def __enter__(self) -> WatchedCalls:
        self._thread = _get_ident()
        interception.add(self._around, self._native)
        if self.prebound:
            interception.track_depth(True)
            self._mode = _PreboundCalls(self._around)
            try:
                self._mode.__enter__()
            except BaseException:
                interception.track_depth(False)
                interception.remove(self._around, self._native)
                raise
        return self.calls

    def __exit__(self, *exc_info: object) -> None:
        try:
            if self._mode is not None:
                self._mode.__exit__(None, None, None)
                self._mode = None
                interception.track_depth(False)
        finally:
            interception.remove(self._around, self._native)
            self._slots.clear()
            _last[:] = [self.calls]

    # -- the hot path -------------------------------------------------------------------------
    def _around(self, call: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if _get_ident() != self._thread:
            return call(*args, **kwargs)
        try:
            key = signature(*args, **kwargs)
        except Exception:  # a call no signature can describe: decided on its own, every time
            return self._unkeyed(call, args, kwargs)
        decision = self._slots.get(key)
        if decision is None:
            decision = self._first_seen(key, args, kwargs)
        decision.group.count += 1  # type: ignore[union-attr]  # ``_count``, inlined: this runs on every call
        calls = self.calls
        index = calls.seen
        calls.seen = index + 1
        if index < self.keep:
            module = self._paths.caller(sys._getframe(1))
            decision.group.note_module(module)  # type: ignore[union-attr]
            calls.calls.append(WatchedCall(index, decision, module))
        if _profiler_on():
            with torch.profiler.record_function(f"torch_sdpa:{decision.backend}"):
                return call(*args, **kwargs)
        return call(*args, **kwargs)

    def _count(self, decision: Decision, call: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        group = decision.group
        calls = self.calls
        group.count += 1  # type: ignore[union-attr]
        index = calls.seen
        calls.seen = index + 1
        if index < self.keep:
            module = self._paths.caller(sys._getframe(1))
            group.note_module(module)  # type: ignore[union-attr]
            calls.calls.append(WatchedCall(index, decision, module))
        if _profiler_on():
            with torch.profiler.record_function(f"torch_sdpa:{decision.backend}"):
                return call(*args, **kwargs)
        return call(*args, **kwargs)

    def _first_seen(self, key: tuple[Any, ...], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Decision:
        if len(self._slots) >= MAX_SIGNATURES:
            self._slots.clear()
        decision = self._grouped(_decide(args, kwargs))
        self._slots[key] = decision
        return decision

    def _unkeyed(self, call: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            decision = _decide(args, kwargs)
        except Exception as exc:  # a call the inspector cannot read: PyTorch answers it, in its own words
            result = call(*args, **kwargs)  # a call PyTorch refuses raises here, and nothing is recorded
            note = f"the inspector could not read this call ({type(exc).__name__}: {exc})"
            self._count(self._grouped(Decision(UNKNOWN, "inspector", None, note)), _returns(result), (), {})
            return result
        return self._count(self._grouped(decision), call, args, kwargs)

    def _grouped(self, decision: Decision) -> Decision:
        """``decision`` counted in its group (a new group when none matches)."""
        groups = self.calls._groups
        key = coarse_key(decision)
        group = groups.get(key)
        if group is None and len(groups) >= MAX_GROUPS:
            key = ("other",)
            group = groups.get(key)
            if group is None:
                other = Decision("other", "inspector", None, f"more than {MAX_GROUPS} kinds of call; counted here")
                group = groups[key] = Group(other, self.calls.seen)
        if group is None:
            group = groups[key] = Group(decision, self.calls.seen)
            group.note_module(self._paths.caller())
        group.saw(decision, "")
        decision.group = group
        return decision

    def _native(self, name: str) -> None:
        if _get_ident() != self._thread:
            return
        groups = self.calls._groups
        key = (NATIVE, name)
        group = groups.get(key)
        if group is None:
            note = f"torch.{name}: a native fused path that picks its kernel in C++; its SDPA choice is not visible"
            decision = Decision(NATIVE, "pytorch", None, note, name)
            group = groups[key] = decision.group = Group(decision, self.calls.seen)
        group.count += 1
        index = self.calls.seen
        self.calls.seen = index + 1
        if index < self.keep:
            module = self._paths.caller(sys._getframe(1))
            group.note_module(module)
            self.calls.calls.append(WatchedCall(index, group.decision, module))


def _returns(result: Any) -> Any:
    return lambda: result


def last_watch() -> WatchedCalls | None:
    """The calls of the most recently finished ``watch()`` block (the Dispatch tab's "What ran")."""
    return _last[0] if _last else None
