"""The job's picture on the RPC page and in the report, from a hand-made job view."""

from __future__ import annotations

from matplotlib.colors import to_hex

import inspector.rpc._job_state as job_state
from inspector.report import build_report
from inspector.rpc import JobView
from inspector.views.rpc import PROBLEM_COLOUR, RpcSection, current_state, page
from inspector.views.rpc_job import ROW_HIGHLIGHT, environment_tables, job_findings_text, loader_figure, sdpa_table
from tests.rpc.job_records_made import by_kind, environment, group, loader, sdpa
from tests.rpc.test_rpc_job_compare import three_ranks


def test_inside_a_job_the_page_opens_with_the_jobs_picture(monkeypatch) -> None:
    view = three_ranks()
    monkeypatch.setattr(job_state, "_last_view", [view])
    state = current_state()
    assert state.job is view
    current = page(state)
    assert current.keys[0] == RpcSection.JOB
    text = current.section(RpcSection.JOB).to_html()
    assert "This job, rank by rank" in text and "rank 2 is the straggler" in text
    assert "data:image/png;base64," in text  # the loader figure
    assert RpcSection.JOB not in page(current_state(job=None))


def test_outside_a_job_the_page_is_the_planner_alone(monkeypatch) -> None:
    monkeypatch.setattr(job_state, "_last_view", [])
    assert current_state().job is None and RpcSection.JOB not in page(current_state())


def test_the_findings_say_how_many_ranks_sent_records() -> None:
    assert job_findings_text(three_ranks()).splitlines()[0] == "3 of 3 rank(s) sent their records (test)."
    alone = JobView(2, {0: by_kind(environment()), 1: by_kind(environment())}, how="made")
    assert job_findings_text(alone).splitlines()[1] == "No differences between the ranks."


def test_the_sdpa_table_highlights_the_signature_another_rank_ran_differently() -> None:
    view = JobView(
        3,
        {
            0: by_kind(sdpa(group(), group("math", shapes="q(1)"))),
            1: by_kind(sdpa(group("math"))),
            2: by_kind(sdpa(group())),
        },
    )
    styler = sdpa_table(view.sdpa)
    frame = styler.data
    assert frame["other ranks ran"].tolist() == ["rank 1: math", ""]
    styles = styler._compute().ctx
    assert ("background-color", ROW_HIGHLIGHT.split(": ")[1]) in styles[(0, 0)] and (1, 0) not in styles


def test_the_loader_figure_draws_the_straggler_in_red() -> None:
    fig = loader_figure(three_ranks().loader)
    bars = fig.axes[0].patches
    assert [to_hex(bar.get_facecolor()) for bar in bars].count(to_hex(PROBLEM_COLOUR)) == 1
    assert to_hex(bars[2].get_facecolor()) == to_hex(PROBLEM_COLOUR)
    assert "straggler: rank 2" in fig.axes[0].get_title()


def test_the_environment_shows_the_keys_that_differ_by_rank_then_the_rest_once() -> None:
    differing, same = environment_tables(three_ranks().environment)
    assert differing.caption == "Environment keys that differ"
    assert differing.value.data.to_dict("records") == [
        {"key": "INSPECTOR_OPS", "rank 0": "None", "rank 1": "None", "rank 2": "'profile=reference'"}
    ]
    assert "torch" in same.value["key"].tolist() and "INSPECTOR_OPS" not in same.value["key"].tolist()


def test_a_view_without_watch_or_loader_says_what_to_send() -> None:
    view = JobView(1, {0: by_kind(environment())})
    text = page(current_state(job=view)).section(RpcSection.JOB).to_html()
    assert "gather(calls, profile) sends them" in text


def test_the_report_on_rank_0_holds_the_jobs_picture(monkeypatch) -> None:
    monkeypatch.setattr(job_state, "_last_view", [three_ranks()])
    text = build_report({"rpc": current_state()})
    assert "This job, rank by rank" in text and "rank 1 ran math where ranks [0, 2] ran flash_attention" in text
    assert "INSPECTOR_OPS differs" in text


def test_loader_figure_with_many_ranks_draws_the_slowest() -> None:
    view = JobView(200, {rank: by_kind(loader(wait_s=0.001 * (rank + 1))) for rank in range(200)})
    fig = loader_figure(view.loader)
    assert len(fig.axes[0].patches) == 128 and "128 slowest of 200 ranks" in fig.axes[0].get_title()
