"""Views of your own loader profiled (``profile_loader``, ``LoopProfiler``, ``sweep_loader``): tables and charts.

Each loader keeps the colour its name has in every loader figure (``views._palette.method_colour``);
the inspector's loader replaying your saved batches is drawn in a colour of its own, hatched, and
labelled "I/O only", since your dataset's work is excluded from it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from inspector.loader import LoaderProfile, SweepResult
from inspector.loader.bench.profile import OURS_LABEL
from inspector.loader.bench.stage_split import STAGE_NAMES, STAGE_TITLES
from inspector.views._figures import NEUTRAL_INK, axes_key_above, new_figure, style_axes
from inspector.views._palette import IO_ONLY_COLOUR, PROBLEM_RED, method_colour
from inspector.views._tables import styled
from inspector.views.page import Block, figure, note, table

if TYPE_CHECKING:
    from matplotlib.figure import Figure

WAIT_COLOUR = "#ff7f0e"  # waiting for data: the loader's colour in the loader figures
COMPUTE_COLOUR = "#1f77b4"
STAGE_COLOURS = dict(zip(STAGE_NAMES, ("#ff7f0e", "#bcbd22", "#9467bd", "#8c564b", "#c7c7c7", "#17becf"), strict=True))


def _profiles(profiles: LoaderProfile | Iterable[LoaderProfile]) -> list[LoaderProfile]:
    return [profiles] if isinstance(profiles, LoaderProfile) else list(profiles)


def is_io_only(profile: LoaderProfile) -> bool:
    """Whether ``profile`` is the inspector's loader replaying saved batches (your dataset's work excluded)."""
    return profile.label == OURS_LABEL


def profile_colour(profile: LoaderProfile) -> str:
    return IO_ONLY_COLOUR if is_io_only(profile) else method_colour(profile.label or profile.name)


def profile_table(profiles: LoaderProfile | Iterable[LoaderProfile]) -> pd.DataFrame:
    """One row per profiled loader: first batch, batches/s, MiB/s, ms per batch, the verdict with a step, H2D."""
    frame = pd.DataFrame.from_records([p.summary() for p in _profiles(profiles)])
    empty = [c for c in frame.columns if frame[c].isna().all()]  # no step, no CUDA: say nothing about them
    return frame.drop(columns=empty)


def _value_label(ax: Any, row: int, value: float, longest: float) -> None:
    """A bar's MiB/s at its end: inside a long bar (in white), after a short one, so none crosses the frame."""
    inside = value >= 0.5 * longest
    ax.text(
        value,
        row,
        f"{value:,.0f} " if inside else f" {value:,.0f}",
        va="center",
        fontsize=8,
        ha="right" if inside else "left",
        color="white" if inside else NEUTRAL_INK,
    )


def profile_figure(profiles: LoaderProfile | Iterable[LoaderProfile]) -> Figure:
    """Left: milliseconds per batch, batch by batch, a line per loader. Right: MiB/s of each loader."""
    found = _profiles(profiles)
    fig = new_figure(width=8.0, height=3.6)
    left, right = fig.subplots(1, 2, width_ratios=(2, 1))
    for i, profile in enumerate(found):
        name = profile.label or profile.name
        ms = np.asarray(profile.batch_seconds) * 1e3
        colour, io_only = profile_colour(profile), is_io_only(profile)
        left.plot(
            np.arange(1, len(ms) + 1),
            ms,
            marker=".",
            linewidth=1,
            color=colour,
            label=name,
            linestyle="--" if io_only else "-",
        )
        right.barh(i, profile.mb_per_s, color=colour, hatch="//" if io_only else None, edgecolor=NEUTRAL_INK)
        _value_label(right, i, profile.mb_per_s, max(p.mb_per_s for p in found))
    left.set_xlabel("batch")
    left.set_ylabel("ms per batch")
    left.set_yscale("log")
    left.set_title("time between batches (after warm-up)")
    right.set_yticks(range(len(found)), ["I/O only" if is_io_only(p) else _short(p.label or p.name) for p in found])
    right.set_xlabel("MiB/s of tensors and arrays", loc="right")  # ends with the frame: never past the edge
    right.invert_yaxis()
    for ax in (left, right):
        style_axes(ax)
    if found:
        axes_key_above(fig, [left], columns=2)
    else:
        left.set_title("no profile yet")
    return fig


def _short(name: str, room: int = 24) -> str:
    """A name cut to ``room`` characters for an axis label (the key above holds it whole)."""
    return name if len(name) <= room else name[: room - 1] + "…"


def loop_figure(profile: LoaderProfile) -> Figure:
    """Each timed step as one stacked bar: the wait for its batch under the step's own compute; the verdict above."""
    fig = new_figure(width=8.0, height=3.4)
    ax = fig.add_subplot(1, 1, 1)
    steps = np.arange(1, profile.batches + 1)
    wait = np.asarray(profile.wait_seconds or profile.batch_seconds, float) * 1e3
    compute = np.asarray(profile.compute_seconds, float) * 1e3 if profile.has_step else np.zeros_like(wait)
    width = 1.0 if len(steps) > 60 else 0.8
    ax.bar(steps, wait, width=width, color=WAIT_COLOUR, label="waiting for the next batch")
    if profile.has_step:
        ax.bar(steps, compute, width=width, bottom=wait, color=COMPUTE_COLOUR, label="your step (compute)")
    share = profile.data_wait_share
    title = (
        f"{profile.verdict}: {share.value:.0%} of the time waits for data"
        if share is not None
        else "no step given: every bar is the wait for a batch"
    )
    ax.set_title(title, loc="left", fontsize=9)
    ax.set_xlabel("step (after warm-up)")
    ax.set_ylabel("ms")
    style_axes(ax)
    if profile.batches:
        axes_key_above(fig, [ax])
    return fig


def stage_split_table(profile: LoaderProfile) -> pd.DataFrame:
    """One row per stage of a DataLoader's batch: median, min and max milliseconds, and what each is."""
    columns = ["stage", "what", "median_ms", "min_ms", "max_ms"]
    split = profile.stages
    if split is None:
        return pd.DataFrame(columns=columns)
    records = [
        {
            "stage": name,
            "what": STAGE_TITLES[name],
            "median_ms": spread.median * 1e3,
            "min_ms": spread.min * 1e3,
            "max_ms": spread.max * 1e3,
        }
        for name, spread in split.stages.items()
    ]
    measured = "main process's wait" if split.workers == 0 else "batch latency, worker start to main process"
    records.append(
        {
            "stage": "measured",
            "what": measured,
            "median_ms": split.measured.median * 1e3,
            "min_ms": split.measured.min * 1e3,
            "max_ms": split.measured.max * 1e3,
        }
    )
    return pd.DataFrame.from_records(records, columns=columns)


def stage_split_figure(profile: LoaderProfile) -> Figure:
    """Where a batch's time goes, stage by stage (one stacked bar), beside the time measured around it."""
    fig = new_figure(width=8.0, height=2.2)
    ax = fig.add_subplot(1, 1, 1)
    split = profile.stages
    if split is None:
        ax.set_title("no stages: profile a torch DataLoader to see them", fontsize=9)
        style_axes(ax)
        return fig
    left = 0.0
    for name in STAGE_NAMES:
        spread = split.stages.get(name)
        if spread is None or name == "h2d":
            continue
        ax.barh(0, spread.median * 1e3, left=left, color=STAGE_COLOURS[name], label=STAGE_TITLES[name])
        left += spread.median * 1e3
    measured = split.measured
    ax.barh(
        1,
        measured.median * 1e3,
        color="none",
        edgecolor=NEUTRAL_INK,
        xerr=[[(measured.median - measured.min) * 1e3], [(measured.max - measured.median) * 1e3]],
        ecolor=NEUTRAL_INK,
        capsize=3,
    )
    ax.set_yticks([0, 1], ["stages", "measured"])
    ax.invert_yaxis()
    ax.set_xlabel("median ms per batch")
    workers = "num_workers=0" if split.workers == 0 else f"{split.workers} workers"
    busy = f", workers busy {split.worker_busy_share:.0%} of the time" if split.worker_busy_share is not None else ""
    ax.set_title(f"{workers}{busy}", loc="left", fontsize=9)
    style_axes(ax)
    axes_key_above(fig, [ax], columns=3)
    return fig


def sweep_table(result: SweepResult) -> pd.DataFrame:
    """One row per setting of a sweep, with its figures, errors and the recommended one marked."""
    frame = result.to_frame()
    empty = [c for c in ("samples_per_s", "verdict") if c in frame.columns and frame[c].isna().all()]
    return frame.drop(columns=empty)


def sweep_figure(result: SweepResult) -> Figure:
    """A bar per setting: samples/s (or batches/s), the recommended one outlined, failed ones marked in red."""
    settings = list(result.settings)
    fig = new_figure(width=8.0, height=0.8 + 0.32 * max(len(settings), 2))
    rate_ax, memory_ax = fig.subplots(1, 2, width_ratios=(3, 1), sharey=True)
    by_samples = all(s.samples_per_s is not None for s in settings if s.ok) and any(s.ok for s in settings)
    for i, s in enumerate(settings):
        if not s.ok:
            rate_ax.text(0, i, " failed: " + s.error[:60], va="center", color=PROBLEM_RED, fontsize=7)
            continue
        value = s.samples_per_s if by_samples else s.batches_per_s
        chosen = s is result.recommended
        rate_ax.barh(
            i,
            value,
            color=COMPUTE_COLOUR if chosen else "#aec7e8",
            edgecolor=NEUTRAL_INK,
            linewidth=1.5 if chosen else 0.5,
        )
        rate_ax.text(
            value, i, f" {value:,.0f}" + ("  recommended" if chosen else ""), va="center", color=NEUTRAL_INK, fontsize=7
        )
        memory_ax.barh(i, s.peak_rss_bytes / 2**20, color="#c7c7c7")
    rate_ax.set_yticks(range(len(settings)), [s.name() for s in settings], fontsize=7)
    rate_ax.invert_yaxis()
    rate_ax.set_xlabel("samples/s" if by_samples else "batches/s")
    rate_ax.set_title("each setting (first batch excluded)", loc="left", fontsize=9)
    memory_ax.set_xlabel("peak RSS MiB")
    for ax in (rate_ax, memory_ax):
        style_axes(ax)
    return fig


def profile_blocks(profiles: Iterable[LoaderProfile]) -> list[Block]:
    """The "Your loader" section: the verdict in words and each step's wait and compute (with a step),
    where a DataLoader's batch spends its time, then every profile side by side."""
    found = list(profiles)
    blocks: list[Block] = []
    for profile in found:
        if profile.has_step:
            blocks.append(note(f"{profile.label or profile.name}: {profile.verdict_text()}"))
            blocks.append(figure(loop_figure(profile), "each step's wait for data and its compute"))
        if profile.stages is not None:
            blocks.append(table(styled(stage_split_table(profile)), f"{profile.label or profile.name}, by stage"))
            blocks.append(figure(stage_split_figure(profile), "where a batch's time goes"))
    if any(is_io_only(p) for p in found):
        blocks.append(
            note(
                f"{OURS_LABEL}: your first batches saved once as storage files and streamed back, so it "
                "shows how fast prepared batches could be delivered, not your dataset's work done "
                "faster."
            )
        )
    blocks += [table(styled(profile_table(found))), figure(profile_figure(found), "your loader's profile")]
    return blocks


def sweep_blocks(result: SweepResult) -> list[Block]:
    """The tuning section: the recommended setting and why, every setting, and the chart."""
    head = f"Recommended: {result.reason}" if result.recommended is not None else result.reason
    if result.cancelled:
        head += " (the sweep was cancelled: settings it did not reach are not shown)"
    blocks: list[Block] = [note(head)]
    stopped = sum(len(s.stopped_workers) for s in result.settings)
    if stopped:
        blocks.append(note(f"{stopped} worker processes were still running after their setting and were stopped."))
    return [*blocks, table(styled(sweep_table(result))), figure(sweep_figure(result), "sweep of loader settings")]
