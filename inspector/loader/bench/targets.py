"""The loader's targets as ``Measurement`` records (each printed with PASS or MISS), from benchmark results.

Throughput shares are of the single-thread memcpy at the largest size measured (what memory
sustains): at least 0.20x at 1-64 MiB and 0.30x at 256 MiB; ours at least 10x ``DataLoader`` on
the many-leaf ``steps`` layout and 1.5x on the ``columnar`` one; at 1 MiB (steps) at least 1.0x
a synchronous ``FileStorage.load``; at 64 MiB (steps) at least 0.5x a warm memcpy of the same
bytes; no corrupt delivery; at most 5 µs per leaf; start-up at most 0.5 s plus the payload at
2 GB/s; one small load at most 3x a bare pipe round trip.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from inspector._bench import Measurement


def throughput_targets(rows: Sequence[Any]) -> list[Measurement]:
    """Per layout and size: share of memcpy and ratio to DataLoader; plus corrupt deliveries."""
    by = {(r.layout, r.size_mb, r.method): r for r in rows}
    memcpy = [r for r in rows if r.method == "memcpy"]
    if not memcpy:
        raise ValueError("These rows have no memcpy baseline; run bench.run with its default methods")
    largest = max(r.size_mb for r in memcpy)
    dram = max(r.mb_s for r in memcpy if r.size_mb == largest)
    found = []
    for (layout, size, method), ours in sorted(by.items()):
        if method != "ours":
            continue
        goal = 0.30 if size >= 256 else 0.20
        share = ours.mb_s / dram
        found.append(
            Measurement(
                "loader",
                f"{layout} {size:g} MiB throughput",
                ours.mb_s,
                "MiB/s",
                f"memcpy ({largest:g} MiB, one thread)",
                dram,
                share,
                "of memcpy",
                f">= {goal:.2f}x",
                share >= goal,
                _spread(ours),
            )
        )
        loader = by.get((layout, size, "dataloader"))
        if loader is not None:
            want = 10.0 if layout == "steps" else 1.5
            ratio = ours.mb_s / loader.mb_s
            found.append(
                Measurement(
                    "loader",
                    f"{layout} {size:g} MiB vs DataLoader",
                    ours.mb_s,
                    "MiB/s",
                    "torch DataLoader, same workers",
                    loader.mb_s,
                    ratio,
                    "DataLoader",
                    f">= {want:g}x",
                    ratio >= want,
                    _spread(ours),
                    _spread(loader),
                )
            )
    for layout, size, method, goal, label in (
        ("steps", 1, "sync", 1.0, "synchronous FileStorage.load"),
        ("steps", 64, "memcpy", 0.5, "warm memcpy, same bytes"),
    ):
        ours, peer = by.get((layout, size, "ours")), by.get((layout, size, method))
        if ours is not None and peer is not None:
            ratio = ours.mb_s / peer.mb_s
            found.append(
                Measurement(
                    "loader",
                    f"{layout} {size:g} MiB vs {method}",
                    ours.mb_s,
                    "MiB/s",
                    label,
                    peer.mb_s,
                    ratio,
                    method,
                    f">= {goal:g}x",
                    ratio >= goal,
                    _spread(ours),
                    _spread(peer),
                )
            )
    corrupt = sum(r.corrupt for r in rows if r.method == "ours")
    found.append(Measurement("loader", "corrupt deliveries (ours)", corrupt, "loads", target="0", ok=corrupt == 0))
    return found


def _spread(row: Any) -> tuple[float, float]:
    """(min, max) MiB/s of a row's timed repeats."""
    return (row.mb_s_min, row.mb_s_max)


def versus_sync_target(result: Any) -> Measurement:
    """Ours against a synchronous load, in alternating rounds of one run (``versus``): at least 1x at 1 MiB."""
    low, high = min(result.round_ratios), max(result.round_ratios)
    return Measurement(
        "loader",
        f"{result.layout} {result.size_mb:g} MiB vs sync, interleaved rounds",
        result.ours_mb_s.median,
        "MiB/s",
        "synchronous FileStorage.load, same rounds",
        result.sync_mb_s.median,
        result.ratio,
        f"sync (median of {len(result.round_ratios)} rounds: {low:.2f}-{high:.2f})",
        ">= 1x",
        result.ratio >= 1.0,
        (result.ours_mb_s.min, result.ours_mb_s.max),
        (result.sync_mb_s.min, result.sync_mb_s.max),
    )


def startup_target(startup: Any) -> Measurement:
    """Seconds from a new loader to its first delivered payload, against 0.5 s + payload at 2 GB/s."""
    return Measurement(
        "loader",
        f"start-up incl. first {startup.size_mb:g} MiB load",
        startup.seconds,
        "s",
        target=f"<= {startup.target_s:.2f} s",
        ok=startup.seconds <= startup.target_s,
    )


def leaf_target(microseconds: float) -> Measurement:
    return Measurement("loader", "cost per leaf", microseconds, "µs", target="<= 5 µs", ok=microseconds <= 5)


def latency_target(result: Any) -> Measurement:
    """One small load's round trip against a bare pipe round trip measured in the same run (at most 3x)."""
    return Measurement(
        "loader",
        f"small load ({result.payload_bytes} B) round trip",
        result.loader_us.median,
        "µs",
        "multiprocessing pipe round trip",
        result.pipe_us.median,
        result.ratio,
        "pipe round trip",
        "<= 3x",
        result.ratio <= 3.0,
        (result.loader_us.min, result.loader_us.max),
        (result.pipe_us.min, result.pipe_us.max),
    )


def waiting_targets(rows: Sequence[Any], planned: Sequence[Any]) -> dict[str, str]:
    """The targets of ``throughput_targets(rows)`` whose inputs are not final yet, each with what it waits for.

    ``planned`` holds the run's cells (``time_left.Cell``); a target is final once every planned cell
    it reads has been measured: its own layout and size for ours and the baseline it compares with,
    and, for a share of memcpy, the memcpy at the largest size the run will measure.
    """
    done = {(r.layout, r.size_mb, r.method) for r in rows}
    left = {(c.layout, c.size_mb, c.method) for c in planned} - done
    if not left:
        return {}
    label = {"memcpy": "memcpy", "dataloader": "DataLoader", "sync": "the synchronous load", "ours": "ours"}
    memcpy_sizes = [c.size_mb for c in planned if c.method == "memcpy"]
    largest = max(memcpy_sizes, default=None)

    def missing(cells: list[tuple[str, float, str]]) -> str:
        gone = [f"{label.get(m, m)} at {layout} {size:g} MiB" for layout, size, m in cells if (layout, size, m) in left]
        return "waits for " + ", ".join(gone) if gone else ""

    waiting = {}
    for layout, size in {(r.layout, r.size_mb) for r in rows if r.method == "ours"}:
        dram = [(c.layout, c.size_mb, "memcpy") for c in planned if c.method == "memcpy" and c.size_mb == largest]
        checks = {
            f"{layout} {size:g} MiB throughput": [(layout, size, "ours"), *dram],
            f"{layout} {size:g} MiB vs DataLoader": [(layout, size, "ours"), (layout, size, "dataloader")],
            f"{layout} {size:g} MiB vs sync": [(layout, size, "ours"), (layout, size, "sync")],
            f"{layout} {size:g} MiB vs memcpy": [(layout, size, "ours"), (layout, size, "memcpy")],
        }
        for name, cells in checks.items():
            why = missing(cells)
            if why:
                waiting[name] = why
    ours_left = [cell for cell in left if cell[2] == "ours"]
    if ours_left:
        waiting["corrupt deliveries (ours)"] = f"waits for {len(ours_left)} more cells of ours"
    return waiting
