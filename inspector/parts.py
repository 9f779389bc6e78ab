"""The engine parts, by dotted name: the one list the app, the report, the CLI and the tests read.

Importing this module imports nothing else. Each entry names where a part's pieces live:

* ``engine``: the engine package (standard library, numpy and torch only);
* ``views``: the view module with ``State``, ``current_state()`` and the pure ``page(state)``;
* ``panel``: ``module:Class`` of the ipywidgets panel, whose ``state()`` feeds that page;
* ``bench``: ``module:function`` measuring the part against its baselines (``progress=`` keyword);
* ``notebook``: the notebook that teaches it.

A fifth part is one engine folder, one view module, one panel and one line here: the app's tab,
the panels' lazy names, the report's section, ``inspector bench`` and ``make bench``, and the
tests' lists of parts and facades all read this list. Its ``notebook`` teaches it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Part:
    """Where one engine part's pieces live (dotted names, never imported here)."""

    name: str
    title: str
    engine: str
    views: str
    panel: str
    bench: str
    notebook: str

    @property
    def panel_module(self) -> str:
        return self.panel.partition(":")[0]

    @property
    def panel_class(self) -> str:
        return self.panel.partition(":")[2]


PARTS: tuple[Part, ...] = (
    Part(
        "dispatch",
        "Dispatch",
        "inspector.dispatch",
        "inspector.views.dispatch",
        "inspector.panels.dispatch:DispatchPanel",
        "inspector.dispatch.bench:measure",
        "01_dispatch.ipynb",
    ),
    Part(
        "backends",
        "Backends",
        "inspector.backends",
        "inspector.views.backends",
        "inspector.panels.backends:BackendsPanel",
        "inspector.backends.bench:measure",
        "02_data_backends.ipynb",
    ),
    Part(
        "loader",
        "Loader",
        "inspector.loader",
        "inspector.views.loader",
        "inspector.panels.loader:LoaderPanel",
        "inspector.loader.bench:measure",
        "03_loader_profiling.ipynb",
    ),
    Part(
        "rpc",
        "RPC",
        "inspector.rpc",
        "inspector.views.rpc",
        "inspector.panels.rpc:RpcPanel",
        "inspector.rpc.bench:measure",
        "04_rpc_device_maps.ipynb",
    ),
)


def part(name: str) -> Part:
    """The part called ``name``; ``KeyError`` lists the parts."""
    for candidate in PARTS:
        if candidate.name == name:
            return candidate
    raise KeyError(f"No engine part {name!r}. Parts: {[p.name for p in PARTS]}")


def names() -> tuple[str, ...]:
    return tuple(p.name for p in PARTS)
