"""RPC views from hand-made plans and snapshots: tables say what the engine found, figures draw it."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch

from inspector.rpc import (
    BackendInfo,
    Bandwidth,
    PairLatency,
    RttMatrix,
    TopologyPlan,
    WorkerSnapshot,
    predict_init_error,
)
from inspector.views.rpc import (
    PROBLEM_COLOUR,
    backends_table,
    bandwidth_table,
    derived_table,
    init_error_text,
    maps_table,
    problems_table,
    rtt_heatmap,
    rtt_table,
    topology_figure,
    warnings_table,
    workers_table,
)


@pytest.fixture
def faulty() -> TopologyPlan:
    return TopologyPlan.build(
        3,
        {"worker0": 1, "worker1": 2, "worker2": 2},
        {"worker0": {"worker1": {"cuda:1": "cuda:0"}, "worker2": {"cuda:0": "cuda:0"}, "ghost": {"cpu": "cpu"}},
         "worker1": {"worker1": {"cuda:0": "cuda:1"}}},
        devices={"worker2": ["cuda:0", "cuda:0"]},
    )  # fmt: skip


def arrows(fig: Figure) -> list[FancyArrowPatch]:
    return [p for p in fig.axes[0].patches if isinstance(p, FancyArrowPatch)]


def texts(fig: Figure) -> str:
    return "\n".join(t.get_text() for t in fig.axes[0].texts) + fig.axes[0].get_title()


def test_maps_table_has_a_row_per_pair_with_the_problems_touching_it(faulty: TopologyPlan) -> None:
    frame = maps_table(faulty, faulty.check())
    assert list(frame.columns) == ["caller", "callee", "source", "target", "problems"]
    assert frame.to_dict("records") == [
        {"caller": "worker0", "callee": "worker1", "source": "cuda:1", "target": "cuda:0",
         "problems": "INVALID_SOURCE_INDEX"},
        {"caller": "worker0", "callee": "worker2", "source": "cuda:0", "target": "cuda:0", "problems": ""},
        {"caller": "worker0", "callee": "ghost", "source": "cpu", "target": "cpu", "problems": "UNKNOWN_TARGET_NAME"},
        {"caller": "worker1", "callee": "worker1", "source": "cuda:0", "target": "cuda:1", "problems": ""},
    ]  # fmt: skip


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
    for expected in ["INVALID_SOURCE_INDEX", "UNKNOWN_TARGET_NAME", "DUPLICATED_DEVICES", "ghost\n(not in group)",
                     "cuda:1→cuda:0", "worker0\n1 × cuda", "3 problem(s)", "caller's source device"]:  # fmt: skip
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
    assert list(warnings_table(plan.preflight())["kind"]) == ["SELF_MAP"]
    text = init_error_text(predict_init_error(plan))
    assert text.startswith("ValueError: Node worker0 has source devices with invalid indices")
    assert "raised by: worker0, worker1" in text
    assert init_error_text(None) == "init_rpc would accept this topology."


def test_rtt_heatmap_and_table_from_a_hand_made_matrix() -> None:
    names = ("a", "b")
    pairs = (PairLatency("a", "b", 10, 300e-6, 400e-6), PairLatency("b", "a", 10, 250e-6, 260e-6))
    rtt = RttMatrix(names, pairs)
    frame = rtt_table(rtt)
    assert frame.to_dict("records")[0] == {"caller": "a", "callee": "b", "samples": 10, "median us": 300.0,
                                           "p90 us": 400.0}  # fmt: skip
    fig = rtt_heatmap(rtt)
    values = fig.axes[0].images[0].get_array()
    assert np.ma.getmaskarray(values)[0, 0]  # not measured: left blank
    assert values[0, 1] == pytest.approx(300.0) and values[1, 0] == pytest.approx(250.0)
    assert "300\np90 400" in texts(fig) and fig.axes[0].get_xlabel() == "callee"


def test_world_tables() -> None:
    worker = WorkerSnapshot(0, "w0", 123, 0, {"w1": {"cpu": "cpu"}}, (), {"w1": {"cpu": "cpu"}}, (), 0.25)
    assert workers_table([worker]).loc[0, "device maps"] == "w1: cpu->cpu"
    (row,) = bandwidth_table([Bandwidth("w0", "w1", 2_000_000, 3, 0.002)]).to_dict("records")
    assert row["MB/s"] == 1000.0 and row["MB"] == 2.0
    frame = backends_table([BackendInfo("inspector", "TENSORPIPE", "m.construct", "m.init")])
    assert frame.to_dict("records") == [{"registry": "inspector", "name": "TENSORPIPE",
                                         "options handler": "m.construct", "init handler": "m.init"}]  # fmt: skip
