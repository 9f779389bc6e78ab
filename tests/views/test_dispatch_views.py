"""Views are pure: they are fed hand-made snapshots here, not the live engine."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from matplotlib.figure import Figure

from inspector.dispatch import CallContext, ClauseCheck, DecisionCount, RowRun, RowTrace, Trace, WhatIfCell
from inspector.views._figures import figure_to_png
from inspector.views.dispatch import (
    DECISION_COLUMNS,
    clause_table,
    comparison_table,
    decision_counts_table,
    decision_table,
    plan_table,
    style_decision_table,
    what_if_heatmap,
    what_if_pivot,
    what_if_table,
)

CTX = CallContext("attention", dtype=torch.float32, ndim=4, head_dim=64)
FAIL = ClauseCheck("dtype in {bfloat16}", "dtype", "in {bfloat16}", "float32", False)
PASS = ClauseCheck("ndim==4", "ndim", "== 4", "4", True)


def row(name: str, verdict: str, checks: tuple[ClauseCheck, ...], chosen: bool = False, **kw) -> RowTrace:
    fields = dict(priority=0, available=True, faithful=True, is_fallback=False, selected=False, description="")
    fields.update(kw)
    return RowTrace(name, verdict=verdict, checks=checks, chosen=chosen, **fields)  # type: ignore[arg-type]


def hand_made_trace(error: str | None = None) -> Trace:
    rows = (
        row("fast", "reject", (FAIL, PASS), priority=0),
        row("gpu", "SKIP unavailable", (PASS,), available=False, priority=1),
        row("ref", "MATCH", (PASS,), chosen=error is None, priority=100, is_fallback=True),
    )
    return Trace(
        "attention",
        CTX,
        rows,
        None if error else "ref",
        None if error else "chain",
        error,
        "ExplicitSelectionError" if error else None,
        None,
        None,
        None,
        (),
    )


def test_decision_table_has_the_documented_columns_and_values() -> None:
    frame = decision_table(hand_made_trace())
    assert list(frame.columns) == DECISION_COLUMNS
    assert frame["row"].tolist() == ["fast", "gpu", "ref"]
    assert frame.loc[0, "failing"] == "dtype: required in {bfloat16}, got float32"
    assert frame["chosen"].tolist() == [False, False, True]
    assert frame["origin"].tolist() == ["", "", "chain"]
    assert frame.attrs["chosen"] == "ref" and frame.attrs["family"] == "attention"


def test_styled_table_highlights_the_chosen_row_and_captions_the_decision() -> None:
    html = style_decision_table(decision_table(hand_made_trace())).to_html()
    assert "ref (origin=chain)" in html
    assert "★" in html
    assert "rgba(44, 160, 44, 0.25)" in html
    error_html = style_decision_table(decision_table(hand_made_trace(error="row 'fast' cannot\nmore"))).to_html()
    assert "ERROR: row &#x27;fast&#x27; cannot" in error_html or "ERROR: row 'fast' cannot" in error_html


def test_clause_table_lists_every_clause() -> None:
    frame = clause_table(hand_made_trace())
    assert len(frame) == 4
    assert frame[~frame["passed"]][["row", "axis", "required", "actual"]].values.tolist() == [
        ["fast", "dtype", "in {bfloat16}", "float32"]
    ]


def test_plan_table_summarises_each_family() -> None:
    frame = plan_table([hand_made_trace(), hand_made_trace(error="boom\ndetails")])
    assert frame["chosen"].tolist() == ["ref", ""]
    assert frame["error"].tolist() == ["", "boom"]


CELLS = [
    WhatIfCell((("dtype", torch.float16), ("has_mask", m)), "fast" if not m else "ref", "chain", None)
    for m in (False, True)
] + [
    WhatIfCell((("dtype", torch.float64), ("has_mask", m)), None, None, "No attention implementation")
    for m in (False, True)
]


def test_what_if_table_and_pivot() -> None:
    table = what_if_table(CELLS)
    assert table.columns.tolist() == ["dtype", "has_mask", "winner", "origin", "error"]
    assert table["winner"].tolist() == ["fast", "ref", "—", "—"]
    pivot = what_if_pivot(CELLS, index=["dtype"])
    assert pivot.loc["float16"].tolist() == ["fast", "ref"]
    with pytest.raises(KeyError, match="Swept axes"):
        what_if_pivot(CELLS, index=["head_dim"])


def test_what_if_heatmap_is_an_object_api_figure() -> None:
    fig = what_if_heatmap(CELLS, index=["dtype"], title="grid")
    assert isinstance(fig, Figure)
    (ax,) = fig.axes
    texts = sorted(t.get_text() for t in ax.texts)
    assert texts == ["fast", "ref", "—", "—"]
    assert ax.get_legend() is None  # the key sits above the axes, for the whole figure
    (key,) = fig.legends
    assert [t.get_text() for t in key.get_texts()] == ["fast", "ref", "no row (error)"]
    assert figure_to_png(fig).startswith(b"\x89PNG")


def test_comparison_and_counts_tables() -> None:
    runs = [
        RowRun("ref", "reference", True, 0.0, 0.0, 1e-5, 1e-5, True, 1.0, ""),
        RowRun("q8", "ok", False, 0.1, 0.05, 1e-5, 1e-5, False, 0.5, ""),
    ]
    frame = comparison_table(runs)
    assert frame["within_tolerance"].tolist() == [True, False]
    assert frame.loc[1, "tolerance"] == "atol=1e-05, rtol=1e-05"
    counts = decision_counts_table([DecisionCount("attention", "sdpa", "chain", 3)])
    assert counts.to_dict("records") == [{"family": "attention", "row": "sdpa", "origin": "chain", "count": 3}]
    assert isinstance(counts, pd.DataFrame)
