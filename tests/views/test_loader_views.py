"""Loader views over hand-made benchmark rows, timings and statuses."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from inspector.loader import LoaderStatus, LoadTiming, WorkerStatus
from inspector.loader.bench import BenchRow
from inspector.loader.bench.profile import OURS_LABEL
from inspector.views import loader as views
from inspector.views._figures import figure_to_png


def row(method: str, size: float, mb_s: float, layout: str = "steps", workers: int = 2, **extra: float) -> BenchRow:
    return BenchRow(layout, size, workers, "cpu", method, mb_s, mb_s * 0.9, mb_s * 1.1, 3, 8, 20, 0, **extra)


ROWS = [
    row("ours", 1, 3000, read_ms=0.1, handoff_ms=0.2, wait_ms=0.0, build_ms=0.05, h2d_ms=0.0, callback_ms=0.01),
    row("ours", 16, 6000, read_ms=1.5, handoff_ms=0.2, wait_ms=0.1, build_ms=0.6, h2d_ms=0.0, callback_ms=0.01),
    row("ours", 16, 4000, workers=1, read_ms=2, handoff_ms=0.2, wait_ms=0.1, build_ms=0.6, h2d_ms=0, callback_ms=0),
    row("sync", 1, 6000, workers=1),
    row("sync", 16, 3000, workers=1),
    row("dataloader", 1, 100),
    row("dataloader", 16, 120),
    row("dataloader", 16, 70, workers=1),
    row("mp_queue", 1, 300),
    row("mp_queue", 16, 400),
    row("memcpy", 1, 40000, workers=1),
    row("memcpy", 16, 12000, workers=1),
]


def test_bench_table_labels_methods_and_computes_the_share_of_memcpy() -> None:
    table = views.bench_table(ROWS)
    ours = table[(table["method"] == "ours") & (table["size_mb"] == 16) & (table["workers"] == 2)].iloc[0]
    assert ours["label"] == "inspector loader"
    assert ours["share_of_memcpy"] == pytest.approx(0.5)
    assert set(table["label"]) >= {"torch DataLoader", "memcpy (ceiling)", "multiprocessing.Queue"}


def test_bench_table_accepts_plain_dicts_and_empty_input() -> None:
    assert len(views.bench_table([r.as_dict() for r in ROWS])) == len(ROWS)
    empty = views.bench_table([])
    assert empty.empty and "share_of_memcpy" in empty.columns


def test_ratio_table_compares_ours_with_each_baseline_at_the_same_worker_count() -> None:
    table = views.ratio_table(ROWS).set_index(["size_mb", "workers"])
    assert table.loc[(16, 2), "x_dataloader"] == pytest.approx(50)
    assert table.loc[(16, 1), "x_dataloader"] == pytest.approx(4000 / 70)
    assert table.loc[(16, 2), "x_sync"] == pytest.approx(2)
    assert table.loc[(1, 2), "share_of_dram_memcpy"] == pytest.approx(3000 / 12000)
    assert np.isnan(table.loc[(16, 1), "x_mp_queue"])


def test_throughput_charts_are_figures_with_a_line_per_method() -> None:
    by_size = views.throughput_by_size_figure(ROWS)
    assert isinstance(by_size, Figure)
    labels = {t.get_text() for t in by_size.legends[0].get_texts()}  # one key, above the axes
    assert labels == {
        "inspector loader",
        "FileStorage.load (sync)",
        "multiprocessing.Queue",
        "torch DataLoader",
        "memcpy (ceiling)",
    }
    by_workers = views.throughput_by_workers_figure(ROWS, "steps", 16)
    assert by_workers.axes[0].get_title() == "steps, 16 MiB"
    assert figure_to_png(by_size)[:4] == b"\x89PNG" and figure_to_png(by_workers)[:4] == b"\x89PNG"


def test_charts_draw_something_sensible_before_any_result() -> None:
    assert isinstance(views.throughput_by_size_figure([]), Figure)
    assert isinstance(views.throughput_by_workers_figure([]), Figure)
    assert views.stage_figure([]).axes[0].get_title() == "no timings yet"


def timing(nbytes: int, read: float, ok: bool = True) -> LoadTiming:
    return LoadTiming(1, "/x", 0, nbytes, 4, "cpu", ok, 0.001, read, 0.0002, 0.0, 0.0001, 0.0, 0.00001, read + 0.002)


def test_stage_table_from_timings_groups_loads_by_size_in_milliseconds() -> None:
    table = views.stage_table(
        [timing(16 << 20, 0.002), timing(16 << 20, 0.004), timing(1 << 20, 0.001), timing(1 << 20, 9.0, ok=False)]
    )
    assert list(table["payload"]) == ["1 MiB", "16 MiB"]
    assert table.set_index("payload").loc["16 MiB", "read"] == pytest.approx(3.0)
    assert table.set_index("payload").loc["1 MiB", "read"] == pytest.approx(1.0)  # the failed load is left out


def test_stage_table_from_bench_rows_uses_ours_only() -> None:
    table = views.stage_table(ROWS)
    assert list(table["payload"]) == ["steps 1 MiB", "steps 16 MiB", "steps 16 MiB"]
    assert isinstance(views.stage_figure(ROWS), Figure)


STATUS = LoaderStatus(
    "FileStorageLoader-1",
    True,
    2,
    (WorkerStatus(0, 101, True, True, True, 2, 7, 3, 0), WorkerStatus(1, 102, False, True, False, 0, 5, 0, 1)),
    4,
    2,
    12,
    1,
    3,
    2,
    1,
    6 << 20,
)


def test_worker_and_loader_tables_show_liveness_and_segments() -> None:
    workers = views.workers_table([STATUS])
    assert list(workers["busy"]) == [True, False] and list(workers["alive"]) == [True, False]
    assert list(workers["segments_mapped"]) == [3, 0]
    loaders = views.loaders_table(STATUS)
    assert loaders.iloc[0]["workers"] == "1/2" and loaders.iloc[0]["segments_leased"] == 1
    assert loaders.iloc[0]["segment_mib"] == 6.0
    assert isinstance(views.loaders_table([]), pd.DataFrame)


def test_leaves_table_places_each_leaf_in_the_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from inspector.loader import FileStorage, describe_storage

    storage = FileStorage(tmp_path / "a.istore")
    storage.save({"obs": np.zeros((2, 3), np.float32), "r": [np.ones(1)]})
    table = views.leaves_table(describe_storage(storage))
    assert list(table["where"]) == ["obj['obs']", "obj['r'][0]"]
    assert list(table["bytes"]) == [24, 8] and all(table["offset"] % 64 == 0)


def profile(label: str, seconds: tuple[float, ...], nbytes: int, busy: bool = False):  # type: ignore[no-untyped-def]
    from inspector.loader import LoaderProfile
    from inspector.loader.bench import MachineLoad

    return LoaderProfile(
        "DataLoader",
        1.5,
        seconds,
        (nbytes,) * len(seconds),
        2,
        False,
        MachineLoad(5.0 if busy else 0.1, 2),
        label=label,
    )


def test_profile_views_show_both_loaders_side_by_side() -> None:
    mine = profile("your DataLoader", (0.010, 0.012, 0.011), 2**20)
    ours = profile(OURS_LABEL, (0.001, 0.001, 0.002), 2**20)
    table = views.profile_table([mine, ours])
    assert list(table["loader"]) == ["your DataLoader", OURS_LABEL]
    assert table.iloc[0]["batches"] == 3 and table.iloc[0]["batch_ms_median"] == pytest.approx(11.0)
    assert table.iloc[1]["mb_per_s"] == pytest.approx(3 / 0.004)
    fig = views.profile_figure([mine, ours])
    assert isinstance(fig, Figure) and figure_to_png(fig).startswith(b"\x89PNG")
    assert [t.get_text() for t in fig.axes[1].get_yticklabels()] == ["your DataLoader", "I/O only"]
    bars = fig.axes[1].patches
    assert bars[0].get_facecolor() != bars[1].get_facecolor() and bars[1].get_hatch() == "//"  # its own colour
    assert isinstance(views.profile_figure([]), Figure)


def test_targets_table_says_pass_or_miss() -> None:
    from inspector.loader.bench.targets import throughput_targets

    rows = [*ROWS, row("ours", 64, 7000), row("memcpy", 64, 13000, workers=1)]
    table = views.targets_table(throughput_targets(rows))
    assert set(table["verdict"]) <= {"PASS", "MISS", ""}
    sync = table[table["measurement"] == "steps 1 MiB vs sync"].iloc[0]
    assert sync["ratio"] == pytest.approx(3000 / 6000) and sync["verdict"] == "MISS"
    memcpy = table[table["measurement"] == "steps 64 MiB vs memcpy"].iloc[0]
    assert memcpy["ratio"] == pytest.approx(7000 / 13000) and memcpy["verdict"] == "PASS"


def test_the_busy_machine_note_appears_only_when_the_load_exceeded_the_free_cores() -> None:
    quiet = [row("ours", 1, 3000, load_average=0.2, cores=2)]
    busy = [*quiet, row("sync", 1, 6000, workers=1, load_average=3.5, cores=2)]
    assert views.machine_note(quiet) == ""
    assert "busy machine: load average 3.5 on 2 cores" in views.machine_note(busy)


def test_history_tables_put_past_runs_side_by_side() -> None:
    runs = [
        {
            "time": "2026-11-30T10:00:00",
            "rows": [row("ours", 1, 3000).as_dict(), row("sync", 1, 6000).as_dict()],
            "environment": {"torch": "2.13.0", "commit": "abc1234", "cores": 2},
        },
        {
            "time": "2026-11-30T11:00:00",
            "cancelled": True,
            "rows": [row("ours", 1, 3300).as_dict()],
            "environment": {"torch": "2.13.0", "commit": "def5678", "cores": 2},
        },
    ]
    table = views.history_table(runs)
    assert list(table.columns)[4:] == ["#1 2026-11-30T10:00", "#2 2026-11-30T11:00 (cancelled)"]
    assert table.iloc[0].tolist()[4:] == [3000, 3300]
    envs = views.history_environments(runs)
    assert list(envs["commit"]) == ["abc1234", "def5678"] and list(envs["cancelled"]) == [False, True]
    assert views.history_table([]).empty
