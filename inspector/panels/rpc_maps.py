"""The RPC panel's map-row editor: one row of widgets per mapped device pair.

A row reads "<caller> calls <callee>: <source> -> <target>", the way
``options.set_device_map(callee, {source: target})`` reads on the caller; the panel turns its
rows into the plan's ``device_maps`` on every edit, and marks a row a problem touches: a red
outline and, beside it, the problem's category and its next step.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets

BAD_ROW = "inspector-rpc-row-bad"
ROWS_CSS = """
<style>
.inspector-rpc-row-bad { outline: 2px solid #d62728; border-radius: 4px; }
.inspector-rpc-row-problem { color: #d62728; font-size: 0.85em; margin-left: 6px; }
.inspector-rpc-confirm { border: 3px solid #d62728; padding: 6px 10px; margin: 6px 0; }
.inspector-rpc-download { white-space: nowrap; }
.inspector-rpc-download-box { flex: 0 0 auto; }
</style>
"""


class MapRow:
    """One mapped device pair: caller, callee, the caller's source device and the callee's target device."""

    def __init__(self, names: list[str], on_change: Any, on_remove: Any, values: tuple[str, ...] = ()) -> None:
        caller, callee, source, target = (*values, "", "", "", "")[:4]
        small = widgets.Layout(width="130px")
        self.caller = widgets.Combobox(
            value=caller,
            options=names,
            placeholder="caller",
            layout=small,
            tooltip="The worker that calls (it sets the device map)",
        )
        self.callee = widgets.Combobox(
            value=callee,
            options=names,
            placeholder="callee",
            layout=small,
            tooltip="The worker called (the map is keyed by it)",
        )
        self.source = widgets.Text(
            value=source,
            placeholder="cuda:0",
            layout=widgets.Layout(width="100px"),
            tooltip="A device of the caller (cpu, cuda:0, ...)",
        )
        self.target = widgets.Text(
            value=target,
            placeholder="cuda:1",
            layout=widgets.Layout(width="100px"),
            tooltip="Where the tensor lands: a device of the callee",
        )
        remove = widgets.Button(
            icon="times", tooltip="remove this row", layout=widgets.Layout(width="36px", min_width="36px")
        )
        remove.on_click(lambda _b: on_remove(self))
        for field in self.fields:
            field.observe(on_change, names="value")
        arrow = widgets.HTML("&nbsp;→&nbsp;")
        self.note = widgets.HTML("", layout=widgets.Layout(flex="1 1 auto"))
        self.note.add_class("inspector-rpc-row-note")
        self.widget = widgets.HBox(
            [
                self.caller,
                widgets.HTML("&nbsp;calls&nbsp;"),
                self.callee,
                widgets.HTML(":&nbsp;"),
                self.source,
                arrow,
                self.target,
                remove,
                self.note,
            ]
        )
        self.widget.add_class("inspector-rpc-map-row")
        self.problems: tuple[str, ...] = ()

    def mark(self, categories: list[str], next_steps: list[str]) -> None:
        """Show what is wrong with this pair and what to do, or clear the mark."""
        self.problems = tuple(categories)
        if categories:
            self.widget.add_class(BAD_ROW)
            text = ", ".join(categories) + (f": {'; '.join(next_steps)}" if next_steps else "")
            self.note.value = f'<span class="inspector-rpc-row-problem">{html.escape(text)}</span>'
        else:
            self.widget.remove_class(BAD_ROW)
            self.note.value = ""

    @property
    def fields(self) -> tuple[widgets.Widget, ...]:
        return (self.caller, self.callee, self.source, self.target)

    @property
    def values(self) -> tuple[str, str, str, str]:
        caller, callee, source, target = (str(f.value).strip() for f in self.fields)
        return caller, callee, source, target
