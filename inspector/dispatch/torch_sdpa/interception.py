"""Seeing ``F.scaled_dot_product_attention`` calls made anywhere, without changing what runs.

NOTE [ Intercepting SDPA calls ]
While a ``watch()`` block or a steered ``op_backend(torch_sdpa=...)`` block is active, the
attribute ``torch.nn.functional.scaled_dot_product_attention`` is a thin wrapper that runs the
active handlers around whatever function was there when the first block started (PyTorch's
builtin, or a function a library or the user installed there: a kernel patch, a debugging
hook). When the last block ends, that function is put back, but only if the attribute is still
the wrapper: a function installed during the block is kept. Each installation has a wrapper
of its own, and an old wrapper that someone kept a reference to only passes calls on to what
it wrapped, so wrappers never call each other in a loop.

This sees the calls user code makes through ``F.scaled_dot_product_attention`` and the ones
PyTorch's own Python code makes (``nn.MultiheadAttention`` goes through
``F.multi_head_attention_forward``, which calls the module-level name). A ``TorchFunctionMode``
would miss the latter (a mode is off while a Python-level torch function it intercepted runs)
and would switch off the native fast paths of ``nn.TransformerEncoderLayer`` and
``nn.MultiheadAttention`` (they check for torch function modes), changing what runs. The fast
paths themselves (``torch._transformer_encoder_layer_fwd``, ``torch._native_multi_head_attention``)
choose their kernel in C++; they are wrapped the same way, so a watch can say that such a call
happened even though its SDPA choice is not visible. A reference to the function taken before
the block (``from torch.nn.functional import scaled_dot_product_attention``) bypasses the wrapper.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

Call = Callable[..., Any]
Handler = Callable[[Call, tuple[Any, ...], dict[str, Any]], Any]  # (call_next, args, kwargs) -> result
NativeHandler = Callable[[str], None]

BUILTIN_SDPA: Call = torch._C._nn.scaled_dot_product_attention
ORIGINAL_SDPA: Call = F.scaled_dot_product_attention  # what the attribute held when the inspector was imported
NATIVE_FAST_PATHS = ("_transformer_encoder_layer_fwd", "_native_multi_head_attention")

_lock = threading.Lock()
_handlers: list[Handler] = []
_native_handlers: list[NativeHandler] = []
_inside = threading.local()
_tracking = [0]  # blocks that need to know whether a call is inside the wrapper (prebound watches)


def _pass(call: Call, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return call(*args, **kwargs)


def _around(handler: Handler, call_next: Call) -> Call:
    return lambda *args, **kwargs: handler(call_next, args, kwargs)


def _tracked(handler: Handler) -> Handler:
    def run(call: Call, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        _inside.depth = getattr(_inside, "depth", 0) + 1
        try:
            return handler(call, args, kwargs)
        finally:
            _inside.depth -= 1

    return run


def inside_wrapper() -> bool:
    """Whether this thread is inside the wrapper now (a torch function mode then lets the call pass)."""
    return getattr(_inside, "depth", 0) > 0


class _Installation:
    """One installation: the functions it wrapped and the wrappers standing in for them."""

    def __init__(self) -> None:
        self.inner: Call = F.scaled_dot_product_attention
        self.inner_native: dict[str, Call] = {n: getattr(torch, n) for n in NATIVE_FAST_PATHS if hasattr(torch, n)}
        self.first: Handler = _pass
        self.rest: Call = self.inner
        self.natives: tuple[NativeHandler, ...] = ()
        state = self

        def sdpa(*args: Any, **kwargs: Any) -> Any:
            return state.first(state.rest, args, kwargs)

        self.wrapper: Call = functools.wraps(self.inner)(sdpa)
        self.native_wrappers = {name: self._native(name, inner) for name, inner in self.inner_native.items()}

    def _native(self, name: str, inner: Call) -> Call:
        state = self

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for handler in state.natives:
                handler(name)
            return inner(*args, **kwargs)

        return functools.wraps(inner)(wrapper)

    def compose(self, handlers: list[Handler], natives: list[NativeHandler]) -> None:
        """Run ``handlers`` (the first added outermost) around the wrapped function."""
        call = self.inner
        for handler in reversed(handlers[1:]):
            call = _around(handler, call)
        first = handlers[0] if handlers else _pass
        self.first, self.rest = (_tracked(first) if _tracking[0] else first), call
        self.natives = tuple(natives)

    def install(self) -> None:
        F.scaled_dot_product_attention = self.wrapper
        for name, wrapper in self.native_wrappers.items():
            setattr(torch, name, wrapper)

    def uninstall(self) -> None:
        """Put back what was wrapped where the wrapper still stands; keep what replaced it."""
        self.first, self.rest, self.natives = _pass, self.inner, ()
        if F.scaled_dot_product_attention is self.wrapper:
            F.scaled_dot_product_attention = self.inner
        for name, inner in self.inner_native.items():
            if getattr(torch, name, None) is self.native_wrappers[name]:
                setattr(torch, name, inner)


_current: list[_Installation] = []


def add(handler: Handler, native: NativeHandler | None = None) -> None:
    """Run ``handler`` around every SDPA call until ``remove``; install the wrappers if first."""
    with _lock:
        if not _current:
            _current.append(_Installation())
            _current[0].install()
        _handlers.append(handler)
        if native is not None:
            _native_handlers.append(native)
        _current[0].compose(_handlers, _native_handlers)


def remove(handler: Handler, native: NativeHandler | None = None) -> None:
    """Stop running ``handler``; the last removal puts back what was wrapped (see the NOTE)."""
    with _lock:
        if handler in _handlers:
            _handlers.remove(handler)
        if native is not None and native in _native_handlers:
            _native_handlers.remove(native)
        if not _current:
            return
        if _handlers or _native_handlers:
            _current[0].compose(_handlers, _native_handlers)
        else:
            _current.pop().uninstall()


def replace(old: Handler, new: Handler) -> None:
    """Run ``new`` where ``old`` ran, in its place among the handlers (a watch's faster path for
    the calls it sees most: NOTE [ A growing cache's check ]); nothing when ``old`` is not running."""
    with _lock:
        if old in _handlers:
            _handlers[_handlers.index(old)] = new
            if _current:
                _current[0].compose(_handlers, _native_handlers)


def track_depth(on: bool) -> None:
    """Count (or stop counting) the calls inside the wrapper, for a prebound watch's mode."""
    with _lock:
        _tracking[0] += 1 if on else -1
        if _current:
            _current[0].compose(_handlers, _native_handlers)


def installed() -> bool:
    """Whether the wrapper is in place now."""
    return bool(_current) and F.scaled_dot_product_attention is _current[0].wrapper


def wrapped() -> Call | None:
    """The function the current wrapper calls (what was in force when the first block started)."""
    return _current[0].inner if _current else None
