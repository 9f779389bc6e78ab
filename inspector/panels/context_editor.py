"""Widgets that edit a ``CallContext`` axis by axis (what-if editing needs no tensors).

The editor is built from the family's own axes (``views.dispatch_axes.family_axes``): the
standard controls its rows read, a field per family-specific axis, and, for PyTorch's own
family on CUDA, a GPU picker (presets, or this machine's GPU) with its cuDNN version. A free
``extra`` text takes any other axis as ``name=value`` pairs and wins over the fields.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets
import torch

from inspector.dispatch import CallContext
from inspector.dispatch.context import parse_extra
from inspector.dispatch.torch_sdpa import FAMILY as TORCH_SDPA
from inspector.dispatch.torch_sdpa import gpu_profile
from inspector.panels._guard import ErrorLine
from inspector.views.dispatch_axes import THIS_GPU, AxisField, FamilyAxes, gpu_choices

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64}
FWD_MODES = {"training (fwd=None)": None, "prefill": "prefill", "decode": "decode"}
SHORT_LABEL = {"description_width": "64px"}
FIELD_LABEL = {"description_width": "72px"}
HIDDEN_KEYS = ("sdpa", "device", "gpu", "cudnn")  # derived or owned by the GPU picker


TOOLTIPS = {
    "dtype": "The inputs' dtype",
    "device": "Where the inputs live: cuda plans the call on a GPU (the picker beside it), with or without one here",
    "fwd": "Training (no fwd mode), or an inference pass: prefill or decode",
    "ndim": "Number of dimensions of the query tensor",
    "head_dim": "Size of the last dimension of the query (the head dimension)",
    "extra": "More axes as name=value pairs, comma-separated (kv_len=2048, window=8); they win over the fields",
    "has_cache": "A KV cache is passed",
    "has_mask": "An attention mask is passed",
    "causal": "Causal attention (is_causal=True)",
    "grad_enabled": "Autograd is on (torch.is_grad_enabled())",
}
STANDARD = {
    "dtype": "dtype",
    "device": "device_cuda",
    "fwd": "fwd",
    "ndim": "ndim",
    "head_dim": "head_dim",
    "has_cache": "has_cache",
    "has_mask": "has_mask",
    "causal": "causal",
    "grad_enabled": "grad_enabled",
}


def _field_widget(field: AxisField) -> widgets.Widget:
    layout = widgets.Layout(width="170px")
    if field.kind == "int":
        widget: widgets.Widget = widgets.BoundedIntText(
            value=field.default, min=0, max=10**9, description=field.name, style=FIELD_LABEL, layout=layout
        )
    elif field.kind == "float":
        widget = widgets.BoundedFloatText(
            value=field.default, min=0.0, max=1.0, step=0.05, description=field.name, style=FIELD_LABEL, layout=layout
        )
    elif field.kind == "bool":
        widget = widgets.Checkbox(
            value=bool(field.default), description=field.name, indent=False, layout=widgets.Layout(width="110px")
        )
    elif field.kind == "choice":
        widget = widgets.Dropdown(
            options=list(field.choices), value=field.default, description=field.name, style=FIELD_LABEL, layout=layout
        )
    else:  # "text" and "optional int": free text, blank for unset
        default = "" if field.default is None else str(field.default)
        widget = widgets.Text(
            value=default,
            description=field.name,
            style=FIELD_LABEL,
            layout=layout,
            placeholder="blank: unset" if field.kind == "text" else "blank: as the query's",
            continuous_update=False,
        )
    widget.tooltip = field.tooltip or f"The axis {field.name!r}"
    return widget


class ContextEditor:
    """One widget per axis; ``set_axes(axes)`` shapes it for a family, ``context(family)`` reads it,
    ``load(ctx)`` writes it.

    ``errors`` sits in the editor's own box: a context that cannot be read (a bad ``extra``)
    is explained right under the fields.
    """

    def __init__(self, on_change: Callable[[], None]) -> None:
        self.dtype = widgets.Dropdown(
            options=list(DTYPES),
            value="float32",
            description="dtype",
            layout=widgets.Layout(width="160px"),
            style=SHORT_LABEL,
        )
        self.device = widgets.Dropdown(
            options=["cpu", "cuda"],
            value="cpu",
            description="device",
            layout=widgets.Layout(width="130px"),
            style=SHORT_LABEL,
        )
        self.fwd = widgets.Dropdown(
            options=list(FWD_MODES),
            value="training (fwd=None)",
            description="fwd",
            layout=widgets.Layout(width="230px"),
            style={"description_width": "30px"},
        )
        self.ndim = widgets.BoundedIntText(
            value=4, min=1, max=8, description="ndim", style=SHORT_LABEL, layout=widgets.Layout(width="120px")
        )
        self.head_dim = widgets.BoundedIntText(
            value=64, min=1, max=4096, description="head_dim", style=SHORT_LABEL, layout=widgets.Layout(width="150px")
        )
        self.extra = widgets.Text(
            value="",
            description="extra",
            continuous_update=False,
            placeholder="kv_len=2048",
            style=SHORT_LABEL,
            layout=widgets.Layout(width="230px"),
        )

        def tight() -> widgets.Layout:  # one each: hiding a control must not hide its neighbours
            return widgets.Layout(width="90px")

        self.has_cache = widgets.Checkbox(value=False, description="cache", indent=False, layout=tight())
        self.has_mask = widgets.Checkbox(value=False, description="mask", indent=False, layout=tight())
        self.causal = widgets.Checkbox(value=False, description="causal", indent=False, layout=tight())
        self.grad = widgets.Checkbox(value=True, description="grad", indent=False, layout=tight())
        self.controls = (
            self.dtype,
            self.device,
            self.fwd,
            self.ndim,
            self.head_dim,
            self.extra,
            self.has_cache,
            self.has_mask,
            self.causal,
            self.grad,
        )
        for control, tip in zip(self.controls, TOOLTIPS.values(), strict=True):
            control.tooltip = tip
        cuda_here = torch.cuda.is_available()
        name = torch.cuda.get_device_name() if cuda_here else ""
        choices = gpu_choices(cuda_here, name)
        self.gpu = widgets.Dropdown(
            options=choices,
            value=choices[0][1] if cuda_here else "h100",
            description="GPU",
            style={"description_width": "36px"},
            layout=widgets.Layout(width="230px"),
            tooltip="The GPU whose rules PyTorch's choice is planned with (a preset, or this machine's GPU)",
        )
        self.cudnn = widgets.Text(
            value="",
            description="cuDNN",
            placeholder="as the GPU's",
            continuous_update=False,
            style={"description_width": "44px"},
            layout=widgets.Layout(width="170px"),
            tooltip="The cuDNN version PyTorch runs with (9.15.1 or 91501); blank: the "
            "GPU's, or 9.15.1 for a described GPU",
        )
        self.gpu_label = widgets.HTML()
        self.gpu_box = widgets.HBox([self.gpu, self.cudnn, self.gpu_label])
        self.gpu_box.add_class("inspector-gpu-picker")
        self.fields: dict[str, widgets.Widget] = {}
        self.field_kinds: dict[str, AxisField] = {}
        self.fields_box = widgets.HBox(layout=widgets.Layout(flex_flow="row wrap"))
        self.fields_box.add_class("inspector-family-axes")
        self.axes = FamilyAxes("", tuple(STANDARD.values()), ())
        self.errors = ErrorLine("context")
        self._on_change = on_change
        self._holding = False
        for control in (*self.controls, self.gpu, self.cudnn):
            control.observe(self._changed, names="value")
        self.widget = widgets.VBox(
            [
                widgets.HBox([self.dtype, self.device, self.fwd, self.ndim, self.head_dim]),
                self.gpu_box,
                self.fields_box,
                widgets.HBox([self.extra, self.has_cache, self.has_mask, self.causal, self.grad]),
                self.errors.widget,
            ]
        )
        self.widget.add_class("inspector-context-editor")
        self._show_gpu()

    def _changed(self, _change: dict[str, Any]) -> None:
        self._show_gpu()
        if not self._holding:
            self._on_change()

    # -- the family's shape ---------------------------------------------------------------------
    def set_axes(self, axes: FamilyAxes) -> None:
        """Show ``axes``' standard controls and fields (a field the user changed keeps its value across families)."""
        old = {}
        for name, field in self.field_kinds.items():
            try:
                value = self._read(name)
            except ValueError:  # a value that cannot be read is not carried over
                continue
            if value != field.default:
                old[name] = value
        self.axes = axes
        self.fields, self.field_kinds = {}, {}
        for field in axes.fields:
            widget = _field_widget(field)
            if field.name in old and old[field.name] is not None:
                self._write(widget, field, old[field.name])
            widget.observe(self._changed, names="value")
            self.fields[field.name], self.field_kinds[field.name] = widget, field
        self.fields_box.children = tuple(self.fields.values())
        self.fields_box.layout.display = "" if self.fields else "none"
        for control, axis in zip(
            (
                self.dtype,
                self.device,
                self.fwd,
                self.ndim,
                self.head_dim,
                self.has_cache,
                self.has_mask,
                self.causal,
                self.grad,
            ),
            ("dtype", "device_cuda", "fwd", "ndim", "head_dim", "has_cache", "has_mask", "causal", "grad_enabled"),
            strict=True,
        ):
            control.layout.display = "" if axis in axes.standard else "none"
        self._show_gpu()

    def _show_gpu(self) -> None:
        planning = self.axes.gpu and self.device.value == "cuda"
        self.gpu_box.layout.display = "" if planning else "none"
        if not planning:
            return
        try:
            profile = gpu_profile(self.gpu.value, cudnn=self.cudnn.value.strip() or None)
        except ValueError as exc:
            self.gpu_label.value = f"<small>{html.escape(str(exc))}</small>"  # it quotes what was typed
        else:
            self.gpu_label.value = f"<small class='inspector-gpu-label'>{html.escape(profile.rules_label())}</small>"

    def _read(self, name: str) -> Any:
        widget, field = self.fields[name], self.field_kinds[name]
        value = widget.value
        if field.kind == "optional int":
            text = str(value).strip()
            if not text:
                return None
            if not text.isdigit():
                raise ValueError(f"{name}={text!r}: give a whole number, or leave it blank")
            return int(text)
        if field.kind == "text":
            text = str(value).strip()
            return parse_extra(f"{name}={text}")[name] if text else None
        return value

    @staticmethod
    def _write(widget: widgets.Widget, field: AxisField, value: Any) -> None:
        if field.kind in ("text", "optional int"):
            widget.value = "" if value is None else str(value)
        elif field.kind == "choice" and str(value) not in field.choices:
            return
        else:
            widget.value = str(value) if field.kind == "choice" else value

    # -- reading and writing ----------------------------------------------------------------------
    def context(self, family: str) -> CallContext:
        extra: dict[str, Any] = {}
        for name, field in self.field_kinds.items():
            value = self._read(name)
            if value is None or (self.axes.family == TORCH_SDPA and value == field.default):
                continue  # PyTorch's own family: an unchanged field is its default already
            extra[name] = value
        if self.gpu_box.layout.display != "none":
            if self.gpu.value != THIS_GPU:
                extra["gpu"] = self.gpu.value
            if self.cudnn.value.strip():
                extra["cudnn"] = self.cudnn.value.strip()
        extra.update(parse_extra(self.extra.value))
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
        ).evolve(extra=extra)

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
            rest = {}
            for key, value in ctx.extra.items():
                if key in self.fields:
                    self._write(self.fields[key], self.field_kinds[key], value)
                elif key == "gpu" and value in {v for _, v in self.gpu.options}:
                    self.gpu.value = value
                elif key == "cudnn":
                    self.cudnn.value = str(value)
                elif key not in HIDDEN_KEYS:
                    rest[key] = value
            self.extra.value = ", ".join(f"{k}={v}" for k, v in rest.items())
        finally:
            self._holding = False
        self._show_gpu()
        self._on_change()
