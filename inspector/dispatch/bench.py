"""The dispatch hot path against its baselines, measured in one run.

``hot_path("attention")`` times ``resolve`` on the family's table (context built) against a
plain Python call and against a straightforward resolve on the same rows (``baseline_resolve``),
``op_backend`` enter+exit against ``torch.nn.attention.sdpa_kernel``, and building the context
from real tensors (the family's sampler and extractor) plus ``resolve``. Targets: resolve <=
0.5 µs and <= 12x a plain call; resolve <= 0.25 µs and >= 15x faster than the straightforward one; op_backend
<= 1 µs and >= 10x cheaper than sdpa_kernel; context + resolve <= 2.5 µs. Times are the best of
``rounds`` (µs per call).
"""

from __future__ import annotations

from inspector._bench import Measurement, Progress, time_steps
from inspector.dispatch.baseline_resolve import StraightforwardDispatch
from inspector.dispatch.context import CallContext
from inspector.dispatch.overrides import op_backend
from inspector.dispatch.registry import REGISTRY, get_family, plan_for, rows
from inspector.dispatch.resolution import context_for, resolve


def _plain_call(family: str, ctx: object) -> object:
    return ctx


def hot_path(family: str = "attention", rounds: int = 7, progress: Progress | None = None) -> list[Measurement]:
    """Measure the three hot-path costs for ``family`` (it needs a sampler and an extractor)."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    info = get_family(family)
    if info.sampler is None or info.extractor is None:
        raise TypeError(f"Family {family!r} needs a sampler and an extractor to be benchmarked from tensors")
    base = CallContext(family, dtype=torch.float32, ndim=4, head_dim=64)
    args, kwargs = info.sampler(base, torch.Generator().manual_seed(0))
    ctx = context_for(family, *args, **kwargs)
    row = rows(family)[-1].name
    baseline = StraightforwardDispatch(family, rows(family), plan_for(family).fallback, aliases=REGISTRY.tier.aliases)
    assert baseline.resolve(family, ctx)[0].name == resolve(family, ctx).name  # the same question, the same answer
    namespace = {
        "baseline_resolve": baseline.resolve,
        "resolve": resolve,
        "ctx": ctx,
        "plain": _plain_call,
        "op_backend": op_backend,
        "sdpa_kernel": sdpa_kernel,
        "SDPBackend": SDPBackend,
        "extractor": info.extractor,
        "args": args,
        "kwargs": kwargs,
        "family": family,
    }
    if not family.isidentifier():
        raise ValueError(f"Family {family!r} is not a Python identifier, so op_backend({family}=...) cannot name it")
    steps = [
        ("plain", "plain('x', ctx)", 500_000),
        ("resolve", "resolve(family, ctx)", 300_000),
        ("baseline", "baseline_resolve(family, ctx)", 50_000),
        ("op_backend", f"with op_backend({family}={row!r}): pass", 200_000),
        ("sdpa_kernel", "with sdpa_kernel(SDPBackend.MATH): pass", 20_000),
        # what a family's op does per call: its extractor on the real arguments, then resolve
        ("context", "resolve(family, extractor(*args, **kwargs))", 100_000),
    ]
    t = time_steps(steps, namespace, rounds, progress, "dispatch")
    size = len(rows(family))
    resolve_ratio, scope_ratio = t["resolve"] / t["plain"], t["sdpa_kernel"] / t["op_backend"]
    baseline_ratio = t["baseline"] / t["resolve"]
    return [
        Measurement(
            "dispatch",
            f"resolve, {size}-row {family} family",
            t["resolve"],
            "µs",
            "plain Python call",
            t["plain"],
            resolve_ratio,
            "a plain call",
            "<= 0.5 µs and <= 12x",
            t["resolve"] <= 0.5 and resolve_ratio <= 12,
        ),
        Measurement(
            "dispatch",
            f"resolve against a straightforward one, {size}-row {family} family",
            t["resolve"],
            "µs",
            "straightforward resolve (baseline_resolve)",
            t["baseline"],
            baseline_ratio,
            "faster than the straightforward one",
            "<= 0.25 µs and >= 15x",
            t["resolve"] <= 0.25 and baseline_ratio >= 15,
        ),
        Measurement(
            "dispatch",
            "op_backend enter+exit",
            t["op_backend"],
            "µs",
            "sdpa_kernel enter+exit",
            t["sdpa_kernel"],
            scope_ratio,
            "cheaper than sdpa_kernel",
            "<= 1 µs and >= 10x",
            t["op_backend"] <= 1.0 and scope_ratio >= 10,
        ),
        Measurement(
            "dispatch", "context from tensors + resolve", t["context"], "µs", target="<= 2.5 µs", ok=t["context"] <= 2.5
        ),
    ]


def measure(progress: Progress | None = None, family: str = "attention") -> list[Measurement]:
    """Every dispatch figure: the hot path on ``family`` (when registered) and ``torch_sdpa``'s."""
    from inspector.dispatch.torch_sdpa.bench import measure as sdpa_measure

    figures = hot_path(family, progress=progress) if family in REGISTRY.registered() else []
    return [*figures, *sdpa_measure(progress=progress)]
