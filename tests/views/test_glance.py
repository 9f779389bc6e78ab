"""Figures and tables that read at a glance: stable colours, keys outside the data, fitted sizes, MiB, ✓/✗, digits."""

from __future__ import annotations

import io
import re
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pytest
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex
from PIL import Image

import inspector.examples  # noqa: F401  (the attention family the grids sweep)
from inspector.dispatch import WhatIfCell
from inspector.loader.bench import BenchRow
from inspector.rpc import TopologyPlan
from inspector.views import dispatch as dispatch_views
from inspector.views import loader as loader_views
from inspector.views import rpc as rpc_views
from inspector.views._figures import figure_to_png
from inspector.views._palette import METHOD_COLOURS, PALETTE, row_colours
from inspector.views._tables import TABLE_SCRIPT, cell_text, display_frame, meaningful, table_html
from inspector.views.dispatch import what_if_colours, what_if_heatmap, what_if_key_html
from inspector.views.page import FIGURE, Page

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MAX_PX = (800, 600)


def grid(winners: dict[tuple[str, bool], str | None]) -> list[WhatIfCell]:
    dtypes = {"float16": torch.float16, "float32": torch.float32, "float64": torch.float64}
    return [
        WhatIfCell((("dtype", dtypes[d]), ("has_mask", m)), w, "chain" if w else None, None if w else "none")
        for (d, m), w in winners.items()
    ]


# Two successive grids: in the second, flash wins where it did not before (and sdpa loses a cell).
FIRST = grid(
    {("float16", False): "sdpa", ("float16", True): "math", ("float32", False): "sdpa", ("float32", True): "math"}
)
SECOND = grid(
    {
        ("float16", False): "flash",
        ("float16", True): "sdpa",
        ("float32", False): "chunked",
        ("float32", True): "math",
        ("float64", False): None,
        ("float64", True): "math",
    }
)


def drawn_colour(fig: Figure, row: int, column: int) -> str:
    (ax,) = fig.axes
    rgba = np.asarray(ax.images[0].get_array())[row, column]
    return to_hex(tuple(float(c) for c in rgba[:3]))


def test_a_row_keeps_its_colour_in_two_what_if_grids_with_different_winners() -> None:
    first, second = what_if_colours(FIRST, "attention"), what_if_colours(SECOND, "attention")
    assert first["sdpa"] == second["sdpa"] and first["math"] == second["math"]
    assert len(set(second.values())) == len(second)  # distinct rows, distinct colours
    assert second == {name: row_colours("attention")[name] for name in second}  # the family's colours, in its order
    # drawn: the cell sdpa wins is painted sdpa's colour in both figures (float16 row, no mask / mask column)
    assert drawn_colour(what_if_heatmap(FIRST, index=["dtype"]), 0, 0) == first["sdpa"]
    assert drawn_colour(what_if_heatmap(SECOND, index=["dtype"]), 0, 1) == first["sdpa"]
    # and the page's key says the same, as data attributes a browser test reads
    for cells in (FIRST, SECOND):
        key = dict(re.findall(r"data-row='([^']+)' data-colour='([^']+)'", what_if_key_html(cells, "attention")))
        assert key["sdpa"] == first["sdpa"]
    assert "no row (error)" in what_if_key_html(SECOND, "attention")


def test_the_family_is_found_from_the_winners_when_not_given() -> None:
    assert what_if_colours(SECOND) == what_if_colours(SECOND, "attention")


def test_loader_methods_have_fixed_colours_and_red_is_kept_for_problems() -> None:
    assert "#d62728" not in PALETTE and "#d62728" not in METHOD_COLOURS.values()
    fig = loader_views.throughput_by_size_figure(bench_rows())
    lines = {bars.get_label(): to_hex(bars.lines[0].get_color()) for bars in fig.axes[0].containers}
    assert lines and all(colour == loader_views.method_colour(_method(label)) for label, colour in lines.items())


def _method(label: str) -> str:
    from inspector.loader.bench import METHOD_LABELS

    return next((key for key, shown in METHOD_LABELS.items() if shown == label), label)


def bench_rows() -> list[BenchRow]:
    methods = (("ours", 5000), ("sync", 4000), ("mp_queue", 300), ("dataloader", 500), ("memcpy", 9000))
    return [
        BenchRow(
            layout,
            size,
            workers,
            "cpu",
            m,
            v * workers,
            v * workers * 0.9,
            v * workers * 1.1,
            3,
            8,
            4,
            0,
            1.0,
            0.5,
            0.1,
            0.2,
            None,
            0.05,
        )
        for layout in ("columnar", "nested")
        for size in (1.0, 16.0, 256.0)
        for workers in (1, 4)
        for m, v in methods
    ]


def pages() -> dict[str, Page]:
    """Pages with their largest figures: every what-if grid, a 12-worker device-map graph, a full benchmark."""
    plan = TopologyPlan.build(12, 2, {f"worker{i}": {f"worker{(i + 1) % 12}": {"cuda:0": "cuda:1"}} for i in range(12)})
    return {
        "dispatch": dispatch_views.page(dispatch_views.current_state(what_if_all=True)),
        "rpc": rpc_views.page(rpc_views.current_state()),
        "rpc (12 workers)": rpc_views.page(rpc_views.current_state(plan)),
        "loader": loader_views.page(loader_views.LoaderState(tuple(bench_rows()))),
    }


@pytest.fixture(scope="module")
def every_page() -> dict[str, Page]:
    return pages()


def figures_of(page: Page) -> list[tuple[str, Figure]]:
    return [
        (f"{section.key}: {block.caption}", block.value)
        for section in page.sections
        for block in section.blocks
        if block.kind == FIGURE
    ]


def test_every_figure_fits_the_notebook_width_and_height(every_page: dict[str, Page]) -> None:
    found = [(f"{name} / {caption}", fig) for name, page in every_page.items() for caption, fig in figures_of(page)]
    assert len(found) >= 7
    for name, fig in found:  # the PNG is exactly the figure's size (no tight bounding box)
        width, height = fig.get_size_inches() * fig.dpi
        assert width <= MAX_PX[0] and height <= MAX_PX[1], f"{name}: {width:.0f}x{height:.0f} px"
    tall = [
        WhatIfCell((("head_dim", h), ("has_mask", m), ("grad", g)), "sdpa" if m else "math", "chain", None)
        for h in range(8, 400, 8)
        for m in (False, True)
        for g in (False, True)
    ]  # 49 rows, 4 columns
    width, height = Image.open(io.BytesIO(figure_to_png(what_if_heatmap(tall, index=["head_dim"])))).size
    assert width <= MAX_PX[0] and height <= MAX_PX[1], f"{width}x{height} px"


def test_keys_sit_outside_every_axes(every_page: dict[str, Page]) -> None:
    keyed = 0
    for page in every_page.values():
        for name, fig in figures_of(page):
            assert all(ax.get_legend() is None for ax in fig.axes), f"{name}: a legend inside the data"
            if not fig.legends:
                continue
            canvas = FigureCanvasAgg(fig)
            canvas.draw()
            renderer = canvas.get_renderer()
            for legend in fig.legends:
                keyed += 1
                box = legend.get_window_extent(renderer)
                for ax in fig.axes:
                    assert not box.overlaps(ax.get_window_extent(renderer)), f"{name}: the key covers an axes"
    assert keyed >= 3


def test_heatmaps_put_their_column_key_at_the_top() -> None:
    fig = what_if_heatmap(SECOND, index=["dtype"])
    assert fig.axes[0].xaxis.get_ticks_position() == "top"
    assert fig.axes[0].xaxis.get_label_position() == "top"


def test_one_unit_convention_mib_everywhere(every_page: dict[str, Page]) -> None:
    loader_html = "".join(
        block.to_html() for section in every_page["loader"].sections for block in section.blocks if block.kind != FIGURE
    )
    assert "MiB/s" in loader_html and not re.search(r"\bMB\b|MB/s|mb_s", loader_html)
    labels = [ax.get_ylabel() for _, fig in figures_of(every_page["loader"]) for ax in fig.axes]
    assert any("MiB/s" in label for label in labels) and not any("MB/s" in label for label in labels)


def test_numbers_show_meaningful_digits_never_six_decimals(every_page: dict[str, Page]) -> None:
    assert [meaningful(v) for v in (0.0, 1234.5678, 123.456, 12.3456, 1.23456, 0.0123456, 1.5e-6)] == [
        "0",
        "1,235",
        "123",
        "12.3",
        "1.23",
        "0.0123",
        "1.50e-06",
    ]
    assert cell_text(float("nan")) == "—" and cell_text(12345) == "12,345" and cell_text(7) == "7"
    for name, page in every_page.items():
        text = "".join(block.to_html() for section in page.sections for block in section.blocks if block.kind != FIGURE)
        shown = re.findall(r"(?<![\d.])\d+\.\d+(?![\d.])", text)
        too_precise = [n for n in shown if len(n.replace(".", "").lstrip("0")) > 3]
        assert not too_precise, f"{name}: {too_precise[:5]}"


def test_booleans_read_as_ticks_and_crosses(every_page: dict[str, Page]) -> None:
    frame = pd.DataFrame({"ok": [True, False], "n": [1, 2]})
    assert display_frame(frame)["ok"].tolist() == ["✓", "✗"]
    decision = every_page["dispatch"].section("decision").to_html()
    assert "✓" in decision and "✗" in decision and ">True<" not in decision and ">False<" not in decision


def test_tables_scroll_in_their_box_with_a_filter_and_sortable_headers() -> None:
    frame = pd.DataFrame({"row": ["<b>x</b>", "y"], "value": [2.5, 10.0]})
    markup = table_html(frame, "caption & more")
    assert "class='inspector-table'" in markup and "overflow-x:auto" in markup
    assert "inspector-table-filter" in markup and "inspectorTables.click(event)" in markup
    assert TABLE_SCRIPT in markup and "src=" not in TABLE_SCRIPT and "http" not in TABLE_SCRIPT
    assert "&lt;b&gt;x&lt;/b&gt;" in markup and "caption &amp; more" in markup
    assert "inspector-table-filter" not in table_html(frame.head(1))  # one row: nothing to sort or filter
