"""``op_backend(torch_sdpa=...)`` steers PyTorch itself for the block.

NOTE [ Steering PyTorch's SDPA ]
Entering a ``torch_sdpa`` selection enters ``torch.nn.attention.sdpa_kernel([backend])``, so
``F.scaled_dot_product_attention`` in the user's own code obeys, and adds a check in front of
each SDPA call (see NOTE [ Intercepting SDPA calls ]): a selected backend that cannot serve a
call raises ``ExplicitSelectionError`` with PyTorch's failing checks instead of PyTorch's bare
"No available kernel". Calls from contexts without a ``torch_sdpa`` selection pass straight on.

PyTorch's flags are process-wide, while ``op_backend`` scopes are per thread and per asyncio
task. Two threads (or tasks) that select different backends at once therefore fight over one
set of flags: the second warns. While blocks overlap, the flags are those of the block entered
last that is still running, also when an earlier one ends first; the flags in force before the
first steered block are put back exactly when the last one ends. ``None`` (``op_backend(
torch_sdpa=None)``) restores, for its block, the flags from before the outermost steered block.
"""

from __future__ import annotations

import asyncio
import threading
import warnings
from dataclasses import dataclass
from typing import Any

from torch.nn.attention import SDPBackend, sdpa_kernel

from inspector.dispatch.overrides import get_override
from inspector.dispatch.records import ImplRecord
from inspector.dispatch.torch_sdpa import interception
from inspector.dispatch.torch_sdpa.facts import context_of, facts_from_call
from inspector.dispatch.torch_sdpa.flags import allow_only, current_flags, restore_flags
from inspector.dispatch.torch_sdpa.names import BACKENDS, FAMILY
from inspector.dispatch.torch_sdpa.tables import decide_call


def _member(handle: Any) -> SDPBackend | None:
    if handle is None:
        return None
    if isinstance(handle, SDPBackend):
        return handle
    if isinstance(handle, ImplRecord):
        return _member(handle.obj)
    if isinstance(handle, str) and handle in BACKENDS:
        return getattr(SDPBackend, handle.upper())
    raise TypeError(
        f"op_backend(torch_sdpa=...) takes a backend name {list(BACKENDS)}, an SDPBackend or None; "
        f"got {type(handle).__name__}"
    )


def _allow(backends: tuple[SDPBackend, ...]) -> None:
    allow_only({member.name.lower() for member in backends})


def check_selection(call: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The interception handler: check the call against this context's selection, then run it.

    The check runs under the flags from before the steered blocks (the user's own), so a refusal
    names the selected backend's real failing checks and the backends that could serve the call.
    """
    if get_override(FAMILY) is not None:
        try:
            facts = facts_from_call(*args, **kwargs)
        except Exception:  # arguments PyTorch itself refuses: let it say so in its own words
            return call(*args, **kwargs)
        facts = facts._replace(enabled=TORCH_STEER.baseline_enabled() or facts.enabled)
        decide_call(context_of(facts))  # strict: raises when incapable
    return call(*args, **kwargs)


@dataclass
class _Entered:
    key: int
    backend: SDPBackend | None
    allowed: tuple[SDPBackend, ...]
    kernel: Any
    owner: tuple[int, int]


def _owner() -> tuple[int, int]:
    """Who entered a block: the thread, and the asyncio task within it (0 outside any task)."""
    task = None
    if asyncio._get_running_loop() is not None:
        task = asyncio.current_task()
    return threading.get_ident(), 0 if task is None else id(task)


class TorchSteer:
    """The ``Steer`` of ``torch_sdpa`` (see NOTE [ Steering PyTorch's SDPA ])."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active: dict[int, _Entered] = {}
        self._baseline: dict[str, bool] = {}
        self._depth = 0
        self._next = 0

    def enter(self, handle: Any) -> _Entered:
        backend = _member(handle)
        owner = _owner()
        with self._lock:
            if self._depth == 0:
                self._baseline = current_flags()
                interception.add(check_selection)
            self._depth += 1
            self._next += 1
            key = self._next
            others = {e.backend for e in self._active.values() if e.owner != owner}
            baseline = dict(self._baseline)
        try:
            if others - {backend}:
                shown = sorted("None" if b is None else b.name.lower() for b in others)
                mine = "None" if backend is None else backend.name.lower()
                warnings.warn(
                    f"op_backend(torch_sdpa={mine!r}) entered while another thread or task selects {shown}: "
                    "PyTorch's SDPA flags are process-wide, so both now run with the latest selection. Select "
                    "torch_sdpa in one thread or task at a time.",
                    RuntimeWarning,
                    stacklevel=4,
                )
            allowed = (
                (backend,)
                if backend is not None
                else tuple(getattr(SDPBackend, name.upper()) for name, on in baseline.items() if on)
            )
            kernel = sdpa_kernel(list(allowed))
            kernel.__enter__()
        except BaseException:
            self._leave()
            raise
        entered = _Entered(key, backend, allowed, kernel, owner)
        with self._lock:
            self._active[key] = entered
        return entered

    def exit(self, entered: _Entered) -> None:
        try:
            entered.kernel.__exit__(None, None, None)
        finally:
            with self._lock:
                self._active.pop(entered.key, None)
                latest = self._active[max(self._active)] if self._active else None
            if latest is not None:
                # Blocks of other threads or tasks may end out of order, and sdpa_kernel has just put back what
                # it found on entry: the block entered last that is still running gets its selection back.
                _allow(latest.allowed)
            self._leave()

    def _leave(self) -> None:
        """One block fewer; the last one puts back the flags from before the first."""
        with self._lock:
            self._depth -= 1
            if self._depth:
                return
            baseline, self._baseline = self._baseline, {}
            interception.remove(check_selection)
        restore_flags(baseline)

    def baseline_enabled(self) -> frozenset[str]:
        """The backends the user's own flags allowed before the first steered block (empty if none)."""
        with self._lock:
            return frozenset(name for name, on in self._baseline.items() if on)

    def active(self) -> tuple[str, ...]:
        """The backends selected by blocks running now, in any thread (for diagnostics)."""
        with self._lock:
            return tuple("None" if e.backend is None else e.backend.name.lower() for e in self._active.values())


TORCH_STEER = TorchSteer()
