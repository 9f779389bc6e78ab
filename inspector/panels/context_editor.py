"""Widgets that edit a ``CallContext`` axis by axis (what-if editing needs no tensors)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as widgets
import torch

from inspector.dispatch import CallContext
from inspector.dispatch.context import parse_extra
from inspector.panels._guard import ErrorLine

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64}
FWD_MODES = {"training (fwd=None)": None, "prefill": "prefill", "decode": "decode"}
SMALL = widgets.Layout(width="160px")
SHORT_LABEL = {"description_width": "64px"}


TOOLTIPS = {
    "dtype": "The inputs' dtype",
    "device": "Where the inputs live (cuda is what-if editing on a machine without a GPU)",
    "fwd": "Training (no fwd mode), or an inference pass: prefill or decode",
    "ndim": "Number of dimensions of the query tensor",
    "head_dim": "Size of the last dimension of the query (the head dimension)",
    "extra": "More axes as name=value pairs, comma-separated (kv_len=2048, window=8)",
    "has_cache": "A KV cache is passed",
    "has_mask": "An attention mask is passed",
    "causal": "Causal attention (is_causal=True)",
    "grad_enabled": "Autograd is on (torch.is_grad_enabled())",
}


class ContextEditor:
    """One widget per axis; ``context(family)`` reads them, ``load(ctx)`` writes them.

    ``errors`` sits in the editor's own box: a context that cannot be read (a bad ``extra``)
    is explained right under the fields.
    """

    def __init__(self, on_change: Callable[[], None]) -> None:
        self.dtype = widgets.Dropdown(options=list(DTYPES), value="float32", description="dtype", layout=SMALL,
                                      style=SHORT_LABEL)
        self.device = widgets.Dropdown(options=["cpu", "cuda"], value="cpu", description="device",
                                       layout=widgets.Layout(width="130px"), style=SHORT_LABEL)
        self.fwd = widgets.Dropdown(options=list(FWD_MODES), value="training (fwd=None)", description="fwd",
                                    layout=widgets.Layout(width="230px"), style={"description_width": "30px"})
        self.ndim = widgets.BoundedIntText(value=4, min=1, max=8, description="ndim", style=SHORT_LABEL,
                                           layout=widgets.Layout(width="120px"))
        self.head_dim = widgets.BoundedIntText(value=64, min=1, max=4096, description="head_dim", style=SHORT_LABEL,
                                               layout=widgets.Layout(width="150px"))
        self.extra = widgets.Text(value="kv_len=128", description="extra", continuous_update=False,
                                  placeholder="kv_len=2048", style=SHORT_LABEL, layout=widgets.Layout(width="230px"))
        tight = widgets.Layout(width="90px")
        self.has_cache = widgets.Checkbox(value=False, description="cache", indent=False, layout=tight)
        self.has_mask = widgets.Checkbox(value=False, description="mask", indent=False, layout=tight)
        self.causal = widgets.Checkbox(value=False, description="causal", indent=False, layout=tight)
        self.grad = widgets.Checkbox(value=True, description="grad", indent=False, layout=tight)
        self.controls = (self.dtype, self.device, self.fwd, self.ndim, self.head_dim, self.extra,
                         self.has_cache, self.has_mask, self.causal, self.grad)
        for control, tip in zip(self.controls, TOOLTIPS.values(), strict=True):
            control.tooltip = tip
        self.errors = ErrorLine("context")
        self._on_change = on_change
        self._holding = False
        for control in self.controls:
            control.observe(self._changed, names="value")
        self.widget = widgets.VBox([
            widgets.HBox([self.dtype, self.device, self.fwd, self.ndim, self.head_dim]),
            widgets.HBox([self.extra, self.has_cache, self.has_mask, self.causal, self.grad]),
            self.errors.widget,
        ])
        self.widget.add_class("inspector-context-editor")

    def _changed(self, _change: dict[str, Any]) -> None:
        if not self._holding:
            self._on_change()

    def context(self, family: str) -> CallContext:
        return CallContext(
            family,
            fwd=FWD_MODES[self.fwd.value],
            dtype=DTYPES[self.dtype.value],
            device_cuda=self.device.value == "cuda",
            ndim=self.ndim.value,
            head_dim=self.head_dim.value,
            has_cache=self.has_cache.value,
            has_mask=self.has_mask.value,
            grad_enabled=self.grad.value,
            causal=self.causal.value,
        ).evolve(extra=parse_extra(self.extra.value))

    def load(self, ctx: CallContext) -> None:
        """Show ``ctx`` in the widgets, then notify once (dtypes outside the menu are refused)."""
        names = {value: name for name, value in DTYPES.items()}
        if ctx.dtype is not None and ctx.dtype not in names:
            raise ValueError(f"The editor offers dtypes {list(DTYPES)}; got {ctx.dtype}")
        modes = {value: name for name, value in FWD_MODES.items()}
        self._holding = True
        try:
            self.dtype.value = names.get(ctx.dtype, "float32")
            self.device.value = "cuda" if ctx.device_cuda else "cpu"
            self.fwd.value = modes.get(ctx.fwd, "training (fwd=None)")
            self.ndim.value = ctx.ndim or 4
            self.head_dim.value = ctx.head_dim or 64
            self.has_cache.value, self.has_mask.value = ctx.has_cache, ctx.has_mask
            self.causal.value = ctx.causal
            self.grad.value = ctx.grad_enabled
            self.extra.value = ", ".join(f"{k}={v}" for k, v in ctx.extra.items())
        finally:
            self._holding = False
        self._on_change()
