"""The shared panel plumbing: the callback guard, atomic rendering, background jobs."""

from __future__ import annotations

import threading

import ipywidgets as widgets
import pandas as pd
import pytest

from inspector.errors import Cancelled
from inspector.panels._background import BackgroundJob
from inspector.panels._guard import ErrorLine, error_html, guarded
from inspector.panels._render import mimebundle, render_into
from inspector.views._figures import new_figure


def test_guard_turns_an_exception_into_a_message_and_clears_it_on_success() -> None:
    line = ErrorLine()

    @guarded(line)
    def callback(fail: bool) -> str:
        if fail:
            raise KeyError("Unknown backend 'x'. Known: ['a']")
        return "ok"

    assert callback(True) is None
    assert "<b>KeyError</b>: Unknown backend &#x27;x&#x27;. Known: [&#x27;a&#x27;]" in line.widget.value
    assert isinstance(line.last, KeyError)
    assert callback(False) == "ok" and line.widget.value == ""


def test_error_html_splits_headline_and_details() -> None:
    text = error_html(ValueError("Headline.\n  key = value"))
    assert "<b>ValueError</b>: Headline." in text and "key = value" in text
    assert text.index("Headline.") < text.index("inspector-error-details")


def test_render_into_replaces_outputs_atomically() -> None:
    out = widgets.Output()
    render_into(out, pd.DataFrame({"a": [1]}), "plain text", new_figure())
    kinds = [sorted(o["data"]) for o in out.outputs]
    assert kinds == [["text/html", "text/plain"], ["text/plain"], ["image/png", "text/plain"]]
    render_into(out, "only")
    assert len(out.outputs) == 1
    assert mimebundle(object())["text/plain"].startswith("<object")


def test_background_job_reports_progress_and_delivers_its_result() -> None:
    job = BackgroundJob("Test")
    done: list[object] = []

    def work(report, cancelled) -> int:
        for i in range(3):
            report(i + 1, 3, f"step {i + 1}")
        return 42

    job.start(work, done.append, pytest.fail)
    assert job.wait(10)
    assert done == [42] and job.progress.value == 3 and job.progress.bar_style == "success"
    assert job.cancel_button.disabled


def test_background_job_can_be_cancelled() -> None:
    job = BackgroundJob()
    errors: list[BaseException] = []
    started = threading.Event()

    def work(report, cancelled: threading.Event) -> None:
        started.set()
        while not cancelled.wait(0.01):
            pass
        raise Cancelled("stopped")

    job.start(work, pytest.fail, errors.append)
    assert started.wait(5)
    with pytest.raises(RuntimeError, match="already running"):
        job.start(work, pytest.fail, errors.append)
    job.cancel_button.click()
    assert job.wait(10)
    assert isinstance(errors[0], Cancelled) and job.label.value == "cancelled"


def test_a_failing_completion_callback_is_reported_not_lost(caplog: pytest.LogCaptureFixture) -> None:
    job = BackgroundJob()

    def explode(_result: object) -> None:
        raise ValueError("cannot draw")

    with caplog.at_level("ERROR", logger="inspector.panels"):
        job.start(lambda report, cancelled: 1, explode, pytest.fail)
        assert job.wait(10)
    assert job.label.value.startswith("failed while showing the result")
    assert any("completion callback failed" in r.message for r in caplog.records)


@pytest.mark.parametrize("outcome", ["done", "failed", "cancelled"])
def test_a_jobs_buttons_are_disabled_while_it_runs_and_come_back_whatever_the_outcome(outcome: str) -> None:
    button = widgets.Button(description="Go")
    job = BackgroundJob("Test", triggers=[button])
    assert job.progress.layout.display == "none" and job.cancel_button.layout.display == "none"  # idle: no bar
    release = threading.Event()
    seen_while_running: list[bool] = []

    def work(report, cancelled: threading.Event) -> int:
        seen_while_running.append(button.disabled and job.progress.layout.display is None)
        release.wait(10)
        if outcome == "failed":
            raise ValueError("broken")
        if outcome == "cancelled":
            raise Cancelled("stopped")
        return 1

    ended: list[object] = []
    job.start(work, ended.append, ended.append)
    assert button.disabled and not job.cancel_button.disabled
    release.set()
    assert job.wait(10)
    assert seen_while_running == [True] and len(ended) == 1 and job.label.value == outcome
    assert not button.disabled and job.progress.layout.display == "none" and job.cancel_button.disabled


def test_a_stale_mark_dims_the_results_under_a_note_and_clears() -> None:
    from inspector.panels._guard import StaleMark

    results = widgets.Output()
    mark = StaleMark(results)
    assert not mark.stale and mark.note.layout.display == "none" and results in mark.widget.children
    mark.mark("fix the <field> above")
    assert mark.stale and "inspector-stale" in mark.widget._dom_classes
    assert mark.note.value == "<b>stale</b>: fix the &lt;field&gt; above" and mark.note.layout.display is None
    mark.clear()
    assert not mark.stale and mark.note.value == ""
