"""Engine objects display themselves: a short repr, and a plain-HTML table as a cell's last expression."""

from __future__ import annotations

import pytest

from inspector._bench import Measurement
from inspector.loader import FileStorageLoader, loader_statuses
from inspector.loader.bench import BenchResults, BenchRow
from inspector.rpc import TopologyPlan

LIMIT = 300  # characters: a repr is a line, not a dump


def test_a_topology_plan_shows_its_workers_and_init_rpcs_verdict() -> None:
    plan = TopologyPlan.full_mesh(16, 8)
    assert len(repr(plan)) < LIMIT and repr(plan).startswith("<TopologyPlan: 16 workers (worker0, ")
    html = plan._repr_html_()
    assert "<table" in html and "worker15" in html and "init_rpc would accept this plan" in html
    bad = TopologyPlan.build(2, {"worker0": 2, "worker1": 1}, {"worker0": {"worker1": {"cuda:1": "cuda:1"}}})
    assert "init_rpc would refuse" in bad._repr_html_()


@pytest.mark.slow
def test_a_loader_status_shows_its_workers(tmp_path) -> None:
    with FileStorageLoader(dirname=str(tmp_path), worker_num=1) as loader:
        loader.load(loader.save([1])).result(60)
        (status,) = [s for s in loader_statuses() if s.name == loader.status().name]
        assert len(repr(status)) < LIMIT and "1/1 workers alive" in repr(status)
        assert "<table" in status._repr_html_() and "✓" in status._repr_html_()


def test_benchmark_results_and_measurements_show_a_table() -> None:
    rows = BenchResults(
        [
            BenchRow("steps", 1.0, 2, "cpu", "ours", 5000.0, 4500.0, 5100.0, 3, 8, 20, 0),
            BenchRow("steps", 1.0, 1, "cpu", "sync", 4000.0, 3900.0, 4100.0, 3, 8, 20, 0),
        ]
    )
    assert len(repr(rows)) < LIMIT and "best 5,000 MiB/s" in repr(rows)
    assert "<table" in rows._repr_html_() and "MiB/s" in rows._repr_html_()
    figure = Measurement("loader", "1 MiB", 5000.0, "MiB/s", "sync", 4000.0, 1.25, "sync", ">= 1.0x", True)
    assert repr(figure).startswith("<Measurement 1 MiB:") and "PASS" in figure._repr_html_()


def test_dispatch_plans_watched_calls_and_recorders_show_briefly_and_as_tables() -> None:
    import torch
    import torch.nn.functional as F

    import inspector.examples  # noqa: F401  (the attention and rotary demos)
    from inspector.dispatch import CallContext, record_decisions, resolve, resolve_plan, torch_sdpa, trace_plan

    contexts = {"attention": CallContext("attention", dtype=torch.float32), "rotary": CallContext("rotary")}
    plan = trace_plan(contexts)
    assert len(repr(plan)) < LIMIT and repr(plan).startswith("<PlanTrace: attention=")
    assert plan._repr_html_().count("<table") == 2
    resolved = resolve_plan(contexts)
    assert resolved["attention"].name == plan[0].chosen  # still a dict of resolutions
    assert len(repr(resolved)) < LIMIT and f"attention={plan[0].chosen} (chain)" in repr(resolved)
    assert "<table" in resolved._repr_html_() and "rotary" in resolved._repr_html_()
    q = torch.randn(1, 2, 8, 16)
    with torch_sdpa.watch() as calls:
        F.scaled_dot_product_attention(q, q, q)
    assert len(repr(calls[0])) < LIMIT and repr(calls[0]).startswith("<WatchedCall #0 flash_attention float32")
    with record_decisions() as recorder:
        resolve("attention", contexts["attention"])
    assert len(repr(recorder)) < LIMIT and "<table" in recorder._repr_html_()


def test_the_table_builder_heads_rows_spans_a_short_row_and_escapes_every_header() -> None:
    from inspector._display import html_table

    markup = html_table(("name", "a", "b"), [("<x>", True, ""), ("<y>", "failed: <e>")], row_headers=True)
    assert "<th scope='row' style='text-align:left'>&lt;x&gt;</th><td>✓</td><td></td>" in markup
    assert "<th scope='row' style='text-align:left'>&lt;y&gt;</th><td colspan='2'>failed: &lt;e&gt;</td>" in markup
    assert markup.startswith("<table class='inspector-table'><thead><tr><th>name</th><th>a</th><th>b</th>")
    facts = html_table((), [("key", "value")], css_class="", row_headers=True)
    assert facts.startswith("<table><tbody><tr><th") and "<thead>" not in facts
