"""LoaderPanel: benchmark the shared-memory loader, profile and tune your own loader, and watch the workers.

Pick sizes, worker counts, layouts, methods, device and repeats (and a label), then Run:
``bench.run`` goes on a background job (progress bar with the time left, Cancel), and the charts
and the results table redraw as each result arrives; a target shows PASS or MISS only once its
baseline is final, a busy machine is said so, "By workers" appears when several worker counts
ran, and past runs can be compared side by side, two of them overlaid in one chart, and labelled.
"Your loader": ``profile(loader, step=your_step)`` gives the verdict (waits and compute per step,
stage by stage for a DataLoader) and, where its batches can be saved, what the inspector's loader
delivers for them (I/O only); ``show_profile(profiler.result())`` shows a ``LoopProfiler`` from
your own loop; ``sweep(make_loader, num_workers=[...], ...)`` tunes it on a background job with
progress and Cancel. The worker table shows every loader alive in this kernel.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from inspector.errors import Cancelled
from inspector.loader import LoaderProfile, loader_statuses
from inspector.loader.bench import (
    METHOD_LABELS,
    METHODS,
    WORKERLESS,
    BenchRow,
    SweepResult,
    check_sizes,
    run,
)
from inspector.loader.bench.time_left import bench_plan
from inspector.panels._background import BackgroundJob
from inspector.panels._base import PANEL_CLASS, PANEL_CSS, Panel
from inspector.panels._guard import ErrorLine, error_html
from inspector.panels._render import RawHTML
from inspector.panels.loader_history import PastRuns
from inspector.panels.loader_yours import YourLoader
from inspector.views.loader import LoaderSection, LoaderState

if TYPE_CHECKING:
    from inspector._bench import Progress

SIZE_CHOICES = (0.25, 1, 4, 16, 64, 256)
WORKER_CHOICES = (1, 2, 3, 4)
STATUS_INTERVAL_S = 0.5  # how often the worker table refreshes while a benchmark runs
NO_RESULT_YET = "<i>No result yet: pick sizes and workers, then press <b>Run</b>.</i>"


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


class LoaderPanel(YourLoader, PastRuns, Panel[LoaderState]):
    """Loader throughput by size and by worker count, where the time goes, and live worker status."""

    part = "loader"

    def __init__(
        self,
        sizes_mb: Sequence[float] = (1, 16),
        workers: Sequence[int] = (2,),
        layouts: Sequence[str] = ("steps",),
        methods: Sequence[str] = METHODS,
        repeats: int = 2,
    ) -> None:
        super().__init__()
        self.rows: list[BenchRow] = []
        self.profiles: list[LoaderProfile] = []
        self._history: tuple[Any, ...] | None = None
        self._history_note = ""
        self._planned: tuple[Any, ...] = ()
        self._overlay: tuple[str, ...] = ()
        self.sweep_result: SweepResult | None = None
        self._statuses: tuple[Any, ...] = ()
        self.last_error: BaseException | None = None
        self._rows_lock = threading.Lock()
        wide = widgets.Layout(width="220px")
        several = " (shift- or ctrl-click to pick several)"
        self.sizes = widgets.SelectMultiple(
            options=SIZE_CHOICES,
            value=tuple(sizes_mb),
            description="sizes (MiB)",
            rows=len(SIZE_CHOICES),
            layout=wide,
            tooltip="Trajectory sizes to load, in MiB" + several,
        )
        self.workers = widgets.SelectMultiple(
            options=WORKER_CHOICES,
            value=tuple(workers),
            description="workers",
            rows=len(WORKER_CHOICES),
            layout=wide,
            tooltip="Worker process counts to compare" + several,
        )
        self.layouts = widgets.SelectMultiple(
            options=("steps", "columnar"),
            value=tuple(layouts),
            description="layouts",
            rows=2,
            layout=wide,
            tooltip="steps: a list of per-step dicts; columnar: one array per key" + several,
        )
        self.methods = widgets.SelectMultiple(
            options=[(METHOD_LABELS[m], m) for m in METHODS],
            value=tuple(methods),
            description="methods",
            rows=len(METHODS),
            layout=widgets.Layout(width="300px"),
            tooltip="The loaders to time; memcpy is the ceiling" + several,
        )
        devices = [("CPU", "cpu")] + ([("CUDA", "cuda")] if cuda_available() else [])
        self.device = widgets.Dropdown(
            options=devices, value="cpu", description="device", layout=wide, tooltip="Where each batch is delivered"
        )
        self.repeats = widgets.IntSlider(
            value=repeats,
            min=1,
            max=5,
            description="repeats",
            layout=wide,
            tooltip="Timed repeats per cell (the median is shown)",
        )
        self.label = widgets.Text(
            value="",
            description="label",
            placeholder="e.g. before my change",
            layout=wide,
            tooltip="A label kept with this run in the history (plain text)",
        )
        self.run_button = widgets.Button(
            description="Run",
            icon="play",
            button_style="primary",
            layout=widgets.Layout(width="auto"),
            tooltip="Run the benchmark with these choices (worker start-up is excluded)",
        )
        self.run_errors = ErrorLine("run")
        self.run_button.on_click(self.guard_into(self.run_errors, lambda _b: self.run()))
        refresh = widgets.Button(
            description="Refresh workers",
            icon="refresh",
            layout=widgets.Layout(width="auto"),
            tooltip="Redraw the table of loaders alive in this kernel",
        )
        refresh.on_click(self.guard(lambda _b: self.refresh_status()))
        self.job = BackgroundJob("Benchmark", triggers=[self.run_button])
        self.run_html = widgets.HTML()
        self.targets_out = widgets.Output()
        self.sweep_job = BackgroundJob("Sweep")
        self.sweep_html = widgets.HTML()
        self.sweep_out = widgets.Output()
        self.profile_job = BackgroundJob("Profile")
        self.profile_html = widgets.HTML()
        self.profile_out = widgets.Output()
        self.chart_out = widgets.Output()
        self.workers_chart_out = widgets.Output()
        self.stage_out = widgets.Output()
        self.table_out = widgets.Output()
        self.status_out = widgets.Output()
        # The choices, the Run button and their error line share one box.
        self.run_box = widgets.VBox(
            [
                widgets.HBox(
                    [
                        widgets.VBox([self.sizes, self.workers]),
                        widgets.VBox([self.layouts, self.device, self.repeats, self.label]),
                        self.methods,
                    ]
                ),
                widgets.HBox([self.run_button, self.job.widget]),
                self.run_errors.widget,
            ]
        )
        self.run_box.add_class("inspector-loader-run")
        self.charts = charts = widgets.Tab(children=[self.chart_out, self.stage_out])
        charts.titles = ("By size", "Stages")  # "By workers" joins when several worker counts run
        self.widget = widgets.VBox(
            [
                widgets.HTML(PANEL_CSS + "<b>Shared-memory loader</b>: throughput against the usual alternatives"),
                self.status,
                self.errors.widget,
                self.run_box,
                self.run_html,
                charts,
                self.targets_out,
                self.table_out,
                *self._past_runs(wide),
                widgets.HTML(
                    "<b>Your loader</b>: <code>panel.profile(your_dataloader, step=your_step)</code> (or "
                    "<code>inspector.show(loader=...)</code>) says whether your loop waits for data, and shows "
                    "what the inspector's loader delivers for your saved batches (I/O only)"
                ),
                self.profile_job.widget,
                self.profile_html,
                self.profile_out,
                widgets.HTML(
                    "<b>Tuning</b>: <code>panel.sweep(make_loader, num_workers=[0, 2, 4])</code> times each "
                    "setting your function builds and recommends one"
                ),
                self.sweep_job.widget,
                self.sweep_html,
                self.sweep_out,
                widgets.HBox([widgets.HTML("<b>Loaders in this kernel</b>"), refresh]),
                self.status_out,
            ]
        )
        self.widget.add_class("inspector-loader-panel")
        self.widget.add_class(PANEL_CLASS)
        self._render_results()
        self.refresh_status()
        self.set_status("Pick sizes and workers, then Run (start-up of workers is excluded from the numbers).")

    # -- running the benchmark -----------------------------------------------------------------
    def run(
        self,
        *,
        sizes_mb: Sequence[float] | None = None,
        workers: Sequence[int] | None = None,
        layouts: Sequence[str] | None = None,
        methods: Sequence[str] | None = None,
        device: str | None = None,
        repeats: int | None = None,
        wait: bool = False,
    ) -> None:
        """Start a benchmark with the widgets' choices (or the ones given here) on a background job."""
        # refused before touching the results the running job is still filling
        self.ensure_idle(self.job, "A benchmark is already running.", "Run again")
        settings: dict[str, Any] = {
            "sizes_mb": tuple(sorted(sizes_mb if sizes_mb is not None else self.sizes.value)),
            "workers": tuple(sorted(workers if workers is not None else self.workers.value)),
            "layouts": tuple(layouts if layouts is not None else self.layouts.value),
            "methods": tuple(methods if methods is not None else self.methods.value),
            "device": None if (device or self.device.value) == "cpu" else (device or self.device.value),
            "repeats": repeats if repeats is not None else self.repeats.value,
        }
        for name in ("sizes_mb", "workers", "layouts", "methods"):
            if not settings[name]:
                raise ValueError(f"Pick at least one of {name.replace('_mb', '')} before running.")
        settings["label"] = self.label.value.strip()
        planned_methods = [*settings["methods"], *(["h2d"] if settings["device"] else [])]
        planned = tuple(
            bench_plan(
                settings["layouts"], check_sizes(settings["sizes_mb"]), settings["workers"], planned_methods, WORKERLESS
            )
        )
        with self._rows_lock:
            self.rows = []
            self._planned = planned
        self.last_error = None
        self.run_html.value = ""
        self._render_results()
        started = time.perf_counter()

        def job(report: Progress, cancelled: threading.Event) -> list[BenchRow]:
            watcher = threading.Thread(target=self._watch_status, args=(cancelled,), daemon=True)
            watcher.start()
            try:  # a cancel raises BenchCancelled (a Cancelled): what it measured stays in self.rows and the history
                return run(progress=report, on_row=self._on_row, cancel=cancelled, **settings)
            finally:
                with self._rows_lock:
                    self._planned = ()  # the run is over: every target shown is final (or will not be)
                self._render_results()
                self._refresh_or_show()

        def done(rows: list[BenchRow]) -> None:
            self.set_status(f"{len(rows)} results in {time.perf_counter() - started:.0f} s")
            self.refresh_status()

        self.set_status("running…")
        self.start_job(self.job, job, done, self._failed, wait=wait)

    def _on_row(self, row: BenchRow) -> None:
        with self._rows_lock:
            self.rows.append(row)
        self._render_results()

    def _failed(self, exc: BaseException) -> None:
        self.last_error = exc
        if isinstance(exc, Cancelled):
            self.set_status(f"cancelled after {len(self.rows)} results")
        else:  # rendered here: the guard has already returned from the button callback
            self.run_html.value = error_html(exc)
            self.set_status("the benchmark failed")
        self.refresh_status()

    def _watch_status(self, cancelled: threading.Event) -> None:
        while self.job.running and not cancelled.is_set() and self._refresh_or_show():
            time.sleep(STATUS_INTERVAL_S)

    def _refresh_or_show(self) -> bool:
        """Refresh the worker table from a background thread; on failure show why (not ``guard``:
        a success must not clear an error the user has not read yet)."""
        try:
            self.refresh_status()
        except Exception as exc:
            self.errors.show(exc)
            return False
        return True

    # -- rendering -----------------------------------------------------------------------------
    def state(self) -> LoaderState:
        """What this panel shows now, as the page's state."""
        with self._rows_lock:
            rows = tuple(self.rows)
            planned = self._planned
        return LoaderState(
            rows,
            tuple(self.profiles),
            self._history,
            self._statuses,
            self._history_note,
            planned,
            self._overlay,
            self.sweep_result,
        )

    def _render_results(self) -> None:
        current = self.page(self.state())
        self._show_workers_tab(LoaderSection.BY_WORKERS in current)
        for key, out in (
            (LoaderSection.BY_SIZE, self.chart_out),
            (LoaderSection.BY_WORKERS, self.workers_chart_out),
            (LoaderSection.STAGES, self.stage_out),
            (LoaderSection.TARGETS, self.targets_out),
            (LoaderSection.RESULTS, self.table_out),
        ):
            if key in current:
                self.show(out, current, key)
            elif out is self.targets_out:
                self.put(out)
            else:
                self.put(out, RawHTML(NO_RESULT_YET))  # nothing measured yet: a note, not an empty chart

    def _show_workers_tab(self, wanted: bool) -> None:
        """Show the "By workers" tab only when the benchmark ran several worker counts."""
        has = self.workers_chart_out in self.charts.children
        if wanted == has:
            return
        selected = self.charts.selected_index
        if wanted:
            self.charts.children = (self.chart_out, self.workers_chart_out, self.stage_out)
            self.charts.titles = ("By size", "By workers", "Stages")
        else:
            self.charts.children = (self.chart_out, self.stage_out)
            self.charts.titles = ("By size", "Stages")
        self.charts.selected_index = 0 if selected is None else min(selected, len(self.charts.children) - 1)

    def refresh_status(self) -> None:
        """Redraw the table of live loaders and their workers."""
        self._statuses = tuple(loader_statuses())
        if not self._statuses:
            self.put(self.status_out, "No loader is running in this kernel.")
            return
        self.show(self.status_out, self.page(self.state()), LoaderSection.LOADERS)

    def sync(self) -> None:
        self._statuses = tuple(loader_statuses())
