"""BackendsPanel: the backend x verb matrix, a verb's signature and docs, and a sample batch built for real.

Picking a verb a backend lacks shows the exact error code would raise (the panel performs the
same lookup), and "Build sample" runs the backend's ``build`` off the UI thread, then shows the
first batch's keys, shapes and dtypes. The panel reads the default registry unless given one.
"""

from __future__ import annotations

import html
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets
import yaml

from inspector.backends import (
    BackendRegistry,
    BuildContext,
    ConfigError,
    FieldInfo,
    RegistrySnapshot,
    default_registry,
    describe_batch,
)
from inspector.errors import Cancelled
from inspector.panels._background import BackgroundJob
from inspector.panels._base import PANEL_CLASS, PANEL_CSS, Panel
from inspector.panels._guard import ErrorLine, error_html
from inspector.panels._render import RawHTML, pre
from inspector.views._tables import table_html
from inspector.views.backends import (
    BackendsSection,
    BackendsState,
    as_raised,
    call_snippet,
    import_error_table,
    plugin_table,
    verb_html,
)

if TYPE_CHECKING:
    import pandas as pd

    from inspector._bench import Progress

# Small configs that build in well under a second; a caller may pass its own per backend (the app passes the
# demos' own, whose sample files it writes: ``inspector.examples.data_backends.example_configs``).
DEFAULT_CONFIGS: dict[str, dict[str, Any]] = {
    "synthetic": {
        "data": {
            "dataset_type": "synthetic",
            "batch_size": 4,
            "options": {"episodes": 2, "episode_length": 8, "horizon": 2},
        }
    },
}


class BackendsPanel(Panel[BackendsState]):
    """Which data backends exist, what each can do, and what their batches look like."""

    part = "backends"

    def __init__(
        self, registry: BackendRegistry | None = None, configs: Mapping[str, Mapping[str, Any]] | None = None
    ) -> None:
        super().__init__()
        self.registry = registry if registry is not None else default_registry()
        registry = self.registry
        self.configs: dict[str, Mapping[str, Any]] = {**DEFAULT_CONFIGS, **(configs or {})}
        self.snapshot: RegistrySnapshot = registry.snapshot()
        self.last_matrix: pd.DataFrame | None = None
        self.last_batch: tuple[FieldInfo, ...] | None = None
        self.last_verb_text = ""
        self.last_verb_doc: str | None = None
        self.last_verb_defined_in = ""
        self.last_build_error: BaseException | None = None
        self._syncing = False
        self._details_of: RegistrySnapshot | None = None  # the snapshot the details area shows

        self.matrix_out = widgets.Output()
        self.backend = widgets.Dropdown(
            description="backend",
            layout=widgets.Layout(width="240px"),
            tooltip="The backend whose verb, docs and sample config are shown below",
        )
        self.verb = widgets.Dropdown(
            description="verb",
            layout=widgets.Layout(width="300px"),
            tooltip="A verb: its signature and docstring, or the error code would raise",
        )
        self.verb_html = widgets.HTML()
        self.verb_html.add_class("inspector-backend-verb")
        refresh_button = widgets.Button(
            description="Refresh",
            icon="refresh",
            layout=widgets.Layout(width="auto"),
            tooltip="Re-read the registry (backends registered since, the active one)",
        )
        refresh_button.on_click(self.guard(lambda _b: self.refresh()))
        self.config_text = widgets.Textarea(
            description="config",
            layout=widgets.Layout(width="560px", height="150px"),
            tooltip="The YAML config Build sample builds (it is not made active)",
        )
        self.config_errors = ErrorLine("config")
        self.build_button = widgets.Button(
            description="Build sample",
            icon="play",
            layout=widgets.Layout(width="auto"),
            tooltip="Build this config's DataLoaders and show the first batch",
        )
        self.build_button.on_click(self.guard_into(self.config_errors, lambda _b: self.build_sample()))
        self.job = BackgroundJob("Building", triggers=[self.build_button])
        self.build_out = widgets.Output()
        self.build_html = widgets.HTML()
        self.details_out = widgets.Output()
        details = widgets.Accordion(children=[self.details_out])
        details.titles = ("Import errors and plugins",)

        # The config, its error and the build button share one box: an error shows where you typed.
        self.config_box = widgets.VBox(
            [self.config_text, self.config_errors.widget, widgets.HBox([self.build_button, self.job.widget])]
        )
        self.config_box.add_class("inspector-backends-config")
        self.backend.observe(self.guard(self._on_backend), names="value")
        self.verb.observe(self.guard(self._on_verb), names="value")
        self.widget = widgets.VBox(
            [
                widgets.HTML(PANEL_CSS + "<b>Data backends</b>: what each backend can do, and what it builds"),
                widgets.HBox([refresh_button, self.status]),
                self.errors.widget,
                self.matrix_out,
                widgets.HBox([self.backend, self.verb]),
                self.verb_html,
                self.config_box,
                self.build_html,
                self.build_out,
                details,
            ]
        )
        self.widget.add_class("inspector-backends-panel")
        self.widget.add_class(PANEL_CLASS)
        self.refresh()

    # -- the matrix and the verb details -------------------------------------------------------
    def state(self) -> BackendsState:
        """What this panel shows now, as the page's state."""
        return BackendsState(
            self.snapshot,
            self.backend.value,
            self.verb.value,
            self.last_verb_text,
            self.last_batch,
            self.last_verb_doc,
            self.last_verb_defined_in,
        )

    def refresh(self) -> None:
        """Re-read the registry: matrix, dropdowns, import errors, plugins, status line."""
        self.snapshot = snap = self.registry.snapshot()
        state = BackendsState(snap)
        self.last_matrix = state.matrix
        self.show(self.matrix_out, self.page(state), BackendsSection.MATRIX)
        if self._details_of != snap:  # both tables, also when empty (the page shows them only when not)
            tables = ((import_error_table(snap), "Import errors"), (plugin_table(snap), "Plugins"))
            self.put(self.details_out, *(RawHTML(table_html(frame, caption)) for frame, caption in tables))
            self._details_of = snap
        names = list(self.last_matrix.index)
        keep_backend, keep_verb = self.backend.value, self.verb.value
        fallback = snap.active if snap.active in names else (names[0] if names else None)
        self._syncing = True  # the observers run once, below, not per option change
        try:
            self.backend.options = names
            self.verb.options = list(snap.verbs)
            self.backend.value = keep_backend if keep_backend in names else fallback
            self.verb.value = keep_verb if keep_verb in snap.verbs else snap.verbs[0]
        finally:
            self._syncing = False
        self._load_config_template()
        self.show_verb(snap)
        failed = len(snap.failed)
        active = snap.active or "none (load_config() sets one)"
        self.set_status(f"{len(snap.backends)} registered, {failed} failed to import, active: {active}")

    def select(self, backend: str, verb: str | None = None) -> None:
        """Pick a backend (and a verb) as the dropdowns would."""
        if backend not in self.backend.options:
            raise KeyError(f"No backend {backend!r} in the matrix. Backends: {list(self.backend.options)}")
        self.backend.value = backend
        if verb is not None:
            if verb not in self.verb.options:
                self.verb.options = [*self.verb.options, verb]
            self.verb.value = verb

    def _on_backend(self, _change: Any) -> None:
        if not self._syncing:
            self._load_config_template()
            self.show_verb()

    def _on_verb(self, _change: Any) -> None:
        if not self._syncing:
            self.show_verb()

    def show_verb(self, snapshot: RegistrySnapshot | None = None) -> None:
        """The chosen verb's signature and docstring, or the error code would raise for it (``snapshot``:
        the registry as just read, else read now)."""
        backend, verb = self.backend.value, self.verb.value
        if backend is None or verb is None:
            self.verb_html.value = ""
            return
        call = call_snippet(self.snapshot, backend, verb)
        try:
            getattr(self.registry.backend_for(backend), verb)
        except Exception as exc:  # the lookup's own error is what we show, as code would see it
            self.last_verb_text, self.last_verb_doc = as_raised(call, exc), None
            self.verb_html.value = pre(self.last_verb_text)
            return
        info = (snapshot or self.registry.snapshot()).backend(backend).verb(verb)
        self.last_verb_text = f"{call}\n\n{verb}{info.signature}\n\n{info.doc or '(no docstring)'}"
        self.last_verb_doc, self.last_verb_defined_in = info.doc or "", info.defined_in
        self.verb_html.value = verb_html(call, f"{verb}{info.signature}", info.doc, info.defined_in)

    # -- building a sample ---------------------------------------------------------------------
    def _load_config_template(self) -> None:
        backend = self.backend.value
        if backend is None:
            return
        config = self.configs.get(backend, {"data": {"dataset_type": backend, "batch_size": 4}})
        self.config_text.value = yaml.safe_dump(_plain(config), sort_keys=False)

    def build_sample(self, config_text: str | None = None, *, wait: bool = False) -> None:
        """Build the config in the text box (without making it active) and show one batch's structure."""
        self.ensure_idle(self.job, "A sample is still being built.", "build again")
        text = self.config_text.value if config_text is None else config_text
        try:
            try:
                mapping = yaml.safe_load(text)
            except yaml.YAMLError as exc:
                raise ConfigError(f"The config box is not valid YAML: {str(exc).splitlines()[0]}") from exc
            cfg = self.registry.load_config(mapping if mapping is not None else {}, activate=False)
            backend = self.registry.backend_for(cfg.data.dataset_type)
        except Exception:
            self._clear_build()  # the batch shown was built from a config this one replaces
            raise

        def job(report: Progress, cancelled: threading.Event) -> tuple[Any, tuple[FieldInfo, ...]]:
            report(0, 2, "building")
            bundle = backend.build(cfg, BuildContext())
            if cancelled.is_set():
                raise Cancelled("cancelled before loading a batch")
            report(1, 2, "loading one batch")
            batch = next(iter(bundle.train_loader))
            return bundle, describe_batch(batch)

        self._clear_build()
        self.start_job(self.job, job, self._built, self._build_failed, wait=wait)

    def _clear_build(self) -> None:
        self.last_batch = None
        self.build_html.value = ""
        self.put(self.build_out)
        self.job.reset()

    def _built(self, result: tuple[Any, tuple[FieldInfo, ...]]) -> None:
        bundle, fields = result
        self.last_batch = fields
        self.last_build_error = None
        self.build_html.value = (
            f"<small>{html.escape(type(bundle.dataset).__name__)} of {len(bundle.dataset)} items; "
            f"train_iters={bundle.train_iters}, val_iters={bundle.val_iters}; first batch:</small>"
        )
        self.show(self.build_out, self.page(self.state()), BackendsSection.BATCH)

    def _build_failed(self, exc: BaseException) -> None:
        # Rendered here rather than in the error line: the guard clears that line when the
        # button callback returns, which may happen after a fast job has already failed.
        self.last_batch = None
        self.last_build_error = exc
        self.build_html.value = error_html(exc)

    def sync(self) -> None:
        self.snapshot = self.registry.snapshot()


def _plain(value: Any) -> Any:
    """Mappings (read-only ones included) as dicts, so YAML can write them."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
