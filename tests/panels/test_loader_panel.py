"""LoaderPanel driven through its real widgets and a real (small) benchmark."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from inspector.loader import FileStorageLoader
from inspector.panels._background import JobCancelled
from inspector.panels.loader import LoaderPanel, cuda_available

SMALL = {"sizes_mb": (0.25,), "workers": (1,), "methods": ("ours", "sync", "memcpy"), "repeats": 1}


def html_of(out) -> str:  # type: ignore[no-untyped-def]
    return "".join(o["data"].get("text/html", "") + o["data"].get("text/plain", "") for o in out.outputs)


def test_the_panel_opens_with_defaults_and_empty_charts() -> None:
    panel = LoaderPanel()
    assert panel.sizes.value == (1, 16) and panel.workers.value == (2,) and panel.repeats.value == 2
    assert set(panel.methods.value) == {"ours", "sync", "mp_queue", "dataloader", "memcpy"}
    assert [o["data"].get("image/png") is not None for o in panel.chart_out.outputs] == [True]
    assert "Run" in panel.status.value


@pytest.mark.skipif(cuda_available(), reason="checks the CPU-only choice")
def test_cuda_is_offered_only_when_present() -> None:
    assert [value for _label, value in LoaderPanel().device.options] == ["cpu"]


def test_a_run_fills_the_charts_and_the_table_as_results_arrive() -> None:
    panel = LoaderPanel()
    seen_rows: list[int] = []
    original = panel._on_row

    def spy(row):  # type: ignore[no-untyped-def]
        original(row)
        seen_rows.append(len(panel.rows))

    panel._on_row = spy  # type: ignore[method-assign]
    panel.run(wait=True, **SMALL)  # type: ignore[arg-type]
    assert panel.last_error is None, panel.run_html.value
    assert seen_rows == [1, 2, 3]  # redrawn after every result, not only at the end
    assert {r.method for r in panel.rows} == {"ours", "sync", "memcpy"}
    assert all(r.corrupt == 0 for r in panel.rows)
    table = html_of(panel.table_out)
    assert "inspector loader" in table and "memcpy (ceiling)" in table
    assert panel.job.progress.value == panel.job.progress.max and panel.job.label.value == "done"
    assert "3 results" in panel.status.value
    static = panel.static_html()
    assert "<img" in static and "share_of_dram_memcpy" in static


def test_cancel_stops_the_run_and_says_so() -> None:
    panel = LoaderPanel()
    original = panel._on_row

    def cancel_after_first(row):  # type: ignore[no-untyped-def]
        original(row)
        panel.job.cancel()

    panel._on_row = cancel_after_first  # type: ignore[method-assign]
    panel.run(wait=True, sizes_mb=(0.25, 1), workers=(1,), methods=("memcpy", "sync"), repeats=1)
    assert isinstance(panel.last_error, JobCancelled)
    assert panel.job.label.value == "cancelled" and "cancelled after 1 results" in panel.status.value
    assert len(panel.rows) == 1


def test_running_with_nothing_selected_explains_itself() -> None:
    panel = LoaderPanel()
    panel.sizes.value = ()
    panel.run_button.click()
    assert "Pick at least one of sizes" in panel.errors.widget.value


def test_the_worker_table_shows_live_loaders(tmp_path: Path) -> None:
    panel = LoaderPanel()
    with FileStorageLoader(tmp_path, ttl=None, worker_num=2) as loader:
        loader.start()
        panel.refresh_status()
        shown = html_of(panel.status_out)
        assert loader.name in shown and "segments_leased" in shown and "busy" in shown
        assert loader.name in panel.static_html()


def test_run_while_a_benchmark_runs_is_refused_and_leaves_its_results_alone() -> None:
    panel = LoaderPanel()
    original, arrived, release = panel._on_row, threading.Event(), threading.Event()

    def hold_after_first(row):  # type: ignore[no-untyped-def]
        original(row)
        arrived.set()
        release.wait(60)

    panel._on_row = hold_after_first  # type: ignore[method-assign]
    panel.run(sizes_mb=(0.25,), workers=(1,), methods=("memcpy", "sync"), repeats=1)
    try:
        assert arrived.wait(60)
        rows, table = panel.rows, html_of(panel.table_out)
        panel.run_button.click()
        assert "A benchmark is already running" in panel.errors.widget.value
        assert "press Cancel" in panel.errors.widget.value
        assert panel.rows is rows and len(rows) == 1 and html_of(panel.table_out) == table
    finally:
        release.set()
        panel.job.wait(60)
    assert [r.method for r in panel.rows] == ["memcpy", "sync"]  # the running job finished into the same list


def test_a_failure_in_the_completion_callback_shows_in_the_panel() -> None:
    panel = LoaderPanel()
    original = panel._on_row

    def break_status_line(row):  # type: ignore[no-untyped-def]
        original(row)

        def broken(_text: str) -> None:
            raise RuntimeError("the status line cannot be written")

        panel.set_status = broken  # type: ignore[method-assign]

    panel._on_row = break_status_line  # type: ignore[method-assign]
    panel.run(wait=True, sizes_mb=(0.25,), workers=(1,), methods=("memcpy",), repeats=1)
    assert "the status line cannot be written" in panel.errors.widget.value


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_worker_table_that_cannot_be_drawn_is_shown_and_the_benchmark_still_completes() -> None:
    panel = LoaderPanel()

    def broken() -> None:
        raise RuntimeError("the worker table cannot be drawn")

    panel.refresh_status = broken  # type: ignore[method-assign]
    panel.run(wait=True, sizes_mb=(0.25,), workers=(1,), methods=("memcpy",), repeats=1)
    assert "the worker table cannot be drawn" in panel.errors.widget.value
    assert panel.last_error is None and len(panel.rows) == 1 and "1 results" in panel.status.value
