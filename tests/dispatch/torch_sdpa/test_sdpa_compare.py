"""``torch_sdpa.compare``: every backend that can serve a call, run and measured, against PyTorch's pick."""

from __future__ import annotations

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from inspector.dispatch import CallContext, torch_sdpa
from inspector.dispatch.torch_sdpa.compare import compare
from inspector.dispatch.torch_sdpa.described import complete
from inspector.dispatch.torch_sdpa.inputs import tensors_for

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def test_compare_times_flash_and_math_on_cpu_with_their_errors() -> None:
    q = torch.randn(1, 2, 32, 16, requires_grad=True)
    k, v = torch.randn(1, 2, 32, 16), torch.randn(1, 2, 32, 16)
    result = compare(q, k, v, budget_s=0.05)
    assert result.pick == torch_sdpa.predict(q, k, v).name.lower() == "flash_attention"
    assert [r.backend for r in result.ran()] == ["flash_attention", "math"] and result.backward
    for run in result.ran():
        assert run.forward is not None and run.backward is not None
        assert run.forward.min_ms <= run.forward.median_ms <= run.forward.max_ms and run.forward.runs >= 1
        assert run.memory_kind == "allocated" and (run.memory_bytes is None or run.memory_bytes >= 0)
        assert run.max_abs_error is not None and run.max_abs_error < 1e-4 and run.max_rel_error is not None
        assert run.grad_max_abs_error is not None and run.grad_max_abs_error < 1e-4
    assert q.grad is None  # compare takes gradients with autograd.grad, never into .grad
    refused = {r.backend: r.reason for r in result.runs if r.status == "cannot serve"}
    assert "PyTorch's CPU dispatch has no efficient_attention kernel" in refused["efficient_attention"]
    assert set(refused) == {"efficient_attention", "cudnn_attention", "overrideable"}
    assert isinstance(result.pick_is_fastest, bool) and (result.saving_ms or 0.0) >= 0.0
    assert result.summary().startswith("PyTorch picks flash_attention")
    frame = result.to_frame()
    assert list(frame["backend"])[:2] == ["flash_attention", "math"] and bool(frame["pick"][0])
    assert "flash_attention: forward" in str(result) and "<table" in result._repr_html_()


def test_compare_without_grad_times_the_forward_only_and_shares_inputs() -> None:
    q = torch.randn(1, 2, 16, 8, requires_grad=True)
    with torch.no_grad():
        result = compare(q, q, q, budget_s=0.02)
    assert not result.backward and all(r.backward is None for r in result.ran())


def test_dropout_makes_outputs_random_so_errors_are_not_compared() -> None:
    q = torch.randn(1, 2, 16, 8)
    result = compare(q, q, q, dropout_p=0.5, budget_s=0.02)
    assert [r.backend for r in result.ran()] == ["math"] and result.pick == "math"
    assert result.run("math").max_abs_error is None and "errors against math are not compared" in result.notes[0]
    assert "non-zero dropout" in result.run("flash_attention").reason


def test_a_call_pytorch_refuses_under_the_flags_in_force_is_still_timed_backend_by_backend() -> None:
    q = torch.randn(2, 8, 16)  # 3-D: only math can serve it
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
        result = compare(q, q, q, budget_s=0.02)
    assert result.pick == "error" and [r.backend for r in result.ran()] == ["math"]
    assert result.summary().startswith("PyTorch refuses this call under the flags in force")


def test_time_per_backend_is_bounded_and_bad_arguments_are_refused() -> None:
    q = torch.randn(1, 1, 8, 8)
    result = compare(q, q, q, budget_s=10.0, max_runs=3, warmup=0)
    assert all(r.forward is not None and r.forward.runs == 3 for r in result.ran())
    with pytest.raises(ValueError, match="positive number"):
        compare(q, q, q, budget_s=0)
    meta = torch.empty(1, 1, 8, 8, device="meta")
    with pytest.raises(ValueError, match="trace_call"):
        compare(meta, meta, meta)


def test_described_calls_get_real_tensors_here_but_not_on_a_gpu_this_machine_lacks() -> None:
    ctx = complete(CallContext("torch_sdpa", dtype=torch.float32, ndim=4, head_dim=16, has_mask=True,
                               extra={"seq_len": 8, "kv_len": 12, "mask_dtype": "float32", "enable_gqa": True,
                                      "heads": 4, "kv_heads": 2}))
    (q, k, v), kwargs = tensors_for(ctx.extra["sdpa"])
    assert (q.shape, k.shape, kwargs["attn_mask"].shape) == ((2, 4, 8, 16), (2, 2, 12, 16), (8, 12))
    assert kwargs["enable_gqa"] and q.requires_grad and kwargs["attn_mask"].dtype == torch.float32
    result = compare(q, k, v, **kwargs, budget_s=0.02)
    assert result.pick == "flash_attention" and len(result.ran()) == 2  # PyTorch's CPU flash takes a mask
    on_h100 = complete(CallContext("torch_sdpa", dtype=torch.bfloat16, extra={"gpu": "h100"}))
    with pytest.raises(ValueError, match="does not have that GPU"):
        tensors_for(on_h100.extra["sdpa"])


@pytest.mark.cuda
def test_compare_on_a_gpu_reports_peak_memory_and_runs_the_fused_kernels() -> None:
    q = torch.randn(2, 8, 256, 64, device="cuda", dtype=torch.float16, requires_grad=True)
    result = compare(q, q, q, budget_s=0.2)
    fused = {r.backend for r in result.ran()} - {"math"}
    assert fused and all(r.memory_kind == "peak" and (r.memory_bytes or 0) > 0 for r in result.ran())
    assert result.pick in {r.backend for r in result.ran()}
    assert all((r.max_abs_error or 0.0) < 5e-2 for r in result.ran())
