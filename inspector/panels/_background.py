"""Long work off the UI path: a worker thread with a progress bar and a cancel button.

The progress bar and the cancel button show only while a job runs, and the buttons that start
the job (``triggers``) are disabled until it ends, whether it succeeds, fails or is cancelled.

The job function receives ``report(done, total, message)`` (a ``Progress``) and a ``cancelled``
event; it should check the event between steps and raise ``inspector.errors.Cancelled`` (or a
subclass, such as the loader's ``BenchCancelled``) when it is set. Panels pass their completions
through ``Panel.guard`` so a failure there shows in the panel; one that still escapes is logged, never lost. Widget
updates from the thread go through trait assignments, which ipywidgets sends safely from any
thread (see NOTE [ Rendering into Output ]).
"""

from __future__ import annotations

import html
import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from inspector.errors import Cancelled

if TYPE_CHECKING:
    from inspector._bench import Progress

logger = logging.getLogger("inspector.panels")


class BackgroundJob:
    """Runs one job at a time; ``widget`` holds the progress bar, its label and the cancel button.

    ``triggers``: the buttons that start this job; they are disabled while it runs.
    """

    def __init__(self, description: str = "Working", triggers: Sequence[widgets.Button] = ()) -> None:
        self.progress = widgets.IntProgress(
            value=0,
            min=0,
            max=1,
            description=description,
            style={"description_width": "initial"},
            layout=widgets.Layout(display="none"),
        )
        self.label = widgets.HTML(value="")
        self.label.add_class("inspector-job-label")
        self.cancel_button = widgets.Button(
            description="Cancel",
            disabled=True,
            icon="stop",
            tooltip="Stop the running job (what it measured so far is kept)",
            layout=widgets.Layout(display="none", width="auto"),
        )
        self.cancel_button.on_click(lambda _button: self.cancel())
        self.triggers = list(triggers)
        self.widget = widgets.HBox([self.progress, self.cancel_button, self.label])
        self._cancelled = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._active = False  # from start() until the job's result is delivered

    @property
    def running(self) -> bool:
        return self._active

    def start(
        self,
        job: Callable[[Progress, threading.Event], Any],
        on_done: Callable[[Any], None],
        on_error: Callable[[BaseException], None],
    ) -> None:
        """Start ``job`` on a thread; exactly one of ``on_done``/``on_error`` runs when it ends."""
        with self._lock:
            if self._active:
                raise RuntimeError("A job is already running; cancel it or wait for it to finish.")
            self._active = True
            for button in self.triggers:
                button.disabled = True
        self._cancelled.clear()
        self.progress.value, self.progress.max = 0, 1
        self.progress.bar_style = ""
        self.label.value = "starting"
        self._busy(True)

        def run() -> None:
            try:
                try:
                    result = job(self._report, self._cancelled)
                except BaseException as exc:  # delivered to the panel, never lost in a thread
                    self.progress.bar_style = "warning" if isinstance(exc, Cancelled) else "danger"
                    self.label.value = "cancelled" if isinstance(exc, Cancelled) else "failed"
                    self._busy(False)
                    self._deliver(on_error, exc)
                    return
                self.progress.value = self.progress.max
                self.progress.bar_style = "success"
                self.label.value = "done"
                self._busy(False)
                self._deliver(on_done, result)
            finally:  # last, and under the lock, so a new job's disabling is never undone by this one
                with self._lock:
                    self._active = False
                    for button in self.triggers:
                        button.disabled = False

        self._thread = threading.Thread(target=run, name="inspector-job", daemon=True)
        self._thread.start()

    def _busy(self, busy: bool) -> None:
        """Show the progress bar and the cancel button only while a job runs."""
        shown = None if busy else "none"
        self.progress.layout.display = shown
        self.cancel_button.layout.display = shown
        self.cancel_button.disabled = not busy

    def reset(self) -> None:
        """Forget the last job's outcome (its result was invalidated by a later edit)."""
        if not self.running:
            self.label.value = ""

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
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
            return not thread.is_alive()
        return True

    def _report(self, done: int, total: int, message: str = "") -> None:
        self.progress.max = max(total, 1)
        self.progress.value = min(done, self.progress.max)
        self.label.value = html.escape(message)  # progress text quotes the user's settings
