"""One self-contained HTML report of the engine's state: no CDN, no network, images inline.

``inspector.to_html(path)`` writes the decision tables and plan of every op family, the data
backend × verb matrix, the last loader benchmark and an RPC plan with its problems. Inside an
``Inspector`` app the report uses what the app shows (its context, toggles, results, plan).
"""

from __future__ import annotations

import html
import os
import time
import weakref
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from inspector._files import atomic_write_text
from inspector.views._figures import figure_to_html

STYLE = """
body { font-family: -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; margin: 24px;
       color: #222; background: #fff; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; border-bottom: 1px solid #ccc; padding-bottom: 4px; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 0.85em; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
caption { text-align: left; font-weight: bold; padding: 4px 0; }
pre { background: #f6f6f6; padding: 8px; font-size: 0.85em; overflow-x: auto; }
img { max-width: 100%; background: #fff; }
.note { color: #666; font-style: italic; }
@media (prefers-color-scheme: dark) {
  body { color: #ddd; background: #1e1e1e; } pre { background: #2a2a2a; } th, td { border-color: #444; }
}
"""


_latest_app: weakref.ref[Any] | None = None


def remember_app(app: Any) -> None:
    """Called by ``Inspector``: ``to_html`` then reports what the latest app shows."""
    global _latest_app
    _latest_app = weakref.ref(app)


def _table(frame: Any) -> str:
    if isinstance(frame, pd.DataFrame):
        return frame.to_html(index=False, border=0, escape=True)
    return str(frame.to_html())  # a pandas Styler


def _section(title: str, parts: Iterable[str]) -> str:
    return f"<section><h2>{html.escape(title)}</h2>{''.join(parts)}</section>"


def default_contexts() -> dict[str, Any]:
    """A float32, 4-D, head_dim 64 context for every registered family (attention: kv_len 128)."""
    import torch

    from inspector.dispatch import CallContext, families

    contexts = {}
    for family in families():
        extra = {"kv_len": 128} if family == "attention" else {}
        contexts[family] = CallContext(family, dtype=torch.float32, ndim=4, head_dim=64, extra=extra)
    return contexts


def dispatch_section(contexts: Mapping[str, Any] | None = None, selections: Mapping[str, Any] | None = None) -> str:
    """Every family's decision table under ``selections`` (an ``op_backend`` scope), the plan and what-if grids."""
    import torch

    from inspector.dispatch import op_backend, trace_plan, what_if
    from inspector.views.dispatch import decision_table, plan_table, style_decision_table, what_if_heatmap

    contexts = dict(contexts or default_contexts())
    parts = []
    with op_backend(**(selections or {})):
        traces = trace_plan(contexts)
        parts.append(_table(plan_table(traces)))
        for item in traces:
            parts.append(_table(style_decision_table(decision_table(item))))
            parts.append(f"<pre>{html.escape(item.explain())}</pre>")
        for family, ctx in contexts.items():
            cells = what_if(family, ctx, dtype=[torch.float16, torch.bfloat16, torch.float32, torch.float64],
                            head_dim=[64, 256], has_mask=[False, True], grad_enabled=[True, False])
            title = f"{family}: winning row by dtype × head_dim × mask × grad"
            parts.append(figure_to_html(what_if_heatmap(cells, index=["dtype", "head_dim"], title=title),
                                        alt=f"{family} what-if grid"))
    return _section("Operator dispatch", parts)


def backends_section() -> str:
    """The backend × verb matrix (active backend marked) and every recorded import error."""
    from inspector.backends import snapshot
    from inspector.views.backends import import_error_table, style_verb_matrix, verb_matrix

    current = snapshot()
    parts = [_table(style_verb_matrix(verb_matrix(current)))]
    errors = import_error_table(current)
    if len(errors):
        parts.append(_table(errors))
    return _section("Data backends", parts)


def loader_section(rows: Sequence[Any] = ()) -> str:
    """The last loader benchmark: results, ratios and the throughput chart (or how to get one)."""
    if not rows:
        return _section("Shared-memory loader", [
            "<p class='note'>No loader benchmark has run here yet: run <code>inspector bench loader</code> "
            "or press Run in the Loader tab, then write the report again.</p>"
        ])
    from inspector.views.loader import bench_table, ratio_table, throughput_by_size_figure

    parts = [_table(ratio_table(rows)), figure_to_html(throughput_by_size_figure(rows), alt="loader throughput"),
             _table(bench_table(rows))]
    return _section("Shared-memory loader", parts)


def rpc_section(plan: Any = None) -> str:
    """An RPC topology plan: what ``init_rpc`` would say, every problem, the maps and the graph."""
    from inspector.rpc import TopologyPlan, predict_init_error
    from inspector.views.rpc import init_error_text, maps_table, problems_table, topology_figure

    note = ""
    if plan is None:
        plan = TopologyPlan.full_mesh(2, 2)
        note = "<p class='note'>No plan was given: this is a 2-worker × 2-GPU full mesh.</p>"
    problems = plan.check()
    parts = [note, f"<pre>{html.escape(init_error_text(predict_init_error(plan)))}</pre>"]
    if problems:
        parts.append(_table(problems_table(problems)))
    parts += [_table(maps_table(plan, problems)), figure_to_html(topology_figure(plan, problems), alt="RPC topology")]
    return _section("RPC device maps", parts)


def build_report(
    *,
    contexts: Mapping[str, Any] | None = None,
    selections: Mapping[str, Any] | None = None,
    loader_rows: Sequence[Any] | None = None,
    plan: Any = None,
    title: str = "inspector report",
) -> str:
    """The report as one HTML string (every section; a section that fails says why instead).

    ``loader_rows`` defaults to the latest ``inspector.loader.bench.run`` in this process.
    """
    if loader_rows is None:
        from inspector.loader.bench import last_run

        loader_rows = last_run()
    sections = []
    for make in (lambda: dispatch_section(contexts, selections), backends_section,
                 lambda: loader_section(loader_rows), lambda: rpc_section(plan)):
        try:
            sections.append(make())
        except Exception as exc:  # one broken part must not cost the whole report
            sections.append(f"<section><p class='note'>{html.escape(type(exc).__name__)}: "
                            f"{html.escape(str(exc))}</p></section>")
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><p class='note'>written {stamp}</p>{''.join(sections)}</body></html>"
    )


def write_report(path: str | os.PathLike[str], text: str) -> Path:
    """Write atomically (temporary file, then rename), so a reader never sees half a report."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write_text(target, text)


def to_html(path: str | os.PathLike[str], **state: Any) -> Path:
    """Write the report of the current engine state to ``path`` (keyword arguments: see ``build_report``).

    With no keywords and an ``Inspector`` app open, the report shows what that app shows.
    """
    app = _latest_app() if _latest_app is not None and not state else None
    if app is not None:
        return Path(app.to_html(path))
    return write_report(path, build_report(**state))
