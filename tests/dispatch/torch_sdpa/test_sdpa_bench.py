"""The torch_sdpa benchmarks run and say what they measured (their figures live in ``make bench``, never here)."""

from __future__ import annotations

import pytest
import torch.nn.functional as F

from inspector.dispatch.torch_sdpa import bench, bench_watch, interception


@pytest.mark.slow
def test_the_watch_benchmark_reports_every_figure_and_leaves_sdpa_as_it_was() -> None:
    before = F.scaled_dot_product_attention
    figures = bench_watch.measure(rounds=1, calls=2_000)
    names = [m.name for m in figures]
    assert len(figures) == 6 and names[0].startswith("watch() per call over the bare call")
    assert sum("Llama-style decoder" in n for n in names) == 3 and "memory growth over 2,000 calls" in names[-1]
    assert all(m.target for m in figures[1:]) and "around a kernel that does nothing" in names[1]
    assert "SDPA calls x" in figures[2].ratio_label  # the ratio the watch's own cost alone makes
    assert F.scaled_dot_product_attention is before and not interception.installed()


def test_the_predict_benchmark_names_pytorchs_own_check_as_its_baseline() -> None:
    figures = bench.measure(rounds=1)
    assert all(m.baseline == "torch._fused_sdp_choice" for m in figures[:5]) and figures[0].target == "<= 1.5x"
