"""Backends views: the backend x verb matrix, verb details, import failures, plugins and batch structure."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from typing import TYPE_CHECKING, Any

import pandas as pd

from inspector.views._cells import in_notebook_terms
from inspector.views._docstrings import docstring_html
from inspector.views._tables import styled
from inspector.views.page import Block, Page, lazy, pre, table, trusted_html

if TYPE_CHECKING:
    from pandas.io.formats.style import Styler

    from inspector.backends import FieldInfo, RegistrySnapshot

SUPPORTED = "supported"
MISSING = "missing"
IMPORT_ERROR = "import error"
UNREGISTERED = "not registered"

ACTIVE = "active"
REGISTERED = "registered"

CELL_STYLES = {
    SUPPORTED: "background-color: rgba(44, 160, 44, 0.22)",
    MISSING: "opacity: 0.55",
    IMPORT_ERROR: "background-color: rgba(214, 39, 40, 0.18); color: #d62728",
    UNREGISTERED: "background-color: rgba(214, 39, 40, 0.18); color: #d62728",
}
ACTIVE_STYLE = "font-weight: bold; border-left: 3px solid #2ca02c"


def verb_matrix(snapshot: RegistrySnapshot) -> pd.DataFrame:
    """One row per backend (registered, then failed to import), one column per verb, plus status and detail.

    A cell says ``supported``, ``missing`` or ``import error``; ``status`` marks the active
    backend; ``detail`` holds where a backend came from or the import error's first line. The
    frame's ``attrs`` carry ``active`` and ``active_set_by``.
    """
    verbs = list(snapshot.verbs)
    records = []
    for info in sorted(snapshot.backends, key=lambda b: b.name):
        cells = {verb: SUPPORTED if info.supports(verb) else MISSING for verb in verbs}
        status = ACTIVE if info.name == snapshot.active else REGISTERED
        records.append({"backend": info.name, "status": status, **cells, "detail": info.origin})
    for failure in sorted(snapshot.failed, key=lambda f: f.name):
        cells = dict.fromkeys(verbs, IMPORT_ERROR)
        detail = f"{failure.error_type}: {failure.error}" + (f" ({failure.install})" if failure.install else "")
        records.append({"backend": failure.name, "status": IMPORT_ERROR, **cells, "detail": detail})
    listed = {r["backend"] for r in records}
    if snapshot.active is not None and snapshot.active not in listed:
        cells = dict.fromkeys(verbs, UNREGISTERED)
        detail = "active but never registered: data_backend() raises KeyError"
        records.append({"backend": snapshot.active, "status": ACTIVE, **cells, "detail": detail})
    frame = pd.DataFrame.from_records(records, columns=["backend", "status", *verbs, "detail"])
    frame = frame.set_index("backend")
    frame.attrs.update(active=snapshot.active, active_set_by=snapshot.active_set_by)
    return frame


def style_verb_matrix(frame: pd.DataFrame) -> Styler:
    """Colour cells by support, embolden the active backend, and state it in the caption."""
    verbs = [c for c in frame.columns if c not in ("status", "detail")]

    def cell(value: object) -> str:
        return CELL_STYLES.get(str(value), "")

    def row(line: pd.Series) -> list[str]:
        return [ACTIVE_STYLE if line["status"] == ACTIVE else ""] * len(line)

    active = frame.attrs.get("active")
    if active is None:
        caption = "No active backend (load_config() sets one)"
    else:
        caption = f"Active backend: {active} (set by {in_notebook_terms(str(frame.attrs.get('active_set_by')))})"
    return (
        styled(frame, index=True)
        .apply(row, axis=1)
        .map(cell, subset=verbs)
        .set_caption(html.escape(caption))
        .set_table_attributes('class="inspector-backend-matrix"')
    )


def verb_table(snapshot: RegistrySnapshot, backend: str) -> pd.DataFrame:
    """The verbs of one backend: signature, one-line summary and where each is defined."""
    info = snapshot.backend(backend)
    records = [
        {"verb": v.name, "signature": f"{v.name}{v.signature}", "summary": v.summary, "defined_in": v.defined_in}
        for v in info.verbs
    ]
    return pd.DataFrame.from_records(records, columns=["verb", "signature", "summary", "defined_in"])


def call_snippet(snapshot: RegistrySnapshot, backend: str, verb: str) -> str:
    """How code calls ``verb`` on ``backend``: ``backend_for('npz').describe(cfg)``.

    For a verb the backend lacks, the arguments come from a backend that has it (else ``cfg``).
    """
    receiver = f"backend_for({backend!r})"
    owners = [b for b in snapshot.backends if b.supports(verb)]
    owners.sort(key=lambda b: b.name != backend)
    if owners:
        return owners[0].verb(verb).call(receiver)
    return f"{receiver}.{verb}(cfg)"


def import_error_table(snapshot: RegistrySnapshot) -> pd.DataFrame:
    """Every recorded import failure: the error, what to install, where it was recorded, shadowed or not."""
    records = [
        {
            "backend": f.name,
            "error": f"{f.error_type}: {f.error}",
            "install": f.install or "",
            "missing_module": f.missing_module or "",
            "source": f.source or "",
            "shadowed": f.shadowed,
        }
        for f in snapshot.import_errors
    ]
    columns = ["backend", "error", "install", "missing_module", "source", "shadowed"]
    return pd.DataFrame.from_records(records, columns=columns)


def plugin_table(snapshot: RegistrySnapshot) -> pd.DataFrame:
    """Entry points found in the ``inspector.data_backends`` group and what became of each."""
    records = [
        {
            "name": p.name,
            "entry_point": p.value,
            "distribution": p.distribution or "",
            "status": p.status,
            "detail": p.detail,
        }
        for p in snapshot.plugins
    ]
    return pd.DataFrame.from_records(records, columns=["name", "entry_point", "distribution", "status", "detail"])


BATCH_COLUMNS = ["key", "kind", "shape", "dtype", "min", "mean", "max", "NaNs"]


def batch_table(fields: Sequence[FieldInfo]) -> pd.DataFrame:
    """A batch: one line per leaf with its kind, shape and dtype, and its values' min, mean, max and NaN count."""
    records = []
    for f in fields:
        stats = f.stats
        records.append(
            {
                "key": f.key,
                "kind": f.kind,
                "shape": "" if f.shape is None else str(tuple(f.shape)),
                "dtype": f.dtype or "",
                "min": stats.minimum if stats else None,
                "mean": stats.mean if stats else None,
                "max": stats.maximum if stats else None,
                "NaNs": stats.nans if stats else None,
            }
        )
    frame = pd.DataFrame.from_records(records, columns=BATCH_COLUMNS)
    return frame.astype({"min": float, "mean": float, "max": float, "NaNs": "Int64"})


def verb_html(call: str, signature: str, doc: str | None, defined_in: str = "") -> str:
    """How to call a verb, its signature, and its docstring rendered (escaped; NOTE [ Rendering docstrings ])."""
    where = f" &nbsp;<small>defined in {html.escape(defined_in)}</small>" if defined_in else ""
    return (
        f"<div class='inspector-verb'><code>{html.escape(call)}</code>{where}"
        f"<pre class='inspector-pre'>{html.escape(signature)}</pre>{docstring_html(doc)}</div>"
    )


def as_raised(call: str, exc: BaseException) -> str:
    """The text Python prints when ``call`` raises ``exc`` in a notebook cell, chained causes first."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__
    blocks = [f"Traceback (most recent call last):\n  ...\n{type(e).__name__}: {e}" for e in reversed(chain)]
    joined = "\n\nThe above exception was the direct cause of the following exception:\n\n".join(blocks)
    return f">>> {call}\n{joined}"


# -- the page -------------------------------------------------------------------------------
class BackendsSection(StrEnum):
    """The Backends page's sections."""

    MATRIX = "matrix"
    DETAILS = "details"
    VERB = "verb"
    BATCH = "batch"


@dataclass(frozen=True)
class BackendsState:
    """What the Backends page shows: the registry snapshot, the verb in focus, the last sample batch."""

    snapshot: RegistrySnapshot
    backend: str | None = None
    verb: str | None = None
    verb_text: str = ""
    batch: tuple[FieldInfo, ...] | None = None
    verb_doc: str | None = None  # set when the verb resolved: ``verb_text`` is then call, signature, doc
    verb_defined_in: str = ""

    @cached_property
    def matrix(self) -> pd.DataFrame:
        """The backend x verb matrix of the snapshot, made once per state (NOTE [ Lazy pages ] in ``views/page.py``)."""
        return verb_matrix(self.snapshot)


def current_state(registry: Any = None) -> BackendsState:
    """The page's state read from ``registry`` (default: the process-wide one) now."""
    from inspector.backends import default_registry

    snap = (registry if registry is not None else default_registry()).snapshot()
    return BackendsState(snap)


def page(state: BackendsState) -> Page:
    """The Backends page: backend × verb matrix, import errors and plugins, the verb in focus, a batch."""
    snap = state.snapshot
    sections = [lazy(BackendsSection.MATRIX, "", lambda: [table(style_verb_matrix(state.matrix))], snap)]
    if snap.import_errors or snap.plugins:
        sections.append(lazy(BackendsSection.DETAILS, "Import errors and plugins", lambda: _detail_blocks(snap), snap))
    if state.backend is not None and state.verb is not None and state.verb_text:
        verb = (state.verb_text, state.verb_doc, state.verb_defined_in)
        title = f"{state.backend}.{state.verb}"
        sections.append(lazy(BackendsSection.VERB, title, lambda: [_verb_block(state)], verb))
    batch = state.batch
    if batch is not None:
        sections.append(lazy(BackendsSection.BATCH, "Sample batch", lambda: [table(batch_table(batch))], batch))
    return Page("Data backends", tuple(sections))


def _detail_blocks(snap: RegistrySnapshot) -> list[Block]:
    details = []
    if snap.import_errors:
        details.append(table(import_error_table(snap), "Import errors"))
    if snap.plugins:
        details.append(table(plugin_table(snap), "Plugins"))
    return details


def _verb_block(state: BackendsState) -> Block:
    if state.verb_doc is None:  # the error code would see, as it would print
        return pre(state.verb_text)
    call, _, rest = state.verb_text.partition("\n\n")
    return trusted_html(verb_html(call, rest.partition("\n\n")[0], state.verb_doc, state.verb_defined_in))
