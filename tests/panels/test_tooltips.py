"""Tooltips set in Python reach the page (NOTE [ Tooltips in ipywidgets 8 ]); sections stay open side by side."""

from __future__ import annotations

import ipywidgets as widgets

from inspector.panels._sections import Sections
from inspector.panels._tooltips import TIP_CLASS, TIPS_SCRIPT, plain, reach_the_page, tips_output


def test_a_described_control_carries_its_tooltip_in_its_label() -> None:
    field = widgets.Text(description="extra", tooltip='Axes as name=value, e.g. "kv_len=128" <b>')
    box = reach_the_page(widgets.VBox([field]))
    assert box.children == (field,) and field.description_allow_html
    assert field.description == (
        f'<span class="{TIP_CLASS}" title="Axes as name=value, e.g. &quot;kv_len=128&quot; &lt;b&gt;">extra</span>'
    )
    assert plain(field.description) == "extra" and field.tooltip.endswith("<b>")


def test_the_label_follows_later_changes_to_the_tooltip_or_the_label() -> None:
    menu = widgets.Dropdown(options=["a"], description="family", tooltip="first")
    reach_the_page(menu)
    menu.tooltip = "second"
    assert 'title="second">family<' in menu.description
    menu.description = "op family"
    assert plain(menu.description) == "op family" and 'title="second"' in menu.description
    menu.tooltip = None
    assert menu.description == "op family"


def test_controls_added_later_and_checkboxes_are_covered_and_others_left_alone() -> None:
    box = reach_the_page(widgets.VBox([]))
    check = widgets.Checkbox(description="causal", tooltip="is_causal=True: a causal mask PyTorch builds itself")
    button = widgets.Button(description="Run", tooltip="run it")
    slider = widgets.IntSlider(description="n", tooltip="how many")
    untipped = widgets.Text(description="name")
    box.children = [widgets.HBox([check, button, slider, untipped])]
    assert plain(check.description) == "causal" and TIP_CLASS in check.description
    assert button.description == "Run" and slider.description == "n" and untipped.description == "name"


def test_the_script_copies_the_tip_onto_the_control_and_drops_null_titles() -> None:
    assert "span.inspector-tip[title]" in TIPS_SCRIPT and '[title="null"]' in TIPS_SCRIPT
    out = tips_output()
    assert out.layout.display == "none" and "window.inspectorTips" in out.outputs[0]["data"]["text/html"]


def test_several_sections_stay_open_at_once() -> None:
    sections = Sections([("Trace", widgets.HTML("t")), ("What-if grid", widgets.HTML("g"))])
    assert sections.is_open("Trace") and not sections.is_open("What-if grid")
    sections.open("What-if grid")
    assert sections.is_open("Trace") and sections.is_open("What-if grid")
    sections.open("Trace", False)
    assert not sections.is_open("Trace") and sections.titles == ("Trace", "What-if grid")
