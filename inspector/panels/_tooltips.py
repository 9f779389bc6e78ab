"""Tooltips set in Python that reach the browser: every described control shows its ``tooltip`` on hover.

NOTE [ Tooltips in ipywidgets 8 ]
ipywidgets 8 writes a control's ``tooltip`` into the page only when the control has no
``description``: a text field, a number field, a menu or a checkbox *with* a label shows its
tooltip nowhere (each of those views replaces the label's own tooltip handling), a checkbox's
box takes its label text as its title, and a widget with neither (an ``HTML`` line) gets
``title="null"`` on its hidden label. So ``reach_the_page`` gives each described control with a
tooltip a label that carries it, ``<span class="inspector-tip" title="...">label</span>`` (the
label set as HTML, both parts escaped, kept in step when either changes), and one small inline
script (``TIPS_SCRIPT``, shown once by the app or a panel displayed alone, like the tables'
script) copies that title onto the control's own input, menu or box and drops every
``title="null"``, as widgets appear. Without scripts (an untrusted notebook reopened) the label
still shows the tooltip. Boxes are watched, so rows and fields added later are covered too.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets

TIP_CLASS = "inspector-tip"
_MARK = f'<span class="{TIP_CLASS}" title="'
_WATCHED = "_inspector_tips_watched"

TIPS_SCRIPT = """<script>(function(){if(window.inspectorTips)return;window.inspectorTips=true;
function fix(){var roots=document.querySelectorAll('.inspector-app, .inspector-panel');
Array.prototype.forEach.call(roots,function(root){
Array.prototype.forEach.call(root.querySelectorAll('[title="null"]'),function(e){e.removeAttribute('title');});
Array.prototype.forEach.call(root.querySelectorAll('span.inspector-tip[title]'),function(tip){
var widget=tip.closest('.jupyter-widgets');if(!widget)return;var title=tip.getAttribute('title');
Array.prototype.forEach.call(widget.querySelectorAll('input, select, textarea, label, [title]:not(.inspector-tip)'),
function(e){if(e.getAttribute('title')!==title)e.setAttribute('title',title);});});});}
var queued=false;function later(){if(queued)return;queued=true;
requestAnimationFrame(function(){queued=false;fix();});}
new MutationObserver(later).observe(document.body,{childList:true,subtree:true});later();})();</script>"""


def plain(description: str) -> str:
    """A label's own text, without the span that carries its tooltip."""
    if not description.startswith(_MARK):
        return description
    return html.unescape(description[description.index(">") + 1 : -len("</span>")])


# The widgets whose ipywidgets 8 views drop ``tooltip`` when they have a ``description`` (NOTE [ Tooltips in
# ipywidgets 8 ]); sliders, toggle buttons and labels show theirs already.
LOSES_TOOLTIP = (
    widgets.Text,
    widgets.Textarea,
    widgets.IntText,
    widgets.BoundedIntText,
    widgets.FloatText,
    widgets.BoundedFloatText,
    widgets.Dropdown,
    widgets.Select,
    widgets.SelectMultiple,
    widgets.Checkbox,
)


def _carries_tip(widget: widgets.Widget) -> bool:
    return isinstance(widget, LOSES_TOOLTIP)


def _label_with_tip(widget: Any, _change: Any = None) -> None:
    text, tip = plain(widget.description or ""), widget.tooltip
    if not text or not tip:
        if widget.description != text:
            widget.description = text
        return
    wrapped = f'{_MARK}{html.escape(tip, quote=True)}">{html.escape(text)}</span>'
    if widget.description != wrapped:
        widget.description_allow_html = True
        widget.description = wrapped


def _watch_children(change: Any) -> None:
    for child in change["new"]:
        _watch(child)


def _watch(widget: widgets.Widget) -> None:
    if getattr(widget, _WATCHED, False):
        return
    setattr(widget, _WATCHED, True)
    if _carries_tip(widget):
        _label_with_tip(widget)
        widget.observe(lambda change: _label_with_tip(widget, change), names=["description", "tooltip"])
    if isinstance(widget, widgets.Box):
        widget.observe(_watch_children, names="children")
    for child in getattr(widget, "children", ()):
        _watch(child)


def reach_the_page(root: widgets.Widget) -> widgets.Widget:
    """Make every tooltip under ``root`` (now and added later) show in the browser; returns ``root``."""
    _watch(root)
    return root


def tips_output() -> widgets.Output:
    """A hidden output area holding ``TIPS_SCRIPT``, to place once beside the widgets it serves."""
    from inspector.panels._render import RawHTML, render_into

    out = widgets.Output(layout=widgets.Layout(display="none"))
    out.add_class("inspector-tips-script")
    render_into(out, RawHTML(TIPS_SCRIPT))
    return out
