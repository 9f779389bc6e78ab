"""DispatchPanel driven through its real widgets (no frontend needed)."""

from __future__ import annotations

import os

import pytest
import torch

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
    assert panel.context == CallContext("attention", dtype=torch.float64, ndim=4, head_dim=64, has_mask=True,
                                        grad_enabled=False, extra={"kv_len": 4096})


def test_strict_selection_error_is_a_readable_message_not_a_traceback(panel: DispatchPanel) -> None:
    panel.select("attention", "chunked")  # grad is on: chunked declines
    assert panel.status.value.startswith("attention: ERROR: attention row")
    assert "ERROR" in html_of(panel.table_out)
    assert "Traceback" not in panel.trace_html.value and "capable rows" in panel.trace_html.value


def test_bad_input_lands_in_the_error_line(panel: DispatchPanel) -> None:
    panel.editor.extra.value = "kv_len"
    assert "ValueError" in panel.errors.widget.value and "name=value" in panel.errors.widget.value
    panel.editor.extra.value = "kv_len=16"
    assert panel.errors.widget.value == ""


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
    assert "image/png" in panel.what_if_out.outputs[0]["data"]
    frame = panel.run_and_compare()
    assert frame.set_index("row").loc["sdpa", "within_tolerance"]
    assert "reference" in html_of(panel.compare_out)


def test_static_html_and_mimebundle(panel: DispatchPanel) -> None:
    bundle = panel._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "inspector-decision-table" in bundle["text/html"] and "=&gt; sdpa" in bundle["text/html"]


def test_loading_a_context_into_the_editor(panel: DispatchPanel) -> None:
    panel.editor.load(CallContext("attention", dtype=torch.bfloat16, ndim=4, head_dim=128, grad_enabled=False,
                                  extra={"kv_len": 2048}))
    assert chosen_row(panel) == "chunked" and panel.editor.dtype.value == "bfloat16"
    with pytest.raises(ValueError, match="offers dtypes"):
        panel.editor.load(CallContext("attention", dtype=torch.int8))


def test_torch_sdpa_sits_beside_the_other_families_and_its_toggle_steers_pytorch() -> None:
    from inspector.dispatch.torch_sdpa.steering import current_flags

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


def test_an_extra_axis_for_one_family_does_not_break_the_plan_of_another(panel: DispatchPanel) -> None:
    panel.editor.extra.value = "kv_len=4096, window=8"  # torch_sdpa knows no 'window'
    assert panel.errors.widget.value == ""
    assert panel.last_trace is not None and panel.last_trace.family == "attention"
    assert "torch_sdpa" in html_of(panel.plan_out) and "no axis 'window'" in html_of(panel.plan_out)
