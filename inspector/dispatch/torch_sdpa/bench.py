"""``torch_sdpa`` against PyTorch's own check, measured in one run.

``predict`` from real tensors is timed against ``torch._fused_sdp_choice`` (PyTorch's C++ choice
for the same call; target: at most 2x), and ``trace_call`` (every clause of every backend, the
data behind the panel) is reported per call. Times are the best of ``rounds`` (µs per call).
"""

from __future__ import annotations

import torch

from inspector._bench import Measurement, Progress, time_steps
from inspector.dispatch.torch_sdpa.family import predict, trace_call

TARGET_RATIO = 2.0



def measure(rounds: int = 7, progress: Progress | None = None) -> list[Measurement]:
    """Predict vs PyTorch's own choice, and a full trace, for a typical 4-D float32 CPU call."""
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 8, 128, 64, generator=generator) for _ in range(3))
    namespace = {"predict": predict, "choice": torch._fused_sdp_choice, "trace_call": trace_call,
                 "q": q, "k": k, "v": v}
    steps = [("pytorch", "choice(q, k, v)", 50_000), ("predict", "predict(q, k, v)", 20_000),
             ("trace", "trace_call(q, k, v)", 2_000)]
    t = time_steps(steps, namespace, rounds, progress, "torch_sdpa")
    ratio = t["predict"] / t["pytorch"]
    return [
        Measurement("dispatch", "torch_sdpa predict from tensors", t["predict"], "µs", "torch._fused_sdp_choice",
                    t["pytorch"], ratio, "PyTorch's own check", f"<= {TARGET_RATIO:g}x", ratio <= TARGET_RATIO),
        Measurement("dispatch", "torch_sdpa trace_call (every check of every backend)", t["trace"], "µs"),
    ]
