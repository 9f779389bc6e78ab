"""Lazy pages through real panels: each fact computed once per refresh, only the sections shown are
built, and nothing is redrawn whose inputs did not change (NOTE [ Lazy pages ] in ``views/page.py``).

Each test counts calls of the expensive pieces (a plan check, a figure, a decision table) while the
panel's own widgets are driven; nothing is timed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import inspector.rpc._plan as rpc_plan
import inspector.rpc._prediction as rpc_prediction
import inspector.views.backends as backends_views
import inspector.views.dispatch as dispatch_views
import inspector.views.loader as loader_views
import inspector.views.rpc as rpc_views
from inspector.loader import FileStorageLoader
from inspector.loader.bench import BenchRow
from inspector.panels.backends import BackendsPanel
from inspector.panels.dispatch import DispatchPanel
from inspector.panels.loader import LoaderPanel
from inspector.panels.rpc import RpcPanel
from inspector.views.page import Page, lazy, note, section


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Counter[str]]:
    """``count(module, "name", ...)``: wrap each function so the returned counter counts its calls."""
    counter: Counter[str] = Counter()

    def count(module: Any, *names: str) -> Counter[str]:
        for name in names:
            original = getattr(module, name)

            def counted(*args: Any, _original: Any = original, _name: str = name, **kwargs: Any) -> Any:
                counter[_name] += 1
                return _original(*args, **kwargs)

            monkeypatch.setattr(module, name, counted)
        return counter

    return count


def test_a_page_builds_each_section_once_and_only_when_asked() -> None:
    built: Counter[str] = Counter()

    def build(key: str) -> Callable[[], list[Any]]:
        def blocks() -> list[Any]:
            built[key] += 1
            return [note(key)]

        return blocks

    current = Page("p", [lazy("a", "A", build("a"), 1), lazy("b", "B", build("b"), 2), section("c", "C", [])])
    assert current.keys == ("a", "b", "c") and "b" in current and "z" not in current and not built
    assert current.section("a").blocks[0].value == "a" and current.section("a") is current.section("a")
    assert built == {"a": 1}
    assert current.inputs("b") == 2 and built == {"a": 1}  # asking what a section reads builds nothing
    current.to_html()
    assert built == {"a": 1, "b": 1}
    with pytest.raises(KeyError, match="Sections: \\['a', 'b', 'c'\\]"):
        current.section("z")
    with pytest.raises(ValueError, match="twice"):
        Page("p", [section("a", "", []), section("a", "", [])])


def test_rpc_runs_each_check_once_per_keystroke(calls: Callable[..., Counter[str]]) -> None:
    panel = RpcPanel()
    counter = calls(rpc_plan, "check_topology", "first_topology_problem")
    calls(rpc_prediction, "first_topology_problem")
    calls(rpc_views, "topology_figure")
    panel.gpus.value = "3"  # one edit: one refresh
    assert counter == {"check_topology": 1, "first_topology_problem": 1, "topology_figure": 1}
    assert panel.last_plan is not None and panel.last_plan.device_counts == {"worker0": 3, "worker1": 3}
    counter.clear()
    panel.add_row()  # an empty row leaves the plan as it was: checked again, nothing redrawn
    assert counter == {"check_topology": 1, "first_topology_problem": 1}


def test_the_loaders_table_refreshes_without_drawing_the_charts(
    calls: Callable[..., Counter[str]], tmp_path: Path
) -> None:
    panel = LoaderPanel()
    for method, mb_s in (("ours", 500.0), ("sync", 400.0), ("memcpy", 900.0)):
        row = BenchRow(
            layout="steps",
            size_mb=1.0,
            workers=1,
            device="cpu",
            method=method,
            mb_s=mb_s,
            mb_s_min=mb_s,
            mb_s_max=mb_s,
            repeats=1,
            loads=2,
            leaves=3,
            corrupt=0,
        )
        panel._on_row(row)
    counter = calls(
        loader_views,
        "throughput_by_size_figure",
        "throughput_by_workers_figure",
        "stage_figure",
        "bench_table",
        "ratio_table",
        "loaders_table",
    )
    with FileStorageLoader(tmp_path, ttl=None, worker_num=1) as loader:
        loader.start()
        panel.refresh_status()  # what the benchmark's watcher does every STATUS_INTERVAL_S
        assert counter == {"loaders_table": 1}
        panel.refresh_status()  # nothing changed in the pool: nothing redrawn
        assert counter == {"loaders_table": 1}
    counter.clear()
    panel._render_results()  # the same rows again: the charts stay as drawn
    assert counter == {}


def test_a_new_result_builds_the_frame_of_results_once(calls: Callable[..., Counter[str]]) -> None:
    panel = LoaderPanel()
    counter = calls(loader_views, "_bench_frame", "throughput_by_size_figure", "throughput_by_workers_figure")
    row = BenchRow(
        layout="steps",
        size_mb=1.0,
        workers=1,
        device="cpu",
        method="ours",
        mb_s=5.0,
        mb_s_min=5.0,
        mb_s_max=5.0,
        repeats=1,
        loads=2,
        leaves=3,
        corrupt=0,
    )
    from inspector.loader.bench.time_left import Cell

    panel._planned = (Cell("steps", 1.0, 1, "ours"), Cell("steps", 1.0, 2, "ours"))  # two worker counts: both charts
    panel._on_row(row)
    # the two figures and both result tables read one frame of the rows, made once
    assert counter == {"_bench_frame": 1, "throughput_by_size_figure": 1, "throughput_by_workers_figure": 1}


def test_dispatch_builds_one_state_per_refresh_and_never_the_hidden_sections(
    calls: Callable[..., Counter[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    panel = DispatchPanel(family="attention")
    states: list[Any] = []
    original_state = DispatchPanel.state

    def counted_state(self: DispatchPanel) -> Any:
        states.append(None)
        return original_state(self)

    monkeypatch.setattr(DispatchPanel, "state", counted_state)
    counter = calls(dispatch_views, "decision_table", "plan_table", "_families_blocks", "what_if_heatmap")
    panel.editor.head_dim.value = 128
    assert len(states) == 1  # one state per refresh
    assert counter["decision_table"] == 1 and counter["plan_table"] == 1  # the table and last_table share it
    assert counter["_families_blocks"] == 0  # "Every other family" is for the report, never shown here
    panel.draw_what_if()
    assert counter["what_if_heatmap"] == 1
    counter.clear()
    panel.select("attention", None)  # the toggle already says auto: an equal plan, nothing redrawn
    panel.refresh()
    assert counter["what_if_heatmap"] == 0 and counter["plan_table"] == 0 and counter["decision_table"] == 1


def test_backends_reads_the_registry_once_per_refresh(
    calls: Callable[..., Counter[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    panel = BackendsPanel()
    snapshots: list[Any] = []
    original = panel.registry.snapshot

    def counted() -> Any:
        snapshots.append(None)
        return original()

    monkeypatch.setattr(panel.registry, "snapshot", counted)
    counter = calls(backends_views, "verb_matrix", "style_verb_matrix")
    panel.refresh()
    assert len(snapshots) == 1 and counter["verb_matrix"] == 1
    assert counter["style_verb_matrix"] == 0  # the registry did not change: the matrix stays as drawn
