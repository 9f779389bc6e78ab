"""The Loader page's newer parts over hand-made records: keys that fit, targets that wait, past runs, your loop."""

from __future__ import annotations

import io
import json

import pytest
from matplotlib.figure import Figure
from PIL import Image

from inspector.loader import LoaderProfile
from inspector.loader.bench import METHODS, BenchRow, MachineLoad, Spread, SweepResult, SweepSetting
from inspector.loader.bench.profile import OURS_LABEL
from inspector.loader.bench.rows import WORKERLESS
from inspector.loader.bench.stage_split import StageSplit
from inspector.loader.bench.targets import throughput_targets, waiting_targets
from inspector.loader.bench.time_left import bench_plan
from inspector.views import loader as views
from inspector.views import loader_history, loader_profile
from inspector.views._figures import KEYS_METADATA, figure_to_png


def row(method: str, size: float, mb_s: float, layout: str = "steps", workers: int = 2) -> BenchRow:
    workers = 1 if method in WORKERLESS else workers
    return BenchRow(
        layout,
        size,
        workers,
        "cpu",
        method,
        mb_s,
        mb_s * 0.9,
        mb_s * 1.1,
        3,
        8,
        20,
        0,
        read_ms=0.1,
        handoff_ms=0.1,
        wait_ms=0.1,
        build_ms=0.1,
        h2d_ms=0.1,
        callback_ms=0.1,
    )


def full_rows(workers: tuple[int, ...] = (2,)) -> list[BenchRow]:
    return [
        row(m, size, 100.0 * (i + 1), layout, w)
        for layout in ("steps", "columnar")
        for size in (1, 16, 64)
        for i, m in enumerate(METHODS)
        for w in ((1,) if m in WORKERLESS else workers)
    ]


def keys_of(fig: Figure) -> tuple[tuple[int, int], list[list]]:
    image = Image.open(io.BytesIO(figure_to_png(fig)))
    return image.size, json.loads(image.text[KEYS_METADATA])


def profile(label: str, waits: tuple[float, ...], computes: tuple[float, ...] = ()) -> LoaderProfile:
    seconds = tuple(w + c for w, c in zip(waits, computes or (0.0,) * len(waits), strict=True))
    split = StageSplit(
        2,
        len(waits),
        {
            "dataset": Spread(0.02, 0.019, 0.03, 5),
            "collate": Spread(1e-3, 1e-3, 2e-3, 5),
            "transfer": Spread(5e-3, 1e-3, 9e-3, 5),
            "other": Spread(1e-4, 0, 2e-4, 5),
        },
        Spread(0.026, 0.02, 0.04, 5),
        0.97,
    )
    return LoaderProfile(
        "DataLoader",
        0.5,
        seconds,
        (1024,) * len(waits),
        2,
        False,
        MachineLoad(0.1, 2),
        label=label,
        wait_seconds=waits,
        compute_seconds=computes,
        stages=split,
    )


def every_figure() -> list[Figure]:
    rows = full_rows((1, 2, 4))
    long = "my very long DataLoader name, with augmentations and decoding of JPEG images at full resolution"
    runs = [
        {"id": "a", "time": "2026-12-01T10:00", "label": "before", "rows": [r.as_dict() for r in rows]},
        {
            "id": "b",
            "time": "2026-12-01T11:00",
            "label": "after the change to pinned staging buffers",
            "rows": [r.as_dict() for r in rows],
        },
    ]
    mine = profile(long, (0.02,) * 12, (0.001,) * 12)
    return [
        views.throughput_by_size_figure(rows),
        views.throughput_by_workers_figure(rows),
        views.stage_figure(rows),
        loader_history.overlay_figure(*runs),
        loader_profile.profile_figure([mine, profile(OURS_LABEL, (0.001,) * 12)]),
        loader_profile.loop_figure(mine),
        loader_profile.stage_split_figure(mine),
    ]


@pytest.mark.parametrize("index", range(7))
def test_every_key_entry_lies_inside_its_figure(index: int) -> None:
    fig = every_figure()[index]
    (width, height), keys = keys_of(fig)
    assert keys, "the figure has a key"
    for label, x0, y0, x1, y1 in keys:
        assert 0 <= x0 < x1 <= width and 0 <= y0 < y1 <= height, (label, (x0, y0, x1, y1), (width, height))


def test_by_workers_is_shown_only_when_several_worker_counts_ran() -> None:
    one = views.page(views.LoaderState(tuple(full_rows((2,)))))
    several = views.page(views.LoaderState(tuple(full_rows((1, 2)))))
    assert views.LoaderSection.BY_WORKERS not in one and views.LoaderSection.BY_WORKERS in several


def test_a_target_waits_for_a_baseline_the_run_has_not_measured_yet() -> None:
    rows = full_rows()
    plan = tuple(bench_plan(["steps", "columnar"], [1, 16, 64], [2], METHODS, WORKERLESS))
    midway = tuple(rows[:6])  # steps 1 MiB all done, ours at 16 MiB; memcpy at 64 MiB not yet
    state = views.LoaderState(midway, planned=plan)
    html = views.page(state).section(views.LoaderSection.TARGETS).to_html()
    assert html.count("waits for memcpy at steps 64 MiB, memcpy at columnar 64 MiB") == 2  # 1 and 16 MiB shares
    assert "waits for 4 more cells of ours" in html
    frame = views.targets_table(throughput_targets(list(midway)), waiting_targets(list(midway), plan))
    verdicts = dict(zip(frame["measurement"], frame["verdict"], strict=True))
    assert verdicts["steps 1 MiB vs DataLoader"] == "MISS"  # both its cells are measured: final already
    done = views.page(views.LoaderState(tuple(rows), planned=plan)).section(views.LoaderSection.TARGETS).to_html()
    assert "waits for" not in done and ("PASS" in done or "MISS" in done)


def test_the_two_shares_of_memcpy_are_explained_where_they_are_shown() -> None:
    html = views.page(views.LoaderState(tuple(full_rows()))).section(views.LoaderSection.RESULTS).to_html()
    assert "share of memcpy, same size" in html and "share of memcpy, largest size" in html
    assert "Two shares of memcpy" in html and "what the machine sustains" in html


def test_past_runs_show_baselines_targets_labels_and_two_runs_overlaid() -> None:
    target = {
        "part": "loader",
        "name": "steps 1 MiB vs DataLoader",
        "value": 3000.0,
        "unit": "MiB/s",
        "baseline_value": 100.0,
        "target": ">= 10x",
        "ok": True,
    }
    runs = tuple(
        {
            "id": f"r{i}",
            "time": f"2026-12-01T1{i}:00",
            "label": f"try {i}",
            "cancelled": False,
            "environment": {"commit": "abc"},
            "rows": [r.as_dict() for r in full_rows()],
            "measurements": [target],
        }
        for i in range(3)
    )
    blocks = loader_history.history_blocks(runs, "1 line of the history could not be read", ("r0", "r2"))
    html = "".join(block.to_html() if hasattr(block, "to_html") else str(block) for block in blocks)
    assert "torch DataLoader" in html and "memcpy (ceiling)" in html  # baselines, not only ours
    assert "3,000 / 100 MiB/s PASS" in html and "try 2" in html and "could not be read" in html
    pair = loader_history.overlay_pair(runs, ("r0", "r2"))
    assert pair is not None and [r["id"] for r in pair] == ["r0", "r2"]
    assert [r["id"] for r in loader_history.overlay_pair(runs)] == ["r1", "r2"]  # type: ignore[union-attr]
    labels = [t.get_text() for t in loader_history.overlay_figure(*pair).legends[0].get_texts()]
    assert "torch DataLoader" in labels and any("try 0" in label for label in labels)


def test_your_loop_shows_the_verdict_each_step_and_the_stages() -> None:
    mine = profile("train loop", (0.02,) * 12, (0.001,) * 12)
    blocks = loader_profile.profile_blocks([mine])
    html = "".join(b.to_html() if hasattr(b, "to_html") else "" for b in blocks)
    assert "train loop: Loader-bound: 95% of the wall time" in html
    loop = loader_profile.loop_figure(mine)
    assert [t.get_text() for t in loop.legends[0].get_texts()] == ["waiting for the next batch", "your step (compute)"]
    assert len(loop.axes[0].patches) == 24  # one wait and one compute bar per step, stacked
    stages = loader_profile.stage_split_table(mine)
    assert list(stages["stage"]) == ["dataset", "collate", "transfer", "other", "measured"]


def test_a_sweep_shows_its_recommendation_and_every_setting() -> None:
    settings = (
        SweepSetting({"num_workers": 0}, 10.0, 320.0, 0.01, 30),
        SweepSetting({"num_workers": 2}, 30.0, 960.0, 0.5, 30),
        SweepSetting({"num_workers": 4}, error="RuntimeError: DataLoader worker exited"),
    )
    result = SweepResult(("num_workers",), settings, settings[1], "num_workers=2: the fastest", MachineLoad(0.1, 2))
    html = "".join(b.to_html() for b in loader_profile.sweep_blocks(result))
    assert "Recommended: num_workers=2: the fastest" in html and "DataLoader worker exited" in html
    assert isinstance(loader_profile.sweep_figure(result), Figure)
    page = views.page(views.LoaderState(sweep=result))
    assert views.LoaderSection.SWEEP in page
