"""``watch()``: which SDPA backend PyTorch actually ran for each call in a block, and why.

    with torch_sdpa.watch() as calls:
        model(x)
    calls.table()        # grouped by (backend, dtype, shapes), with counts

Each call is recorded with its shapes, dtype, flags, the backend PyTorch chose (asked of
PyTorch itself, ``torch._fused_sdp_choice``, where it can answer; the inspector's prediction is
kept beside it and a disagreement is flagged) and why each faster backend was rejected (the
inspector's trace, in PyTorch's words). The call itself runs unchanged, inside a
``torch.profiler.record_function("torch_sdpa:<backend>")`` range so the choice shows in profiler
traces. Only calls made by the thread that entered the block are recorded.
"""

from __future__ import annotations

import html
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.nn.attention import SDPBackend
from torch.overrides import TorchFunctionMode

from inspector.dispatch.context import format_value
from inspector.dispatch.torch_sdpa import interception
from inspector.dispatch.torch_sdpa.facts import FACTS, context_of, facts_from_call
from inspector.dispatch.trace import MATCH, Trace

NATIVE = "native fast path"
_last: list[WatchedCalls] = []


@dataclass(frozen=True)
class WatchedCall:
    """One SDPA call seen by ``watch()`` (no tensors are kept)."""

    index: int
    backend: str
    predicted: str
    answered_by: str  # "pytorch" (its own choice function) or "inspector" (the ported rules)
    shapes: tuple[tuple[int, ...], ...]
    dtype: str
    device: str
    enabled: tuple[str, ...]
    dropout_p: float
    is_causal: bool
    mask: tuple[int, ...] | None
    enable_gqa: bool
    requires_grad: bool
    rejected: tuple[tuple[str, str], ...]  # (faster backend, why PyTorch passed it over)
    trace: Trace | None
    note: str = ""

    def __str__(self) -> str:
        shapes = " ".join(f"{name}{tuple(shape)}" for name, shape in zip("qkv", self.shapes, strict=False))
        return f"#{self.index} {self.backend} {self.dtype} {self.device} {shapes}".rstrip()

    def __repr__(self) -> str:
        return f"<WatchedCall {self}>"


@dataclass(frozen=True)
class WatchGroup:
    """Calls that ran the same backend with the same dtype and shapes."""

    backend: str
    dtype: str
    shapes: str
    count: int
    rejected: str


def _pytorch_choice(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """PyTorch's own answer, or ``None`` where it cannot give one (other devices, subclasses)."""
    try:
        return SDPBackend(torch._fused_sdp_choice(*args, **kwargs)).name.lower()
    except RuntimeError as exc:
        return "error" if "kernel" in str(exc) or "backend" in str(exc) else None
    except Exception:
        return None


def _rejected(trace: Trace) -> tuple[tuple[str, str], ...]:
    """The rows tried before the chosen one, each with its reason."""
    reasons = []
    for row in trace.rows:
        if row.name == trace.chosen:
            break
        if row.verdict == MATCH:
            continue
        why = "; ".join(str(c) for c in row.failing) or row.verdict
        reasons.append((row.name, why if row.available else f"not available here ({why})"))
    return tuple(reasons)


class WatchedCalls:
    """The calls a ``watch()`` block saw, in order; ``table()`` groups them."""

    def __init__(self) -> None:
        self.calls: list[WatchedCall] = []

    def __len__(self) -> int:
        return len(self.calls)

    def __iter__(self) -> Iterator[WatchedCall]:
        return iter(self.calls)

    def __getitem__(self, index: int) -> WatchedCall:
        return self.calls[index]

    def backends(self) -> Counter[str]:
        """How many calls ran each backend."""
        return Counter(call.backend for call in self.calls)

    def table(self) -> WatchTable:
        """Calls grouped by (backend, dtype, shapes) with counts, most frequent first."""
        counts: Counter[tuple[str, str, str]] = Counter()
        rejected: dict[tuple[str, str, str], str] = {}
        for call in self.calls:
            shapes = " ".join(f"{name}{tuple(shape)}" for name, shape in zip("qkv", call.shapes, strict=False))
            key = (call.backend, call.dtype, shapes)
            counts[key] += 1
            rejected.setdefault(key, "; ".join(f"{name}: {why}" for name, why in call.rejected))
        groups = [WatchGroup(b, d, s, n, rejected[(b, d, s)]) for (b, d, s), n in counts.most_common()]
        return WatchTable(tuple(groups))

    def __repr__(self) -> str:
        summary = ", ".join(f"{name} x{count}" for name, count in self.backends().most_common())
        return f"<WatchedCalls: {len(self.calls)} SDPA call(s){': ' + summary if summary else ''}>"

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


@dataclass(frozen=True)
class WatchTable:
    """``WatchedCalls.table()``: one row per (backend, dtype, shapes)."""

    groups: tuple[WatchGroup, ...]

    def __repr__(self) -> str:
        lines = [f"{g.count:>5} x {g.backend:<20} {g.dtype:<9} {g.shapes}" for g in self.groups[:10]]
        more = len(self.groups) - 10
        return "\n".join(lines + ([f"... {more} more"] if more > 0 else [])) or "(no SDPA calls)"

    def _repr_html_(self) -> str:
        head = "<tr><th>backend</th><th>dtype</th><th>shapes</th><th>calls</th><th>faster backends rejected</th></tr>"
        rows = "".join(
            f"<tr><td><b>{html.escape(g.backend)}</b></td><td>{html.escape(g.dtype)}</td>"
            f"<td><code>{html.escape(g.shapes)}</code></td><td>{g.count}</td>"
            f"<td style='text-align:left'>{html.escape(g.rejected) or '—'}</td></tr>"
            for g in self.groups
        )
        return f"<table class='inspector-watch'>{head}{rows}</table>" if rows else "<p>No SDPA calls were made.</p>"

    def to_frame(self) -> Any:
        """The table as a pandas ``DataFrame`` (needs pandas: ``pip install dispatch-inspector[ui]``)."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError("WatchTable.to_frame needs pandas: pip install 'dispatch-inspector[ui]'") from exc
        columns = ["backend", "dtype", "shapes", "count", "rejected"]
        return pd.DataFrame([g.__dict__ for g in self.groups], columns=columns)


class _PreboundCalls(TorchFunctionMode):
    """Sends calls of the SDPA builtin that bypass the module attribute (references taken before
    the block) to the watch; calls through the attribute are already seen by the wrapper."""

    def __init__(self, around: Any) -> None:
        super().__init__()
        self.around = around

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if func is interception.ORIGINAL_SDPA and not interception.inside_wrapper():
            return self.around(func, tuple(args), dict(kwargs))
        return func(*args, **kwargs)


class watch:  # lower-case: used like a function, ``with watch() as calls:``
    """Record every ``F.scaled_dot_product_attention`` call made inside the block (results unchanged).

    ``prebound=True`` also records calls made through a reference to the function taken before
    the block (``from torch.nn.functional import scaled_dot_product_attention``), through a
    ``TorchFunctionMode``; while a torch function mode is active, ``nn.TransformerEncoderLayer``
    and ``nn.MultiheadAttention`` skip their native fast paths and run their Python code (the
    same results, through the SDPA calls this records).
    """

    def __init__(self, *, limit: int = 100_000, prebound: bool = False) -> None:
        if not isinstance(limit, int) or limit <= 0:
            raise ValueError(f"watch(limit=...) must be a positive int, got {limit!r}")
        self.limit = limit
        self.prebound = bool(prebound)
        self.calls = WatchedCalls()
        self._thread = 0
        self._mode: _PreboundCalls | None = None
        self.dropped = 0

    def __enter__(self) -> WatchedCalls:
        self._thread = threading.get_ident()
        interception.add(self._around, self._native)
        if self.prebound:
            self._mode = _PreboundCalls(self._around)
            try:
                self._mode.__enter__()
            except BaseException:
                interception.remove(self._around, self._native)
                raise
        return self.calls

    def __exit__(self, *exc_info: object) -> None:
        try:
            if self._mode is not None:
                self._mode.__exit__(None, None, None)
                self._mode = None
        finally:
            interception.remove(self._around, self._native)
            _last[:] = [self.calls]


    def _native(self, name: str) -> None:
        if threading.get_ident() != self._thread or len(self.calls) >= self.limit:
            return
        self.calls.calls.append(WatchedCall(
            len(self.calls), NATIVE, NATIVE, "pytorch", (), "", "", (), 0.0, False, None, False, False, (), None,
            note=f"torch.{name}: a native fused path that picks its kernel in C++; its SDPA choice is not visible",
        ))

    def _around(self, call: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if threading.get_ident() != self._thread:
            return call(*args, **kwargs)
        if len(self.calls) >= self.limit:
            self.dropped += 1
            return call(*args, **kwargs)
        try:
            record = self._record(args, kwargs)
        except Exception as exc:  # a call the inspector cannot read: PyTorch answers it, in its own words
            result = call(*args, **kwargs)
            self.calls.calls.append(WatchedCall(
                len(self.calls), "unknown", "unknown", "inspector", (), "", "", (), 0.0, False, None, False, False,
                (), None, note=f"the inspector could not read this call ({type(exc).__name__}: {exc})",
            ))
            return result
        with torch.profiler.record_function(f"torch_sdpa:{record.backend}"):
            return call(*args, **kwargs)

    def _record(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> WatchedCall:
        from inspector.dispatch.torch_sdpa.family import trace_context

        ctx = context_of(facts_from_call(*args, **kwargs))
        facts = ctx.extra[FACTS]
        trace = trace_context(ctx)
        predicted = trace.chosen or "error"
        pytorch = _pytorch_choice(args, kwargs)
        backend = pytorch if pytorch is not None else predicted
        note = ""
        if pytorch is not None and pytorch != predicted:
            note = f"the inspector's rules predicted {predicted}; PyTorch chose {pytorch}"
        record = WatchedCall(
            len(self.calls), backend, predicted, "pytorch" if pytorch is not None else "inspector",
            tuple(tuple(int(d) for d in s) for s in facts.shapes), format_value(facts.dtypes[0]), facts.device,
            tuple(sorted(facts.enabled)), facts.dropout_p, facts.is_causal, facts.mask_shape, facts.enable_gqa,
            facts.requires_grad, _rejected(trace), trace, note,
        )
        self.calls.calls.append(record)
        return record


def last_watch() -> WatchedCalls | None:
    """The calls of the most recently finished ``watch()`` block (the Dispatch tab's "What ran")."""
    return _last[0] if _last else None
