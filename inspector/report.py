"""One self-contained HTML report: no CDN, no network, images inline.

The report opens with where it was written (versions, CPU, GPU, commit: ``inspector._environment``,
the same description the loader keeps with each benchmark run), then every engine part's page
(``views/<part>.py: page(state)``, the same page the panel shows), from states it is given or
read from the engine now. It never reaches into an app: ``Inspector.to_html(path)`` hands over
its panels' states, ``inspector.to_html(path)`` reports the engine as it is.
"""

from __future__ import annotations

import html
import importlib
import os
import time
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any

from inspector._extras import require_extra
from inspector._files import atomic_write_text
from inspector.parts import PARTS, Part

require_extra("ui", "inspector.report (and inspector.to_html)")

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


def part_section(part: Part, state: Any = None) -> str:
    """One part's page as HTML: ``state`` as given, or the part's current state read from the engine."""
    views = importlib.import_module(part.views)
    if state is None:
        state = views.current_state(**DEFAULT_STATE_OPTIONS.get(part.name, {}))
    html_text: str = views.page(state).to_html()
    return html_text


# What a report shows of a part when no state is given (the app gives its panels' states).
DEFAULT_STATE_OPTIONS: dict[str, dict[str, Any]] = {"dispatch": {"what_if_all": True}}


class ReportSection(StrEnum):
    """The report's own section keys, besides each part's page (named, as the pages' keys are)."""

    ENVIRONMENT = "environment"


def environment_section(env: Mapping[str, Any]) -> str:
    """Where the report was written, as a two-column table (``env``: ``inspector._environment.environment()``)."""
    import pandas as pd

    from inspector.views.page import Page, section, table

    gpu = env.get("gpu")
    rows = [
        ("inspector", env.get("inspector") or "not installed (running from a source tree)"),
        ("commit", env.get("commit") or "not a git checkout of inspector"),
        ("Python", env.get("python")),
        ("torch", env.get("torch")),
        ("numpy", env.get("numpy")),
        ("platform", env.get("platform")),
        ("CPU", f"{env.get('cpu')} ({env.get('cores')} cores)"),
        ("GPU", f"{gpu} (x{env.get('gpus')})" if gpu else "none (torch sees no CUDA device)"),
    ]
    frame = pd.DataFrame(
        [(what, "" if value is None else str(value)) for what, value in rows], columns=["item", "value"]
    )
    return Page("Environment", (section(ReportSection.ENVIRONMENT, "", [table(frame)]),)).to_html()


def build_report(
    states: Mapping[str, Any] | None = None,
    *,
    title: str = "inspector report",
    env: Mapping[str, Any] | None = None,
) -> str:
    """The report as one HTML string: the environment (``env``, else read now), then every part's page
    (``inspector.parts``), from ``states`` where given (part name -> that part's state, e.g. a panel's
    ``state()``), else from the engine now.

    A part that fails says why in its section; the rest still renders.
    """
    states = dict(states or {})
    unknown = sorted(set(states) - {p.name for p in PARTS})
    if unknown:
        raise KeyError(f"No engine part {unknown[0]!r}. Parts: {[p.name for p in PARTS]}")
    sections = []
    for part in PARTS:
        try:
            sections.append(part_section(part, states.get(part.name)))
        except Exception as exc:  # one broken part must not cost the whole report
            sections.append(
                f"<section><h2>{html.escape(part.title)}</h2><p class='note'>"
                f"{html.escape(type(exc).__name__)}: {html.escape(str(exc))}</p></section>"
            )
    if env is None:  # read after the parts: torch is loaded by then, so the GPU is known
        from inspector._environment import environment

        env = environment()
    sections.insert(0, environment_section(env))
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


def to_html(path: str | os.PathLike[str], states: Mapping[str, Any] | None = None) -> Path:
    """Write the report to ``path`` (``states``: see ``build_report``; an app's ``to_html`` passes its own)."""
    return write_report(path, build_report(states))
