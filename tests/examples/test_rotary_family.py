from __future__ import annotations

import math

import pytest
import torch

from inspector.dispatch import CallContext, resolve, run_rows
from inspector.examples import apply_rotary, rotary_angles, rotary_context
from inspector.examples.rotary import TOLERANCES, rotary_fused, rotary_reference


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fused_matches_the_reference(dtype: torch.dtype) -> None:
    x = torch.randn(2, 4, 16, 64, generator=torch.Generator().manual_seed(0)).to(dtype)
    angles = rotary_angles(16, 64)
    atol, rtol = TOLERANCES[dtype]
    torch.testing.assert_close(rotary_fused(x, angles), rotary_reference(x, angles), atol=atol, rtol=rtol)


def test_rotation_preserves_pair_norms_and_position_zero() -> None:
    x = torch.randn(1, 8, 32, dtype=torch.float64)
    out = rotary_reference(x, rotary_angles(8, 32))
    torch.testing.assert_close(out[0, 0], x[0, 0])
    pair_norm = lambda t: t.reshape(*t.shape[:-1], -1, 2).norm(dim=-1)
    torch.testing.assert_close(pair_norm(out), pair_norm(x))


def test_quarter_turn_is_exact() -> None:
    x = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    out = rotary_reference(x, torch.tensor([[math.pi / 2]]))
    torch.testing.assert_close(out, torch.tensor([[0.0, 1.0]], dtype=torch.float64))


def test_rotary_dispatch_uses_fused_for_float32_and_the_reference_for_half() -> None:
    x = torch.randn(2, 16, 64)
    assert resolve("rotary", rotary_context(x, rotary_angles(16, 64))).name == "fused"
    assert resolve("rotary", rotary_context(x.half(), rotary_angles(16, 64))).name == "torch"
    out = apply_rotary(x.bfloat16(), rotary_angles(16, 64))
    assert out.dtype == torch.bfloat16


def test_odd_head_dim_is_refused_with_a_reason() -> None:
    with pytest.raises(ValueError, match="must be even"):
        rotary_angles(4, 7)


def test_run_rows_on_rotary() -> None:
    runs = {r.row: r for r in run_rows("rotary", CallContext("rotary", dtype=torch.float32, head_dim=32), repeats=1)}
    assert runs["torch"].status == "reference" and runs["fused"].within_tolerance
