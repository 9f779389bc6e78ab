"""Run every capable row of a family on the same inputs and compare it with the reference.

The reference is the family's fallback row. Errors are measured in float64: ``max_abs_error``
is the largest absolute difference, ``max_rel_error`` that difference relative to the
reference's largest magnitude; ``within_tolerance`` applies the family's per-dtype
``(atol, rtol)`` elementwise, as ``torch.allclose`` does.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from inspector.dispatch.registry import get_family, plan_for
from inspector.dispatch.resolution import context_for

if TYPE_CHECKING:
    from inspector.dispatch.context import CallContext

DEFAULT_TOLERANCE = (1e-5, 1e-5)


@dataclass(frozen=True)
class RowRun:
    """One row run on the shared inputs: status, error against the reference, median time."""

    row: str
    status: str  # "reference", "ok", "skipped" or "error"
    faithful: bool
    max_abs_error: float | None
    max_rel_error: float | None
    atol: float
    rtol: float
    within_tolerance: bool | None
    median_ms: float | None
    detail: str


def _tensors(value: Any) -> list[Any]:
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in _tensors(item)]
    return [value]


def _timed(fn: Any, args: Sequence[Any], kwargs: dict[str, Any], repeats: int, cuda: bool) -> tuple[Any, float]:
    import torch

    times, output = [], None
    for _ in range(max(repeats, 1)):
        if cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        output = fn(*args, **kwargs)
        if cuda:
            torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    return output, statistics.median(times)


def _errors(output: Any, reference: Any, atol: float, rtol: float) -> tuple[float, float, bool]:
    max_abs, max_ref, close = 0.0, 0.0, True
    for got, want in zip(_tensors(output), _tensors(reference), strict=True):
        got64, want64 = got.detach().double().cpu(), want.detach().double().cpu()
        diff = (got64 - want64).abs()
        max_abs = max(max_abs, float(diff.max()) if diff.numel() else 0.0)
        max_ref = max(max_ref, float(want64.abs().max()) if want64.numel() else 0.0)
        close = close and bool((diff <= atol + rtol * want64.abs()).all())
    return max_abs, max_abs / max(max_ref, 1e-30), close


def run_rows(
    family: str,
    ctx: CallContext | None = None,
    *,
    inputs: tuple[Sequence[Any], dict[str, Any]] | None = None,
    repeats: int = 3,
    seed: int = 0,
) -> tuple[RowRun, ...]:
    """Run each row that can handle ``ctx`` on one set of inputs (sampled when not given)."""
    import torch

    info = get_family(family)
    if inputs is None:
        if ctx is None:
            raise TypeError("run_rows needs a context to sample inputs for, or inputs=(args, kwargs)")
        if info.sampler is None:
            raise TypeError(f"Family {family!r} has no sampler; pass inputs=(args, kwargs) explicitly")
        generator = torch.Generator().manual_seed(seed)
        args, kwargs = info.sampler(ctx, generator)
    else:
        args, kwargs = tuple(inputs[0]), dict(inputs[1])
        ctx = ctx if ctx is not None else context_for(family, *args, **kwargs)
    plan = plan_for(family)
    atol, rtol = info.tolerances.get(ctx.dtype, DEFAULT_TOLERANCE)
    reference = plan.fallback
    records = [*plan.rows] + ([] if any(r is reference for r in plan.rows) else [reference])
    with torch.set_grad_enabled(ctx.grad_enabled):
        want, ref_ms = _timed(reference.obj, args, kwargs, repeats, ctx.device_cuda)
        runs = []
        for record in records:
            if record is reference:
                runs.append(RowRun(record.name, "reference", record.faithful, 0.0, 0.0, atol, rtol, True, ref_ms, ""))
                continue
            available = plan.is_available(record)
            failing = record.spec.failures(ctx) if available else ()
            if not available or failing:
                why = "; ".join(str(c) for c in failing) if available else "unavailable on this machine"
                runs.append(RowRun(record.name, "skipped", record.faithful, None, None, atol, rtol, None, None, why))
                continue
            try:
                got, ms = _timed(record.obj, args, kwargs, repeats, ctx.device_cuda)
                max_abs, max_rel, close = _errors(got, want, atol, rtol)
            except Exception as exc:
                runs.append(
                    RowRun(
                        record.name,
                        "error",
                        record.faithful,
                        None,
                        None,
                        atol,
                        rtol,
                        None,
                        None,
                        f"{type(exc).__name__}: {exc}",
                    )
                )
                continue
            runs.append(RowRun(record.name, "ok", record.faithful, max_abs, max_rel, atol, rtol, close, ms, ""))
    return tuple(runs)
