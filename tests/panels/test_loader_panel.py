"""LoaderPanel driven through its real widgets and a real (small) benchmark."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from inspector.errors import Cancelled
from inspector.loader import FileStorageLoader
from inspector.panels.loader import LoaderPanel, cuda_available

SMALL = {"sizes_mb": (0.25,), "workers": (1,), "methods": ("ours", "sync", "memcpy"), "repeats": 1}


@pytest.fixture(autouse=True)
def _private_bench_history(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Benchmarks keep their history in a folder of the test run, never in the user's cache."""
    monkeypatch.setenv("INSPECTOR_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


def small_dataloader():  # type: ignore[no-untyped-def]
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    data = TensorDataset(torch.arange(128 * 16, dtype=torch.float32).reshape(128, 16), torch.arange(128))
    return DataLoader(data, batch_size=8, num_workers=2, persistent_workers=True)


def html_of(out) -> str:  # type: ignore[no-untyped-def]
    return "".join(o["data"].get("text/html", "") + o["data"].get("text/plain", "") for o in out.outputs)


def test_the_panel_opens_with_defaults_and_no_empty_chart() -> None:
    panel = LoaderPanel()
    assert panel.sizes.value == (1, 16) and panel.workers.value == (2,) and panel.repeats.value == 2
    assert set(panel.methods.value) == {"ours", "sync", "mp_queue", "dataloader", "memcpy"}
    for out in (panel.chart_out, panel.workers_chart_out, panel.stage_out):  # no placeholder axes before a result
        assert "No result yet: pick sizes and workers, then press <b>Run</b>" in html_of(out)
        assert all("image/png" not in o["data"] for o in out.outputs)
    assert panel.job.progress.layout.display == "none" and panel.job.cancel_button.layout.display == "none"
    assert "No benchmark has run" in str(panel.table_out.outputs)
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
    assert "<img" in static and "share of memcpy, largest size" in static


def test_cancel_stops_the_run_and_says_so() -> None:
    panel = LoaderPanel()
    original = panel._on_row

    def cancel_after_first(row):  # type: ignore[no-untyped-def]
        original(row)
        panel.job.cancel()

    panel._on_row = cancel_after_first  # type: ignore[method-assign]
    panel.run(wait=True, sizes_mb=(0.25, 1), workers=(1,), methods=("memcpy", "sync"), repeats=1)
    assert isinstance(panel.last_error, Cancelled)
    assert panel.job.label.value == "cancelled" and "cancelled after 1 results" in panel.status.value
    assert len(panel.rows) == 1
    assert "memcpy (ceiling)" in html_of(panel.table_out)  # what it measured stays on screen
    assert any("image/png" in o["data"] for o in panel.chart_out.outputs)
    assert not panel.run_button.disabled


def test_running_with_nothing_selected_explains_itself() -> None:
    panel = LoaderPanel()
    panel.sizes.value = ()
    panel.run_button.click()
    assert "Pick at least one of sizes" in panel.run_errors.widget.value  # beside the choices and the button
    assert panel.run_errors.widget in panel.run_box.children and panel.errors.widget.value == ""


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
        assert panel.run_button.disabled and panel.job.progress.layout.display is None
        panel.run_button.click()  # a click the browser would not even send
        assert "A benchmark is already running" in panel.run_errors.widget.value
        assert "press Cancel" in panel.run_errors.widget.value
        assert panel.rows is rows and len(rows) == 1 and html_of(panel.table_out) == table
    finally:
        release.set()
        panel.job.wait(60)
    assert [r.method for r in panel.rows] == ["memcpy", "sync"]  # the running job finished into the same list
    assert not panel.run_button.disabled and panel.job.progress.layout.display == "none"


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


def test_a_run_shows_its_targets_with_pass_or_miss_and_is_kept_for_comparison() -> None:
    panel = LoaderPanel()
    panel.run(wait=True, **SMALL)  # type: ignore[arg-type]
    targets = html_of(panel.targets_out)
    assert "corrupt deliveries (ours)" in targets and ("PASS" in targets or "MISS" in targets)
    panel.run(wait=True, **SMALL)  # type: ignore[arg-type]
    panel.show_history()
    history = html_of(panel.history_out)
    assert "#1 " in history and "#2 " in history and "commit" in history and "torch" in history


def test_past_runs_are_explained_when_there_are_none() -> None:
    panel = LoaderPanel()
    panel.show_history()
    assert "No past runs yet" in html_of(panel.history_out)


def test_your_dataloader_is_profiled_and_compared_with_the_inspector_loader_on_the_same_bytes() -> None:
    panel = LoaderPanel()
    panel.profile(small_dataloader(), batches=6, wait=True)
    assert panel.profile_job.label.value == "done", panel.profile_html.value
    names = [p.label or p.name for p in panel.profiles]
    assert names == ["DataLoader", "inspector loader, I/O only: your dataset's work excluded"]
    assert all(p.batches == 6 and p.mb_per_s > 0 for p in panel.profiles)
    assert panel.profiles[0].batch_bytes == panel.profiles[1].batch_bytes  # the same bytes, batch for batch
    shown = html_of(panel.profile_out)
    assert "inspector loader, I/O only: your dataset" in shown and "mb_per_s" in shown
    assert "your loader" in panel.static_html().lower()


def test_profiling_what_is_not_iterable_explains_itself() -> None:
    panel = LoaderPanel()
    with pytest.raises(TypeError, match="needs an iterable"):
        panel.profile(42)


def test_show_with_a_loader_opens_the_loader_tab_and_profiles_it() -> None:
    import inspector

    app = inspector.show(loader=small_dataloader())
    panel = app.panels["Loader"]
    assert app.tab.titles[app.tab.selected_index] == "Loader"
    assert panel.profile_job.wait(120)  # type: ignore[attr-defined]
    assert [p.name for p in panel.profiles][:1] == ["DataLoader"]  # type: ignore[attr-defined]


def test_show_with_a_loader_and_a_step_gives_the_verdict_on_that_loop() -> None:
    import inspector

    steps: list[object] = []
    app = inspector.show(loader=small_dataloader(), step=steps.append)
    panel = app.panels["Loader"]
    assert panel.profile_job.wait(120)  # type: ignore[attr-defined]
    (profile, *_) = panel.profiles  # type: ignore[attr-defined]
    assert steps and profile.verdict in ("loader-bound", "compute-bound", "balanced")
    with pytest.raises(TypeError, match="step= needs loader= too"):
        inspector.show(step=steps.append)
