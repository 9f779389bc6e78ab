from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.dispatch import (
    CallContext,
    ExplicitSelectionError,
    NoImplementationError,
    explain,
    explain_plan,
    op_backend,
    resolve,
    set_op,
    trace,
    trace_plan,
)

BF16, F32 = torch.bfloat16, torch.float32


def test_trace_evaluates_every_clause_of_every_row() -> None:
    ctx = CallContext("attention", dtype=torch.float64, ndim=3, head_dim=512, has_mask=True, extra={"kv_len": 16})
    result = trace("attention", ctx)
    flash = result.row("flash")
    assert flash.verdict == "SKIP unavailable"  # no GPU here; its clauses are still reported:
    assert [c.axis for c in flash.failing] == ["device_cuda", "dtype", "head_dim", "has_mask", "ndim"]
    sdpa = result.row("sdpa")
    assert sdpa.verdict == "reject"
    assert [(c.axis, c.required, c.actual) for c in sdpa.failing] == [
        ("ndim", "== 4", "3"),
        ("dtype", "in {float16, bfloat16, float32}", "float64"),
    ]
    chunked = result.row("chunked")
    assert {c.axis for c in chunked.failing} == {"grad_enabled", "has_mask", "kv_len"}
    assert result.row("quantized").verdict == "SKIP not faithful"
    assert (result.chosen, result.origin) == ("math", "chain")
    assert [r.name for r in result.rows if r.chosen] == ["math"]
    assert result.row("math").is_fallback


def test_trace_records_the_strict_error_instead_of_raising(toy: str) -> None:
    result = trace(toy, CallContext(toy, dtype=F32), explicit="alpha")
    assert not result.ok and result.chosen is None
    assert result.error_type == "ExplicitSelectionError"
    assert (result.selection, result.selection_tier) == ("'alpha'", "explicit")
    assert result.row("alpha").selected


def test_trace_notes_a_process_selection_that_fell_through(toy: str) -> None:
    set_op(toy, "alpha")
    result = trace(toy, CallContext(toy, dtype=F32))
    assert result.origin == "chain" and result.selection_tier == "env"
    assert "could not be used" in result.notes[0]


def test_explain_lists_verdicts_and_the_decision(toy: str) -> None:
    text = explain(toy, CallContext(toy, dtype=F32))
    assert text.splitlines()[0].startswith("[toy] fwd=None dtype=float32")
    assert "  alpha: reject (dtype: required in {bfloat16}, got float32)" in text
    assert "  fp8: SKIP not faithful (explicit-only)" in text
    assert "  beta: MATCH (always)" in text
    assert text.endswith("  => beta (origin=chain)")


def test_explain_reports_a_strict_error_without_raising(toy: str) -> None:
    text = explain(toy, CallContext(toy, dtype=F32), explicit="alpha")
    assert "=> ERROR: toy row 'alpha'" in text
    with op_backend(toy="alpha"):
        assert "ERROR" in explain(toy, CallContext(toy, dtype=F32))


def test_explain_shows_an_adhoc_selection_as_its_own_row(toy: str) -> None:
    class Custom:
        def supports_call(self, *args: object) -> bool:
            return True

    result = trace(toy, CallContext(toy), explicit=Custom())
    assert result.chosen == "Custom" and result.row("Custom").chosen and result.row("Custom").priority is None


def test_explain_plan_and_trace_plan_cover_each_family(toy: str) -> None:
    contexts = {toy: CallContext(toy, dtype=BF16), "rotary": CallContext("rotary", dtype=F32, head_dim=64)}
    assert [t.chosen for t in trace_plan(contexts)] == ["alpha", "fused"]
    text = explain_plan(contexts)
    assert "[toy]" in text and "[rotary]" in text and "=> fused (origin=chain)" in text


ATTENTION_CONTEXTS = st.builds(
    lambda dtype, ndim, head_dim, mask, grad, fwd, kv_len, cuda: CallContext(
        "attention", fwd, dtype, cuda, ndim, head_dim, False, mask, grad, False, {"kv_len": kv_len}
    ),
    st.sampled_from([torch.float16, BF16, F32, torch.float64]),
    st.sampled_from([3, 4]),
    st.sampled_from([32, 64, 128, 256, 512]),
    st.booleans(),
    st.booleans(),
    st.sampled_from([None, "prefill", "decode"]),
    st.sampled_from([16, 1023, 1024, 8192]),
    st.booleans(),
)


@settings(max_examples=200, deadline=None)
@given(ctx=ATTENTION_CONTEXTS, selection=st.sampled_from([None, "sdpa", "chunked", "quantized", "flash", "math"]))
def test_trace_agrees_with_resolve(ctx: CallContext, selection: str | None) -> None:
    result = trace("attention", ctx, explicit=selection)
    try:
        resolution = resolve("attention", ctx, explicit=selection)
    except (ExplicitSelectionError, NoImplementationError) as exc:
        assert result.error == str(exc)
    else:
        assert (result.chosen, result.origin) == (resolution.name, resolution.origin)
        if selection is None:  # the chain's pick is the first MATCH row
            first_match = next(r.name for r in result.rows if r.verdict == "MATCH")
            assert result.chosen == first_match
