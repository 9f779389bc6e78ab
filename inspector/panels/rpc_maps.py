"""The RPC panel's map-row editor: one row of widgets per mapped device pair.

A row reads "<caller> calls <callee>: <source> -> <target>", the way
``options.set_device_map(callee, {source: target})`` reads on the caller; the panel turns its
rows into the plan's ``device_maps`` on every edit.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets


class MapRow:
    """One mapped device pair: caller, callee, the caller's source device and the callee's target device."""

    def __init__(self, names: list[str], on_change: Any, on_remove: Any, values: tuple[str, ...] = ()) -> None:
        caller, callee, source, target = (*values, "", "", "", "")[:4]
        small = widgets.Layout(width="130px")
        self.caller = widgets.Combobox(value=caller, options=names, placeholder="caller", layout=small)
        self.callee = widgets.Combobox(value=callee, options=names, placeholder="callee", layout=small)
        self.source = widgets.Text(value=source, placeholder="cuda:0", layout=widgets.Layout(width="100px"))
        self.target = widgets.Text(value=target, placeholder="cuda:1", layout=widgets.Layout(width="100px"))
        remove = widgets.Button(icon="times", tooltip="remove this row", layout=widgets.Layout(width="36px"))
        remove.on_click(lambda _b: on_remove(self))
        for field in self.fields:
            field.observe(on_change, names="value")
        arrow = widgets.HTML("&nbsp;→&nbsp;")
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
            ]
        )
        self.widget.add_class("inspector-rpc-map-row")

    @property
    def fields(self) -> tuple[widgets.Widget, ...]:
        return (self.caller, self.callee, self.source, self.target)

    @property
    def values(self) -> tuple[str, str, str, str]:
        caller, callee, source, target = (str(f.value).strip() for f in self.fields)
        return caller, callee, source, target
