"""The job's picture on the RPC page and in the report: what differs across ranks, then each part, rank by rank.

Built from a ``JobView`` (``inspector.rpc.gather`` on rank 0, or a file ``JobView.save`` wrote):
the findings in words; the loader figure of every rank (the straggler in red); the SDPA call
signatures with the backend most ranks ran and the ranks that ran another, highlighted; each
rank's loader; the environment keys that differ, by rank, then the keys every rank agrees on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from inspector.rpc._job_compare import environment_keys, shown
from inspector.views._figures import new_figure, style_axes
from inspector.views._rpc_graph import OK_COLOUR, PROBLEM_COLOUR
from inspector.views._tables import styled
from inspector.views.page import Block, figure, note, pre, table

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from pandas.io.formats.style import Styler

    from inspector.rpc import JobEnvironment, JobLoader, JobSdpa, JobView

__all__ = ["environment_tables", "job_blocks", "job_findings_text", "loader_figure", "loader_table", "sdpa_table"]

ROW_HIGHLIGHT = "background-color: rgba(214, 39, 40, 0.18)"
MAX_BARS = 128  # ranks the loader figure draws; more, and the slowest are drawn


def job_findings_text(view: JobView) -> str:
    """The view's findings, one per line, under how it was gathered."""
    head = f"{len(view.records)} of {view.world_size} rank(s) sent their records ({view.how or 'gathered'})."
    found = view.findings()
    return "\n".join([head, *(f"• {line}" for line in found)] if found else [head, "No differences between the ranks."])


def _highlight(frame: pd.DataFrame, column: str) -> Styler:
    def paint(row: pd.Series) -> list[str]:
        return [ROW_HIGHLIGHT if row[column] else ""] * len(row)

    return styled(frame).apply(paint, axis=1)


def sdpa_table(sdpa: JobSdpa) -> Styler:
    """One row per call signature: the backend most ranks ran, those ranks, and the others (highlighted)."""
    records = [
        {
            "call signature": s.signature,
            "backend (most ranks)": s.usual_text,
            "those ranks": ", ".join(map(str, s.usual_ranks)),
            "other ranks ran": "; ".join(f"rank {r}: {'/'.join(b)}" for r, b in s.odd),
            "calls by rank": ", ".join(f"{r}: {n:,}" for r, n in s.calls),
        }
        for s in sdpa.signatures
    ]
    columns = ["call signature", "backend (most ranks)", "those ranks", "other ranks ran", "calls by rank"]
    return _highlight(pd.DataFrame.from_records(records, columns=columns), "other ranks ran")


def loader_table(loader: JobLoader) -> Styler:
    """Each rank's loader in milliseconds, the straggler's row highlighted."""
    frame = loader.to_frame()
    for column in ("batch_s_median", "wait_s_median", "first_batch_s"):
        frame[column.replace("_s", " ms")] = frame.pop(column) * 1e3
    frame["data_wait_share"] = frame["data_wait_share"].map(lambda v: "" if pd.isna(v) else f"{v:.0%}")
    shown_columns = [
        "rank",
        "loader",
        "batches",
        "batch ms_median",
        "wait ms_median",
        "data_wait_share",
        "verdict",
        "first_batch ms",
        "role",
    ]
    frame = frame[shown_columns].rename(
        columns={
            "batch ms_median": "ms per batch (median)",
            "wait ms_median": "wait ms (median)",
            "data_wait_share": "waiting",
            "first_batch ms": "first batch ms",
        }
    )
    return styled(frame).apply(lambda row: [ROW_HIGHLIGHT if row["role"] == "straggler" else ""] * len(row), axis=1)


def loader_figure(loader: JobLoader) -> Figure:
    """Each rank's loader figure (the one the ranks are compared by), the straggler in red."""
    spread = loader.spread
    assert spread is not None
    figures = sorted(spread.figures, key=lambda f: -f[1])[:MAX_BARS]
    figures.sort()
    fig = new_figure(max(4.8, 0.35 * len(figures) + 2.0), 3.4)
    ax = fig.add_subplot()
    colours = [PROBLEM_COLOUR if rank == loader.straggler else OK_COLOUR for rank, _ in figures]
    ax.bar([str(rank) for rank, _ in figures], [value * 1e3 for _, value in figures], color=colours)
    ax.set_xlabel("rank")
    ax.set_ylabel(f"{spread.metric_text} (ms)")
    drawn = f" ({len(figures)} slowest of {len(spread.figures)} ranks)" if len(figures) < len(spread.figures) else ""
    straggler = f"straggler: rank {loader.straggler} (red)" if loader.straggler is not None else "no straggler"
    ax.set_title(f"Loader by rank{drawn}\n{straggler}; slowest / fastest = {spread.ratio:.3g}x", fontsize=9)
    style_axes(ax)
    return fig


def environment_tables(environment: JobEnvironment) -> list[Block]:
    """The keys that differ, value by rank (highlighted), then every key the ranks agree on, once."""
    values, ranks = environment.values, list(environment.values)
    blocks = []
    if environment.differences:
        rows = [
            {"key": d.key, **{f"rank {r}": shown(values[r].get(d.key)) for r in ranks}} for d in environment.differences
        ]
        frame = pd.DataFrame.from_records(rows, columns=["key", *(f"rank {r}" for r in ranks)])
        blocks.append(
            table(styled(frame).apply(lambda row: [ROW_HIGHLIGHT] * len(row), axis=1), "Environment keys that differ")
        )
    differing = set(environment.differing_keys)
    same = [
        {"key": key, "value": shown(values[ranks[0]].get(key))}
        for key in environment_keys(values)
        if key not in differing
    ]
    caption = "The same on every rank" if len(ranks) > 1 else "Environment"
    blocks.append(table(pd.DataFrame.from_records(same, columns=["key", "value"]), caption))
    return blocks


def job_blocks(view: JobView) -> list[Block]:
    """The job's whole picture: findings, loader figure and tables, SDPA table, environment tables."""
    blocks: list[Block] = [pre(job_findings_text(view))]
    if view.sdpa is not None:
        blocks.append(table(sdpa_table(view.sdpa), "SDPA backend by call signature and rank"))
    if view.loader is not None:
        if view.loader.spread is not None:
            blocks.append(figure(loader_figure(view.loader), "loader by rank"))
        blocks.append(table(loader_table(view.loader), "Loader by rank"))
    if view.sdpa is None and view.loader is None:
        blocks.append(note("No rank sent a watch() result or a loader profile: gather(calls, profile) sends them."))
    blocks += environment_tables(view.environment)
    return blocks
