"""``torch_sdpa`` against PyTorch's own check, measured in one run.

``predict`` from real tensors is timed against ``torch._fused_sdp_choice`` (PyTorch's C++ choice
for the same call; target: at most 1.5x) on the calls models make: self-attention, a boolean
mask, inputs transposed from (batch, seq, heads, dim), grouped-query heads and 3-D inputs. The
two are timed in short alternating windows (2,000 calls, ten of each per round), so a busy machine
slows both alike; each figure is the best window (µs per call). Beside them: the bare cost of
reading from Python the metadata PyTorch's check reads in C++ (each tensor's class, device, shape,
dtype and contiguity), which is why ``predict`` asks PyTorch for real tensors (NOTE [ Asking
PyTorch first ]); the ported rules from tensors (what ``predict(..., gpu=...)`` and the
differential tests run); ``trace_call`` (every clause of every backend, the data behind the
panel); and ``watch()`` (``bench_watch``).
"""

from __future__ import annotations

import timeit

import torch

from inspector._bench import Measurement, Progress, per_call_us
from inspector.dispatch.torch_sdpa import bench_watch
from inspector.dispatch.torch_sdpa.family import trace_call
from inspector.dispatch.torch_sdpa.prediction import predict
from inspector.dispatch.torch_sdpa.tables import predict_by_rules

TARGET_RATIO = 1.5
WINDOWS = 10  # timing windows per round and statement (``_alternating``)
CALLS = (  # (what the call is, its arguments in the namespace below)
    ("4-D self-attention", "q, k, v"),
    ("boolean mask", "q, k, v, mask"),
    ("transposed from (batch, seq, heads, dim)", "qt, kt, vt"),
    ("grouped-query heads (8 query, 2 key/value)", "q, kg, vg, enable_gqa=True"),
    ("3-D inputs", "q3, k3, v3"),
)


def _namespace() -> dict[str, object]:
    generator = torch.Generator().manual_seed(0)

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=generator)

    q, k, v = (randn(2, 8, 128, 64) for _ in range(3))
    qt, kt, vt = (randn(2, 128, 8, 64).transpose(1, 2) for _ in range(3))
    return {
        "predict": predict,
        "choice": torch._fused_sdp_choice,
        "trace_call": trace_call,
        "metadata": _metadata,
        "rules": predict_by_rules,
        "q": q,
        "k": k,
        "v": v,
        "mask": torch.ones(128, 128, dtype=torch.bool),
        "qt": qt,
        "kt": kt,
        "vt": vt,
        "kg": randn(2, 2, 128, 64),
        "vg": randn(2, 2, 128, 64),
        "q3": randn(16, 128, 64),
        "k3": randn(16, 128, 64),
        "v3": randn(16, 128, 64),
    }


def _metadata(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[object, ...]:
    """What the CPU flash checks read of each tensor, read from Python and nothing else."""
    return (
        q.__class__,
        k.__class__,
        v.__class__,
        q.is_cpu,
        k.is_cpu,
        v.is_cpu,
        q.shape,
        k.shape,
        v.shape,
        q.dtype,
        k.dtype,
        v.dtype,
        q.is_contiguous(),
        k.is_contiguous(),
        v.is_contiguous(),
    )


def _alternating(statements: tuple[str, str], namespace: dict[str, object], number: int, rounds: int) -> list[float]:
    """Best µs per call of each statement, timed in alternating windows of ``number`` calls,
    ``WINDOWS`` of each per round: short windows that take turns, so each statement's best is
    one in which the machine was quiet, and both had as many chances at one."""
    timers = [timeit.Timer(statement, globals=namespace) for statement in statements]
    best = [float("inf")] * len(statements)
    for _ in range(rounds * WINDOWS):
        for index, timer in enumerate(timers):
            best[index] = min(best[index], timer.timeit(number) / number * 1e6)
    return best


def measure(rounds: int = 9, progress: Progress | None = None, *, watch: bool = False) -> list[Measurement]:
    """Predict vs PyTorch's own choice on each call of ``CALLS``, the rules and a full trace of the
    first, and (``watch``, about a minute: ``benchmarks/dispatch.py`` asks for them) the ``watch()`` figures."""
    namespace = _namespace()
    total = len(CALLS) + 3
    measurements = []
    for done, (what, arguments) in enumerate(CALLS):
        if progress is not None:
            progress(done, total, f"torch_sdpa: predict, {what}")
        ours, pytorch = _alternating((f"predict({arguments})", f"choice({arguments})"), namespace, 2_000, rounds)
        ratio = ours / pytorch
        measurements.append(
            Measurement(
                "dispatch",
                f"torch_sdpa predict from tensors, {what}",
                ours,
                "µs",
                "torch._fused_sdp_choice",
                pytorch,
                ratio,
                "PyTorch's own check",
                f"<= {TARGET_RATIO:g}x",
                ratio <= TARGET_RATIO,
            )
        )
    if progress is not None:
        progress(len(CALLS), total, "torch_sdpa: reading the metadata alone")
    reads, pytorch = _alternating(("metadata(q, k, v)", "choice(q, k, v)"), namespace, 2_000, rounds)
    measurements.append(
        Measurement(
            "dispatch",
            "reading q, k, v's metadata from Python alone (no decision)",
            reads,
            "µs",
            "torch._fused_sdp_choice",
            pytorch,
            reads / pytorch,
            "PyTorch's own check",
        )
    )
    if progress is not None:
        progress(len(CALLS) + 1, total, "torch_sdpa: the ported rules from tensors")
    rules, pytorch = _alternating(("rules(q, k, v)", "choice(q, k, v)"), namespace, 500, rounds)
    measurements.append(
        Measurement(
            "dispatch",
            "the ported rules from tensors (predict with gpu=, the differential tests)",
            rules,
            "µs",
            "torch._fused_sdp_choice",
            pytorch,
            rules / pytorch,
            "PyTorch's own check",
        )
    )
    if progress is not None:
        progress(len(CALLS) + 2, total, "torch_sdpa: trace_call")
    trace = per_call_us("trace_call(q, k, v)", namespace, 1_000, rounds)
    measurements.append(Measurement("dispatch", "torch_sdpa trace_call (every check of every backend)", trace, "µs"))
    if progress is not None:
        progress(total, total, "torch_sdpa: predict done")
    if watch:
        measurements += bench_watch.measure(rounds, progress)
    return measurements
