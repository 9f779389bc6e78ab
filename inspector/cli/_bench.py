"""``inspector bench PART``: an engine part against its baselines, in one run.

The loader's options are checked before anything runs (sizes, where ``--out`` and ``--plot`` go,
the device), so a typo costs a line on stderr and exit 2, not minutes or all the memory. Loader
runs are kept in a history under the user's cache; ``--compare`` prints the last runs side by side.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from typing import Any

from inspector._messages import Message
from inspector.cli._common import UsageError, check_output_path, progress_bar
from inspector.parts import names, part


def add_parser(verbs: Any) -> None:
    bench = verbs.add_parser("bench", help="measure an engine part against its baselines in one run")
    bench.add_argument("part", choices=names())
    bench.add_argument("--out", metavar="CSV", help="also write every measured row to this CSV file")
    bench.add_argument("--plot", metavar="PNG", help="also draw the results into this PNG file")
    bench.add_argument("--sizes", help="loader: payload sizes in MiB (default 1,16,64)")
    bench.add_argument("--workers", help="loader: worker counts (default 2)")
    bench.add_argument("--layouts", help="loader: steps and/or columnar (default both)")
    bench.add_argument("--repeats", type=int, help="loader: repeats per cell (default 3)")
    bench.add_argument("--device", default=None, help="loader: deliver to this device, e.g. cuda")
    bench.add_argument(
        "--compare",
        nargs="?",
        type=int,
        const=5,
        default=None,
        metavar="N",
        help="loader: print the last N runs (default 5) side by side, baselines and targets included, "
        "instead of running (with --plot: the last two overlaid in one chart)",
    )
    bench.add_argument("--label", default=None, help="loader: a label kept with this run, shown by --compare")


def _numbers(text: str, kind: type, what: str) -> list[Any]:
    try:
        values = [kind(item) for item in text.split(",") if item.strip()]
    except ValueError:
        raise UsageError(f"--{what} expects comma-separated {kind.__name__}s, got {text!r}") from None
    if not values:
        raise UsageError(Message(f"--{what} is empty", next_step="pass values such as 1,16,64").one_line())
    return values


# The loader's own options, with their defaults: other parts refuse them rather than ignore them.
LOADER_DEFAULTS = {
    "sizes": "1,16,64",
    "workers": "2",
    "layouts": "steps,columnar",
    "repeats": 3,
    "device": None,
    "label": None,
}


def _check_options(args: argparse.Namespace) -> None:
    """Refuse, before any work, options the part does not take and output paths that cannot be written."""
    if args.part != "loader":
        given = [name for name in LOADER_DEFAULTS if getattr(args, name) is not None]
        if given:
            headline = f"--{given[0]} is a loader option; inspector bench {args.part} takes only --out and --plot"
            step = f"drop --{given[0]}, or run inspector bench loader"
            raise UsageError(Message(headline, next_step=step).one_line())
    else:
        for name, default in LOADER_DEFAULTS.items():
            if getattr(args, name) is None:
                setattr(args, name, default)
    if args.out is not None:
        check_output_path(args.out, "--out", "bench.csv")
    if args.plot is not None:
        check_output_path(args.plot, "--plot", "bench.png")


def run(args: argparse.Namespace) -> int:
    if args.compare is not None:
        return _compare(args)
    _check_options(args)
    rows, measurements, note, keep = _run_part(args)
    if args.out:
        from inspector._files import atomic_write_text
        from inspector.cli._loader_results import csv_text

        atomic_write_text(args.out, csv_text(rows))  # `inspector report --loader-results` reads it back
    if args.plot:
        from inspector._files import atomic_write
        from inspector.views._figures import figure_to_png

        png = figure_to_png(_figure(args.part, rows))
        atomic_write(args.plot, lambda file: file.write(png), mode=0o644)
    for measurement in measurements:
        print(measurement.line())
    if note:
        print(note)
    if keep is not None:  # last: what the user asked for is written whatever happens to the history
        _warn(keep())
    return 0 if all(m.ok for m in measurements) else 1


Keep = Callable[[], "str | None"]  # keeps the run in the history; None once kept, else why not


def _warn(problem: str | None) -> None:
    if problem:
        print(f"inspector bench: warning: {problem}", file=sys.stderr)


def _run_part(args: argparse.Namespace) -> tuple[list[dict[str, Any]], list[Any], str, Keep | None]:
    if args.part == "loader":  # the one part with options of its own
        return _run_loader(args)
    if args.part == "dispatch":
        from inspector.demos import load_demos

        load_demos(True)  # the attention demo is what the hot path is measured on (never over your family)
    module, _, function = part(args.part).bench.partition(":")
    measurements = getattr(importlib.import_module(module), function)(progress=progress_bar)
    return [m.as_dict() for m in measurements], measurements, "", None


def _run_loader(args: argparse.Namespace) -> tuple[list[dict[str, Any]], list[Any], str, Keep]:
    from inspector.loader import CudaUnavailableError
    from inspector.loader.bench import check_sizes, keep_run, machine_load, small_load_latency
    from inspector.loader.bench import run as run_loader
    from inspector.loader.bench.history import check_label
    from inspector.loader.bench.targets import latency_target, throughput_targets
    from inspector.loader.pool.cuda import resolve_device

    try:
        sizes = check_sizes(_numbers(args.sizes, float, "sizes"))
    except ValueError as exc:
        raise UsageError(f"--sizes {args.sizes!r}: {exc}") from None
    workers = _numbers(args.workers, int, "workers")
    if any(w < 1 for w in workers):
        raise UsageError(f"--workers must be positive, got {args.workers!r}")
    if args.repeats < 1:
        raise UsageError(f"--repeats must be positive, got {args.repeats}")
    layouts = [x.strip() for x in args.layouts.split(",") if x.strip()]
    try:
        resolve_device(args.device)
    except CudaUnavailableError as exc:
        headline = f"--device {args.device}: no CUDA GPU here ({exc.reason})"
        raise UsageError(Message(headline, next_step="drop --device").one_line()) from None
    except ValueError as exc:
        raise UsageError(f"--device {args.device!r}: {exc}") from None
    label = args.label or ""
    try:
        check_label(label)
    except ValueError as exc:
        raise UsageError(f"--label {label!r}: {exc}") from None
    settings = {
        "sizes_mb": sizes,
        "workers": workers,
        "layouts": layouts,
        "repeats": args.repeats,
        "device": args.device or "cpu",
    }
    measured: list[Any] = []  # as each row arrives, so Ctrl-C keeps what was measured (the panel's Cancel does too)
    try:
        bench_rows = run_loader(
            sizes_mb=sizes,
            workers=workers,
            layouts=layouts,
            repeats=args.repeats,
            device=args.device,
            progress=progress_bar,
            on_row=measured.append,
            keep_history=False,
        )
        latency = small_load_latency(count=1000, warmup=100, workers=max(workers))
    except ValueError as exc:
        raise UsageError(str(exc).splitlines()[0]) from None
    except KeyboardInterrupt:
        _warn(keep_run("loader", measured, cancelled=True, settings=settings, label=label))
        raise
    measurements = [*throughput_targets(bench_rows), latency_target(latency)]

    def keep() -> str | None:
        return keep_run("loader", bench_rows, measurements, settings=settings, label=label)

    return [row.as_dict() for row in bench_rows], measurements, machine_load().note(), keep


def _compare(args: argparse.Namespace) -> int:
    if args.part != "loader":
        raise UsageError(f"--compare: only the loader benchmark keeps a history, not {args.part!r}")
    if args.compare < 1:
        raise UsageError(f"--compare needs a positive number of runs, got {args.compare}")
    if args.plot is not None:
        check_output_path(args.plot, "--plot", "compare.png")
    from inspector.loader.bench import HistoryFileError, history_path, read_history, side_by_side
    from inspector.loader.bench.history import run_name

    try:
        runs = read_history("loader", last=args.compare)
    except HistoryFileError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot read the benchmark history {history_path()}: {exc.strerror or exc}") from None
    if not runs:
        skipped = f" ({runs.note()})" if runs.note() else ""
        print(f"no loader runs kept yet in {history_path()}{skipped}; run `inspector bench loader` first")
        return 0
    for i, entry in enumerate(runs):
        env = entry.get("environment", {})
        print(
            f"{run_name(i, entry)} (id {entry.get('id')}): commit {env.get('commit')}, torch {env.get('torch')}, "
            f"{env.get('cpu')} x{env.get('cores')}, gpu {env.get('gpu')}, "
            f"load {_load(env.get('load_average'))}"
        )
    _print_rows(side_by_side(runs, ("layout", "size_mb", "workers", "method"), "mb_s"))
    _print_targets(runs)
    if runs.note():
        print(runs.note())
    if args.plot is not None:
        _plot_overlay(args.plot, runs)
    return 0


def _load(value: Any) -> str:
    return f"{value:.1f}" if isinstance(value, int | float) else str(value)


def _print_rows(table: list[dict[str, Any]]) -> None:
    from inspector.loader.bench import METHOD_LABELS

    names = [k for k in (table[0] if table else {}) if k.startswith("#")]
    print(f"\n{'layout':<9} {'MiB':>6} {'w':>2} {'method':<24}" + "".join(f" {n.split()[0]:>9}" for n in names))
    order = {m: i for i, m in enumerate(METHOD_LABELS)}
    for record in sorted(table, key=lambda r: (r["layout"], r["size_mb"], order.get(r["method"], 99), r["workers"])):
        cells = "".join(f" {record[n]:>9,.0f}" if record[n] is not None else f" {'-':>9}" for n in names)
        label = METHOD_LABELS.get(record["method"], record["method"])
        print(f"{record['layout']:<9} {record['size_mb']:>6g} {record['workers']:>2} {label:<24}{cells}")
    print(
        "\nMiB/s (median of each run's timed repeats), every method with its baselines; a column per run, oldest first"
    )


def _print_targets(runs: list[dict[str, Any]]) -> None:
    from inspector.loader.bench.history import targets_side_by_side

    table = targets_side_by_side(runs)
    if not table:
        return
    print("\ntargets (ours / baseline, measured in the same run):")
    for record in table:
        cells = "; ".join(f"{n.split()[0]} {v}" for n, v in record.items() if n != "measurement" and v)
        print(f"  {record['measurement']}: {cells}")


def _plot_overlay(path: str, runs: list[dict[str, Any]]) -> None:
    from inspector._files import atomic_write
    from inspector.loader.bench.history import run_name
    from inspector.views._figures import figure_to_png
    from inspector.views.loader_history import overlay_figure, overlay_pair

    pair = overlay_pair(runs)
    if pair is None:
        raise UsageError("--plot with --compare needs two kept runs with rows; run `inspector bench loader` again")
    names = [run_name(i, run) for i, run in enumerate(runs) if run in pair]
    png = figure_to_png(overlay_figure(*pair, names=names))
    atomic_write(path, lambda file: file.write(png), mode=0o644)
    print(f"\nwrote {path}: {names[0]} and {names[1]} overlaid")


def _figure(part: str, rows: list[dict[str, Any]]) -> Any:
    if part == "loader":
        from inspector.views.loader import throughput_by_size_figure

        return throughput_by_size_figure(rows)
    from inspector.views.bench import measurements_figure

    return measurements_figure(rows, title=f"inspector bench {part}")
