"""The RPC tab's "This job, rank by rank" section: empty outside a job, the job's picture after a gather."""

from __future__ import annotations

import inspector.rpc._job_state as job_state
from inspector.panels import RpcPanel
from tests.rpc.test_rpc_job_compare import three_ranks


def _text(out) -> str:
    return " ".join(str(o.get("data", {}).get("text/html", o.get("text", ""))) for o in out.outputs)


def test_outside_a_job_the_section_says_how_to_get_a_view(monkeypatch) -> None:
    monkeypatch.setattr(job_state, "_last_view", [])
    panel = RpcPanel()
    assert panel.job_view is None and not panel.details.is_open("This job, rank by rank")
    assert "inspector.rpc.gather(calls, profile)" in _text(panel.job_box.out)


def test_after_a_gather_the_button_shows_the_jobs_picture_and_the_static_html_has_it(monkeypatch) -> None:
    monkeypatch.setattr(job_state, "_last_view", [])
    panel = RpcPanel()
    view = three_ranks()
    monkeypatch.setattr(job_state, "_last_view", [view])
    assert panel.show_job() is view
    assert panel.details.is_open("This job, rank by rank") and panel.state().job is view
    assert "rank 2 is the straggler" in _text(panel.job_box.out)
    assert "rank 1 ran math where ranks [0, 2] ran flash_attention" in panel.static_html()


def test_a_panel_made_on_rank_0_after_the_gather_opens_on_the_job(monkeypatch) -> None:
    monkeypatch.setattr(job_state, "_last_view", [three_ranks()])
    panel = RpcPanel()
    assert panel.details.is_open("This job, rank by rank") and "INSPECTOR_OPS differs" in _text(panel.job_box.out)
