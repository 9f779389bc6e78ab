"""Seeing ``F.scaled_dot_product_attention`` calls made anywhere, without changing what runs.

NOTE [ Intercepting SDPA calls ]
While a ``watch()`` block or a steered ``op_backend(torch_sdpa=...)`` block is active, the
attribute ``torch.nn.functional.scaled_dot_product_attention`` is a thin wrapper that runs the
active handlers around the original builtin; when the last block ends the original is put
back. This sees the calls user code makes through ``F.scaled_dot_product_attention`` and the
ones PyTorch's own Python code makes (``nn.MultiheadAttention`` goes through
``F.multi_head_attention_forward``, which calls the module-level name). A ``TorchFunctionMode``
would miss the latter (a mode is off while a Python-level torch function it intercepted runs)
and would switch off the native fast paths of ``nn.TransformerEncoderLayer`` and
``nn.MultiheadAttention`` (they check for torch function modes), changing what runs. The
fast paths themselves (``torch._transformer_encoder_layer_fwd``,
``torch._native_multi_head_attention``) choose their kernel in C++; they are wrapped too, so
a watch can say that such a call happened even though its SDPA choice is not visible. A
reference to the builtin taken before the block (``from torch.nn.functional import
scaled_dot_product_attention``) bypasses the wrapper.
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

ORIGINAL_SDPA: Call = F.scaled_dot_product_attention
NATIVE_FAST_PATHS = ("_transformer_encoder_layer_fwd", "_native_multi_head_attention")
_ORIGINAL_NATIVE: dict[str, Call] = {name: getattr(torch, name) for name in NATIVE_FAST_PATHS if hasattr(torch, name)}

_lock = threading.Lock()
_handlers: list[Handler] = []
_native_handlers: list[NativeHandler] = []


def _around(handler: Handler, call_next: Call) -> Call:
    return lambda *args, **kwargs: handler(call_next, args, kwargs)


_inside = threading.local()


def inside_wrapper() -> bool:
    """Whether this thread is inside the wrapper now (a torch function mode then lets the call pass)."""
    return getattr(_inside, "depth", 0) > 0


@functools.wraps(ORIGINAL_SDPA)
def _sdpa(*args: Any, **kwargs: Any) -> Any:
    call: Call = ORIGINAL_SDPA
    for handler in reversed(tuple(_handlers)):
        call = _around(handler, call)
    _inside.depth = getattr(_inside, "depth", 0) + 1
    try:
        return call(*args, **kwargs)
    finally:
        _inside.depth -= 1


def _native(name: str) -> Call:
    original = _ORIGINAL_NATIVE[name]

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        for handler in tuple(_native_handlers):
            handler(name)
        return original(*args, **kwargs)

    return wrapper


_WRAPPED_NATIVE = {name: _native(name) for name in _ORIGINAL_NATIVE}


def _install() -> None:
    F.scaled_dot_product_attention = _sdpa
    for name, wrapper in _WRAPPED_NATIVE.items():
        setattr(torch, name, wrapper)


def _uninstall() -> None:
    F.scaled_dot_product_attention = ORIGINAL_SDPA
    for name, original in _ORIGINAL_NATIVE.items():
        setattr(torch, name, original)


def add(handler: Handler, native: NativeHandler | None = None) -> None:
    """Run ``handler`` around every SDPA call until ``remove``; install the wrappers if first."""
    with _lock:
        if not _handlers and not _native_handlers:
            _install()
        _handlers.append(handler)
        if native is not None:
            _native_handlers.append(native)


def remove(handler: Handler, native: NativeHandler | None = None) -> None:
    """Stop running ``handler``; the last removal puts the original functions back."""
    with _lock:
        if handler in _handlers:
            _handlers.remove(handler)
        if native is not None and native in _native_handlers:
            _native_handlers.remove(native)
        if not _handlers and not _native_handlers:
            _uninstall()


def installed() -> bool:
    """Whether the wrappers are in place now."""
    return F.scaled_dot_product_attention is _sdpa
