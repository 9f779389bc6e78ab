"""``torch_sdpa.what_if_grid``: the axes that change PyTorch's answer; one line on the page when nothing does."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
import torch

from inspector.dispatch import CallContext, op_backend, torch_sdpa
from inspector.dispatch.torch_sdpa.grid import agreed, variants

if TYPE_CHECKING:
    from inspector.dispatch.what_if import WhatIfCell

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _winner(cells: tuple[WhatIfCell, ...], device: str, dtype: str, call: str) -> str | None:
    return next(c.row for c in cells if c.axes == (("device", device), ("dtype", dtype), ("call", call)))


def test_the_grid_varies_device_gpu_dtype_and_the_call_and_the_answers_differ() -> None:
    cells = torch_sdpa.what_if_grid()
    assert len(cells) == 5 * 3 * len(variants())
    assert {c.value("call") for c in cells} >= {"dropout 0.1", "is_causal, kv 2x", "float mask", "decode, kv 4096"}
    assert _winner(cells, "cpu", "float32", "as given") == "flash_attention"
    assert _winner(cells, "cpu", "float32", "dropout 0.1") == "math"
    assert _winner(cells, "T4", "bfloat16", "as given") == "math"
    assert _winner(cells, "A100", "bfloat16", "as given") == "flash_attention"
    assert _winner(cells, "A100", "bfloat16", "is_causal, kv 2x") == "efficient_attention"
    assert _winner(cells, "A100", "bfloat16", "float mask") == "efficient_attention"
    assert _winner(cells, "H100", "bfloat16", "as given") == "cudnn_attention"
    assert _winner(cells, "H100", "bfloat16", "dropout 0.1") == "flash_attention"  # 0.1 is no multiple of 1/16
    assert len({c.row for c in cells}) == 4 and agreed(cells) is None


def test_the_grid_starts_from_the_callers_context_and_honours_a_selection() -> None:
    base = CallContext("torch_sdpa", dtype=torch.float32, ndim=3, head_dim=64)
    cells = torch_sdpa.what_if_grid(base, devices={"cpu": None}, dtypes=[torch.float32])
    assert agreed(cells) == "math"  # 3-D inputs: no fused kernel, whatever else changes
    with op_backend(torch_sdpa="flash_attention"):
        strict = torch_sdpa.what_if_grid(devices={"cpu": None}, dtypes=[torch.float32])
    refused = [c for c in strict if c.row is None]
    assert [c.value("call") for c in refused] == ["dropout 0.1"]
    assert "cannot handle this call" in (refused[0].error or "")


def test_a_grid_where_every_cell_agrees_is_one_line_on_the_page() -> None:
    from inspector.views.dispatch import DispatchState, page, trace_or_failure

    base = CallContext("torch_sdpa", dtype=torch.float32, ndim=3, head_dim=64)
    same = torch_sdpa.what_if_grid(base, devices={"cpu": None}, dtypes=[torch.float32])
    mixed = torch_sdpa.what_if_grid(devices={"cpu": None, "H100": "h100"})
    for cells, expected in ((same, "note"), (mixed, "figure")):
        state = DispatchState("torch_sdpa", base, {}, (trace_or_failure("torch_sdpa", base),), {"torch_sdpa": cells})
        blocks = page(state).section("what_if:torch_sdpa").blocks
        assert [b.kind for b in blocks][-1] == expected
    one = (
        page(DispatchState("torch_sdpa", base, {}, (trace_or_failure("torch_sdpa", base),), {"torch_sdpa": same}))
        .section("what_if:torch_sdpa")
        .blocks[0]
    )
    assert one.value == f"Every one of the {len(same)} combinations (device × dtype × call) runs math."
