"""``torch_sdpa.compare``: every backend that can serve a call, run and measured, against PyTorch's pick."""

from __future__ import annotations

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from inspector.dispatch import CallContext, torch_sdpa
from inspector.dispatch.torch_sdpa.compare import compare
from inspector.dispatch.torch_sdpa.comparison import BackendRun, SdpaComparison, Timing
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
        assert run.memory_kind == "peak" and (run.memory_bytes is None or run.memory_bytes >= 0)
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
    ctx = complete(
        CallContext(
            "torch_sdpa",
            dtype=torch.float32,
            ndim=4,
            head_dim=16,
            has_mask=True,
            extra={"seq_len": 8, "kv_len": 12, "mask_dtype": "float32", "enable_gqa": True, "heads": 4, "kv_heads": 2},
        )
    )
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


def test_cpu_memory_is_the_peak_math_holds_not_the_net_bytes_left() -> None:
    q = torch.randn(1, 2, 256, 16)
    result = compare(q, q, q, budget_s=0.05)
    scores = 2 * 256 * 256 * 4  # the (batch, heads, seq_len, kv_len) float32 scores math materialises
    math_run, flash = result.run("math"), result.run("flash_attention")
    assert math_run.memory_kind == flash.memory_kind == "peak"
    assert (math_run.memory_bytes or 0) >= scores > (flash.memory_bytes or 0)  # flash never holds the scores
    assert "peak" in str(result) and "peak" in result._repr_html_()


def test_each_backend_warms_up_until_its_times_settle_within_its_budget() -> None:
    from inspector.dispatch.torch_sdpa.compare import SETTLE_WINDOW, _settled

    assert not _settled([5.0, 4.0, 3.0, 2.5, 2.0, 1.5, 1.2, 1.0, 0.9, 0.6])  # still getting faster
    assert _settled([2.0] * 5 + [1.95] * 5) and not _settled([1.0] * (2 * SETTLE_WINDOW - 1))
    q = torch.randn(1, 1, 8, 8)
    result = compare(q, q, q, budget_s=0.5)
    assert all(r.warmup_runs >= 2 * SETTLE_WINDOW for r in result.ran())  # more than one cold run
    slow = compare(q, q, q, budget_s=0.5, warmup=0, max_runs=1)
    assert all(r.forward is not None and r.forward.runs == 1 for r in slow.ran())
    shared = compare(q, q, q, total_s=0.3)
    assert shared.budget_s == pytest.approx(0.1)  # two backends and the reference share the total
    with pytest.raises(ValueError, match="total_s"):
        compare(q, q, q, total_s=-1)


def _timed(backend: str, median: float, low: float) -> BackendRun:
    return BackendRun(backend, "ran", "", Timing(median, low, median * 1.1, 9))


def test_times_within_the_noise_of_the_runs_are_called_about_the_same() -> None:
    close = SdpaComparison(
        "call", "flash_attention", (_timed("flash_attention", 1.0, 0.98), _timed("math", 0.95, 0.93)), False, 0.1
    )
    assert close.pick_is_fastest is False and close.about_the_same == "math"
    assert "math is about the same" in close.summary() and "nothing to gain" in close.summary()
    noisy = SdpaComparison("call", "math", (_timed("flash_attention", 1.0, 0.5), _timed("math", 1.4, 1.3)), False, 0.1)
    assert noisy.about_the_same == "flash_attention"  # 0.4 ms apart, but the runs spread by 0.6 ms
    apart = SdpaComparison(
        "call", "math", (_timed("flash_attention", 1.0, 0.99), _timed("math", 2.0, 1.98)), False, 0.1
    )
    assert apart.about_the_same is None and "but flash_attention is faster" in apart.summary()


def test_when_pytorchs_pick_is_steered_to_a_slower_backend_the_faster_one_is_named() -> None:
    q = torch.randn(1, 4, 1024, 32)  # math materialises 4 x 1024 x 1024 scores; CPU flash works in blocks
    with sdpa_kernel([SDPBackend.MATH]):
        result = compare(q, q, q, budget_s=0.3)
    assert result.pick == "math" and result.fastest == "flash_attention" and result.pick_is_fastest is False
    assert result.about_the_same is None and (result.saving_ms or 0.0) > 0.0
    summary = result.summary()
    assert summary.startswith("PyTorch picks math, but flash_attention is faster") and "saving" in summary
    assert str(result).splitlines()[1].strip() == summary


def test_calls_too_big_for_this_machine_and_nested_inputs_are_refused_before_anything_runs() -> None:
    from inspector.dispatch.torch_sdpa import compare_limits

    q = torch.randn(1, 1, 200_000, 8)  # small inputs, but 200,000 x 200,000 scores
    with pytest.raises(ValueError, match=r"allocate about .* GiB .* smaller batch, heads, sequence lengths"):
        compare(q, q, q)
    free = compare_limits.free_bytes()
    assert free is None or free > 0
    nested = torch.nested.nested_tensor([torch.randn(2, 5, 8), torch.randn(2, 7, 8)])
    with pytest.raises(ValueError, match="cannot run nested ones"):
        compare(nested, nested, nested)
    with pytest.raises(ValueError, match="cannot run nested ones"):
        jagged = torch.nested.nested_tensor([torch.randn(2, 5, 8), torch.randn(2, 7, 8)], layout=torch.jagged)
        compare(jagged, jagged, jagged)


def test_a_total_budget_too_small_for_the_call_runs_each_backend_twice_and_skips_the_reference() -> None:
    q = torch.randn(1, 4, 512, 32)  # one run of either backend, and the float64 reference, outlast 1 ms
    result = compare(q, q, q, total_s=0.001)
    assert [r.backend for r in result.ran()] == ["flash_attention", "math"]
    for run in result.ran():  # one cold run that also measures memory, then one timed run
        assert run.warmup_runs == 1 and run.forward is not None and run.forward.runs == 1
        assert run.memory_kind == "peak" and run.max_abs_error is None
    assert any("were not computed" in note and "larger budget" in note for note in result.notes)
