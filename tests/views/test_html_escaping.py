"""No string a user controls ever becomes markup: every page, panel, report and engine display escapes it.

Every name a user or a third-party package chooses (family, row, backend, verb, plugin, worker,
loader class and profile labels, extra axis values, docstrings, history entries) is set to a
string that would open an element and an attribute if it were pasted raw, and each rendering is
parsed for an element or attribute that came from it.
"""

from __future__ import annotations

import json
import types
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any

import ipywidgets as widgets
import pytest

import inspector
from inspector import backends, dispatch
from inspector.loader import FileStorageLoader, loader_statuses
from inspector.loader.bench import BenchRow, profile_loader
from inspector.report import build_report
from inspector.rpc import TopologyPlan

TAG, ATTR = "xpwn-tag", "xpwnattr"
# breaks out of text, of both attribute quotes, of <script>/<style>/<textarea>/<pre>, and of a table cell; and
# matplotlib mathtext that raises while a figure is drawn, were it read as math
HOSTILE = (
    f"<{TAG} {ATTR}=\"1\">\"' {ATTR}='2' {ATTR}=3 </script></style></textarea></pre></td></th><{TAG}>"
    r" cost $\foo{$"
)


class _Injected(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == TAG or any(name == ATTR for name, _ in attrs):
            self.found.append(f"<{tag} {attrs}> at line {self.getpos()[0]}")

    handle_startendtag = handle_starttag


def injected(markup: str) -> list[str]:
    """Elements or attributes in ``markup`` that came from ``HOSTILE``."""
    parser = _Injected()
    parser.feed(markup)
    parser.close()
    return parser.found


def assert_escaped(markup: str, what: str) -> None:
    assert "xpwn" in markup, f"{what}: the hostile string never reached this rendering, so it proves nothing"
    assert injected(markup) == [], f"{what} pasted user text as markup"


def widget_markup(root: widgets.Widget) -> str:
    """Every piece of HTML a panel's widget tree shows now: HTML widgets and Output areas' HTML."""
    seen: set[int] = set()
    parts: list[str] = []
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, (widgets.HTML, widgets.HTMLMath)):
            parts.append(node.value)
        if isinstance(node, widgets.Output):
            parts.extend(out.get("data", {}).get("text/html", "") for out in node.outputs)
        stack.extend(getattr(node, "children", ()) or ())
    return "".join(parts)


def hostile_verb(cfg: Any, ctx: Any) -> Any:
    return None


hostile_verb.__doc__ = f"{HOSTILE}\n\nArgs:\n    cfg: {HOSTILE}\n\n    {HOSTILE}\n"


@pytest.fixture
def hostile_registries() -> Iterator[None]:
    """Every registry holds names, descriptions and errors made of ``HOSTILE`` (the test's registries are isolated)."""
    with backends.isolated_registry():
        backend = types.SimpleNamespace(build=hostile_verb, __verbs__=("build", HOSTILE), __doc__=HOSTILE)
        setattr(backend, HOSTILE, hostile_verb)
        backends.register_module(HOSTILE, backend, origin=HOSTILE)
        backends.register_module("plain", types.SimpleNamespace(build=hostile_verb))
        backends.record_import_error(HOSTILE + " plugin", ImportError(HOSTILE), install=HOSTILE, source=HOSTILE)
        row = dispatch.ImplRecord(
            HOSTILE, HOSTILE, hostile_verb, dispatch.axis("colour").eq(HOSTILE), True, 10, True, description=HOSTILE
        )
        dispatch.register_family(HOSTILE, [row], fallback=HOSTILE, description=HOSTILE)
        yield


def hostile_context() -> dispatch.CallContext:
    return dispatch.CallContext(HOSTILE, fwd=HOSTILE, dtype=HOSTILE, extra={"colour": HOSTILE, HOSTILE: HOSTILE})


def hostile_plan_json() -> str:
    """A plan file whose worker name and device strings are ``HOSTILE`` (refused, and the refusal shown)."""
    return json.dumps(
        {
            "static_group": True,
            "workers": [
                {"name": HOSTILE, "device_count": 1, "devices": [HOSTILE], "device_maps": {"w1": {HOSTILE: "cuda:0"}}},
                {"name": "w1", "device_count": 1, "devices": [], "device_maps": {}},
            ],
        }
    )


def button(root: widgets.Widget, description: str) -> widgets.Button:
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, widgets.Button) and node.description == description:
            return node
        stack.extend(getattr(node, "children", ()) or ())
    raise LookupError(description)


def test_engine_displays_escape_every_name(hostile_registries: None) -> None:
    ctx = hostile_context()
    assert_escaped(backends.snapshot()._repr_html_(), "RegistrySnapshot._repr_html_")
    assert_escaped(dispatch.trace(HOSTILE, ctx)._repr_html_(), "Trace._repr_html_")
    assert_escaped(dispatch.resolve(HOSTILE, ctx)._repr_html_(), "Resolution._repr_html_")
    assert_escaped(dispatch.resolve_plan({HOSTILE: ctx})._repr_html_(), "PlanResolution._repr_html_")
    with dispatch.record_decisions() as recorder:
        dispatch.resolve(HOSTILE, ctx)
    assert_escaped(recorder._repr_html_(), "DecisionRecorder._repr_html_")
    with pytest.raises(ValueError, match="Invalid device"):  # RPC names and devices are checked: never markup
        TopologyPlan.build(["w0", "w1"], 1, {"w0": {"w1": {HOSTILE: "cuda:0"}}})


def test_every_page_panel_and_report_escapes_every_name(hostile_registries: None, tmp_path: Any) -> None:
    hostile_loader = type(HOSTILE, (FileStorageLoader,), {})
    loader = hostile_loader(str(tmp_path / "area"), worker_num=1, ttl=None)
    try:
        assert_escaped("".join(s._repr_html_() for s in loader_statuses()), "LoaderStatus._repr_html_")
        profile = profile_loader([{"x": 1}] * 4, batches=2, warmup=0, device=None, label=HOSTILE)
        app = inspector.show()
        rendered: dict[str, str] = {}

        dispatch_panel = app.open("Dispatch")
        dispatch_panel.family.value = HOSTILE
        dispatch_panel.editor.extra.value = f"colour={HOSTILE}"
        dispatch_panel.refresh()
        backends_panel = app.open("Backends")
        backends_panel.select(HOSTILE, HOSTILE)
        loader_panel = app.open("Loader")
        loader_panel.profiles = [profile]
        loader_panel.rows = [BenchRow("steps", 1.0, 1, "cpu", "ours", 10.0, 9.0, 11.0, 3, 1, 4, 0)]
        loader_panel.refresh_status()
        rpc_panel = app.open("RPC")
        rpc_panel.json_text.value = hostile_plan_json()
        button(rpc_panel.widget, "Import plan").click()
        rpc_panel.add_row("worker0", "worker1", HOSTILE, HOSTILE)
        rpc_panel.refresh()

        for title, panel in app.panels.items():
            rendered[f"{title} static HTML"] = panel.static_html()
            rendered[f"{title} live widgets"] = widget_markup(panel.widget)
        rendered["app static HTML"] = app.static_html()
        rendered["report of the app"] = build_report(app.states())
        rendered["report of the engine"] = build_report()
        for what, markup in rendered.items():
            if what == "RPC static HTML":  # the refused plan shows only beside the control that loaded it
                assert injected(markup) == [], f"{what} pasted user text as markup"
            else:
                assert_escaped(markup, what)
    finally:
        loader.shutdown()


def test_a_jobs_progress_text_is_shown_as_text() -> None:
    from waiting import WAIT_S

    from inspector.panels._background import BackgroundJob

    job = BackgroundJob()
    shown: list[str] = []

    def work(progress: Any, _cancelled: Any) -> None:
        progress(1, 2, f"setting tag={HOSTILE!r}")  # a sweep's progress quotes the user's setting values
        shown.append(job.label.value)

    job.start(work, lambda _result: None, lambda _error: None)
    assert job.wait(WAIT_S)
    assert_escaped(shown[0], "a job's progress label")


def test_a_refused_cudnn_version_is_quoted_as_text() -> None:
    panel = inspector.show().open("Dispatch")
    panel.family.value = "torch_sdpa"
    panel.editor.device.value = "cuda"
    panel.editor.cudnn.value = HOSTILE
    assert "cuDNN" in panel.editor.gpu_label.value or "cudnn" in panel.editor.gpu_label.value.lower()
    assert_escaped(panel.editor.gpu_label.value, "the GPU label under a refused cuDNN version")
