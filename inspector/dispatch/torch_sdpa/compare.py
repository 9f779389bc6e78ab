"""``compare``: run every backend PyTorch has on one call, and say whether PyTorch's pick is the fastest.

Each backend that can serve the call (by PyTorch's checks, with every backend enabled) runs
alone inside ``sdpa_kernel([backend])`` on the caller's own tensors, forward and, when autograd
would run it, backward (``torch.autograd.grad``: the tensors' ``.grad`` are left alone). Each
backend's time budget holds its warm-up and its timed runs (NOTE [ Settled timings ]). Memory
is the peak of the bytes the call holds at once, from the first (cold, untimed) run: CUDA's
``max_memory_allocated``, or on CPU ``torch.profiler``'s allocation records. With ``total_s``,
the float64 reference is skipped (and a note says so) when its estimated time passes half the
budget, so that the budget bounds the whole comparison but for one cold and one timed run of each
backend. Errors are against
``math`` in float64 on the same inputs. Backends that cannot serve the call are listed with
PyTorch's reason and not run; calls too big to run here are refused before anything is
allocated (``compare_limits``).

NOTE [ Settled timings ]
A kernel's first calls are slow (a cold CPU flash kernel takes about 25 calls to reach its
speed), so one warm-up run gives a verdict that flips from run to run. Each backend is warmed
up until its times stop falling: until the median of the last ``SETTLE_WINDOW`` runs is within
``SETTLE_TOLERANCE`` of the window before, or half its time budget is spent. The verdict then
calls two backends "about the same" when their difference is within the noise of the runs
(``comparison.NOISE``).
"""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from inspector.dispatch.torch_sdpa.compare_limits import REFERENCE_MACS_PER_S, needs, refuse_what_cannot_run
from inspector.dispatch.torch_sdpa.comparison import BackendRun, SdpaComparison, Timing
from inspector.dispatch.torch_sdpa.facts import SdpaCall, context_of, facts_from_call
from inspector.dispatch.torch_sdpa.interception import BUILTIN_SDPA
from inspector.dispatch.torch_sdpa.names import BACKENDS, OVERRIDEABLE
from inspector.dispatch.torch_sdpa.prediction import predict
from inspector.dispatch.torch_sdpa.tables import MEMBERS, SPECS, order_for

Inputs = tuple[Any, Any, Any, Any]
SETTLE_WINDOW = 5
SETTLE_TOLERANCE = 0.1
MAX_WARMUP = 200


def _capable(facts: SdpaCall) -> dict[str, str]:
    """Each backend's first failing check with every backend enabled ("" when it can serve the call)."""
    ctx = context_of(facts._replace(enabled=frozenset(BACKENDS)))
    reasons = {}
    for name in order_for(facts):
        if name == OVERRIDEABLE:
            reasons[name] = "consulted only for out-of-tree devices (PrivateUse1, XPU, HPU)"
            continue
        failing = SPECS[name].failures(ctx)
        reasons[name] = str(failing[0].message).rstrip(".") if failing else ""
    return reasons


def _sync(cuda: bool) -> None:
    if cuda:
        torch.cuda.synchronize()


def _grads_of(inputs: Inputs) -> list[Any]:
    """The distinct inputs that require grad (self-attention passes one tensor three times)."""
    found: dict[int, Any] = {}
    for t in inputs:
        if isinstance(t, torch.Tensor) and t.requires_grad:
            found.setdefault(id(t), t)
    return list(found.values())


def _once(
    inputs: Inputs, options: dict[str, Any], grad_out: Any, backward: bool, cuda: bool
) -> tuple[Any, Any, float, float]:
    """One forward (and backward) run: its output, its gradients and the two times in ms."""
    q, k, v, mask = inputs
    _sync(cuda)
    start = time.perf_counter()
    out = BUILTIN_SDPA(q, k, v, attn_mask=mask, **options)
    _sync(cuda)
    middle = time.perf_counter()
    grads = None
    if backward:
        grads = torch.autograd.grad(out, _grads_of(inputs), grad_out)
        _sync(cuda)
    end = time.perf_counter()
    return out, grads, (middle - start) * 1e3, (end - middle) * 1e3


def _timing(values: list[float]) -> Timing:
    return Timing(statistics.median(values), min(values), max(values), len(values))


@contextlib.contextmanager
def _quiet_native_stderr() -> Iterator[None]:
    """Hold back what native code writes to file descriptor 2 (the profiler's start and stop lines)."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _cpu_peak(run: Callable[[], object]) -> int | None:
    """The most bytes ``run`` held at once on the CPU, from ``torch.profiler``'s allocation records."""
    from torch.profiler import ProfilerActivity, profile

    try:
        with _quiet_native_stderr():
            session = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
            session.__enter__()
        try:
            run()
        finally:
            with _quiet_native_stderr():
                session.__exit__(None, None, None)
        events: list[Any] = list(session.profiler.kineto_results.events())  # type: ignore[union-attr]
        records = [e for e in events if e.name() == "[memory]" and e.device_type() == torch.autograd.DeviceType.CPU]
        live = peak = 0
        for record in sorted(records, key=lambda e: e.start_ns()):
            live += record.nbytes()
            peak = max(peak, live)
        return int(peak)
    except Exception:  # a profiler that cannot start here (another one running): no figure
        return None


def _memory(run: Callable[[], object], cuda: bool, device: Any) -> tuple[int | None, str]:
    if cuda:
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
        run()
        torch.cuda.synchronize(device)
        return int(torch.cuda.max_memory_allocated(device) - base), "peak"
    return _cpu_peak(run), "peak"


def _errors(got: Any, want: Any) -> tuple[float, float]:
    diff = (got.detach().double() - want.detach()).abs()
    biggest = float(want.detach().abs().max()) if want.numel() else 0.0
    worst = float(diff.max()) if diff.numel() else 0.0
    return worst, worst / max(biggest, 1e-30)


def _reference(inputs: Inputs, options: dict[str, Any], backward: bool, grad_out: Any) -> tuple[Any, Any]:
    """``math`` in float64 on the same inputs: the output, and the gradients when backward runs."""
    copies: dict[int, Any] = {}  # one float64 copy per distinct tensor, so shared inputs stay shared
    for t in inputs:
        if isinstance(t, torch.Tensor) and t.is_floating_point() and id(t) not in copies:
            copies[id(t)] = t.detach().double().requires_grad_(t.requires_grad)
    wide = [copies.get(id(t), t) for t in inputs]
    q, k, v, mask = wide
    with sdpa_kernel([SDPBackend.MATH]):
        out = BUILTIN_SDPA(q, k, v, attn_mask=mask, **options)
        grads = torch.autograd.grad(out, _grads_of(tuple(wide)), grad_out) if backward else None  # type: ignore[arg-type]
    return out.detach(), grads


def compare(
    query: Any,
    key: Any,
    value: Any,
    attn_mask: Any = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
    *,
    budget_s: float = 1.0,
    warmup: int = 1,
    max_runs: int = 50,
    backward: bool | None = None,
    total_s: float | None = None,
) -> SdpaComparison:
    """Time every backend that can serve this call against PyTorch's pick (see the module's docstring).

    ``budget_s`` bounds each backend's warm-up and timed runs (at least ``warmup`` warm-up runs
    and one timed run); ``total_s``, when given, bounds them all together instead, shared
    between the backends and the float64 reference. ``backward`` defaults to whether autograd
    would run one (grad mode on and an input that requires grad).

    >>> q = torch.randn(1, 2, 16, 8)
    >>> result = compare(q, q, q, budget_s=0.05)
    >>> result.pick, sorted(r.backend for r in result.ran())
    ('flash_attention', ['flash_attention', 'math'])
    """
    for name, seconds in (("budget_s", budget_s), ("total_s", 1.0 if total_s is None else total_s)):
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
            raise ValueError(f"compare({name}=...) is seconds: a positive number, got {seconds!r}")
    facts = facts_from_call(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    if facts.device not in ("cpu", "cuda"):
        raise ValueError(
            f"compare runs the call, so it needs CPU or CUDA tensors, not {facts.device}: for a GPU "
            "this machine lacks, trace_call(..., gpu=...) gives PyTorch's rules without running"
        )
    inputs: Inputs = (query, key, value, attn_mask)
    if backward is None:
        backward = torch.is_grad_enabled() and bool(_grads_of(inputs))
    backward = bool(backward) and bool(_grads_of(inputs))
    capable = _capable(facts)
    if total_s is not None:
        budget_s = total_s / (sum(not reason for reason in capable.values()) + 1)
    refuse_what_cannot_run(facts, budget_s, backward)
    pick = predict(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa).name.lower()
    options = {"dropout_p": dropout_p, "is_causal": is_causal, "scale": scale, "enable_gqa": enable_gqa}
    cuda = facts.device == "cuda"
    notes = []
    generator = torch.Generator(device=query.device).manual_seed(0)
    ref_out, ref_grads, grad_out = None, None, None
    reference_s = needs(facts, backward)[1] / REFERENCE_MACS_PER_S
    skip_reference = total_s is not None and not dropout_p > 0 and reference_s > total_s / 2
    if skip_reference:
        notes.append(
            f"errors against math in float64 were not computed: that run alone would take about "
            f"{reference_s:.2g} s of the {total_s:g} s budget; give a larger budget to get them"
        )
    if backward or not dropout_p > 0:
        shape = (*query.shape[:-1], value.shape[-1])  # the output's
        grad_out = torch.randn(shape, generator=generator, device=query.device, dtype=torch.float64)
        if not skip_reference and not dropout_p > 0:
            ref_out, ref_grads = _reference(inputs, options, backward, grad_out)
    if dropout_p > 0:
        notes.append("dropout_p > 0 makes every output random, so errors against math are not compared")
    runs = []
    with torch.set_grad_enabled(backward or torch.is_grad_enabled()):
        for name, reason in capable.items():
            if reason:
                runs.append(BackendRun(name, "cannot serve", reason))
                continue
            runs.append(
                _measure(
                    name,
                    inputs,
                    options,
                    grad_out,
                    backward,
                    cuda,
                    budget_s,
                    warmup,
                    max_runs,
                    None if dropout_p > 0 else ref_out,
                    None if dropout_p > 0 else ref_grads,
                )
            )
    return SdpaComparison(str(facts), pick, tuple(runs), backward, float(budget_s), tuple(notes))


def _settled(times: list[float]) -> bool:
    """Whether the last runs stopped getting faster (NOTE [ Settled timings ])."""
    if len(times) < 2 * SETTLE_WINDOW:
        return False
    last = statistics.median(times[-SETTLE_WINDOW:])
    before = statistics.median(times[-2 * SETTLE_WINDOW : -SETTLE_WINDOW])
    return last >= (1.0 - SETTLE_TOLERANCE) * before


def _measure(
    name: str,
    inputs: Inputs,
    options: dict[str, Any],
    grad_out: Any,
    backward: bool,
    cuda: bool,
    budget_s: float,
    warmup: int,
    max_runs: int,
    ref_out: Any,
    ref_grads: Any,
) -> BackendRun:
    """Warm up, time, measure memory and errors for one backend (any failure is that backend's)."""
    grad_out = None if grad_out is None else grad_out.to(inputs[0].dtype)
    try:
        with sdpa_kernel([MEMBERS[name]]):
            start = time.perf_counter()
            warm_until, deadline = start + budget_s / 2, start + budget_s
            warm: list[float] = []

            def first() -> None:  # the first (cold) run measures memory: it is not timed anyway
                ran = _once(inputs, options, grad_out, backward, cuda)
                warm.append(ran[2] + ran[3])

            memory, kind = _memory(first, cuda, inputs[0].device)
            while len(warm) < max(warmup, 1) or (
                len(warm) < MAX_WARMUP and not _settled(warm) and time.perf_counter() < warm_until
            ):
                _, _, ms_forward, ms_backward = _once(inputs, options, grad_out, backward, cuda)
                warm.append(ms_forward + ms_backward)
            forward: list[float] = []
            backward_ms: list[float] = []
            out = grads = None
            while not forward or (time.perf_counter() < deadline and len(forward) < max_runs):
                out, grads, ms_forward, ms_backward = _once(inputs, options, grad_out, backward, cuda)
                forward.append(ms_forward)
                backward_ms.append(ms_backward)
    except Exception as exc:
        return BackendRun(name, "failed", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    errors: dict[str, float | None] = {"abs": None, "rel": None, "grad_abs": None, "grad_rel": None}
    if ref_out is not None and out is not None:
        errors["abs"], errors["rel"] = _errors(out, ref_out)
        if grads is not None and ref_grads is not None:
            pairs = [_errors(g, r) for g, r in zip(grads, ref_grads, strict=True)]
            errors["grad_abs"] = max((p[0] for p in pairs), default=0.0)
            errors["grad_rel"] = max((p[1] for p in pairs), default=0.0)
    return BackendRun(
        name,
        "ran",
        "",
        _timing(forward),
        _timing(backward_ms) if backward else None,
        memory,
        kind,
        errors["abs"],
        errors["rel"],
        errors["grad_abs"],
        errors["grad_rel"],
        len(warm),
    )
