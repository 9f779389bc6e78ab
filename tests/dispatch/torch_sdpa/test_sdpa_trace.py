"""``trace_call``, ``context_from_call`` and described (tensor-less) calls of ``torch_sdpa``."""

from __future__ import annotations

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from inspector.dispatch import CallContext, explain, families, resolve, rows, torch_sdpa, trace, what_if

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def test_importing_registers_pytorchs_backends_in_pytorchs_default_order() -> None:
    assert "torch_sdpa" in families()
    # PyTorch's default CUDA order; a CPU call runs flash, then math, all the same (see the next test)
    assert [r.name for r in rows("torch_sdpa")] == [
        "flash_attention",
        "efficient_attention",
        "math",
        "cudnn_attention",
        "overrideable",
    ]
    q = torch.randn(2, 8, 16, 64)
    assert [r.name for r in torch_sdpa.trace_call(q, q, q).rows][:2] == ["flash_attention", "math"]
    assert {r.name for r in rows("torch_sdpa")} == set(torch_sdpa.BACKENDS)
    assert all(isinstance(r.obj, SDPBackend) for r in rows("torch_sdpa"))


def test_trace_call_reports_every_failing_check_required_vs_actual() -> None:
    q = torch.randn(2, 8, 64)  # 3-D
    v = torch.randn(2, 8, 32)  # and a different value head dim
    result = torch_sdpa.trace_call(q, q, v, dropout_p=0.1)
    flash = result.row("flash_attention")
    names = [c.clause for c in flash.failing]
    assert names == ["check_for_dropout", "check_tensor_shapes", "check_head_dim_size_cpp"]
    dims = flash.failing[1]
    assert dims.required == "4-D query, key and value"
    assert dims.actual == "Query dim: 3, Key dim: 3, Value dim: 3"
    assert result.chosen == "math"
    assert "Value.size(-1): 32" in flash.failing[2].actual


def test_context_from_call_keeps_no_tensors_and_summarises_the_call() -> None:
    q = torch.randn(2, 8, 16, 64, dtype=torch.bfloat16)
    ctx = torch_sdpa.context_from_call(q, q, q, is_causal=True)
    assert ctx.family == "torch_sdpa" and ctx.dtype == torch.bfloat16 and ctx.head_dim == 64
    assert ctx.causal is True and ctx.has_mask is False and ctx.raw == ()
    assert "q(2, 8, 16, 64)" in ctx.describe()
    assert resolve("torch_sdpa", ctx).obj == SDPBackend.FLASH_ATTENTION


def test_a_described_call_gets_synthetic_facts() -> None:
    ctx = CallContext("torch_sdpa", dtype=torch.float16, ndim=4, head_dim=128, extra={"dropout_p": 0.1})
    result = trace("torch_sdpa", ctx)
    assert result.chosen == "math"
    assert "(described, not measured)" in result.context.describe()
    assert resolve("torch_sdpa", ctx.evolve(extra={})).name == "flash_attention"


def test_a_described_call_rejects_unknown_axes_with_the_known_ones() -> None:
    ctx = CallContext("torch_sdpa", dtype=torch.float16, ndim=4, head_dim=128, extra={"drop": 0.1})
    with pytest.raises(ValueError, match=r"Axes in extra: .*dropout_p"):
        trace("torch_sdpa", ctx)


def test_what_if_sweeps_a_real_call_context() -> None:
    q = torch.randn(2, 8, 16, 64)
    cells = what_if("torch_sdpa", torch_sdpa.context_from_call(q, q, q), ndim=[3, 4], dtype=[torch.float32])
    assert [(c.value("ndim"), c.row) for c in cells] == [(3, "math"), (4, "flash_attention")]


def test_explain_gives_reasons_for_skipped_rows_and_lower_priority_matches() -> None:
    q = torch.randn(2, 8, 16, 64)
    text = torch_sdpa.trace_call(q, q, q).explain()
    assert "  math: matches, lower priority than flash_attention" in text
    assert "  efficient_attention: reject (PyTorch's CPU dispatch has no efficient_attention kernel" in text
    assert (
        "  overrideable: SKIP unavailable (not on this machine; would also reject: PyTorch's CPU "
        "dispatch has no overrideable kernel" in text
    )
    assert text.endswith("=> flash_attention (origin=chain)")


def test_trace_and_resolution_display_themselves_briefly() -> None:
    q = torch.randn(2, 8, 16, 64)
    result = torch_sdpa.trace_call(q, q, q)
    assert repr(result) == "<Trace torch_sdpa: flash_attention (origin=chain); 5 rows; .explain() for every verdict>"
    html = result._repr_html_()
    assert "<table" in html and "▶ flash_attention" in html
    resolution = resolve("torch_sdpa", torch_sdpa.context_from_call(q, q, q))
    assert "flash_attention" in resolution._repr_html_() and len(repr(resolution)) < 100


def test_an_error_decision_names_pytorchs_refusal() -> None:
    q = torch.randn(2, 8, 64)
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
        assert torch_sdpa.predict(q, q, q) == SDPBackend.ERROR
        result = torch_sdpa.trace_call(q, q, q)
    assert not result.ok and result.row("math").failing[0].message == "The math backend has been runtime disabled."


def test_explain_for_the_attention_family_still_works_next_to_torch_sdpa() -> None:
    import inspector.examples  # noqa: F401

    ctx = CallContext("attention", dtype=torch.bfloat16, ndim=4, head_dim=128)
    assert explain("attention", ctx).endswith("(origin=chain)")


def test_set_op_refuses_torch_sdpa_and_names_what_steers_pytorch() -> None:
    from inspector.dispatch import process_selection, set_op

    with pytest.raises(ValueError, match=r"with op_backend\(torch_sdpa=") as exc:
        set_op("torch_sdpa", "math")
    assert "enable_flash_sdp" in str(exc.value)
    set_op("torch_sdpa", None)  # clearing is harmless
    assert "torch_sdpa" not in process_selection()


def test_process_wide_tiers_never_make_the_trace_disagree_with_pytorch(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    from inspector.dispatch import reload_env, set_op

    q = torch.randn(2, 4, 16, 32)
    monkeypatch.setenv("INSPECTOR_OPS", "torch_sdpa=math")
    with caplog.at_level(logging.WARNING, logger="inspector.dispatch"):
        reload_env()
    assert any("torch_sdpa='math' is ignored" in r.message for r in caplog.records)
    set_op("profile", "reference")
    try:
        assert torch_sdpa.trace_call(q, q, q).chosen == "flash_attention"
        assert torch_sdpa.predict(q, q, q) == SDPBackend(torch._fused_sdp_choice(q, q, q))
        assert resolve("torch_sdpa", torch_sdpa.context_from_call(q, q, q)).name == "flash_attention"
    finally:
        set_op("profile", None)
