"""The Dispatch tab in a real JupyterLab: any GPU from this machine, the family's own axes, every backend timed."""

from __future__ import annotations

from pathlib import Path

import pytest
from lab_driver import open_tour_tab, save_screenshot, truncated_texts

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PANEL = ".inspector-dispatch-panel"


def test_torch_sdpa_plans_a_gpu_times_its_backends_and_shows_what_ran(page, lab, tmp_path: Path) -> None:
    open_tour_tab(page, lab, "Dispatch")
    panel = page.locator(PANEL).first
    status = panel.locator(".inspector-status")
    panel.locator("select").first.select_option("torch_sdpa")
    status.filter(has_text="torch_sdpa: flash_attention (origin=chain)").wait_for()

    # the editor has PyTorch's own axes: the shape of the call, not the attention demo's kv_len
    editor = panel.locator(".inspector-context-editor")
    axes = editor.locator(".inspector-family-axes")
    for name in ("batch", "heads", "kv_heads", "seq_len", "kv_len", "dropout_p", "enable_gqa"):
        axes.locator(".widget-inline-hbox, .widget-checkbox", has_text=name).first.wait_for()
    dropout = axes.locator(".widget-inline-hbox", has_text="dropout_p").locator("input")
    dropout.fill("0.25")
    dropout.press("Enter")
    status.filter(has_text="torch_sdpa: math (origin=chain)").wait_for()
    dropout.fill("0")
    dropout.press("Enter")
    status.filter(has_text="torch_sdpa: flash_attention (origin=chain)").wait_for()

    # device=cuda on a machine without a GPU: pick the GPU, and every answer says it is PyTorch's rules for it
    picker = editor.locator(".inspector-gpu-picker")
    assert picker.is_hidden()
    editor.get_by_label("dtype", exact=True).select_option("float16")
    editor.get_by_label("device", exact=True).select_option("cuda")
    picker.wait_for()
    picker.locator("select").select_option(label="T4 (sm 7.5)")
    status.filter(has_text="torch_sdpa: efficient_attention (origin=chain)").wait_for()
    picker.locator(".inspector-gpu-label", has_text="not measured here").wait_for()
    editor.get_by_label("dtype", exact=True).select_option("bfloat16")
    picker.locator("select").select_option(label="H100 (sm 9.0)")
    status.filter(has_text="torch_sdpa: cudnn_attention (origin=chain)").wait_for()
    assert "H100 (sm 9.0, cuDNN 9.15.1" in (picker.locator(".inspector-gpu-label").text_content() or "")

    # the what-if grid varies the GPU and the call
    panel.locator(".jupyter-widget-Collapse-header", has_text="What-if grid").click()
    panel.get_by_role("button", name="Draw what-if grid").click()
    panel.locator(".inspector-key-item[data-row='cudnn_attention']").wait_for()
    assert panel.locator(".inspector-key-item[data-row='efficient_attention']").count() == 1

    # back on this CPU, Run and compare times every backend that can serve the call
    editor.get_by_label("device", exact=True).select_option("cpu")
    picker.wait_for(state="hidden")
    seq = axes.locator(".widget-inline-hbox", has_text="seq_len").locator("input")
    seq.fill("16")
    seq.press("Enter")
    panel.locator(".jupyter-widget-Collapse-header", has_text="Run and compare").click()
    panel.get_by_role("button", name="Run and compare rows").click()
    panel.locator(".inspector-note", has_text="PyTorch picks flash_attention").wait_for()
    assert panel.locator("table", has_text="cannot serve").count() >= 1

    page.mouse.move(5, 5)
    shot = save_screenshot(page, "dispatch_tab.png", tmp_path)
    assert shot.read_bytes().startswith(b"\x89PNG")
    assert truncated_texts(page.locator(".inspector-app").first) == []
    widget_errors = [e for e in page.console_errors if "widget" in e.lower() or "model" in e.lower()]
    assert widget_errors == []
