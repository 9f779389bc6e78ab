"""The shape every panel shares: a root widget, a status line, guarded callbacks, background jobs,
sections redrawn only when they change, and static HTML."""

from __future__ import annotations

import html
import importlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import ipywidgets as widgets

from inspector import parts
from inspector._messages import Message
from inspector.panels._guard import ErrorLine, guarded
from inspector.panels._render import render_into, render_section

if TYPE_CHECKING:
    from inspector.panels._background import BackgroundJob
    from inspector.views.page import Page

F = TypeVar("F", bound=Callable[..., Any])
S = TypeVar("S")  # the panel's state: its part's page state

# NOTE [ Labels are never cut ]
# ipywidgets gives description labels and buttons a fixed width and cuts what does not fit with
# an ellipsis ("Run and comp…"). In a panel, labels and buttons are at least as wide as their
# text; the widths panels set are the usual size, not a limit.
PANEL_CSS = """
<style>
.inspector-status { font-size: 0.9em; opacity: 0.85; }
.inspector-error-box { border-left: 3px solid #d62728; padding: 4px 8px; margin: 4px 0; }
/* Output areas make their <pre> inherit the page font (Voila: sans-serif) and the widget's line
   height (28 px), and break words anywhere: a trace stays monospace, single-spaced, whole words,
   its long lines scrolling sideways. */
pre.inspector-pre, .jp-OutputArea-output pre.inspector-pre, .widget-html-content pre.inspector-pre {
  font-family: var(--jp-code-font-family, ui-monospace, "DejaVu Sans Mono", monospace);
  font-size: 0.85em; line-height: 1.3; white-space: pre; word-break: normal; overflow-wrap: normal;
  overflow-x: auto; }
pre.inspector-error-details, .jp-OutputArea-output pre.inspector-error-details,
.widget-html-content pre.inspector-error-details {
  font-size: 0.85em; line-height: 1.3; white-space: pre-wrap; word-break: normal; overflow-wrap: normal;
  margin: 2px 0; }
.inspector-panel .widget-label, .inspector-panel .jupyter-button { min-width: max-content; }
.inspector-panel .widget-toggle-buttons .widget-toggle-button { min-width: max-content; }
/* NOTE [ Rows that fit ]: a row of controls never runs past its tab (at 950 px with the file browser open,
   or in an 800 px window): what does not fit moves to the next line. A refusal beside a toggle takes the
   rest of its row, or a row of its own, single-spaced. */
.inspector-panel .widget-hbox { flex-wrap: wrap; row-gap: 2px; }
.inspector-panel .widget-html, .inspector-panel .widget-html-content { max-width: 100%; min-width: 0; }
.inspector-panel pre.inspector-pre { max-width: 100%; box-sizing: border-box; }
.inspector-panel .widget-toggle-buttons { height: auto; max-width: 100%; min-width: 0; flex-shrink: 1 !important; }
.inspector-panel .widget-html:has(.inspector-row-refusal) { flex: 1 1 22em; min-width: 0; }
.inspector-panel .inspector-row-refusal { display: block; line-height: 1.35; padding-top: 4px; }
.inspector-stale > :not(.inspector-stale-note) { opacity: 0.4; }
.inspector-stale-note { color: #d62728; font-size: 0.9em; }
.inspector-row-refusal { color: #d62728; font-size: 0.85em; margin-left: 6px; }
/* An HTML line takes the widgets' row height (28 px) as its line height: a note that wraps stays
   single-spaced. */
.inspector-panel .widget-html-content .inspector-row-refusal, .inspector-panel .inspector-error-box,
.inspector-panel .inspector-status .widget-html-content, .inspector-panel .inspector-stale-note .widget-html-content
{ line-height: 1.35; }
.inspector-dispatch-panel .inspector-decision-table caption { display: none; }
</style>
"""
PANEL_CLASS = "inspector-panel"


@contextmanager
def busy(*buttons: widgets.Button) -> Iterator[None]:
    """Disable ``buttons`` while the work they started runs in the callback, whatever its outcome."""
    for button in buttons:
        button.disabled = True
    try:
        yield
    finally:
        for button in buttons:
            button.disabled = False


class Panel(Generic[S]):
    """Base of every panel: subclasses name their ``part``, build ``self.widget`` and implement ``state``.

    The part (its name in ``inspector.parts``) gives the panel its title and its page
    (``views/<part>.py: page``), which ``show`` renders section by section and ``static_html``
    whole.
    """

    part = ""  # the engine part this panel shows, by name in inspector.parts
    title = "Panel"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.part and "title" not in cls.__dict__:
            cls.title = parts.part(cls.part).title

    def __init__(self) -> None:
        self.errors = ErrorLine()  # failures no single control caused; the others show beside their control
        self.status = widgets.HTML(value="")
        self.status.add_class("inspector-status")
        self._guard = guarded(self.errors)
        self.widget: widgets.Widget = widgets.VBox([])
        self._shown: dict[int, tuple[str, Any]] = {}  # output area -> (section key, its inputs) shown there
        self._shown_lock = threading.RLock()  # background jobs render too
        self._alone: widgets.Widget | None = None  # the panel displayed on its own (``_displayed``)

    def guard(self, fn: F) -> F:
        """Wrap a callback so a failure shows up in the panel instead of killing it."""
        return self._guard(fn)

    def guard_into(self, line: ErrorLine, fn: F) -> F:
        """Like ``guard``, but the failure shows in ``line``: the error line beside the control that acted."""
        return guarded(line)(fn)

    def set_status(self, text: str) -> None:
        self.status.value = html.escape(text)

    def state(self) -> S:
        """What the panel shows now, as its part's page state (``views/<part>.py``)."""
        raise NotImplementedError

    # -- pages -----------------------------------------------------------------------------------
    def page(self, state: S) -> Page:
        """The part's page for ``state`` (lazy: NOTE [ Lazy pages ] in ``views/page.py``)."""
        current: Page = importlib.import_module(parts.part(self.part).views).page(state)
        return current

    def show(self, target: widgets.Output | widgets.HTML, current: Page, key: str, prefix: str = "") -> bool:
        """Show section ``key`` of ``current`` in ``target``, unless it already shows that section built
        from the same inputs; True when it drew. An ``HTML`` target gets ``prefix`` and the blocks' HTML."""
        from inspector.views.page import same_inputs

        inputs = current.inputs(key)
        with self._shown_lock:
            shown = self._shown.get(id(target))
            if shown is not None and shown[0] == key and same_inputs(shown[1], inputs):
                return False
            section = current.section(key)
            if isinstance(target, widgets.Output):
                render_section(target, section)
            else:
                target.value = prefix + section.blocks_html()
            self._shown[id(target)] = (str(key), inputs)
        return True

    def put(self, out: widgets.Output, *objects: Any) -> None:
        """Show ``objects`` (a note, nothing) in ``out`` instead of a section."""
        with self._shown_lock:
            self._shown.pop(id(out), None)
            render_into(out, *objects)

    def sync(self) -> None:
        """Re-read what the engine holds that the panel shows without being asked (before static HTML)."""

    def static_html(self) -> str:
        """HTML that shows the panel's content without a kernel: its whole page (tables, PNG figures)."""
        self.sync()
        body = self.page(self.state()).to_html()
        status = f"<p class='inspector-status'>{self.status.value}</p>" if self.status.value else ""
        return f"{PANEL_CSS}<div class='inspector-{self.part}-static'>{body}{status}</div>"

    # -- background jobs ---------------------------------------------------------------------------
    def ensure_idle(self, job: BackgroundJob, headline: str, again: str) -> None:
        """Refuse to start work while ``job`` runs, before anything shown changes; ``again``: what to do after."""
        if job.running:
            step = f"wait for it to finish, or press Cancel, then {again}"
            raise RuntimeError(str(Message(headline, next_step=step)))

    def start_job(
        self,
        job: BackgroundJob,
        work: Callable[..., Any],
        on_done: Callable[[Any], None],
        on_error: Callable[[BaseException], None],
        *,
        done_errors: ErrorLine | None = None,
        wait: bool = False,
    ) -> None:
        """Run ``work`` on ``job``; a failure in ``on_done`` shows in ``done_errors`` (else the panel's
        line), one in ``on_error`` in the panel's line. ``wait`` blocks until it ends (tests, scripts)."""
        done = self.guard(on_done) if done_errors is None else self.guard_into(done_errors, on_done)
        job.start(work, done, self.guard(on_error))
        if wait:
            # Unbounded on purpose: ``wait`` makes the call synchronous, so it blocks exactly as long as
            # calling ``work`` directly would; a bound would return before the result is shown. The job
            # ends when ``work`` does: a benchmark's batch count or time cap, a world's own timeouts, or the
            # user's own code (a backend's build, their loader), which hangs here only where it would hang
            # anyway. Ctrl-C still interrupts the join.
            job.wait()

    def _displayed(self) -> widgets.Widget:
        """What displaying the panel alone shows: its widget, with its tooltips reaching the page."""
        if self._alone is None:
            from inspector.panels._tooltips import reach_the_page, tips_output

            self._alone = widgets.VBox([tips_output(), reach_the_page(self.widget)])
        return self._alone

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        bundle = dict(self._displayed()._repr_mimebundle_(include=include, exclude=exclude) or {})
        bundle["text/html"] = self.static_html()
        return bundle

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {html.unescape(self.status.value) or self.title}>"
