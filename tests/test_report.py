"""inspector.to_html: one self-contained report of the engine state."""

from __future__ import annotations

import re

import pytest

import inspector
import inspector.examples  # registers the families and data backends the report shows
from inspector.loader.bench import BenchRow
from inspector.report import build_report, environment_section, to_html
from inspector.rpc import TopologyPlan
from inspector.views._tables import TABLE_SCRIPT
from inspector.views.loader import LoaderState


def rows() -> list[BenchRow]:
    def row(method: str, mb_s: float) -> BenchRow:
        return BenchRow("columnar", 1.0, 2, "cpu", method, mb_s, mb_s * 0.9, mb_s * 1.1, 3, 8, 4, 0)

    return [row("ours", 5000), row("sync", 4000), row("mp_queue", 300), row("dataloader", 500), row("memcpy", 9000)]


def test_report_has_every_part_and_needs_no_network() -> None:
    text = build_report({"loader": LoaderState(tuple(rows()))})
    for heading in ("Operator dispatch", "Data backends", "Shared-memory loader", "RPC device maps"):
        assert f"<h2>{heading}</h2>" in text
    assert "attention: sdpa (origin=chain)" in text  # the decision table's caption
    assert text.count("data:image/png;base64,") >= 4  # what-if grids, loader chart, topology
    assert re.findall(r"<script[^>]*src", text) == []  # the one inline script: sorting and filtering tables
    assert {script for script in re.findall(r"<script>.*?</script>", text, flags=re.S)} == {TABLE_SCRIPT}
    assert re.findall(r"""(?:src|href)=["']?(?:https?:)?//""", text) == []


def test_a_part_that_fails_says_why_and_the_rest_still_renders() -> None:
    text = build_report({"rpc": "not a plan"})
    assert "AttributeError" in text and "<h2>Operator dispatch</h2>" in text and "<h2>RPC</h2>" in text


def test_states_are_keyed_by_part_name() -> None:
    with pytest.raises(KeyError, match="Parts: "):
        build_report({"loaders": LoaderState()})


def test_without_a_benchmark_the_loader_section_says_how_to_get_one() -> None:
    assert "press Run in the Loader tab" in build_report({"loader": LoaderState()})


def test_the_report_shows_what_the_app_shows(tmp_path) -> None:
    app = inspector.show()
    app.panels["Dispatch"].select("attention", "math")
    app.open("RPC").load_plan(
        TopologyPlan.build(2, {"worker0": 2, "worker1": 1}, {"worker0": {"worker1": {"cuda:1": "cuda:1"}}})
    )
    path = app.to_html(tmp_path / "app.html")
    text = path.read_text()
    assert "attention: math (origin=context)" in text
    assert "has target devices with invalid indices" in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.html"]  # written atomically, nothing left over


def test_the_module_level_report_reads_the_engine_not_an_app(tmp_path) -> None:
    inspector.show().panels["Dispatch"].select("attention", "math")
    text = to_html(tmp_path / "plain.html").read_text()
    assert "attention: sdpa (origin=chain)" in text


def test_the_report_opens_with_the_environment_it_was_written_in() -> None:
    env = {
        "inspector": None,
        "commit": None,
        "python": "3.11.7",
        "torch": "2.13.0",
        "numpy": "2.4.6",
        "platform": "Linux",
        "cpu": "<b>Xeon</b>",
        "cores": 16,
        "gpu": "NVIDIA H200",
        "gpus": 2,
    }
    text = build_report({"loader": LoaderState(tuple(rows()))}, env=env)
    assert text.index("<h2>Environment</h2>") < text.index("<h2>Operator dispatch</h2>")
    for shown in (
        "not installed (running from a source tree)",
        "not a git checkout of inspector",
        "<td>2.13.0</td>",
        "&lt;b&gt;Xeon&lt;/b&gt; (16 cores)",
        "NVIDIA H200 (x2)",
    ):
        assert shown in text
    assert "none (torch sees no CUDA device)" in environment_section({**env, "gpu": None})


def test_the_command_line_report_shows_a_kept_history_and_refuses_an_unknown_family(tmp_path, capsys) -> None:
    from inspector import cli
    from inspector.loader.bench import record_run

    history = tmp_path / "bench-history.jsonl"
    record_run("loader", rows(), path=history)
    record_run("loader", rows()[:2], path=history)
    assert cli.main(["report", str(tmp_path / "bad.html"), "--family", "atention"]) == 2
    assert "no op family 'atention'. Did you mean 'attention'?" in capsys.readouterr().err
    assert cli.main(["report", str(tmp_path / "r.html"), "--loader-results", str(history)]) == 0
    text = (tmp_path / "r.html").read_text()
    assert "<h3>Past runs</h3>" in text and ">#1 " in text and ">#2 " in text  # both runs, side by side
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench-history.jsonl", "r.html"]
