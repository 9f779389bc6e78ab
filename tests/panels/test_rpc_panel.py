"""RpcPanel driven through its real widgets: live validation, JSON, backends, and a real local world."""

from __future__ import annotations

import base64
import json
import threading

import pytest

from inspector.panels import rpc_launch
from inspector.panels._render import render_into
from inspector.panels.rpc import MAX_LOCAL_WORKERS, RpcPanel
from inspector.rpc import LocalWorldError, TopologyPlan


def html_of(out) -> str:
    """What an Output widget currently shows, as text (HTML tables, plain text, PNG markers)."""
    parts = []
    for output in out.outputs:
        data = output["data"]
        parts.append(data.get("text/html", "") + data.get("text/plain", "") + ("<png>" if "image/png" in data else ""))
    return "\n".join(parts)


@pytest.fixture
def panel() -> RpcPanel:
    return RpcPanel()


def test_panel_opens_on_a_valid_two_worker_plan(panel: RpcPanel) -> None:
    assert panel.names == ["worker0", "worker1"] and len(panel.rows) == 2
    assert panel.status.value == "2 workers, 2 mapped pairs, 0 problem(s): init_rpc would start"
    assert "init_rpc would accept this topology." in panel.init_html.value
    assert "<png>" in html_of(panel.graph_out)
    assert "worker0: cuda:1-&gt;cuda:0" in html_of(panel.derived_out)
    assert not any(row.problems for row in panel.rows)


def test_editing_gpu_counts_shows_every_problem_and_torchs_first_error_verbatim(panel: RpcPanel) -> None:
    panel.gpus.value = "1"
    assert panel.status.value.endswith("2 problem(s): init_rpc would fail (validation)")
    shown = html_of(panel.problems_out)
    assert "INVALID_TARGET_INDEX" in shown and "INVALID_SOURCE_INDEX" in shown
    assert (
        "ValueError: Node worker0 has target devices with invalid indices in its device map for worker1\n"
        "device map = {device(type=&#x27;cuda&#x27;, index=0): device(type=&#x27;cuda&#x27;, index=1)}\n"
        "device count = 1"
    ) in panel.init_html.value
    assert "raised by: worker0, worker1" in panel.init_html.value


def test_the_offending_rows_are_outlined_with_their_next_step(panel: RpcPanel) -> None:
    panel.gpus.value = "1"
    first, second = panel.rows
    assert first.problems == ("INVALID_TARGET_INDEX",) and second.problems == ("INVALID_SOURCE_INDEX",)
    assert "inspector-rpc-row-bad" in first.widget._dom_classes
    assert "INVALID_TARGET_INDEX: targets are the callee&#x27;s devices; worker1 has 1 CUDA device" in first.note.value
    assert "rgba(214, 39, 40, 0.18)" in html_of(panel.problems_out)  # and highlighted in the table
    panel.gpus.value = "2"
    assert first.problems == () and "inspector-rpc-row-bad" not in first.widget._dom_classes
    assert first.note.value == ""


def test_rows_are_editable_and_an_unknown_callee_is_flagged(panel: RpcPanel) -> None:
    row = panel.add_row("worker1", "worker7", "cpu", "cpu")
    assert "UNKNOWN_TARGET_NAME" in html_of(panel.problems_out) and row.problems == ("UNKNOWN_TARGET_NAME",)
    row.callee.value = "worker0"
    assert "UNKNOWN_TARGET_NAME" not in html_of(panel.problems_out)
    panel.remove_row(row)
    assert len(panel.rows) == 2 and panel.status.value.endswith("init_rpc would start")


def test_a_dynamic_group_accepts_maps_to_workers_not_yet_joined_with_a_warning(panel: RpcPanel) -> None:
    panel.add_row("worker1", "worker7", "cpu", "cpu")
    panel.group.value = "dynamic"
    shown = html_of(panel.problems_out)
    assert "UNKNOWN_TARGET_NAME" not in shown and "TARGET_NOT_JOINED" in shown
    assert panel.plan.static_group is False


def test_more_workers_and_per_worker_counts(panel: RpcPanel) -> None:
    panel.workers.value = 4
    panel.gpus.value = "2,2,0,8"
    assert panel.names == ["worker0", "worker1", "worker2", "worker3"]
    assert panel.plan.device_counts == {"worker0": 2, "worker1": 2, "worker2": 0, "worker3": 8}
    assert panel.rows[0].callee.options == ("worker0", "worker1", "worker2", "worker3")


def test_a_mistyped_device_is_a_readable_message_not_a_traceback(panel: RpcPanel) -> None:
    panel.rows[0].source.value = "gpu:0"
    shown = panel.rows_errors.widget.value  # under the map rows, where the typo is
    assert "Invalid plan at worker &#x27;worker0&#x27;.device_maps[&#x27;worker1&#x27;]" in shown
    assert "unknown device type" in shown and "Traceback" not in shown
    assert panel.results.stale and panel.status.value == "the plan cannot be read (see above)"
    panel.rows[0].source.value = "cuda:0"
    assert panel.rows_errors.widget.value == "" and not panel.results.stale


def test_a_bad_gpu_count_names_what_is_expected(panel: RpcPanel) -> None:
    panel.gpus.value = "2,2,2"
    assert "one count for all workers, or 2 comma-separated counts" in panel.plan_errors.widget.value
    assert panel.results.stale and "stale" in panel.results.note.value and panel.errors.widget.value == ""
    panel.gpus.value = "2"
    assert panel.plan_errors.widget.value == "" and not panel.results.stale


@pytest.mark.parametrize("typed", ["9" * 5000, "²", "999"])
def test_a_gpu_count_no_machine_has_is_explained_beside_the_field_replacing_its_last_message(
    panel: RpcPanel, typed: str
) -> None:
    panel.gpus.value = "2,2,2"
    before = panel.plan_errors.widget.value
    assert "comma-separated counts" in before
    panel.gpus.value = typed
    shown = panel.plan_errors.widget.value  # the field's own line, with this count's message, not the last one
    assert shown != before and "PlanError" in shown and "0 .. 128" in shown
    assert len(shown) < 1000 and "set_int_max_str_digits" not in shown
    assert panel.errors.widget.value == "" and panel.results.stale


def test_explicit_devices_are_parsed_per_worker(panel: RpcPanel) -> None:
    panel.devices.value = "worker1: cuda:0"
    assert panel.plan.devices == {"worker0": [], "worker1": ["cuda:0"]}
    shown = html_of(panel.problems_out)
    assert "UNEXPECTED_TARGET" in shown  # worker0 sends to worker1's cuda:1, which worker1 does not list
    assert "UNEXPECTED_SOURCE" in shown  # worker1 maps from its cuda:1, which it does not list
    assert "Node worker0 has unexpected target devices in its device map for worker1" in panel.init_html.value


def test_plan_json_round_trips_through_the_text_box(panel: RpcPanel) -> None:
    panel.gpus.value = "1"
    text = panel.export_json()
    assert json.loads(text)["workers"][0]["device_count"] == 1
    other = TopologyPlan.full_mesh(4, 8)
    panel.json_text.value = other.to_json()
    assert panel.import_json() == other and panel.plan == other and len(panel.rows) == 96
    assert panel.status.value == "4 workers, 96 mapped pairs, 0 problem(s): init_rpc would start"


def test_importing_invalid_json_is_a_readable_message(panel: RpcPanel) -> None:
    panel.guard(panel.import_json)('{"workers": [{"name": "a", "gpus": 1}]}')
    assert "Invalid plan at workers[0]: unknown keys [&#x27;gpus&#x27;]" in panel.errors.widget.value


def test_registered_backends_lists_ours_and_torchs(panel: RpcPanel) -> None:
    shown = html_of(panel.backends_out)
    assert "inspector" in shown and "torch" in shown and shown.count("TENSORPIPE") >= 2


def test_static_html_shows_tables_and_the_graph(panel: RpcPanel) -> None:
    panel.gpus.value = "1"
    static = panel.static_html()
    assert "INVALID_TARGET_INDEX" in static and '<img alt="device-map graph"' in static
    assert "init_rpc" in static and "device list" in static


def test_launching_too_many_workers_is_refused_with_the_limit(panel: RpcPanel) -> None:
    panel.workers.value = MAX_LOCAL_WORKERS + 1
    panel.guard(panel.launch)()
    assert f"limit = {MAX_LOCAL_WORKERS}" in panel.errors.widget.value


def test_a_second_launch_while_one_runs_is_refused_before_anything_shown_changes(panel: RpcPanel) -> None:
    release = threading.Event()
    panel.job.start(lambda _report, _cancelled: release.wait(30), lambda _result: None, lambda _exc: None)
    try:
        panel.world_html.value = "the last world"
        render_into(panel.world_out, "the last world's tables")
        panel.guard(panel.launch)()
        assert "RuntimeError</b>: A local world is already running in this panel." in panel.errors.widget.value
        assert "next step = wait for it to finish, or press Cancel, then launch again" in panel.errors.widget.value
        assert panel.world_html.value == "the last world"
        assert html_of(panel.world_out) == "the last world's tables"
    finally:
        release.set()
        assert panel.job.wait(30)


@pytest.mark.slow
def test_launch_runs_a_real_world_and_shows_rtt_and_bandwidth(panel: RpcPanel, new_processes) -> None:
    panel.rtt_count.value = 10
    panel.mebibytes.value = 1.0
    panel.launch(wait=True)
    assert panel.job.label.value == "done", panel.world_html.value
    assert panel.last_world is not None and panel.last_world.rtt is not None
    assert len(panel.last_world.rtt.pairs) == 4 and len(panel.last_world.bandwidth) == 2 * 3  # ring x sizes
    shown = html_of(panel.world_out)
    assert "<png>" in shown and "median MiB/s" in shown and "p99 us" in shown
    after = panel.world_html.value
    assert "2 workers ready in" in after and "measured, then shut down" in after and "for CPU tensors" in after
    assert "this machine has no GPU, so the plan&#x27;s 2 GPU map pairs are left out" in after or (
        "as written, on this machine" in after
    )
    assert "p99 us" in panel.static_html() and "median MiB/s" in panel.static_html()
    assert new_processes() == []


@pytest.mark.slow
def test_cancelling_a_launch_leaves_no_worker_behind(panel: RpcPanel, new_processes) -> None:
    panel.launch()
    panel.job.cancel()
    assert panel.job.wait(60)
    assert panel.job.label.value in ("cancelled", "done")
    assert new_processes() == []


@pytest.mark.slow
def test_a_failure_while_showing_a_launch_result_appears_in_the_panel(
    panel: RpcPanel, monkeypatch: pytest.MonkeyPatch, new_processes
) -> None:
    def unreadable(_workers: object) -> None:
        raise ValueError("cannot tabulate these workers")

    import inspector.views.rpc as rpc_views

    monkeypatch.setattr(rpc_views, "workers_table", unreadable)
    panel.rtt_count.value = 2
    panel.mebibytes.value = 0.01
    panel.launch(wait=True)
    assert "ValueError</b>: cannot tabulate these workers" in panel.launch_errors.widget.value
    assert new_processes() == []


# -- templates, the job's plan, download ---------------------------------------------------------
@pytest.mark.parametrize(
    ("kind", "workers", "gpus", "expected"),
    [
        ("full mesh", 4, 8, TopologyPlan.full_mesh(4, 8)),
        ("ring", 5, 2, TopologyPlan.ring(5, 2)),
        ("parameter server", 3, 1, TopologyPlan.parameter_server(3, 1)),
    ],
)
def test_a_template_fills_the_rows(panel: RpcPanel, kind: str, workers: int, gpus: int, expected: TopologyPlan) -> None:
    panel.templates.kind.value = kind
    panel.templates.workers.value = workers
    panel.templates.gpus.value = gpus
    panel.templates.apply_button.click()
    assert panel.plan == expected and len(panel.rows) == expected.pair_count
    assert panel.status.value.endswith("0 problem(s): init_rpc would start")
    assert "Pre-flight warnings" not in html_of(panel.problems_out)


def test_the_jobs_plan_is_shown_or_the_panel_says_there_is_no_job(
    panel: RpcPanel, monkeypatch: pytest.MonkeyPatch
) -> None:
    from inspector.rpc import _job_state as _job

    monkeypatch.setattr(_job, "_last_plan", [])
    panel.guard(panel.load_job_plan)()
    assert "No RPC job in this process" in panel.errors.widget.value
    panel.widget.children[1].children[1].click()  # the button shows it beside the templates
    assert "No RPC job in this process" in panel.templates.errors.widget.value
    job = TopologyPlan.ring(3, 1)
    monkeypatch.setattr(_job, "_last_plan", [job])
    assert panel.load_job_plan() == job and panel.plan == job


def test_the_plan_downloads_as_a_json_file(panel: RpcPanel) -> None:
    link = panel.download.value
    assert 'download="rpc_plan.json"' in link and 'href="data:application/json;base64,' in link
    encoded = link.split("base64,", 1)[1].split('"', 1)[0]
    assert TopologyPlan.from_json(base64.b64decode(encoded).decode()) == panel.plan
    panel.gpus.value = "4"
    assert (
        TopologyPlan.from_json(base64.b64decode(panel.download.value.split("base64,")[1].split('"')[0]).decode())
        == panel.plan
    )


def test_a_gpu_mesh_is_drawn_as_device_grids(panel: RpcPanel) -> None:
    panel.load_plan(TopologyPlan.full_mesh(16, 2))
    assert "<png>" in html_of(panel.graph_out) and "device grid" in panel.static_html()


# -- launching a plan init_rpc would refuse ------------------------------------------------------
def test_a_refused_plan_asks_loudly_before_launching_and_cancel_launches_nothing(panel: RpcPanel) -> None:
    panel.add_row("worker0", "ghost", "cpu", "cpu")  # a target that is not in the group
    panel.launch()
    assert panel.confirmation.asking and not panel.job.running
    message = panel.confirmation.message.value
    assert "init_rpc would refuse this launch" in message
    assert "init_rpc would refuse this plan: ValueError: Node worker0 has invalid target node names" in message
    assert "The local world would fail on worker0, worker1" in message
    assert "Launch anyway to see how it fails on every rank" in message
    panel.confirmation.cancel.click()
    assert not panel.confirmation.asking and not panel.job.running and panel.last_world is None


def test_the_launch_box_says_what_a_launch_starts_and_measures_before_it_runs(
    panel: RpcPanel, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    panel.refresh()
    before = panel.launch_preview.value
    assert (
        "Launch starts 2 local workers (worker0, worker1) with no device maps: this machine has no GPU, so the "
        "plan&#x27;s 2 GPU map pairs are left out" in before
    )
    assert "times 50 no-op rpc_sync round trips for each of the 4 ordered pairs" in before
    assert "float32 tensors of 0.25, 2, 16 MiB around the ring worker0 → worker1 → worker0" in before
    assert "Every figure is for CPU tensors in host memory, not for GPU-to-GPU copies." in before
    panel.rtt_count.value = 7
    assert "times 7 no-op rpc_sync round trips" in panel.launch_preview.value
    panel.add_row("worker0", "worker1", "cpu", "cpu")
    assert "with only the plan&#x27;s 1 cpu → cpu map pair: this machine has no GPU" in panel.launch_preview.value
    panel.workers.value = MAX_LOCAL_WORKERS + 1
    assert "would only measure an oversubscribed machine" in panel.launch_preview.value


def test_with_gpus_the_maps_go_as_written_and_the_figures_are_still_for_cpu_tensors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    summary = rpc_launch.summarize(TopologyPlan.full_mesh(2, 2), samples=5, largest_bytes=1 << 20)
    assert summary.launched == TopologyPlan.full_mesh(2, 2) and summary.dropped_pairs == 0
    assert "with the plan&#x27;s 4 map pairs as written, on this machine&#x27;s 2 GPUs" in (
        __import__("html").escape(summary.before())
    )
    assert "the GPU maps are set up, but no tensor sent lives on a GPU" in summary.before()


def test_a_plan_refused_as_written_whose_local_part_would_start_says_so(
    panel: RpcPanel, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    panel.gpus.value = "0"  # the cuda maps are refused; without a GPU here only the (empty) cpu part would run
    panel.launch()
    assert panel.confirmation.asking and not panel.job.running
    message = panel.confirmation.message.value
    assert "init_rpc would refuse this plan; this machine can run only part of it." in message
    assert "Launch starts 2 local workers (worker0, worker1) with no device maps" in message
    assert "Launch anyway to run that part" in message and "how it fails on every rank" not in message
    panel.confirmation.cancel.click()


def test_a_plan_init_rpc_accepts_launches_without_asking(panel: RpcPanel, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[object] = []
    monkeypatch.setattr(panel.job, "start", lambda job, done, failed: started.append(job))
    panel.launch()
    assert started and not panel.confirmation.asking


def test_the_largest_message_is_in_mib_and_three_sizes_are_measured() -> None:
    assert rpc_launch.bandwidth_sizes(16 << 20) == [256 << 10, 2 << 20, 16 << 20]
    assert rpc_launch.bandwidth_sizes(4) == [4]


@pytest.mark.slow
def test_launching_anyway_shows_how_the_world_fails_on_every_rank(panel: RpcPanel, new_processes) -> None:
    panel.add_row("worker0", "ghost", "cpu", "cpu")
    panel.launch(wait=True)
    assert panel.confirmation.asking and not panel.job.running
    panel.confirmation.launch_anyway.click()
    assert panel.job.wait(240)
    assert isinstance(panel.last_launch_error, LocalWorldError)
    assert "worker1 = init_rpc: ValueError: Node worker0 has invalid target node names" in panel.world_html.value
    assert new_processes() == []


def test_a_plan_too_large_to_edit_row_by_row_is_refused_with_the_limit(panel: RpcPanel) -> None:
    panel.templates.workers.value = 64
    panel.templates.gpus.value = 8
    panel.templates.apply_button.click()
    shown = panel.templates.errors.widget.value
    assert "too many to edit row by row here" in shown
    assert "limit = 2,048" in shown and len(panel.rows) == 2  # the plan shown is untouched


def test_the_launch_button_is_disabled_while_a_world_runs(panel: RpcPanel) -> None:
    release = threading.Event()
    assert not panel.launch_button.disabled and panel.job.progress.layout.display == "none"
    panel.job.start(lambda _report, _cancelled: release.wait(30), lambda _result: None, lambda _exc: None)
    try:
        assert panel.launch_button.disabled and panel.job.cancel_button.layout.display is None
    finally:
        release.set()
        assert panel.job.wait(30)
    assert not panel.launch_button.disabled and panel.job.progress.layout.display == "none"
