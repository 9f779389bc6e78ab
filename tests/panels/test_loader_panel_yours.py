"""LoaderPanel's verdict, tuning and past-run controls, driven with real DataLoaders and a real (small) benchmark."""

from __future__ import annotations

import threading
import time

import pytest
import torch
from torch.utils.data import DataLoader, Dataset
from waiting import WAIT_S

from inspector.loader import LoopProfiler
from inspector.panels.loader import LoaderPanel


@pytest.fixture(autouse=True)
def _private_bench_history(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INSPECTOR_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


class Sleepy(Dataset):
    def __init__(self, seconds: float = 0.02, with_text: bool = False) -> None:
        self.seconds, self.with_text = seconds, with_text

    def __len__(self) -> int:
        return 10_000

    def __getitem__(self, i: int):  # type: ignore[no-untyped-def]
        time.sleep(self.seconds)
        item = {"x": torch.full((4,), float(i))}
        if self.with_text:
            item["when"] = object()  # what a storage file cannot hold
        return item


def html_of(out) -> str:  # type: ignore[no-untyped-def]
    return "".join(o["data"].get("text/html", "") + o["data"].get("text/plain", "") for o in out.outputs)


def quick_step(batch: object) -> None:
    time.sleep(0.001)


def test_profile_with_a_step_shows_the_verdict_the_steps_and_the_stages() -> None:
    panel = LoaderPanel()
    panel.profile(DataLoader(Sleepy(), batch_size=1, num_workers=0), step=quick_step, batches=10, wait=True)
    assert panel.profile_job.label.value == "done", panel.profile_html.value
    mine, ours = panel.profiles
    assert mine.verdict == "loader-bound" and ours.label.startswith("inspector loader, I/O only")
    shown = html_of(panel.profile_out)
    assert "DataLoader: Loader-bound: " in shown and "collate_fn" in shown
    assert "image/png" in str(panel.profile_out.outputs)
    assert "I/O only" in shown and "not your dataset&#x27;s work done faster" in shown


def test_batches_that_cannot_be_saved_keep_the_verdict_and_say_why_there_is_no_comparison() -> None:
    panel = LoaderPanel()
    loader = DataLoader(Sleepy(0.0, with_text=True), batch_size=2, collate_fn=lambda items: items)
    panel.profile(loader, step=quick_step, batches=5, wait=True)
    assert [p.name for p in panel.profiles] == ["DataLoader"] and panel.profiles[0].verdict is not None
    assert "No I/O-only comparison: your batches cannot be saved as storage files" in panel.profile_html.value


def test_a_loop_profiled_in_your_own_code_is_shown_beside_the_others() -> None:
    panel = LoaderPanel()
    profiler = LoopProfiler(warmup=0)
    for _batch in profiler.iterate(DataLoader(Sleepy(0.0), batch_size=4)):
        time.sleep(0.002)
        if profiler.seen == 8:
            break
    profile = profiler.result()
    panel.show_profile(profile)
    assert profile.verdict is not None and panel.profiles == [profile]
    assert f"DataLoader: {profile.verdict.capitalize()}: " in html_of(panel.profile_out)
    with pytest.raises(TypeError, match="takes a LoaderProfile"):
        panel.show_profile("not a profile")  # type: ignore[arg-type]


def make(num_workers: int) -> DataLoader:
    return DataLoader(Sleepy(0.002), batch_size=4, num_workers=num_workers)


def test_a_sweep_runs_on_a_background_job_and_recommends_a_setting(new_processes) -> None:  # type: ignore[no-untyped-def]
    panel = LoaderPanel()
    panel.sweep(make, num_workers=[0, 1], batches=5, warmup=1, wait=True)
    assert panel.sweep_job.label.value == "done", panel.sweep_html.value
    assert panel.sweep_result is not None and panel.sweep_result.recommended is not None
    assert "Recommended: num_workers=" in html_of(panel.sweep_out)
    assert new_processes() == []
    with pytest.raises(ValueError, match="non-empty list"):
        panel.sweep(make, num_workers=[])


def test_cancel_stops_a_sweep_and_shows_what_it_measured(new_processes) -> None:  # type: ignore[no-untyped-def]
    panel = LoaderPanel()
    first_done = threading.Event()

    def factory(num_workers: int) -> DataLoader:
        if num_workers == 2:
            first_done.set()
        return make(num_workers)

    panel.sweep(factory, num_workers=[1, 2, 2], batches=10**6, time_cap_s=1.0, warmup=0)
    assert first_done.wait(120)
    panel.sweep_job.cancel_button.click()
    assert panel.sweep_job.wait(WAIT_S)
    assert "cancelled after 1 settings" in panel.sweep_html.value
    assert "num_workers=1" in html_of(panel.sweep_out) and new_processes() == []


def test_by_workers_appears_only_when_several_worker_counts_run() -> None:
    panel = LoaderPanel()
    small = {"sizes_mb": (0.25,), "methods": ("ours", "memcpy"), "repeats": 1}
    panel.run(wait=True, workers=(1,), **small)  # type: ignore[arg-type]
    assert list(panel.charts.titles) == ["By size", "Stages"]
    planned_while_running: list[int] = []
    original = panel._on_row
    spy = lambda row: (planned_while_running.append(len(panel.state().planned)), original(row))
    panel._on_row = spy  # type: ignore[method-assign]
    panel.run(wait=True, workers=(1, 2), **small)  # type: ignore[arg-type]
    assert list(panel.charts.titles) == ["By size", "By workers", "Stages"]
    assert planned_while_running and all(n == 3 for n in planned_while_running) and panel.state().planned == ()


def test_past_runs_overlay_two_chosen_runs_and_can_be_labelled() -> None:
    panel = LoaderPanel()
    small = {"sizes_mb": (0.25,), "workers": (1,), "methods": ("ours", "memcpy"), "repeats": 1}
    panel.label.value = "first try"
    panel.run(wait=True, **small)  # type: ignore[arg-type]
    panel.label.value = ""
    panel.run(wait=True, **small)  # type: ignore[arg-type]
    panel.show_history()
    assert panel.history_box.layout.display == "" and len(panel.overlay_first.options) == 2
    assert "first try" in panel.overlay_first.options[0][0]
    assert "two past runs overlaid" in str(panel.history_out.outputs) or "image/png" in str(panel.history_out.outputs)
    panel.overlay_first.value = panel.overlay_first.options[1][1]
    panel.run_label.value = "after the fix"
    panel.label_run(panel.overlay_first.value, panel.run_label.value)
    assert "after the fix" in html_of(panel.history_out)
    with pytest.raises(ValueError, match="plain text"):
        panel.label_run(panel.overlay_first.value, "<script>")
