"""DispatchPanel driven through its real widgets (no frontend needed)."""

from __future__ import annotations

import os

import pytest
import torch
from matplotlib.figure import Figure

from inspector.dispatch import CallContext, process_selection, resolve
from inspector.panels.dispatch import DispatchPanel


def html_of(out) -> str:
    """The HTML an Output widget currently shows."""
    return "".join(o["data"].get("text/html", "") for o in out.outputs)


@pytest.fixture
def panel() -> DispatchPanel:
    return DispatchPanel(family="attention")


def chosen_row(panel: DispatchPanel) -> str:
    table = panel.last_table
    assert table is not None
    return str(table.loc[table["chosen"], "row"].item())


def test_panel_opens_on_the_live_decision(panel: DispatchPanel) -> None:
    assert panel.status.value == "attention: sdpa (origin=chain)"
    assert chosen_row(panel) == "sdpa"
    assert "sdpa (origin=chain)" in html_of(panel.table_out)
    assert "=&gt; sdpa (origin=chain)" in panel.trace_html.value


def test_toggle_rerenders_the_table_under_op_backend(panel: DispatchPanel) -> None:
    panel.toggles["attention"].value = "math"
    assert chosen_row(panel) == "math" and panel.last_trace and panel.last_trace.origin == "context"
    assert "with op_backend(attention=&#x27;math&#x27;)" in panel.snippet.value
    panel.toggles["attention"].value = "auto"
    assert chosen_row(panel) == "sdpa" and panel.snippet.value == ""


def test_context_edits_change_the_decision(panel: DispatchPanel) -> None:
    panel.editor.grad.value = False
    panel.editor.extra.value = "kv_len=4096"
    assert chosen_row(panel) == "chunked"
    panel.editor.dtype.value = "float64"
    panel.editor.has_mask.value = True
    assert chosen_row(panel) == "math"
    assert panel.context == CallContext(
        "attention", dtype=torch.float64, ndim=4, head_dim=64, has_mask=True, grad_enabled=False, extra={"kv_len": 4096}
    )


def test_strict_selection_error_is_a_readable_message_not_a_traceback(panel: DispatchPanel) -> None:
    panel.select("attention", "chunked")  # grad is on: chunked declines
    assert panel.status.value.startswith("attention: ERROR: attention row")
    assert "ERROR" in html_of(panel.table_out)
    assert "Traceback" not in panel.trace_html.value and "capable rows" in panel.trace_html.value


def test_a_bad_extra_is_explained_beside_the_editor_and_marks_the_decision_stale(panel: DispatchPanel) -> None:
    panel.editor.extra.value = "kv_len"
    errors = panel.editor.errors.widget
    assert "ValueError" in errors.value and "name=value" in errors.value
    assert errors in panel.editor.widget.children and panel.errors.widget.value == ""
    assert panel.results.stale and "stale" in panel.results.note.value
    assert "context cannot be read" in panel.status.value
    panel.toggles["attention"].value = "math"  # any other edit keeps the mark while the context is bad
    assert panel.results.stale
    panel.editor.extra.value = "kv_len=16"
    assert errors.value == "" and not panel.results.stale and chosen_row(panel) == "math"


def test_a_context_the_family_refuses_is_explained_beside_the_editor(panel: DispatchPanel) -> None:
    panel.family.value = "torch_sdpa"
    panel.editor.extra.value = "window=8"  # PyTorch's attention has no 'window' axis
    assert "no axis &#x27;window&#x27;" in panel.editor.errors.widget.value
    # said once, there: the status points at it, the toggles' refusal and the trace do not repeat it
    assert panel.status.value == "torch_sdpa: the context cannot be used (see above)"
    assert panel.refusals["torch_sdpa"].value == "" and "window" not in panel.trace_html.value
    assert panel.results.stale
    panel.editor.extra.value = "kv_len=16"
    assert panel.editor.errors.widget.value == "" and not panel.results.stale


def test_rows_that_cannot_serve_the_context_are_marked_on_their_toggle(panel: DispatchPanel) -> None:
    toggle = panel.toggles["attention"]
    marks = dict(zip(toggle.options, toggle.icons, strict=True))
    assert marks["chunked"] == "ban" and marks["flash"] == "ban"  # grad is on; no GPU here
    assert marks["sdpa"] == "" and marks["math"] == "" and marks["auto"] == ""
    tips = dict(zip(toggle.options, toggle.tooltips, strict=True))
    assert tips["chunked"].startswith("chunked: reject (grad_enabled: required False, got True")
    refusals = panel.refusals["attention"].value
    assert "chunked: grad_enabled: required False, got True (+1 more)" in refusals
    assert "flash: not on this machine" in refusals
    panel.editor.grad.value = False
    panel.editor.extra.value = "kv_len=4096"
    assert dict(zip(toggle.options, toggle.icons, strict=True))["chunked"] == ""
    assert "chunked" not in panel.refusals["attention"].value


def test_a_selected_row_that_refuses_says_so_beside_its_toggle(panel: DispatchPanel) -> None:
    panel.select("attention", "chunked")
    refusals = panel.refusals["attention"].value
    assert "chunked refused" in refusals and "inspector-row-refusal" in refusals
    panel.select("attention", None)
    assert "refused" not in panel.refusals["attention"].value


def test_inspector_ops_problems_show_beside_the_variable(panel: DispatchPanel, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INSPECTOR_OPS", "")
    panel.apply_env("atention=sdpa, attention=sdpa2, rotary, profile=fast")
    problems = panel.env_problems.value
    assert "unknown operator family &#x27;atention&#x27;" in problems
    assert "attention=&#x27;sdpa2&#x27; is not a row of attention" in problems
    assert "malformed entry &#x27;rotary&#x27;" in problems and "unknown profile &#x27;fast&#x27;" in problems
    assert panel.env_problems in panel.env_box.children and panel.env_text in panel.env_box.children[0].children
    panel.apply_env("attention=chunked")  # a row that cannot serve this context: the chain decides
    assert "process selection attention=&#x27;chunked&#x27; could not be used here" in panel.env_problems.value
    panel.apply_env("attention=math")
    assert panel.env_problems.value == "" and panel.status.value == "attention: math (origin=env)"
    panel.apply_env("")


def test_a_typo_already_in_the_environment_shows_when_the_panel_opens(monkeypatch: pytest.MonkeyPatch) -> None:
    from inspector.dispatch import reload_env

    monkeypatch.setenv("INSPECTOR_OPS", "attention=smda")
    reload_env()
    try:
        panel = DispatchPanel(family="attention")
        assert "attention=&#x27;smda&#x27; is not a row of attention" in panel.env_problems.value
    finally:
        monkeypatch.setenv("INSPECTOR_OPS", "")
        reload_env()


def test_the_work_buttons_are_disabled_while_they_run_and_say_what_to_press_before(panel: DispatchPanel) -> None:
    assert "No grid yet: press" in html_of(panel.what_if_out)
    assert "No comparison yet: press" in html_of(panel.compare_out)
    box = panel.results.widget.children[2].children[2].children[0]  # the what-if box, in its own section
    button = box.children[0]
    seen: list[bool] = []
    button.observe(lambda change: seen.append(change["new"]), names="disabled")
    button.click()
    assert seen == [True, False] and "image/png" in panel.what_if_out.outputs[-1]["data"]  # after its colour key


def test_selection_carries_the_toggles_into_user_code(panel: DispatchPanel) -> None:
    panel.select("attention", "math")
    ctx = CallContext("attention", dtype=torch.float32, ndim=4)
    with panel.selection():
        assert resolve("attention", ctx).name == "math"
    assert resolve("attention", ctx).name == "sdpa"  # the panel itself left nothing set


def test_process_wide_selection_uses_set_op(panel: DispatchPanel) -> None:
    panel.select("rotary", "torch")
    panel.apply_process_wide()
    assert dict(process_selection()) == {"rotary": "torch"}
    assert resolve("rotary", CallContext("rotary", dtype=torch.float32)).origin == "env"
    panel.clear_process_wide()
    assert dict(process_selection()) == {}


def test_process_wide_selection_leaves_torch_sdpa_out_and_says_so(panel: DispatchPanel) -> None:
    panel.select("torch_sdpa", "math")
    panel.select("rotary", "torch")
    panel.apply_process_wide()
    assert dict(process_selection()) == {"rotary": "torch"}
    assert "set_op left out torch_sdpa" in panel.status.value and "op_backend(torch_sdpa=" in panel.status.value
    with panel.selection():  # the toggle still steers PyTorch for a block
        assert torch._fused_sdp_choice(*(torch.randn(1, 2, 4, 8),) * 3) == 0  # SDPBackend.MATH


def test_env_editor_and_profile(panel: DispatchPanel, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INSPECTOR_OPS", "")
    panel.apply_env("profile=reference")
    assert os.environ["INSPECTOR_OPS"] == "profile=reference"
    assert panel.profile.value == "reference" and panel.status.value == "attention: math (origin=profile)"
    panel.profile.value = "none"
    assert panel.status.value == "attention: sdpa (origin=chain)"


def test_family_switch_and_plan(panel: DispatchPanel) -> None:
    panel.family.value = "rotary"
    assert panel.status.value == "rotary: fused (origin=chain)"
    plan_html = html_of(panel.plan_out)
    assert "attention" in plan_html and "rotary" in plan_html


def test_what_if_and_run_and_compare(panel: DispatchPanel) -> None:
    cells = panel.draw_what_if()
    assert len(cells) == 4 * 4 * 2 * 2
    key, grid = panel.what_if_out.outputs  # the colour key (HTML, above), then the grid
    assert "data-colour=" in key["data"]["text/html"] and "image/png" in grid["data"]
    assert isinstance(panel.last_what_if, Figure)
    frame = panel.run_and_compare()
    assert frame.set_index("row").loc["sdpa", "within_tolerance"]
    assert "reference" in html_of(panel.compare_out)


def test_static_html_and_mimebundle(panel: DispatchPanel) -> None:
    bundle = panel._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "inspector-decision-table" in bundle["text/html"] and "=&gt; sdpa" in bundle["text/html"]


def test_loading_a_context_into_the_editor(panel: DispatchPanel) -> None:
    panel.editor.load(
        CallContext("attention", dtype=torch.bfloat16, ndim=4, head_dim=128, grad_enabled=False, extra={"kv_len": 2048})
    )
    assert chosen_row(panel) == "chunked" and panel.editor.dtype.value == "bfloat16"
    with pytest.raises(ValueError, match="offers dtypes"):
        panel.editor.load(CallContext("attention", dtype=torch.int8))


def test_torch_sdpa_sits_beside_the_other_families_and_its_toggle_steers_pytorch() -> None:
    from inspector.dispatch.torch_sdpa.flags import current_flags

    panel = DispatchPanel(family="torch_sdpa")
    assert "torch_sdpa" in panel.toggles and "attention" in panel.toggles
    assert panel.status.value == "torch_sdpa: flash_attention (origin=chain)"
    before = current_flags()
    panel.select("torch_sdpa", "math")
    assert panel.status.value == "torch_sdpa: math (origin=context)" and chosen_row(panel) == "math"
    assert current_flags() == before  # the panel steered PyTorch only while it rendered
    panel.editor.ndim.value = 3
    panel.select("torch_sdpa", "flash_attention")
    assert panel.status.value.startswith("torch_sdpa: ERROR")
    assert "4 dimensional" in panel.trace_html.value


def test_the_causal_box_is_its_own_axis(panel: DispatchPanel) -> None:
    panel.editor.causal.value = True
    assert panel.context.causal is True and panel.context.has_mask is False


def test_what_ran_shows_the_last_watched_block() -> None:
    import torch.nn.functional as F

    from inspector.dispatch import torch_sdpa

    panel = DispatchPanel(family="torch_sdpa")
    q = torch.randn(1, 2, 8, 16)
    with torch_sdpa.watch():
        F.scaled_dot_product_attention(q, q, q)
        F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    frame = panel.show_what_ran()
    assert frame is not None and list(frame["backend"]) == ["flash_attention", "math"]
    assert "non-zero dropout" in html_of(panel.ran_out)


def test_what_ran_shows_the_decisions_of_a_finished_recorder_block(panel: DispatchPanel) -> None:
    from inspector.dispatch import record_decisions

    ctx = CallContext("attention", dtype=torch.float32, ndim=4)
    with record_decisions() as recorder:
        for _ in range(3):
            resolve("attention", ctx)
    assert not recorder.recording and "3 decision(s): attention/sdpa x3" in repr(recorder)
    panel.show_what_ran()
    text = html_of(panel.ran_out)
    assert "attention" in text and "sdpa" in text and ">3<" in text


def test_an_extra_axis_for_one_family_does_not_break_the_plan_of_another(panel: DispatchPanel) -> None:
    panel.editor.extra.value = "kv_len=4096, window=8"  # torch_sdpa knows no 'window'
    assert panel.errors.widget.value == ""
    assert panel.last_trace is not None and panel.last_trace.family == "attention"
    assert "torch_sdpa" in html_of(panel.plan_out) and "no axis 'window'" in html_of(panel.plan_out)


def test_the_editor_is_built_from_each_familys_own_axes(panel: DispatchPanel) -> None:
    editor = panel.editor
    assert list(editor.fields) == ["kv_len"] and editor.fields["kv_len"].value == "128"  # attention reads kv_len
    assert editor.has_cache.layout.display == "none" and editor.fwd.layout.display == ""  # no row reads the cache
    panel.family.value = "torch_sdpa"
    assert list(editor.fields) == [
        "batch",
        "heads",
        "kv_heads",
        "seq_len",
        "kv_len",
        "dropout_p",
        "enable_gqa",
        "mask_dtype",
        "mask_shape",
    ]
    assert editor.fwd.layout.display == "none" and editor.causal.layout.display == ""
    editor.fields["dropout_p"].value = 0.25
    assert panel.status.value == "torch_sdpa: math (origin=chain)" and panel.context.extra == {"dropout_p": 0.25}
    editor.fields["dropout_p"].value = 0.0
    editor.fields["heads"].value, editor.fields["kv_heads"].value = 8, "2"
    assert panel.status.value.startswith("torch_sdpa: math")  # grouped-query heads without enable_gqa
    editor.fields["enable_gqa"].value = True
    assert panel.status.value == "torch_sdpa: flash_attention (origin=chain)"
    editor.fields["kv_heads"].value = "two"
    assert "kv_heads=&#x27;two&#x27;: give a whole number" in editor.errors.widget.value


def test_a_users_family_that_reads_its_own_axis_gets_a_field_for_it() -> None:
    from inspector.dispatch import ImplRecord, Spec, axis, register_family

    register_family(
        "layernorm",
        [
            ImplRecord(
                "layernorm", "narrow", lambda x: x, Spec.dtype_in(torch.float32) & axis("last_dim").le(64), priority=0
            ),
            ImplRecord("layernorm", "plain", lambda x: x, Spec.always(), priority=1),
        ],
        "plain",
    )
    panel = DispatchPanel(family="layernorm")
    assert list(panel.editor.fields) == ["last_dim"] and panel.editor.fields["last_dim"].value == ""
    assert panel.status.value == "layernorm: plain (origin=chain)"  # no last_dim: narrow cannot tell
    panel.editor.fields["last_dim"].value = "16"
    assert panel.status.value == "layernorm: narrow (origin=chain)" and panel.context.extra == {"last_dim": 16}
    assert panel.editor.head_dim.layout.display == "none"  # no row of layernorm reads head_dim


def test_device_cuda_plans_torch_sdpa_on_a_gpu_picked_beside_it() -> None:
    panel = DispatchPanel(family="torch_sdpa")
    editor = panel.editor
    assert editor.gpu_box.layout.display == "none"
    editor.dtype.value = "float16"
    editor.device.value = "cuda"
    assert editor.gpu_box.layout.display == ""
    editor.gpu.value = "t4"
    assert panel.status.value == "torch_sdpa: efficient_attention (origin=chain)"
    assert (
        "PyTorch&#x27;s rules for T4 (sm 7.5" in editor.gpu_label.value
        and "not measured here" in editor.gpu_label.value
    )
    assert "not measured here" in panel.trace_html.value
    editor.dtype.value, editor.gpu.value = "bfloat16", "h100"
    assert panel.status.value == "torch_sdpa: cudnn_attention (origin=chain)"
    editor.cudnn.value = "9.8.0"
    assert panel.status.value == "torch_sdpa: flash_attention (origin=chain)"
    assert panel.context.extra == {"gpu": "h100", "cudnn": "9.8.0"}
    panel.family.value = "attention"  # other families have no GPU picker
    assert editor.gpu_box.layout.display == "none" and "gpu" not in panel.context.extra


def test_run_and_compare_times_every_torch_sdpa_backend_here() -> None:
    panel = DispatchPanel(family="torch_sdpa")
    panel.editor.fields["seq_len"].value = 16
    frame = panel.run_and_compare(budget_s=0.02)
    ran = frame[frame["status"] == "ran"]
    assert list(ran["backend"]) == ["flash_attention", "math"] and bool(frame.loc[0, "pick"])
    shown = html_of(panel.compare_out)
    assert "PyTorch picks flash_attention" in shown and "cannot serve" in shown
    panel.editor.fields["seq_len"].value = panel.editor.fields["kv_len"].value = "200000"
    with pytest.raises(ValueError, match=r"would allocate about .* in the context editor"):  # before allocating
        panel.run_and_compare()
    panel.editor.fields["seq_len"].value = panel.editor.fields["kv_len"].value = "16"
    panel.editor.device.value = "cuda"  # a GPU this machine does not have cannot be timed here
    with pytest.raises(ValueError, match="does not have that GPU"):
        panel.run_and_compare()


def test_the_what_if_grid_of_torch_sdpa_varies_the_gpu_and_the_call() -> None:
    panel = DispatchPanel(family="torch_sdpa")
    cells = panel.draw_what_if()
    assert {c.value("device") for c in cells} >= {"cpu", "T4", "A100", "H100"}
    assert "dropout 0.1" in {c.value("call") for c in cells}
    assert isinstance(panel.last_what_if, Figure)


def test_what_ran_says_how_many_calls_were_seen_and_why_none_were() -> None:
    import torch.nn.functional as F

    from inspector.dispatch import torch_sdpa

    panel = DispatchPanel(family="torch_sdpa")
    q = torch.randn(1, 2, 8, 16)
    with torch_sdpa.watch(keep=2):
        for _ in range(5):
            F.scaled_dot_product_attention(q, q, q)
    frame = panel.show_what_ran()
    assert frame is not None and list(frame["calls"]) == [5] and frame.attrs["seen"] == 5
    assert "5 SDPA call(s) seen, the first 2 kept in full" in html_of(panel.ran_out)
    with torch_sdpa.watch():
        pass
    panel.show_what_ran()
    assert "No SDPA call was seen in the block" in html_of(panel.ran_out)
