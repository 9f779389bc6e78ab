from __future__ import annotations

import pytest
import torch

from inspector.dispatch import CallContext


def test_evolve_returns_a_changed_copy() -> None:
    base = CallContext("attention", dtype=torch.float32)
    changed = base.evolve(dtype=torch.bfloat16, has_mask=True)
    assert (base.dtype, base.has_mask) == (torch.float32, False)
    assert (changed.dtype, changed.has_mask) == (torch.bfloat16, True)


def test_evolve_rejects_unknown_axes_and_lists_the_real_ones() -> None:
    with pytest.raises(TypeError, match=r"no axis 'kv_len'.*extra=") as exc:
        CallContext("attention").evolve(kv_len=8)
    assert "head_dim" in str(exc.value)


def test_context_is_immutable_and_extra_is_read_only_after_evolve() -> None:
    ctx = CallContext("attention").evolve(extra={"kv_len": 8})
    with pytest.raises(AttributeError):
        ctx.dtype = torch.float16  # type: ignore[misc]
    with pytest.raises(TypeError):
        ctx.extra["kv_len"] = 9  # type: ignore[index]


def test_value_of_reads_standard_then_extra_axes() -> None:
    ctx = CallContext("attention", head_dim=64, extra={"kv_len": 8})
    assert (ctx.value_of("head_dim"), ctx.value_of("kv_len"), ctx.value_of("window")) == (64, 8, None)


def test_describe_is_one_readable_line() -> None:
    ctx = CallContext("attention", dtype=torch.float16, ndim=4, head_dim=64, extra={"kv_len": 8})
    assert ctx.describe() == "fwd=None dtype=float16 ndim=4 head_dim=64 cache=False mask=False grad=True kv_len=8"


def test_without_raw_drops_the_call_arguments() -> None:
    tensor = torch.zeros(1)
    ctx = CallContext("attention", raw=(tensor,), raw_kwargs={"scale": 1.0})
    bare = ctx.without_raw()
    assert bare.raw == () and dict(bare.raw_kwargs) == {}
    assert bare.evolve() == bare and CallContext("attention").without_raw() == CallContext("attention")
