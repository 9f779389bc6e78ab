"""The Inspector: one tab per engine part, each panel built the first time its tab opens."""

from __future__ import annotations

import html
import importlib
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets

from inspector.demos import load_demos, sample_configs, user_registered_anything
from inspector.panels._base import PANEL_CSS, Panel
from inspector.panels._tooltips import reach_the_page, tips_output
from inspector.parts import PARTS, part


@dataclass(frozen=True)
class TabSpec:
    """Where a tab's panel class lives; imported only when the tab is opened."""

    title: str
    module: str
    attribute: str
    part: str | None = None  # the engine part it shows (its state goes into the report)


TABS: tuple[TabSpec, ...] = tuple(TabSpec(p.title, p.panel_module, p.panel_class, p.name) for p in PARTS)


class Inspector:
    """Tabs over every engine part; ``panels`` holds the ones built so far.

    ``demos``: ``None`` (default) loads the embedded demo families and data backends only when
    you registered none of your own; ``True`` adds them under free names; ``False`` never (the
    policy is ``inspector.demos.load_demos``, which the command line follows too).
    """

    def __init__(self, tabs: tuple[TabSpec, ...] | None = None, *, demos: bool | None = None) -> None:
        self.tabs = tabs if tabs is not None else TABS
        from inspector._user_modules import import_user_modules

        user_notes = import_user_modules()
        self.demos_loaded = demos is True or (demos is None and not user_registered_anything())
        self.notes = (*user_notes, *load_demos(demos))
        self.panels: dict[str, Panel[Any]] = {}
        self.status = widgets.HTML(value="")  # the app's notes; each tab's status line is in the tab
        self.status.add_class("inspector-app-status")
        placeholders = [widgets.HTML(value=f"<i>Opening {html.escape(t.title)}…</i>") for t in self.tabs]
        self.tab = widgets.Tab(children=placeholders)
        self.tab.titles = tuple(t.title for t in self.tabs)
        self.tab.observe(self._on_select, names="selected_index")
        self.widget = widgets.VBox([widgets.HTML(PANEL_CSS), tips_output(), self.tab, self.status])
        self.widget.add_class("inspector-app")
        reach_the_page(self.widget)  # every tab's tooltips show in the browser (NOTE [ Tooltips in ipywidgets 8 ])
        self._show_status()
        if self.tabs:
            self.tab.selected_index = 0
            self.open(self.tabs[0].title)

    def open(self, title: str) -> Panel[Any]:
        """Build (once) and return the panel of the tab called ``title``."""
        if title in self.panels:
            return self.panels[title]
        titles = [t.title for t in self.tabs]
        if title not in titles:
            raise KeyError(f"No tab {title!r}. Tabs: {titles}")
        index = titles.index(title)
        spec = self.tabs[index]
        panel_class = getattr(importlib.import_module(spec.module), spec.attribute)
        panel = panel_class(**self._demo_options(spec))
        self.panels[title] = panel
        children = list(self.tab.children)
        children[index] = panel.widget
        self.tab.children = children
        self.tab.titles = tuple(t.title for t in self.tabs)
        return panel

    def _demo_options(self, spec: TabSpec) -> dict[str, Any]:
        """What a panel gets from the demos the app loaded: the Backends tab, configs that build as they stand."""
        if not self.demos_loaded or spec.part != "backends":
            return {}
        return {"configs": sample_configs()}

    @property
    def current(self) -> Panel[Any] | None:
        """The panel of the selected tab, once built."""
        index = self.tab.selected_index
        return None if index is None else self.panels.get(self.tabs[index].title)

    def _show_status(self) -> None:
        """The app's own line holds only what no tab says (which demos and modules loaded): each tab's
        status shows once, in the tab, beside the controls it reports on."""
        self.status.value = "<br>".join(f"<i>{html.escape(note)}</i>" for note in self.notes)

    def states(self) -> dict[str, Any]:
        """The state of every built panel, by engine part (what the report shows of this app)."""
        return {
            spec.part: self.panels[spec.title].state()
            for spec in self.tabs
            if spec.part is not None and spec.title in self.panels
        }

    def to_html(self, path: str | Any) -> Any:
        """Write the self-contained report of what this app shows (see ``inspector.report``)."""
        from inspector.report import to_html

        return to_html(path, self.states())

    def _on_select(self, change: dict[str, Any]) -> None:
        index = change["new"]
        if index is None:
            return
        try:
            self.open(self.tabs[index].title)
        except Exception as exc:  # a broken tab must not take the app down
            from inspector.panels._guard import error_html

            children = list(self.tab.children)
            children[index] = widgets.HTML(value=error_html(exc))
            self.tab.children = children
            return
        self._show_status()

    def static_html(self) -> str:
        sections = [f"<h3>{html.escape(title)}</h3>{panel.static_html()}" for title, panel in self.panels.items()]
        return "<div class='inspector-app'>" + "".join(sections) + "</div>"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        bundle = dict(self.widget._repr_mimebundle_(include=include, exclude=exclude) or {})
        bundle["text/html"] = self.static_html()
        return bundle


def show(*, demos: bool | None = None, loader: Any = None, step: Any = None) -> Inspector:
    """The Inspector app; leave it as a cell's last expression to display it.

    Your own families and backends come first: the demos load only into empty registries,
    unless ``demos=True`` (and then never over a name you registered). ``loader``: your
    ``DataLoader`` (any iterable of batches); the Loader tab opens and profiles it, and the
    inspector's loader on the same bytes (I/O only), in its "Your loader" section. ``step``:
    your training step (a callable taking one batch), run on each profiled batch so the tab
    says whether the loader or the step is the bottleneck.

    Example::

        >>> inspector.show(loader=train_loader, step=lambda batch: train_step(model, batch))
    """
    if step is not None and loader is None:
        raise TypeError("step= needs loader= too: inspector.show(loader=your_dataloader, step=your_training_step)")
    app = Inspector(demos=demos)
    if loader is not None:
        from inspector.panels.loader import LoaderPanel

        title = part("loader").title
        panel = app.open(title)
        assert isinstance(panel, LoaderPanel)
        app.tab.selected_index = [t.title for t in app.tabs].index(title)
        panel.profile(loader, step=step)
    return app
