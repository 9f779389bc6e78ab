"""PyTorch's own SDPA dispatch as a first-class family: predict it, explain it, steer it, watch it.

Importing this package registers the family ``torch_sdpa``, whose rows are PyTorch's backends
(``SDPBackend`` names in lower case: ``flash_attention``, ``efficient_attention``,
``cudnn_attention``, ``overrideable``, ``math``) in PyTorch's priority order for the device,
with PyTorch's checks (``sdp_utils``) ported as clauses in PyTorch's words.

>>> import torch
>>> from inspector.dispatch import op_backend, torch_sdpa
>>> q = torch.randn(2, 8, 128, 64)
>>> torch_sdpa.predict(q, q, q, dropout_p=0.1)            # what PyTorch will run
<SDPBackend.MATH: 0>
>>> print(torch_sdpa.trace_call(q, q, q, dropout_p=0.1).explain())  # doctest: +ELLIPSIS
[torch_sdpa] ...
  flash_attention: reject (Both fused kernels do not support non-zero dropout. ...)
...
>>> with op_backend(torch_sdpa="math"):                   # PyTorch itself obeys in this block
...     out = torch.nn.functional.scaled_dot_product_attention(q, q, q)
"""

from __future__ import annotations

from inspector.dispatch.torch_sdpa.compare import compare
from inspector.dispatch.torch_sdpa.comparison import BackendRun, SdpaComparison, Timing
from inspector.dispatch.torch_sdpa.described import facts_from_axes
from inspector.dispatch.torch_sdpa.facts import SdpaCall
from inspector.dispatch.torch_sdpa.family import (
    context_from_call,
    ensure_registered,
    register,
    trace_call,
    trace_context,
)
from inspector.dispatch.torch_sdpa.gpus import PRESETS, GpuProfile, gpu_profile, this_gpu
from inspector.dispatch.torch_sdpa.grid import what_if_grid
from inspector.dispatch.torch_sdpa.names import BACKENDS, FAMILY
from inspector.dispatch.torch_sdpa.prediction import predict
from inspector.dispatch.torch_sdpa.watch import WatchedCall, WatchedCalls, WatchGroup, WatchTable, last_watch, watch

__all__ = [
    "BACKENDS",
    "BackendRun",
    "FAMILY",
    "GpuProfile",
    "PRESETS",
    "SdpaCall",
    "SdpaComparison",
    "Timing",
    "WatchGroup",
    "WatchTable",
    "WatchedCall",
    "WatchedCalls",
    "compare",
    "context_from_call",
    "ensure_registered",
    "facts_from_axes",
    "gpu_profile",
    "last_watch",
    "predict",
    "register",
    "this_gpu",
    "trace_call",
    "trace_context",
    "watch",
    "what_if_grid",
]

register()
