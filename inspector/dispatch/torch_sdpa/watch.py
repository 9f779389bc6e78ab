"""``watch()``: which SDPA backend PyTorch actually ran for each call in a block, cheap enough to leave on.

    with torch_sdpa.watch() as calls:
        model(x)
    calls.table()        # grouped by backend, module, dtype and shapes, with counts and next steps

Each call is counted under its call signature (shapes, strides, dtypes, devices, mask, options,
grad mode and the enable flags): the first call of a signature asks PyTorch itself which
backend it runs (``torch._fused_sdp_choice``; the ported rules where PyTorch cannot answer),
every later one is a dictionary lookup and a count (NOTE [ Bounded watching ]), or, once a
signature repeats, one C++ check and a count (NOTE [ The first-level check ]); a signature that
differs from a seen one only in its sequence lengths costs one more question to PyTorch (NOTE
[ Growing sequences ]), and on the CPU a decode loop's later calls are checked and counted in one
frame (NOTE [ A growing cache's check ]). A call PyTorch refuses (it raises) is counted as
refused, with its error. The call itself runs unchanged; while a profiler records, inside a
``torch.profiler.record_function("torch_sdpa:<backend>")`` range, so the choice shows in its
trace. Only calls made by the thread that entered the block are recorded.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from inspector.dispatch.torch_sdpa import interception
from inspector.dispatch.torch_sdpa.facts import facts_from_call
from inspector.dispatch.torch_sdpa.modules import ModulePaths
from inspector.dispatch.torch_sdpa.prediction import pytorch_choice, pytorch_choice_name
from inspector.dispatch.torch_sdpa.tables import choose
from inspector.dispatch.torch_sdpa.watch_decode import decode_handler
from inspector.dispatch.torch_sdpa.watch_guards import Matcher, matcher
from inspector.dispatch.torch_sdpa.watch_keys import CPU_LENGTH_FREE, OFF_CPU, SHAPE_K, SHAPE_Q, relaxed, signature
from inspector.dispatch.torch_sdpa.watch_records import (
    MAX_GROUPS,
    NATIVE,
    REFUSED,
    UNKNOWN,
    Decision,
    Group,
    WatchedCall,
    WatchedCalls,
    coarse_key,
)
from inspector.dispatch.torch_sdpa.watch_table import WatchGroup, WatchTable

__all__ = ["WatchGroup", "WatchTable", "WatchedCall", "WatchedCalls", "last_watch", "signature", "watch"]

# NOTE [ Finding the calling module ]
# A call's module is found on the Python stack (``modules.ModulePaths``): reading the calling
# frame's ``self`` materialises frame objects and their locals, which in a model costs tens of
# microseconds per call, more than everything else a watched call does. So the stack is walked
# for the first call of every group and for the first ``MODULE_LOOKUPS`` calls kept in full (a
# model's first steps, every layer of them); later calls leave ``module`` empty.
MODULE_LOOKUPS = 64
MAX_SIGNATURES = 1024  # exact signatures remembered (and as many relaxed ones); each cache starts afresh when full
# Calls in a row with one signature before a matcher is built for it (NOTE [ The first-level check ]):
# building one costs about as much as five calls through the dictionary, so a decode step's
# signature gets one only when a model has many layers to use it on.
STREAK = 8
_last: list[WatchedCalls] = []
_get_ident = threading.get_ident
_profiler_on = torch._C._autograd._profiler_enabled


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
        self._last: tuple[tuple[Any, ...], Any] = ((), None)  # the last signature and its decision
        self._streak = 0  # calls in a row with the last signature
        self._match: tuple[Matcher, Any, tuple[Any, ...]] | None = None  # matcher, its decision, its signature
        self._handler: interception.Handler = self._around  # or a decode loop's (NOTE [ A growing cache's check ])
        self._relaxed_seen: dict[tuple[Any, ...], dict[str, Decision]] = {}  # relaxed key -> backend -> decision
        self._paths = ModulePaths()
        self._lookups = MODULE_LOOKUPS  # stack walks left for kept calls (NOTE [ Finding the calling module ])

    def __enter__(self) -> WatchedCalls:
        self._thread = _get_ident()
        self._handler = self._around
        interception.add(self._handler, self._native)
        if self.prebound:
            interception.track_depth(True)
            self._mode = _PreboundCalls(self._around)
            try:
                self._mode.__enter__()
            except BaseException:
                interception.track_depth(False)
                interception.remove(self._handler, self._native)
                raise
        return self.calls

    def __exit__(self, *exc_info: object) -> None:
        try:
            if self._mode is not None:
                self._mode.__exit__(None, None, None)
                self._mode = None
                interception.track_depth(False)
        finally:
            interception.remove(self._handler, self._native)
            self._handler = self._around
            self._slots.clear()
            self._relaxed_seen.clear()
            self._last = ((), None)
            self._match = None
            _last[:] = [self.calls]

    # -- the hot path -------------------------------------------------------------------------
    def _around(self, call: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if _get_ident() != self._thread:
            return call(*args, **kwargs)
        match = self._match
        try:
            hit = match is not None and match[0](*args, **kwargs)
        except Exception:  # a call the matcher cannot take: the dictionary path says what it is
            hit = False
        if hit:  # NOTE [ The first-level check ]
            decision, key = match[1], match[2]  # type: ignore[index]
        else:
            try:
                key = signature(*args, **kwargs)
            except Exception:  # a call no signature can describe: decided on its own, every time
                return self._unkeyed(call, args, kwargs)
            last = self._last
            if key == last[0]:  # a model's layers make the same call one after another: no hashing
                decision = last[1]
                self._streak += 1
                if self._streak == STREAK:
                    found = matcher(key, args, kwargs)
                    self._match = None if found is None else (found, decision, key)
            else:
                decision = self._slots.get(key)
                if decision is None:
                    decision = self._first_seen(key, args, kwargs)
                self._last = (key, decision)
                self._streak = 0
        decision.group.count += 1  # ``_count``, inlined: this runs on every call
        calls = self.calls
        index = calls.seen
        calls.seen = index + 1
        if index < self.keep:
            module = ""
            if self._lookups:
                self._lookups -= 1
                module = self._paths.caller(sys._getframe(1))
                decision.group.note_module(module)
            calls.calls.append(WatchedCall(index, decision, module, key))
        try:
            if _profiler_on():
                with torch.profiler.record_function(f"torch_sdpa:{decision.backend}"):
                    return call(*args, **kwargs)
            return call(*args, **kwargs)
        except Exception as exc:
            self._refused(decision, index, exc)
            raise

    def _count(self, decision: Decision, call: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        group = decision.group
        calls = self.calls
        group.count += 1  # type: ignore[union-attr]
        index = calls.seen
        calls.seen = index + 1
        if index < self.keep:
            module = ""
            if self._lookups:
                self._lookups -= 1
                module = self._paths.caller(sys._getframe(1))
                group.note_module(module)  # type: ignore[union-attr]
            calls.calls.append(WatchedCall(index, decision, module))
        try:
            if _profiler_on():
                with torch.profiler.record_function(f"torch_sdpa:{decision.backend}"):
                    return call(*args, **kwargs)
            return call(*args, **kwargs)
        except Exception as exc:
            self._refused(decision, index, exc)
            raise

    def _first_seen(self, key: tuple[Any, ...], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Decision:
        """The decision for a signature not in the cache: one of its relaxed key's when PyTorch
        picks the same backend (NOTE [ Growing sequences ]), else decided afresh."""
        if len(self._slots) >= MAX_SIGNATURES:
            self._slots.clear()
        loose = relaxed(key)
        family = None if loose is None else self._relaxed_seen.get(loose)
        if family is not None:  # ``relaxed`` keys only plain tensors, which PyTorch's check takes
            decision: Decision | None
            free = CPU_LENGTH_FREE and len(family) == 1 and len(key) == OFF_CPU
            if free:  # a CPU call: no question
                decision = next(iter(family.values()))
            else:
                choice = pytorch_choice_name(*args, **kwargs)
                decision = None if choice is None else family.get(choice)
            if decision is not None:
                decision.group.widen(key[SHAPE_Q], key[SHAPE_K])  # type: ignore[union-attr]
                if free:  # the next lengths, in one frame: NOTE [ A growing cache's check ]
                    fast = decode_handler(key, args, kwargs, decision, self.calls, self._around, self._refused)
                    if fast is not None:
                        interception.replace(self._handler, fast)
                        self._handler = fast
                return decision
        decision = self._grouped(_decide(args, kwargs))
        if loose is not None and decision.answered_by == "pytorch":
            if family is None:
                if len(self._relaxed_seen) >= MAX_SIGNATURES:
                    self._relaxed_seen.clear()
                family = self._relaxed_seen[loose] = {}
            family[decision.backend] = decision
        self._slots[key] = decision
        return decision

    def _unkeyed(self, call: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            decision = _decide(args, kwargs)
        except Exception as exc:  # a call the inspector cannot read: PyTorch answers it, in its own words
            note = f"the inspector could not read this call ({type(exc).__name__}: {exc})"
            unread = self._grouped(Decision(UNKNOWN, "inspector", None, note))
            return self._count(unread, call, args, kwargs)  # a refusal is recorded, then raised
        return self._count(self._grouped(decision), call, args, kwargs)

    def _refused(self, decision: Decision, index: int, exc: Exception) -> None:
        """Move a call PyTorch refused (it raised) from its decision's group to a refusal's."""
        decision.group.count -= 1  # type: ignore[union-attr]
        words = str(exc).strip().splitlines()
        error = f"{type(exc).__name__}: {words[0] if words else ''}".rstrip(": ")[:300]
        note = f"PyTorch refused the call ({error})"
        if decision.note:
            note += f"; {decision.note}"
        refusal = self._grouped(Decision(REFUSED, "pytorch", decision.facts, note, decision.name))
        refusal.group.count += 1  # type: ignore[union-attr]
        kept = self.calls.calls
        if kept and kept[-1].index == index:
            kept[-1].refused(refusal)

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


def last_watch() -> WatchedCalls | None:
    """The calls of the most recently finished ``watch()`` block (the Dispatch tab's "What ran")."""
    return _last[0] if _last else None
