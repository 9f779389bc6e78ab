from __future__ import annotations

import pytest
import torch

from inspector.dispatch import CallContext, op_backend, resolve, what_if
from inspector.dispatch.what_if import with_axes

BASE = CallContext("attention", dtype=torch.float32, ndim=4, head_dim=64, extra={"kv_len": 2048})


def test_grid_has_one_cell_per_combination_and_matches_resolve() -> None:
    cells = what_if(
        "attention",
        BASE,
        dtype=[torch.float16, torch.float64],
        head_dim=[64, 512],
        has_mask=[False, True],
        grad_enabled=[False, True],
    )
    assert len(cells) == 16
    for cell in cells:
        ctx = with_axes(BASE, dict(cell.axes))
        assert cell.row == resolve("attention", ctx).name


def test_grid_shows_the_rows_this_table_picks() -> None:
    winners = {
        (c.value("grad_enabled"), c.value("has_mask")): c.row
        for c in what_if("attention", BASE, grad_enabled=[True, False], has_mask=[False, True])
    }
    assert winners == {(True, False): "sdpa", (True, True): "sdpa", (False, False): "chunked", (False, True): "sdpa"}


def test_unknown_axes_sweep_extra() -> None:
    cells = what_if("attention", BASE.evolve(grad_enabled=False), kv_len=[16, 4096])
    assert [c.row for c in cells] == ["sdpa", "chunked"]


def test_selection_errors_become_cells_not_exceptions() -> None:
    with op_backend(attention="chunked"):
        cells = what_if("attention", BASE, grad_enabled=[True, False])
    assert cells[0].row is None and "cannot handle" in (cells[0].error or "")
    assert cells[1].row == "chunked" and cells[1].origin == "context"


def test_what_if_needs_an_axis() -> None:
    with pytest.raises(TypeError, match="at least one axis"):
        what_if("attention", BASE)
