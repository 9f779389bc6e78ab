"""Loader views: benchmark rows, per-stage timings, pool status and past runs.

Your own loader's profile has its own module, ``views.loader_profile``; the page shows both.

Throughput is MiB/s (2**20 bytes per second; the engine's ``mb_s`` fields hold the same unit).
The memcpy row is the ceiling a single thread can copy the same bytes at; the charts draw it
dashed so every other line reads as a share of it.
Rows may be ``BenchRow`` records or plain dicts with the same keys (what ``as_dict`` gives).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from inspector.loader.bench import METHOD_LABELS, MachineLoad
from inspector.views._figures import axes_key_above, new_figure, style_axes
from inspector.views._palette import METHOD_COLOURS, method_colour  # noqa: F401 (re-exported)
from inspector.views._tables import styled
from inspector.views.loader_history import history_environments, history_table  # noqa: F401 (re-exported)
from inspector.views.loader_profile import profile_figure, profile_table  # noqa: F401 (re-exported)
from inspector.views.loader_stages import STAGE_COLOURS, row_records, stage_figure, stage_table  # noqa: F401 (re-exported)
from inspector.views.loader_status import leaves_table, loaders_table, workers_table  # noqa: F401 (re-exported)
from inspector.views.page import Block, Page, figure, lazy, note, table

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from inspector.loader import LoaderProfile, LoaderStatus

BASELINES = ("sync", "mp_queue", "dataloader")
BENCH_COLUMNS = [
    "layout",
    "size_mb",
    "workers",
    "device",
    "method",
    "label",
    "mb_s",
    "mb_s_min",
    "mb_s_max",
    "share_of_memcpy",
    "repeats",
    "loads",
    "leaves",
    "corrupt",
]


def bench_table(rows: Iterable[Any]) -> pd.DataFrame:
    """One row per measured cell, with the method's label and its share of memcpy of the same bytes.

    The tables and figures below take rows, or this frame made of them (a page makes it once).
    """
    return rows if isinstance(rows, pd.DataFrame) else _bench_frame(rows)


def _bench_frame(rows: Iterable[Any]) -> pd.DataFrame:
    frame = pd.DataFrame.from_records(row_records(rows))
    if frame.empty:
        return pd.DataFrame(columns=BENCH_COLUMNS)
    frame["label"] = frame["method"].map(lambda m: METHOD_LABELS.get(m, m))
    ceiling = frame[frame["method"] == "memcpy"].groupby(["layout", "size_mb", "device"])["mb_s"].median()
    keys = list(zip(frame["layout"], frame["size_mb"], frame["device"], strict=True))
    frame["share_of_memcpy"] = [row / ceiling.get(key, np.nan) for row, key in zip(frame["mb_s"], keys, strict=True)]
    extra = [c for c in frame.columns if c not in BENCH_COLUMNS]
    return frame[BENCH_COLUMNS + extra].sort_values(["layout", "size_mb", "method", "workers"], ignore_index=True)


def ratio_table(rows: Iterable[Any]) -> pd.DataFrame:
    """Ours against everything else, per layout, size and worker count (the benchmark's verdict)."""
    frame = bench_table(rows)
    columns = ["layout", "size_mb", "workers", "ours_mb_s", "share_of_memcpy", "share_of_dram_memcpy"] + [
        f"x_{b}" for b in BASELINES
    ]
    ours = frame[frame["method"] == "ours"]
    if ours.empty:
        return pd.DataFrame(columns=columns)
    memcpy = frame[frame["method"] == "memcpy"]
    dram = memcpy.loc[memcpy["size_mb"].idxmax(), "mb_s"] if not memcpy.empty else np.nan
    records = []
    for row in ours.itertuples():
        record = {
            "layout": row.layout,
            "size_mb": row.size_mb,
            "workers": row.workers,
            "ours_mb_s": row.mb_s,
            "share_of_memcpy": row.share_of_memcpy,
            "share_of_dram_memcpy": row.mb_s / dram,
        }
        for baseline in BASELINES:
            match = frame[
                (frame["method"] == baseline)
                & (frame["layout"] == row.layout)
                & (frame["size_mb"] == row.size_mb)
                & (frame["device"] == row.device)
            ]
            if baseline != "sync":
                match = match[match["workers"] == row.workers]
            record[f"x_{baseline}"] = row.mb_s / match["mb_s"].iloc[0] if not match.empty else np.nan
        records.append(record)
    return pd.DataFrame.from_records(records, columns=columns)


def _method_order(methods: Iterable[str]) -> list[str]:
    known = [m for m in METHOD_LABELS if m in set(methods)]
    return known + sorted(set(methods) - set(known))


def throughput_by_size_figure(rows: Iterable[Any], workers: int | None = None) -> Figure:
    """MiB/s against payload size, a line per method (spread as error bars), memcpy dashed; one panel per layout."""
    frame = bench_table(rows)
    layouts = sorted(frame["layout"].unique()) if not frame.empty else ["(no results yet)"]
    fig = new_figure(width=5.2 * len(layouts), height=3.8)
    axes = fig.subplots(1, len(layouts), squeeze=False)[0]
    for ax, layout in zip(axes, layouts, strict=True):
        part = frame[frame["layout"] == layout]
        if workers is None and not part.empty:
            chosen = int(part[part["method"] == "ours"]["workers"].max()) if (part["method"] == "ours").any() else None
        else:
            chosen = workers
        for method in _method_order(part["method"]):
            line = part[part["method"] == method]
            if method not in ("sync", "memcpy", "h2d") and chosen is not None:
                line = line[line["workers"] == chosen]
            line = line.sort_values("size_mb")
            if line.empty:
                continue
            errors = [line["mb_s"] - line["mb_s_min"], line["mb_s_max"] - line["mb_s"]]
            dashed = method in ("memcpy", "h2d")
            ax.errorbar(
                line["size_mb"],
                line["mb_s"],
                yerr=errors,
                marker="o",
                capsize=3,
                linestyle="--" if dashed else "-",
                color=method_colour(method),
                label=METHOD_LABELS.get(method, method),
            )
        ax.set_xscale("log", base=2)
        sizes = sorted(part["size_mb"].unique())
        if sizes:
            ax.set_xticks(sizes, [f"{size:g}" for size in sizes])
            ax.minorticks_off()
        ax.set_yscale("log")
        ax.set_xlabel("payload size (MiB)")
        ax.set_ylabel("MiB/s (log)")
        suffix = f", {chosen} worker{'s' if chosen != 1 else ''}" if chosen is not None else ""
        ax.set_title(f"{layout}{suffix}")
        style_axes(ax)
    axes_key_above(fig, axes)
    return fig


def throughput_by_workers_figure(
    rows: Iterable[Any], layout: str | None = None, size_mb: float | None = None
) -> Figure:
    """MiB/s against the number of workers for one layout and size; workerless methods as flat lines."""
    frame = bench_table(rows)
    fig = new_figure(width=5.2, height=3.8)
    ax = fig.add_subplot(1, 1, 1)
    if not frame.empty:
        layout = layout if layout is not None else str(frame["layout"].iloc[0])
        part = frame[frame["layout"] == layout]
        size_mb = size_mb if size_mb is not None else float(part["size_mb"].max())
        part = part[part["size_mb"] == size_mb]
        span = (part["workers"].min(), part["workers"].max())
        for method in _method_order(part["method"]):
            line = part[part["method"] == method].sort_values("workers")
            colour, label = method_colour(method), METHOD_LABELS.get(method, method)
            if method in ("sync", "memcpy", "h2d"):
                level = line["mb_s"].iloc[0]
                ax.hlines(level, span[0] - 0.2, span[1] + 0.2, linestyles="--", color=colour, label=label)
            else:
                ax.plot(line["workers"], line["mb_s"], marker="o", color=colour, label=label)
        ax.set_title(f"{layout}, {size_mb:g} MiB")
        ax.set_xticks(sorted(part["workers"].unique()))
    ax.set_yscale("log")
    ax.set_xlabel("workers")
    ax.set_ylabel("MiB/s (log)")
    style_axes(ax)
    axes_key_above(fig, [ax])
    return fig


def machine_note(rows: Iterable[Any]) -> str:
    """The busy-machine note for a set of benchmark rows ("" when every cell ran on a quiet machine)."""
    records = row_records(rows)
    loads = [MachineLoad(r.get("load_average") or 0.0, r.get("cores") or 1) for r in records if r.get("cores")]
    busiest = max(loads, key=lambda m: m.load_average - m.cores, default=None)
    return busiest.note() if busiest is not None else ""


def targets_table(measurements: Iterable[Any], waiting: Mapping[str, str] | None = None) -> pd.DataFrame:
    """One row per target: the figure, its baseline, the ratio, the target and PASS or MISS.

    A target named in ``waiting`` (its baseline not final yet, mid-run) shows what it waits for
    instead of a verdict that could still flip.
    """
    columns = ["measurement", "value", "unit", "baseline", "baseline_value", "ratio", "target", "verdict"]
    waiting = waiting or {}
    records = [
        {
            "measurement": m.name,
            "value": m.value,
            "unit": m.unit,
            "baseline": m.baseline,
            "baseline_value": m.baseline_value,
            "ratio": m.ratio,
            "target": m.target,
            "verdict": waiting.get(m.name) or (("PASS" if m.ok else "MISS") if m.target else ""),
        }
        for m in measurements
    ]
    return pd.DataFrame.from_records(records, columns=columns)


# -- the page -------------------------------------------------------------------------------
# Column headers as a reader sees them: the unit written out (MiB, MiB/s), not the field name.
SHOWN_NAMES = {
    "size_mb": "size MiB",
    "mb_s": "MiB/s",
    "mb_s_min": "min MiB/s",
    "mb_s_max": "max MiB/s",
    "ours_mb_s": "ours MiB/s",
    "segment_mib": "segment MiB",
    "share_of_memcpy": "share of memcpy, same size",
    "share_of_dram_memcpy": "share of memcpy, largest size",
}


def shown(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its unit-bearing headers written for a reader (``SHOWN_NAMES``)."""
    return frame.rename(columns=SHOWN_NAMES)


RESULT_COLUMNS = ["layout", "size_mb", "workers", "label", "mb_s", "mb_s_min", "mb_s_max", "share_of_memcpy", "corrupt"]


class LoaderSection(StrEnum):
    """The Loader page's sections."""

    BY_SIZE = "by_size"
    BY_WORKERS = "by_workers"
    STAGES = "stages"
    TARGETS = "targets"
    RESULTS = "results"
    HISTORY = "history"
    PROFILES = "profiles"
    SWEEP = "sweep"
    LOADERS = "loaders"


@dataclass(frozen=True)
class LoaderState:
    """What the Loader page shows: benchmark rows, your loader's profiles and sweep, past runs and live loaders.

    ``planned`` holds the cells of a run still going (``time_left.Cell``): targets whose baselines
    are among the cells left wait for them instead of showing a verdict. ``overlay`` names two
    kept runs (their ids) to draw in one chart; by default the last two.
    """

    rows: tuple[Any, ...] = ()
    profiles: tuple[LoaderProfile, ...] = ()
    history: tuple[Mapping[str, Any], ...] | None = None
    statuses: tuple[LoaderStatus, ...] = ()
    history_note: str = ""  # what the history's reader skipped, said beside the past runs
    planned: tuple[Any, ...] = ()
    overlay: tuple[str, ...] = ()
    sweep: Any = None  # a SweepResult

    @cached_property
    def bench(self) -> pd.DataFrame:
        """``bench_table`` of the rows, made once per state (NOTE [ Lazy pages ] in ``views/page.py``)."""
        return bench_table(self.rows)

    @cached_property
    def machine_note(self) -> str:
        """The busy-machine note of the rows ("" on a quiet machine)."""
        return machine_note(self.rows)

    @cached_property
    def worker_counts(self) -> tuple[int, ...]:
        """The worker counts the benchmark ran (planned included), methods without workers left out."""
        cells = [(_get(r, "method"), _get(r, "workers")) for r in self.rows]
        cells += [(c.method, c.workers) for c in self.planned]
        return tuple(sorted({w for method, w in cells if method not in ("sync", "memcpy", "h2d")}))


def current_state() -> LoaderState:
    """The page's state now: this process's last benchmark run and the loaders alive in it."""
    from inspector.loader import loader_statuses
    from inspector.loader.bench import last_run

    return LoaderState(tuple(last_run()), (), None, tuple(loader_statuses()))


NO_BENCHMARK = (
    "No benchmark has run here yet. In the app: press Run in the Loader tab. In Python: "
    "inspector.loader.bench.run(), then write the report from that same process. From a shell: "
    "`inspector bench loader --out results.csv`, then "
    "`inspector report report.html --loader-results results.csv`."
)
SHARES_EXPLAINED = (
    'Two shares of memcpy: "same size" is ours against one thread copying the same bytes in this run (at 1 MiB '
    'and below that copy runs from the CPU cache, so the share reads low); "largest size" is ours against the '
    "memcpy of the largest size measured, which runs from memory: what the machine sustains, and what the "
    "throughput targets use. Shares above 1 are possible: two workers read in parallel, memcpy is one thread."
)


def page(state: LoaderState) -> Page:
    """The Loader page: charts and targets of the benchmark, past runs, your loader and its sweep, live loaders."""
    from inspector.views.loader_history import history_blocks
    from inspector.views.loader_profile import profile_blocks, sweep_blocks

    rows = state.rows
    sections = []
    if rows:
        sections.append(lazy(LoaderSection.BY_SIZE, "Throughput by size", lambda: _by_size_blocks(state), rows))
        if len(state.worker_counts) > 1:  # one worker count: the chart would be a column of dots
            sections.append(
                lazy(LoaderSection.BY_WORKERS, "Throughput by workers", lambda: _by_workers_blocks(state), rows)
            )
        sections.append(lazy(LoaderSection.STAGES, "Where one load's time goes", lambda: _stage_blocks(state), rows))
        if state.machine_note or any(_get(r, "method") == "memcpy" for r in rows):
            sections.append(
                lazy(LoaderSection.TARGETS, "Targets", lambda: _target_blocks(state), (rows, state.planned))
            )
        sections.append(lazy(LoaderSection.RESULTS, "Results", lambda: _result_blocks(state), rows))
    else:
        sections.append(lazy(LoaderSection.RESULTS, "Benchmark", lambda: [note(NO_BENCHMARK)], rows))
    history, profiles, statuses, sweep = state.history, state.profiles, state.statuses, state.sweep
    if history is not None:
        inputs = (history, state.history_note, state.overlay)
        sections.append(lazy(LoaderSection.HISTORY, "Past runs", lambda: history_blocks(*inputs), inputs))
    if profiles:
        sections.append(lazy(LoaderSection.PROFILES, "Your loader", lambda: profile_blocks(profiles), profiles))
    if sweep is not None:
        sections.append(lazy(LoaderSection.SWEEP, "Tuning your loader", lambda: sweep_blocks(sweep), sweep))
    if statuses:
        title = "Loaders in this kernel"
        sections.append(lazy(LoaderSection.LOADERS, title, lambda: _loader_blocks(statuses), statuses))
    return Page("Shared-memory loader", tuple(sections))


def _by_size_blocks(state: LoaderState) -> list[Block]:
    return [figure(throughput_by_size_figure(state.bench), "loader throughput")]


def _by_workers_blocks(state: LoaderState) -> list[Block]:
    return [figure(throughput_by_workers_figure(state.bench), "loader throughput by workers")]


def _stage_blocks(state: LoaderState) -> list[Block]:
    return [figure(stage_figure(state.rows), "loader stages")]


def _target_blocks(state: LoaderState) -> list[Block]:
    from inspector.loader.bench.targets import throughput_targets, waiting_targets

    checks = [note(state.machine_note)] if state.machine_note else []
    if any(_get(r, "method") == "memcpy" for r in state.rows):
        rows = list(state.rows)
        waiting = waiting_targets(rows, state.planned)
        checks.append(table(styled(targets_table(throughput_targets(rows), waiting))))
        if waiting:
            checks.append(
                note(
                    f"{len(waiting)} targets wait for baselines this run has not measured yet: their "
                    "verdicts appear when those are final."
                )
            )
    return checks


def _result_blocks(state: LoaderState) -> list[Block]:
    return [
        table(styled(shown(ratio_table(state.bench))), "Ratios to each baseline"),
        note(SHARES_EXPLAINED),
        table(styled(shown(state.bench[RESULT_COLUMNS])), "Every cell"),
    ]


def _loader_blocks(statuses: tuple[LoaderStatus, ...]) -> list[Block]:
    return [table(styled(shown(loaders_table(statuses)))), table(styled(workers_table(statuses)))]


def _get(row: Any, key: str) -> Any:
    return row.get(key) if isinstance(row, Mapping) else getattr(row, key)
