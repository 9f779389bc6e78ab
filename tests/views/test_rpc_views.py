"""RPC views from hand-made plans and snapshots: tables say what the engine found, figures draw it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex, to_rgba
from matplotlib.patches import FancyArrowPatch, Rectangle

from inspector.rpc import (
    BackendInfo,
    Bandwidth,
    PairLatency,
    RttMatrix,
    TopologyPlan,
    WorkerSnapshot,
    predict_init_error,
)
from inspector.views._rpc_graph import EDGE_LABEL, NODE
from inspector.views._rpc_grid import MAPPED, REFUSED, device_grid
from inspector.views.rpc import (
    PROBLEM_COLOUR,
    backends_table,
    bandwidth_figure,
    bandwidth_table,
    current_state,
    derived_table,
    device_grid_figure,
    device_level,
    highlighted_maps,
    init_error_text,
    maps_table,
    page,
    problems_table,
    rtt_heatmap,
    rtt_table,
    topology_figure,
    warnings_table,
    workers_table,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@pytest.fixture
def faulty() -> TopologyPlan:
    return TopologyPlan.build(
        3,
        {"worker0": 1, "worker1": 2, "worker2": 2},
        {
            "worker0": {"worker1": {"cuda:1": "cuda:0"}, "worker2": {"cuda:0": "cuda:0"}, "ghost": {"cpu": "cpu"}},
            "worker1": {"worker1": {"cuda:0": "cuda:1"}},
        },
        devices={"worker2": ["cuda:0", "cuda:0"]},
    )


def arrows(fig: Figure) -> list[FancyArrowPatch]:
    return [p for p in fig.axes[0].patches if isinstance(p, FancyArrowPatch)]


def texts(fig: Figure) -> str:
    return "\n".join(t.get_text() for t in fig.axes[0].texts) + fig.axes[0].get_title()


def test_maps_table_has_a_row_per_pair_with_the_problems_touching_it_and_the_next_step(faulty: TopologyPlan) -> None:
    frame = maps_table(faulty, faulty.check())
    assert list(frame.columns) == ["caller", "callee", "source", "target", "problems", "next step"]
    rows = frame.to_dict("records")
    assert [(r["caller"], r["callee"], r["source"], r["target"], r["problems"]) for r in rows] == [
        ("worker0", "worker1", "cuda:1", "cuda:0", "INVALID_SOURCE_INDEX"),
        ("worker0", "worker2", "cuda:0", "cuda:0", ""),
        ("worker0", "ghost", "cpu", "cpu", "UNKNOWN_TARGET_NAME"),
        ("worker1", "worker1", "cuda:0", "cuda:1", ""),
    ]
    assert rows[0]["next step"] == "sources are the caller's devices; worker0 has 1 CUDA device: use cpu or cuda:0"
    assert rows[1]["next step"] == "" and rows[2]["next step"].startswith("key maps by the callee's name")


def test_the_offending_rows_are_highlighted(faulty: TopologyPlan) -> None:
    html = highlighted_maps(faulty, faulty.check()).to_html()
    (rule,) = [r for r in html.split("}") if "background-color: rgba(214, 39, 40, 0.18)" in r]
    painted = {row for row in range(4) if f"_row{row}_col0" in rule and f"_row{row}_col5" in rule}
    assert painted == {0, 2}  # the rows a problem touches, every column
    assert "INVALID_SOURCE_INDEX" in html and "use cpu or cuda:0" in html
    clean = highlighted_maps(TopologyPlan.ring(3, 1)).to_html()
    assert "rgba(214, 39, 40" not in clean


def test_problems_table_lists_every_problem_in_torchs_order(faulty: TopologyPlan) -> None:
    frame = problems_table(faulty.check())
    assert list(frame["category"]) == ["DUPLICATED_DEVICES", "UNKNOWN_TARGET_NAME", "INVALID_SOURCE_INDEX"]
    assert frame.loc[2, "message"] == (
        "Node worker0 has source devices with invalid indices in its device map for worker1"
    )
    assert frame.loc[2, "devices"] == "cuda:1" and frame.loc[0, "target"] == ""


def test_topology_figure_draws_an_arrow_per_pair_and_problems_in_red(faulty: TopologyPlan) -> None:
    fig = topology_figure(faulty, faulty.check())
    drawn = arrows(fig)
    assert len(drawn) == 4  # three pairs between workers, one self loop
    red = [a for a in drawn if to_hex(a.get_edgecolor()) == PROBLEM_COLOUR]
    assert len(red) == 2
    words = texts(fig)
    for expected in [
        "INVALID_SOURCE_INDEX",
        "UNKNOWN_TARGET_NAME",
        "DUPLICATED_DEVICES",
        "ghost\n(not in group)",
        "cuda:1→cuda:0",
        "worker0\n1 × cuda",
        "3 problem(s)",
        "caller's source device",
    ]:
        assert expected in words


def test_topology_figure_arrows_point_from_caller_to_callee() -> None:
    plan = TopologyPlan.build(2, 1, {"worker1": {"worker0": {"cuda:0": "cuda:0"}}})
    (arrow,) = arrows(topology_figure(plan))
    (x0, y0), (x1, y1) = arrow._posA_posB  # type: ignore[attr-defined]
    assert (round(x0, 6), round(y0, 6)) == (0.0, -1.0) and (round(x1, 6), round(y1, 6)) == (0.0, 1.0)


def test_a_large_plan_shares_one_arrow_per_worker_pair_and_says_so_once() -> None:
    fig = topology_figure(TopologyPlan.full_mesh(4, 8))
    assert len(arrows(fig)) == 12 and "each arrow: 8 pairs, each d→d" in texts(fig)


def test_derived_table_shows_reverse_maps_and_device_lists() -> None:
    plan = TopologyPlan.build(2, 2, {"worker0": {"worker1": {"cuda:0": "cuda:1"}}})
    assert derived_table(plan.derive()).to_dict("records") == [
        {"worker": "worker0", "reverse maps": "", "device list": "cuda:0", "problem": ""},
        {"worker": "worker1", "reverse maps": "worker0: cuda:1->cuda:0", "device list": "cuda:1", "problem": ""},
    ]


def test_warnings_and_init_error_text() -> None:
    plan = TopologyPlan.build(2, 0, {"worker0": {"worker0": {"cpu": "cpu"}, "worker1": {"cuda:0": "cpu"}}})
    assert list(warnings_table(plan.preflight())["kind"]) == ["SELF_MAP", "CPU_PAIR", "ASYMMETRIC_MAP"]
    text = init_error_text(predict_init_error(plan))
    assert text.startswith("ValueError: Node worker0 has source devices with invalid indices")
    assert "raised by: worker0, worker1" in text
    assert init_error_text(None) == "init_rpc would accept this topology."


def latency(caller: str, callee: str, median_us: float, p99_us: float) -> PairLatency:
    return PairLatency(
        caller, callee, 100, median_us * 0.8e-6, median_us * 1e-6, median_us * 1.2e-6, p99_us * 1e-6, p99_us * 1.5e-6
    )


def test_rtt_heatmap_and_table_from_a_hand_made_matrix_flag_the_tail() -> None:
    rtt = RttMatrix(("a", "b"), (latency("a", "b", 300, 400), latency("b", "a", 250, 2500)))
    rows = rtt_table(rtt).to_dict("records")
    assert rows[0] == {
        "caller": "a",
        "callee": "b",
        "samples": 100,
        "min us": 240.0,
        "median us": 300.0,
        "p90 us": 360.0,
        "p99 us": 400.0,
        "max us": 600.0,
        "tail": "",
    }
    assert rows[1]["tail"] == "p99 = 10.0x median"
    fig = rtt_heatmap(rtt)
    values = fig.axes[0].images[0].get_array()
    assert np.ma.getmaskarray(values)[0, 0]  # not measured: left blank
    assert values[0, 1] == pytest.approx(300.0) and values[1, 0] == pytest.approx(250.0)
    words = texts(fig)
    assert "300\np99 400" in words and "250\np99 2500 !" in words
    assert "1 pair(s) with p99 >= 5x median (red frame, !)" in fig.axes[0].get_title()
    (frame,) = [p for p in fig.axes[0].patches if isinstance(p, Rectangle)]  # the tail's cell is framed in red
    assert to_hex(frame.get_edgecolor()) == PROBLEM_COLOUR and frame.get_xy() == pytest.approx((-0.46, 0.54))


def test_every_mark_on_the_rtt_heatmap_reads_on_its_cell() -> None:
    """Black on light cells, white on dark ones: a "!" is never red on dark purple."""
    rtt = RttMatrix(
        ("a", "b"),
        (
            latency("a", "a", 100, 1000),
            latency("a", "b", 900, 950),
            latency("b", "a", 100, 120),
            latency("b", "b", 905, 9000),
        ),
    )
    fig = rtt_heatmap(rtt)
    image = fig.axes[0].images[0]
    for text in fig.axes[0].texts:
        x, y = text.get_position()
        r, g, b, _ = image.cmap(image.norm(image.get_array()[int(y), int(x)]))
        ink = np.array(to_rgba(text.get_color())[:3])
        luminance = lambda c: 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]
        assert abs(luminance(ink) - luminance((r, g, b))) > 0.4, text.get_text()


def test_the_rtt_heatmaps_title_and_frame_fit_inside_the_image() -> None:
    rtt = RttMatrix(
        ("worker0", "worker1"),
        tuple(
            latency(a, b, 300, 4000 if a == b else 310) for a in ("worker0", "worker1") for b in ("worker0", "worker1")
        ),
    )
    fig = rtt_heatmap(rtt)
    inside_the_image(fig)


def inside_the_image(fig: Figure, margin_px: float = 3.0) -> None:
    """Every title, label and tick of ``fig`` lies within the image, ``margin_px`` from its edges."""
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    width, height = fig.bbox.width, fig.bbox.height
    for ax in fig.axes:
        box = ax.get_tightbbox(renderer)
        assert box.x0 >= margin_px and box.y0 >= margin_px, (box, fig)
        assert box.x1 <= width - margin_px and box.y1 <= height - margin_px, (box, width, height)


# -- the device grid of a GPU mesh ---------------------------------------------------------------
def short_node_mesh() -> TopologyPlan:
    mesh = TopologyPlan.full_mesh(4, 8)
    return TopologyPlan.build(mesh.names, {"worker0": 8, "worker1": 8, "worker2": 4, "worker3": 8}, mesh.device_maps)


def test_a_gpu_mesh_is_drawn_as_one_gpu_grid_per_worker_pair_with_the_bad_pairs_marked() -> None:
    plan = short_node_mesh()
    cells, rows, columns = device_grid(plan, plan.check())
    assert len(rows) == len(columns) == 32  # worker2's cuda:4..7 are named by maps, so they have a row too
    assert rows[:9] == [("worker0", f"cuda:{i}") for i in range(8)] + [("worker1", "cuda:0")]
    assert (cells == MAPPED).sum() + (cells == REFUSED).sum() == plan.pair_count == 96
    refused = {(rows[i], columns[j]) for i, j in zip(*np.nonzero(cells == REFUSED), strict=True)}
    assert len(refused) == 24  # cuda:4..7 into worker2 from three callers, and out of it to three
    assert (("worker0", "cuda:5"), ("worker2", "cuda:5")) in refused
    assert (("worker0", "cuda:3"), ("worker2", "cuda:3")) not in refused
    assert not cells[:8, :8].any()  # no worker maps to itself: its own block is empty
    fig = device_grid_figure(plan, plan.check())
    assert "24 refused pair(s) in red: INVALID_SOURCE_INDEX, INVALID_TARGET_INDEX" in fig.axes[0].get_title()
    red_ticks = [t.get_text() for t in fig.axes[0].get_xticklabels() if to_hex(t.get_color()) == PROBLEM_COLOUR]
    assert red_ticks == ["4", "5", "6", "7"]  # the devices worker2 does not have
    inside_the_image(fig)


def test_a_map_to_a_worker_outside_the_group_gets_its_own_red_block() -> None:
    plan = TopologyPlan.build(2, 2, {"worker0": {"ghost": {"cuda:0": "cuda:1"}, "worker1": {"cpu": "cpu"}}})
    cells, rows, columns = device_grid(plan, plan.check())
    assert columns[-1] == ("ghost", "cuda:1") and cells[rows.index(("worker0", "cuda:0")), -1] == REFUSED
    (grid,) = device_grid_figure(plan, plan.check()).axes
    names = [t.get_text() for ax in grid.child_axes for t in ax.get_xticklabels()]  # the workers' names
    assert "ghost (not in group)" in names


def test_small_plans_keep_the_worker_graph_and_meshes_get_the_grid() -> None:
    assert not device_level(TopologyPlan.ring(5, 2)) and not device_level(TopologyPlan.parameter_server(3, 1))
    assert device_level(TopologyPlan.full_mesh(4, 8)) and device_level(TopologyPlan.full_mesh(16, 2))
    assert "device-map graph" in page(current_state()).to_html()
    assert "device grid" in page(current_state(TopologyPlan.full_mesh(4, 8))).to_html()


def test_a_large_mesh_labels_its_blocks_by_worker_without_overlapping_names() -> None:
    plan = TopologyPlan.full_mesh(16, 2)
    fig = device_grid_figure(plan, plan.check())
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    for ax in [*fig.axes, *fig.axes[0].child_axes]:
        for ticks in (ax.get_xticklabels(), ax.get_yticklabels()):
            boxes = [t.get_window_extent(renderer) for t in ticks if t.get_text()]
            assert not any(a.overlaps(b) for k, a in enumerate(boxes) for b in boxes[k + 1 :])
    inside_the_image(fig)


def test_pair_latency_percentiles_come_from_the_samples() -> None:
    pair = PairLatency.from_samples("a", "b", [i * 1e-6 for i in range(1, 101)])
    assert (pair.min_s, pair.median_s, pair.p90_s, pair.p99_s, pair.max_s) == pytest.approx(
        (1e-6, 50e-6, 90e-6, 99e-6, 100e-6)
    )
    assert pair.tail_ratio == pytest.approx(99 / 50) and not pair.has_tail


def bandwidth(nbytes: int, times: list[float], callee: str = "w1") -> Bandwidth:
    return Bandwidth.from_samples("w0", callee, nbytes, 2, times)


def test_bandwidth_is_in_mib_with_warm_up_and_worst_median_best() -> None:
    (row,) = bandwidth_table([bandwidth(2 << 20, [0.004, 0.002, 0.001])]).to_dict("records")
    assert row == {
        "caller": "w0",
        "callee": "w1",
        "MiB": 2.0,
        "warm-up": 2,
        "repeats": 3,
        "min MiB/s": 500.0,
        "median MiB/s": 1000.0,
        "max MiB/s": 2000.0,
    }


def test_bandwidth_figure_draws_a_line_per_pair_across_message_sizes() -> None:
    results = [bandwidth(size, [0.002, 0.001, 0.003], callee) for callee in ("w1", "w2") for size in (1 << 16, 1 << 20)]
    fig = bandwidth_figure(results)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "message size (MiB)"
    assert ax.get_legend() is None and [t.get_text() for t in fig.legends[0].get_texts()] == ["w0 → w1", "w0 → w2"]
    assert "after 2 warm-up send(s)" in ax.get_title() and "worst .. best" in ax.get_ylabel()


def test_world_tables() -> None:
    worker = WorkerSnapshot(0, "w0", 123, 0, {"w1": {"cpu": "cpu"}}, (), {"w1": {"cpu": "cpu"}}, (), 0.25)
    assert workers_table([worker]).loc[0, "device maps"] == "w1: cpu->cpu"
    frame = backends_table([BackendInfo("inspector", "TENSORPIPE", "m.construct", "m.init")])
    assert frame.to_dict("records") == [
        {"registry": "inspector", "name": "TENSORPIPE", "options handler": "m.construct", "init handler": "m.init"}
    ]


def _overlaps(fig: Figure) -> tuple[int, list[tuple[str, str]]]:
    """How many edge labels are drawn, and every (label, node) pair whose drawn extents meet."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    labels = [t for t in ax.texts if t.get_gid() == EDGE_LABEL]
    nodes = [t for t in ax.texts if t.get_gid() == NODE]
    boxes = []
    for node in nodes:
        extent = node.get_window_extent(renderer)
        patch = node.get_bbox_patch()
        boxes.append((node.get_text(), patch.get_window_extent(renderer) if patch is not None else extent))
    hits = [
        (label.get_text(), name)
        for label in labels
        for name, box in boxes
        if label.get_window_extent(renderer).overlaps(box)
    ]
    return len(labels), hits


def _short_mesh(workers: int, gpus: int, short: str, count: int) -> TopologyPlan:
    mesh = TopologyPlan.full_mesh(workers, gpus)
    return TopologyPlan.build(mesh.names, {**mesh.device_counts, short: count}, mesh.device_maps)


@pytest.mark.parametrize(
    "plan",
    [
        _short_mesh(4, 8, "worker2", 4),  # a 4 x 8 mesh with one short node: a red label on most arrows
        _short_mesh(8, 2, "worker3", 1),
        TopologyPlan.build(
            3,
            {"worker0": 1, "worker1": 2, "worker2": 2},
            {
                "worker0": {"worker1": {"cuda:1": "cuda:0"}, "ghost": {"cpu": "cpu"}},
                "worker1": {"worker1": {"cuda:0": "cuda:1"}, "worker2": {"cuda:0": "cuda:7"}},
            },
        ),
        TopologyPlan.build(
            2,
            2,
            {
                "worker0": {"worker1": {"cuda:0": "cuda:1", "cuda:1": "cuda:0"}},
                "worker1": {"worker0": {"cuda:0": "cuda:1"}},
            },
        ),
    ],
)
def test_graph_labels_never_cover_a_worker(plan: TopologyPlan) -> None:
    drawn, hits = _overlaps(topology_figure(plan, plan.check()))
    assert drawn > 0 and hits == []


def test_a_4_by_8_mesh_with_problems_labels_each_problem_arrow() -> None:
    plan = _short_mesh(4, 8, "worker2", 4)
    fig = topology_figure(plan, plan.check())
    labels = [t.get_text() for t in fig.axes[0].texts if t.get_gid() == EDGE_LABEL]
    assert len(labels) == 6  # the six arrows into and out of the short node, each with its category
    assert sorted(set(labels)) == ["INVALID_SOURCE_INDEX", "INVALID_TARGET_INDEX"]


def _with_targets_outside(plan: TopologyPlan, outside: dict[str, list[str]]) -> TopologyPlan:
    maps = plan.device_maps
    for caller, targets in outside.items():
        maps.setdefault(caller, {}).update({target: {"cpu": "cpu"} for target in targets})
    return TopologyPlan.build(plan.names, plan.device_counts, maps)


@pytest.mark.parametrize(
    "plan",
    [
        _with_targets_outside(_short_mesh(4, 8, "worker1", 4), {"worker2": ["ghost"]}),  # below the bottom worker
        _with_targets_outside(TopologyPlan.build(3, 2), {"worker0": ["ghost", "other", "third"], "worker1": ["far"]}),
        _with_targets_outside(TopologyPlan.build(["solo"], 0), {"solo": ["ghost"]}),
        _with_targets_outside(TopologyPlan.ring(20, 1), {"worker5": ["ghost"], "worker14": ["phantom"]}),  # dots
    ],
)
def test_a_target_not_in_the_group_is_drawn_clear_of_every_worker_and_its_arrow_ends_on_no_name(
    plan: TopologyPlan,
) -> None:
    fig = topology_figure(plan, plan.check())
    drawn, hits = _overlaps(fig)  # edge labels still cover no node, these boxes included
    assert drawn > 0 and hits == []
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    nodes = [t for t in ax.texts if t.get_gid() == NODE and t.get_bbox_patch() is not None]
    ghosts = [t for t in nodes if t.get_text().endswith("(not in group)")]
    workers = [t for t in nodes if t not in ghosts]
    outside = {callee for w in plan.workers for callee, _ in w.device_maps if callee not in plan.names}
    assert sorted(ghost.get_text().split("\n")[0] for ghost in ghosts) == sorted(outside)

    def box(text: object) -> object:
        return text.get_bbox_patch().get_window_extent(renderer)  # type: ignore[attr-defined]

    for ghost in ghosts:
        others = [box(node) for node in nodes if node is not ghost]
        assert not any(box(ghost).overlaps(other) for other in others), ghost.get_text()
    dashed = [a for a in arrows(fig) if a.get_linestyle() == "--"]
    assert len(dashed) == len(ghosts)
    for arrow in dashed:  # neither the line nor its head crosses a worker's name
        extent = arrow.get_window_extent(renderer)
        assert not any(extent.overlaps(worker.get_window_extent(renderer)) for worker in workers)
