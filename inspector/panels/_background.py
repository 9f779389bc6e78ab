"""Long work off the UI path: a worker thread with a progress bar and a cancel button.

The job function receives ``report(done, total, message)`` (a ``Progress``) and a ``cancelled``
event; it should check the event between steps and raise ``inspector.errors.Cancelled`` (or a
subclass, such as the loader's ``BenchCancelled``) when it is set. Panels pass their completions
through ``Panel.guard`` so a failure there shows in the panel; one that still escapes is logged, never lost. Widget
updates from the thread go through trait assignments, which ipywidgets sends safely from any
thread (see NOTE [ Rendering into Output ]).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

from inspector._bench import Progress
from inspector.errors import Cancelled

logger = logging.getLogger("inspector.panels")


class BackgroundJob:
    """Runs one job at a time; ``widget`` holds the progress bar, its label and the cancel button."""

    def __init__(self, description: str = "Working") -> None:
        self.progress = widgets.IntProgress(value=0, min=0, max=1, description=description)
        self.label = widgets.HTML(value="")
        self.cancel_button = widgets.Button(description="Cancel", disabled=True, icon="stop")
        self.cancel_button.on_click(lambda _button: self.cancel())
        self.widget = widgets.HBox([self.progress, self.cancel_button, self.label])
        self._cancelled = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(
        self,
        job: Callable[[Progress, threading.Event], Any],
        on_done: Callable[[Any], None],
        on_error: Callable[[BaseException], None],
    ) -> None:
        """Start ``job`` on a thread; exactly one of ``on_done``/``on_error`` runs when it ends."""
        if self.running:
            raise RuntimeError("A job is already running; cancel it or wait for it to finish.")
        self._cancelled.clear()
        self.progress.value, self.progress.max = 0, 1
        self.progress.bar_style = ""
        self.label.value = "starting"
        self.cancel_button.disabled = False

        def run() -> None:
            try:
                result = job(self._report, self._cancelled)
            except BaseException as exc:  # delivered to the panel, never lost in a thread
                self.progress.bar_style = "warning" if isinstance(exc, Cancelled) else "danger"
                self.label.value = "cancelled" if isinstance(exc, Cancelled) else "failed"
                self.cancel_button.disabled = True
                self._deliver(on_error, exc)
                return
            self.progress.value = self.progress.max
            self.progress.bar_style = "success"
            self.label.value = "done"
            self.cancel_button.disabled = True
            self._deliver(on_done, result)

        self._thread = threading.Thread(target=run, name="inspector-job", daemon=True)
        self._thread.start()

    def _deliver(self, callback: Callable[[Any], None], value: Any) -> None:
        try:
            callback(value)
        except Exception:
            logger.exception("a background job's completion callback failed")
            self.progress.bar_style = "danger"
            self.label.value = "failed while showing the result (see the log)"

    def cancel(self) -> None:
        self._cancelled.set()
        self.label.value = "cancelling"

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the job ends (for tests and scripts); True when it has ended."""
        if self._thread is not None:
            self._thread.join(timeout)
        return not self.running

    def _report(self, done: int, total: int, message: str = "") -> None:
        self.progress.max = max(total, 1)
        self.progress.value = min(done, self.progress.max)
        self.label.value = message
