"""Shared-memory loader throughput against the usual alternatives, all measured in one run.

    python benchmarks/loader.py [--quick] [--json rows.json]

Two workers, page cache hot, two layouts at 1, 16, 64 and 256 MiB: ``steps`` is an RL
trajectory of per-step dicts (four leaves per step, the observations ~110 KiB each: hundreds
to thousands of leaves), ``columnar`` the same bytes as 4 big leaves. Saving is excluded;
a load counts once the callback holds valid arrays.

Shares of memcpy are given two ways: against a warm single-thread memcpy of the same bytes
(which runs from the CPU cache at 1-16 MiB, so that share looks small there), and against the
256 MiB memcpy, which is what memory can sustain. Ratios to each baseline come from the same run.

It also times one small load (1 KiB) round trip against a bare multiprocessing pipe round trip,
and the 1 MiB steps payload against a synchronous load, each pair taking turns in rounds of the
same run (the ratio is the median of the rounds'), and prints every target with PASS or MISS,
and a note when the machine was busy. The run is appended to the benchmark history
(``inspector bench loader --compare``). Then ``loader_peers.py`` compares the loader with
the peer storage loader (``ding_w3``) in one run of the peer script (``--no-peers`` skips it).

Only the standard library is imported at the top: the baselines' worker processes started with
``spawn`` re-import this script.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

SIZES = (1, 16, 64, 256)
WORKERS = 2
LAYOUTS = ("steps", "columnar")


def progress(done: int, total: int, message: str) -> None:
    print(f"  [{done:>2}/{total}] {message}", file=sys.stderr, flush=True)


def table(rows: list, dram: float) -> list[str]:
    by = {(r.layout, r.size_mb, r.method): r for r in rows}
    lines = [
        f"{'layout':<9} {'MiB':>4} {'leaves':>6} {'ours MiB/s':>10} {'spread':>13} {'/memcpy':>8} {'/DRAM':>6} "
        f"{'x sync':>7} {'x mpQueue':>9} {'x DataLoader':>12}  stages ms (read/handoff/build)",
    ]
    for layout in LAYOUTS:
        for size in SIZES:
            ours = by.get((layout, size, "ours"))
            if ours is None:
                continue
            ratio = {m: ours.mb_s / by[(layout, size, m)].mb_s for m in ("sync", "mp_queue", "dataloader", "memcpy")}
            spread = f"{ours.mb_s_min:.0f}-{ours.mb_s_max:.0f}"
            stages = f"{ours.read_ms:.2f}/{ours.handoff_ms:.2f}/{ours.build_ms:.2f}"
            lines.append(
                f"{layout:<9} {size:>4g} {ours.leaves:>6} {ours.mb_s:>10.0f} {spread:>13} {ratio['memcpy']:>8.2f} "
                f"{ours.mb_s / dram:>6.2f} {ratio['sync']:>7.2f} {ratio['mp_queue']:>9.1f} {ratio['dataloader']:>12.1f}"
                f"  {stages}"
            )
    lines.append("")
    lines.append("baselines, MiB/s (median):")
    for layout in LAYOUTS:
        for size in SIZES:
            cells = [by.get((layout, size, m)) for m in ("sync", "mp_queue", "dataloader", "memcpy")]
            if all(cells):
                lines.append(
                    f"  {layout:<9} {size:>4g} MiB  sync {cells[0].mb_s:>7.0f}  mpQueue {cells[1].mb_s:>6.0f}  "
                    f"DataLoader {cells[2].mb_s:>6.0f}  memcpy {cells[3].mb_s:>7.0f}"
                )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 and 16 MiB only (about a minute)")
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--no-peers", action="store_true", help="skip the peer comparison (loader_peers.py)")
    args = parser.parse_args()
    global SIZES
    if args.quick:
        SIZES = (1, 16)

    from inspector.loader import bench
    from inspector.loader.bench.targets import (
        latency_target,
        leaf_target,
        startup_target,
        throughput_targets,
        versus_sync_target,
    )

    started = time.perf_counter()
    load = bench.machine_load()
    settings = {"sizes_mb": list(SIZES), "workers": [WORKERS], "script": "benchmarks/loader.py"}
    measured: list = []  # as each row arrives: Ctrl-C keeps what was measured, as the panel's Cancel does
    try:
        latency = bench.small_load_latency(count=2000, warmup=200, workers=WORKERS)
        rows = bench.run(
            sizes_mb=SIZES,
            workers=(WORKERS,),
            repeats=3,
            layouts=LAYOUTS,
            progress=progress,
            on_row=measured.append,
            keep_history=False,
        )
        startup = bench.measure_startup(size_mb=max(SIZES), workers=WORKERS)
        leaf_us = bench.per_leaf_cost_us(workers=WORKERS)
        versus = bench.versus_sync(1, "steps", WORKERS, rounds=10)
    except KeyboardInterrupt:
        bench.record_run("loader", measured, cancelled=True, settings=settings)
        print(f"\ninterrupted: {len(measured)} rows kept in {bench.history_path()} (marked cancelled)", file=sys.stderr)
        return 130
    dram_rows = [r for r in rows if r.method == "memcpy" and r.size_mb == max(SIZES)]
    dram = max(r.mb_s for r in dram_rows)
    print(f"shared-memory loader, {WORKERS} workers, page cache hot (MB = 2**20 bytes; median of the timed repeats)")
    print(f"DRAM memcpy reference ({max(SIZES):g} MiB, single thread, warm): {dram:.0f} MiB/s\n")
    for line in table(rows, dram):
        print(line)
    rounds = ", ".join(f"{r:.2f}" for r in latency.round_ratios)
    print(
        f"\nsmall load ({latency.payload_bytes} B) round trip: {latency.loader_us} µs; "
        f"bare multiprocessing pipe round trip: {latency.pipe_us} µs; ratio {latency.ratio:.2f}x "
        f"(rounds: {rounds})"
    )
    rounds = ", ".join(f"{r:.2f}" for r in versus.round_ratios)
    print(
        f"1 MiB steps, {WORKERS} workers, taking turns with a synchronous FileStorage.load: ours "
        f"{versus.ours_mb_s} MiB/s, sync {versus.sync_mb_s} MiB/s; {versus.ratio:.2f}x "
        f"(rounds: {rounds})"
    )
    measurements = [
        *throughput_targets(rows),
        versus_sync_target(versus),
        startup_target(startup),
        leaf_target(leaf_us),
        latency_target(latency),
    ]
    print("\ntargets:")
    for measurement in measurements:
        print("  " + measurement.line())
    if load.note():
        print("\n" + load.note())
    bench.record_run("loader", rows, measurements, settings=settings)
    print(f"\n(ran in {time.perf_counter() - started:.0f} s; kept in {bench.history_path()})")
    if args.json:
        with open(args.json, "w") as out:
            json.dump([r.as_dict() for r in rows], out, indent=1)
    if not args.no_peers:  # in the peers' own virtualenv, when there is one (else: how to make it)
        import loader_peers

        print("\n=== loader vs peers ===", flush=True)
        loader_peers.main(["--quick"] if args.quick else [])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
