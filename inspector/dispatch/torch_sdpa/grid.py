"""The what-if grid of ``torch_sdpa``: which backend PyTorch runs as the things that change its answer vary.

Rows are a device or GPU and a dtype; columns are variations of one call: the call as given,
with dropout, causal (also with a longer key/value sequence), a boolean, a float or a 4-D mask,
large head dims and a one-token decode step against a long KV cache. Every cell is decided by
PyTorch's rules in the order PyTorch uses for it (cuDNN first on some GPUs), under the
``op_backend`` selection in force, without tensors and without the GPUs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import torch

from inspector.dispatch.context import AXES, CallContext
from inspector.dispatch.torch_sdpa.described import complete
from inspector.dispatch.torch_sdpa.names import FAMILY
from inspector.dispatch.torch_sdpa.tables import decide_call
from inspector.dispatch.trace import SELECTION_ERRORS
from inspector.dispatch.what_if import WhatIfCell

DEVICES: dict[str, Any] = {"cpu": None, "T4": "t4", "A100": "a100", "RTX 4090": "4090", "H100": "h100"}
DTYPES = (torch.float32, torch.bfloat16, torch.float16)
SAME_DTYPE = "same"  # a float mask in the cell's own dtype


def variants(seq_len: int = 128) -> dict[str, dict[str, Any]]:
    """The call's variations (changes to the base call), in column order."""
    return {
        "as given": {},
        "dropout 0.1": {"dropout_p": 0.1},
        "is_causal": {"causal": True, "has_mask": False},
        "is_causal, kv 2x": {"causal": True, "has_mask": False, "kv_len": 2 * seq_len},
        "bool mask": {"has_mask": True, "causal": False, "mask_dtype": "bool"},
        "float mask": {"has_mask": True, "causal": False, "mask_dtype": SAME_DTYPE},
        "4-D mask": {"has_mask": True, "causal": False, "mask_shape": "4d"},
        "head_dim 256": {"head_dim": 256},
        "head_dim 512": {"head_dim": 512},
        "decode, kv 4096": {"seq_len": 1, "kv_len": 4096, "causal": False, "grad_enabled": False},
    }


def _base(ctx: CallContext | None) -> CallContext:
    if ctx is None:
        return CallContext(FAMILY, dtype=torch.float32, ndim=4, head_dim=64)
    extra = {k: v for k, v in ctx.extra.items() if k not in ("sdpa", "device", "gpu")}
    return ctx._replace(family=FAMILY, extra=extra, raw=(), raw_kwargs={})


def _cell(base: CallContext, device: Any, dtype: Any, changes: Mapping[str, Any]) -> CallContext:
    standard = {k: v for k, v in changes.items() if k in AXES}
    extra = {**base.extra, **{k: v for k, v in changes.items() if k not in AXES}}
    if extra.get("mask_dtype") == SAME_DTYPE:
        extra["mask_dtype"] = str(dtype).removeprefix("torch.")
    if device is None:
        standard["device_cuda"] = False
    else:
        extra["gpu"] = device
    return base.evolve(dtype=dtype, **standard, extra=extra)


def what_if_grid(
    base: CallContext | None = None,
    *,
    devices: Mapping[str, Any] | None = None,
    dtypes: Iterable[Any] = DTYPES,
    calls: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[WhatIfCell, ...]:
    """Decide every device x dtype x call variation of ``base`` (default: a float32 4-D call, head_dim 64).

    ``devices`` maps row labels to a GPU (a preset, a compute capability, a ``GpuProfile``) or
    ``None`` for the CPU; on a machine with a GPU, ``"this GPU"`` is added to the default rows.

    >>> cells = what_if_grid()
    >>> next(c.row for c in cells if c.axes == (("device", "H100"), ("dtype", "bfloat16"), ("call", "as given")))
    'cudnn_attention'
    """
    start = _base(base)
    if devices is None:
        devices = dict(DEVICES)
        if torch.cuda.is_available():
            devices["this GPU"] = "this"
    seq_len = int(start.extra.get("seq_len") or 128)
    calls = variants(seq_len) if calls is None else calls
    cells = []
    for label, device in devices.items():
        for dtype in dtypes:
            for name, changes in calls.items():
                axes = (("device", label), ("dtype", str(dtype).removeprefix("torch.")), ("call", name))
                try:
                    resolution = decide_call(complete(_cell(start, device, dtype, changes)))
                except SELECTION_ERRORS as exc:
                    cells.append(WhatIfCell(axes, None, None, str(exc).partition("\n")[0]))
                except ValueError as exc:  # a variation the call cannot take (an axis out of range)
                    cells.append(WhatIfCell(axes, None, None, str(exc).partition("\n")[0]))
                else:
                    cells.append(WhatIfCell(axes, resolution.record.name, resolution.origin, None))
    return tuple(cells)


def agreed(cells: Sequence[WhatIfCell]) -> str | None:
    """The one row every cell chose, when they all agree (then a grid says nothing a line cannot)."""
    rows = {cell.row for cell in cells}
    return rows.pop() if len(rows) == 1 and None not in rows and cells else None
