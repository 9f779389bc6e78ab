"""``inspector bench loader|dispatch|rpc``: an engine part against its baselines, in one run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from inspector.cli._common import progress_bar


def add_parser(verbs: Any) -> None:
    bench = verbs.add_parser("bench", help="measure an engine part against its baselines in one run")
    bench.add_argument("part", choices=("loader", "dispatch", "rpc"))
    bench.add_argument("--out", metavar="CSV", help="also write every measured row to this CSV file")
    bench.add_argument("--plot", metavar="PNG", help="also draw the results into this PNG file")
    bench.add_argument("--sizes", default="1,16,64", help="loader: payload sizes in MiB (default 1,16,64)")
    bench.add_argument("--workers", default="2", help="loader: worker counts (default 2)")
    bench.add_argument("--layouts", default="steps,columnar", help="loader: steps and/or columnar")
    bench.add_argument("--repeats", type=int, default=3, help="loader: repeats per cell (default 3)")
    bench.add_argument("--device", default=None, help="loader: deliver to this device, e.g. cuda")


def _numbers(text: str, kind: type) -> list[Any]:
    try:
        return [kind(item) for item in text.split(",") if item.strip()]
    except ValueError:
        raise ValueError(f"expected comma-separated {kind.__name__}s, got {text!r}") from None


def run(args: argparse.Namespace) -> int:
    try:
        rows, measurements = _run_part(args)
    except ValueError as exc:
        print(f"inspector bench: {exc}", file=sys.stderr)
        return 2
    if args.out:
        import csv

        with open(args.out, "w", newline="", encoding="utf-8") as file:
            writer = csv.DictWriter(file, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    if args.plot:
        from inspector.views._figures import figure_to_png

        Path(args.plot).write_bytes(figure_to_png(_figure(args.part, rows)))
    for measurement in measurements:
        print(measurement.line())
    return 0 if all(m.ok for m in measurements) else 1


def _run_part(args: argparse.Namespace) -> tuple[list[dict[str, Any]], list[Any]]:
    if args.part == "dispatch":
        import inspector.examples  # noqa: F401
        from inspector.dispatch.bench import hot_path
        from inspector.dispatch.torch_sdpa.bench import measure as sdpa_measure

        measurements = [*hot_path("attention", progress=progress_bar), *sdpa_measure(progress=progress_bar)]
        return [m.as_dict() for m in measurements], measurements
    if args.part == "rpc":
        from inspector.rpc.bench import measure

        measurements = measure(progress=progress_bar)
        return [m.as_dict() for m in measurements], measurements
    from inspector.loader.bench import run as run_loader
    from inspector.loader.targets import throughput_targets

    bench_rows = run_loader(sizes_mb=_numbers(args.sizes, float), workers=_numbers(args.workers, int),
                            layouts=[x.strip() for x in args.layouts.split(",") if x.strip()],
                            repeats=args.repeats, device=args.device, progress=progress_bar)
    return [row.as_dict() for row in bench_rows], throughput_targets(bench_rows)


def _figure(part: str, rows: list[dict[str, Any]]) -> Any:
    if part == "loader":
        from inspector.views.loader import throughput_by_size_figure

        return throughput_by_size_figure(rows)
    from inspector.views.bench import measurements_figure

    return measurements_figure(rows, title=f"inspector bench {part}")
