"""The axes a family's call is described by: what the Dispatch panel's context editor shows for it.

A family's own axes come from its rows: the standard ``CallContext`` axes its specs read, and
the family-specific ones they read from ``extra`` (a family that reads ``last_dim`` gets a
``last_dim`` field, with the value its default context gives). PyTorch's own family is
described by the shape of the call instead (batch, heads, lengths, dropout, the mask) and, on
CUDA, by the GPU to plan for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from inspector.dispatch import rows
from inspector.dispatch.context import AXES
from inspector.dispatch.torch_sdpa import FAMILY, PRESETS
from inspector.dispatch.torch_sdpa.described import DESCRIBED_AXES, MASK_DTYPE_NAMES, MASK_SHAPES

# The standard axes the editor has a control for, in its order.
CONTROLS = ("dtype", "device_cuda", "fwd", "ndim", "head_dim", "has_cache", "has_mask", "causal", "grad_enabled")
ALWAYS = ("dtype", "device_cuda")
THIS_GPU = "this"


@dataclass(frozen=True)
class AxisField:
    """One family-specific field: ``kind`` is ``int``, ``optional int``, ``float``, ``bool``, ``choice`` or ``text``."""

    name: str
    kind: str
    default: Any
    choices: tuple[str, ...] = ()
    tooltip: str = ""


@dataclass(frozen=True)
class FamilyAxes:
    """What the editor shows for a family: standard controls, its own fields, and whether it plans GPUs."""

    family: str
    standard: tuple[str, ...]
    fields: tuple[AxisField, ...]
    gpu: bool = False


SDPA_FIELDS = (
    AxisField("batch", "int", DESCRIBED_AXES["batch"], tooltip="Batch size of query, key and value"),
    AxisField("heads", "int", DESCRIBED_AXES["heads"], tooltip="Query heads"),
    AxisField("kv_heads", "optional int", None, tooltip="Key/value heads (blank: as many as the query's)"),
    AxisField("seq_len", "int", DESCRIBED_AXES["seq_len"], tooltip="Query sequence length"),
    AxisField("kv_len", "optional int", None, tooltip="Key/value sequence length (blank: the query's)"),
    AxisField("dropout_p", "float", DESCRIBED_AXES["dropout_p"], tooltip="Attention dropout probability"),
    AxisField("enable_gqa", "bool", False, tooltip="enable_gqa=True: key/value heads may divide the query heads"),
    AxisField("mask_dtype", "choice", "bool", MASK_DTYPE_NAMES, "The mask's dtype (with mask ticked)"),
    AxisField("mask_shape", "choice", "2d", MASK_SHAPES, "The mask's shape: (q_len, kv_len), 4-D, broadcast or 3-D"),
)


def gpu_choices(cuda_here: bool, device_name: str = "") -> list[tuple[str, str]]:
    """(label, value) pairs for the GPU picker: this machine's GPU first when it has one, then the presets."""
    choices = [(f"this GPU ({device_name})" if device_name else "this GPU", THIS_GPU)] if cuda_here else []
    for key, profile in PRESETS.items():
        choices.append((f"{profile.name} (sm {profile.sm[0]}.{profile.sm[1]})", key))
    return choices


def family_axes(family: str, defaults: dict[str, Any] | None = None) -> FamilyAxes:
    """The axes ``family`` is described by (its default context's ``extra`` gives the fields' values)."""
    if family == FAMILY:
        sdpa: tuple[str, ...] = ("dtype", "device_cuda", "ndim", "head_dim", "has_mask", "causal", "grad_enabled")
        return FamilyAxes(family, sdpa, SDPA_FIELDS, gpu=True)
    read: dict[str, None] = {}
    for row in rows(family):
        read.update(dict.fromkeys(row.spec.axes))
    standard: tuple[str, ...] = tuple(a for a in CONTROLS if a in read or a in ALWAYS)
    if not any(a in read for a in AXES):  # rows that say nothing of what they read: every control
        standard = CONTROLS
    values = defaults or {}
    fields = tuple(
        AxisField(name, "text", values.get(name), tooltip=f"The {family} axis {name!r} its rows read")
        for name in read
        if name not in AXES
    )
    return FamilyAxes(family, standard, fields)
