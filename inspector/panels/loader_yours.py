"""The Loader panel's "Your loader" and "Tuning" parts: profile the user's loader, show a loop, sweep settings.

The base of ``LoaderPanel``, which builds the widgets these methods fill (``profile_job``,
``profile_html``, ``profile_out``, ``sweep_job``, ``sweep_html``, ``sweep_out``); kept apart so each
module stays small.
"""

from __future__ import annotations

import html
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from inspector.errors import Cancelled
from inspector.loader import LoaderProfile, UnsupportedPayloadError
from inspector.loader.bench import SweepCancelled, SweepResult, profile_inspector_loader, profile_loader, sweep_loader
from inspector.panels._base import Panel
from inspector.panels._guard import error_html
from inspector.views.loader import LoaderSection, LoaderState

if TYPE_CHECKING:
    import ipywidgets as widgets

    from inspector._bench import Progress
    from inspector.panels._background import BackgroundJob


class YourLoader(Panel[LoaderState]):
    """Profile your loader (the verdict, the stages, the I/O-only comparison) and tune it, on background jobs."""

    profiles: list[LoaderProfile]
    sweep_result: SweepResult | None
    profile_job: BackgroundJob
    profile_html: widgets.HTML
    profile_out: widgets.Output
    sweep_job: BackgroundJob
    sweep_html: widgets.HTML
    sweep_out: widgets.Output

    def profile(
        self,
        loader: object,
        *,
        step: Any = None,
        batches: int = 30,
        warmup: int = 2,
        compare: bool = True,
        wait: bool = False,
    ) -> None:
        """Profile ``loader`` (a DataLoader or any iterable) on a background job, running ``step`` (your training
        step) on each batch for the verdict; then what the inspector's loader delivers for its first batches,
        saved (``compare``, I/O only)."""
        self.ensure_idle(self.profile_job, "A profile is already running.", "profile again")
        if not hasattr(loader, "__iter__"):
            raise TypeError(f"profile() needs an iterable such as a DataLoader, got {type(loader).__name__}")
        self.profiles = []
        self.profile_html.value = ""

        if step is not None and not callable(step):
            raise TypeError(f"step must be a callable taking one batch (your training step), got {type(step).__name__}")

        def job(report: Progress, cancelled: threading.Event) -> list[LoaderProfile]:
            found = [
                profile_loader(loader, step=step, batches=batches, warmup=warmup, cancel=cancelled, progress=report)
            ]
            self._show_profiles(found)
            if compare:
                try:
                    found.append(
                        profile_inspector_loader(
                            loader, batches=batches, warmup=warmup, cancel=cancelled, progress=report
                        )
                    )
                except UnsupportedPayloadError as exc:  # the verdict stands; only the I/O-only comparison is off
                    self.profile_html.value = html.escape(
                        f"No I/O-only comparison: your batches cannot be saved as storage files ({exc.where} is "
                        f"{exc.type_name}: {exc.reason})."
                    )
            return found

        def failed(exc: BaseException) -> None:
            self.profile_html.value = "profiling was cancelled" if isinstance(exc, Cancelled) else error_html(exc)

        self.start_job(self.profile_job, job, self._show_profiles, failed, wait=wait)

    def show_profile(self, profile: LoaderProfile) -> None:
        """Add a profile made elsewhere (``LoopProfiler(...).result()`` from your own loop) to "Your loader"."""
        if not isinstance(profile, LoaderProfile):
            raise TypeError(f"show_profile() takes a LoaderProfile (profiler.result()), got {type(profile).__name__}")
        self._show_profiles([*self.profiles, profile])

    # -- tuning --------------------------------------------------------------------------------
    def sweep(
        self,
        make_loader: Any,
        /,
        *,
        step: Any = None,
        batches: int = 30,
        warmup: int = 2,
        time_cap_s: float = 20.0,
        wait: bool = False,
        **grid: Sequence[Any],
    ) -> None:
        """Run ``sweep_loader(make_loader, **grid)`` on a background job (progress, Cancel keeps what it measured)."""
        self.ensure_idle(self.sweep_job, "A sweep is already running.", "sweep again")
        if not callable(make_loader):
            raise TypeError(
                f"sweep() needs a function that builds a loader from a setting, got {type(make_loader).__name__}"
            )
        from inspector.loader.bench.sweep import settings_of

        settings_of(grid)  # a bad grid is refused here, before the job starts
        self.sweep_html.value = ""

        def job(report: Progress, cancelled: threading.Event) -> SweepResult:
            return sweep_loader(
                make_loader,
                step=step,
                batches=batches,
                warmup=warmup,
                time_cap_s=time_cap_s,
                cancel=cancelled,
                progress=report,
                **grid,
            )

        def failed(exc: BaseException) -> None:
            if isinstance(exc, SweepCancelled):
                self._show_sweep(exc.result)
                self.sweep_html.value = f"cancelled after {len(exc.result.settings)} settings (they are kept)"
            else:
                self.sweep_html.value = error_html(exc)

        self.start_job(self.sweep_job, job, self._show_sweep, failed, wait=wait)

    def _show_sweep(self, result: SweepResult) -> None:
        self.sweep_result = result
        self.show(self.sweep_out, self.page(self.state()), LoaderSection.SWEEP)

    def _show_profiles(self, profiles: list[LoaderProfile]) -> None:
        self.profiles = list(profiles)
        if not profiles:
            return
        self.show(self.profile_out, self.page(self.state()), LoaderSection.PROFILES)
