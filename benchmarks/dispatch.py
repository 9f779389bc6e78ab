"""Dispatch hot-path costs, each against its baseline measured in the same run.

    python benchmarks/dispatch.py        (also: inspector bench dispatch)

Targets: resolve on a 5-row family <= 0.5 µs and <= 12x a plain Python call, and <= 0.25 µs and
>= 15x faster than a straightforward resolve on the same rows (dispatch/baseline_resolve.py); op_backend
enter+exit <= 1 µs and >= 10x cheaper than torch's sdpa_kernel; context-from-tensors plus
resolve <= 2.5 µs (inspector/dispatch/bench.py); torch_sdpa.predict from tensors <= 1.5x
torch._fused_sdp_choice, and trace_call per call reported (inspector/dispatch/torch_sdpa/bench.py);
torch_sdpa.watch() <= 5 µs per call over the bare call, a Llama-style decoder's forward, decode
step and training step <= 1.05x watched, and its memory over 1,000,000 calls
(inspector/dispatch/torch_sdpa/bench_watch.py).
"""

from __future__ import annotations

import sys

import torch

import inspector.examples  # noqa: F401  (registers the attention family)
from inspector.dispatch.bench import measure
from inspector.dispatch.torch_sdpa import bench_watch


def main() -> int:
    torch.set_num_threads(1)
    print(f"dispatch hot path (torch {torch.__version__}, Python {sys.version.split()[0]}, best of 7)")
    for measurement in measure():
        print("  " + measurement.line())
    print("torch_sdpa.watch() against the bare calls (median of 9 alternating rounds, with their range)")
    for measurement in bench_watch.measure():
        print("  " + measurement.line())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
